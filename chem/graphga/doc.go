// Package graphga holds the operators of the graph-based genetic algorithm (Jensen, "A graph-based genetic
// algorithm and generative model/Monte Carlo tree search for the exploration of chemical space", Chem. Sci. 2019):
// a crossover that joins fragments of two parents (Crosser) and mutations that edit one molecule's atoms and bonds
// (Mutator). Both work on the kekulised molecular graph and keep every atom's valence allowed, so that their
// children are valid molecules.
//
// Where a SELFIES genetic algorithm's one-point crossover reads the second parent's tail in the first parent's
// context (its branch and ring symbols change meaning), and its one-symbol mutation can change what every later
// symbol means, these operators move whole substituents, ring systems and chains, and change one atom, bond or
// ring at a time: the moves that let a search assemble a target's pieces (the rediscovery and similarity tasks).
//
// The molecules are SMILES of the subset package chem/smiles reads (the SELFIES decoder's output and canonical
// RDKit SMILES alike); a child is written kekulised, without stereo marks (a cut or an edit renumbers the
// neighbours that @/@@ and / \ refer to), for the SELFIES encoder.
package graphga
