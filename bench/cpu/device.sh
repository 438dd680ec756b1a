#!/bin/bash
# The cpu backend's figures on the GPU machine's CPU (issue 26) in one
# command of at most LIMIT seconds (default 125), for a machine with no
# LLVM tools: bench/cpu/rounds.py alternates the bench (built beforehand,
# with its compile cache filled for the exact workloads: the cache key is
# the LLVM IR and the -mcpu, skylake-avx512 on any AVX-512 CPU) with
# PyTorch eager and torch.compile at THREADS threads (default 16), runs
# the interpreter once, and prints a summary table at the end. Built by
# `bench/cpu/device.sh --prepare DIR` here, run there as `bash DIR/run.sh`.
#
#   bash bench/cpu/device.sh --prepare .device/cpu   # here: cpubench, cache/, the scripts
#   THREADS=2 PY=/usr/bin/python3 bash .device/cpu/run.sh   # a test here
#
# `run.sh --blocks` instead compares the matmul kernels' register blocks
# (STRATA_CPU_MATMUL_BLOCK, each of $BLOCKS, whose libraries --prepare
# caches too; MRxNV:KC also sets the k block) on the matmul and the MLP,
# alternated for $ROUNDS rounds, and with TORCH=1 times the two in torch
# eager at the end (about 25 s on 16 cores, 40 with torch).
set -u
BLOCKS=${BLOCKS:-6x4 24x1 6x4:256 12x2 24x1:128}
if [ "${1:-}" = "--prepare" ]; then
	dir=${2:?usage: device.sh --prepare DIR}
	src=$(cd "$(dirname "$0")" && pwd)
	root=$(cd "$src/../.." && pwd)
	mkdir -p "$dir" || exit 1
	rm -rf "$dir/cache"
	(cd "$root" && go build -o "$(cd "$dir" && pwd)/cpubench" ./bench/cpu) || exit 1
	cp "$src/rounds.py" "$src/torch_cpu.py" "$dir/" || exit 1
	cp "$src/device.sh" "$dir/run.sh" || exit 1
	# One call of every workload fills the cache (tools needed here).
	STRATA_CACHE_DIR="$dir/cache" "$dir/cpubench" -reps 1 -interp=false >/dev/null || exit 1
	for b in $BLOCKS; do
		STRATA_CPU_MATMUL_BLOCK=${b%%:*} STRATA_CACHE_DIR="$dir/cache" "$dir/cpubench" -only matmul,mlp -reps 1 -interp=false >/dev/null || exit 1
	done
	git -C "$root" rev-parse HEAD >"$dir/COMMIT"
	echo "prepared $dir: $(ls "$dir/cache/cpu" | wc -l) libraries for -mcpu=$(STRATA_CACHE_DIR="$dir/cache" "$dir/cpubench" -only none -interp=false | sed -n 's/.*-mcpu=\([^;]*\);.*/\1/p'), main at $(cut -c1-7 "$dir/COMMIT")"
	exit 0
fi
D=$(cd "$(dirname "$0")" && pwd)
THREADS=${THREADS:-16}
LIMIT=${LIMIT:-125}
PY=${PY:-python3}
OUT=${OUT:-/tmp/strata-cpu-out}
mkdir -p "$OUT"
export STRATA_CACHE_DIR="$D/cache" GOMAXPROCS=$THREADS
if [ "${1:-}" = "--blocks" ]; then
	ROUNDS=${ROUNDS:-3}
	echo "date $(date -u +%FT%TZ); main at $(cut -c1-7 "$D/COMMIT" 2>/dev/null); nproc $(nproc); threads $THREADS; blocks $BLOCKS" | tee "$OUT/blocks.txt"
	grep -m1 'model name' /proc/cpuinfo | tee -a "$OUT/blocks.txt"
	for r in $(seq "$ROUNDS"); do
		for b in $BLOCKS; do
			kc=0
			[ "${b#*:}" != "$b" ] && kc=${b#*:}
			STRATA_CPU_MATMUL_BLOCK=${b%%:*} timeout 60 "$D/cpubench" -only matmul,mlp -reps 40 -interp=false -kc "$kc" 2>&1 |
				awk -v b="$b" -v r="$r" '$4 == "s" {printf "round %s block %-8s %-7s median %s ms, min %s, cpu %s, %s %s\n", r, b, $1, $5, $6, $7, $8, $9} /rror/' |
				tee -a "$OUT/blocks.txt"
		done
	done
	if [ "${TORCH:-0}" = 1 ]; then
		timeout 60 "$PY" "$D/torch_cpu.py" --threads "$THREADS" --only matmul,mlp --reps 40 2>&1 | tee -a "$OUT/blocks.txt"
	fi
	exit 0
fi
# Inductor compiles in this process, not in a pool of workers that would
# go on compiling (and taking cores) after a compile's time runs out.
export TORCHINDUCTOR_COMPILE_THREADS=1
{
	echo "date $(date -u +%FT%TZ); main at $(cut -c1-7 "$D/COMMIT" 2>/dev/null); nproc $(nproc); threads $THREADS; limit ${LIMIT}s"
	grep -m1 'model name' /proc/cpuinfo
	echo "avx512f: $(grep -c avx512f /proc/cpuinfo) of $(grep -c ^processor /proc/cpuinfo) cpus; $(ls "$D/cache/cpu" | wc -l) cached libraries"
	free -g | sed -n 2p
} 2>&1 | tee "$OUT/machine.txt"
# The deadline leaves rounds.py time to print its summary before timeout.
timeout -k 3 "$LIMIT" "$PY" -u "$D/rounds.py" --bench "$D/cpubench" --threads "$THREADS" --interp \
	--rounds 6 --reps 40 --out "$OUT" --deadline $((LIMIT - 8)) \
	--compile softmax,layer_norm,matmul,mlp,rowsum --compile-budget 45 --compile-timeout 40 2>&1 | tee "$OUT/rounds.log"
echo "run.sh: rc ${PIPESTATUS[0]}"
