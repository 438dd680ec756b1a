// Package optim holds optimizers for models built with package nn: SGD
// with momentum (weight decay, Nesterov) and AdamW.
//
// Each Step is ONE compiled graph over every parameter (a fused
// multi-tensor update, as torch.compile compiles optimizer.step): a
// function of the parameters, their gradients, the optimizer's state and
// the per-step scalars (learning rate, bias corrections) that returns the
// new parameters and state. Step writes them into the model's fields
// through the nn.Refs it was given and keeps the state, so a training loop
// reads
//
//	step := nn.NewGradStep(model, loss, 2, opts)
//	opt, _ := optim.NewAdamW(step.Params(), optim.AdamWConfig{LR: 3e-4}, opts)
//	for … {
//		values, grads, err := step.Call(x, y)
//		err = opt.Step(grads)
//	}
//
// The learning rate and the step's bias corrections are tensor inputs of
// the graph, so a schedule that changes them does not recompile.
package optim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/nn"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step applies one update with grads, one per parameter in the order
	// the optimizer was made with.
	Step(grads []*frontend.Tensor) error
	// SetLR changes the learning rate of later steps.
	SetLR(lr float64)
}

// SGDConfig is SGD's hyperparameters (PyTorch's torch.optim.SGD with
// dampening 0): g = grad + WeightDecay·p; buf = Momentum·buf + g; g = g +
// Momentum·buf with Nesterov, else buf; p = p - LR·g.
type SGDConfig struct {
	LR, Momentum, WeightDecay float64
	Nesterov                  bool
}

// AdamWConfig is AdamW's hyperparameters (PyTorch's torch.optim.AdamW):
// p = p·(1 - LR·WeightDecay); m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²;
// p = p - LR·(m/(1-β1ᵗ)) / (√(v/(1-β2ᵗ)) + Eps). Zero Beta1, Beta2 and
// Eps mean 0.9, 0.999 and 1e-8.
type AdamWConfig struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
}

// fused is the compiled multi-tensor update shared by the optimizers.
type fused struct {
	params []nn.Ref
	state  [][]*frontend.Tensor // per state slot, one tensor per parameter
	c      *frontend.Compiled
}

// constants makes an update's constant scalars once per dtype and value.
// A compiled call takes every concrete tensor its function uses as an
// input of the graph, once per distinct tensor, and copies to the device
// only a tensor it did not get last time: a fresh constant per parameter
// and call was one input and one host-to-device copy each (888 a step for
// GPT-2's AdamW), the same tensor every call is one input copied once.
type constants map[constKey]*frontend.Tensor

type constKey struct {
	dt frontend.DType
	v  float64
}

// like returns the constant v of p's dtype.
func (c constants) like(p *frontend.Tensor, v float64) *frontend.Tensor {
	k := constKey{p.DType(), v}
	t, ok := c[k]
	if !ok {
		t = frontend.Full(k.dt, v)
		c[k] = t
	}
	return t
}

// newFused compiles update, which maps (scalars, params, grads, state
// slots) to (new params, new state slots), for n parameters.
func newFused(params []nn.Ref, slots, nScalars int, opts frontend.Options,
	update func(scalars, p, g []*frontend.Tensor, state [][]*frontend.Tensor) (np []*frontend.Tensor, ns [][]*frontend.Tensor)) (*fused, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("optim: no parameters")
	}
	n := len(params)
	f := &fused{params: params, state: make([][]*frontend.Tensor, slots)}
	for i, r := range params {
		t := r.Tensor()
		if err := t.Err(); err != nil {
			return nil, fmt.Errorf("optim: parameter %s: %w", r.Name, err)
		}
		if !t.DType().IsFloat() {
			return nil, fmt.Errorf("optim: parameter %s is %v, want a float type", r.Name, t.DType())
		}
		for s := range slots {
			if i == 0 {
				f.state[s] = make([]*frontend.Tensor, n)
			}
			z := frontend.Zeros(t.DType(), t.Shape()...)
			if t.IsGPU() {
				z = z.ToGPU() // set on the device, not copied from the host
			}
			f.state[s][i] = z
		}
	}
	fn := func(args ...*frontend.Tensor) []*frontend.Tensor {
		sc, rest := args[:nScalars], args[nScalars:]
		p, g := rest[:n], rest[n:2*n]
		st := make([][]*frontend.Tensor, slots)
		for s := range slots {
			st[s] = rest[(2+s)*n : (3+s)*n]
		}
		np, ns := update(sc, p, g, st)
		out := append([]*frontend.Tensor(nil), np...)
		for _, s := range ns {
			out = append(out, s...)
		}
		return out
	}
	c, err := frontend.Compile(fn, opts)
	if err != nil {
		return nil, fmt.Errorf("optim: %w", err)
	}
	f.c = c
	if err := f.precompile(nScalars); err != nil {
		return nil, fmt.Errorf("optim: %w", err)
	}
	return f, nil
}

// precompile starts the update's compile (frontend.Compiled.Precompile)
// for gradients of the parameters' shapes and dtypes, which is what a
// gradient step returns: on the GPU the compile runs in the background
// while the caller's gradient step compiles, so that the first Step
// waits for what is left of it rather than compiling it after the
// gradients (resnet50_train's update: 0.44 s of its 1.9 s first step,
// session 14). The gradients stand in as zeros on the host, whose
// elements are never read (fresh memory from the OS is not even
// touched).
func (f *fused) precompile(nScalars int) error {
	n := len(f.params)
	args := make([]any, 0, nScalars+n*(2+len(f.state)))
	for range nScalars {
		args = append(args, frontend.Full(frontend.Float32, 0))
	}
	for _, r := range f.params {
		args = append(args, r.Tensor())
	}
	for _, r := range f.params {
		p := r.Tensor()
		args = append(args, frontend.Zeros(p.DType(), p.Shape()...))
	}
	for _, s := range f.state {
		for _, t := range s {
			args = append(args, t)
		}
	}
	return f.c.Precompile(args...)
}

func (f *fused) step(scalars []float64, grads []*frontend.Tensor) error {
	n := len(f.params)
	if len(grads) != n {
		return fmt.Errorf("optim: %d gradients for %d parameters", len(grads), n)
	}
	args := make([]*frontend.Tensor, 0, len(scalars)+n*(2+len(f.state)))
	for _, s := range scalars {
		args = append(args, frontend.Full(frontend.Float32, s))
	}
	for i, r := range f.params {
		g := grads[i]
		if g == nil {
			return fmt.Errorf("optim: gradient of %s is nil", r.Name)
		}
		if err := g.Err(); err != nil {
			return fmt.Errorf("optim: gradient of %s: %w", r.Name, err)
		}
		if ps, gs := r.Tensor().Shape(), g.Shape(); !slices.Equal(ps, gs) {
			return fmt.Errorf("optim: gradient of %s has shape %v, the parameter %v", r.Name, gs, ps)
		}
		args = append(args, r.Tensor())
	}
	args = append(args, grads...)
	for _, s := range f.state {
		args = append(args, s...)
	}
	res, err := f.c.Call(args...)
	if err != nil {
		return fmt.Errorf("optim: step: %w", err)
	}
	if len(res) != n*(1+len(f.state)) {
		return fmt.Errorf("optim: step returned %d tensors, want %d", len(res), n*(1+len(f.state)))
	}
	for i, r := range f.params {
		*r.Ptr = res[i]
	}
	// The old state is the optimizer's own: released now, so that a
	// CUDA graph of the update (reduce-overhead) does not move it out of
	// its pool before the pool is written again, and plain memory returns
	// to the allocator at once.
	var errs []error
	for s := range f.state {
		for i, old := range f.state[s] {
			if old != res[(1+s)*n+i] {
				errs = append(errs, old.Free())
			}
		}
		copy(f.state[s], res[(1+s)*n:(2+s)*n])
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("optim: releasing the old state: %w", err)
	}
	return nil
}

// Compiled returns the compiled update (for Stats and CompileTimes).
func (f *fused) Compiled() *frontend.Compiled { return f.c }

// scalarLike casts a float32 scalar input to p's dtype.
func scalarLike(s, p *frontend.Tensor) *frontend.Tensor {
	if p.DType() == s.DType() {
		return s
	}
	return s.Cast(p.DType())
}

// SGD is stochastic gradient descent with momentum.
type SGD struct {
	*fused
	cfg SGDConfig
}

// NewSGD returns SGD over params, its step compiled with opts.
func NewSGD(params []nn.Ref, cfg SGDConfig, opts frontend.Options) (*SGD, error) {
	if cfg.LR < 0 || cfg.Momentum < 0 || cfg.WeightDecay < 0 {
		return nil, fmt.Errorf("optim: SGD: negative hyperparameter in %+v", cfg)
	}
	if cfg.Nesterov && cfg.Momentum == 0 {
		return nil, fmt.Errorf("optim: SGD: Nesterov momentum needs a positive Momentum")
	}
	slots := 0
	if cfg.Momentum != 0 {
		slots = 1
	}
	mom, wd, nesterov := cfg.Momentum, cfg.WeightDecay, cfg.Nesterov
	constLike := constants{}.like
	f, err := newFused(params, slots, 1, opts, func(sc, p, g []*frontend.Tensor, st [][]*frontend.Tensor) ([]*frontend.Tensor, [][]*frontend.Tensor) {
		np := make([]*frontend.Tensor, len(p))
		var bufs []*frontend.Tensor
		if slots == 1 {
			bufs = make([]*frontend.Tensor, len(p))
		}
		for i := range p {
			d := g[i]
			if wd != 0 {
				d = d.Add(p[i].Mul(constLike(p[i], wd)))
			}
			if slots == 1 {
				b := st[0][i].Mul(constLike(p[i], mom)).Add(d)
				bufs[i] = b
				if nesterov {
					d = d.Add(b.Mul(constLike(p[i], mom)))
				} else {
					d = b
				}
			}
			np[i] = p[i].Sub(d.Mul(scalarLike(sc[0], p[i])))
		}
		if slots == 1 {
			return np, [][]*frontend.Tensor{bufs}
		}
		return np, nil
	})
	if err != nil {
		return nil, err
	}
	return &SGD{fused: f, cfg: cfg}, nil
}

// Step applies one SGD update.
func (o *SGD) Step(grads []*frontend.Tensor) error { return o.step([]float64{o.cfg.LR}, grads) }

// SetLR changes the learning rate.
func (o *SGD) SetLR(lr float64) { o.cfg.LR = lr }

// AdamW is Adam with decoupled weight decay.
type AdamW struct {
	*fused
	cfg AdamWConfig
	t   int
}

// NewAdamW returns AdamW over params, its step compiled with opts.
func NewAdamW(params []nn.Ref, cfg AdamWConfig, opts frontend.Options) (*AdamW, error) {
	if cfg.Beta1 == 0 {
		cfg.Beta1 = 0.9
	}
	if cfg.Beta2 == 0 {
		cfg.Beta2 = 0.999
	}
	if cfg.Eps == 0 {
		cfg.Eps = 1e-8
	}
	if cfg.LR < 0 || cfg.WeightDecay < 0 || cfg.Eps < 0 || cfg.Beta1 < 0 || cfg.Beta1 >= 1 || cfg.Beta2 < 0 || cfg.Beta2 >= 1 {
		return nil, fmt.Errorf("optim: AdamW: hyperparameters out of range in %+v", cfg)
	}
	b1, b2, eps, wd := cfg.Beta1, cfg.Beta2, cfg.Eps, cfg.WeightDecay
	constLike := constants{}.like
	// Scalars: lr, 1/(1-β1ᵗ), 1/√(1-β2ᵗ).
	f, err := newFused(params, 2, 3, opts, func(sc, p, g []*frontend.Tensor, st [][]*frontend.Tensor) ([]*frontend.Tensor, [][]*frontend.Tensor) {
		n := len(p)
		np, ms, vs := make([]*frontend.Tensor, n), make([]*frontend.Tensor, n), make([]*frontend.Tensor, n)
		for i := range p {
			lr, c1, c2 := scalarLike(sc[0], p[i]), scalarLike(sc[1], p[i]), scalarLike(sc[2], p[i])
			q := p[i]
			if wd != 0 {
				q = q.Sub(q.Mul(lr.Mul(constLike(q, wd))))
			}
			m := st[0][i].Mul(constLike(q, b1)).Add(g[i].Mul(constLike(q, 1-b1)))
			v := st[1][i].Mul(constLike(q, b2)).Add(g[i].Mul(g[i]).Mul(constLike(q, 1-b2)))
			den := v.Sqrt().Mul(c2).Add(constLike(q, eps))
			np[i] = q.Sub(m.Mul(lr.Mul(c1)).Div(den))
			ms[i], vs[i] = m, v
		}
		return np, [][]*frontend.Tensor{ms, vs}
	})
	if err != nil {
		return nil, err
	}
	return &AdamW{fused: f, cfg: cfg}, nil
}

// Step applies one AdamW update.
func (o *AdamW) Step(grads []*frontend.Tensor) error {
	t := float64(o.t + 1)
	c1 := 1 / (1 - math.Pow(o.cfg.Beta1, t))
	c2 := 1 / math.Sqrt(1-math.Pow(o.cfg.Beta2, t))
	if err := o.step([]float64{o.cfg.LR, c1, c2}, grads); err != nil {
		return err
	}
	o.t++
	return nil
}

// SetLR changes the learning rate.
func (o *AdamW) SetLR(lr float64) { o.cfg.LR = lr }

// Steps returns the number of steps taken.
func (o *AdamW) Steps() int { return o.t }
