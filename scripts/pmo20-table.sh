#!/usr/bin/env bash
# pmo20-table.sh BIN [SEED...]: BENCHMARKS.md's pmo20 table ("The pmo20 table at 3 seeds, with the graph
# crossover"): the default NF-BO and our GA on the twenty pmo20 tasks, seed by seed (1 2 3 unless given), two runs
# at a time at nice 15, run directories under runs/pmo20. Resumable: stop it and start it again at will. Every finished
# run's row goes into benchmarks/pmo20.tsv (commit it), and a run whose row is there is not run again, so a
# fresh checkout goes on where the rows end. BIN is an nfbo binary (make build writes bin/nfbo); the table's
# rows name the commit of the binary that made them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: scripts/pmo20-table.sh BIN [SEED...]}
shift
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
# The order of the first runs: the tasks measured at seed 1 on token counts first (BENCHMARKS.md), then the rest.
tasks=zaleplon_mpo,amlodipine_mpo,median2,celecoxib_rediscovery,mestranol_similarity,ranolazine_mpo,albuterol_similarity
tasks+=,thiothixene_rediscovery,troglitazone_rediscovery,valsartan_smarts,scaffold_hop,isomers_c9h10n2o2pf2cl,deco_hop
tasks+=,fexofenadine_mpo,isomers_c7h8n2o2,median1,osimertinib_mpo,perindopril_mpo,sitagliptin_mpo,qed
for s in "${seeds[@]}"; do
	nice -n 15 "$bin" bench -suite pmo20-fixed -model data/models/small -out runs/pmo20 -rows benchmarks/pmo20.tsv \
		-procs 2 -methods nfbo,ga -seeds "$s" -tasks "$tasks"
done
