#!/usr/bin/env bash
# setup-tools.sh: install the external tools Strata's tests use, if missing.
#
#   - LLVM 19 (llc, opt, FileCheck, not, count) and MLIR 19 (mlir-opt), from the
#     Debian packages llvm-19, llvm-19-tools and mlir-19-tools, installed
#     system-wide into /usr/lib/llvm-19/bin.
#   - gcc (and libc6-dev) where no C compiler is installed: the cpu backend
#     links its kernels into shared libraries with it.
#   - ptxas 12.4 (and nvdisasm, cuobjdump), taken offline from the non-free
#     nvidia-cuda-toolkit package of the next Debian release (trixie):
#     bookworm's own is CUDA 11.8, which cannot assemble sm_90a (wgmma).
#     The .deb is downloaded through a private apt configuration on the
#     system's own mirror (the system's sources stay as they are), and the
#     three static binaries unpacked (not installed) under
#     $REPO/.cache/tools/cuda/usr/bin, with ptxas linked from
#     $REPO/.cache/tools/bin/ptxas. (.cache/ is gitignored.)
#
# It then writes $REPO/.cache/tools/env.sh, which exports STRATA_LLVM_BIN,
# STRATA_PTXAS and a PATH that includes both; `make test` sources it.
#
# Idempotent: when everything is present it touches neither apt nor the
# network and finishes in well under a second. Environment overrides:
#   STRATA_LLVM_BIN  directory holding llc, opt, FileCheck, not, mlir-opt
#   STRATA_PTXAS     path of a ptxas binary to use instead of the cached one
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=$repo/.cache/tools
env_file=$cache/env.sh
llvm_bin=${STRATA_LLVM_BIN:-/usr/lib/llvm-19/bin}

log() { echo "setup-tools: $*" >&2; }
die() { log "error: $*"; exit 1; }

# as_root runs a command as root, through sudo when needed and available.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

apt_install() {
	log "installing $*"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get install -y --no-install-recommends "$@" ||
		{ as_root apt-get update && as_root apt-get install -y --no-install-recommends "$@"; }
}

# --- LLVM / MLIR -----------------------------------------------------------

setup_llvm() {
	local -A pkg_of=([llc]=llvm-19 [opt]=llvm-19 [FileCheck]=llvm-19-tools
		[not]=llvm-19-tools [count]=llvm-19-tools [mlir-opt]=mlir-19-tools)
	local -A want=()
	local tool
	for tool in "${!pkg_of[@]}"; do
		[[ -x $llvm_bin/$tool ]] || want[${pkg_of[$tool]}]=1
	done
	((${#want[@]} == 0)) && return
	[[ $llvm_bin == /usr/lib/llvm-19/bin ]] ||
		die "STRATA_LLVM_BIN=$llvm_bin lacks tools; unset it to install LLVM 19 from apt"
	apt_install "${!want[@]}"
	for tool in "${!pkg_of[@]}"; do
		[[ -x $llvm_bin/$tool ]] || die "$llvm_bin/$tool still missing after install"
	done
}

# setup_opt14 installs LLVM 14's opt, which the targets/llvm tests run as a
# second verifier of the LLVM IR (the typed-pointer IR llir/llvm writes).
setup_opt14() {
	command -v opt-14 >/dev/null 2>&1 && return
	apt_install llvm-14
	command -v opt-14 >/dev/null 2>&1 || die "opt-14 still missing after installing llvm-14"
}

# setup_cc installs the C compiler driver the cpu backend links its kernels
# with (gcc -shared … -lmvec -lm; libmvec.so and libm.so come with
# libc6-dev), where neither gcc nor cc is present.
setup_cc() {
	if command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1; then
		return
	fi
	apt_install gcc libc6-dev
	command -v gcc >/dev/null 2>&1 || die "gcc still missing after install"
}

# --- ptxas -----------------------------------------------------------------

# ptxas_ok reports whether $1 is a ptxas that runs and knows sm_90a (the
# wgmma kernels need CUDA 12.0 or newer; bookworm's own package is 11.8).
ptxas_ok() {
	[[ -x $1 ]] || return 1
	local release
	release=$("$1" --version 2>/dev/null | sed -n -E 's/.*release ([0-9]+)\.([0-9]+).*/\1 \2/p')
	[[ -n $release ]] || return 1
	read -r major minor <<<"$release"
	((major > 12 || (major == 12 && minor >= 4)))
}

# toolkit_suite is the Debian release whose nvidia-cuda-toolkit carries a
# ptxas for sm_90a (12.4). Its ptxas is a static binary that runs on older
# releases too, so only the package is taken from there, never installed.
toolkit_suite=trixie

# write_toolkit_sources writes, into $1, an apt sources file for the
# non-free component of $toolkit_suite on the same mirror the system's
# own Debian sources use (read from them, so no mirror is named here).
write_toolkit_sources() {
	local uri=""
	if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
		uri=$(sed -n -E 's|^URIs:[[:space:]]*([^[:space:]]*/debian)/?[[:space:]]*$|\1|p' \
			/etc/apt/sources.list.d/debian.sources | head -n1)
	fi
	if [[ -z $uri && -f /etc/apt/sources.list ]]; then
		uri=$(sed -n -E 's|^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]*/debian)/?[[:space:]].*|\2|p' \
			/etc/apt/sources.list | head -n1)
	fi
	[[ -n $uri ]] || die "no Debian mirror found in the apt sources"
	printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$uri" "$toolkit_suite" >"$1"
}

# fetch_ptxas downloads $toolkit_suite's nvidia-cuda-toolkit with a private
# apt configuration (the system's sources and lists are left untouched) and
# unpacks only its ptxas, nvdisasm and cuobjdump into $cache/cuda, keeping
# the package's layout.
fetch_ptxas() {
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	mkdir -p "$scratch/sources" "$scratch/lists/partial" "$scratch/cache/archives/partial"
	write_toolkit_sources "$scratch/sources/toolkit.sources"
	local -a apt_opts=(
		-o Dir::Etc::sourcelist=/dev/null
		-o Dir::Etc::sourceparts="$scratch/sources"
		-o Dir::State::Lists="$scratch/lists"
		-o Dir::Cache="$scratch/cache"
		-o APT::Sandbox::User=root
	)
	apt-get "${apt_opts[@]}" update >&2 || die "apt-get update for $toolkit_suite non-free failed"
	(cd "$scratch" && apt-get "${apt_opts[@]}" download nvidia-cuda-toolkit) ||
		die "downloading nvidia-cuda-toolkit from $toolkit_suite failed"
	rm -rf "$cache/cuda"
	mkdir -p "$cache/cuda"
	dpkg-deb --fsys-tarfile "$scratch"/nvidia-cuda-toolkit_*.deb |
		tar -x -C "$cache/cuda" --wildcards '*/bin/ptxas' '*/bin/nvdisasm' '*/bin/cuobjdump'
	rm -rf "$scratch"
}

setup_ptxas() {
	if [[ -n ${STRATA_PTXAS:-} ]]; then
		ptxas_ok "$STRATA_PTXAS" || die "STRATA_PTXAS=$STRATA_PTXAS does not run"
		ptxas=$STRATA_PTXAS
		return
	fi
	local link=$cache/bin/ptxas
	if ptxas_ok "$link"; then
		ptxas=$(readlink -f "$link")
		return
	fi
	log "fetching ptxas from Debian $toolkit_suite's non-free nvidia-cuda-toolkit (~87 MB download)"
	fetch_ptxas
	ptxas=$(find "$cache/cuda" -type f -name ptxas | head -n1)
	[[ -n $ptxas ]] || die "no ptxas in nvidia-cuda-toolkit"
	ptxas_ok "$ptxas" || {
		ldd "$ptxas" >&2 || true
		die "$ptxas does not run or is older than 12.4"
	}
	mkdir -p "$cache/bin"
	ln -sfn "../${ptxas#"$cache/"}" "$link" # relative: survives moving the repo
}

# --- main ------------------------------------------------------------------

mkdir -p "$cache"
# Serialize concurrent runs (apt locks, half-unpacked caches).
exec 9>"$cache/.lock"
flock 9

setup_llvm
setup_opt14
setup_cc
setup_ptxas

new_env=$(
	printf '# Generated by scripts/setup-tools.sh; do not edit.\n'
	printf 'export STRATA_LLVM_BIN=%q\n' "$llvm_bin"
	printf 'export STRATA_PTXAS=%q\n' "$ptxas"
	# shellcheck disable=SC2016 # $PATH expands when env.sh is sourced.
	printf 'export PATH=%q:"$PATH"\n' "$llvm_bin"
)
[[ -f $env_file && $(<"$env_file") == "$new_env" ]] || printf '%s\n' "$new_env" >"$env_file"

echo "setup-tools: STRATA_LLVM_BIN=$llvm_bin STRATA_PTXAS=$ptxas (env: ${env_file#"$repo"/})"
