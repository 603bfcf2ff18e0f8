package smiles

// IsElement reports whether sym is one of the element symbols that selfies
// 2.0.0 accepts (constants.ELEMENTS: H to Lr, plus Rf–Lv; no wildcard).
func IsElement(sym string) bool {
	switch len(sym) {
	case 1:
		switch sym[0] {
		case 'H', 'B', 'C', 'N', 'O', 'F', 'P', 'S', 'K', 'V', 'Y', 'I', 'W', 'U':
			return true
		}
		return false
	case 2:
		// A switch, not a map: no package-level tables.
		switch sym {
		case
			"He", "Li", "Be", "Ne", "Na", "Mg", "Al", "Si", "Cl", "Ar",
			"Ca", "Sc", "Ti", "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn",
			"Ga", "Ge", "As", "Se", "Br", "Kr", "Rb", "Sr", "Zr", "Nb",
			"Mo", "Tc", "Ru", "Rh", "Pd", "Ag", "Cd", "In", "Sn", "Sb",
			"Te", "Xe", "Cs", "Ba", "Hf", "Ta", "Re", "Os", "Ir", "Pt",
			"Au", "Hg", "Tl", "Pb", "Bi", "Po", "At", "Rn", "Fr", "Ra",
			"Rf", "Db", "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Fl",
			"Lv", "La", "Ce", "Pr", "Nd", "Pm", "Sm", "Eu", "Gd", "Tb",
			"Dy", "Ho", "Er", "Tm", "Yb", "Lu", "Ac", "Th", "Pa", "Np",
			"Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No", "Lr":
			return true
		}
	}
	return false
}

// aromaticValences is selfies' AROMATIC_VALENCES: the valences an aromatic
// atom of each element may have, smallest first, in vals[:n]; n is 0 for an
// element that cannot be aromatic.
func aromaticValences(element string) (vals [2]int, n int) {
	switch element {
	case "B", "Al":
		return [2]int{3}, 1
	case "C", "Si":
		return [2]int{4}, 1
	case "N", "P", "As":
		return [2]int{3, 5}, 2
	case "O", "S", "Se", "Te":
		return [2]int{2, 4}, 2
	}
	return vals, 0
}

// ImplicitHydrogens returns the hydrogens of an atom of element written without brackets whose bonds sum to
// valence: up to the smallest of the element's standard valences that the bonds do not exceed, none past the
// largest or outside the organic subset (OpenSMILES).
func ImplicitHydrogens(element string, valence int) int {
	for _, v := range standardValences[element] {
		if v >= valence {
			return v - valence
		}
	}
	return 0
}

// standardValences are OpenSMILES' for the organic subset, the atoms that may be written without brackets.
var standardValences = map[string][]int{
	"B": {3}, "C": {4}, "N": {3, 5}, "O": {2}, "P": {3, 5}, "S": {2, 4, 6},
	"F": {1}, "Cl": {1}, "Br": {1}, "I": {1},
}
