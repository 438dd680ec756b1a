package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/nn"
	"pgregory.net/rapid"
)

// rapidTransformer is a small transformer language model of a user's
// own writing (not examples/gpt2): token and position embeddings, blocks
// of separate q, k, v projections and frontend.Attention (causal or
// not, a padding mask or not, keys and values shared by the heads or
// not, a scale of its own or the default), pre- or post-norm, a GELU or
// SiLU MLP, and a head tied to the token embedding or its own.
type rapidTransformer struct {
	Wte    *nn.Embedding
	Wpe    *frontend.Tensor
	Blocks []*rapidBlock
	LnF    *nn.LayerNorm
	Head   *nn.Linear
	cfg    transformerPlan
}

type rapidBlock struct {
	Ln1, Ln2   *nn.LayerNorm
	Q, K, V, O *nn.Linear
	Fc, Proj   *nn.Linear
}

// transformerPlan is a drawn architecture.
type transformerPlan struct {
	vocab, d, heads, layers, hidden int
	b, t                            int
	causal, sharedKV, preNorm, tied bool
	silu                            bool
	scale                           float64
	// lens are the sequences' lengths under a padding mask (nil: none).
	lens []int
}

func (p transformerPlan) String() string {
	return fmt.Sprintf("v%d d%d h%d (dh %d) l%d hid%d b%d t%d causal=%v sharedKV=%v preNorm=%v tied=%v silu=%v scale=%g lens=%v",
		p.vocab, p.d, p.heads, p.d/p.heads, p.layers, p.hidden, p.b, p.t, p.causal, p.sharedKV, p.preNorm, p.tied, p.silu, p.scale, p.lens)
}

// drawTransformer draws a plan; in a default run (not testsize.Long) of
// up to two layers and 20 tokens.
func drawTransformer(rt *rapid.T) transformerPlan {
	layers, seq := 3, 40
	if !testsize.Long() {
		layers, seq = 2, 20
	}
	dh := rapid.SampledFrom([]int{8, 16, 24, 32, 40, 48, 64, 80, 96}).Draw(rt, "head dim")
	p := transformerPlan{
		vocab: rapid.IntRange(2, 70).Draw(rt, "vocab"), heads: rapid.IntRange(1, 3).Draw(rt, "heads"),
		layers: rapid.IntRange(1, layers).Draw(rt, "layers"),
		b:      rapid.IntRange(1, 3).Draw(rt, "batch"), t: rapid.IntRange(1, seq).Draw(rt, "seq"),
		causal: rapid.Bool().Draw(rt, "causal"), sharedKV: rapid.Bool().Draw(rt, "shared kv"),
		preNorm: rapid.Bool().Draw(rt, "pre-norm"), tied: rapid.Bool().Draw(rt, "tied head"),
		silu: rapid.Bool().Draw(rt, "silu"),
	}
	p.d = dh * p.heads
	p.hidden = rapid.IntRange(1, 3*p.d).Draw(rt, "hidden")
	if rapid.Bool().Draw(rt, "own scale") {
		p.scale = rapid.Float64Range(0.05, 1).Draw(rt, "scale")
	}
	if rapid.Bool().Draw(rt, "padding mask") {
		for range p.b {
			p.lens = append(p.lens, rapid.IntRange(1, p.t).Draw(rt, "length"))
		}
	}
	return p
}

func newTransformer(p transformerPlan, seed uint64) *rapidTransformer {
	g := nn.NewRNG(seed)
	lin := func(in, out int) *nn.Linear {
		l := nn.NewLinear(g, in, out, true)
		l.Bias = g.Uniform(-0.2, 0.2, out)
		return l
	}
	ln := func() *nn.LayerNorm {
		l := nn.NewLayerNorm(p.d)
		l.Weight, l.Bias = g.Uniform(0.5, 1.5, p.d), g.Uniform(-0.3, 0.3, p.d)
		return l
	}
	m := &rapidTransformer{Wte: nn.NewEmbedding(g, p.vocab, p.d, 1), Wpe: g.Normal(0.5, p.t, p.d), LnF: ln(), cfg: p}
	kv := p.d
	if p.sharedKV {
		kv = p.d / p.heads
	}
	for range p.layers {
		blk := &rapidBlock{Ln1: ln(), Ln2: ln(), Q: lin(p.d, p.d), K: lin(p.d, kv), V: lin(p.d, kv), O: lin(p.d, p.d),
			Fc: lin(p.d, p.hidden), Proj: lin(p.hidden, p.d)}
		// Weights large enough that attention is far from uniform.
		blk.Q.Weight = g.Uniform(-2/math.Sqrt(float64(p.d)), 2/math.Sqrt(float64(p.d)), p.d, p.d)
		m.Blocks = append(m.Blocks, blk)
	}
	if !p.tied {
		m.Head = lin(p.d, p.vocab)
	}
	return m
}

// mask is the padding mask [B, 1, 1, T] (keys past a sequence's length
// are hidden), or nil.
func (p transformerPlan) mask() *frontend.Tensor {
	if p.lens == nil {
		return nil
	}
	keep := make([]bool, p.b*p.t)
	for b, n := range p.lens {
		for j := range n {
			keep[b*p.t+j] = true
		}
	}
	return frontend.FromSlice(keep, p.b, 1, 1, p.t)
}

// Logits maps tokens [B, T] to logits [B·T, vocab].
func (m *rapidTransformer) Logits(idx *frontend.Tensor) *frontend.Tensor {
	p := m.cfg
	dh := p.d / p.heads
	x := m.Wte.Forward(idx).Add(m.Wpe.Reshape(1, p.t, p.d)).Reshape(p.b*p.t, p.d)
	heads := func(y *frontend.Tensor, h int) *frontend.Tensor {
		return y.Reshape(p.b, p.t, h, dh).Transpose(0, 2, 1, 3)
	}
	mask := p.mask()
	for _, blk := range m.Blocks {
		attn := func(x *frontend.Tensor) *frontend.Tensor {
			kvh := p.heads
			if p.sharedKV {
				kvh = 1
			}
			o := frontend.Attention(heads(blk.Q.Forward(x), p.heads), heads(blk.K.Forward(x), kvh), heads(blk.V.Forward(x), kvh),
				frontend.AttentionOptions{Causal: p.causal, Scale: p.scale, Mask: mask})
			return blk.O.Forward(o.Transpose(0, 2, 1, 3).Reshape(p.b*p.t, p.d))
		}
		mlp := func(x *frontend.Tensor) *frontend.Tensor {
			h := blk.Fc.Forward(x)
			if p.silu {
				h = nn.SiLU{}.Forward(h)
			} else {
				h = nn.GELU{Approximate: "tanh"}.Forward(h)
			}
			return blk.Proj.Forward(h)
		}
		if p.preNorm {
			x = x.Add(attn(blk.Ln1.Forward(x)))
			x = x.Add(mlp(blk.Ln2.Forward(x)))
		} else {
			x = blk.Ln1.Forward(x.Add(attn(x)))
			x = blk.Ln2.Forward(x.Add(mlp(x)))
		}
	}
	x = m.LnF.Forward(x)
	if p.tied {
		return x.MatMul(m.Wte.Weight.Transpose(1, 0))
	}
	return m.Head.Forward(x)
}

// TestTransformersRapid draws small transformers (drawTransformer: head
// dims 8–96, one to three layers, odd sequence lengths, causal or not,
// padding masks, keys and values shared by the heads, tied heads) and
// checks on every model path the logits in float32 and with bf16
// weights against the eager float64 model, and in float32 a training
// step's loss (cross-entropy with label smoothing) and gradients. A
// default run takes the interpreter and one of the GPU paths a check, in
// turn (the cpu path's LLVM compiles of a transformer's gradient take
// 10 s: under testsize.Long, or named by -paths).
func TestTransformersRapid(t *testing.T) {
	var rotation []int // the paths a default run takes in turn
	for i, p := range modelPaths {
		if i > 0 && p.name != "cpu" {
			rotation = append(rotation, i)
		}
	}
	check := 0
	rapid.Check(t, func(rt *rapid.T) {
		check++
		p := drawTransformer(rt)
		dt := rapid.SampledFrom(dtypes).Draw(rt, "dtype")
		smoothing := rapid.SampledFrom([]float64{0, 0.1}).Draw(rt, "label smoothing")
		seed := rapid.Uint64().Draw(rt, "seed")
		rt.Logf("%v %v", p, dt)
		g := nn.NewRNG(seed + 1)
		idx, y := g.Int64s(p.vocab, p.b, p.t), g.Int64s(p.vocab, p.b*p.t)
		loss := func(m *rapidTransformer) func(in ...*frontend.Tensor) []*frontend.Tensor {
			return func(in ...*frontend.Tensor) []*frontend.Tensor {
				logits := m.Logits(in[0])
				return []*frontend.Tensor{nn.CrossEntropy(logits.Cast(frontend.Float32), in[1], smoothing), logits}
			}
		}
		ref := newTransformer(p, seed)
		castModel(rt, ref, dt) // the rounded weights
		castModel(rt, ref, frontend.Float64)
		want := ref.Logits(idx)
		var wantLoss, wantGrads []*frontend.Tensor
		if dt == frontend.Float32 {
			var err error
			ref64 := func(in ...*frontend.Tensor) []*frontend.Tensor {
				logits := ref.Logits(in[0])
				return []*frontend.Tensor{nn.CrossEntropy(logits, in[1], smoothing), logits}
			}
			refStep := nn.NewGradStep(ref, ref64, 2, frontend.Options{Backend: frontend.EagerBackend})
			if wantLoss, wantGrads, err = refStep.Call(idx, y); err != nil {
				rt.Fatalf("eager: %v", err)
			}
			centralDifferences(rt, rand.New(rand.NewPCG(seed, 3)), ref, refStep.Params(), wantGrads, func() float64 {
				return ref64(idx, y)[0].Item()
			})
		}
		var gradTol []float64
		if dt == frontend.Float32 {
			gradTol = gradTols(wantGrads, 2*tolOf(dt))
		}
		macs := p.b * p.t * (p.layers*(4*p.d*p.d+2*p.d*p.hidden+2*p.t*p.d) + p.d*p.vocab)
		for i, path := range modelPaths {
			if !pathSelected(path.name) || !testsize.Long() && *pathsFlag == "" && i > 0 && i != rotation[check%len(rotation)] {
				continue
			}
			work := macs
			if dt == frontend.Float32 {
				work *= 3
			}
			name, skip := path.backend(path.isHeavy(10*work, dt))
			if skip != "" {
				continue
			}
			opts := frontend.Options{Backend: name}
			m := newTransformer(p, seed)
			castModel(rt, m, dt)
			if dt != frontend.Float32 {
				c, err := nn.Compile(m, func(in ...*frontend.Tensor) []*frontend.Tensor { return []*frontend.Tensor{m.Logits(in[0])} }, 1, opts)
				if err != nil {
					rt.Fatalf("%s: %v", path.name, err)
				}
				out, err := c.Call(idx)
				if errors.Is(err, frontend.ErrPTXOnly) {
					continue
				}
				if err != nil {
					rt.Fatalf("%s: %v", path.name, err)
				}
				closeTo(rt, path.name+": logits", out[0], want.Shape(), want.Float64s(), tolOf(dt))
				continue
			}
			s := nn.NewGradStep(m, loss(m), 2, opts)
			got, grads, err := s.Call(idx, y)
			if errors.Is(err, frontend.ErrPTXOnly) {
				continue
			}
			if err != nil {
				rt.Fatalf("%s: %v", path.name, err)
			}
			closeTo(rt, path.name+": logits", got[1], want.Shape(), want.Float64s(), tolOf(dt))
			closeTo(rt, path.name+": loss", got[0], nil, wantLoss[0].Float64s(), tolOf(dt))
			for k, r := range s.Params() {
				closeTo(rt, path.name+": gradient of "+r.Name, grads[k], wantGrads[k].Shape(), wantGrads[k].Float64s(), gradTol[k])
			}
		}
	})
}
