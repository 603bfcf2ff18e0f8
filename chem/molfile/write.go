package molfile

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"
)

// WriteCSV writes rows as a CSV table that Read reads back as it was written: a smiles column, the scores in a
// column named column (none when column is ""), with every digit a float64 needs, and a name column when a row
// has a name. A table of scored molecules so written is an -init file whose scores cost nothing.
func WriteCSV(w io.Writer, column string, rows []Row) error {
	named := slices.ContainsFunc(rows, func(r Row) bool { return r.Name != "" })
	header := []string{"smiles"}
	if column != "" {
		header = append(header, column)
	}
	if named {
		header = append(header, "name")
	}
	cw := csv.NewWriter(w)
	cw.Write(header)
	rec := make([]string, 0, len(header))
	for _, r := range rows {
		rec = append(rec[:0], r.SMILES)
		if column != "" {
			rec = append(rec, strconv.FormatFloat(r.Score, 'g', -1, 64))
		}
		if named {
			rec = append(rec, r.Name)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}
