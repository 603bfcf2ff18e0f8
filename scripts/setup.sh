#!/usr/bin/env bash
# setup.sh installs what nfbo needs on a Debian machine that has Go:
#   - Debian packages: RDKit for the objective worker (python3-rdkit,
#     rdkit-data for the SA score, python3-numpy) and python3-onnx for the
#     ONNX checker used by the export tests; libopenblas-dev, which make
#     build links (2.3-2.6x faster training and fine-tuning than pure Go);
#   - the ONNX Runtime CPU library 1.30.0, taken from the npm package
#     onnxruntime-node@1.30.0 and checked against its sha256;
#   - the Go modules.
# With --test it also installs Debian's chromium, which the test of the HTML
# report opens headless, and fetches NVRTC (Debian non-free's libnvrtc11.2 and
# libnvrtc-builtins11.8) into third_party/nvrtc, with which the tests compile
# every CUDA kernel without a GPU (make test passes it). NVRTC comes through
# a private apt configuration: the machine's sources are not changed.
# It is idempotent and prints nothing when everything is already there.
set -euo pipefail

cd "$(dirname "$0")/.."

APT_PACKAGES=(python3-rdkit rdkit-data python3-numpy python3-onnx libopenblas-dev)
if [ "${1:-}" = --test ]; then
	APT_PACKAGES+=(chromium)
fi
ORT_VERSION=1.30.0
ORT_DIR=third_party/onnxruntime/lib
ORT_LIB=$ORT_DIR/libonnxruntime.so.1
ORT_SHA256=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23

log() { echo "setup: $*" >&2; }

# twice WHAT CMD... runs CMD, and once more after 3 s if it fails (networks
# and mirrors hiccup), logging each failure as WHAT.
twice() {
	local what=$1 try
	shift
	for try in 1 2; do
		"$@" && return 0
		log "$what failed (try $try)"
		[ $try -eq 2 ] || sleep 3
	done
	return 1
}

sudo_if_needed() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		log "need root to run: $*"
		return 1
	fi
}

install_apt() {
	local missing=()
	# cgo (the ONNX Runtime binding) needs a C compiler, and the library comes
	# from npm: a machine with only Go gets both from Debian.
	command -v gcc >/dev/null || missing+=(gcc libc6-dev)
	command -v npm >/dev/null || missing+=(npm)
	for p in "${APT_PACKAGES[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]} with apt-get"
	# apt can fail transiently (a mirror hiccup, dpkg losing its archive):
	# one retry, after a fresh update.
	local try
	for try in 1 2; do
		if sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null &&
			sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
				"${missing[@]}" >/dev/null; then
			return 0
		fi
		log "apt-get failed (try $try)"
		sleep 3
	done
	log "could not install ${missing[*]}; run: apt-get install ${missing[*]}"
	return 1
}

install_ort() {
	if [ -f "$ORT_LIB" ] && echo "$ORT_SHA256  $ORT_LIB" | sha256sum -c --quiet - 2>/dev/null; then
		return 0
	fi
	if ! command -v npm >/dev/null; then
		log "npm not found: cannot fetch ONNX Runtime; apt-get install npm, or set NFBO_ORT_LIB"
		return 1
	fi
	log "fetching ONNX Runtime $ORT_VERSION (npm package onnxruntime-node@$ORT_VERSION)"
	local tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	npm_pack() { (cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null 2>&1); }
	twice "npm pack" npm_pack || { log "could not fetch onnxruntime-node@$ORT_VERSION"; return 1; }
	tar -xzf "$tmp"/onnxruntime-node-"$ORT_VERSION".tgz -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
	mkdir -p "$ORT_DIR"
	cp "$tmp"/package/bin/napi-v6/linux/x64/libonnxruntime.so.1 "$ORT_LIB.tmp"
	if ! echo "$ORT_SHA256  $ORT_LIB.tmp" | sha256sum -c --quiet -; then
		rm -f "$ORT_LIB.tmp"
		log "sha256 mismatch for libonnxruntime.so.1 from onnxruntime-node@$ORT_VERSION"
		return 1
	fi
	mv "$ORT_LIB.tmp" "$ORT_LIB"
}

NVRTC_DIR=third_party/nvrtc
NVRTC_LIB=$NVRTC_DIR/usr/lib/x86_64-linux-gnu/libnvrtc.so.11.2

# install_nvrtc downloads NVRTC's two Debian packages with apt-get (which
# checks them against the archive's signed index) and unpacks them with
# dpkg -x, without installing anything on the system.
install_nvrtc() {
	[ -e "$NVRTC_LIB" ] && return 0
	[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || { log "NVRTC: Debian ships it for amd64 only"; return 0; }
	log "fetching NVRTC (Debian non-free libnvrtc11.2, libnvrtc-builtins11.8) into $NVRTC_DIR"
	local tmp
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/deb"
	echo 'deb http://deb.debian.org/debian bookworm non-free' >"$tmp/sources.list"
	local o=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o Debug::NoLocking=1
		-o APT::Sandbox::User=root)
	apt_download() {
		apt-get "${o[@]}" update -qq >/dev/null 2>&1 &&
			(cd "$tmp/deb" && apt-get "${o[@]}" download -qq libnvrtc11.2 libnvrtc-builtins11.8 >/dev/null 2>&1)
	}
	twice "apt-get download of NVRTC" apt_download || { log "could not fetch NVRTC; the CUDA kernel compile check will not run"; return 1; }
	mkdir -p "$NVRTC_DIR.tmp"
	local d
	for d in "$tmp"/deb/*.deb; do
		dpkg -x "$d" "$NVRTC_DIR.tmp"
	done
	rm -rf "$NVRTC_DIR"
	mv "$NVRTC_DIR.tmp" "$NVRTC_DIR"
}

install_go_modules() {
	go mod download
}

install_apt
install_ort
install_go_modules
if [ "${1:-}" = --test ]; then
	# A failure here is not fatal: the kernel compile test then fails under
	# CI=true and skips elsewhere, saying why.
	install_nvrtc || true
fi
