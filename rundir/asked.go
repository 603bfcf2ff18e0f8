package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nfbo/nfbo/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Asked is one molecule handed out by "nfbo ask" to be scored elsewhere: one JSON line of AskedFile.
//
//	{"id":"m7","smiles":"C1=CC=CC=C1O","canonical":"Oc1ccccc1","batch":2,"time":"2026-11-24T10:00:00Z"}
//
// The id is what the user tells the score against; it never changes, and a molecule asked for again (the same
// batch asked twice, or a batch resumed after a crash) keeps its id.
type Asked struct {
	// ID is "m" and the molecule's 1-based position in the ledger.
	ID string `json:"id"`
	// SMILES is the molecule as the optimiser proposed it: the key it is scored under.
	SMILES string `json:"smiles"`
	// Canonical is its RDKit canonical SMILES (the evaluation log's key, and what the user is shown).
	Canonical string `json:"canonical"`
	// Name is the molecule's name in the user's initial file (an SDF title, a name column), if it has one.
	Name string `json:"name,omitempty"`
	// From is how the optimiser made it (the evaluation log's Record.From once it is told), if it says.
	From *Origin `json:"from,omitempty"`
	// Batch is the 1-based number of the ask that first handed it out.
	Batch int `json:"batch"`
	// Time is when it was first handed out (UTC).
	Time time.Time `json:"time"`
}

// AskedID returns the id of the n-th molecule of a ledger (1-based).
func AskedID(n int) string { return "m" + strconv.Itoa(n) }

// Ledger is the ask/tell ledger of a run directory (AskedFile), in memory.
type Ledger struct {
	Dir   string
	Items []Asked
	byID  map[string]int
	byKey map[string]int // SMILES and canonical SMILES -> index
	torn  int64          // bytes of a torn last line, dropped on the next append
	end   int64
}

// ReadLedger reads dir's AskedFile; a missing file is an empty ledger. A last line without its newline (a crash
// during an append) is left out and cut off by the next Append; any other damage is an error naming the line.
func ReadLedger(dir string) (*Ledger, error) {
	l := &Ledger{Dir: dir, byID: map[string]int{}, byKey: map[string]int{}}
	path := filepath.Join(dir, AskedFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rundir: %w", err)
	}
	for line := 1; len(data[l.end:]) > 0; line++ {
		rest := data[l.end:]
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			l.torn = int64(len(rest))
			break
		}
		var a Asked
		dec := json.NewDecoder(bytes.NewReader(rest[:nl]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return nil, fmt.Errorf("rundir: %s:%d: not a ledger entry: %w", path, line, err)
		}
		if want := AskedID(len(l.Items) + 1); a.ID != want || a.SMILES == "" || a.Batch < 1 {
			return nil, fmt.Errorf("rundir: %s:%d: entry %q (smiles %q, batch %d) out of sequence: want id %s, a SMILES and a batch",
				path, line, a.ID, a.SMILES, a.Batch, want)
		}
		if _, dup := l.byKey[a.SMILES]; dup {
			return nil, fmt.Errorf("rundir: %s:%d: molecule %s is in the ledger twice", path, line, a.SMILES)
		}
		l.add(a)
		l.end += int64(nl + 1)
	}
	return l, nil
}

func (l *Ledger) add(a Asked) {
	i := len(l.Items)
	l.Items = append(l.Items, a)
	l.byID[a.ID] = i
	l.byKey[a.SMILES] = i
	if a.Canonical != "" {
		if _, ok := l.byKey[a.Canonical]; !ok {
			l.byKey[a.Canonical] = i
		}
	}
}

// ByID returns the entry with the given id.
func (l *Ledger) ByID(id string) (Asked, bool) {
	i, ok := l.byID[strings.TrimSpace(id)]
	if !ok {
		return Asked{}, false
	}
	return l.Items[i], true
}

// Lookup returns the entry of a molecule, by the SMILES it was asked under or its canonical SMILES.
func (l *Ledger) Lookup(smiles string) (Asked, bool) {
	i, ok := l.byKey[smiles]
	if !ok {
		return Asked{}, false
	}
	return l.Items[i], true
}

// Batches returns the number of asks that handed out molecules.
func (l *Ledger) Batches() int {
	if len(l.Items) == 0 {
		return 0
	}
	return l.Items[len(l.Items)-1].Batch
}

// Append gives the molecules not yet in the ledger the next ids, under batch number Batches()+1, and appends
// them to AskedFile (synced) before returning every molecule's entry in order. smiles[i] is the molecule as
// proposed, canonical[i] its canonical SMILES. The caller holds the run directory's lock.
func (l *Ledger) Append(smiles, canonical []string, now time.Time) ([]Asked, error) {
	if len(smiles) != len(canonical) {
		return nil, fmt.Errorf("rundir: %d molecules, %d canonical forms", len(smiles), len(canonical))
	}
	mols := make([]Asked, len(smiles))
	for i, s := range smiles {
		mols[i] = Asked{SMILES: s, Canonical: canonical[i]}
	}
	return l.AppendAsked(mols, now)
}

// AppendAsked is Append with whatever else the molecules carry (their SMILES, Canonical, Name and From; their
// ID, Batch and Time are the ledger's), kept with the molecules new to the ledger.
func (l *Ledger) AppendAsked(mols []Asked, now time.Time) ([]Asked, error) {
	out := make([]Asked, len(mols))
	var buf bytes.Buffer
	var added []Asked
	batch := l.Batches() + 1
	for i, m := range mols {
		if a, ok := l.byKey[m.SMILES]; ok {
			out[i] = l.Items[a]
			continue
		}
		a := Asked{ID: AskedID(len(l.Items) + 1), SMILES: m.SMILES, Canonical: m.Canonical, Name: m.Name, From: m.From,
			Batch: batch, Time: now.UTC()}
		line, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("rundir: encode ledger entry: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		l.add(a)
		added = append(added, a)
		out[i] = a
	}
	if len(added) == 0 {
		return out, nil
	}
	path := filepath.Join(l.Dir, AskedFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		// A torn last line is overwritten: it never held a whole entry, so no id in it was handed out.
		_, err = f.WriteAt(buf.Bytes(), l.end)
		if err == nil {
			err = f.Truncate(l.end + int64(buf.Len()))
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		// Forget what was not written, so that the ledger in memory stays the one on disk.
		n := len(l.Items) - len(added)
		for _, a := range added {
			delete(l.byID, a.ID)
			delete(l.byKey, a.SMILES)
			if j, ok := l.byKey[a.Canonical]; ok && j >= n {
				delete(l.byKey, a.Canonical)
			}
		}
		l.Items = l.Items[:n]
		return nil, fmt.Errorf("rundir: append to %s: %w", path, err)
	}
	l.end += int64(buf.Len())
	l.torn = 0
	_ = atomicfile.SyncDir(l.Dir) // the file may be new
	return out, nil
}
