#!/usr/bin/python3
"""How many of the molecules a run paid for a medicinal chemist would discard (issue #57): for each run directory
(or a file of SMILES, one per line, given as FILE.smi), the number of molecules and the fractions that hold an
alert of RDKit's NIH catalogue (all of it, as the issue counted), an alert of the default rules' generated list
(data/rules/alerts.tsv, default yes), and an atom environment unseen in ZINC250k and GuacaMol 10k
(data/rules/environments.txt.gz).

  /usr/bin/python3 scripts/rules-fractions.py [--new] [--by-alert] runs/rules57/none-s1 ... [data/zinc250k/zinc.txt.gz:20000]

A PATH:N argument reads the first N SMILES of a SMILES file, or of a CSV's smiles (or smile) column (gzip when
the name ends in .gz). With --new, a run directory's initial molecules (the first initial_calls of run.json,
paid for before the optimiser proposed anything) are left out: the fractions are then the optimiser's own.
With --by-alert, it then counts over all the sources together the molecules holding each default alert and each
NIH alert, the most frequent first, with an example: which groups the optimiser pays for.
"""
import gzip
import json
import os
import sys

from rdkit import Chem, RDLogger
from rdkit.Chem import FilterCatalog as FC
from rdkit.Chem import rdMolDescriptors

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def load_rules():
    alerts = []
    with open(os.path.join(ROOT, "data/rules/alerts.tsv")) as f:
        header = None
        for line in f:
            if line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if header is None:
                header = fields
                continue
            r = dict(zip(header, fields))
            if r["default"] == "yes":
                alerts.append((Chem.MolFromSmarts(r["smarts"]), int(r["min_count"]), r["catalogue"] + ":" + r["name"]))
    seen = set()
    with gzip.open(os.path.join(ROOT, "data/rules/environments.txt.gz"), "rt") as f:
        for line in f:
            if not line.startswith("#"):
                seen.add(int(line.split()[0]))
    return alerts, seen


def molecules(arg, new=False):
    if os.path.isdir(arg):
        skip = 0
        if new:
            with open(os.path.join(arg, "run.json")) as f:
                skip = json.load(f).get("initial_calls", 0)
        with open(os.path.join(arg, "evaluations.jsonl")) as f:
            return [json.loads(l).get("canonical") or json.loads(l)["smiles"] for l in f if l.strip()][skip:]
    path, _, n = arg.partition(":")
    op = gzip.open if path.endswith(".gz") else open
    out = []
    if ".csv" in path:
        import csv
        with op(path, "rt") as f:
            for row in csv.DictReader(f):
                out.append(row.get("smiles") or row.get("smile"))
                if n and len(out) == int(n):
                    break
        return out
    with op(path, "rt") as f:
        for line in f:
            if line.strip():
                out.append(line.split()[0].split(",")[0])
            if n and len(out) == int(n):
                break
    return out


def main():
    RDLogger.DisableLog("rdApp.*")
    p = FC.FilterCatalogParams()
    p.AddCatalog(FC.FilterCatalogParams.FilterCatalogs.NIH)
    nih = FC.FilterCatalog(p)
    alerts, seen = load_rules()
    print("source\tmolecules\tNIH alert\tdefault-list alert\tunseen environment\teither of the two")
    args = sys.argv[1:]
    new = "--new" in args
    by_alert = "--by-alert" in args
    held, example, total = {}, {}, 0
    for arg in (a for a in args if a not in ("--new", "--by-alert")):
        n = a_nih = a_def = a_env = a_any = 0
        for s in molecules(arg, new):
            mol = Chem.MolFromSmiles(s)
            if mol is None:
                continue
            n += 1
            a_nih += nih.HasMatch(mol)
            hits = [ident for q, lo, ident in alerts
                    if (mol.HasSubstructMatch(q) if lo <= 1 else len(mol.GetSubstructMatches(q, maxMatches=lo)) >= lo)]
            d = len(hits) > 0
            e = any(i not in seen for i in rdMolDescriptors.GetMorganFingerprint(mol, 1).GetNonzeroElements())
            a_def += d
            a_env += e
            a_any += d or e
            if by_alert:
                for ident in set(hits) | {"NIH catalogue: " + m.GetDescription() for m in nih.GetMatches(mol)}:
                    held[ident] = held.get(ident, 0) + 1
                    example.setdefault(ident, s)
        total += n
        print("%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f" % (arg, n, a_nih / n, a_def / n, a_env / n, a_any / n), flush=True)
    if by_alert:
        print("\nalert\tmolecules of %d\tfraction\texample" % total)
        for ident, k in sorted(held.items(), key=lambda x: (-x[1], x[0])):
            print("%s\t%d\t%.3f\t%s" % (ident, k, k / total, example[ident]))


if __name__ == "__main__":
    main()
