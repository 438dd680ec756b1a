F=$OUT/flash; mkdir -p $F; T=$PWD/.device/passes_togpu.test
## 0. torch's SDPA timed after do_bench's flush (zero_: a fill kernel) vs after cuMemsetD32Async of the same 256 MiB
##    (Strata's exec.Bound.Time) vs no flush (≈ 10 s)
cat > $F/flushcmp.py <<'PYEOF'
# Times torch's SDPA (cuDNN/flash) under three cache treatments before each timed call, same events and medians as
# do_bench: "zero_" (do_bench's clear_cache: a fill kernel over 256 MiB), "memset" (cuMemsetD32Async over the same
# 256 MiB, as Strata's exec.Bound.Time flushes) and "none" (warm L2). Prints the median ms of each.
import ctypes, statistics, torch, torch.nn.functional as F
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
cache = torch.empty(64 << 20, dtype=torch.int32, device="cuda")
def flush_zero(): cache.zero_()
def flush_memset():
    r = cuda.cuMemsetD32Async(cache.data_ptr(), 0, cache.numel(), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    assert r == 0, r
def flush_none(): pass
def median_ms(fn, flush, n=300):
    for _ in range(20): flush(); fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        flush(); s.record(); fn(); e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev)
for d in (64, 128):
    q, k, v = (torch.randn(16, 16, 1024, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    for causal in (False, True):
        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        r = {name: median_ms(f, fl) for name, fl in (("zero_", flush_zero), ("memset", flush_memset), ("none", flush_none), ("zero_2", flush_zero))}
        print(f"torch sdpa d{d} causal={causal}: " + "  ".join(f"{k} {v:.4f}" for k, v in r.items()), flush=True)
PYEOF
timeout 40 python3 $F/flushcmp.py > $F/flushcmp.txt 2>&1; echo "flushcmp rc $?" | tee -a $F/summary.txt; cat $F/flushcmp.txt | tail -5 | tee -a $F/summary.txt
## 1. checks vs the interpreter (small: tails, d64/d128, causal) and large (vs the mma.sync kernel) (≈ 15 s)
(cd passes/togpu && timeout 45 $T -test.run 'TestGPUFlash$/^(2x1x200x130-d64|1x2x130x70-d64|1x1x130x200-d128|1x2x150x140-d128|1x2x250x140-d128|1x1x120x300-d64)/.*(128x128gplqdator132|gplqko|gplvqo|gplqo)$' -test.v) > $F/check.txt 2>&1; echo "check rc $? pass $(grep -cE '^\s*--- PASS' $F/check.txt) fail $(grep -cE '^\s*--- FAIL' $F/check.txt)" | tee -a $F/summary.txt
(cd passes/togpu && timeout 40 $T -test.run 'TestGPUFlashLarge/^(1x1|16x16)x1024x1024-d128/.*(128x128gplqdator132|64x64gplqko)$' -test.v) > $F/large.txt 2>&1; echo "large rc $? pass $(grep -cE '^\s*--- PASS' $F/large.txt) fail $(grep -cE '^\s*--- FAIL' $F/large.txt)" | tee -a $F/summary.txt
## 2. kernel times (cold-cache median, TFLOP/s, no-flush median, wall) (≈ 25 s)
(cd passes/togpu && timeout 60 $T -test.run 'TestGPUFlash$/^(time-.*-d64-.*-(64x128gplqo|64x64gplvqo)|time-.*-d128-.*-(64x64gplqko|128x128gplqdato|128x128gplqda?t?or132))$' -test.v) > $F/times.txt 2>&1; echo "times rc $?" | tee -a $F/summary.txt
grep -E "^=== RUN.*time-|ms, " $F/times.txt | sed -E 's/.*(time-[^ ]*)$/\1/; s/.*flash_test.go:[0-9]+: //' | paste - - | sed 's/-scale=0-bf16//' | tee -a $F/summary.txt
## 3. the d128 rows vs torch.compile, default mode (≈ 30 s)
OUT=$F/rows timeout 75 bash .device/run-device.sh --only attention_d128,attention_causal_d128 --default-only attention_d128,attention_causal_d128 --rep-ms 100 > $F/rows.log 2>&1; echo "rows rc $?" | tee -a $F/summary.txt
grep -E "^attention|\"default\"" $F/rows.log | cut -c1-200 | tee -a $F/summary.txt
rm -f $F/rows/programs.tar
