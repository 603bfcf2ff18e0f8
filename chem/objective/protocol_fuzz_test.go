package objective

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeResponse: a worker's line never panics the decoder; a line that
// is standard JSON decodes as encoding/json decodes it, and one whose only
// fault is Python's NaN, Infinity or -Infinity still decodes, with those
// scores no answer rather than a reason to restart the worker.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"id": 3, "ok": true, "scores": [0.5, NaN, -Infinity, null], "errors": ["", "", "", "x"]}`))
	f.Add([]byte(`{"id": 1, "ok": true, "scores": [Infinity], "errors": ["NaN \"NaN\" Infinity"]}`))
	f.Add([]byte(`{"id": 2, "ok": false, "error": "unknown op"}`))
	f.Add([]byte(`this is not json`))
	f.Fuzz(func(t *testing.T, line []byte) {
		resp, err := decodeResponse(line)
		var want response
		if json.Unmarshal(line, &want) == nil {
			if err != nil {
				t.Fatalf("standard JSON %q rejected: %v", line, err)
			}
			got, _ := json.Marshal(resp)
			exp, _ := json.Marshal(&want)
			if !bytes.Equal(got, exp) {
				t.Fatalf("%q decoded as %s, encoding/json gives %s", line, got, exp)
			}
		}
		if err != nil || resp.Scores == nil {
			return
		}
		var n []json.RawMessage
		if json.Unmarshal(resp.Scores, &n) != nil {
			return
		}
		res, err := decodeScores(resp.Scores, resp.Errors, len(n))
		if err != nil {
			return
		}
		for i, r := range res {
			if !r.Done || (r.Failed && r.Reason == "") || (r.Reason != "" && r.Score != 0) {
				t.Fatalf("molecule %d: %+v", i, r)
			}
		}
	})
}
