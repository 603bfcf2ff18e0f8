// Package data holds the small data files shipped inside the nfbo binary:
// the SELFIES vocabularies of NF-BO and LOL-BO, and the default chemistry
// rules' generated data (rules/: the structural alerts with their frequencies,
// the atom environments seen in real molecules). The other files under data/
// (test sets, initial data, the default model) are read from disk; see
// data/README.md for every file's source, licence and checksum.
package data

import (
	"embed"
	"fmt"
)

//go:embed vocab/*.txt
var vocabFiles embed.FS

// Vocab returns the contents of data/vocab/NAME, e.g.
// "nfbo_guacamol_selfies_vocab_base.txt".
func Vocab(name string) ([]byte, error) {
	b, err := vocabFiles.ReadFile("vocab/" + name)
	if err != nil {
		return nil, fmt.Errorf("data: vocabulary %s: %w", name, err)
	}
	return b, nil
}

//go:embed rules/alerts.tsv rules/environments.txt.gz
var rulesFiles embed.FS

// Rules returns the contents of data/rules/NAME: "alerts.tsv" or "environments.txt.gz" (scripts/gen-rules.py
// writes both).
func Rules(name string) ([]byte, error) {
	b, err := rulesFiles.ReadFile("rules/" + name)
	if err != nil {
		return nil, fmt.Errorf("data: rules data %s: %w", name, err)
	}
	return b, nil
}
