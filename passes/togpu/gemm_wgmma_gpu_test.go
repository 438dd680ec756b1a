package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// gemm8192 is the bench's gemm_own_bf16: an 8192³ bf16 product.
const gemm8192 = `func.func @main(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
`

// TestGPUWGMMAGemm runs the 8192³ bf16 product on the device (skipped
// without one, or without cuBLASLt) with cuBLASLt, the default mma.sync
// tiling and every wgmma tiling, on fresh random inputs (the seed is
// logged); each of Strata's results is compared
// with cuBLASLt's (both accumulate in f32: within one bf16 ulp) before
// it is timed, and the log gives each one's TFLOP/s and its ratio to
// cuBLASLt's in the same process.
func TestGPUWGMMAGemm(t *testing.T) {
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	const flops = 2 * 8192 * 8192 * 8192
	seed := uint64(time.Now().UnixNano())
	t.Logf("inputs from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	args := []interp.Value{randomBF16(t, rng, []int64{8192, 8192}), randomBF16(t, rng, []int64{8192, 8192})}
	compile := func(options string) *exec.Program {
		t.Helper()
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, gemm8192, ir.ParseOptions{Filename: "gemm.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{" + options + "},canonicalize,cse)")
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.Run(ctx, m); err != nil {
			t.Fatal(err)
		}
		p, err := exec.Compile(m, exec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	output := func(p *exec.Program) []float64 {
		t.Helper()
		got, err := p.Run(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		gt, err := got[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		return gt.Float64s()
	}
	lib := compile("matmul=" + togpu.MatmulCuBLASLt)
	want, err := lib.Run(rt, "main", args)
	if err != nil {
		t.Skipf("no cuBLASLt: %v", err)
	}
	wt, err := want[0].(*interp.Buffer).Tensor()
	if err != nil {
		t.Fatal(err)
	}
	ref := wt.Float64s()
	libMS, err := lib.RunTimed(rt, "main", args, 5, 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gemm 8192³ cuBLASLt: %.4f ms, %.0f TFLOP/s", libMS, flops/libMS/1e9)
	for _, tile := range togpu.MMATiles {
		if !tile.WGMMA && tile != togpu.DefaultConfig.MMATile {
			continue
		}
		t.Run(tile.String(), func(t *testing.T) {
			p := compile(fmt.Sprintf("mma-tile=%s", tile))
			got := output(p)
			worst := 0.0
			for i, w := range ref {
				d := math.Abs(got[i] - w)
				if !(d <= math.Max(1, math.Abs(w))/128) {
					t.Fatalf("element %d: %s %g, cuBLASLt %g", i, tile, got[i], w)
				}
				worst = math.Max(worst, d)
			}
			ms, err := p.RunTimed(rt, "main", args, 5, 20)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("gemm 8192³ %s: %.4f ms, %.0f TFLOP/s, %.1f%% of cuBLASLt (max |diff| %g)", tile, ms, flops/ms/1e9, 100*libMS/ms, worst)
		})
	}
}
