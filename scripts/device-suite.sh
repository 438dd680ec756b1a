#!/usr/bin/env bash
# The whole device check in one call, on the GPU machine: the benchmark
# suite in two groups (memory-bound and launch-bound first, then the
# tensor-core workloads; a group that runs out of time does not take the
# other's results with it), bench/e2e (interpreter vs GPU for every
# program there) and the examples' first calls on the GPU. Build it here
# with `scripts/device-suite.sh --build` (fills .device/suite/), then give
# the device tool carry: [".device/suite"] and the command
#
#	bash .device/suite/device-suite.sh
#
# At most eight files come back: each group's results JSON and report, and
# one log of the rest.
set -uo pipefail
if [ "${1:-}" = "--build" ]; then
	set -e
	export PATH=/usr/local/go/bin:$PATH
	cd "$(dirname "$0")/.."
	grep -qxF '/.device/' .git/info/exclude 2>/dev/null || echo '/.device/' >> .git/info/exclude
	d=.device/suite
	rm -rf "$d" && mkdir -p "$d"
	commit=$(git rev-parse --short HEAD)
	[ -n "$(git status --porcelain -- bench)" ] && commit="$commit+dirty"
	CGO_ENABLED=0 go build -ldflags "-s -w -X main.commit=$commit" -o "$d/strata-bench" ./bench/cmd/strata-bench
	CGO_ENABLED=0 go build -ldflags "-s -w" -o "$d/irc" ./tools/irc
	for ex in mlp transformer graphbreak train; do
		CGO_ENABLED=0 go build -ldflags "-s -w" -o "$d/$ex" ./examples/$ex
	done
	cp bench/torch_side.py bench/examples_torch.py bench/run-device.sh scripts/device-suite.sh "$d/"
	cp -r bench/e2e "$d/e2e"
	# The binaries travel compressed (the device tool carries at most
	# 64 MiB with the working tree; they are about 60 uncompressed).
	bins="strata-bench irc mlp transformer graphbreak train"
	tar -C "$d" -czf "$d/bin.tgz" $bins && (cd "$d" && rm $bins)
	du -sh "$d"
	exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/bin.tgz" ] && [ ! -x "$here/strata-bench" ]; then
	tar -C "$here" -xzf "$here/bin.tgz" || { echo "device-suite: cannot unpack bin.tgz" >&2; exit 1; }
fi
OUT=${OUT:-/tmp/strata-suite-out}
log=$OUT/suite.log
mkdir -p "$OUT"
group() { # group NAME SECONDS run-device.sh flags...
	local name=$1 secs=$2; shift 2
	echo "== bench $name: $*" >> "$log"
	OUT=/tmp/suite-$name timeout "$secs" bash "$here/run-device.sh" "$@" >> "$log" 2>&1
	echo "== bench $name exit $?" >> "$log"
	cp /tmp/suite-$name/results/*.json "$OUT/$name.json" 2>/dev/null
	cp /tmp/suite-$name/report.txt "$OUT/$name-report.txt" 2>/dev/null
}
# Cold compilers on both sides, whatever ran on this machine before: the
# driver's ComputeCache would serve a PTX text an earlier call compiled
# (a first call of ~1 ms), Triton's cache a kernel an earlier run built.
# torch_side.py gives Inductor a fresh cache of its own.
caches=$(mktemp -d)
export CUDA_CACHE_PATH=$caches/cuda TRITON_CACHE_DIR=$caches/triton
trap 'rm -rf "$caches"' EXIT
# Warm-up, for both sides, before anything is measured: the first CUDA
# process on a machine just started pays a one-time cold start (the driver,
# its PTX compiler and the CUDA libraries read from disk; ~100 ms more for
# Strata's first module load in session 2) that no later process pays. A
# process of Strata's that JIT-compiles a tiny kernel and one of PyTorch's
# that runs a tiny torch.compile (throwaway Inductor and Triton caches, so
# no workload's kernel is cached) pay it here. Each side still pays its own
# per-process start-up inside its first measured workload. The PyTorch
# part costs tens of seconds on a cold machine; SUITE_WARMUP=0 skips both
# (the first workload's first call then includes the cold start).
[ "${SUITE_WARMUP:-1}" = 0 ] || {
	echo "== warm-up (machine cold start, both sides)"
	timeout 60 "$here/strata-bench" warmup
	wdir=$(mktemp -d)
	TORCHINDUCTOR_CACHE_DIR=$wdir/inductor TRITON_CACHE_DIR=$wdir/triton timeout 120 python3 -c '
import time
t0 = time.perf_counter()
import torch
x = torch.ones(4096, device="cuda")
torch.cuda.synchronize()
t1 = time.perf_counter()
f = torch.compile(lambda t: torch.sin(t) * 2 + 1)
f(x)
torch.cuda.synchronize()
print(f"torch warm-up: import + cuda {t1 - t0:.2f} s, tiny torch.compile {time.perf_counter() - t1:.2f} s")
'
	rm -rf "$wdir"
} >> "$log" 2>&1
group memory "${SUITE_MEMORY_S:-260}" --only pointwise,softmax,layernorm,rowsum,tiny_chain,softmax_dynamic
group tensor "${SUITE_TENSOR_S:-260}" --only mm_bias_gelu,attention,mlp_train --default-only mlp_train
{
	echo "== e2e"
	timeout 60 bash "$here/e2e/run.sh" "$here/irc"
	echo "== examples (first call on the GPU)"
	for ex in mlp transformer graphbreak train; do
		echo "-- $ex"
		timeout 30 "$here/$ex" -backend nvptx 2>&1 | tail -8
	done
	echo "== the examples in PyTorch (torch.compile default, fresh caches; bench/examples_torch.py)"
	timeout 240 python3 "$here/examples_torch.py"
} >> "$log" 2>&1
