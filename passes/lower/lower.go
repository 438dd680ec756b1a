// Package lower holds the passes that take graph programs down to the loop
// dialect: convert-graph-to-loop (each graph.fusion becomes one top-level
// loop.parallel nest over memref buffers) and loop-buffer-reuse (liveness-
// based buffer reuse and loop.dealloc insertion, with a printable memory
// plan), and registers the lower-to-loop pipeline that chains them after
// decomposition and fusion. See docs/lowering.md.
package lower

import (
	"fmt"
	"slices"
	"strings"

	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/sym"
	// lower-to-loop names graph-decompose and graph-fuse: importing this
	// package makes the whole pipeline available.
	"github.com/strata-ir/strata/dialects/builtin"
	"github.com/strata-ir/strata/dialects/graph"
	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/layout" // graph-channels-last, which lower-to-gpu's library configuration runs
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "convert-graph-to-loop",
		Summary: "Lower graph functions to loop nests over memref buffers, one loop.parallel per graph.fusion",
		Description: "Every func.func holding graph ops becomes a function on memrefs: tensor arguments " +
			"become memref arguments of the same shape and element type, and tensor results become " +
			"buffers the function allocates (loop.alloc) and returns. Each `graph.fusion` becomes " +
			"exactly one top-level `loop.parallel` nest writing its output buffers (none when they are all empty): pointwise groups " +
			"iterate over the output, reduction and persistent-row groups over the kept dims with inner " +
			"`loop.for` accumulations (f32 for f16 and bf16, as the interpreter), matmul groups over the " +
			"output with an inner loop over K and the epilogue applied to the accumulator, conv2d groups over " +
			"the output (up to 4 channels a point) with inner loops over the window, scatter groups over the " +
			"result's columns with a loop storing zeros and a loop adding the updates in index order. Views are " +
			"index remapping; splat constants become scalars and other constants buffers filled at " +
			"function entry. Scalar code reproduces the graph semantics with arith and math ops (see " +
			"docs/lowering.md). Composite groups must be decomposed first (graph-decompose).",
		Anchor: builtin.OpModule,
		After: []passes.Order{
			{Pass: "graph-decompose", Reason: "composite groups are not lowered: graph-decompose expands them"},
			{Pass: "graph-fuse", Reason: "it lowers the graph.fusion groups graph-fuse makes, one loop nest each"},
		},
		New: func(passes.Options) (passes.Pass, error) {
			return passes.FuncPass{PassName: "convert-graph-to-loop", Fn: func(op *ir.Operation, st *passes.State) error {
				n, err := ConvertModule(st.Ctx, op)
				st.Stat("num-kernels", "Number of loop.parallel nests made").Add(int64(n))
				return err
			}}, nil
		},
	})
	passes.RegisterPipeline("lower-to-loop",
		"Graph to loops: decompose, cleanups, split reductions, fuse, convert-graph-to-loop, buffer reuse",
		// No builtin.module(...) around it: a named pipeline is spliced where
		// it is named, so an anchor here would nest inside the caller's
		// module pipeline and run on nothing.
		LowerToLoop(""))
}

// LowerToLoop returns the passes of the lower-to-loop pipeline with
// graph-fuse given fuseOptions (graph-fuse's option text, such as
// "matmul-library=true"; "" for its defaults), for splicing into a module
// pipeline as lower-to-loop is.
func LowerToLoop(fuseOptions string) string {
	return lowerToLoop("", fuseOptions)
}

// LowerToLoopChannelsLast is LowerToLoop with graph-channels-last (and
// cleanups) after the decomposition: the convolution stacks' activations
// stored NHWC, for a configuration whose convolutions run on cuDNN.
// layoutOptions are graph-channels-last's option text ("" for its
// defaults).
func LowerToLoopChannelsLast(layoutOptions, fuseOptions string) string {
	layout := "graph-channels-last"
	if layoutOptions != "" {
		layout += "{" + layoutOptions + "}"
	}
	return lowerToLoop(layout+",canonicalize,cse,", fuseOptions)
}

func lowerToLoop(layout, fuseOptions string) string {
	fuse := "graph-fuse"
	if fuseOptions != "" {
		fuse += "{" + fuseOptions + "}"
	}
	return "func.func(graph-decompose,canonicalize,cse," + layout + "graph-split-reductions," + fuse + "),convert-graph-to-loop," +
		"func.func(loop-buffer-reuse)"
}

// ConvertModule runs convert-graph-to-loop on every function of module and
// returns the number of loop.parallel nests it made.
func ConvertModule(ctx *ir.Context, module *ir.Operation) (int, error) {
	total := 0
	for _, fn := range topFuncs(module) {
		if !needsLowering(fn) {
			continue
		}
		c := newConverter(ctx, fn)
		if err := c.run(); err != nil {
			return total, err
		}
		total += c.kernels
	}
	return total, nil
}

func topFuncs(module *ir.Operation) []*ir.Operation {
	var out []*ir.Operation
	for _, r := range module.Regions() {
		for _, blk := range r.Blocks() {
			for op := range blk.All() {
				if op.Name() == funcs.FuncOp {
					out = append(out, op)
				}
			}
		}
	}
	return out
}

// needsLowering reports whether fn has tensors in its signature or graph
// ops in its body.
func needsLowering(fn *ir.Operation) bool {
	ft := funcs.Type(fn)
	if ft != nil && (slices.ContainsFunc(ft.Inputs, isTensor) || slices.ContainsFunc(ft.Results, isTensor)) {
		return true
	}
	found := false
	fn.Walk(func(op *ir.Operation) bool {
		found = found || isGraph(op)
		return !found
	})
	return found
}

func isTensor(t ir.Type) bool       { _, ok := t.(*ir.TensorType); return ok }
func isGraph(op *ir.Operation) bool { return strings.HasPrefix(op.Name(), "graph.") }

// bufferType is the memref type that holds a tensor of type t.
func bufferType(t ir.Type) ir.Type {
	if tt, ok := t.(*ir.TensorType); ok && tt.Ranked() {
		return ir.MemRefOf(tt.Shape(), tt.ElementType())
	}
	return t
}

// converter lowers one function.
type converter struct {
	ctx       *ir.Context
	fn        *ir.Operation
	entry     *ir.Block
	bufs      map[*ir.Value]*ir.Value // tensor value → the memref holding it
	at        *ir.Builder             // before the op being lowered
	lastStart *ir.Operation           // the last op of the constant buffers at function entry
	kernels   int

	// argDims are the sizes of the tensor arguments' types (#graph.dims),
	// read before the arguments become buffers: a graph.iota's dynamic
	// size is one of them (kernel.iotaSize).
	argDims map[*ir.Value][]sym.Expr

	// The memo and level maps of the kernel being built (see newKernel).
	memo  map[memoKey]*ir.Value
	level map[*ir.Value]int
}

func newConverter(ctx *ir.Context, fn *ir.Operation) *converter {
	return &converter{ctx: ctx, fn: fn, bufs: map[*ir.Value]*ir.Value{}}
}

func (c *converter) run() error {
	if funcs.IsExternal(c.fn) {
		ft := funcs.Type(c.fn)
		c.fn.SetProperty(funcs.FunctionTypeAttr, ir.TypeAttr{Type: memrefSignature(ft)})
		return nil
	}
	c.entry = funcs.Body(c.fn)
	if len(c.fn.Region(0).Blocks()) != 1 {
		return ir.Errorf(c.fn.Loc(), "convert-graph-to-loop: functions with several blocks are not supported")
	}
	c.argDims = map[*ir.Value][]sym.Expr{}
	for _, a := range c.entry.Arguments() {
		if tt, ok := a.Type().(*ir.TensorType); ok && tt.Ranked() {
			c.argDims[a] = graph.DimsOf(tt)
		}
		if isTensor(a.Type()) {
			a.SetType(bufferType(a.Type()))
			c.bufs[a] = a
		}
	}
	c.at = ir.NewBuilder(c.ctx)
	for _, op := range c.entry.Ops() {
		c.at.SetInsertionPointBefore(op)
		var err error
		switch {
		case op.Name() == graph.OpFusion:
			err = c.lowerFusion(op)
		case graph.IsCollective(op.Name()):
			err = c.lowerCollective(op)
		case isGraph(op):
			// Constants, views and leftovers are computed where they are
			// read (index remapping, scalars, or constant buffers).
		default:
			err = c.lowerOther(op)
		}
		if err != nil {
			return err
		}
	}
	ops := c.entry.Ops()
	for _, op := range slices.Backward(ops) {
		if !isGraph(op) {
			continue
		}
		for _, r := range op.Results() {
			if r.HasUses() {
				return ir.Errorf(r.Users()[0].Loc(), "convert-graph-to-loop: '%s' reads a tensor of '%s' that cannot be lowered",
					r.Users()[0].Name(), op.Name())
			}
		}
		op.Erase()
	}
	eraseUnreadBuffers(c.entry)
	c.fn.SetProperty(funcs.FunctionTypeAttr, ir.TypeAttr{Type: memrefSignature(funcs.Type(c.fn))})
	var bad error
	c.fn.Walk(func(op *ir.Operation) bool {
		for _, v := range op.Operands() {
			if isTensor(v.Type()) {
				bad = ir.Errorf(op.Loc(), "convert-graph-to-loop: '%s' still reads a tensor", op.Name())
				return false
			}
		}
		return true
	})
	return bad
}

func memrefSignature(ft *ir.FunctionType) *ir.FunctionType {
	conv := func(ts []ir.Type) []ir.Type {
		out := make([]ir.Type, len(ts))
		for i, t := range ts {
			out[i] = bufferType(t)
		}
		return out
	}
	return ir.FunctionOf(conv(ft.Inputs), conv(ft.Results))
}

// lowerOther rewrites the tensor operands of a non-graph op to buffers:
// func.return gets buffers the function owns (copying arguments), func.call
// passes buffers and receives buffers.
func (c *converter) lowerOther(op *ir.Operation) error {
	switch op.Name() {
	case funcs.ReturnOp, funcs.CallOp:
	default:
		for _, v := range op.Operands() {
			if isTensor(v.Type()) {
				return ir.Errorf(op.Loc(), "convert-graph-to-loop: cannot lower '%s' on tensors", op.Name())
			}
		}
		return nil
	}
	for i, v := range op.Operands() {
		if !isTensor(v.Type()) {
			continue
		}
		m := c.bufs[v]
		if m == nil || (op.Name() == funcs.ReturnOp && m.IsBlockArgument()) {
			var err error
			if m, err = c.materialize(v, op.Loc()); err != nil {
				return err
			}
		}
		op.SetOperand(i, m)
	}
	if op.Name() == funcs.CallOp {
		for _, r := range op.Results() {
			if isTensor(r.Type()) {
				r.SetType(bufferType(r.Type()))
				c.bufs[r] = r
			}
		}
	}
	return nil
}

// materialize computes the tensor v into a fresh buffer with a copy nest.
func (c *converter) materialize(v *ir.Value, loc ir.Location) (*ir.Value, error) {
	k := newKernel(c, nil, loc)
	bufs, err := k.build([]*ir.Value{v}, "copy")
	if err != nil {
		return nil, err
	}
	return bufs[0], nil
}

func (c *converter) lowerFusion(f *ir.Operation) error {
	kind, _ := f.Attr("kind").(ir.StringAttr)
	switch kind.Value {
	case "composite":
		return ir.Errorf(f.Loc(), "convert-graph-to-loop: a composite group is not lowered: run graph-decompose first")
	}
	body := f.Region(0).Front()
	yield := body.Terminator()
	if yield == nil || yield.Name() != graph.OpYield {
		return ir.Errorf(f.Loc(), "convert-graph-to-loop: graph.fusion body does not end in graph.yield")
	}
	if kind.Value == "copy" {
		if v := c.copyView(f); v != nil {
			c.bufs[f.Result(0)] = v
			return nil
		}
	}
	k := newKernel(c, f, f.Loc())
	build := k.build
	if kind.Value == ScatterNest {
		build = func(outs []*ir.Value, _ string) ([]*ir.Value, error) { return k.buildScatter(outs) }
	}
	bufs, err := build(yield.Operands(), kind.Value)
	if err != nil {
		return err
	}
	for i, r := range f.Results() {
		c.bufs[r] = bufs[i]
	}
	return nil
}

// startBuilder returns a builder at function entry, after the constant
// buffers made so far.
func (c *converter) startBuilder() *ir.Builder {
	b := ir.NewBuilder(c.ctx)
	if c.lastStart == nil {
		b.SetInsertionPointToStart(c.entry)
	} else {
		b.SetInsertionPointAfter(c.lastStart)
	}
	b.OnInsert = func(op *ir.Operation) {
		if op.Block() == c.entry {
			c.lastStart = op
		}
	}
	return b
}

// errorf is a located error of the pass.
func errorf(loc ir.Location, format string, args ...any) error {
	return ir.Errorf(loc, "convert-graph-to-loop: %s", fmt.Sprintf(format, args...))
}

// loopAlloc is a tiny wrapper so kernel code reads uniformly.
func loopAlloc(b *ir.Builder, loc ir.Location, t *ir.MemRefType, dyn []*ir.Value) *ir.Value {
	return loop.Alloc(b, loc, t, dyn...)
}

// eraseUnreadBuffers removes the function-level loop.allocs of body that
// are only stored into, with their stores, and then every top-level nest
// left with nothing but pure arithmetic and loads: a group's result that
// its readers read around (a matmul reads a widening cast's 16-bit source,
// views.go) costs no kernel.
func eraseUnreadBuffers(body *ir.Block) {
	touched := map[*ir.Operation]bool{}
	for _, op := range body.Ops() {
		if op.Name() != loop.AllocOp {
			continue
		}
		m := op.Result(0)
		if slices.ContainsFunc(m.Users(), func(u *ir.Operation) bool { return u.Name() != loop.StoreOp || u.Operand(1) != m }) {
			continue
		}
		for _, st := range m.Users() {
			top := st
			for top.Block() != body {
				top = top.ParentOp()
			}
			touched[top] = true
			st.Erase()
		}
		op.Erase()
	}
	for _, op := range body.Ops() {
		if touched[op] && op.Name() == loop.ParallelOp && onlyComputes(op) {
			op.Erase()
		}
	}
}

// onlyComputes reports whether nest writes nothing: every op in it is a
// load, loop structure or pure.
func onlyComputes(nest *ir.Operation) bool {
	ok := true
	nest.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case loop.ParallelOp, loop.ForOp, loop.IfOp, loop.YieldOp, loop.ReduceOp, loop.LoadOp, loop.DimOp:
		default:
			if !o.HasTrait(ir.Pure) {
				ok = false
			}
		}
		return ok
	})
	return ok
}
