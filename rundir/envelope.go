package rundir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// CheckpointFile and PendingFile are written sealed, in an envelope that tells a damaged file from a good one
// before anything in it is used (their payload is the optimiser's, bo's):
//
//	magic    8 bytes  CheckpointMagic or PendingMagic
//	length   8 bytes  payload length, little-endian
//	CRC-32C  4 bytes  Castagnoli CRC of the payload, little-endian
//	payload
//
// Files written before the envelope existed are a bare payload (a gob stream); Unseal returns them whole,
// unchecked, and the next write seals them. (A model checkpoint, model.SaveCheckpoint, is another format: a
// versioned file streamed to disk with its CRC at the end, since it can be larger than one would hold twice.)
const (
	CheckpointMagic = "NFBOCKP\x01"
	PendingMagic    = "NFBOPND\x01"
	EnvelopeHeader  = 20     // bytes before the payload
	envelopePrefix  = "NFBO" // every magic starts so; a bare gob stream never does
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrDamaged is wrapped by Unseal's errors for a sealed file that does not check: a wrong length or checksum,
// or (as its readers report it) a payload that does not decode.
var ErrDamaged = errors.New("damaged")

// Seal returns payload in an envelope with the given magic.
func Seal(magic string, payload []byte) []byte {
	out := make([]byte, EnvelopeHeader, EnvelopeHeader+len(payload))
	copy(out, magic)
	binary.LittleEndian.PutUint64(out[8:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(out[16:], crc32.Checksum(payload, castagnoli))
	return append(out, payload...)
}

// Unseal returns the payload of data written by Seal with the given magic, checked against its length and
// checksum. Data that does not start with the envelope's prefix is returned whole with sealed false: a file
// from before the envelope.
func Unseal(magic string, data []byte) (payload []byte, sealed bool, err error) {
	if !bytes.HasPrefix(data, []byte(envelopePrefix)) {
		return data, false, nil
	}
	if len(data) < EnvelopeHeader {
		return nil, true, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrDamaged, len(data), EnvelopeHeader)
	}
	if got := string(data[:8]); got != magic {
		return nil, true, fmt.Errorf("%w or of another kind: header %q, want %q", ErrDamaged, got, magic)
	}
	n := binary.LittleEndian.Uint64(data[8:])
	if n != uint64(len(data)-EnvelopeHeader) {
		return nil, true, fmt.Errorf("%w: the header says %d bytes of data, the file holds %d (cut short or appended to)",
			ErrDamaged, n, len(data)-EnvelopeHeader)
	}
	payload = data[EnvelopeHeader:]
	if got, want := crc32.Checksum(payload, castagnoli), binary.LittleEndian.Uint32(data[16:]); got != want {
		return nil, true, fmt.Errorf("%w: CRC-32C %08x, the header says %08x", ErrDamaged, got, want)
	}
	return payload, true, nil
}
