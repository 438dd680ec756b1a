// Package autodiff is reverse-mode automatic differentiation over the graph
// dialect.
//
// Grad turns a func.func @f whose body is graph ops into @f_grad, which
// recomputes the forward values it needs and then walks f's ops backwards,
// applying each op's vector-Jacobian product (VJP) to the gradient of its
// result. The VJP rules are a table, rules.go, keyed by op name: grep
// "graph.matmul" there to find matmul's. Gradients of broadcast operands are
// summed back to the operand's shape; values used several times accumulate
// their gradients; integer and boolean values carry none.
//
// Joint builds @f_joint, forward and backward in one function sharing the
// forward values, and Partition splits it into a forward pass @f_fwd and
// a backward pass @f_bwd, choosing by a minimum cut in bytes which
// activations the forward pass saves and which the backward pass
// recomputes (see partition.go and docs/autodiff.md).
//
// Importing the package registers the graph-autodiff and graph-partition
// passes.
package autodiff

import (
	"slices"

	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// Suffixes of the functions autodiff adds next to @f.
const (
	GradSuffix  = "_grad"  // Grad's gradient function
	JointSuffix = "_joint" // Joint's forward and backward function
	FwdSuffix   = "_fwd"   // Partition's forward pass
	BwdSuffix   = "_bwd"   // Partition's backward pass
)

// PrimalsAttr is the attribute of a joint function holding the number of
// its primal arguments (those of the differentiated function); the
// cotangents follow them.
const PrimalsAttr = "autodiff.primals"

// SavedAttr is the attribute of Partition's forward and backward functions
// holding the number of saved values: the last results of the forward
// pass and the first arguments of the backward pass.
const SavedAttr = "autodiff.saved"

// Grad builds the gradient function of fn, a func.func of one block, and
// inserts it after fn as @<name>_grad. The gradient function takes fn's
// arguments followed by one cotangent per result of fn (the gradient of a
// scalar loss with respect to that result), and returns the gradient with
// respect to each argument listed in wrt, in order. A nil wrt means every
// floating-point tensor argument.
//
// It fails with a located diagnostic when fn is not a single-block
// function, when a wrt argument is out of range or not a float tensor, when
// @<name>_grad already exists, or when an op on a differentiated path has
// no VJP rule or dynamic shapes.
func Grad(ctx *ir.Context, fn *ir.Operation, wrt []int) (*ir.Operation, error) {
	return derive(ctx, fn, wrt, false)
}

// Joint builds the joint forward and backward function of fn and inserts
// it after fn as @<name>_joint. It takes what Grad's function takes, fn's
// arguments followed by one cotangent per result, and returns fn's results
// followed by the gradients of Grad. The backward sweep reads the forward
// values it needs instead of recomputing them; Partition splits the
// function into a forward and a backward pass. The joint function carries
// the attribute autodiff.primals, the number of fn's arguments, which
// tells Partition where the cotangents start. Errors are Grad's.
func Joint(ctx *ir.Context, fn *ir.Operation, wrt []int) (*ir.Operation, error) {
	return derive(ctx, fn, wrt, true)
}

// derive builds @<name>_grad, or @<name>_joint when joint is set.
func derive(ctx *ir.Context, fn *ir.Operation, wrt []int, joint bool) (*ir.Operation, error) {
	if fn.Name() != funcd.FuncOp || funcd.IsExternal(fn) || fn.Region(0).Front() != fn.Region(0).Back() {
		return nil, ir.Errorf(fn.Loc(), "'%s' op cannot be differentiated: expected a func.func with one block", fn.Name())
	}
	ft := funcd.Type(fn)
	name := ir.SymbolName(fn)
	if ft == nil || name == "" {
		return nil, ir.Errorf(fn.Loc(), "'%s' op has no name or function type", fn.Name())
	}
	wrt, err := checkWrt(fn, ft, wrt)
	if err != nil {
		return nil, err
	}
	newName := name + GradSuffix
	if joint {
		newName = name + JointSuffix
	}
	if err := checkFreeSymbol(fn, newName); err != nil {
		return nil, err
	}

	var results []ir.Type
	if joint {
		results = slices.Clone(ft.Results)
	}
	for _, a := range wrt {
		results = append(results, ft.Inputs[a])
	}
	inputs := slices.Concat(ft.Inputs, ft.Results)
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointAfter(fn)
	gfn, body := funcd.NewFunc(b, newName, ir.FunctionOf(inputs, results), fn.Loc())
	if err := buildGrad(b, fn, body, wrt, joint); err != nil {
		gfn.Erase()
		return nil, err
	}
	if joint {
		gfn.SetAttr(PrimalsAttr, ir.IntegerAttr{Value: int64(len(ft.Inputs)), Type: ir.I64})
	}
	return gfn, nil
}

// checkFreeSymbol fails when the block holding fn already defines name.
func checkFreeSymbol(fn *ir.Operation, name string) error {
	if blk := fn.Block(); blk != nil {
		for op := range blk.All() {
			if ir.SymbolName(op) == name {
				return ir.Errorf(fn.Loc(), "cannot add @%s: the symbol already exists", name)
			}
		}
	}
	return nil
}

// checkWrt resolves the wrt list: every float tensor argument when empty,
// else in-range float tensor arguments, each once.
func checkWrt(fn *ir.Operation, ft *ir.FunctionType, wrt []int) ([]int, error) {
	if wrt == nil {
		for i, t := range ft.Inputs {
			if isFloatTensor(t) {
				wrt = append(wrt, i)
			}
		}
		return wrt, nil
	}
	seen := map[int]bool{}
	for _, a := range wrt {
		switch {
		case a < 0 || a >= len(ft.Inputs):
			return nil, ir.Errorf(fn.Loc(), "cannot differentiate with respect to argument %d: @%s has %d arguments", a, ir.SymbolName(fn), len(ft.Inputs))
		case !isFloatTensor(ft.Inputs[a]):
			return nil, ir.Errorf(fn.Loc(), "cannot differentiate with respect to argument %d of type %s: only floating-point tensors have gradients", a, ft.Inputs[a])
		case seen[a]:
			return nil, ir.Errorf(fn.Loc(), "argument %d is listed twice in wrt", a)
		}
		seen[a] = true
	}
	return wrt, nil
}

func isFloatTensor(t ir.Type) bool {
	tt, ok := t.(*ir.TensorType)
	return ok && ir.IsFloat(tt.ElementType())
}

// buildGrad fills body, the entry block of the gradient function: a copy
// of fn's ops (the forward values the VJPs read), then the backward sweep,
// then the return of the gradients, preceded by fn's own results when
// joint is set. Forward ops that nothing returned needs are removed at the
// end.
func buildGrad(b *ir.Builder, fn *ir.Operation, body *ir.Block, wrt []int, joint bool) error {
	src := funcd.Body(fn)
	ret := src.Terminator()
	if ret == nil || ret.Name() != funcd.ReturnOp {
		return ir.Errorf(fn.Loc(), "'%s' op cannot be differentiated: its body does not end in func.return", fn.Name())
	}
	nargs := src.NumArguments()
	m := make(map[*ir.Value]*ir.Value, nargs)
	for i, a := range src.Arguments() {
		m[a] = body.Argument(i)
	}

	// Forward: copy the ops, marking as active the float values that
	// depend on a wrt argument; only those need gradients.
	active := map[*ir.Value]bool{}
	for _, a := range wrt {
		active[body.Argument(a)] = true
	}
	var forward []*ir.Operation
	for op := range src.All() {
		if op == ret {
			break
		}
		c := op.Clone(m)
		body.Append(c)
		forward = append(forward, c)
		if slices.ContainsFunc(c.Operands(), func(v *ir.Value) bool { return active[v] }) {
			for _, r := range c.Results() {
				active[r] = isFloatTensor(r.Type())
			}
		}
	}

	// Seed: each returned value receives its result's cotangent.
	b.SetInsertionPointToEnd(body)
	s := &sweep{b: b, adj: map[*ir.Value]*ir.Value{}}
	for i, v := range ret.Operands() {
		if v := m[v]; active[v] {
			s.accumulate(v, body.Argument(nargs+i), ret.Loc())
		}
	}
	if s.err != nil {
		return s.err
	}

	// Backward: each op with an active result and a gradient hands its
	// result's gradient to its active operands.
	for _, op := range slices.Backward(forward) {
		if op.NumResults() != 1 || !active[op.Result(0)] {
			if slices.ContainsFunc(op.Results(), func(v *ir.Value) bool { return s.adj[v] != nil }) {
				return ir.Errorf(op.Loc(), "no VJP for '%s': autodiff handles ops of one result", op.Name())
			}
			continue
		}
		g := s.adj[op.Result(0)]
		if g == nil {
			continue
		}
		rule, ok := rules[op.Name()]
		if !ok {
			return ir.Errorf(op.Loc(), "no VJP for '%s'", op.Name())
		}
		e := &emitter{graph.Emitter{B: b, Loc: op.Loc()}}
		grads := rule(e, op, g)
		if e.Err != nil {
			return e.Err
		}
		for i, gi := range grads {
			if v := op.Operand(i); gi != nil && active[v] {
				s.accumulate(v, gi, op.Loc())
			}
		}
		if s.err != nil {
			return s.err
		}
	}

	var primal []*ir.Value
	if joint {
		for _, v := range ret.Operands() {
			primal = append(primal, m[v])
		}
	}
	outs := make([]*ir.Value, len(wrt))
	for i, a := range wrt {
		arg := body.Argument(a)
		if outs[i] = s.adj[arg]; outs[i] == nil {
			e := &emitter{graph.Emitter{B: b, Loc: fn.Loc()}}
			if outs[i] = e.zeros(arg.Type()); e.Err != nil {
				return e.Err
			}
		}
	}
	funcd.Return(b, ret.Loc(), slices.Concat(primal, outs)...)
	removeDead(body)
	return nil
}

// sweep holds the gradients accumulated so far during the backward pass.
type sweep struct {
	b   *ir.Builder
	adj map[*ir.Value]*ir.Value
	err error
}

// accumulate adds g to v's gradient. A gradient whose type differs from
// v's (a rule's slip) is an error rather than an ill-typed function.
func (s *sweep) accumulate(v, g *ir.Value, loc ir.Location) {
	if s.err != nil {
		return
	}
	if g.Type() != v.Type() {
		s.err = ir.Errorf(loc, "internal error: gradient of type %s for a value of type %s", g.Type(), v.Type())
		return
	}
	if prev := s.adj[v]; prev != nil {
		e := &emitter{graph.Emitter{B: s.b, Loc: loc}}
		g = e.add(prev, g)
		s.err = e.Err
	}
	s.adj[v] = g
}

// removeDead erases the pure ops of body whose results are unused: the
// forward ops no gradient reads and the gradients of inactive operands
// that rules computed anyway.
func removeDead(body *ir.Block) {
	for op := body.Last(); op != nil; {
		prev := op.Prev()
		if op.HasTrait(ir.Pure) && !op.HasTrait(ir.Terminator) &&
			!slices.ContainsFunc(op.Results(), (*ir.Value).HasUses) {
			op.Erase()
		}
		op = prev
	}
}
