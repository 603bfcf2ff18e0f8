// Package onnxpb holds the Go bindings of the ONNX protobuf schema
// (onnx.proto, IR version 8, from Debian bookworm's python3-onnx 1.12.0,
// /usr/lib/python3/dist-packages/onnx/onnx.proto, Apache-2.0, sha256
// a96f50c0fe1ff9180b6025843d4f7efcf53b024c83db55a36cd24a1e44345182).
//
// onnx.pb.go was generated, not written: protoc 3.21.12 (Debian
// protobuf-compiler) with protoc-gen-go v1.36.11, the version of
// google.golang.org/protobuf in go.mod. To regenerate, from this directory:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
//	protoc --go_out=. --go_opt=paths=source_relative \
//	    --go_opt=Monnx.proto=github.com/nfbo/nfbo/engine/onnx/onnxpb onnx.proto
package onnxpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go_opt=Monnx.proto=github.com/nfbo/nfbo/engine/onnx/onnxpb onnx.proto
