package bench

import (
	"fmt"
	"testing"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/examples/gpt2"
	"github.com/strata-ir/strata/examples/resnet"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/runtime/interp"
)

// hostOnlyBackend compiles nothing: its executables return zeros of the
// graph's result types, made once, without reading their inputs. A call
// through it costs only the frontend's own host work (tracing or
// replaying the Go code, the cache, the write-backs), which is what
// BenchmarkTrainStepHost measures; its values are meaningless.
type hostOnlyBackend struct{}

func (hostOnlyBackend) Compile(g *frontend.Graph) (frontend.Executable, error) {
	var results []ir.Type
	g.Module.Walk(func(op *ir.Operation) bool {
		if op.Name() == funcs.OpFunc && ir.SymbolName(op) == g.Func {
			results = funcs.Type(op).Results
			return false
		}
		return true
	})
	out := make([]*interp.Tensor, len(results))
	for i, r := range results {
		tt, ok := r.(*ir.TensorType)
		if !ok {
			return nil, fmt.Errorf("hostOnlyBackend: result %d of %s is %s, not a tensor", i, g.Func, r)
		}
		var err error
		if out[i], err = interp.NewTensor(tt.ElementType(), tt.Shape()); err != nil {
			return nil, fmt.Errorf("hostOnlyBackend: result %d of %s: %w", i, g.Func, err)
		}
	}
	return frontend.ExecutableFunc(func([]*interp.Tensor) ([]*interp.Tensor, error) { return out, nil }), nil
}

// BenchmarkTrainStepHost measures the host time of a training row's
// gradient step (nn.GradStep, bf16 mixed precision as the rows run it) on
// the frontend alone: every call after the first, whose executables
// return zeros at once (hostOnlyBackend). The graphs are the rows' own;
// the sizes are small, since the host work depends on the ops, not on
// their sizes: ResNet-50 on 2 images of 32×32, GPT-2 124M on 1 sequence
// of 8 tokens, and the tiny configurations the tests train.
func BenchmarkTrainStepHost(b *testing.B) {
	frontend.RegisterBackend("host-only", hostOnlyBackend{})
	opts := frontend.Options{Backend: "host-only"}
	rows := []struct {
		name string
		make func() (*nn.GradStep, *frontend.Tensor, *frontend.Tensor)
	}{
		{"resnet_tiny", func() (*nn.GradStep, *frontend.Tensor, *frontend.Tensor) { return resnetStep(resnet.Tiny, 4, opts) }},
		{"resnet50", func() (*nn.GradStep, *frontend.Tensor, *frontend.Tensor) { return resnetStep(resnet.ResNet50, 2, opts) }},
		{"gpt2_toy", func() (*nn.GradStep, *frontend.Tensor, *frontend.Tensor) { return gpt2Step(gpt2.Toy, 2, 8, opts) }},
		{"gpt2_small", func() (*nn.GradStep, *frontend.Tensor, *frontend.Tensor) { return gpt2Step(gpt2.GPT2Small, 1, 8, opts) }},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			step, x, y := r.make()
			if _, _, err := step.Call(x, y); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := step.Call(x, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func resnetStep(cfg resnet.Config, batch int, opts frontend.Options) (*nn.GradStep, *frontend.Tensor, *frontend.Tensor) {
	m := resnet.New(cfg)
	g := nn.NewRNG(10)
	x, y := ready(g.Normal(1, batch, 3, 32, 32), g.Int64s(cfg.Classes, batch))
	return nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts), x, y
}

func gpt2Step(cfg gpt2.Config, batch, seq int, opts frontend.Options) (*nn.GradStep, *frontend.Tensor, *frontend.Tensor) {
	m := gpt2.New(cfg)
	g := nn.NewRNG(9)
	x, y := ready(tokens(g, cfg.Vocab, batch, seq), tokens(g, cfg.Vocab, batch, seq))
	return nn.NewGradStep(m, m.MixedLoss(frontend.BFloat16), 2, opts), x, y
}
