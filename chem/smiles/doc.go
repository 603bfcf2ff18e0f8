// Package smiles parses SMILES strings into molecular graphs, kekulises them
// and writes kekulised graphs back as SMILES, exactly as the Python selfies
// package version 2.0.0 does internally.
//
// This is not a general cheminformatics SMILES toolkit. It reproduces the
// behaviour of selfies 2.0.0 (selfies/utils/smiles_utils.py, selfies/mol_graph.py,
// selfies/utils/matching_utils.py and selfies/constants.py of
// github.com/aspuru-guzik-group/selfies, tag v2.0.0, Apache License 2.0,
// copyright (c) the Aspuru-Guzik group), so that the SELFIES codec in
// package chem/selfies gives the same strings as the reference, quirks
// included:
//
//   - Only the SMILES subset that selfies understands is accepted: the
//     organic subset, aromatic b c n o p s, bracket atoms with isotope,
//     element, @ or @@, H count (one digit), charge (+, ++, +n, -, --, -n)
//     and atom class (ignored), bonds - = # / \ :, ring numbers 0-9 and %nn,
//     branches and the '.' separator. '*' and '$' are rejected.
//   - Bond characters in front of '(' are dropped, and ring bonds may not
//     cross a '.'.
//   - Kekulisation prunes the delocalisation subgraph with the selfies 2.0.0
//     rules (no radical correction, which came in 2.2.0) and finds a perfect
//     matching with a greedy pass followed by augmenting paths. The order in
//     which unmatched nodes are tried follows CPython's set iteration order,
//     which this package emulates, because it decides which Kekulé structure
//     comes out.
//   - The writer numbers rings in order of first use and never reuses a
//     number (%nn from 10 on), writes every out-bond but the last as a
//     parenthesised branch, and writes H counts explicitly ([CH1], [CH0]).
//
// Only ASCII input is supported: a non-ASCII byte is a syntax error here,
// where Python would treat Unicode letters and digits like ASCII ones.
//
// A Graph is a plain value with reusable storage; it is not safe for
// concurrent use.
package smiles
