package frontend_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// attentionBlock splits heads with sizes read from x, attends, merges the
// heads back and projects: the code of a transformer layer.
func attentionBlock(x, wq, wo *frontend.Tensor) *frontend.Tensor {
	const heads = 2
	b, t, c := x.Size(0), x.Size(1), x.Size(2)
	q := x.MatMul(wq).ReshapeS(b, t, frontend.Sz(heads), c.DivInt(heads)).Transpose(0, 2, 1, 3)
	o := frontend.Attention(q, q, q, frontend.AttentionOptions{})
	o = o.Transpose(0, 2, 1, 3).Flatten(2, 3)
	scale := 1 / float32(x.Dim(-1)) // a static size: no specialization
	return o.MatMul(wo).Mul(frontend.Scalar(scale))
}

func TestSymbolicSizesCompileOnce(t *testing.T) {
	for _, be := range withGPU(t, stateBackends) {
		b, name := recording(t, be)
		c := frontend.MustCompile(attentionBlock, frontend.Options{Backend: name})
		wq, wo := frontend.Rand(1, 8, 8), frontend.Rand(2, 8, 8)
		for i, n := range []int{3, 5, 7, 4} {
			x := frontend.MarkDynamic(frontend.Rand(uint64(10+i), 2, n, 8), 1)
			got := call(t, c, x, wq, wo)[0]
			want := attentionBlock(x, wq, wo)
			nearTol(t, fmt.Sprintf("%s T=%d", be, n), got.Float32s(), want.Float32s(), 1e-5)
		}
		b.mu.Lock()
		n := len(b.modules)
		b.mu.Unlock()
		if n != 1 {
			t.Errorf("%s: %d compiles for 4 sequence lengths, want 1", be, n)
		}
		if st := c.Stats(); st.Replays != 3 {
			t.Errorf("%s: stats %+v, want 3 replays", be, st)
		}
	}
}

func TestSizeUsedByGoSpecializes(t *testing.T) {
	fn := func(x *frontend.Tensor) *frontend.Tensor {
		n := x.Size(0)
		if n.Int() > 3 { // Go control flow on a symbolic size
			return x.Neg()
		}
		return x.Flatten(0, 1)
	}
	b, name := recording(t, frontend.InterpBackend)
	c := frontend.MustCompile(fn, frontend.Options{Backend: name, Dynamic: frontend.DynamicTrue})
	for _, n := range []int{2, 5, 2, 5, 3} {
		x := frontend.Rand(uint64(n), n, 2)
		got := call(t, c, x)[0]
		want := fn(x)
		if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
			t.Fatalf("n=%d: shape %v, want %v", n, got.Shape(), want.Shape())
		}
		near(t, got.Float32s(), want.Float32s())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.modules) != 3 {
		t.Errorf("%d compiles, want 3 (one per size read by Go code)", len(b.modules))
	}
}

func TestSizeArithmetic(t *testing.T) {
	s := frontend.Sz(6).Mul(frontend.Sz(2)).DivInt(3).Add(frontend.Sz(1))
	if s.Int() != 5 || s.Symbolic() || s.String() != "5" {
		t.Errorf("size %v", s)
	}
	x := frontend.Zeros(frontend.Float32, 2, 3, 4)
	if got := x.Flatten(1, 2).Shape(); fmt.Sprint(got) != "[2 12]" {
		t.Errorf("Flatten(1, 2) shape %v", got)
	}
	if got := x.Flatten(0, -1).Shape(); fmt.Sprint(got) != "[24]" {
		t.Errorf("Flatten(0, -1) shape %v", got)
	}
	if err := x.Flatten(2, 1).Err(); err == nil {
		t.Errorf("Flatten(2, 1) succeeded")
	}
	if got := frontend.Arange(4).Int64s(); fmt.Sprint(got) != "[0 1 2 3]" {
		t.Errorf("Arange(4) = %v", got)
	}
	if x.Dim(-1) != 4 || x.Dim(5) != 0 || x.Err() == nil {
		t.Errorf("Dim: want 4, then 0 with an error")
	}
}
