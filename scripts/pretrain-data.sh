#!/bin/sh
# pretrain-data.sh: writes the pretraining molecules of the medium model (data/models/README.md) to OUT, one
# SMILES per line, gzipped: ZINC250k, the GuacaMol 10k set, then the MoleculeNet sets of data/selfies_tests
# (HIV, Tox21, BBBP, ClinTox, SIDER, ESOL, FreeSolv; MoleculeNet, Apache-2.0 through the selfies repository)
# without Lipophilicity, which stays unseen because `nfbo flowstats` measures the flow on it. A SMILES string
# seen before is left out (exact text; the same molecule written differently stays). `nfbo pretrain` skips,
# and names, the lines it cannot use (a token outside the vocabulary, too long for -seq-len).
#
# usage: scripts/pretrain-data.sh OUT.smi.gz
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 OUT.smi.gz" >&2
	exit 2
fi
out=$1
d=data/selfies_tests/molnet
tmp=$out.part
{
	zcat data/zinc250k/zinc.txt.gz
	cat data/guacamol/guacamol_10k.smiles
	python3 - "$d" <<'PY'
import csv, gzip, sys
d = sys.argv[1]
for name in ["hiv.csv.gz", "tox21.csv", "bbbp.csv", "clintox.csv", "sider.csv", "esol.csv", "freesolv.csv"]:
    path = d + "/" + name
    with (gzip.open(path, "rt", newline="") if name.endswith(".gz") else open(path, newline="")) as f:
        for row in csv.DictReader(f):
            s = row["smiles"].strip()
            if s:
                print(s)
PY
} | awk 'NF && !seen[$0]++' | gzip -1 > "$tmp"
mv "$tmp" "$out"
echo "$out: $(zcat "$out" | wc -l) molecules" >&2
