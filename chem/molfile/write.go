package molfile

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/nfbo/nfbo/chem/sdf"
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

// WriteSDF writes rows as an SDF that Read reads back: each row's MolBlock (which every row must have: RDKit's,
// chem/objective's Pool.MolBlocks) titled by its name, and its score in a data item named column (none when column
// is ""), with every digit a float64 needs.
func WriteSDF(w io.Writer, column string, rows []Row) error {
	recs := make([]sdf.Record, len(rows))
	for i, r := range rows {
		if r.MolBlock == "" {
			return fmt.Errorf("molfile: writing an SDF: molecule %d (%s) has no molfile block", i+1, r.SMILES)
		}
		recs[i] = sdf.Record{Name: r.Name, MolBlock: r.MolBlock}
		if column != "" {
			recs[i].Data = map[string]string{column: strconv.FormatFloat(r.Score, 'g', -1, 64)}
		}
	}
	return sdf.Write(w, recs)
}
