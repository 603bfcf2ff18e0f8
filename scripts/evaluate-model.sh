#!/bin/sh
# evaluate-model.sh: the measurements that decide whether a pretrained SeqFlow becomes the default model
# (issue #13): the flow as a move operator (nfbo flowstats) for the candidate and the baseline, token-for-token
# reconstruction of both generated 10k sets before and after one fine-tune epoch, and the optimiser with
# either model under the same settings: guacamol7 at 100 + 500 calls (3 seeds) and three pmo20 tasks at
# 1,000 + 9,000 calls.
#
# usage: scripts/evaluate-model.sh [-only STEPS] CANDIDATE_DIR OUT_DIR [BASELINE_DIR]
#
# STEPS is a comma-separated subset of flowstats,recon,guacamol7,pmo3,report (default: all, in that order).
# Each step writes its result under OUT_DIR and is skipped when that result exists, and the benchmarks resume
# their interrupted runs, so the script can be stopped and rerun, across sessions, until it finishes.
# Environment: NFBO (the binary, default bin/nfbo), PROCS (benchmark runs at a time, default 2), CAND_ARGS
# (optimiser arguments the candidate runs with besides its model, e.g. "-offspring 50": a model with the settings
# that suit it; the baseline keeps the defaults).
set -eu

only=flowstats,recon,guacamol7,pmo3,report
if [ "${1:-}" = "-only" ]; then
	only=$2
	shift 2
fi
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 [-only STEPS] CANDIDATE_DIR OUT_DIR [BASELINE_DIR]" >&2
	exit 2
fi
cand=$1
out=$2
base=${3:-data/models/small}
nfbo=${NFBO:-bin/nfbo}
procs=${PROCS:-2}
cand_args=${CAND_ARGS:-}
for d in "$cand" "$base"; do
	[ -e "$d" ] || { echo "$0: model $d: not found" >&2; exit 2; }
done
[ -x "$nfbo" ] || { echo "$0: $nfbo: not built (make build)" >&2; exit 2; }
mkdir -p "$out"
log=$out/evaluate.log

want() { case ",$only," in *",$1,"*) return 0 ;; esac; return 1; }
say() { echo "$(date -u +%FT%TZ) $*" | tee -a "$log"; }

# run NAME CMD...: runs CMD with its output in $out/NAME.txt unless that file exists; the output goes to a
# .part file first so that an interrupted step is redone, not taken for a result.
run() {
	name=$1
	shift
	if [ -s "$out/$name.txt" ]; then
		say "skip $name (done: $out/$name.txt)"
		return 0
	fi
	say "start $name: $*"
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -v "$@" > "$out/$name.part" 2> "$out/$name.err"
	else
		"$@" > "$out/$name.part" 2> "$out/$name.err"
	fi
	mv "$out/$name.part" "$out/$name.txt"
	# GNU time's wall time and peak RSS, when it ran.
	say "done $name: $(grep -E 'Elapsed|Maximum resident' "$out/$name.err" | sed 's/^[[:space:]]*//' | tr '\n' ';')"
}

gen=data/generated
if want flowstats; then
	for m in cand base; do
		eval dir=\$$m
		run "flowstats-$m" "$nfbo" flowstats -model "$dir" -data data/selfies_tests/molnet/lipo.csv \
			-anchors $gen/guacamol_10k_selfies_v2.0.0_scores.csv.gz -task adip -n 1000 -samples 1000 \
			-lengths 0.8,0.4,0.2,0.1,0.01
	done
fi

if want recon; then
	# The smiles column of both generated sets, one per line, and 1,000 other ZINC molecules to fine-tune on.
	for s in guacamol_10k_selfies_v2.0.0_scores zinc250k_first10k_selfies_v2.0.0; do
		[ -s "$out/$s.smi" ] || zcat $gen/$s.csv.gz | awk -F, 'NR > 1 { print $2 }' > "$out/$s.smi"
	done
	[ -s "$out/zinc_ft1000.smi" ] || zcat data/zinc250k/zinc.txt.gz | sed -n 10001,11000p > "$out/zinc_ft1000.smi"
	for s in guacamol_10k_selfies_v2.0.0_scores zinc250k_first10k_selfies_v2.0.0; do
		run "recon-$s" "$nfbo" recon -model "$cand" -batch 500 "$out/$s.smi"
		# As the optimiser fine-tunes by default: embeddings fixed.
		run "recon-ft-$s" "$nfbo" recon -model "$cand" -batch 500 -finetune "$out/zinc_ft1000.smi" \
			-freeze-embed -seed 1 "$out/$s.smi"
	done
fi

# The baseline is the method "nfbo" (bench's -model), the candidate the variant "cand": the same optimiser
# settings, seeds, data and budget.
if want guacamol7; then
	say "bench guacamol7 -> $out/guacamol7"
	"$nfbo" bench -suite guacamol7 -model "$base" -out "$out/guacamol7" -seeds 1,2,3 -methods nfbo,cand \
		-variant cand="-model $cand${cand_args:+ $cand_args}" -procs "$procs" >> "$log" 2>&1
	say "done guacamol7"
fi
if want pmo3; then
	say "bench pmo20 qed,albuterol_similarity,amlodipine_mpo -> $out/pmo3"
	"$nfbo" bench -suite pmo20-fixed -tasks qed,albuterol_similarity,amlodipine_mpo -model "$base" -out "$out/pmo3" \
		-seeds 1 -methods nfbo,cand -variant cand="-model $cand${cand_args:+ $cand_args}" -procs "$procs" >> "$log" 2>&1
	say "done pmo3"
fi
if want report; then
	for s in guacamol7 pmo3; do
		if [ -d "$out/$s" ]; then
			"$nfbo" report -plots=false "$out/$s" > "$out/report-$s.md"
		fi
	done
	say "reports: $out/report-*.md"
fi
