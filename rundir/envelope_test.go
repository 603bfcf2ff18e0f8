package rundir

import (
	"bytes"
	"errors"
	"testing"
)

// TestEnvelope: Unseal returns what Seal sealed, finds every single-bit flip, a cut, an appended byte and the
// other file's magic, and returns a file from before the envelope whole, unchecked.
func TestEnvelope(t *testing.T) {
	payload := []byte("a gob stream, say")
	good := Seal(CheckpointMagic, payload)
	if got, sealed, err := Unseal(CheckpointMagic, good); err != nil || !sealed || !bytes.Equal(got, payload) {
		t.Fatalf("Unseal(Seal) = %q, %v, %v", got, sealed, err)
	}
	damaged := func(what string, data []byte, magic string) {
		t.Helper()
		if _, _, err := Unseal(magic, data); !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: %v, want ErrDamaged", what, err)
		}
	}
	for i := EnvelopeHeader - 12; i < len(good); i++ { // length, CRC and payload; a flip in the magic is another kind
		data := bytes.Clone(good)
		data[i] ^= 0x10
		damaged("flipped", data, CheckpointMagic)
	}
	damaged("cut short", good[:len(good)-1], CheckpointMagic)
	damaged("header only", good[:EnvelopeHeader-1], CheckpointMagic)
	damaged("appended to", append(bytes.Clone(good), 0), CheckpointMagic)
	damaged("the pending batch's magic", good, PendingMagic)
	if got, sealed, err := Unseal(PendingMagic, payload); err != nil || sealed || !bytes.Equal(got, payload) {
		t.Errorf("a file from before the envelope: %q, %v, %v", got, sealed, err)
	}
}
