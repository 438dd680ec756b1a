package exec

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"

	// The passes of lower-to-gpu.
	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/lower"
	_ "github.com/strata-ir/strata/passes/togpu"
)

// mmaProgram lowers a bf16 graph function to the gpu level (its matmuls
// take the tensor-core mapping).
func mmaProgram(t *testing.T, src string) *Program {
	t.Helper()
	p, err := Compile(passtest.Run(t, src, "builtin.module(lower-to-gpu)"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// randomBF16 returns a bf16 buffer of the given shape, uniform in [-1, 1).
func randomBF16(t *testing.T, rng *rand.Rand, shape ...int64) *interp.Buffer {
	t.Helper()
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 2*rng.Float64() - 1
	}
	v, err := interp.FromFloat64s(ir.BF16, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return interp.BufferFromTensor(v)
}

// TestGPUTensorCores runs tensor-core kernels on random sizes that are
// not multiples of the tile (and one that is) and compares with the
// interpreter, which simulates ldmatrix and mma.sync lane by lane: a
// fused bias + gelu epilogue, and batched q·kᵀ (B stored [N, K]) with a
// scaled output.
func TestGPUTensorCores(t *testing.T) {
	rt := openGPU(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range 4 {
		m, k, n := 1+rng.Int64N(300), 8*(1+rng.Int64N(40)), 8*(1+rng.Int64N(40))
		if i == 0 {
			m, k, n = 256, 96, 384
		}
		t.Run(fmt.Sprintf("bias-gelu/%dx%dx%d", m, k, n), func(t *testing.T) {
			src := fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx%[2]dxbf16>, %%w: tensor<%[2]dx%[3]dxbf16>, %%b: tensor<%[3]dxbf16>) -> tensor<%[1]dx%[3]dxbf16> {
  %%0 = "graph.matmul"(%%x, %%w) : (tensor<%[1]dx%[2]dxbf16>, tensor<%[2]dx%[3]dxbf16>) -> tensor<%[1]dx%[3]dxbf16>
  %%1 = "graph.add"(%%0, %%b) : (tensor<%[1]dx%[3]dxbf16>, tensor<%[3]dxbf16>) -> tensor<%[1]dx%[3]dxbf16>
  %%2 = "graph.gelu"(%%1) <{approximate = "tanh"}> : (tensor<%[1]dx%[3]dxbf16>) -> tensor<%[1]dx%[3]dxbf16>
  return %%2 : tensor<%[1]dx%[3]dxbf16>
}`, m, k, n)
			p := mmaProgram(t, src)
			args := []interp.Value{randomBF16(t, rng, m, k), randomBF16(t, rng, k, n), randomBF16(t, rng, n)}
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			// One bf16 ulp: the sums differ from the interpreter's only in
			// f32 rounding order, which can move the bf16 result by one.
			compare(t, p, args, got, 1.0/128)
		})
	}
	b, h, s, d := 1+rng.Int64N(3), 1+rng.Int64N(3), 1+rng.Int64N(200), 8*(1+rng.Int64N(12))
	t.Run(fmt.Sprintf("q-kT/%dx%dx%dx%d", b, h, s, d), func(t *testing.T) {
		q := fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", b, h, s, d)
		sc := fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", b, h, s, s)
		src := fmt.Sprintf(`func.func @main(%%q: %[1]s, %%k: %[1]s) -> %[2]s {
  %%t = "graph.transpose"(%%k) <{perm = array<i64: 0, 1, 3, 2>}> : (%[1]s) -> %[3]s
  %%0 = "graph.matmul"(%%q, %%t) : (%[1]s, %[3]s) -> %[2]s
  return %%0 : %[2]s
}`, q, sc, fmt.Sprintf("tensor<%dx%dx%dx%dxbf16>", b, h, d, s))
		p := mmaProgram(t, src)
		args := []interp.Value{randomBF16(t, rng, b, h, s, d), randomBF16(t, rng, b, h, s, d)}
		got, err := p.Run(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, p, args, got, 1.0/128)
	})
}
