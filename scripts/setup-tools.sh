#!/usr/bin/env bash
# setup-tools.sh: install the external tools Strata's tests use, if missing.
#
#   - LLVM 19 (llc, opt, FileCheck, not, count) and MLIR 19 (mlir-opt), from the
#     Debian packages llvm-19, llvm-19-tools and mlir-19-tools, installed
#     system-wide into /usr/lib/llvm-19/bin.
#   - ptxas, taken offline from Debian's non-free nvidia-cuda-toolkit package:
#     the .deb is downloaded, and its ptxas alone unpacked (not installed)
#     to $REPO/.cache/tools/cuda/usr/bin/ptxas, linked from
#     $REPO/.cache/tools/bin/ptxas. (.cache/ is gitignored.)
#     Enabling "non-free" in the apt sources is done only when needed.
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

# --- ptxas -----------------------------------------------------------------

# ptxas_ok reports whether $1 is a ptxas that runs.
ptxas_ok() { [[ -x $1 ]] && "$1" --version >/dev/null 2>&1; }

# enable_non_free adds the "non-free" component to the Debian apt sources
# when nvidia-cuda-toolkit is not already available, then updates the lists.
enable_non_free() {
	if [[ -n $(apt-cache madison nvidia-cuda-toolkit 2>/dev/null) ]]; then
		return
	fi
	local sources=/etc/apt/sources.list.d/debian.sources
	if [[ -f $sources ]]; then
		log "enabling non-free in $sources"
		as_root sed -i -E \
			'/^Components:/{/[[:space:]]non-free([[:space:]]|$)/!s/[[:space:]]*$/ non-free/}' \
			"$sources"
	elif [[ -f /etc/apt/sources.list ]]; then
		log "enabling non-free in /etc/apt/sources.list"
		as_root sed -i -E \
			'/^deb[[:space:]].*debian/{/[[:space:]]non-free([[:space:]]|$)/!s/[[:space:]]*$/ non-free/}' \
			/etc/apt/sources.list
	else
		die "no Debian apt sources found to enable non-free in"
	fi
	as_root apt-get update
}

# fetch_ptxas downloads nvidia-cuda-toolkit into a scratch folder and
# unpacks only its ptxas (a static binary, ~19 MB of the 166 MB package)
# into $cache/cuda, keeping the package's layout.
fetch_ptxas() {
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	(cd "$scratch" && apt-get download -o APT::Sandbox::User=root nvidia-cuda-toolkit)
	rm -rf "$cache/cuda"
	mkdir -p "$cache/cuda"
	dpkg-deb --fsys-tarfile "$scratch"/nvidia-cuda-toolkit_*.deb |
		tar -x -C "$cache/cuda" --wildcards '*/bin/ptxas'
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
	log "fetching ptxas from Debian's non-free nvidia-cuda-toolkit (~85 MB download)"
	enable_non_free
	fetch_ptxas
	ptxas=$(find "$cache/cuda" -type f -name ptxas | head -n1)
	[[ -n $ptxas ]] || die "no ptxas in nvidia-cuda-toolkit"
	ptxas_ok "$ptxas" || {
		ldd "$ptxas" >&2 || true
		die "$ptxas does not run"
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
