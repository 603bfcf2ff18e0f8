package bo

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"testing"

	"github.com/nfbo/nfbo/rundir"
)

// smallCheckpoint returns the gob payload of a small checkpoint.
func smallCheckpoint(t testing.TB) []byte {
	var buf bytes.Buffer
	c := checkpointData{Version: checkpointVersion, State: state{Iter: 2, T: 3, F: 2, Y: []float64{1, 2}, SMILES: []string{"C", "CC"},
		Tokens: []int{1, 2, 0, 1, 1, 0}, NInit: 1}, RNG: []byte{1, 2, 3}, Flow: []byte{4, 5}, Calls: 1}
	if err := gob.NewEncoder(&buf).Encode(c); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzRunDirFile feeds arbitrary bytes to the readers of rundir.CheckpointFile and rundir.PendingFile: they must never panic,
// a file they accept must decode, and the envelope must round-trip any payload and catch a flipped byte
// anywhere in it. The seed corpus (testdata/fuzz/FuzzRunDirFile and the f.Add calls) runs in every go test.
func FuzzRunDirFile(f *testing.F) {
	payload := smallCheckpoint(f)
	f.Add(rundir.Seal(rundir.CheckpointMagic, payload))
	f.Add(payload) // a checkpoint from before the envelope
	f.Add(rundir.Seal(rundir.PendingMagic, payload))
	f.Add([]byte("NFBO"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, sealed, err := decodeCheckpoint(data); err == nil && sealed {
			if p, _, _ := rundir.Unseal(rundir.CheckpointMagic, data); !bytes.Equal(rundir.Seal(rundir.CheckpointMagic, p), data) {
				t.Errorf("an accepted checkpoint is not the envelope of its payload")
			}
		}
		decodePending(data)
		sealed := rundir.Seal(rundir.CheckpointMagic, data)
		got, ok, err := rundir.Unseal(rundir.CheckpointMagic, sealed)
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Fatalf("openFile(sealFile(%d bytes)) = %d bytes, %v, %v", len(data), len(got), ok, err)
		}
		if len(data) > 0 {
			i := int(data[0]) * len(sealed) / 256
			sealed[i] ^= 0x04
			if _, _, err := rundir.Unseal(rundir.CheckpointMagic, sealed); err == nil && bytes.HasPrefix(sealed, []byte("NFBO")) {
				t.Errorf("byte %d of %d flipped: accepted", i, len(sealed))
			} else if err != nil && !errors.Is(err, rundir.ErrDamaged) {
				t.Errorf("byte %d flipped: %v does not wrap ErrDamaged", i, err)
			}
		}
	})
}

// FuzzSameConfig feeds arbitrary bytes as a saved config.json to the resume check: it must never panic, must
// accept the JSON of the configuration itself and refuse anything that decodes to another one.
func FuzzSameConfig(f *testing.F) {
	cfg := toyConfig("/runs/a")
	saved, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(saved)
	f.Add([]byte(`{"Budget": 61}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := sameConfig(data, cfg)
		var was Config
		if json.Unmarshal(data, &was) != nil {
			if err == nil {
				t.Errorf("%q: accepted, but it is not a configuration", data)
			}
			return
		}
		was.RunDir = cfg.RunDir
		a, _ := json.Marshal(was.own())
		b, _ := json.Marshal(cfg)
		if same := bytes.Equal(a, b); same != (err == nil) {
			t.Errorf("%q: sameConfig = %v, but the configurations are equal: %v", data, err, same)
		}
	})
}
