package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUMMA runs every tiling's kernels on the device (skipped without
// one) for mmaCases's odd shapes, on fresh random inputs (the seed is
// logged), and compares them with the interpreter's
// graph program, within one bf16 ulp (the f32 sums differ from the
// interpreter's in rounding order only); then it times the bench's
// mm_bias_gelu with each tiling.
func TestGPUMMA(t *testing.T) {
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	seed := uint64(time.Now().UnixNano())
	t.Logf("inputs from seed %d", seed)
	for _, tile := range togpu.MMATiles {
		for _, tc := range mmaCases {
			t.Run(tile.String()+"/"+tc.name, func(t *testing.T) {
				src := fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)
				ref, p := gpuProgram(t, src, mmaPipeline(tile))
				fn := ir.NewSymTable(ref).Lookup("main")
				rng := rand.New(rand.NewPCG(seed, uint64(len(tc.name))))
				var args []interp.Value
				for _, in := range fn.Region(0).Front().Arguments() {
					tt := in.Type().(*ir.TensorType)
					args = append(args, randomFloats(t, rng, tt.ElementType(), tt.Shape()))
				}
				got, err := p.Run(rt, "main", args)
				if err != nil {
					t.Fatal(err)
				}
				want, err := interp.New(ref).Call("main", args...)
				if err != nil {
					t.Fatal(err)
				}
				gt, err := got[0].(*interp.Buffer).Tensor()
				if err != nil {
					t.Fatal(err)
				}
				gs, ws := gt.Float64s(), want[0].(*interp.Tensor).Float64s()
				for i := range ws {
					if d := math.Abs(gs[i] - ws[i]); !(d <= math.Max(1, math.Abs(ws[i]))/128) {
						t.Fatalf("element %d: device %g, interpreter %g", i, gs[i], ws[i])
					}
				}
			})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	args := []interp.Value{randomBF16(t, rng, []int64{8192, 4096}), randomBF16(t, rng, []int64{4096, 4096}), randomBF16(t, rng, []int64{4096})}
	for _, tile := range togpu.MMATiles {
		t.Run("mm_bias_gelu/"+tile.String(), func(t *testing.T) {
			_, p := gpuProgram(t, mmBiasGelu, mmaPipeline(tile))
			ms, err := p.RunTimed(rt, "main", args, 5, 20)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %.3f ms, %.0f TFLOP/s", tile, ms, 2*8192*4096*4096/ms/1e9)
		})
	}
}

// gpuProgram parses src twice, returning the graph program and the other
// copy lowered to the gpu level by pipeline and compiled for the device.
func gpuProgram(t *testing.T, src, pipeline string) (*ir.Operation, *exec.Program) {
	t.Helper()
	ctx := dialects.NewContext()
	ref, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "ref.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "gpu.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(pipeline)
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
	return ref, p
}

// TestGPUMMADynamic runs a bf16 matmul with bias and relu whose M is
// dynamic (one compile; the mma mapping with index offsets) on the device
// at several M, 1 and a partial last tile included, with every tiling,
// and compares with the interpreter's graph program within one bf16 ulp.
func TestGPUMMADynamic(t *testing.T) {
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	src := `func.func @main(%x: tensor<?x72xbf16>, %w: tensor<72x40xbf16>, %b: tensor<40xbf16>) -> tensor<?x40xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<?x72xbf16>, tensor<72x40xbf16>) -> tensor<?x40xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<?x40xbf16>, tensor<40xbf16>) -> tensor<?x40xbf16>
  %r = "graph.relu"(%1) : (tensor<?x40xbf16>) -> tensor<?x40xbf16>
  return %r : tensor<?x40xbf16>
}`
	rng := rand.New(rand.NewPCG(4, 4))
	for _, tile := range togpu.MMATiles {
		ref, p := gpuProgram(t, src, mmaPipeline(tile))
		if !strings.Contains(ir.Sprint(p.Module(), ir.PrintOptions{}), `mapping = "mma"`) {
			t.Fatalf("%s: no mma kernel", tile)
		}
		for _, m := range []int64{1, 127, 300} {
			args := []interp.Value{randomBF16(t, rng, []int64{m, 72}), randomBF16(t, rng, []int64{72, 40}), randomBF16(t, rng, []int64{40})}
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatalf("%s M=%d: %v", tile, m, err)
			}
			want, err := interp.New(ref).Call("main", args...)
			if err != nil {
				t.Fatal(err)
			}
			gt, err := got[0].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			gs, ws := gt.Float64s(), want[0].(*interp.Tensor).Float64s()
			if len(gs) != len(ws) {
				t.Fatalf("%s M=%d: %d elements, want %d", tile, m, len(gs), len(ws))
			}
			for i := range ws {
				if d := math.Abs(gs[i] - ws[i]); !(d <= math.Max(1, math.Abs(ws[i]))/128) {
					t.Fatalf("%s M=%d: element %d: device %g, interpreter %g", tile, m, i, gs[i], ws[i])
				}
			}
		}
	}
}
