package togpu_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/autodiff"
	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
)

// convGPUTiles are the tilings the device tests run convolutions with:
// the default mma.sync tile, the 4-warp one, the 256 × 128 wgmma tile and
// Hopper's default.
var convGPUTiles = []togpu.MMATile{
	togpu.MMATiles[0],
	{M: 128, N: 64, K: 64, Stages: 2, WarpN: 32},
	{M: 256, N: 128, K: 64, Stages: 4, WGMMA: true},
	// Hopper's default (autotune.HopperTile): its convolutions take the
	// one-role 128 × 256 kernel, or 64 × 64 for at most 64 output
	// channels (MMATile.ForConv).
	{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true},
}

// TestGPUConv runs convCases's convolutions and a small CNN's gradient on
// the device (skipped without one) with each of convGPUTiles and compares
// them with the interpreter's graph program within one bf16 ulp; then it
// times ResNet-50's convolutions (resnetConvs, with their batch-norm
// affine and ReLU) with each tiling and logs their TFLOP/s.
func TestGPUConv(t *testing.T) {
	rt := openRuntime(t)
	check := func(t *testing.T, src, fn string, tile togpu.MMATile, pipeline string, seed uint64) {
		ref, p := gpuProgram(t, src, pipeline)
		if !strings.Contains(ir.Sprint(p.Module(), ir.PrintOptions{}), `mapping = "mma"`) {
			t.Fatalf("%s: no mma kernel", tile)
		}
		f := ir.NewSymTable(ref).Lookup(fn)
		rng := rand.New(rand.NewPCG(seed, 7))
		var args []interp.Value
		for _, in := range f.Region(0).Front().Arguments() {
			tt := in.Type().(*ir.TensorType)
			args = append(args, randomFloats(t, rng, tt.ElementType(), tt.Shape()))
		}
		got, err := p.Run(rt, fn, args)
		if err != nil {
			t.Fatal(err)
		}
		want, err := interp.New(ref).Call(fn, args...)
		if err != nil {
			t.Fatal(err)
		}
		for r := range want {
			gt, err := got[r].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			gs, ws := gt.Float64s(), want[r].(*interp.Tensor).Float64s()
			scale := 0.0
			for _, w := range ws {
				scale = max(scale, math.Abs(w))
			}
			for i := range ws {
				// One bf16 ulp of the element, or of the result's scale
				// for a gradient (sums of products that cancel).
				if d := math.Abs(gs[i] - ws[i]); !(d <= math.Max(math.Max(1, math.Abs(ws[i]))/128, scale/64)) {
					t.Fatalf("result %d element %d: device %g, interpreter %g", r, i, gs[i], ws[i])
				}
			}
		}
	}
	for _, tile := range convGPUTiles {
		for i, tc := range convCases {
			t.Run(tile.String()+"/"+tc.name, func(t *testing.T) {
				check(t, tc.src, "main", tile, mmaPipeline(tile), uint64(i))
			})
		}
		t.Run(tile.String()+"/train", func(t *testing.T) {
			ctx := dialects.NewContext()
			m, err := ir.Parse(ctx, convLoss, ir.ParseOptions{Filename: "conv.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			gradOf(t, ctx, m, "loss", []int{0, 1, 2, 3})
			check(t, ir.Sprint(m, ir.PrintOptions{Generic: true}), "loss_grad", tile,
				"builtin.module(lower-to-loop,convert-loop-to-gpu{mma-tile="+tile.String()+"},canonicalize,cse)", 3)
		})
	}
	for _, tc := range resnetConvs {
		t.Run("resnet/"+tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			args := []interp.Value{randomBF16(t, rng, []int64{64, tc.c, tc.h, tc.h}), randomBF16(t, rng, []int64{tc.o, tc.c, tc.k, tc.k}),
				randomBF16(t, rng, []int64{1, tc.o, 1, 1}), randomBF16(t, rng, []int64{1, tc.o, 1, 1})}
			flops := float64(2 * 64 * tc.o * tc.q * tc.q * tc.c * tc.k * tc.k)
			for _, tile := range convGPUTiles {
				t.Run(tile.String(), func(t *testing.T) {
					_, p := gpuProgram(t, resnetConv(tc.c, tc.h, tc.o, tc.k, tc.s, tc.p, tc.q), mmaPipeline(tile))
					ms, err := p.RunTimed(rt, "main", args, 3, 20)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("conv %s %s: %.4f ms, %.0f TFLOP/s", tc.name, tile, ms, flops/ms/1e9)
				})
			}
		})
	}
}

// gradOf replaces function fn of module m by its gradient fn_grad with
// respect to the arguments wrt.
func gradOf(t *testing.T, ctx *ir.Context, m *ir.Operation, fn string, wrt []int) {
	t.Helper()
	f := ir.NewSymTable(m).Lookup(fn)
	if _, err := autodiff.Grad(ctx, f, wrt); err != nil {
		t.Fatal(err)
	}
	ir.NewSymTable(m).Erase(f)
}
