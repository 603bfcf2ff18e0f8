#!/usr/bin/env bash
# gpu-pretrain.sh: one window of a pretraining run on the GPU machine, resumable across windows (the device tool
# lends minutes at a time; DEVELOPERS.md "GPU work" gives the whole procedure).
#
#   on the GPU machine:  scripts/gpu-pretrain.sh OUT SECONDS      (from the repository root, carrying .gpu/)
#   here, after it:      scripts/gpu-pretrain.sh --join DIR       (DIR: where the device tool put OUT's files)
#
# On the GPU machine it unpacks .gpu/nfbo.gz, joins .gpu/run/seqflow.ckpt from the parts the last window
# brought back (if any), runs `nfbo pretrain -device cuda -profile` into .gpu/run (with -resume when a checkpoint
# is there) until it is done or SECONDS pass, when SIGINT makes it write its checkpoint, and leaves in OUT the
# run's log and the checkpoint in parts of 15 MiB (what comes back is at most 8 files of 16 MiB, 64 MiB in all:
# the small preset, 31 MB with Adam's moments, fits; medium and paper do not). Here, --join puts the parts back
# into .gpu/run, where the next window's carry takes them.
#
# The run's settings come from the environment: PRESET (small), DATA (data/zinc250k/zinc.txt.gz), STEPS (total
# steps of the run, 200000), BATCH (128), VAL_EVERY (1000), CHECKPOINT_EVERY (1000), PATIENCE (5: stop when the
# validation curve is flat) and SEQ_LEN (0: from the data). A resumed run keeps its checkpoint's settings.
set -euo pipefail
if [ "${1:-}" = --join ]; then
	from=${2:?usage: scripts/gpu-pretrain.sh --join DIR}
	mkdir -p .gpu/run
	cat "$from"/seqflow.ckpt.part.* >.gpu/run/seqflow.ckpt.new
	mv .gpu/run/seqflow.ckpt.new .gpu/run/seqflow.ckpt
	cp "$from"/pretrain.log ".gpu/run/pretrain.$(date -u +%Y%m%dT%H%M%S).log" 2>/dev/null || true
	ls -l .gpu/run
	exit 0
fi
out=${1:?usage: scripts/gpu-pretrain.sh OUT SECONDS}
limit=${2:?usage: scripts/gpu-pretrain.sh OUT SECONDS}
mkdir -p "$out" .gpu/run
if [ -e .gpu/nfbo.gz ]; then gunzip -f .gpu/nfbo.gz; fi
sp=$(ls -d /opt/*/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages 2>/dev/null | head -1 || true)
export NFBO_CUDA_LIB_DIRS=$sp/nvidia/cu13/lib
args=(-device cuda -profile -data "${DATA:-data/zinc250k/zinc.txt.gz}" -out .gpu/run -steps "${STEPS:-200000}"
	-val-every "${VAL_EVERY:-1000}" -checkpoint-every "${CHECKPOINT_EVERY:-1000}" -patience "${PATIENCE:-5}")
if [ -e .gpu/run/seqflow.ckpt ]; then
	args+=(-resume)
else
	args+=(-preset "${PRESET:-small}" -batch "${BATCH:-128}" -seq-len "${SEQ_LEN:-0}")
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/pretrain.log"
rc=0
timeout -s INT "$limit" .gpu/nfbo pretrain "${args[@]}" >>"$out/pretrain.log" 2>&1 || rc=$?
echo "nfbo pretrain: exit $rc (124: the window's time ran out, the checkpoint written on SIGINT)" >>"$out/pretrain.log"
[ -e .gpu/run/seqflow.ckpt ] || { echo "no checkpoint written" >>"$out/pretrain.log"; exit 1; }
split -b 15M -d .gpu/run/seqflow.ckpt "$out/seqflow.ckpt.part."
sha256sum .gpu/run/seqflow.ckpt >>"$out/pretrain.log"
tail -5 "$out/pretrain.log"
