// Package decompose provides the graph-decompose pass, which rewrites the
// graph dialect's composite ops (softmax, log_softmax, layer_norm, rms_norm,
// attention, attention_grad) into graph primitives.
//
// Each expansion performs the same operations, in the same order and in
// the same type, as the reference interpreter's rule for the composite, so
// that the decomposed program gives bit-identical results. Composites
// compute in graph.ComputeType of their element type, as PyTorch does: an
// f16 or bf16 composite casts its operands to f32 first and its result back
// once at the end (attention multiplies the widened q and k and casts
// the probabilities back before its second product). Importing the package
// registers the pass.
package decompose

import (
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/sym"
)

func init() {
	passes.Register(&passes.PassInfo{
		Name:    "graph-decompose",
		Summary: "Decompose graph composites into primitives",
		Description: "Rewrites graph.softmax, graph.log_softmax, graph.logsumexp, graph.layer_norm, graph.rms_norm, " +
			"graph.attention and graph.attention_grad into graph primitives, numerically stable: softmax subtracts the maximum " +
			"before exponentiating, layer_norm computes the variance of the centred values (two passes). " +
			"f16 and bf16 composites are computed in f32 between a graph.cast to f32 and one back, as " +
			"PyTorch computes them (attention takes its scores as a product of the widened q and k, as PyTorch's " +
			"scaled_dot_product_attention keeps them in f32, and its product with v in the element type). " +
			"Afterwards no composite remains; a composite that cannot be expanded (a causal mask or " +
			"default scale over dynamic sizes) is an error.",
		Anchor: passes.AnyOp,
		New:    func(passes.Options) (passes.Pass, error) { return decomposePass{}, nil },
	})
}

// expansions maps each composite to the function that builds its
// primitive form; data rather than a switch, so that Composites and the
// pass agree by construction.
var expansions = map[string]func(e *emitter, op *ir.Operation) []*ir.Value{
	graph.OpSoftmax:       single(expandSoftmax),
	graph.OpLogSoftmax:    single(expandSoftmax),
	graph.OpLogSumExp:     single(expandLogSumExp),
	graph.OpLayerNorm:     single(expandNorm),
	graph.OpRMSNorm:       single(expandNorm),
	graph.OpAttention:     single(expandAttention),
	graph.OpAttentionGrad: expandAttentionGrad,
}

// single adapts the expansion of a one-result composite.
func single(f func(e *emitter, op *ir.Operation) *ir.Value) func(e *emitter, op *ir.Operation) []*ir.Value {
	return func(e *emitter, op *ir.Operation) []*ir.Value {
		if v := f(e, op); v != nil {
			return []*ir.Value{v}
		}
		return nil
	}
}

// Composites returns the names of the ops graph-decompose expands, sorted.
func Composites() []string {
	names := make([]string, 0, len(expansions))
	for name := range expansions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

type decomposePass struct{}

func (decomposePass) Name() string { return "graph-decompose" }

// Run expands every composite nested in op. Expansions only add ops before
// the composite and then replace it, so collecting the composites first and
// expanding them in order is enough: no expansion creates a composite.
func (decomposePass) Run(op *ir.Operation, st *passes.State) error {
	var todo []*ir.Operation
	op.Walk(func(o *ir.Operation) bool {
		if _, ok := expansions[o.Name()]; ok {
			todo = append(todo, o)
		}
		return true
	})
	if len(todo) == 0 {
		st.MarkUnchanged()
		return nil
	}
	count := st.Stat("num-decomposed", "Number of composite ops decomposed")
	var errs ir.DiagnosticList
	for _, c := range todo {
		vs, err := Expand(ir.NewBuilder(st.Ctx), c)
		if err != nil {
			errs = append(errs, asDiagnostic(c, err))
			continue
		}
		for i, v := range vs {
			c.Result(i).ReplaceAllUsesWith(v)
		}
		c.Erase()
		count.Add(1)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func asDiagnostic(op *ir.Operation, err error) *ir.Diagnostic {
	if d, ok := err.(*ir.Diagnostic); ok {
		return d
	}
	return ir.Errorf(op.Loc(), "'%s' op cannot be decomposed: %v", op.Name(), err)
}

// Expand builds the primitive form of the composite op before it with b
// and returns the values that replace op's results, in order; op itself
// is left in place. It fails, creating nothing usable, when op is not a composite or
// cannot be expanded (unranked operands, dynamic sizes where a constant
// needs them).
func Expand(b *ir.Builder, op *ir.Operation) ([]*ir.Value, error) {
	expand, ok := expansions[op.Name()]
	if !ok {
		return nil, ir.Errorf(op.Loc(), "'%s' is not a graph composite", op.Name())
	}
	b.SetInsertionPointBefore(op)
	e := &emitter{graph.Emitter{B: b, Loc: op.Loc()}}
	vs := expand(e, op)
	if e.Err != nil {
		return nil, e.Err
	}
	if len(vs) != op.NumResults() {
		return nil, ir.Errorf(op.Loc(), "internal error: the expansion of '%s' gives %d values for %d results", op.Name(), len(vs), op.NumResults())
	}
	return vs, nil
}

// emitter is graph.Emitter with the helpers the expansions share.
type emitter struct{ graph.Emitter }

// ranked returns v's shape and element type, failing for unranked values.
func (e *emitter) ranked(v *ir.Value) ([]int64, ir.Type) {
	t, ok := v.Type().(*ir.TensorType)
	if !ok || !t.Ranked() {
		e.Fail("expected a ranked tensor, got %s", v.Type())
		return nil, nil
	}
	return t.Shape(), t.ElementType()
}

// axisOf reads op's axis attribute (graph.Axis: -1 when absent) as a dim
// of a rank-r operand.
func (e *emitter) axisOf(op *ir.Operation, rank int) int64 {
	axis := graph.Axis(op)
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis >= int64(rank) {
		e.Fail("axis %d is out of range for rank %d", axis, rank)
	}
	return axis
}

// widen casts x to the type composites compute in for its element type
// (f32 for f16 and bf16); x is returned as is when it is already there.
func (e *emitter) widen(x *ir.Value) *ir.Value {
	if e.Err != nil {
		return nil
	}
	elem := ir.ElementTypeOf(x.Type())
	ct := graph.ComputeType(elem)
	if elem == ir.Type(ct) || !ir.IsFloat(elem) {
		return x
	}
	return graph.Cast(e.B, e.Loc, x, ct)
}

// narrow casts x, computed by widen's type, back to elem.
func (e *emitter) narrow(x *ir.Value, elem ir.Type) *ir.Value {
	if e.Err != nil || ir.ElementTypeOf(x.Type()) == elem {
		return x
	}
	return graph.Cast(e.B, e.Loc, x, elem)
}

// softmax builds softmax (or, with logForm, log_softmax) of x along axis:
// d = x - max(x), then exp(d) / sum(exp(d)) or d - log(sum(exp(d))).
func (e *emitter) softmax(x *ir.Value, axis int64, logForm bool) *ir.Value {
	axes := []int64{axis}
	d := e.Binary(graph.OpSub, x, e.Reduce(graph.OpReduceMax, x, axes, true))
	exp := e.Unary(graph.OpExp, d)
	sum := e.Reduce(graph.OpReduceSum, exp, axes, true)
	if logForm {
		return e.Binary(graph.OpSub, d, e.Unary(graph.OpLog, sum))
	}
	return e.Binary(graph.OpDiv, exp, sum)
}

func expandSoftmax(e *emitter, op *ir.Operation) *ir.Value {
	x := op.Operand(0)
	shape, elem := e.ranked(x)
	if e.Err != nil {
		return nil
	}
	y := e.softmax(e.widen(x), e.axisOf(op, len(shape)), op.Name() == graph.OpLogSoftmax)
	return e.narrow(y, elem)
}

// expandLogSumExp builds logsumexp as m + log(sum(exp(x - m))) along the
// axis, m the maximum with infinities replaced by 0 (a row of -inf then
// gives log 0 = -inf, a row holding +inf gives +inf).
func expandLogSumExp(e *emitter, op *ir.Operation) *ir.Value {
	x := op.Operand(0)
	shape, elem := e.ranked(x)
	if e.Err != nil {
		return nil
	}
	axes := []int64{e.axisOf(op, len(shape))}
	w := e.widen(x)
	ct := graph.ComputeType(elem)
	m := e.Reduce(graph.OpReduceMax, w, axes, true)
	inf := e.Op(graph.OpCmp, []*ir.Value{e.Unary(graph.OpAbs, m), e.Scalar(ct, math.Inf(1))}, ir.NamedAttr{Name: "predicate", Value: ir.Str("eq")})
	m = e.Op(graph.OpSelect, []*ir.Value{inf, e.Scalar(ct, 0), m})
	sum := e.Reduce(graph.OpReduceSum, e.Unary(graph.OpExp, e.Binary(graph.OpSub, w, m)), axes, true)
	y := e.Binary(graph.OpAdd, m, e.Unary(graph.OpLog, sum))
	if !graph.KeepDims(op) {
		// Drop the axis: a reshape when at most one size is dynamic (it
		// is inferred), else a maximum over the one element of the axis.
		out := slices.Delete(slices.Clone(shape), int(axes[0]), int(axes[0])+1)
		if dyn := slices.Index(out, ir.Dynamic); dyn < 0 || !slices.Contains(out[dyn+1:], ir.Dynamic) {
			for i, d := range out {
				if d == ir.Dynamic {
					out[i] = -1
				}
			}
			y = e.Op(graph.OpReshape, []*ir.Value{y}, ir.NamedAttr{Name: "shape", Value: graph.Ints(out...)})
		} else {
			y = e.Reduce(graph.OpReduceMax, y, axes, false)
		}
	}
	return e.narrow(y, elem)
}

// expandNorm builds layer_norm as (x - mean)·(1/√(var + ε))·w + b with
// var = mean((x - mean)²), and rms_norm as x·(1/√(mean(x²) + ε))·w, both
// over the dims axis…rank-1. The reciprocal of a square root, rather than
// rsqrt, is what the interpreter's rule rounds.
func expandNorm(e *emitter, op *ir.Operation) *ir.Value {
	shape, elem := e.ranked(op.Operand(0))
	if e.Err != nil {
		return nil
	}
	x, w := e.widen(op.Operand(0)), e.widen(op.Operand(1))
	axis := e.axisOf(op, len(shape))
	var axes []int64
	for d := axis; d < int64(len(shape)); d++ {
		axes = append(axes, d)
	}
	centred := x
	if op.Name() == graph.OpLayerNorm {
		centred = e.Binary(graph.OpSub, x, e.Reduce(graph.OpReduceMean, x, axes, true))
	}
	variance := e.Reduce(graph.OpReduceMean, e.Binary(graph.OpMul, centred, centred), axes, true)
	eps := e.Scalar(graph.ComputeType(elem), graph.Epsilon(op))
	inv := e.Unary(graph.OpReciprocal, e.Unary(graph.OpSqrt, e.Binary(graph.OpAdd, variance, eps)))
	y := e.Binary(graph.OpMul, e.Binary(graph.OpMul, centred, inv), w)
	if op.Name() == graph.OpLayerNorm {
		y = e.Binary(graph.OpAdd, y, e.widen(op.Operand(2)))
	}
	return e.narrow(y, elem)
}

// expandAttention builds softmax(q·kᵀ·scale + mask)·v: an i1 mask selects
// -inf where it is false, a float mask is added, and causal selects -inf
// above the diagonal, from two iotas compared. The scores are a product
// in the compute type (of the widened q and k); what follows runs in it
// too, and the probabilities are narrowed to the element type once for
// the product with v, which stays in the element type.
func expandAttention(e *emitter, op *ir.Operation) *ir.Value {
	q, k, v := op.Operand(0), op.Operand(1), op.Operand(2)
	qs, elem := e.ranked(q)
	ks, _ := e.ranked(k)
	if e.Err != nil {
		return nil
	}
	if len(qs) < 2 || len(ks) < 2 {
		e.Fail("q and k must have rank >= 2, got %s and %s", q.Type(), k.Type())
		return nil
	}
	ct := graph.ComputeType(elem)
	scores := e.scores(op, q, k, qs, ks, ct)
	if op.NumOperands() == 4 {
		mask := op.Operand(3)
		if _, me := e.ranked(mask); me == ir.I1 {
			scores = e.Op(graph.OpSelect, []*ir.Value{mask, scores, e.Scalar(ct, math.Inf(-1))})
		} else {
			scores = e.Binary(graph.OpAdd, scores, e.widen(mask))
		}
	}
	if graph.Causal(op) {
		scores = e.causal(scores, ct, q, k)
	}
	return e.Binary(graph.OpMatmul, e.narrow(e.softmax(scores, -1, false), elem), v)
}

// mT transposes the last two dims of x (of rank n).
func (e *emitter) mT(x *ir.Value, n int) *ir.Value {
	perm := make([]int64, n)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[n-2], perm[n-1] = perm[n-1], perm[n-2]
	return e.Op(graph.OpTranspose, []*ir.Value{x}, ir.NamedAttr{Name: "perm", Value: graph.Ints(perm...)})
}

// scores builds attention's q·kᵀ·scale (op's scale, else 1/√D), q and k
// of shapes qs and ks: the product of the operands widened to ct, times
// the scale in ct.
func (e *emitter) scores(op *ir.Operation, q, k *ir.Value, qs, ks []int64, ct ir.Type) *ir.Value {
	s := e.Binary(graph.OpMatmul, e.widen(q), e.mT(e.widen(k), len(ks)))
	return e.Binary(graph.OpMul, s, e.Scalar(ct, e.scaleOf(op, q, qs)))
}

// scaleOf is attention op's score scale: its attribute, else 1/√D for q
// of shape qs.
func (e *emitter) scaleOf(op *ir.Operation, q *ir.Value, qs []int64) float64 {
	factor, ok := graph.Scale(op)
	switch d := qs[len(qs)-1]; {
	case ok:
	case d == ir.Dynamic:
		e.Fail("the default scale 1/√D needs a static D, got %s", q.Type())
	default:
		factor = 1 / math.Sqrt(float64(d))
	}
	return factor
}

// expandAttentionGrad builds graph.attention_grad's gradients from
// attention's probabilities p (as expandAttention computes them): dv =
// pᵀ·do with p in the element type, dS = p·(do·vᵀ − Σ do·o)·scale in the
// compute type, rounded to the element type, dq = dS·k, dk = dSᵀ·q.
func expandAttentionGrad(e *emitter, op *ir.Operation) []*ir.Value {
	q, k, v, o, do := op.Operand(0), op.Operand(1), op.Operand(2), op.Operand(3), op.Operand(4)
	qs, elem := e.ranked(q)
	ks, _ := e.ranked(k)
	if e.Err != nil {
		return nil
	}
	if len(qs) < 2 || len(ks) != len(qs) {
		e.Fail("q and k must have one rank >= 2, got %s and %s", q.Type(), k.Type())
		return nil
	}
	n := len(qs)
	ct := graph.ComputeType(elem)
	s := e.scores(op, q, k, qs, ks, ct)
	if graph.Causal(op) {
		s = e.causal(s, ct, q, k)
	}
	p := e.softmax(s, -1, false)
	dv := e.Binary(graph.OpMatmul, e.mT(e.narrow(p, elem), n), do)
	dp := e.Binary(graph.OpMatmul, e.widen(do), e.mT(e.widen(v), n))
	dd := e.Reduce(graph.OpReduceSum, e.Binary(graph.OpMul, e.widen(do), e.widen(o)), []int64{-1}, true)
	ds := e.Binary(graph.OpMul, e.Binary(graph.OpMul, p, e.Binary(graph.OpSub, dp, dd)), e.Scalar(ct, e.scaleOf(op, q, qs)))
	dse := e.narrow(ds, elem)
	dq := e.Binary(graph.OpMatmul, dse, k)
	dk := e.Binary(graph.OpMatmul, e.mT(dse, n), q)
	return []*ir.Value{dq, dk, dv}
}

// causal keeps scores[..., i, j] where j <= i and puts -inf elsewhere:
// an iota of the rows against one of the keys, of the lengths' sizes q
// and k (symbolic when dynamic: graph.iota's size is then a symbol's,
// which a function argument gives at run time).
func (e *emitter) causal(scores *ir.Value, elem ir.Type, q, k *ir.Value) *ir.Value {
	if e.Err != nil {
		return nil
	}
	lq, lk := graph.DimsOf(q.Type().(*ir.TensorType)), graph.DimsOf(k.Type().(*ir.TensorType))
	rows, keys := lq[len(lq)-2], lk[len(lk)-2]
	if graph.IsUnknown(rows) || graph.IsUnknown(keys) {
		e.Fail("a causal mask needs sequence lengths that are static or named by symbols (#graph.dims), got %s and %s", q.Type(), k.Type())
		return nil
	}
	idx := graph.TensorWithDims([]sym.Expr{rows, keys}, ir.I64)
	iota := func(axis int64) *ir.Value {
		v, err := graph.BuildTyped(e.B, graph.OpIota, e.Loc, nil, ir.Dict(ir.NamedAttr{Name: "axis", Value: ir.IntegerAttr{Value: axis, Type: ir.I64}}), idx)
		if err != nil && e.Err == nil {
			e.Err = err
		}
		return v
	}
	row, col := iota(0), iota(1)
	keep := e.Op(graph.OpCmp, []*ir.Value{col, row}, ir.NamedAttr{Name: "predicate", Value: ir.Str("le")})
	return e.Op(graph.OpSelect, []*ir.Value{keep, scores, e.Scalar(elem, math.Inf(-1))})
}
