#!/usr/bin/env bash
# run.sh is the main job of `make run` on the shipped defaults.
# Usage: scripts/run.sh BIN OUTDIR
set -euo pipefail
bin=${1:-bin/nfbo}
out=${2:-runs/quickstart}
mkdir -p "$out"

# SELFIES round trip of the 100 LOL-BO/NF-BO initial molecules.
tail -n +2 data/guacamol/guacamol_train_data_first_100.csv | cut -d, -f3 >"$out/init.smi"
"$bin" selfies encode "$out/init.smi" >"$out/init.selfies"
"$bin" selfies decode "$out/init.selfies" >"$out/init.decoded.smi"
echo "run: encoded and decoded $(wc -l <"$out/init.smi") molecules into $out/"
