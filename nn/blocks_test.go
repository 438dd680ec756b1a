package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/runtime/interp"
	"pgregory.net/rapid"
)

// refSelfAttention is GPT-2's attention on x [B, T, d] in float64 loops.
func refSelfAttention(t tb, a *nn.CausalSelfAttention, x *nd) []float64 {
	b, tt, d := x.shape[0], x.shape[1], x.shape[2]
	h, dh := a.Heads, d/a.Heads
	qkv := refMatmul(x.data, b*tt, d, ndOf(t, a.CAttn.Weight).data, 3*d, ndOf(t, a.CAttn.Bias).data)
	q, k, v := newND(b, h, tt, dh), newND(b, h, tt, dh), newND(b, h, tt, dh)
	for i := range b {
		for s := range tt {
			for hh := range h {
				for e := range dh {
					row := qkv[(i*tt+s)*3*d:]
					q.set(row[hh*dh+e], i, hh, s, e)
					k.set(row[d+hh*dh+e], i, hh, s, e)
					v.set(row[2*d+hh*dh+e], i, hh, s, e)
				}
			}
		}
	}
	o := refCausalAttention(q, k, v)
	merged := make([]float64, b*tt*d)
	for i := range b {
		for s := range tt {
			for hh := range h {
				for e := range dh {
					merged[(i*tt+s)*d+hh*dh+e] = o.at(i, hh, s, e)
				}
			}
		}
	}
	return refMatmul(merged, b*tt, d, ndOf(t, a.CProj.Weight).data, d, ndOf(t, a.CProj.Bias).data)
}

func TestCausalSelfAttention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rng(rt)
		heads := rapid.IntRange(1, 3).Draw(rt, "heads")
		d := heads * rapid.IntRange(1, 3).Draw(rt, "dh")
		b, tt := rapid.IntRange(1, 2).Draw(rt, "b"), rapid.IntRange(1, 5).Draw(rt, "t")
		a := nn.NewCausalSelfAttention(nn.NewRNG(r.Uint64()), d, heads, 1)
		// Larger weights than GPT-2's 0.02, so that attention is not uniform.
		g := nn.NewRNG(r.Uint64())
		a.CAttn.Weight, a.CAttn.Bias = g.Uniform(-1, 1, d, 3*d), g.Uniform(-1, 1, 3*d)
		x := randND(r, b, tt, d)
		near(rt, "attention", a.Forward(tensor(x, frontend.Float32)), x.shape, refSelfAttention(rt, a, x), 1e-4)
		gradCheck(rt, r, a, a.Forward, tensor(x, frontend.Float64), true)
	})
}

// TestCausalSelfAttentionMasked checks the forms that keep the sequence
// length symbolic (weight slices, and the causal flag or an explicit
// causal mask from the positions) against the float64 reference, on rows
// [B·T, d].
func TestCausalSelfAttentionMasked(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rng(rt)
		heads := rapid.IntRange(1, 3).Draw(rt, "heads")
		d := heads * rapid.IntRange(1, 3).Draw(rt, "dh")
		b, tt := rapid.IntRange(1, 2).Draw(rt, "b"), rapid.IntRange(1, 5).Draw(rt, "t")
		a := nn.NewCausalSelfAttention(nn.NewRNG(r.Uint64()), d, heads, 1)
		g := nn.NewRNG(r.Uint64())
		a.CAttn.Weight, a.CAttn.Bias = g.Uniform(-1, 1, d, 3*d), g.Uniform(-1, 1, 3*d)
		x := randND(r, b, tt, d)
		rows := tensor(x, frontend.Float32).Reshape(b*tt, d)
		keep := nn.CausalMask(frontend.Arange(tt))
		want := refSelfAttention(rt, a, x)
		got := a.ForwardRowsMasked(rows, frontend.Sz(b), frontend.Sz(tt), keep).Reshape(b, tt, d)
		near(rt, "masked attention", got, x.shape, want, 1e-4)
		got = a.ForwardRowsCausal(rows, frontend.Sz(b), frontend.Sz(tt)).Reshape(b, tt, d)
		near(rt, "causal attention", got, x.shape, want, 1e-4)
	})
}

func TestCausalMaskErrors(t *testing.T) {
	if err := nn.CausalMask(frontend.Zeros(frontend.Int64, 2, 2)).Err(); err == nil {
		t.Error("CausalMask of a [2, 2] tensor: no error")
	}
	a := nn.NewCausalSelfAttention(nn.NewRNG(1), 4, 2, 1)
	keep := nn.CausalMask(frontend.Arange(3))
	if err := a.ForwardRowsMasked(frontend.Zeros(frontend.Float32, 3, 5), frontend.Sz(1), frontend.Sz(3), keep).Err(); err == nil {
		t.Error("rows of width 5 for a layer of width 4: no error")
	}
	if got := fmt.Sprint(keep.Shape()); got != "[1 1 3 3]" {
		t.Errorf("mask shape %s", got)
	}
	if got := fmt.Sprint(keep.Reshape(9).Float64s()); got != "[1 0 0 1 1 0 1 1 1]" {
		t.Errorf("mask %s, want the lower triangle", got)
	}
}

// TestGPT2Block checks the block against its parts' references and its
// gradients against central differences.
func TestGPT2Block(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	g := nn.NewRNG(13)
	blk := nn.NewGPT2Block(g, 8, 2, 2)
	blk.Ln1.Weight, blk.Ln2.Bias = g.Uniform(0.5, 1.5, 8), g.Uniform(-0.5, 0.5, 8)
	x := randND(r, 2, 3, 8)
	// x + attn(ln_1(x)), then + mlp(ln_2(·)).
	h := &nd{shape: x.shape, data: refLayerNorm(x.data, 8, ndOf(t, blk.Ln1.Weight).data, ndOf(t, blk.Ln1.Bias).data, 1e-5)}
	att := refSelfAttention(t, blk.Attn, h)
	x1 := make([]float64, len(x.data))
	for i := range x1 {
		x1[i] = x.data[i] + att[i]
	}
	h2 := refLayerNorm(x1, 8, ndOf(t, blk.Ln2.Weight).data, ndOf(t, blk.Ln2.Bias).data, 1e-5)
	fc := refMatmul(h2, 6, 8, ndOf(t, blk.MLP.CFc.Weight).data, 32, ndOf(t, blk.MLP.CFc.Bias).data)
	for i, v := range fc {
		fc[i] = geluTanh(v)
	}
	mlp := refMatmul(fc, 6, 32, ndOf(t, blk.MLP.CProj.Weight).data, 8, ndOf(t, blk.MLP.CProj.Bias).data)
	for i := range x1 {
		x1[i] += mlp[i]
	}
	near(t, "gpt2 block", blk.Forward(tensor(x, frontend.Float32)), x.shape, x1, 1e-4)
	gradCheck(t, r, blk, blk.Forward, tensor(x, frontend.Float64), true)
}

// TestDecodeMatchesFullRecompute: a prompt through Prefill, then tokens
// one by one through Decode with the cache, give the outputs of running
// the whole sequence through Forward.
func TestDecodeMatchesFullRecompute(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	g := nn.NewRNG(23)
	const d, heads, maxLen, prompt, total = 8, 2, 8, 3, 6
	blk := nn.NewGPT2Block(g, d, heads, 1)
	blk.Attn.CAttn.Weight = g.Uniform(-0.5, 0.5, d, 3*d)
	x := tensor(randND(r, 2, total, d), frontend.Float32)
	full := ndOf(t, blk.Forward(x))

	cache := nn.NewKVCache(frontend.Float32, 2, heads, maxLen, d/heads)
	y := ndOf(t, blk.Prefill(x.Slice([]int{0, 0, 0}, []int{2, prompt, d}, nil), cache))
	check := func(pos int, got *nd) {
		t.Helper()
		for b := range 2 {
			for s := range got.shape[1] {
				for e := range d {
					want := full.at(b, pos+s, e)
					if v := got.at(b, s, e); v-want > 1e-5 || want-v > 1e-5 {
						t.Fatalf("position %d, batch %d, feature %d: %g, full recompute %g", pos+s, b, e, v, want)
					}
				}
			}
		}
	}
	check(0, y)
	for pos := prompt; pos < total; pos++ {
		tok := x.Slice([]int{0, pos, 0}, []int{2, pos + 1, d}, nil)
		check(pos, ndOf(t, blk.Decode(tok, frontend.FromSlice([]int64{int64(pos)}, []int{}...), cache)))
		if err := cache.K.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompiledDecodeReadsCachedPositions compiles a block's decoding
// step and runs it at several positions: every call's graph reads one
// positions tensor, the cache's (the same host tensor each call, so a GPU
// backend uploads it once rather than per step and layer), and each step
// matches the eager one.
func TestCompiledDecodeReadsCachedPositions(t *testing.T) {
	const d, heads, maxLen = 8, 2, 6
	g := nn.NewRNG(31)
	blk := nn.NewGPT2Block(g, d, heads, 1)
	ref, ok := frontend.LookupBackend(frontend.InterpBackend)
	if !ok {
		t.Fatal("no interp backend")
	}
	positions := map[any]bool{} // the int64 [maxLen] inputs seen
	name := "recording-" + t.Name()
	frontend.RegisterBackend(name, frontend.BackendFunc(func(gr *frontend.Graph) (frontend.Executable, error) {
		exe, err := ref.Compile(gr)
		if err != nil {
			return nil, err
		}
		return frontend.ExecutableFunc(func(in []*interp.Tensor) ([]*interp.Tensor, error) {
			for _, v := range in {
				if v.ElemType().String() == "i64" && fmt.Sprint(v.Shape()) == fmt.Sprint([]int64{maxLen}) {
					positions[v] = true
				}
			}
			return exe.Run(in)
		}), nil
	}))
	cache := nn.NewKVCache(frontend.Float32, 1, heads, maxLen, d/heads)
	eager := nn.NewKVCache(frontend.Float32, 1, heads, maxLen, d/heads)
	step, err := nn.Compile(cache, func(in ...*frontend.Tensor) []*frontend.Tensor {
		return []*frontend.Tensor{blk.DecodeRows(in[0], in[1], cache)}
	}, 2, frontend.Options{Backend: name})
	if err != nil {
		t.Fatal(err)
	}
	for pos := range 4 {
		x := g.Uniform(-1, 1, 1, d)
		p := frontend.FromSlice([]int64{int64(pos)}, []int{}...)
		got, err := step.Call(x, p)
		if err != nil {
			t.Fatalf("position %d: %v", pos, err)
		}
		want := ndOf(t, blk.DecodeRows(x, p, eager))
		for i, v := range ndOf(t, got[0]).data {
			if diff := v - want.data[i]; diff > 1e-5 || diff < -1e-5 {
				t.Fatalf("position %d, feature %d: compiled %g, eager %g", pos, i, v, want.data[i])
			}
		}
	}
	if len(positions) != 1 {
		t.Errorf("the compiled steps read %d distinct positions tensors, want the cache's one", len(positions))
	}
}
