#!/usr/bin/env bash
# gpu-build.sh: builds, on this machine (Go, no GPU), the binaries scripts/gpu-check.sh runs on the GPU machine
# (which has no Go) into .gpu/, gzipped so that they and the working tree fit the 64 MiB the device tool carries;
# gpu-check.sh unpacks them there. DEVELOPERS.md "GPU work" says what else to leave behind (the models).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu
rm -f .gpu/nfbo .gpu/*.test .gpu/*.gz
export CGO_ENABLED=1
go build -ldflags "-s -w" -o .gpu/nfbo ./cmd/nfbo
for p in cuda gpuflow seqflow gpustep; do
	go test -c -ldflags "-s -w" -o ".gpu/$p.test" "./engine/$p"
done
cp engine/cuda/testdata/abi_check.c .gpu/
gzip -9 .gpu/nfbo .gpu/*.test
du -ch .gpu/* | tail -1
