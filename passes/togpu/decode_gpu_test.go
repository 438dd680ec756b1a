package togpu_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// TestGPUDecodeAttention (skipped without a GPU) runs a decoding step's
// masked attention (GPT-2: 12 heads of 64, a cache of 1024 positions, the
// first kept ones) at batch 8 with 200 and 1024 positions kept, at batch 1
// with 200, and at batch 1 over a cache of 2048 with 1500 kept (the decode
// kernel split over two blocks a sequence and combined), lowered four
// ways — the decode kernels (graph-attention-to-flash), the products on
// cuBLASLt (the nvptx backend's default without the decode kernels), on
// Strata's tensor-core kernels and on its SIMT kernels — checks each
// against a float64 attention on the host, and with STRATA_DECODE_ATTN set
// times them (the median of three rounds of 100 calls).
func TestGPUDecodeAttention(t *testing.T) {
	rt := openRuntime(t)
	for _, c := range []struct{ b, n, kept int }{{8, 1024, 200}, {8, 1024, 1024}, {1, 1024, 200}, {1, 2048, 1500}} {
		decodeAttentionCase(t, rt, c.b, c.n, c.kept)
	}
}

func decodeAttentionCase(t *testing.T, rt *exec.Runtime, b, n, kept int) {
	const h, d = 12, 64
	rng := rand.New(rand.NewPCG(8, 9))
	draw := func(k int) []float64 {
		vs := make([]float64, k)
		for i := range vs {
			// bf16 values, so that the host reference reads what the GPU does.
			vs[i] = float64(math.Float32frombits(math.Float32bits(float32(2*rng.Float64()-1)) &^ 0xffff))
		}
		return vs
	}
	q, k, v := draw(b*h*d), draw(b*h*n*d), draw(b*h*n*d)
	mask := make([]int64, n)
	for j := range kept {
		mask[j] = 1
	}
	want := make([]float64, b*h*d)
	for bh := range b * h {
		s := make([]float64, kept)
		mx := math.Inf(-1)
		for j := range kept {
			for e := range d {
				s[j] += q[bh*d+e] * k[(bh*n+j)*d+e]
			}
			s[j] /= 8
			mx = max(mx, s[j])
		}
		sum := 0.0
		for j := range s {
			s[j] = math.Exp(s[j] - mx)
			sum += s[j]
		}
		for j := range s {
			for e := range d {
				want[bh*d+e] += s[j] / sum * v[(bh*n+j)*d+e]
			}
		}
	}
	bf := func(vs []float64, shape ...int64) interp.Value {
		x, err := interp.FromFloat64s(ir.BF16, shape, vs)
		if err != nil {
			t.Fatal(err)
		}
		return interp.BufferFromTensor(x)
	}
	m, err := interp.FromInt64s(ir.I1, []int64{1, 1, 1, int64(n)}, mask)
	if err != nil {
		t.Fatal(err)
	}
	bs := int64(b)
	ns := int64(n)
	args := []interp.Value{bf(q, bs, h, 1, d), bf(k, bs, h, ns, d), bf(v, bs, h, ns, d), interp.BufferFromTensor(m)}
	src := decodeProgram([]int64{bs, h}, ns, d, []int64{1, 1, 1, ns}, "bf16", "")
	variants := []struct{ name, pipeline string }{
		{"decode", "builtin.module(" + togpu.FlashPassName + "," + lower.LowerToLoop("matmul-library=true") + ",convert-loop-to-gpu{matmul=" + togpu.MatmulCuBLASLt + "},canonicalize,cse)"},
		{"cublaslt", "builtin.module(" + lower.LowerToLoop("matmul-library=true") + ",convert-loop-to-gpu{matmul=" + togpu.MatmulCuBLASLt + "},canonicalize,cse)"},
		{"mma", "builtin.module(" + lower.LowerToLoop("") + ",convert-loop-to-gpu,canonicalize,cse)"},
		{"simt", "builtin.module(" + lower.LowerToLoop("") + ",convert-loop-to-gpu{tensor-cores=false},canonicalize,cse)"},
	}
	progs := make([]*exec.Program, len(variants))
	for i, vr := range variants {
		mod := lowerGraph(t, src, vr.pipeline)
		t.Logf("b%d n%d kept %d %s: kernels %v", b, n, kept, vr.name, togpu.LaunchMappings(mod))
		p, err := exec.Compile(mod, exec.Options{})
		if err != nil {
			t.Fatalf("%s: %v", vr.name, err)
		}
		got, err := p.Run(rt, "main", args)
		if err != nil {
			t.Errorf("%s: %v", vr.name, err)
			continue
		}
		gt, err := got[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for j, g := range gt.Float64s() {
			worst = max(worst, math.Abs(g-want[j]))
		}
		if !(worst <= 1.0/64) {
			t.Errorf("b%d n%d kept %d %s: largest error %g against the float64 attention", b, n, kept, vr.name, worst)
			continue
		}
		t.Logf("b%d n%d kept %d %s: largest error %.2g", b, n, kept, vr.name, worst)
		progs[i] = p
	}
	if os.Getenv("STRATA_DECODE_ATTN") == "" {
		return
	}
	times := make([][]float64, len(progs))
	for range 3 {
		for i, p := range progs {
			if p == nil {
				continue
			}
			ms, err := p.RunTimed(rt, "main", args, 10, 100)
			if err != nil {
				t.Fatal(err)
			}
			times[i] = append(times[i], ms)
		}
	}
	for i, vr := range variants {
		if progs[i] != nil {
			slices.Sort(times[i])
			t.Logf("TIME decode attention b%d h%d n%d kept %d %-9s %.4f ms (rounds %.4f–%.4f)", b, h, n, kept, vr.name, times[i][1], times[i][0], times[i][2])
		}
	}
}
