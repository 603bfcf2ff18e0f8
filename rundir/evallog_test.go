package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzParseLog feeds the evaluation-log reader arbitrary bytes (seed corpus
// in testdata/fuzz/FuzzParseLog: good logs, a torn last line, damage of
// each kind, a record of an unanswered molecule). It must never panic; a
// rejected log is a *LogError naming a line and returns nothing; in an
// accepted one every complete line is one in-sequence record and only a
// last line without its newline is left over (torn). An accepted log
// written out again as Budget writes records reads back the same, and cut
// anywhere inside its last record it reads as the records before it plus
// a torn line.
//
//	go test ./chem/objective -run '^$' -fuzz FuzzParseLog -fuzztime 1m
func FuzzParseLog(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, end, torn, _, err := parseLog("fuzz.jsonl", data)
		if err != nil {
			var le *LogError
			if !errors.As(err, &le) || le.Line < 1 || le.Path != "fuzz.jsonl" {
				t.Fatalf("error %v is not a *LogError naming a line", err)
			}
			if recs != nil || end != 0 || torn != 0 {
				t.Fatalf("rejected log returned %d records, end %d, torn %d", len(recs), end, torn)
			}
			return
		}
		if end < 0 || end+int64(torn) != int64(len(data)) {
			t.Fatalf("end %d + torn %d != %d bytes", end, torn, len(data))
		}
		complete, rest := data[:end], data[end:]
		if len(complete) > 0 && complete[len(complete)-1] != '\n' {
			t.Fatalf("the complete part does not end with a newline")
		}
		if bytes.IndexByte(rest, '\n') >= 0 {
			t.Fatalf("the torn part %q holds a newline", rest)
		}
		if n := bytes.Count(complete, []byte("\n")); n != len(recs) {
			t.Fatalf("%d complete lines, %d records", n, len(recs))
		}
		for i, r := range recs {
			if r.Call != i+1 {
				t.Fatalf("record %d has call %d", i+1, r.Call)
			}
		}

		// Round trip: written as Budget writes them, the records read back the same.
		written := encodeRecords(t, recs)
		again, end2, torn2, unchecked, err := parseLog("again.jsonl", written)
		if err != nil || torn2 != 0 || end2 != int64(len(written)) || len(again) != len(recs) || unchecked != 0 {
			t.Fatalf("written again: %d records, end %d, torn %d, err %v; want %d records", len(again), end2, torn2, err, len(recs))
		}
		if !bytes.Equal(encodeRecords(t, again), written) {
			t.Fatalf("records changed in a round trip:\n%s\n%s", written, encodeRecords(t, again))
		}

		// A crash in the middle of the last record's write leaves a torn line.
		if len(recs) == 0 {
			return
		}
		lastStart := bytes.LastIndexByte(written[:len(written)-1], '\n') + 1
		for _, cut := range []int{lastStart + 1, (lastStart + len(written)) / 2, len(written) - 1} {
			if cut <= lastStart || cut >= len(written) {
				continue
			}
			got, end3, torn3, _, err := parseLog("cut.jsonl", written[:cut])
			if err != nil || len(got) != len(recs)-1 || end3 != int64(lastStart) || torn3 != cut-lastStart {
				t.Fatalf("cut at %d of %d: %d records, end %d, torn %d, err %v", cut, len(written), len(got), end3, torn3, err)
			}
		}
	})
}

// encodeRecords writes recs as Budget appends them: one JSON line each.
func encodeRecords(t *testing.T, recs []Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range recs {
		line, err := AppendRecord(nil, r)
		if err != nil {
			t.Fatalf("encoding %+v: %v", r, err)
		}
		buf.Write(line)
	}
	return buf.Bytes()
}

// TestLogRecordChecks: a flipped score digit or SMILES character, or a check removed from one line of a checked
// log, was accepted silently; it is a *LogError naming the line. A log of an earlier nfbo, without checks, reads
// as before, counted as unchecked (issue #56).
func TestLogRecordChecks(t *testing.T) {
	recs := []Record{
		{Call: 1, SMILES: "OCC", Canonical: "CCO", Score: 0.25, Task: "adip"},
		{Call: 2, SMILES: "c1ccccc1", Canonical: "c1ccccc1", Score: 0.5, Task: "adip"},
		{Call: 3, SMILES: "CCN", Canonical: "CCN", Score: 0.125, Task: "adip"},
	}
	good := encodeRecords(t, recs)
	if !bytes.Contains(good, []byte(`"task":"adip","crc":"`)) {
		t.Fatalf("no check at the end of the lines:\n%s", good)
	}
	if got, _, _, unchecked, err := parseLog("log", good); err != nil || len(got) != 3 || unchecked != 0 {
		t.Fatalf("good log: %d records, %d unchecked, %v", len(got), unchecked, err)
	}
	lines := bytes.SplitAfter(good, []byte("\n"))
	for _, tc := range []struct {
		name string
		edit func() []byte
	}{
		{"score digit", func() []byte { return bytes.Replace(good, []byte(`"score":0.5`), []byte(`"score":0.9`), 1) }},
		{"SMILES character", func() []byte {
			return bytes.Replace(good, []byte(`"smiles":"c1ccccc1"`), []byte(`"smiles":"c1cccnc1"`), 1)
		}},
		{"check removed", func() []byte {
			l := lines[1]
			i := bytes.Index(l, []byte(`,"crc":"`))
			return bytes.Join([][]byte{lines[0], append(append([]byte{}, l[:i]...), "}\n"...), lines[2]}, nil)
		}},
	} {
		_, _, _, _, err := parseLog("log", tc.edit())
		var le *LogError
		if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("%s changed on line 2: %v, want a damaged record on line 2", tc.name, err)
		}
	}
	var old bytes.Buffer
	for _, r := range recs[:2] {
		line, _ := json.Marshal(r)
		old.Write(append(line, '\n'))
	}
	third, _ := AppendRecord(nil, recs[2])
	old.Write(third)
	if got, _, _, unchecked, err := parseLog("old", old.Bytes()); err != nil || len(got) != 3 || unchecked != 2 {
		t.Errorf("an earlier nfbo's log resumed: %d records, %d unchecked, %v; want 3 and 2", len(got), unchecked, err)
	}
}
