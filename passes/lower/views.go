package lower

import (
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// A matmul operand that is a reshape of a buffer (a function argument or
// another kernel's result), or the transpose of its last two dims of one,
// is read through a loop.view of the buffer in the reshape's shape rather
// than through the reshape's index arithmetic: the product's loads are
// then the plain A[b…, i, k] and B[b…, k, j] (or their transposes) that
// convert-loop-to-gpu's tensor-core and library plans recognize, as for a
// matmul of the buffer itself. A reshape is row-major and a buffer's
// layout the identity, so the view reads the same elements.

// matmulView is how a matmul reads one operand through a view: load
// view[idx], with the last two indices swapped when swap is set, widened
// to f32 when widen is set.
type matmulView struct {
	view        *ir.Value
	swap, widen bool
}

// operandView returns the view the matmul reads operand v through, or
// false when v is a buffer already or not a reshape of one. An f32
// operand that another group widens from a 16-bit float buffer
// (graph.cast; graph-decompose's attention scores multiply the widened q
// and k) is read from that buffer and widened as it is loaded: the same values, and the product of 16-bit
// loads summed in f32 that the tensor-core plans take.
func (k *kernel) operandView(v *ir.Value) (matmulView, bool) {
	v = k.resolve(v)
	swap := false
	if op := v.DefiningOp(); graph.SwapsLastTwo(op) {
		v, swap = k.resolve(op.Operand(0)), true
	}
	if src := widened(v); src != nil && k.c.bufs[src] != nil {
		return matmulView{view: k.c.bufs[src], swap: swap, widen: true}, true
	}
	if k.c.bufs[v] != nil {
		return matmulView{}, false
	}
	view := k.reshapeView(v)
	return matmulView{view: view, swap: swap}, view != nil
}

// widened returns x where v is the result of a graph.fusion that yields
// graph.cast(x) of one of its block's arguments from f16 or bf16 to f32, a
// conversion that changes no value (x is then the fusion's operand); nil
// otherwise. (A cast outside any group is computed where it is read, as
// extf(load x), already.)
func widened(v *ir.Value) *ir.Value {
	fusion := v.DefiningOp()
	if fusion == nil || fusion.Name() != graph.OpFusion || elemOf(v) != ir.F32 {
		return nil
	}
	body := fusion.Region(0).Front()
	cast := body.Terminator().Operand(v.Index()).DefiningOp()
	if cast == nil || cast.Name() != graph.OpCast {
		return nil
	}
	x := cast.Operand(0)
	if e := elemOf(x); e != ir.BF16 && e != ir.F16 || !x.IsBlockArgument() || x.ParentBlock() != body {
		return nil
	}
	return fusion.Operand(x.Index())
}

// reshapeView returns a loop.view of the buffer that v, a chain of
// graph.reshape ops, reshapes, in v's shape; nil when v is no such chain
// or the view cannot be taken (a buffer of another layout, more than one
// dynamic dim).
func (k *kernel) reshapeView(v *ir.Value) *ir.Value {
	v = k.resolve(v)
	shape := shapeOf(v)
	src := v
	for k.c.bufs[src] == nil {
		d := src.DefiningOp()
		if d == nil || d.Name() != graph.OpReshape {
			return nil
		}
		src = k.resolve(d.Operand(0))
	}
	buf := k.c.bufs[src]
	mt, ok := buf.Type().(*ir.MemRefType)
	dyn := 0
	for _, n := range shape {
		if n == ir.Dynamic {
			dyn++
		}
	}
	if src == v || !ok || mt.Layout != nil || dyn > 1 {
		return nil
	}
	key := k.opKey("reshape-view", 0, nil, []*ir.Value{buf, v})
	view := k.lookup(key)
	if view == nil {
		view = loop.View(k.outer(), k.loc, buf, ir.MemRefWith(shape, mt.ElementType(), nil, mt.MemorySpace))
		k.memo[0][key] = view // at function level, whatever scope asks
	}
	return view
}

// copyView returns a view standing for the copy group f, or nil: a copy
// of a reshape of a buffer this function allocated (a kernel's result,
// not an argument, which the caller owns) is a view of it, without a
// copy kernel. A reshaped result, logits [B·T, V] returned as [B, T, V],
// costs nothing then.
func (c *converter) copyView(f *ir.Operation) *ir.Value {
	body := f.Region(0).Front()
	yield := body.Terminator()
	if yield == nil || yield.NumOperands() != 1 {
		return nil
	}
	k := newKernel(c, f, f.Loc())
	v := k.reshapeView(yield.Operand(0))
	if v == nil {
		return nil
	}
	if d := v.DefiningOp().Operand(0).DefiningOp(); d == nil || d.Name() != loop.AllocOp {
		v.DefiningOp().Erase()
		return nil
	}
	return v
}

// read loads the element at idx of the operand the view stands for.
func (k *kernel) read(mv matmulView, idx []*ir.Value) *ir.Value {
	if mv.swap {
		idx = slices.Clone(idx)
		n := len(idx)
		idx[n-2], idx[n-1] = idx[n-1], idx[n-2]
	}
	x := k.load(mv.view, idx)
	if mv.widen {
		x = k.convert(x, elemOf(mv.view), ir.F32)
	}
	return x
}

// matmulSpace returns the shape of the product of a matmul group whose
// outputs hold the same elements in another shape, the last dim the
// same, or nil: a linear layer on [B, T, d] that graph.matmul-fold-batch
// made a product of rows [B·T, N], its epilogue (the bias, the
// activation) still over [B, T, N]. The nest then runs over the
// product's space, so that the product's loads are the plain ones the
// tensor-core and library plans read, and the outputs are stored through
// views in that shape (outputViews).
func (k *kernel) matmulSpace(outs []*ir.Value) []int64 {
	if k.body == nil {
		return nil
	}
	var mm *ir.Operation
	for _, op := range k.body.Ops() {
		if op.Name() == graph.OpMatmul {
			if mm != nil {
				return nil
			}
			mm = op
		}
	}
	if mm == nil {
		return nil
	}
	ms := shapeOf(mm.Result(0))
	n := ir.NumElements(ms)
	if n < 0 || len(ms) < 2 {
		return nil
	}
	differs := false
	for _, o := range outs {
		os := shapeOf(o)
		if ir.NumElements(os) != n || len(os) == 0 || os[len(os)-1] != ms[len(ms)-1] {
			return nil
		}
		differs = differs || !slices.Equal(os, ms)
	}
	if !differs {
		return nil
	}
	return ms
}

// outputViews returns, per output buffer, a loop.view in the shape space
// where the buffer has another shape.
func (k *kernel) outputViews(bufs []*ir.Value, space []int64) []*ir.Value {
	views := make([]*ir.Value, len(bufs))
	for i, b := range bufs {
		mt := b.Type().(*ir.MemRefType)
		if slices.Equal(mt.Shape(), space) {
			continue
		}
		views[i] = loop.View(k.c.at, k.loc, b, ir.MemRefWith(space, mt.ElementType(), nil, mt.MemorySpace))
	}
	return views
}
