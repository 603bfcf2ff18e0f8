"""Batch RDKit checks for the chem/selfies tests; run with /usr/bin/python3.

Modes (one record per input line, one answer line per record, same order):
  roundtrip: "IN<TAB>OUT" -> "skip" when RDKit cannot parse IN or IN has '*'
             (upstream skips those), "ok" when Chem.CanonSmiles(IN) ==
             Chem.CanonSmiles(OUT) as in selfies v2.0.0's is_same_mol, else
             "diff<TAB>canon(IN)<TAB>canon(OUT)". An empty OUT means the Go
             codec returned an error.
  valid:     "SMILES" -> "1" if RDKit parses and sanitises it, else "0".
"""
import sys

from rdkit import Chem, RDLogger

RDLogger.DisableLog("rdApp.*")


def canon(s):
    try:
        return Chem.CanonSmiles(s)
    except Exception:
        return None


def main():
    mode = sys.argv[1]
    out = sys.stdout
    for line in sys.stdin:
        line = line.rstrip("\n")
        if mode == "valid":
            out.write("1\n" if Chem.MolFromSmiles(line) is not None else "0\n")
            continue
        a, _, b = line.partition("\t")
        if "*" in a or Chem.MolFromSmiles(a) is None:
            out.write("skip\n")
            continue
        ca = canon(a)
        cb = canon(b) if b else None
        if ca is not None and ca == cb:
            out.write("ok\n")
        else:
            out.write("diff\t%s\t%s\n" % (ca, cb))


if __name__ == "__main__":
    main()
