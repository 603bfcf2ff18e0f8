#!/usr/bin/python3
"""How strict the "seen environments" rule is on real molecules it was not taken from (issue #57): the
environments of ZINC250k's first 225,000 molecules and GuacaMol 10k (from scripts/gen-rules.py's blocks in
.gen-rules/) against ZINC250k's last 24,455 molecules, and ZINC250k's against GuacaMol 10k's. Prints the fraction
of the held-out molecules that hold an environment the others lack.

  /usr/bin/python3 scripts/rules-heldout.py
"""
import glob
import gzip
import json
import os

from rdkit import Chem, RDLogger
from rdkit.Chem import rdMolDescriptors

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
HELD = 225000


def envs(pattern, keep):
    seen = set()
    for f in glob.glob(os.path.join(ROOT, ".gen-rules", pattern)):
        lo = int(f.rsplit("-", 1)[1].split(".")[0])
        if keep(lo):
            with open(f) as fh:
                seen.update(int(k) for k in json.load(fh)["env"])
    return seen


def unseen_fraction(smiles, seen):
    n = bad = 0
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            continue
        n += 1
        bad += any(i not in seen for i in rdMolDescriptors.GetMorganFingerprint(mol, 1).GetNonzeroElements())
    return n, bad


def main():
    RDLogger.DisableLog("rdApp.*")
    with gzip.open(os.path.join(ROOT, "data/zinc250k/zinc.txt.gz"), "rt") as f:
        zinc = [l.split()[0] for l in f if l.strip()]
    with open(os.path.join(ROOT, "data/guacamol/guacamol_10k.smiles")) as f:
        guac = [l.split()[0] for l in f if l.strip()]
    train = envs("zinc250k-*.json", lambda lo: lo < HELD) | envs("guacamol10k-*.json", lambda lo: True)
    n, bad = unseen_fraction(zinc[HELD:], train)
    print("ZINC250k's last %d molecules against ZINC250k's first %d and GuacaMol 10k: %d hold an unseen environment (%.2f %%)"
          % (n, HELD, bad, 100 * bad / n))
    n, bad = unseen_fraction(guac, envs("zinc250k-*.json", lambda lo: True))
    print("GuacaMol 10k against ZINC250k alone: %d of %d hold an unseen environment (%.2f %%)" % (bad, n, 100 * bad / n))


if __name__ == "__main__":
    main()
