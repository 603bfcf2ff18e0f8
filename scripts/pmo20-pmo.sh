#!/usr/bin/env bash
# pmo20-pmo.sh BIN [METHOD...]: the pmo20 table under PMO's protocol (BENCHMARKS.md "pmo20 with PMO's protocol:
# random starts, five seeds"): every run starts from 1,000 molecules drawn at random from ZINC250k, a draw per seed
# (the same for every method), at seeds 1-5. The methods run one after the other, all twenty tasks at five seeds
# each (graph-ga, ga, the default nfbo, then nfbo-no-flow, what the flow adds, unless given), one run at a time at
# nice 15, run directories under runs/pmo5. Resumable: stop it and start it again at will, with the same command.
# Every finished run's row goes into benchmarks/pmo20.tsv under the setting "1000+9000 random" (commit it), and a
# run whose row is there is not run again, so a fresh checkout goes on where the rows end. BIN is an nfbo binary
# kept beside the runs (make build, then copy bin/nfbo to runs/pmo5bin/nfbo), so that a later commit does not change
# the table halfway.
set -euo pipefail
cd "$(dirname "$0")/.."
# nice alone does not yield to other sessions' work where Linux groups each session (DEVELOPERS.md).
echo 15 > /proc/self/autogroup 2>/dev/null || true
bin=${1:?usage: scripts/pmo20-pmo.sh BIN [METHOD...]}
shift
methods=("$@")
[ ${#methods[@]} -gt 0 ] || methods=(graph-ga ga nfbo nfbo-no-flow)
for m in "${methods[@]}"; do
	nice -n 15 "$bin" bench -suite pmo20 -model data/models/small -out runs/pmo5 -rows benchmarks/pmo20.tsv \
		-procs "${PROCS:-1}" -methods "$m"
done
