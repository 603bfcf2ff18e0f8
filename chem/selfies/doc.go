// Package selfies is an exact Go port of the SELFIES codec of the Python
// selfies package, version 2.0.0: Encode and Decode return, string for
// string, what selfies.encoder and selfies.decoder 2.0.0 return under the
// same semantic constraints.
//
// The port follows selfies/encoder.py, decoder.py, grammar_rules.py,
// bond_constraints.py, compatibility.py, constants.py and
// utils/selfies_utils.py of github.com/aspuru-guzik-group/selfies at tag
// v2.0.0 (Apache License 2.0, copyright (c) the Aspuru-Guzik group); the
// SMILES side lives in package chem/smiles. Version 2.0.0 matters: 2.2.0
// changed the default capacities of C+1, P+1, P-1 and S+1 and the
// kekulisation rules, and NF-BO pins 2.0.0.
//
// Unlike the Python package there is no global constraint table: an Encoder
// or Decoder carries its own Constraints, and the package-level Encode and
// Decode use DefaultConstraints. Known, deliberate differences from the
// reference, all on inputs that are not chemistry: non-ASCII text is not
// treated as letters or digits, charges with more than nine digits are
// rejected, and inputs on which Python crashes (RecursionError on chains of
// about a thousand atoms in the decoder, IndexError or KeyError in the
// encoder) give a result or an error value here.
package selfies

// Encode translates SMILES into SELFIES with the default selfies 2.0.0
// constraints in strict mode, like selfies.encoder(smiles). It builds a new
// Encoder per call; reuse one (NewEncoder) in loops. It is safe for
// concurrent use.
func Encode(smiles string) (string, error) {
	e := Encoder{c: DefaultConstraints(), strict: true}
	return e.Encode(smiles)
}

// Decode translates SELFIES into SMILES with the default selfies 2.0.0
// constraints, like selfies.decoder(selfies). It builds a new Decoder per
// call; reuse one (NewDecoder) in loops. It is safe for concurrent use.
func Decode(selfies string) (string, error) {
	d := Decoder{c: DefaultConstraints()}
	return d.Decode(selfies)
}
