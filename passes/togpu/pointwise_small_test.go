package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/togpu"
)

// adamLikeProgram is a pointwise program over n f32 elements: k
// AdamW-like steps (a square root, a division and a few products each)
// applied one after the other to p with g, one kernel of about 6·k ops.
func adamLikeProgram(n, k int) string {
	t := fmt.Sprintf("tensor<%dxf32>", n)
	var b strings.Builder
	fmt.Fprintf(&b, "func.func @main(%%p: %[1]s, %%g: %[1]s) -> %[1]s {\n", t)
	p := "%p"
	for i := range k {
		fmt.Fprintf(&b, `  %%m%[1]d = "graph.mul"(%%g, %%g) : (%[2]s, %[2]s) -> %[2]s
  %%a%[1]d = "graph.add"(%%m%[1]d, %[3]s) : (%[2]s, %[2]s) -> %[2]s
  %%s%[1]d = "graph.sqrt"(%%a%[1]d) : (%[2]s) -> %[2]s
  %%e%[1]d = "graph.add"(%%s%[1]d, %%g) : (%[2]s, %[2]s) -> %[2]s
  %%d%[1]d = "graph.div"(%[3]s, %%e%[1]d) : (%[2]s, %[2]s) -> %[2]s
  %%w%[1]d = "graph.mul"(%%g, %%d%[1]d) : (%[2]s, %[2]s) -> %[2]s
  %%r%[1]d = "graph.sub"(%[3]s, %%w%[1]d) : (%[2]s, %[2]s) -> %[2]s
`, i, t, p)
		p = fmt.Sprintf("%%r%d", i)
	}
	fmt.Fprintf(&b, "  return %s : %s\n}", p, t)
	return b.String()
}

// TestSmallHeavyNestsTakeNarrowSteps: a pointwise kernel of few points and
// a long body (HeavyNestOps or more: 24 chained AdamW-like steps over 768
// elements, 150 ops; GPT-2's optimizer step of 6 to 17 of its biases and
// layer-norm weights in one kernel has 142 to 384) takes vector steps
// only while it still runs SmallNestThreads threads (768 points: one
// point a thread; 3072: one; 65536: 4); a light kernel of 768 points keeps
// its 4-point steps. Each matches the interpreter.
func TestSmallHeavyNestsTakeNarrowSteps(t *testing.T) {
	cases := []struct {
		n, k int
		vec  int64
	}{
		{768, 24, 1}, {3072, 24, 1}, {65536, 24, 4}, {768, 1, 4},
	}
	for _, tc := range cases {
		src := adamLikeProgram(tc.n, tc.k)
		m := lowerGraph(t, src, "builtin.module(lower-to-gpu)")
		var got []int64
		m.Walk(func(o *ir.Operation) bool {
			if gpu.IsKernel(o) {
				got = append(got, o.Attr(togpu.LaunchAttr).(ir.DictAttr).Get("vector").(ir.IntegerAttr).Value)
			}
			return true
		})
		if len(got) != 1 || got[0] != tc.vec {
			t.Errorf("%d points, %d updates: kernels of vector %v, want one of %d", tc.n, tc.k, got, tc.vec)
		}
		if tc.n <= 3072 {
			checkAgainstGraphTol(t, fmt.Sprintf("%d points, %d updates", tc.n, tc.k), src, m, 1e-6)
		}
	}
}
