package nn

import (
	"fmt"

	"github.com/strata-ir/strata/frontend"
)

// Functional turns a computation on module m into a function of flat
// tensors, as frontend.Compile and frontend.ValueAndGrad take them
// (PyTorch's torch.func.functional_call): the returned function's
// arguments are fn's nIn inputs, then m's parameters, then m's buffers
// (in Refs order); it binds the module's fields to those arguments, calls
// fn, and returns fn's results followed by the values of the buffers that
// fn replaced (batch norm's updated running statistics, a KV cache written
// by a decoding step), in Refs order; changed reports which buffers those
// were in the latest call. The module's fields are restored before it
// returns.
//
// It is how a module's tensors become graph inputs that can change
// between calls (an optimizer replaces them) and that gradients are taken
// with respect to.
func Functional(m any, nIn int, fn func(in []*frontend.Tensor) []*frontend.Tensor) (f func(args ...*frontend.Tensor) ([]*frontend.Tensor, error), params, buffers []Ref, changed func() []bool) {
	params, buffers = Parameters(m), Buffers(m)
	refs := append(append([]Ref(nil), params...), buffers...)
	var last []bool
	f = func(args ...*frontend.Tensor) ([]*frontend.Tensor, error) {
		if len(args) != nIn+len(refs) {
			return nil, fmt.Errorf("nn: Functional: %d arguments, want %d inputs + %d parameters + %d buffers",
				len(args), nIn, len(params), len(buffers))
		}
		saved := Tensors(refs)
		defer func() { _ = SetTensors(refs, saved) }()
		if err := SetTensors(refs, args[nIn:]); err != nil {
			return nil, err
		}
		outs := fn(args[:nIn])
		last = make([]bool, len(buffers))
		for i, b := range buffers {
			if t := *b.Ptr; t != args[nIn+len(params)+i] {
				last[i] = true
				outs = append(outs, t)
			}
		}
		return outs, nil
	}
	return f, params, buffers, func() []bool { return last }
}

// writeBack stores the trailing results of a call of a Functional
// function into the buffers that changed, and returns the leading ones.
func writeBack(res []*frontend.Tensor, buffers []Ref, changed []bool) ([]*frontend.Tensor, error) {
	n := 0
	for _, c := range changed {
		if c {
			n++
		}
	}
	k := len(res) - n
	if k < 0 || len(changed) != len(buffers) {
		return nil, fmt.Errorf("nn: %d results for %d changed buffers", len(res), n)
	}
	j := k
	for i, c := range changed {
		if c {
			*buffers[i].Ptr = res[j]
			j++
		}
	}
	return res[:k], nil
}

// Compiled is a module's computation compiled with frontend.Compile: its
// Call passes the module's current parameters and buffers along with the
// inputs, and writes the buffers' new values back into the module.
type Compiled struct {
	c               *frontend.Compiled
	m               any
	params, buffers []Ref
	changed         func() []bool
}

// Compile compiles fn, a computation on module m with inputs in, for
// frontend.Compile with opts. The results of Call are fn's; buffers that
// fn replaces (batch norm's running statistics in training mode, a KV
// cache) are written back into m after each call.
func Compile(m any, fn func(in ...*frontend.Tensor) []*frontend.Tensor, nIn int, opts frontend.Options) (*Compiled, error) {
	f, params, buffers, changed := Functional(m, nIn, func(in []*frontend.Tensor) []*frontend.Tensor { return fn(in...) })
	c, err := frontend.Compile(f, opts)
	if err != nil {
		return nil, err
	}
	return &Compiled{c: c, m: m, params: params, buffers: buffers, changed: changed}, nil
}

// Frontend returns the underlying compiled function (for Stats,
// CompileTimes, KernelTime).
func (c *Compiled) Frontend() *frontend.Compiled { return c.c }

// Args returns the full argument list of a call with inputs: the inputs,
// then the module's parameters and buffers.
func (c *Compiled) Args(inputs ...*frontend.Tensor) []*frontend.Tensor {
	args := append([]*frontend.Tensor(nil), inputs...)
	args = append(args, Tensors(c.params)...)
	return append(args, Tensors(c.buffers)...)
}

// Call runs the computation on inputs.
func (c *Compiled) Call(inputs ...*frontend.Tensor) ([]*frontend.Tensor, error) {
	res, err := c.c.Call(c.Args(inputs...)...)
	if err != nil {
		return nil, err
	}
	return writeBack(res, c.buffers, c.changed())
}

// GradStep is the forward and backward pass of a loss on a module,
// differentiated with frontend.ValueAndGrad with respect to the module's
// parameters.
type GradStep struct {
	vg              *frontend.ValueAndGradFunc
	m               any
	nIn             int
	params, buffers []Ref
	changed         func() []bool
}

// NewGradStep differentiates loss, a computation on module m whose first
// result is a float scalar (further results are auxiliary), with respect
// to m's parameters. opts are the gradient's backend options
// (frontend.ValueAndGradFunc.WithOptions).
func NewGradStep(m any, loss func(in ...*frontend.Tensor) []*frontend.Tensor, nIn int, opts frontend.Options) *GradStep {
	f, params, buffers, changed := Functional(m, nIn, func(in []*frontend.Tensor) []*frontend.Tensor { return loss(in...) })
	wrt := make([]int, len(params))
	for i := range wrt {
		wrt[i] = nIn + i
	}
	vg := frontend.ValueAndGrad(f, wrt...).WithOptions(opts)
	return &GradStep{vg: vg, m: m, nIn: nIn, params: params, buffers: buffers, changed: changed}
}

// Params returns the parameters the gradients are taken with respect to,
// in the order of Call's gradients.
func (s *GradStep) Params() []Ref { return s.params }

// Call returns loss's results at inputs and the gradients of its first
// result, one per parameter; it writes the buffers' new values (batch
// norm's running statistics) back into the module.
func (s *GradStep) Call(inputs ...*frontend.Tensor) (values, grads []*frontend.Tensor, err error) {
	if len(inputs) != s.nIn {
		return nil, nil, fmt.Errorf("nn: GradStep: %d inputs, want %d", len(inputs), s.nIn)
	}
	args := append([]*frontend.Tensor(nil), inputs...)
	args = append(args, Tensors(s.params)...)
	args = append(args, Tensors(s.buffers)...)
	values, grads, err = s.vg.Call(args...)
	if err != nil {
		return nil, nil, err
	}
	values, err = writeBack(values, s.buffers, s.changed())
	return values, grads, err
}

// Report is the partition report of the last call (what the forward pass
// saves for the backward pass).
func (s *GradStep) Report() string { return s.vg.Report().String() }
