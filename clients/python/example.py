"""Notebook-style example: nfbo proposes molecules, Python scores them with RDKit's QED, nfbo learns from them.

Start a server first (from the nfbo repository; the run is made at the first ask)::

    nfbo serve -run runs/qed-lab -task qed-py -init data/guacamol/guacamol_train_data_first_100.csv \\
        -model data/models/small -budget 150

then run this file, or paste its cells into a notebook, with a Python that has RDKit (Debian's
/usr/bin/python3 with python3-rdkit does)::

    /usr/bin/python3 clients/python/example.py [http://127.0.0.1:8080]

Only the scoring needs RDKit; nfbo_client needs nothing but the standard library.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # nfbo_client, installed or not

from rdkit import Chem, RDLogger  # noqa: E402
from rdkit.Chem import QED  # noqa: E402

from nfbo_client import Client  # noqa: E402

RDLogger.DisableLog("rdApp.*")  # a molecule that does not parse is an error row below, not a log line


def qed(smiles):
    """The score: RDKit's QED drug-likeness in [0, 1]. An exception becomes the molecule's error row."""
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise ValueError("RDKit cannot parse %s" % smiles)
    return QED.qed(mol)


# %% Connect (give token=... for a server started with -token-file).
nfbo = Client(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080")

# %% Ask for a batch: a list of (id, smiles) molecules, the calls paid so far and the budget.
batch = nfbo.ask()
print("%d molecules to score, %d of %d calls paid" % (len(batch), batch.calls, batch.budget))
for mol in batch.molecules[:3]:
    print(" ", mol.id, mol.smiles)

# %% Score them in Python, then tell the scores back: {id: score}, or (id, None, error) for a failure.
rows = []
for mol in batch:
    try:
        rows.append((mol.id, qed(mol.smiles)))
    except ValueError as exc:
        rows.append((mol.id, None, str(exc)))
reply = nfbo.tell(rows)
print("told %d new scores; %d calls paid, %d molecules still awaiting" % (reply.new, reply.calls, reply.awaiting))

# %% The run so far: progress and the best molecules.
status = nfbo.status()
print("%s: %d of %d calls" % (status.task, status.calls, status.budget))
for best in status.best[:5]:
    print("  %.3f  %s  (call %d)" % (best.score, best.smiles, best.call))

# %% The rest of the budget in one call: ask, score, tell until the run is finished.
final = nfbo.loop(qed, on_batch=lambda b, r: print("batch of %d told, %d calls paid" % (len(b), r.calls)))
print("finished: best QED %.3f, %s" % (final.best[0].score, final.best[0].smiles))

# %% The report: Top-k and AUC Top-k as Markdown (report_html() gives the page with the molecules drawn;
# in a notebook, IPython.display.HTML(nfbo.report_html())).
print(nfbo.report())
