package model

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// Checkpoint is what a SeqFlow file holds: the weights with their
// configuration, the vocabulary that gives the token ids their meaning, and
// optional opaque optimiser state for resuming training.
type Checkpoint struct {
	// Params are the weights; Params.Config is stored as JSON.
	Params *Params
	// Vocab lists the tokens in id order; its length must be Config.V.
	Vocab []string
	// Optim holds opaque blobs by name (e.g. Adam moments, RNG state, data
	// position) for the training engine; nil or empty when there are none.
	Optim map[string][]byte
}

// CheckpointName is the file name of the model inside a model directory
// (the --model DIR of the command line).
const CheckpointName = "seqflow.ckpt"

// CheckpointVersion is the format version written by SaveCheckpoint.
const CheckpointVersion = 1

// checkpointMagic opens every checkpoint file.
const checkpointMagic = "NFBOSEQF"

// Checkpoint file layout, version 1, all integers little-endian:
//
//	[0, 8)    magic "NFBOSEQF"
//	[8, 12)   version, uint32
//	[12, 20)  payload length L, uint64
//	[20, 20+L) payload:
//	            config:  uint64 n, n bytes of JSON (Config)
//	            vocab:   uint32 count, then per token uint32 n + n bytes
//	            tensors: uint32 count, then per tensor uint32 n + n bytes of
//	                     name, uint32 rank, rank × uint64 dims, then
//	                     Π dims float32 values (IEEE 754 bits), in
//	                     Params.Tensors() order
//	            optim:   uint32 count, then per entry uint32 n + n bytes of
//	                     key, uint64 m + m bytes of value, keys sorted
//	[20+L, 24+L) CRC-32C (Castagnoli) of the payload, uint32
const checkpointHeader = 8 + 4 + 8

// Errors wrapped by LoadCheckpoint, for errors.Is.
var (
	// ErrNotCheckpoint means the file does not start with the checkpoint magic.
	ErrNotCheckpoint = errors.New("not an nfbo SeqFlow checkpoint")
	// ErrTruncated means the file is shorter than its header says.
	ErrTruncated = errors.New("truncated checkpoint")
	// ErrCorrupt means the checksum or the payload's structure is wrong.
	ErrCorrupt = errors.New("corrupt checkpoint")
	// ErrVersion means the file was written by an unknown format version.
	ErrVersion = errors.New("unsupported checkpoint version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// validate checks that ck can be written and read back.
func (ck *Checkpoint) validate() error {
	if ck.Params == nil {
		return errors.New("no parameters")
	}
	cfg := ck.Params.Config
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := checkShapes(ck.Params); err != nil {
		return err
	}
	if len(ck.Vocab) != cfg.V {
		return fmt.Errorf("vocabulary has %d tokens, config says vocab_size %d", len(ck.Vocab), cfg.V)
	}
	return nil
}

// SaveCheckpoint writes ck to path atomically (internal/atomicfile), so that
// a crash leaves either the old file or the new one.
func SaveCheckpoint(path string, ck *Checkpoint) error {
	if err := ck.validate(); err != nil {
		return fmt.Errorf("model: save checkpoint %s: %w", path, err)
	}
	cfgJSON, err := json.Marshal(ck.Params.Config)
	if err != nil {
		return fmt.Errorf("model: save checkpoint %s: %w", path, err)
	}
	err = atomicfile.WriteFunc(path, func(w io.Writer) error {
		var hdr [checkpointHeader]byte
		copy(hdr[:8], checkpointMagic)
		binary.LittleEndian.PutUint32(hdr[8:], CheckpointVersion)
		binary.LittleEndian.PutUint64(hdr[12:], uint64(payloadSize(ck, len(cfgJSON))))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		crc := crc32.New(castagnoli)
		pw := &payloadWriter{w: io.MultiWriter(w, crc)}
		pw.writePayload(ck, cfgJSON)
		if pw.err != nil {
			return pw.err
		}
		if want := payloadSize(ck, len(cfgJSON)); pw.n != want {
			panic(fmt.Sprintf("model: checkpoint payload is %d bytes, size computed as %d", pw.n, want))
		}
		var sum [4]byte
		binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
		_, err := w.Write(sum[:])
		return err
	})
	if err != nil {
		return fmt.Errorf("model: save checkpoint: %w", err)
	}
	return nil
}

// payloadSize returns the number of payload bytes writePayload produces.
func payloadSize(ck *Checkpoint, cfgLen int) int {
	n := 8 + cfgLen
	n += 4
	for _, t := range ck.Vocab {
		n += 4 + len(t)
	}
	n += 4
	for _, t := range ck.Params.Tensors() {
		n += 4 + len(t.Name) + 4 + 8*len(t.Shape) + 4*len(t.Data)
	}
	n += 4
	for k, v := range ck.Optim {
		n += 4 + len(k) + 8 + len(v)
	}
	return n
}

// payloadWriter writes little-endian values and keeps the first error, as
// encoding/json's Encoder does.
type payloadWriter struct {
	w   io.Writer
	n   int
	err error
	buf [1 << 16]byte
}

func (pw *payloadWriter) write(b []byte) {
	if pw.err != nil {
		return
	}
	var n int
	n, pw.err = pw.w.Write(b)
	pw.n += n
}

func (pw *payloadWriter) u32(v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	pw.write(b[:])
}

func (pw *payloadWriter) u64(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	pw.write(b[:])
}

func (pw *payloadWriter) str(s string) {
	pw.u32(uint32(len(s)))
	pw.write([]byte(s))
}

func (pw *payloadWriter) floats(data []float32) {
	for len(data) > 0 {
		n := min(len(data), len(pw.buf)/4)
		for i, v := range data[:n] {
			binary.LittleEndian.PutUint32(pw.buf[4*i:], math.Float32bits(v))
		}
		pw.write(pw.buf[:4*n])
		data = data[n:]
	}
}

func (pw *payloadWriter) writePayload(ck *Checkpoint, cfgJSON []byte) {
	pw.u64(uint64(len(cfgJSON)))
	pw.write(cfgJSON)
	pw.u32(uint32(len(ck.Vocab)))
	for _, t := range ck.Vocab {
		pw.str(t)
	}
	ts := ck.Params.Tensors()
	pw.u32(uint32(len(ts)))
	for _, t := range ts {
		pw.str(t.Name)
		pw.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			pw.u64(uint64(d))
		}
		pw.floats(t.Data)
	}
	keys := make([]string, 0, len(ck.Optim))
	for k := range ck.Optim {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	pw.u32(uint32(len(keys)))
	for _, k := range keys {
		pw.str(k)
		pw.u64(uint64(len(ck.Optim[k])))
		pw.write(ck.Optim[k])
	}
}

// LoadCheckpoint reads a checkpoint written by SaveCheckpoint. Errors name
// the path and wrap ErrNotCheckpoint, ErrTruncated, ErrVersion or
// ErrCorrupt as appropriate; tensor names and shapes must be exactly those
// the stored configuration implies.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: load checkpoint: %w", err)
	}
	ck, err := parseCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("model: load checkpoint %s: %w", path, err)
	}
	return ck, nil
}

// LoadModelDir reads the checkpoint CheckpointName in dir, or dir itself if
// it is a file.
func LoadModelDir(dir string) (*Checkpoint, error) {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return LoadCheckpoint(filepath.Join(dir, CheckpointName))
	}
	return LoadCheckpoint(dir)
}

func parseCheckpoint(data []byte) (*Checkpoint, error) {
	if len(data) < len(checkpointMagic) || string(data[:len(checkpointMagic)]) != checkpointMagic {
		return nil, ErrNotCheckpoint
	}
	if len(data) < checkpointHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrTruncated, len(data), checkpointHeader)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != CheckpointVersion {
		return nil, fmt.Errorf("%w %d (this build reads version %d)", ErrVersion, v, CheckpointVersion)
	}
	plen := binary.LittleEndian.Uint64(data[12:])
	if want := uint64(checkpointHeader) + plen + 4; uint64(len(data)) != want {
		if uint64(len(data)) < want {
			return nil, fmt.Errorf("%w: %d bytes, header says %d", ErrTruncated, len(data), want)
		}
		return nil, fmt.Errorf("%w: %d bytes, header says %d (trailing data)", ErrCorrupt, len(data), want)
	}
	payload := data[checkpointHeader : checkpointHeader+int(plen)]
	if got, want := crc32.Checksum(payload, castagnoli), binary.LittleEndian.Uint32(data[checkpointHeader+int(plen):]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, want)
	}
	r := &payloadReader{b: payload}
	cfgJSON := r.bytes(r.u64())
	var cfg Config
	if r.err == nil {
		dec := json.NewDecoder(bytes.NewReader(cfgJSON))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("%w: config: %v", ErrCorrupt, err)
		}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	ck := &Checkpoint{}
	nv := r.u32()
	if r.err == nil && uint64(nv) > uint64(len(payload)) {
		return nil, fmt.Errorf("%w: %d vocabulary tokens", ErrCorrupt, nv)
	}
	for i := 0; i < int(nv) && r.err == nil; i++ {
		ck.Vocab = append(ck.Vocab, string(r.bytes(uint64(r.u32()))))
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(ck.Vocab) != cfg.V {
		return nil, fmt.Errorf("%w: %d vocabulary tokens, config says vocab_size %d", ErrCorrupt, len(ck.Vocab), cfg.V)
	}
	p := ZeroParams(cfg)
	want := p.Tensors()
	nt := r.u32()
	if r.err == nil && int(nt) != len(want) {
		return nil, fmt.Errorf("%w: %d tensors, config implies %d", ErrCorrupt, nt, len(want))
	}
	for _, t := range want {
		name := string(r.bytes(uint64(r.u32())))
		rank := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		if name != t.Name || int(rank) != len(t.Shape) {
			return nil, fmt.Errorf("%w: tensor %q of rank %d where the config implies %q of rank %d", ErrCorrupt, name, rank, t.Name, len(t.Shape))
		}
		for i, d := range t.Shape {
			if got := r.u64(); r.err == nil && got != uint64(d) {
				return nil, fmt.Errorf("%w: tensor %s has dimension %d = %d, config implies %v", ErrCorrupt, name, i, got, t.Shape)
			}
		}
		raw := r.bytes(uint64(4 * len(t.Data)))
		if r.err != nil {
			return nil, r.err
		}
		for i := range t.Data {
			t.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	ck.Params = p
	no := r.u32()
	for i := 0; i < int(no) && r.err == nil; i++ {
		k := string(r.bytes(uint64(r.u32())))
		v := r.bytes(r.u64())
		if r.err == nil {
			if ck.Optim == nil {
				ck.Optim = map[string][]byte{}
			}
			ck.Optim[k] = slices.Clone(v)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d unread payload bytes", ErrCorrupt, len(r.b))
	}
	return ck, nil
}

// payloadReader reads little-endian values from a checksummed payload; the
// first overrun sticks as ErrCorrupt (the length was already checked, so an
// overrun means inconsistent section lengths).
type payloadReader struct {
	b   []byte
	off int
	err error
}

func (r *payloadReader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: a %d-byte field at payload offset %d runs past the end", ErrCorrupt, n, r.off)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	r.off += int(n)
	return out
}

func (r *payloadReader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *payloadReader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}
