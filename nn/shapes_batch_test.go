package nn_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/examples/cnn"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
)

// TestShapesChangingBatch calls one compiled training step of a small
// CNN (batch norm in training mode, label smoothing) and one compiled
// transformer on batches whose size changes from call to call, as a
// training loop's last batch and a server's requests do (DynamicAuto
// marks the batch dim dynamic at the second size; shapes the layers read
// specialize it again), on every model path and, on the device, in
// reduce-overhead mode too (CUDA graphs with static buffers): each
// call's loss, gradients, running statistics and logits against the
// eager float64 model given the same sequence of calls.
func TestShapesChangingBatch(t *testing.T) {
	batches := []int{3, 2, 3, 1}
	cfg := cnn.Config{Batch: 3, Size: 8, InChannels: 3, C1: 4, C2: 6, Classes: 5, Seed: 9}
	type call struct{ x, y *frontend.Tensor }
	var calls []call
	for i, n := range batches {
		g := nn.NewRNG(uint64(40 + i))
		calls = append(calls, call{g.Uniform(-1, 1, n, cfg.InChannels, cfg.Size, cfg.Size), g.Int64s(cfg.Classes, n)})
	}
	loss := func(m *cnn.CNN) func(in ...*frontend.Tensor) []*frontend.Tensor {
		return func(in ...*frontend.Tensor) []*frontend.Tensor {
			return []*frontend.Tensor{nn.CrossEntropy(m.Forward(in[0].Cast(m.FC.Weight.DType())), in[1], 0.1)}
		}
	}
	ref := cnn.New(cfg)
	castModel(t, ref, frontend.Float64)
	refStep := nn.NewGradStep(ref, loss(ref), 2, frontend.Options{Backend: frontend.EagerBackend})
	type result struct {
		loss        []float64
		grads, bufs []*frontend.Tensor
	}
	var want []result
	for _, c := range calls {
		l, g, err := refStep.Call(c.x, c.y)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, result{l[0].Float64s(), g, nn.Tensors(nn.Buffers(ref))})
	}
	for _, mode := range []frontend.Mode{frontend.ModeDefault, frontend.ModeReduceOverhead} {
		t.Run(string(mode), func(t *testing.T) {
			forPaths(t, 3*3*cfg.Size*cfg.Size*9*(cfg.C1*cfg.InChannels+cfg.C2*cfg.C1/4), frontend.Float32, func(t *testing.T, opts frontend.Options) {
				if mode != frontend.ModeDefault && opts.Backend != frontend.NVPTXBackend {
					t.Skip("reduce-overhead changes nothing off the GPU")
				}
				opts.Mode = mode
				m := cnn.New(cfg)
				step := nn.NewGradStep(m, loss(m), 2, opts)
				for i, c := range calls {
					l, grads, err := step.Call(c.x, c.y)
					called(t, fmt.Sprintf("call %d (batch %d)", i, batches[i]), err)
					w := want[i]
					closeTo(t, fmt.Sprintf("call %d: loss", i), l[0], nil, w.loss, tolOf(frontend.Float32))
					gradTol := gradTols(w.grads, 2*tolOf(frontend.Float32))
					for k, p := range step.Params() {
						closeTo(t, fmt.Sprintf("call %d: gradient of %s", i, p.Name), grads[k], w.grads[k].Shape(), w.grads[k].Float64s(), gradTol[k])
					}
					for k, b := range nn.Buffers(m) {
						closeTo(t, fmt.Sprintf("call %d: %s", i, b.Name), b.Tensor(), w.bufs[k].Shape(), w.bufs[k].Float64s(), tolOf(frontend.Float32))
					}
				}
			})
		})
	}
	t.Run("transformer", func(t *testing.T) {
		p := transformerPlan{vocab: 11, d: 32, heads: 2, layers: 1, hidden: 40, causal: true, preNorm: true, tied: true}
		type tcall struct {
			p   transformerPlan
			idx *frontend.Tensor
		}
		var tcalls []tcall
		for i, bt := range [][2]int{{2, 7}, {1, 7}, {2, 5}, {2, 7}, {3, 1}} {
			q := p
			q.b, q.t = bt[0], bt[1]
			tcalls = append(tcalls, tcall{q, nn.NewRNG(uint64(60+i)).Int64s(p.vocab, q.b, q.t)})
		}
		// The position embedding is the model's for 7 tokens; a call on
		// fewer reads its first rows.
		build := func() *rapidTransformer {
			q := p
			q.b, q.t = 1, 7
			return newTransformer(q, 5)
		}
		logits := func(m *rapidTransformer, q transformerPlan, idx *frontend.Tensor) *frontend.Tensor {
			full := m.Wpe
			m.cfg = q
			m.Wpe = full.Slice([]int{0, 0}, []int{q.t, q.d}, nil)
			defer func() { m.Wpe = full }()
			return m.Logits(idx)
		}
		forPaths(t, 200_000, frontend.Float32, func(t *testing.T, opts frontend.Options) {
			m := build()
			ref := build()
			castModel(t, ref, frontend.Float64)
			c, err := frontend.Compile(func(idx *frontend.Tensor) *frontend.Tensor {
				q := p
				q.b, q.t = idx.Shape()[0], idx.Shape()[1]
				return logits(m, q, idx)
			}, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, tc := range tcalls {
				want := logits(ref, tc.p, tc.idx)
				out, err := c.Call(tc.idx)
				called(t, fmt.Sprintf("call %d", i), err)
				closeTo(t, fmt.Sprintf("call %d (b%d t%d): logits", i, tc.p.b, tc.p.t), out[0], want.Shape(), want.Float64s(), tolOf(frontend.Float32))
			}
		})
	})
}
