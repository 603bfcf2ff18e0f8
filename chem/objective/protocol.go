package objective

import (
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the version of the JSON-lines worker protocol that the
// embedded RDKit worker speaks (docs/objective-protocol.md).
const ProtocolVersion = 1

// request is one protocol request: a single JSON object on one line.
type request struct {
	ID       int64    `json:"id"`
	Op       string   `json:"op"`
	Task     string   `json:"task,omitempty"`
	Tasks    []string `json:"tasks,omitempty"`
	SMILES   []string `json:"smiles,omitempty"`
	Isomeric *bool    `json:"isomeric,omitempty"`
	Width    int      `json:"width,omitempty"`  // draw
	Height   int      `json:"height,omitempty"` // draw
	// Rules are the chemistry rules of a check (chem/rules' JSON).
	Rules json.RawMessage `json:"rules,omitempty"`
	// MolBlocks are molfile blocks to standardize (instead of SMILES).
	MolBlocks []string `json:"molblocks,omitempty"`
}

// response is one protocol response. Scores is decoded lazily because its
// shape depends on whether the request named one task or several.
type response struct {
	ID           *int64          `json:"id"`
	OK           bool            `json:"ok"`
	Error        string          `json:"error"`
	RDKitMissing bool            `json:"rdkit_missing"`
	Scores       json.RawMessage `json:"scores"`
	Errors       json.RawMessage `json:"errors"`
	Canonical    []string        `json:"canonical"`
	Notes        []string        `json:"notes"`
	SVGs         []string        `json:"svgs"`
	MolBlocks    []string        `json:"molblocks"`
	Seconds      float64         `json:"seconds"`
	Tasks        []TaskInfo      `json:"tasks"`
	Protocol     int             `json:"protocol"`
	RDKit        string          `json:"rdkit"`
	Python       string          `json:"python"`
	Numpy        string          `json:"numpy"`
	PID          int             `json:"pid"`
}

// TaskInfo describes one task of the RDKit worker.
type TaskInfo struct {
	// Name is the task's name: the GuacaMol benchmark name ("Amlodipine
	// MPO"), the TDC oracle name ("amlodipine_mpo") or qed, logp, sa.
	Name string `json:"name"`
	// Aliases are other accepted names, e.g. NF-BO's short id "adip".
	Aliases []string `json:"aliases"`
	// Suite is "guacamol", "pmo", "lolbo" or "rdkit".
	Suite string `json:"suite"`
	// Description says what the task computes.
	Description string `json:"description"`
	// ClipNegative reports whether negative scores become 0 (NF-BO's rule);
	// false for tasks whose reference keeps negative values.
	ClipNegative bool `json:"clip_negative"`
	// TopK is GuacaMol's top-k specification for the benchmark score, e.g.
	// [1 10 100]; empty for tasks outside GuacaMol.
	TopK []int `json:"top_k"`
}

// decodeResponse decodes one response line. Python's json module writes
// NaN, Infinity and -Infinity for non-finite floats, which JSON does not
// allow; such a line is still the worker's answer, in step with the
// request, so those tokens are read as the strings "NaN", "Infinity" and
// "-Infinity" instead of failing the line (and restarting the worker), and
// decodeScores reports the molecules concerned as not answered.
func decodeResponse(line []byte) (*response, error) {
	var resp response
	err := json.Unmarshal(line, &resp)
	if err == nil {
		return &resp, nil
	}
	fixed, ok := quoteNonFinite(line)
	if !ok {
		return nil, err
	}
	resp = response{}
	if json.Unmarshal(fixed, &resp) != nil {
		return nil, err
	}
	return &resp, nil
}

// quoteNonFinite returns line with every NaN, Infinity and -Infinity token
// outside a string quoted, and whether there was any.
func quoteNonFinite(line []byte) ([]byte, bool) {
	var out []byte
	inString, escaped, found := false, false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			out = append(out, c)
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		if i == 0 || !isWordByte(line[i-1]) {
			matched := false
			for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
				end := i + len(tok)
				if end <= len(line) && string(line[i:end]) == tok && (end == len(line) || !isWordByte(line[end])) {
					out = append(append(append(out, '"'), tok...), '"')
					i = end - 1
					matched, found = true, true
					break
				}
			}
			if matched {
				continue
			}
		}
		out = append(out, c)
	}
	return out, found
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c == '+' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// decodeScores decodes a single-task score list. JSON null becomes 0 with
// the reason "no score", so an external program may answer null for a
// molecule it cannot score; so does a non-empty errors[i]. Anything else
// that is not a finite number (NaN, Infinity, a string, an object, a
// number beyond float64) is no answer: the molecule's Result has Failed
// set, so that it is neither paid for nor logged (see Result).
func decodeScores(raw, rawErrs json.RawMessage, n int) ([]Result, error) {
	var scores []json.RawMessage
	if err := json.Unmarshal(raw, &scores); err != nil {
		return nil, fmt.Errorf("decoding \"scores\": %w", err)
	}
	if len(scores) != n {
		return nil, fmt.Errorf("got %d scores for %d molecules", len(scores), n)
	}
	var errs []*string
	if len(rawErrs) > 0 && string(rawErrs) != "null" {
		if err := json.Unmarshal(rawErrs, &errs); err != nil {
			return nil, fmt.Errorf("decoding \"errors\": %w", err)
		}
		if len(errs) != n {
			return nil, fmt.Errorf("got %d errors for %d molecules", len(errs), n)
		}
	}
	out := make([]Result, n)
	for i, s := range scores {
		r := Result{Done: true}
		if errs != nil && errs[i] != nil {
			r.Reason = *errs[i]
		}
		var v float64
		switch {
		case r.Reason != "":
			// A reported reason always means score 0.
		case string(s) == "null":
			r.Reason = "no score"
		case json.Unmarshal(s, &v) == nil:
			r.Score = v
		default:
			r.Failed = true
			r.Reason = fmt.Sprintf("the objective answered %.40s, which is not a finite number", s)
		}
		out[i] = r
	}
	return out, nil
}

// decodeMultiScores decodes the answer to a request with several tasks:
// one score list per task.
func decodeMultiScores(raw, rawErrs json.RawMessage, tasks, n int) ([][]Result, error) {
	var scores []json.RawMessage
	if err := json.Unmarshal(raw, &scores); err != nil {
		return nil, fmt.Errorf("decoding \"scores\": %w", err)
	}
	var errs []json.RawMessage
	if err := json.Unmarshal(rawErrs, &errs); err != nil {
		return nil, fmt.Errorf("decoding \"errors\": %w", err)
	}
	if len(scores) != tasks || len(errs) != tasks {
		return nil, fmt.Errorf("got %d score lists and %d error lists for %d tasks", len(scores), len(errs), tasks)
	}
	out := make([][]Result, tasks)
	for j := range out {
		r, err := decodeScores(scores[j], errs[j], n)
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", j, err)
		}
		out[j] = r
	}
	return out, nil
}
