package nn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/strata-ir/strata/examples/gpt2"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
)

// gptShape is a GPT-2 of unusual sizes: head dims 16, 32, 40, 48, 50,
// 64 and 80, vocabularies 97 and 1000.
type gptShape struct{ d, heads, vocab, layers int }

func (s gptShape) String() string {
	return fmt.Sprintf("d%d_h%d_dh%d_v%d_l%d", s.d, s.heads, s.d/s.heads, s.vocab, s.layers)
}

var gptShapes = []gptShape{
	{48, 3, 97, 2}, {96, 3, 1000, 1}, {200, 4, 97, 1}, {96, 6, 97, 1},
	{48, 1, 1000, 1}, {120, 3, 97, 1}, {192, 3, 97, 1}, {160, 2, 1000, 1},
}

// seqShape is a batch of token sequences: B × T.
type seqShape struct{ b, t int }

var seqShapes = []seqShape{{1, 1}, {2, 7}, {1, 17}, {1, 100}, {3, 17}}

// newGPT returns the model of s for sequences of up to ctx tokens, with
// attention weights large enough that attention is far from uniform.
func newGPT(s gptShape, ctx int, seed uint64) *gpt2.Model {
	m := gpt2.New(gpt2.Config{Vocab: s.vocab, Ctx: ctx, D: s.d, Heads: s.heads, Layers: s.layers, Seed: seed})
	g := nn.NewRNG(seed + 1)
	a := 2 / math.Sqrt(float64(s.d))
	for _, b := range m.H {
		b.Attn.CAttn.Weight = g.Uniform(-a, a, s.d, 3*s.d)
		b.Ln1.Weight, b.Ln2.Bias = g.Uniform(0.5, 1.5, s.d), g.Uniform(-0.5, 0.5, s.d)
	}
	return m
}

// macs is the work of a forward pass of s on sequences sh (its
// products, attention included).
func (s gptShape) macs(sh seqShape) int {
	return sh.b*sh.t*(s.layers*12*s.d*s.d+s.vocab*s.d) + sh.b*s.layers*2*sh.t*sh.t*s.d
}

// gptTokens returns tokens [B, T] and next-token targets drawn from
// seed.
func gptTokens(seed uint64, vocab int, sh seqShape) (x, y *frontend.Tensor) {
	g := nn.NewRNG(seed)
	return g.Int64s(vocab, sh.b, sh.t), g.Int64s(vocab, sh.b, sh.t)
}

// castModel casts m's parameters to dt.
func castModel(t tb, m any, dt frontend.DType) {
	t.Helper()
	if err := nn.Cast(m, dt); err != nil {
		t.Fatalf("%v", err)
	}
}

// gptCases yields the covered (shape, sequences, dtype) triples; in a
// default run, when half, of every other shape only.
func gptCases(t *testing.T, half bool, run func(t *testing.T, i int, s gptShape, sh seqShape, dt frontend.DType)) {
	cols := len(seqShapes) * len(dtypes)
	cover := testsize.Cover(len(gptShapes), cols, nil)
	for i, s := range gptShapes {
		for j := range cols {
			if !cover(i, j) || half && !testsize.Long() && i%2 == 1 {
				continue
			}
			sh, dt := seqShapes[j/len(dtypes)], dtypes[j%len(dtypes)]
			t.Run(fmt.Sprintf("%v/b%d_t%d/%v", s, sh.b, sh.t, dt), func(t *testing.T) { run(t, i*cols+j, s, sh, dt) })
		}
	}
}

// TestShapesGPT2Logits runs GPT-2 models of unusual sizes forward (in
// float32, and with bf16 parameters) on every model path against the
// eager float64 model.
func TestShapesGPT2Logits(t *testing.T) {
	gptCases(t, false, func(t *testing.T, seed int, s gptShape, sh seqShape, dt frontend.DType) {
		ctx := sh.t + 3
		idx, _ := gptTokens(uint64(seed), s.vocab, sh)
		ref := newGPT(s, ctx, uint64(seed))
		castModel(t, ref, dt) // the reference sees the rounded weights
		castModel(t, ref, frontend.Float64)
		want := ref.Logits(idx)
		wantData := want.Float64s()
		forPaths(t, s.macs(sh), dt, func(t *testing.T, opts frontend.Options) {
			m := newGPT(s, ctx, uint64(seed))
			castModel(t, m, dt)
			c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Logits(in[0])} }, 1, opts)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Call(idx)
			called(t, "logits", err)
			closeTo(t, "logits", out[0], want.Shape(), wantData, tolOf(dt))
		})
	})
}

// TestShapesGPT2TrainStep runs a training step (the loss's gradients,
// in float32 or under bf16 autocast, then AdamW) of GPT-2 models of
// unusual sizes on every model path: the loss and gradients against the
// eager float64 model's, the AdamW update against its formula applied in
// float64 to the path's own gradients.
func TestShapesGPT2TrainStep(t *testing.T) {
	gptCases(t, true, func(t *testing.T, seed int, s gptShape, sh seqShape, dt frontend.DType) {
		ctx := sh.t + 2
		x, y := gptTokens(uint64(seed), s.vocab, sh)
		ref := newGPT(s, ctx, uint64(seed))
		castModel(t, ref, frontend.Float64)
		refStep := nn.NewGradStep(ref, ref.Loss, 2, frontend.Options{Backend: frontend.EagerBackend})
		wantLoss, wantGrads, err := refStep.Call(x, y)
		if err != nil {
			t.Fatal(err)
		}
		forPaths(t, 3*s.macs(sh), dt, func(t *testing.T, opts frontend.Options) {
			m := newGPT(s, ctx, uint64(seed))
			loss := m.Loss
			if dt != frontend.Float32 {
				loss = m.MixedLoss(dt)
			}
			step := nn.NewGradStep(m, loss, 2, opts)
			got, grads, err := step.Call(x, y)
			called(t, "training step", err)
			closeTo(t, "loss", got[0], nil, wantLoss[0].Float64s(), tolOf(dt))
			for i, p := range step.Params() {
				closeTo(t, "gradient of "+p.Name, grads[i], wantGrads[i].Shape(), wantGrads[i].Float64s(), 2*tolOf(dt))
			}
			checkAdamW(t, step.Params(), grads, opts)
		})
	})
}

// checkAdamW takes one AdamW step on params with grads, compiled with
// opts, and checks the new parameters against the update computed in
// float64 from the same parameters and gradients.
func checkAdamW(t *testing.T, params []nn.Ref, grads []*frontend.Tensor, opts frontend.Options) {
	t.Helper()
	const lr, wd, b1, b2, eps = 1e-2, 0.1, 0.9, 0.95, 1e-8
	before := make([][]float64, len(params))
	for i, p := range params {
		before[i] = p.Tensor().Float64s()
	}
	gs := make([][]float64, len(grads))
	for i, g := range grads {
		gs[i] = g.Float64s()
	}
	opt, err := optim.NewAdamW(params, optim.AdamWConfig{LR: lr, WeightDecay: wd, Beta1: b1, Beta2: b2, Eps: eps}, opts)
	if err != nil {
		t.Fatal(err)
	}
	called(t, "AdamW step", opt.Step(grads))
	c1, c2 := 1/(1-b1), 1/math.Sqrt(1-b2)
	for i, p := range params {
		want := make([]float64, len(before[i]))
		for j, w := range before[i] {
			g := gs[i][j]
			m, v := (1-b1)*g, (1-b2)*g*g
			want[j] = w*(1-lr*wd) - lr*c1*m/(math.Sqrt(v)*c2+eps)
		}
		closeTo(t, "AdamW update of "+p.Name, p.Tensor(), p.Tensor().Shape(), want, 1e-5)
	}
}

// TestShapesGPT2Decode prefills a KV cache of odd length with a prompt
// and decodes token by token to its end on every model path; each
// step's logits are checked against the eager float64 model run on the
// whole sequence so far.
func TestShapesGPT2Decode(t *testing.T) {
	gptCases(t, true, func(t *testing.T, seed int, s gptShape, sh seqShape, dt frontend.DType) {
		prompt := sh.t
		ctx := prompt + 4 // the cache's length: 5, 11, 21, 104
		if !testsize.Long() && prompt > 20 {
			prompt, ctx = 9, 13
		}
		all, _ := gptTokens(uint64(seed), s.vocab, seqShape{sh.b, ctx})
		ref := newGPT(s, ctx, uint64(seed))
		castModel(t, ref, dt)
		castModel(t, ref, frontend.Float64)
		full := ref.Logits(all).Float64s() // [B, ctx, V]
		at := func(pos int) []float64 {
			out := make([]float64, 0, sh.b*s.vocab)
			for b := range sh.b {
				row := (b*ctx + pos) * s.vocab
				out = append(out, full[row:row+s.vocab]...)
			}
			return out
		}
		forPaths(t, s.macs(seqShape{sh.b, prompt})+(ctx-prompt)*s.macs(seqShape{sh.b, 1}), dt, func(t *testing.T, opts frontend.Options) {
			m := newGPT(s, ctx, uint64(seed))
			castModel(t, m, dt)
			d := gpt2.NewDecoder(m, sh.b, dt)
			pf, err := nn.Compile(d, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{d.Prefill(in[0])} }, 1, opts)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := nn.Compile(d, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{d.Decode(in[0], in[1])} }, 2, opts)
			if err != nil {
				t.Fatal(err)
			}
			out, err := pf.Call(all.Slice([]int{0, 0}, []int{sh.b, prompt}, nil))
			called(t, "prefill", err)
			closeTo(t, "prefill logits", out[0], []int{sh.b, s.vocab}, at(prompt-1), tolOf(dt))
			for pos := prompt; pos < ctx; pos++ {
				tok := all.Slice([]int{0, pos}, []int{sh.b, pos + 1}, nil)
				out, err := dec.Call(tok, frontend.FromSlice([]int64{int64(pos)}, []int{}...))
				called(t, fmt.Sprintf("decode at %d", pos), err)
				closeTo(t, fmt.Sprintf("decode logits at %d", pos), out[0], []int{sh.b, s.vocab}, at(pos), tolOf(dt))
			}
		})
	})
}

// TestShapesGPT2DynamicPrefill compiles a GPT-2's logits once for every
// sequence length (gpt2.DynamicPrefill: the tokens' length symbolic) and
// runs it at odd lengths on every model path against the eager float64
// model.
func TestShapesGPT2DynamicPrefill(t *testing.T) {
	shapes := []gptShape{gptShapes[2], gptShapes[5]} // head dims 50 and 40
	lengths := []int{7, 17, 1}
	if testsize.Long() {
		shapes, lengths = gptShapes, []int{7, 17, 1, 100, 33}
	}
	for i, s := range shapes {
		for _, dt := range dtypes {
			t.Run(fmt.Sprintf("%v/%v", s, dt), func(t *testing.T) {
				const b = 2
				ctx := slices.Max(lengths) + 1
				ref := newGPT(s, ctx, uint64(i))
				castModel(t, ref, dt)
				castModel(t, ref, frontend.Float64)
				macs := 0
				for _, n := range lengths {
					macs += s.macs(seqShape{b, n})
				}
				forPaths(t, macs, dt, func(t *testing.T, opts frontend.Options) {
					m := newGPT(s, ctx, uint64(i))
					castModel(t, m, dt)
					p, err := gpt2.NewDynamicPrefill(m, opts)
					if err != nil {
						t.Fatal(err)
					}
					for _, n := range lengths {
						idx, _ := gptTokens(uint64(n), s.vocab, seqShape{b, n})
						want := ref.Logits(idx)
						out, err := p.Call(idx)
						called(t, fmt.Sprintf("length %d", n), err)
						closeTo(t, fmt.Sprintf("logits at length %d", n), out, want.Shape(), want.Float64s(), tolOf(dt))
					}
				})
			})
		}
	}
}
