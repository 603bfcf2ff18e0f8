// Package sdf reads structure-data files (SDF, MDL's CTfile format): records of a molfile block and data items,
// each ended by a "$$$$" line. It splits records and reads their names and data; the molfile blocks themselves
// are left to RDKit (chem/objective's Standardize), which reads them as a chemist's tools write them.
package sdf

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Record is one molecule of an SDF.
type Record struct {
	// Line is the 1-based line of the record's first line (its name) in the file.
	Line int
	// Name is the record's first line, trimmed (often the compound's id); may be empty.
	Name string
	// MolBlock is the molfile block: from the name line to "M  END" inclusive.
	MolBlock string
	// Data are the record's data items, "> <NAME>" headers with the value's lines joined by "\n".
	Data map[string]string
}

// Read returns the records of an SDF read from r; name is the file's name for errors. A record without
// "M  END" before its "$$$$" is an error naming its line; a last record without "$$$$" is accepted.
func Read(name string, r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var recs []Record
	var cur *Record
	var block strings.Builder
	inBlock := true
	var item string // the data item being read, "" between items
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if cur == nil {
			cur = &Record{Line: line, Name: strings.TrimSpace(text), Data: map[string]string{}}
			block.Reset()
			inBlock, item = true, ""
		}
		switch {
		case text == "$$$$":
			if inBlock {
				return nil, fmt.Errorf("sdf: %s:%d: the record from line %d has no \"M  END\"", name, line, cur.Line)
			}
			recs = append(recs, *cur)
			cur = nil
		case inBlock:
			block.WriteString(text)
			block.WriteByte('\n')
			if strings.HasPrefix(text, "M  END") {
				cur.MolBlock, inBlock = block.String(), false
			}
		case strings.HasPrefix(text, ">"):
			item = ""
			if i := strings.Index(text, "<"); i >= 0 {
				if j := strings.Index(text[i:], ">"); j > 0 {
					item = text[i+1 : i+j]
				}
			}
		case item != "" && text == "":
			item = ""
		case item != "":
			if v, ok := cur.Data[item]; ok {
				cur.Data[item] = v + "\n" + text
			} else {
				cur.Data[item] = text
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sdf: %s:%d: %w", name, line+1, err)
	}
	if cur != nil {
		if inBlock {
			if strings.TrimSpace(block.String()) == "" {
				return recs, nil // trailing blank lines
			}
			return nil, fmt.Errorf("sdf: %s:%d: the record from line %d has no \"M  END\"", name, line, cur.Line)
		}
		recs = append(recs, *cur)
	}
	return recs, nil
}

// Looks reports whether data look like an SDF rather than SMILES or CSV: a molfile's "M  END" line.
func Looks(data []byte) bool {
	return strings.Contains(string(data), "\nM  END")
}

// Write writes recs as an SDF that Read reads back: each record's molfile block with its first line replaced by
// its Name (line breaks in it made spaces), its data items in the order of their names, and "$$$$".
func Write(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	for _, r := range recs {
		block := strings.TrimRight(r.MolBlock, "\n")
		if _, rest, ok := strings.Cut(block, "\n"); ok {
			block = rest
		}
		bw.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(r.Name))
		bw.WriteString("\n")
		bw.WriteString(block)
		bw.WriteString("\n")
		for _, k := range slices.Sorted(maps.Keys(r.Data)) {
			fmt.Fprintf(bw, ">  <%s>\n%s\n\n", k, strings.TrimRight(r.Data[k], "\n"))
		}
		bw.WriteString("$$$$\n")
	}
	return bw.Flush()
}
