#!/bin/bash
# bitcheck.sh NFBO OUT: five short optimisations (the screened default, with the default rules, the reference
# variant, the no-flow ablation, -candidate-target) with the binary NFBO into OUT, and one line per run: its
# name and an MD5 of the molecules paid, in order. A refactor that promises the same behaviour bit for bit
# prints the same lines before and after (build both binaries the same way, e.g. `make build`). About 3-5
# minutes on 2 cores; needs RDKit (/usr/bin/python3) and data/models/small.
set -u
B=$1; O=$2
rm -rf "$O"; mkdir -p "$O"
common=(-task adip -init data/guacamol/guacamol_train_data_first_100.csv -preset guacamol-500 -model data/models/small -seed 3)
run() { name=$1; shift; "$B" optimize "${common[@]}" "$@" -out "$O/$name" > "$O/$name.log" 2>&1 || echo "FAIL $name (see $O/$name.log)"; }
run screened -budget 60 -rules none
run rules -budget 60 -rules default
run reference -budget 40 -rules none -variant reference
run noflow -budget 40 -rules none -no-flow
run ct -budget 40 -rules none -candidate-target 100
for d in screened rules reference noflow ct; do
	echo "$d $(/usr/bin/python3 -c 'import json,sys; [print(json.loads(l)["smiles"], json.loads(l)["score"]) for l in open(sys.argv[1])]' "$O/$d/evaluations.jsonl" | md5sum | cut -d" " -f1)"
done
