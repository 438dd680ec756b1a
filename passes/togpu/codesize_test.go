package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/targets/llvm"
)

// TestNoUnrollInner checks that a SIMT matmul's reduction loop (K static
// trips) becomes, from NoUnrollMinTrips trips on and unless unroll-inner
// is set, a loop.no_unroll loop of NoUnrollFactor trips an iteration and
// the trips left after it; that the grid-stride loop stays as it is; that
// both PTX backends then ask ptxas not to unroll it (an assembled .pragma
// in the loop's header); that a shorter one runs straight (it loads); and
// that the lowered program still computes the graph program's product bit
// for bit (the same ops in the same order).
func TestNoUnrollInner(t *testing.T) {
	for _, tc := range []struct {
		k      int
		unroll bool
		marked bool
	}{
		{64, false, true},
		{64, true, false},
		{togpu.NoUnrollMinTrips, false, true},
		{togpu.NoUnrollMinTrips + 3, false, true},  // three trips after the loop
		{togpu.NoUnrollMinTrips - 1, false, false}, // unrolled: only the grid-stride loop
	} {
		name := fmt.Sprintf("k%d/unroll-inner=%v", tc.k, tc.unroll)
		src := fmt.Sprintf(`func.func @main(%%x: tensor<6x%[1]dxf32>, %%w: tensor<%[1]dx5xf32>) -> tensor<6x5xf32> {
  %%0 = "graph.matmul"(%%x, %%w) : (tensor<6x%[1]dxf32>, tensor<%[1]dx5xf32>) -> tensor<6x5xf32>
  return %%0 : tensor<6x5xf32>
}`, tc.k)
		pipeline := fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{unroll-inner=%v},expand-math,canonicalize,cse)", tc.unroll)
		m := lowerGraph(t, src, pipeline)
		var fors, marked int
		m.Walk(func(o *ir.Operation) bool {
			if o.Name() == loop.ForOp && o.ParentOfType("gpu.func") != nil {
				fors++
				if o.Attr(loop.NoUnrollAttr) != nil {
					marked++
					if step, ok := constIndex(o.Operand(2)); !ok || step != togpu.NoUnrollFactor {
						t.Errorf("%s: the rolled loop's step is %v, want %d", name, o.Operand(2), togpu.NoUnrollFactor)
					}
				}
			}
			return true
		})
		want := 0
		if tc.marked {
			want = 1
		}
		loops := 2
		if tc.k < togpu.NoUnrollMinTrips && !tc.unroll {
			loops = 1
		}
		if fors != loops || marked != want {
			t.Errorf("%s: %d loops in the kernel, %d marked; want %d (grid-stride and K, unless K runs straight), %d marked", name, fors, marked, loops, want)
		}
		checkAgainstGraph(t, name, src, m)
		mod, err := llvm.TranslateAll(llvm.GPUModules(m))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(mod.String(), "llvm.loop.unroll.disable"); got != want {
			t.Errorf("%s: %d llvm.loop.unroll.disable properties in the LLVM IR, want %d", name, got, want)
		}
		for _, backend := range []string{"native", "llc"} {
			ptx, ok := backendPTX(t, mod, backend)
			if !ok {
				continue
			}
			if got := strings.Count(ptx, `.pragma "nounroll";`); got != want {
				t.Errorf("%s, %s: %d nounroll pragmas, want %d", name, backend, got, want)
			}
			ptxasAccepts(t, ptx)
		}
	}
}

// constIndex returns the value of an arith.constant index.
func constIndex(v *ir.Value) (int64, bool) {
	d := v.DefiningOp()
	if d == nil || d.Name() != "arith.constant" {
		return 0, false
	}
	a, ok := d.Attr("value").(ir.IntegerAttr)
	return a.Value, ok
}

// TestRegisterRowBlock checks the block of register-held rows: a softmax
// row of 8192 floats takes 512 threads of 16 elements (not 256 of 32), one
// of 4096 512 of 8 (not 256 of 16), one of 2048 keeps 256 of 8, one of
// 1024 keeps the configured block, and an
// explicit block that leaves more than RegisterRow elements a thread (a
// loop, not registers) is kept; the lowered softmax computes the graph's.
func TestRegisterRowBlock(t *testing.T) {
	for _, tc := range []struct {
		cols, block, want int64
	}{
		{8192, 256, 512},
		{4096, 256, 512},
		{2048, 256, 256},
		{1024, 256, 256},
		{8192, 128, 128},
		{8192, 1024, 1024},
	} {
		name := fmt.Sprintf("cols=%d/block=%d", tc.cols, tc.block)
		src := fmt.Sprintf(`func.func @main(%%x: tensor<3x%[1]dxf32>) -> tensor<3x%[1]dxf32> {
  %%0 = "graph.softmax"(%%x) <{axis = 1 : i64}> : (tensor<3x%[1]dxf32>) -> tensor<3x%[1]dxf32>
  return %%0 : tensor<3x%[1]dxf32>
}`, tc.cols)
		m := lowerGraph(t, src, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{block=%d},expand-math,canonicalize,cse)", tc.block))
		var blocks []int64
		m.Walk(func(o *ir.Operation) bool {
			if d, ok := o.Attr(togpu.LaunchAttr).(ir.DictAttr); ok {
				b, _ := d.Get("block").(ir.IntegerAttr)
				blocks = append(blocks, b.Value)
			}
			return true
		})
		if len(blocks) != 1 || blocks[0] != tc.want {
			t.Errorf("%s: kernel blocks %v, want [%d]", name, blocks, tc.want)
		}
		if tc.cols == 8192 && tc.block == 256 {
			checkAgainstGraphTol(t, name, src, m, 1e-6)
		}
	}
}
