#!/usr/bin/env bash
# Runs the device tests of every GPU kernel family at small shapes under
# NVIDIA's compute-sanitizer (memcheck and racecheck; initcheck and
# synccheck on request) and prints one line per family and tool with the
# sanitizer's error count, the kernels the errors name and the tests'
# own result. docs/robustness.md ("Sanitizers") says what each family
# covers and how to read the lines.
#
# On the GPU machine, from the repository root, after scripts/device-tests.sh
# built the test binaries here (.device/passes_togpu.test,
# .device/runtime_exec.test and .device/nn.test; the device tool carries
# .device):
#
#	bash scripts/sanitize-device.sh [--only FAMILY,...] [--tools TOOL,...]
#	                                [--jobs N] [--timeout SECONDS]
#	                                [--print-limit N] [--list]
#
# The families run in parallel (--jobs, default 32: one process per family
# and tool; the tests are host-bound under the sanitizer), each under its
# own timeout (default 120 s). The sanitizer prints the first 50 reports
# of a run (--print-limit) and counts them all: where a library kernel's
# reports fill those 50 (gemm-tma-cluster's racecheck: cuBLASLt's
# reference), a larger limit shows whether any other kernel has one. The
# summary goes to stdout and, with every log, to $OUT
# (sanitize-summary.txt, sanitize-logs.tgz) when OUT is set. Exit status:
# 0 when every run finished with no sanitizer error and no failed test, 1
# otherwise, 2 for bad usage or no compute-sanitizer.
set -uo pipefail

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'
	exit 2
}

# The families: name, test binary, its package directory (the binary runs
# there, for testdata), the tools it runs under by default, environment
# settings for the test binary (NAME=VALUE, space-separated; mostly none),
# its own flags (space-separated; nn's -paths=device) and the -test.run
# pattern that selects its small-shape checks (never the
# timings, which run at the bench's sizes; last, as it holds |). Kept in step with the tests'
# subtest names: passes/togpu (convGPUTiles × convCases, togpu.MMATiles ×
# mmaCases, flashCases × togpu.FlashTiles, flashPersistentCases,
# flashGradCases), runtime/exec and nn (gpuResNets, the small CNN).
families=(
	# Strata's implicit-GEMM convolutions (conv_mma.go): every case of
	# convCases with each tiling of convGPUTiles (mma.sync, the 4-warp one,
	# wgmma 256x128, Hopper's TMA default), and a small CNN's gradient (data
	# and weight gradients as convolutions).
	"conv-own|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUConv\$/^[0-9]"
	# The mma.sync GEMM tilings on odd shapes, tails, transposes, batches.
	"gemm-mma|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUMMA\$/^[0-9x]+s[23](w64)?\$/^(odd-bias-gelu|many-k-tiles|k-tail|b-transposed-odd-n|a-transposed-unaligned|batched|m-one-k-one)\$"
	# The wgmma GEMM tilings (g, go, ws, wst, wste, wstep132, wstc2, …:
	# every togpu.MMATiles entry on wgmma).
	"gemm-wgmma|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUMMA\$/^[0-9x]+s[0-9](g|ws)/^(odd-bias-gelu|many-k-tiles|k-tail|b-transposed-odd-n|a-transposed-unaligned|batched|m-one-k-one)\$"
	# Every tiling with a dynamic M (1, 127, 300 rows: index offsets, tails).
	"gemm-dynamic|passes_togpu|passes/togpu|memcheck|||TestGPUMMADynamic\$"
	# TMA and cluster tilings on the tails and shapes cuBLASLt is compared
	# with (its kernels run too: see the kernels column).
	"gemm-tma-cluster|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUClusterShapes\$|TestGPUTMAGraph\$"
	# Flash attention forward: five cases (d32, d64 causal with row and key
	# tails, d128 causal with the clusters' pairs, d128 with row and key
	# tails, f16 with rescaling), the pipeline's tiling and then the
	# mma.sync tilings …
	"flash-fwd-mma|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUFlash\$/^(1x2x40x40-d32-causal=true-scale=0-bf16|1x2x130x70-d64-causal=true-scale=0-bf16|1x2x250x140-d128-causal=true-scale=0-bf16|1x1x130x200-d128-causal=false-scale=0-bf16|1x1x40x200-d64-causal=false-scale=4-f16)\$/^[^g]*\$"
	# … the wgmma tilings without TMA …
	"flash-fwd-wgmma|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUFlash\$/^(1x2x40x40-d32-causal=true-scale=0-bf16|1x2x130x70-d64-causal=true-scale=0-bf16|1x2x250x140-d128-causal=true-scale=0-bf16|1x1x130x200-d128-causal=false-scale=0-bf16|1x1x40x200-d64-causal=false-scale=4-f16)\$/g[^t]*\$"
	# … and the TMA and cluster ones (names with t, c2).
	"flash-fwd-tma|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUFlash\$/^(1x2x40x40-d32-causal=true-scale=0-bf16|1x2x130x70-d64-causal=true-scale=0-bf16|1x2x250x140-d128-causal=true-scale=0-bf16|1x1x130x200-d128-causal=false-scale=0-bf16|1x1x40x200-d64-causal=false-scale=4-f16)\$/g.*t"
	# The persistent tilings (64x64gplqkor, 128x128gplqd…r with PrefetchQ's
	# 128x128gplqdatonr and 128x128gplqdaonr) on grids of 2 and 3 blocks:
	# a block's later row blocks, the next Q copied early, causal turns.
	"flash-fwd-persistent|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUFlashPersistent\$"
	# The flash forward's forms (LSE, dynamic lengths, both) on every form
	# tiling at the small shapes: the dynamic forms' unguarded copies of
	# key tiles wholly inside the length (copyKeys, session 19).
	"flash-forms|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUFlashForms\$/^[12]x[12]x[0-9]+x"
	# Flash attention backward: every check of TestGPUFlashGrad (the
	# forward with its log-sum-exp, the mma.sync and wgmma backward kernels
	# with Staged stores and SharedStats, alone and together).
	"flash-bwd|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUFlashGrad\$/^check-"
	# Decoding attention over a KV cache (its check; the test's timing at
	# the end runs 110 launches).
	"decode|passes_togpu|passes/togpu|memcheck|||TestGPUDecodeAttention\$"
	# Column sums (bias and layer-norm gradients) under the column mapping
	# and a warp a column, split into partial rows.
	"colsum|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPUColumnSumSplits\$"
	# scatter_add, the gather's gradient (atomics).
	"scatter|passes_togpu|passes/togpu|memcheck|||TestGPUScatterAdd\$"
	# A gather with indices out of range (guarded: zeros, never outside
	# the table; an empty table too).
	"gather|passes_togpu|passes/togpu|memcheck,initcheck|||TestGPUGatherOutOfRange\$"
	# The layer norm's row kernels under every row option (1024 × 4096).
	"rows|passes_togpu|passes/togpu|memcheck,racecheck|||TestGPURowVariants\$"
	# Pointwise, reduction, softmax and training programs (runtime/exec's
	# testdata) on both PTX backends.
	"pointwise|runtime_exec|runtime/exec|memcheck,racecheck|||TestGPUMatchesInterpreter\$"
	# The library paths: cuDNN convolutions (NCHW, NHWC, gradients) and
	# cuBLASLt products with Strata's epilogue and transpose kernels around
	# them. memcheck only: racecheck reports hazards inside cuBLASLt's own
	# kernels (session 12), which are NVIDIA's.
	"library|runtime_exec|runtime/exec|memcheck|||TestGPUCuDNN\$|TestGPUCuDNNGradient\$|TestGPUCuBLASLt\$|TestGPUWarmLibraryCalls\$|TestGPURunBesideWarmUps\$"
	# The libraries' warm-ups beside the program's runs (session 19): a
	# cuDNN call run untimed while its Tune times candidates on a tuning
	# workspace of its own, and cuBLASLt's Run beside its Tune.
	"library-tune|runtime_cudnn|runtime/cudnn|memcheck|||TestGPUUntimedBesideTune\$"
	"library-tune-lt|runtime_cublaslt|runtime/cublaslt|memcheck|||TestGPURunBesideTune\$"
	# Whole models through the frontend (nn): a small ResNet (w8, 2 × 33 ×
	# 37) forward in eval and train mode and two SGD steps, in f32 and bf16,
	# and the small CNN's three bfloat16 SGD steps — the graph's fused kernels
	# (batch norm forward and backward with its statistics, pooling, the
	# loss, the optimizer's update) — first with the default policy (cuDNN
	# and cuBLASLt, memcheck only) …
	"models|nn|nn|memcheck|||TestGPUModelsResNet\$/^w8_cls7\$|TestGPUModelsCNN\$/^bfloat16\$"
	# … then on Strata's own kernels alone: the implicit-GEMM convolutions
	# forward, data and weight gradients, and the products (wgmma, TMA).
	"models-own|nn|nn|memcheck,racecheck|STRATA_CUDNN=off STRATA_CUBLASLT=off||TestGPUModelsResNet\$/^w8_cls7\$|TestGPUModelsCNN\$/^bfloat16\$"
	# Imported models on the device path: PyTorch's exports of
	# importers/onnx/testdata (torchvision-style CNNs, both exporters) and
	# the hand-built graphs of the importer's ops (Resize, Pad modes,
	# ConvTranspose, DepthToSpace, instance and group norm: gathers,
	# rank-6 transposes), on Strata's own kernels.
	"onnx-models|nn|nn|memcheck,racecheck|STRATA_CUDNN=off STRATA_CUBLASLT=off|-paths=device|TestShapesTorchExports\$/^torch211(cnn|ts)?\$|TestShapesONNXCNNs\$"
)

only="" tools="" jobs=32 limit=120 prints=50 list=0
while [ $# -gt 0 ]; do
	case $1 in
	--only) only=${2:-}; shift 2 ;;
	--tools) tools=${2:-}; shift 2 ;;
	--jobs) jobs=${2:-}; shift 2 ;;
	--timeout) limit=${2:-}; shift 2 ;;
	--print-limit) prints=${2:-}; shift 2 ;;
	--list) list=1; shift ;;
	-h | --help) usage ;;
	*) echo "sanitize-device: unknown argument $1" >&2; usage ;;
	esac
done
case $jobs$limit$prints in *[!0-9]* | "") echo "sanitize-device: --jobs, --timeout and --print-limit take whole numbers" >&2; exit 2 ;; esac
if [ "$prints" = 0 ]; then
	echo "sanitize-device: --print-limit must be at least 1" >&2
	exit 2
fi
for t in ${tools//,/ }; do
	case $t in memcheck | racecheck | initcheck | synccheck) ;; *) echo "sanitize-device: unknown tool $t" >&2; exit 2 ;; esac
done
known=" "
for f in "${families[@]}"; do known+="${f%%|*} "; done
for o in ${only//,/ }; do
	case $known in *" $o "*) ;; *) echo "sanitize-device: unknown family $o (families:$known)" >&2; exit 2 ;; esac
done

if [ $list = 1 ]; then
	for f in "${families[@]}"; do
		IFS='|' read -r name bin dir ftools fenv fargs run <<<"$f"
		printf '%-20s %-14s %-22s %s%s%s\n' "$name" "$bin" "$ftools" "$run" "${fenv:+ (with $fenv)}" "${fargs:+ (flags $fargs)}"
	done
	exit 0
fi

# findSanitizer prints the path of compute-sanitizer: $COMPUTE_SANITIZER,
# then PATH, then the CUDA toolkits' usual places (GPU.md: the device has
# it under /usr/local/cuda/bin, which is not always on PATH).
findSanitizer() {
	local c
	for c in "${COMPUTE_SANITIZER:-}" "$(command -v compute-sanitizer 2>/dev/null)" \
		/usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
		/usr/local/cuda-*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer /opt/cuda/bin/compute-sanitizer; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

root=$(cd "$(dirname "$0")/.." && pwd)

# buildCommit prints the commit the test binaries were built from:
# $STRATA_BUILD_COMMIT, else .device/commit (scripts/build-device.sh and
# scripts/device-tests.sh write it beside the binaries), else .dc/commit
# (the session's device-call driver); the device copy's own git HEAD is
# another checkout's, so it is printed only marked as such.
buildCommit() {
	local f c
	if [ -n "${STRATA_BUILD_COMMIT:-}" ]; then
		echo "$STRATA_BUILD_COMMIT"
		return
	fi
	for f in "$root/.device/commit" "$root/.dc/commit"; do
		c=$(head -c 200 "$f" 2>/dev/null | head -1)
		if [ -n "$c" ]; then
			echo "$c"
			return
		fi
	done
	echo "unknown (the binaries' commit is not recorded; the device copy's HEAD is $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown))"
}
san=$(findSanitizer) || {
	echo "sanitize-device: no compute-sanitizer (set COMPUTE_SANITIZER, or put the CUDA toolkit's bin on PATH)" >&2
	exit 2
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
	echo "compute-sanitizer: $san ($("$san" --version 2>/dev/null | grep -i version | head -1))"
	echo "commit: $(buildCommit)"
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed 's/^/device: /'
} > "$work/header.txt"
cat "$work/header.txt"

# runOne runs family line $1 under tool $2 and writes its summary line.
runOne() {
	local name bin dir ftools fenv fargs run tool=$2
	IFS='|' read -r name bin dir ftools fenv fargs run <<<"$1"
	local exe="$root/.device/$bin.test" log="$work/$name.$tool.log" line="$work/$name.$tool.line"
	if [ ! -x "$exe" ]; then
		printf '%-20s %-10s NOT RUN: no %s (scripts/device-tests.sh builds it)\n' "$name" "$tool" ".device/$bin.test" > "$line"
		return
	fi
	local extra=()
	[ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
	local t0=$SECONDS rc
	# Two threads a Go process: the families share the machine's cores.
	# shellcheck disable=SC2086 # (fenv: NAME=VALUE words; fargs: flags)
	(cd "$root/$dir" && env $fenv GOMAXPROCS=${SAN_GOMAXPROCS:-2} timeout -k 10 "$limit" "$san" --tool "$tool" "${extra[@]}" \
		--print-limit "$prints" "$exe" $fargs -test.run "$run" -test.v -test.count 1) > "$log" 2>&1
	rc=$?
	local secs=$((SECONDS - t0))
	summarize "$name" "$tool" "$log" "$rc" "$secs" | sed "s/[[:space:]]*$//" > "$line"
}

# summarize prints one family's line from its log: the sanitizer's count
# (its summary line, or the reports counted when it did not finish), the
# kernels its reports name (library kernels marked lib:), the tests passed,
# failed and skipped, the seconds and the status.
summarize() {
	local name=$1 tool=$2 log=$3 rc=$4 secs=$5
	local errs pass fail skip status kernels
	errs=$(grep -aoE '(ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard)' "$log" | tail -1 | grep -oE '[0-9]+')
	if [ -z "$errs" ]; then
		# No summary (killed at the timeout): count the reports so far.
		errs="$(grep -acE '^========= (Invalid|Error|Uninitialized|Barrier|Race|Program hit|Warning)' "$log")?"
	fi
	pass=$(grep -acE -- '--- PASS' "$log")
	fail=$(grep -acE -- '--- FAIL' "$log")
	skip=$(grep -acE -- '--- SKIP' "$log")
	# (memcheck: "=========     at K+0x…"; racecheck: "=========     Write
	# Thread (256,0,0) at K+0x…", both sides of each hazard.)
	kernels=$(grep -aE '^=========' "$log" | grep -aoE ' at [A-Za-z_][A-Za-z0-9_$.:]*\+0x' |
		sed -E 's/ at ([^+]*)\+0x/\1/' | sort | uniq -c | sort -rn | head -6 |
		awk '{k=$2; if (k ~ /nvjet|xmma|cudnn|cutlass|cublas|^sm[0-9]+_/) k="lib:" k; printf "%s%s×%s", (NR>1?",":""), k, $1}')
	if grep -aq 'Internal Sanitizer Error' "$log"; then
		status=SANITIZER-FAULT
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		status=TIMEOUT
	elif [ "$pass$fail" = 00 ]; then
		status=NO-TESTS
	elif [ "$fail" != 0 ] || ! grep -aqE '^(PASS|ok)' "$log"; then
		status=TEST-FAIL
	elif [ "$errs" = 0 ]; then
		status=clean
	else
		status=ERRORS
	fi
	printf '%-20s %-10s errors=%-5s pass=%-4s fail=%-3s skip=%-3s %4ss %-15s %s\n' \
		"$name" "$tool" "$errs" "$pass" "$fail" "$skip" "$secs" "$status" "${kernels:+kernels: $kernels}"
}

running=0
for f in "${families[@]}"; do
	IFS='|' read -r name bin dir ftools fenv fargs run <<<"$f"
	if [ -n "$only" ]; then
		case ",$only," in *",$name,"*) ;; *) continue ;; esac
	fi
	want=${tools:-$ftools}
	for tool in ${want//,/ }; do
		runOne "$f" "$tool" &
		running=$((running + 1))
		if [ "$running" -ge "$jobs" ]; then
			wait -n
			running=$((running - 1))
		fi
	done
done
wait

summary="$work/summary.txt"
{
	cat "$work/header.txt"
	printf '%-20s %-10s %s\n' family tool 'sanitizer errors, tests passed/failed/skipped, seconds, status'
	for f in "${families[@]}"; do
		name=${f%%|*}
		for l in "$work/$name".*.line; do
			[ -f "$l" ] && cat "$l"
		done
	done
} > "$summary"
cat "$summary"
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	cp "$summary" "$OUT/sanitize-summary.txt"
	tar -C "$work" -czf "$OUT/sanitize-logs.tgz" --exclude '*.line' --exclude header.txt --exclude summary.txt .
fi
# Every run's line says clean, or the exit status is 1.
if grep -vE '^(compute-sanitizer|commit|device|family):? ' "$summary" | grep -qvE ' clean( |$)'; then
	exit 1
fi
exit 0
