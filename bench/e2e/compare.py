# compare.py A.npy B.npy: normwise-relative comparison of two results (exact for integers).
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
if a.shape != b.shape or a.dtype != b.dtype:
    print("MISMATCH shape/dtype", a.shape, a.dtype, b.shape, b.dtype); sys.exit(1)
if a.dtype.kind in "iub":
    bad = int((a != b).sum()); print(f"int mismatches {bad}/{a.size}"); sys.exit(1 if bad else 0)
a64, b64 = a.astype(np.float64), b.astype(np.float64)
err = np.abs(a64 - b64); scale = np.abs(a64) + np.sqrt(np.mean(a64 * a64) + 1e-30)
rel = float((err / scale).max()) if a.size else 0.0
print(f"max_abs {float(err.max()) if a.size else 0:.3g} max_rel {rel:.3g} {'ok' if rel < 2e-4 else 'FAIL'}")
sys.exit(0 if rel < 2e-4 else 1)
