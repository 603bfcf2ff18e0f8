package onnx

import (
	"fmt"
	"strings"

	"github.com/nfbo/nfbo/engine/onnx/onnxpb"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"github.com/nfbo/nfbo/model"
	"google.golang.org/protobuf/proto"
)

// Marshal returns the protobuf encoding of m, deterministic for equal models.
func Marshal(m *onnxpb.ModelProto) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("onnx: marshal %s: %w", m.GetGraph().GetName(), err)
	}
	return b, nil
}

// WriteFile writes m to path atomically (internal/atomicfile).
func WriteFile(path string, m *onnxpb.ModelProto) error {
	data, err := Marshal(m)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data); err != nil {
		return fmt.Errorf("onnx: %w", err)
	}
	return nil
}

// ExportPaths returns the encoder and decoder file names for an output
// name: "m.onnx" gives "m.encode.onnx" and "m.decode.onnx".
func ExportPaths(out string) (encPath, decPath string) {
	stem := strings.TrimSuffix(out, ".onnx")
	return stem + ".encode.onnx", stem + ".decode.onnx"
}

// Export writes f's encoder and decoder to ExportPaths(out).
func Export(f *model.Flow, out string) (encPath, decPath string, err error) {
	encPath, decPath = ExportPaths(out)
	enc, err := Encoder(f)
	if err != nil {
		return "", "", err
	}
	if err := WriteFile(encPath, enc); err != nil {
		return "", "", err
	}
	dec, err := Decoder(f)
	if err != nil {
		return "", "", err
	}
	if err := WriteFile(decPath, dec); err != nil {
		return "", "", err
	}
	return encPath, decPath, nil
}
