// Command models trains and runs the models of examples/ built with
// packages nn and optim:
//
//	go run ./examples/models cnn      # train the small CNN on synthetic data
//	go run ./examples/models resnet   # a tiny ResNet (bottlenecks) on 32×32 images
//	go run ./examples/models gpt2     # train the toy GPT-2, then decode greedily with a KV cache
//
// -backend picks the frontend backend of every compiled step (default:
// nvptx where a GPU is present, else the interpreter; gradients default
// to aot_eager).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/strata-ir/strata/examples/cnn"
	"github.com/strata-ir/strata/examples/gpt2"
	"github.com/strata-ir/strata/examples/resnet"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
	"github.com/strata-ir/strata/optim"
)

func main() {
	backend := flag.String("backend", "", "frontend backend of the compiled steps")
	steps := flag.Int("steps", 20, "training steps")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: models [-backend B] [-steps N] cnn|resnet|gpt2")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), frontend.Options{Backend: *backend}, *steps); err != nil {
		fmt.Fprintln(os.Stderr, "models:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, model string, opts frontend.Options, steps int) error {
	switch model {
	case "cnn":
		fmt.Fprintf(w, "small CNN %+v, SGD with momentum\n", cnn.Tiny)
		_, _, err := cnn.Train(w, cnn.Tiny, steps, 0.05, opts)
		return err
	case "resnet":
		m := resnet.New(resnet.Tiny)
		fmt.Fprintln(w, resnet.Tiny)
		g := nn.NewRNG(1)
		x, y := g.Normal(1, 4, 3, 32, 32), g.Int64s(resnet.Tiny.Classes, 4)
		return train(w, m, m.Loss, x, y, steps, opts, false)
	case "gpt2":
		cfg := gpt2.Toy
		m := gpt2.New(cfg)
		fmt.Fprintf(w, "GPT-2 %+v: %d parameters\n", cfg, gpt2.ParamCount(cfg))
		xs, ys := make([]int64, 2*8), make([]int64, 2*8)
		for i := range xs {
			xs[i], ys[i] = int64(i*5%cfg.Vocab), int64((i+1)*5%cfg.Vocab)
		}
		if err := train(w, m, m.Loss, frontend.FromSlice(xs, 2, 8), frontend.FromSlice(ys, 2, 8), steps, opts, true); err != nil {
			return err
		}
		gen, err := gpt2.NewGenerator(gpt2.NewDecoder(m, 1, frontend.Float32), opts)
		if err != nil {
			return err
		}
		toks, _, err := gen.Generate(frontend.FromSlice(xs[:4], 1, 4), 8)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "prompt %v -> greedy %v\n", xs[:4], toks[0])
		return nil
	}
	return fmt.Errorf("unknown model %q (want cnn, resnet or gpt2)", model)
}

func train(w io.Writer, m any, loss func(...*frontend.Tensor) []*frontend.Tensor, x, y *frontend.Tensor, steps int, opts frontend.Options, adam bool) error {
	gopts := opts
	if gopts.Backend == "" {
		gopts.Backend = frontend.AOTEagerBackend
	}
	step := nn.NewGradStep(m, loss, 2, gopts)
	var opt optim.Optimizer
	var err error
	if adam {
		opt, err = optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 1e-2, WeightDecay: 0.01}, opts)
	} else {
		opt, err = optim.NewSGD(step.Params(), optim.SGDConfig{LR: 0.05, Momentum: 0.9}, opts)
	}
	if err != nil {
		return err
	}
	for i := range steps {
		v, grads, err := step.Call(x, y)
		if err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		fmt.Fprintf(w, "step %3d: loss %.4f\n", i, v[0].Item())
		if err := opt.Step(grads); err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	return nil
}
