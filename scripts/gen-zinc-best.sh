#!/bin/sh
# gen-zinc-best.sh OUT: makes data/generated/zinc250k_pmo20_best1000.csv.gz, the best 1,000 molecules of
# ZINC250k for each pmo20 task (columns task, smiles, name, score; bench/zinc.go reads it), from the initial data
# that "nfbo bench -suite pmo20-zinc -out OUT" wrote after scoring all of data/zinc250k/zinc.txt.gz
# (OUT/init/zinc250k_best_TASK.csv). Move the shipped file away first, or bench reads it instead of scoring:
#
#   mv data/generated/zinc250k_pmo20_best1000.csv.gz /tmp/
#   nfbo bench -suite pmo20-zinc -model data/models/small -out OUT -methods graph-ga -seeds 1   # ~100 min of a core to score
#   scripts/gen-zinc-best.sh OUT
set -eu
out=$1
dst=data/generated/zinc250k_pmo20_best1000.csv.gz
/usr/bin/python3 - "$out" <<'PY' | gzip -9 -n > "$dst.tmp"
import csv, glob, os, sys
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["task", "smiles", "name", "score"])
files = sorted(glob.glob(os.path.join(sys.argv[1], "init", "zinc250k_best_*.csv")))
if len(files) != 20:
    sys.exit(f"want the 20 pmo20 tasks' files, found {len(files)}")
for f in files:
    task = os.path.basename(f)[len("zinc250k_best_"):-len(".csv")]
    with open(f, newline="") as fh:
        r = csv.reader(fh)
        if next(r) != ["smiles", "name", task]:
            sys.exit(f"{f}: want the header smiles,name,{task}")
        for smiles, name, score in r:
            w.writerow([task, smiles, name, score])
PY
mv "$dst.tmp" "$dst"
echo "wrote $dst"
