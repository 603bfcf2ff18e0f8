#!/usr/bin/env python3
"""Two objectives of our own for nfbo's -objective-cmd (docs/objective-protocol.md).

They are neither GuacaMol nor PMO tasks, so that the optimiser's defaults are measured on objectives they were
not tuned for (nfbo bench -suite user2):

  oral_mpo        drug-likeness by hand-written desirabilities: the geometric mean of a QED term and four
                  windows (logP 1.5-3.5, TPSA 60-110, molecular weight 300-480, 2-3 aromatic rings), each 1
                  inside its window and falling off linearly outside it.
  kinase_hybrid   the geometric mean of the Morgan (radius 2, 2048 bits) Tanimoto similarities to gefitinib and
                  to imatinib: a molecule between two kinase inhibitors.

Usage: nfbo optimize -objective-cmd "python3 examples/objectives/user_objectives.py" -task oral_mpo ...
"""
import json
import math
import sys
import time

from rdkit import Chem, DataStructs, RDLogger
from rdkit.Chem import AllChem, Crippen, Descriptors, QED, rdMolDescriptors

RDLogger.DisableLog("rdApp.*")

GEFITINIB = "COc1cc2ncnc(Nc3ccc(F)c(Cl)c3)c2cc1OCCCN1CCOCC1"
IMATINIB = "Cc1ccc(NC(=O)c2ccc(CN3CCN(C)CC3)cc2)cc1Nc1nccc(-c2cccnc2)n1"


def fingerprint(mol):
    return AllChem.GetMorganFingerprintAsBitVect(mol, 2, nBits=2048)


TARGETS = [fingerprint(Chem.MolFromSmiles(s)) for s in (GEFITINIB, IMATINIB)]


def window(x, lo, hi, slope):
    """1 inside [lo, hi], falling linearly to 0 at slope outside it."""
    if x < lo:
        return max(0.0, 1 - (lo - x) / slope)
    if x > hi:
        return max(0.0, 1 - (x - hi) / slope)
    return 1.0


def oral_mpo(mol):
    terms = [
        QED.qed(mol),
        window(Crippen.MolLogP(mol), 1.5, 3.5, 2.0),
        window(rdMolDescriptors.CalcTPSA(mol), 60, 110, 40),
        window(Descriptors.MolWt(mol), 300, 480, 150),
        window(rdMolDescriptors.CalcNumAromaticRings(mol), 2, 3, 2),
    ]
    if min(terms) <= 0:
        return 0.0
    return math.exp(sum(math.log(t) for t in terms) / len(terms))


def kinase_hybrid(mol):
    fp = fingerprint(mol)
    sims = [DataStructs.TanimotoSimilarity(fp, t) for t in TARGETS]
    return math.sqrt(sims[0] * sims[1])


TASKS = {"oral_mpo": oral_mpo, "kinase_hybrid": kinase_hybrid}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        rid = req.get("id")
        if req.get("op") != "score":
            print(json.dumps({"id": rid, "ok": False, "error": "unknown op %r" % req.get("op")}), flush=True)
            continue
        fn = TASKS.get(req.get("task"))
        if fn is None:
            print(json.dumps({"id": rid, "ok": False, "error": "unknown task %r (want %s)" % (req.get("task"), ", ".join(TASKS))}), flush=True)
            continue
        start = time.time()
        scores, errors = [], []
        for smi in req["smiles"]:
            mol = Chem.MolFromSmiles(smi) if smi else None
            if mol is None:
                scores.append(None)
                errors.append("invalid SMILES")
                continue
            scores.append(fn(mol))
            errors.append("")
        print(json.dumps({"id": rid, "ok": True, "scores": scores, "errors": errors, "seconds": time.time() - start}), flush=True)


if __name__ == "__main__":
    main()
