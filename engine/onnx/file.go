package onnx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nfbo/nfbo/engine/onnx/onnxpb"
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

// WriteFile writes m to path atomically (temporary file, sync, rename).
func WriteFile(path string, m *onnxpb.ModelProto) (err error) {
	data, err := Marshal(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("onnx: write model: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("onnx: write model %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("onnx: write model %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("onnx: write model %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("onnx: write model: %w", err)
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
