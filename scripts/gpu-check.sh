#!/usr/bin/env bash
# gpu-check.sh OUT: the GPU checks of engine/cuda (issues #15, #33) in one run on a GPU machine without Go, from
# the repository root, with the binaries built here beforehand by scripts/gpu-build.sh (DEVELOPERS.md "GPU work"):
#
#   CGO_ENABLED=1 go build -ldflags "-s -w" -o .gpu/nfbo ./cmd/nfbo
#   CGO_ENABLED=1 go test -c -ldflags "-s -w" -o .gpu/cuda.test ./engine/cuda
#   CGO_ENABLED=1 go test -c -ldflags "-s -w" -o .gpu/gpuflow.test ./engine/gpuflow
#   CGO_ENABLED=1 go test -c -ldflags "-s -w" -o .gpu/seqflow.test ./engine/seqflow
#   CGO_ENABLED=1 go test -c -ldflags "-s -w" -o .gpu/gpustep.test ./engine/gpustep
#
# (gzipped by gpu-build.sh; this script unpacks .gpu/*.gz first).
#
# It lists the CUDA libraries and headers found, runs `nfbo gpu` (the probe), compiles
# engine/cuda/testdata/abi_check.c against the machine's headers, runs the GPU tests (NFBO_GPU=1), runs them
# under compute-sanitizer memcheck where the machine has it, checks the GPU encoder and decoder
# (engine/gpuflow) against pure Go and times them, checks the GPU training step (engine/gpustep: its kernels
# against float64 references, the step against the CPU's, 200 pretraining steps tracking the CPU's, checkpoints
# moving between GPU and CPU), runs nfbo pretrain -device cuda and resumes it on the CPU, runs the optimiser's
# flow through a fine-tune on the GPU (engine/seqflow's TestCUDA) and nfbo recon -backend cuda, counts what a
# training step asks of the host, and times the step against scripts/bench_torch.py (PyTorch eager and
# torch.compile) on the same GPU. Every step writes OUT/<step>.txt and says PASS or FAIL in
# OUT/summary.txt; a failed step does not stop the others (GPU time is scarce: one run says everything).
set -u
out=${1:?usage: scripts/gpu-check.sh OUT}
mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
for z in .gpu/*.gz; do # scripts/gpu-build.sh gzips the binaries to fit the 64 MiB carried
	[ -e "$z" ] && gunzip -f "$z"
done

# run NAME SECONDS CMD...: runs CMD with a time limit, its output in OUT/NAME.txt, and records the verdict.
run() {
	local name=$1 limit=$2
	shift 2
	local t0=$SECONDS rc=0
	if declare -F "$1" >/dev/null; then # a function of this script: timeout runs programs, so run it in bash
		timeout "$limit" bash -c "$(declare -f "$1"); $1" >"$out/$name.txt" 2>&1 || rc=$?
	else
		timeout "$limit" "$@" >"$out/$name.txt" 2>&1 || rc=$?
	fi
	local verdict=PASS
	[ "$rc" -ne 0 ] && verdict="FAIL (exit $rc)"
	echo "$name: $verdict in $((SECONDS - t0)) s" | tee -a "$summary"
}

sp=$(ls -d /opt/*/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages 2>/dev/null | head -1)
python=python3
for p in /opt/*/.venv/bin/python; do [ -x "$p" ] && python=$p && break; done
libdir=$sp/nvidia/cu13/lib
export NFBO_CUDA_LIB_DIRS=$libdir NFBO_GPU=1 sp python libdir

# GPU_CHECK_STEPS="abi gputests" runs only those steps (all when unset).
want() { [ -z "${GPU_CHECK_STEPS:-}" ] || [[ " $GPU_CHECK_STEPS " == *" $1 "* ]]; }

machine() {
	date -u
	ldd --version | head -1
	nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
	echo "site-packages: $sp"
	echo "python: $python"
	ls "$sp/nvidia" "$libdir"
	ls /usr/local/cuda*/bin 2>/dev/null | head -40
}
want machine && run machine 30 machine
want probe && run probe 60 .gpu/nfbo gpu

abi() {
	local inc=() h d
	for h in cuda.h cublas_v2.h nvrtc.h; do
		d=$(find "$sp/nvidia" /usr/local/cuda*/include /usr/include -name "$h" 2>/dev/null | head -1)
		echo "$h: ${d:-not found}"
		[ -n "$d" ] || return 1
		inc+=("-I$(dirname "$d")")
		[ "$h" = cuda.h ] && grep -m1 '#define CUDA_VERSION' "$d"
	done
	# The wheels' headers include crt/host_defines.h, which only the full toolkit ships; a stub of the
	# qualifiers it defines stands in where it is missing (they do not change a host prototype).
	d=$(find "$sp/nvidia" /usr/local/cuda*/include /usr/include -path '*crt/host_defines.h' 2>/dev/null | head -1)
	if [ -n "$d" ]; then
		inc+=("-I$(dirname "$(dirname "$d")")")
	else
		echo "crt/host_defines.h: not found, using engine/cuda/testdata/stub"
		inc+=("-Iengine/cuda/testdata/stub")
	fi
	gcc -std=gnu11 -fsyntax-only "${inc[@]}" engine/cuda/testdata/abi_check.c && echo "all prototypes match"
}
want abi && run abi 60 abi

gputests() { cd engine/cuda && ../../.gpu/cuda.test -test.v -test.count=1; }
want gputests && run gputests 150 gputests

memcheck() {
	local cs
	cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer "$sp"/nvidia/*/bin/compute-sanitizer 2>/dev/null | head -1)
	[ -n "$cs" ] || { echo "compute-sanitizer not found"; return 1; }
	# Every kernel test of both packages (each kernel launched at the shapes of its test), and the step's parity
	# cases, whose launches cover every kernel of the training step.
	(cd engine/cuda && "$cs" --tool memcheck --error-exitcode 1 ../../.gpu/cuda.test -test.run 'GPU') &&
		cd engine/gpustep && "$cs" --tool memcheck --error-exitcode 1 ../../.gpu/gpustep.test -test.run 'GPUKernels|GPUDraws|GPUStepMatchesCPU'
}
want memcheck && run memcheck 300 memcheck

# The GPU training step (engine/gpustep): each kernel against its float64 reference, the step against
# train.CPU's (loss, every gradient, Adam), 200 pretraining steps tracking the CPU's, checkpoints interchangeable.
gpustep() { cd engine/gpustep && ../../.gpu/gpustep.test -test.v -test.count=1 -test.run GPU; }
want gpustep && run gpustep 400 gpustep

# What a step asks of the host (counted, no GPU needed), then the step's speed on this GPU against PyTorch eager
# and torch.compile at the same shapes (small B=128 T=109, paper B=128 T=100; fp32, no TF32), with the minutes of
# a 1.27M-molecule epoch per preset: the table of BENCHMARKS.md "GPU training step against PyTorch".
counts() { cd engine/gpustep && ../../.gpu/gpustep.test -test.v -test.count=1 -test.run StepCounts; }
want counts && run counts 60 counts
speed() {
	(cd engine/gpustep && ../../.gpu/gpustep.test -test.run '^$' -test.bench GPUStep -test.benchtime 20x -test.v) || return 1
	for p in "small 128 109" "medium 128 109" "paper 128 100"; do
		set -- $p
		"$python" scripts/bench_torch.py -device cuda -preset "$1" -B "$2" -T "$3" -V 267 -steps 20 || return 1
		"$python" scripts/bench_torch.py -device cuda -preset "$1" -B "$2" -T "$3" -V 267 -steps 20 -compile || echo "torch.compile failed"
	done
}
want speed && run speed 420 speed

# nfbo pretrain -device cuda -profile on 2,000 GuacaMol molecules (small preset: each progress line's counts per
# step and GPU time per phase), then its checkpoint resumed on the CPU.
pretraincli() {
	set -o pipefail
	head -2000 data/guacamol/guacamol_10k.smiles >/tmp/pt.smi
	rm -rf /tmp/pt
	s=$EPOCHREALTIME
	.gpu/nfbo pretrain -device cuda -profile -preset small -data /tmp/pt.smi -out /tmp/pt -steps 60 -batch 64 -val-every 30 \
		-checkpoint-every 30 -log-every 10 -recon 20 || return 1
	awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN { printf "GPU run: wall %.2f s\n", b - a }'
	.gpu/nfbo pretrain -resume -device cpu -data /tmp/pt.smi -out /tmp/pt -steps 63 -log-every 1 -recon 20
}
want pretraincli && run pretraincli 300 pretraincli

# The GPU decoder (engine/gpuflow) against pure Go: parity, reconstruction and decode speed.
gpuflow() { cd engine/gpuflow && ../../.gpu/gpuflow.test -test.v -test.count=1; }
want gpuflow && run gpuflow 240 gpuflow
seqflow() { cd engine/seqflow && ../../.gpu/seqflow.test -test.v -test.count=1 -test.run CUDA; }
want seqflow && run seqflow 60 seqflow

# nfbo recon end to end on the GPU and in pure Go: the 10k GuacaMol set through the shipped small-rpf model.
recon() {
	set -o pipefail
	zcat data/generated/guacamol_10k_selfies_v2.0.0_scores.csv.gz | awk -F, 'NR > 1 { print $2 }' >/tmp/g10k.smi
	for b in cuda go; do
		echo "-backend $b"
		s=$EPOCHREALTIME
		.gpu/nfbo recon -model data/models/small-rpf -backend "$b" -batch 10000 /tmp/g10k.smi | tail -4 || return 1
		awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN { printf "wall %.2f s\n", b - a }'
	done
}
want recon && run recon 240 recon

cat "$summary"
