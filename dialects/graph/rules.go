package graph

import (
	"fmt"
	"slices"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

// This file holds the shape rules of the op table. Each returns the result
// types an op must have, or an error naming the operand and sizes at fault.

func one(t ir.Type) []ir.Type { return []ir.Type{t} }

// declaredResult returns result #0 as written in the IR, for ops whose
// result type is not determined by operands and attributes.
func declaredResult(declared []ir.Type, class elemClass) (*ir.TensorType, error) {
	if len(declared) != 1 {
		return nil, fmt.Errorf("expects 1 result with an explicit type (it cannot be inferred), got %d", len(declared))
	}
	return asTensor(declared[0], "result", class)
}

// staticResult is declaredResult for ops that create data, whose sizes
// must all be known.
func staticResult(declared []ir.Type, class elemClass) (*ir.TensorType, error) {
	t, err := declaredResult(declared, class)
	if err != nil {
		return nil, err
	}
	if numElements(t.Shape()) < 0 {
		return nil, fmt.Errorf("result type %s must have a static shape", t)
	}
	return t, nil
}

func ruleConstant(_ []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	v := a.d.Get("value").(ir.DenseAttr)
	t, err := asTensor(v.Type, "attribute 'value'", anyElem)
	if err != nil {
		return nil, err
	}
	if numElements(t.Shape()) < 0 {
		return nil, fmt.Errorf("attribute 'value' must have a static shape, got %s", t)
	}
	return one(t), nil
}

func ruleIota(_ []*ir.TensorType, a attrView, declared []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	t, err := declaredResult(declared, numericElem)
	if err != nil {
		return nil, err
	}
	// (A dynamic size must be a symbol's, which an argument's size gives
	// at run time.)
	for i, d := range DimsOf(t) {
		if IsUnknown(d) {
			return nil, fmt.Errorf("result type %s: dim %d is a ? that no #graph.dims symbol names", t, i)
		}
	}
	if _, err := normAxis("axis", a.int("axis", 0), len(t.Shape())); err != nil {
		return nil, err
	}
	return one(t), nil
}

func ruleFull(_ []*ir.TensorType, a attrView, declared []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	t, err := staticResult(declared, anyElem)
	if err != nil {
		return nil, err
	}
	if err := scalarFits("fill", a.d.Get("fill"), t.ElementType()); err != nil {
		return nil, err
	}
	return one(t), nil
}

// scalarFits checks that a fill or padding value can be stored in elem:
// floats need a float tensor; integers fit any tensor, booleans only 0 and 1.
func scalarFits(name string, v ir.Attribute, elem ir.Type) error {
	switch v := v.(type) {
	case ir.FloatAttr:
		if !ir.IsFloat(elem) {
			return fmt.Errorf("attribute '%s' is the float %s but the element type is %s", name, v, elem)
		}
	case ir.IntegerAttr:
		if elem == ir.I1 && v.Value != 0 && v.Value != 1 {
			return fmt.Errorf("attribute '%s' is %s, which an i1 tensor cannot hold", name, v)
		}
	}
	return nil
}

// ruleSame gives the result the type of operand 0 (unary elementwise ops,
// softmax).
func ruleSame(in []*ir.TensorType, _ attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	return one(in[0]), nil
}

// ruleSoftmax checks the axis of softmax and log_softmax.
func ruleSoftmax(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	if _, err := normAxis("axis", a.int("axis", -1), len(in[0].Shape())); err != nil {
		return nil, err
	}
	return one(in[0]), nil
}

// ruleLogSumExp checks the axis of logsumexp and removes it from the
// shape (keeps it as size 1 with keepdims).
func ruleLogSumExp(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	shape := DimsOf(in[0])
	axis, err := normAxis("axis", a.int("axis", -1), len(shape))
	if err != nil {
		return nil, err
	}
	return one(TensorWithDims(reduceShape(shape, []int{axis}, a.bool("keepdims")), in[0].ElementType())), nil
}

func ruleBinary(in []*ir.TensorType, _ attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := sameElem(in, 0, 1); err != nil {
		return nil, err
	}
	shape, err := broadcastOperands(in, cs, 0, 1)
	if err != nil {
		return nil, err
	}
	return one(TensorWithDims(shape, in[0].ElementType())), nil
}

func ruleCmp(in []*ir.TensorType, a attrView, d []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	ts, err := ruleBinary(in, a, d, cs)
	if err != nil {
		return nil, err
	}
	return one(TensorWithDims(DimsOf(ts[0].(*ir.TensorType)), ir.I1)), nil
}

func ruleSelect(in []*ir.TensorType, _ attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := sameElem(in, 1, 2); err != nil {
		return nil, err
	}
	shape, err := broadcastOperands(in, cs, 0, 1, 2)
	if err != nil {
		return nil, err
	}
	return one(TensorWithDims(shape, in[1].ElementType())), nil
}

func ruleCast(in []*ir.TensorType, _ attrView, declared []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	t, err := declaredResult(declared, anyElem)
	if err != nil {
		return nil, err
	}
	return one(TensorWithDims(DimsOf(in[0]), t.ElementType())), nil
}

// reduceShape drops (or, with keepdims, sets to 1) the reduced axes.
func reduceShape(shape []sym.Expr, axes []int, keepdims bool) []sym.Expr {
	var out []sym.Expr
	for i, d := range shape {
		switch {
		case !slices.Contains(axes, i):
			out = append(out, d)
		case keepdims:
			out = append(out, sym.Const(1))
		}
	}
	return out
}

// reduceAxes returns the normalized axes attribute; absent, every axis.
func reduceAxes(a attrView, rank int) ([]int, error) {
	if !a.has("axes") {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	return normAxes("axis", a.ints("axes"), rank)
}

func ruleReduce(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	axes, err := reduceAxes(a, len(in[0].Shape()))
	if err != nil {
		return nil, err
	}
	return one(TensorWithDims(reduceShape(DimsOf(in[0]), axes, a.bool("keepdims")), in[0].ElementType())), nil
}

func ruleArgmax(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	shape := DimsOf(in[0])
	axis, err := normAxis("axis", a.int("axis", 0), len(shape))
	if err != nil {
		return nil, err
	}
	// The axis must not be empty.
	if c := (sym.Constraint{L: shape[axis], Rel: sym.GE, R: sym.Const(1)}); !IsUnknown(shape[axis]) {
		if !holdsMaybe(c) {
			return nil, fmt.Errorf("cannot take argmax over axis %d of size 0 in %s", axis, in[0])
		}
		require(c, cs)
	}
	return one(TensorWithDims(reduceShape(shape, []int{axis}, a.bool("keepdims")), ir.I64)), nil
}

func ruleReshape(in []*ir.TensorType, a attrView, declared []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	src := DimsOf(in[0])
	var shape []sym.Expr
	if a.has("shape") {
		var err error
		if shape, err = reshapeTarget(src, a.ints("shape"), cs); err != nil {
			return nil, err
		}
		if slices.Contains(a.ints("shape"), -1) {
			// The inferred size makes the counts agree.
			return one(TensorWithDims(shape, in[0].ElementType())), nil
		}
	} else {
		t, err := declaredResult(declared, anyElem)
		if err != nil {
			return nil, fmt.Errorf("%v; give the 'shape' attribute to infer it", err)
		}
		// Without 'shape', a dynamic size would have to be inferred from the
		// element count, which nothing checks divides evenly: the
		// interpreter refused such a reshape while lowered code rounded
		// the size down and returned a wrong shape.
		if slices.Contains(t.Shape(), ir.Dynamic) {
			return nil, fmt.Errorf("reshape to %s needs the 'shape' attribute (with -1 for the size to infer) to say how its dynamic sizes follow from the operand's", t)
		}
		shape = DimsOf(t)
	}
	n, nOK := sym.ProductWithin(src...)
	m, mOK := sym.ProductWithin(shape...)
	if nOK && mOK && !IsUnknown(n) && !IsUnknown(m) {
		if !holdsMaybe(sym.Eq(n, m)) {
			return nil, fmt.Errorf("cannot reshape %s (%s elements) to %s (%s elements)", in[0], dimString(n), shapeString(shape), dimString(m))
		}
		require(sym.Eq(n, m), cs)
	}
	return one(TensorWithDims(shape, in[0].ElementType())), nil
}

// reshapeTarget resolves the 'shape' attribute of reshape: sizes ≥ 0, and
// at most one -1, which takes whatever size the element count leaves
// (NumPy): the count floordiv the other sizes, which must divide it, or
// "?" when the operand's count is unknown.
func reshapeTarget(src []sym.Expr, shape []int64, cs *sym.Constraints) ([]sym.Expr, error) {
	out := make([]sym.Expr, len(shape))
	infer := -1
	known := int64(1)
	for i, d := range shape {
		switch {
		case d == -1 && infer >= 0:
			return nil, fmt.Errorf("shape %v has more than one -1", shape)
		case d == -1:
			infer = i
		case d < 0:
			return nil, fmt.Errorf("shape %v has the negative size %d", shape, d)
		default:
			known *= d
			out[i] = sym.Const(d)
		}
	}
	if infer < 0 {
		return out, nil
	}
	n, ok := sym.ProductWithin(src...)
	if !ok || IsUnknown(n) {
		out[infer] = freshUnknown()
		return out, nil
	}
	divides := sym.Eq(sym.Mod(n, sym.Const(max(known, 1))), sym.Const(0))
	if known == 0 || !holdsMaybe(divides) {
		return nil, fmt.Errorf("cannot reshape %s elements to shape %v", dimString(n), shape)
	}
	require(divides, cs)
	out[infer] = sym.FloorDiv(n, sym.Const(known))
	return out, nil
}

func ruleTranspose(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	src := DimsOf(in[0])
	perm := a.ints("perm")
	if err := checkPerm(perm, len(src)); err != nil {
		return nil, err
	}
	out := make([]sym.Expr, len(src))
	for i, p := range perm {
		out[i] = src[p]
	}
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

func ruleBroadcastTo(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	src, shape := DimsOf(in[0]), a.ints("shape")
	if len(src) > len(shape) {
		return nil, fmt.Errorf("cannot broadcast %s to the lower rank shape %v", in[0], shape)
	}
	off := len(shape) - len(src)
	for i, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("shape %v has the negative size %d", shape, d)
		}
		if i < off || isOne(src[i-off]) {
			continue
		}
		if _, ok := meet(src[i-off], sym.Const(d), cs); !ok {
			return nil, fmt.Errorf("cannot broadcast %s to %v (operand dim %d: %s vs %d)", in[0], shape, i-off, dimString(src[i-off]), d)
		}
	}
	return one(ir.TensorOf(shape, in[0].ElementType())), nil
}

func ruleConcat(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	first := DimsOf(in[0])
	axis, err := normAxis("axis", a.int("axis", 0), len(first))
	if err != nil {
		return nil, err
	}
	out := slices.Clone(first)
	for i, t := range in[1:] {
		i++
		if err := sameElem(in, 0, i); err != nil {
			return nil, err
		}
		s := DimsOf(t)
		if len(s) != len(first) {
			return nil, fmt.Errorf("operand #%d has rank %d but operand #0 has rank %d (%s vs %s)", i, len(s), len(first), t, in[0])
		}
		for d := range s {
			if d == axis {
				out[d] = sym.Add(out[d], s[d])
				continue
			}
			m, ok := meet(out[d], s[d], cs)
			if !ok {
				return nil, fmt.Errorf("operand #%d dim %d is %s but operand #0 dim %d is %s (only the concat axis %d may differ)",
					i, d, dimString(s[d]), d, dimString(first[d]), axis)
			}
			out[d] = m
		}
	}
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

func ruleSlice(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	src := DimsOf(in[0])
	starts, limits := a.ints("starts"), a.ints("limits")
	strides := a.ints("strides")
	if !a.has("strides") {
		strides = slices.Repeat([]int64{1}, len(src))
	}
	for _, l := range []struct {
		name string
		vs   []int64
	}{{"starts", starts}, {"limits", limits}, {"strides", strides}} {
		if len(l.vs) != len(src) {
			return nil, fmt.Errorf("'%s' has %d entries but the operand %s has rank %d", l.name, len(l.vs), in[0], len(src))
		}
	}
	out := make([]int64, len(src))
	for i, d := range src {
		s, l, st := starts[i], limits[i], strides[i]
		if st < 1 {
			return nil, fmt.Errorf("stride %d of dim %d must be positive", st, i)
		}
		fits := sym.Constraint{L: d, Rel: sym.GE, R: sym.Const(l)}
		if s < 0 || l < s || (!IsUnknown(d) && !holdsMaybe(fits)) {
			return nil, fmt.Errorf("slice [%d, %d) of dim %d is out of bounds for size %s (need 0 <= start <= limit <= size)", s, l, i, dimString(d))
		}
		if !IsUnknown(d) {
			require(fits, cs)
		}
		out[i] = (l - s + st - 1) / st
	}
	return one(ir.TensorOf(out, in[0].ElementType())), nil
}

func rulePad(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	src := DimsOf(in[0])
	low, high := a.ints("low"), a.ints("high")
	if len(low) != len(src) || len(high) != len(src) {
		return nil, fmt.Errorf("'low' and 'high' need %d entries for %s, got %d and %d", len(src), in[0], len(low), len(high))
	}
	if v := a.d.Get("value"); v != nil {
		if err := scalarFits("value", v, in[0].ElementType()); err != nil {
			return nil, err
		}
	}
	out := make([]sym.Expr, len(src))
	for i, d := range src {
		if low[i] < 0 || high[i] < 0 {
			return nil, fmt.Errorf("padding of dim %d must be non-negative, got low %d, high %d", i, low[i], high[i])
		}
		out[i] = sym.Add(d, sym.Const(low[i]+high[i]))
	}
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

func ruleGather(in []*ir.TensorType, a attrView, _ []ir.Type, _ *sym.Constraints) ([]ir.Type, error) {
	src := DimsOf(in[0])
	axis, err := normAxis("axis", a.int("axis", 0), len(src))
	if err != nil {
		return nil, err
	}
	out := slices.Concat(src[:axis], DimsOf(in[1]), src[axis+1:])
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

// ruleScatterAdd: updates = A + indices.shape + B gives A + [size] + B, the
// result's axis being len(A).
func ruleScatterAdd(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	upd, idx := DimsOf(in[0]), DimsOf(in[1])
	if len(upd) < len(idx) {
		return nil, fmt.Errorf("updates of rank %d cannot hold indices of rank %d", len(upd), len(idx))
	}
	axis, err := normAxis("axis", a.int("axis", 0), len(upd)-len(idx)+1)
	if err != nil {
		return nil, err
	}
	size := a.int("size", 0)
	if size < 0 {
		return nil, fmt.Errorf("size must be >= 0, got %d", size)
	}
	for i, d := range idx {
		if _, ok := meet(upd[axis+i], d, cs); !ok {
			return nil, fmt.Errorf("updates dim %d (%s) differs from indices dim %d (%s)", axis+i, dimString(upd[axis+i]), i, dimString(d))
		}
	}
	out := slices.Concat(upd[:axis], []sym.Expr{sym.Const(size)}, upd[axis+len(idx):])
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

// MatmulShape returns the result shape of numpy.matmul on shapes a and b:
// 1-D operands get a dim of 1 prepended (a) or appended (b) that is dropped
// from the result, and batch dims broadcast.
func MatmulShape(a, b []int64) ([]int64, error) {
	out, err := matmulDims(dimsFromShape(a), dimsFromShape(b), nil)
	if err != nil {
		return nil, err
	}
	shape := make([]int64, len(out))
	for i, d := range out {
		shape[i] = ir.Dynamic
		if c, ok := d.IsConst(); ok {
			shape[i] = c
		}
	}
	return shape, nil
}

// matmulDims is MatmulShape on symbolic sizes; equal inner sizes are a
// constraint when symbolic.
func matmulDims(a, b []sym.Expr, cs *sym.Constraints) ([]sym.Expr, error) {
	if len(a) == 0 || len(b) == 0 {
		return nil, fmt.Errorf("operands must have rank >= 1, got ranks %d and %d", len(a), len(b))
	}
	la, lb := a, b
	if len(a) == 1 {
		la = []sym.Expr{sym.Const(1), a[0]}
	}
	if len(b) == 1 {
		lb = []sym.Expr{b[0], sym.Const(1)}
	}
	m, k1 := la[len(la)-2], la[len(la)-1]
	k2, n := lb[len(lb)-2], lb[len(lb)-1]
	if _, ok := meet(k1, k2, cs); !ok {
		return nil, fmt.Errorf("inner dimensions differ: lhs dim %d is %s, rhs dim %d is %s", len(a)-1, dimString(k1), max(len(b)-2, 0), dimString(k2))
	}
	batch, bad, ok := broadcastShapes(la[:len(la)-2], lb[:len(lb)-2], cs)
	if !ok {
		return nil, fmt.Errorf("batch dimensions are not broadcast-compatible: %s vs %s (batch dim %d)", shapeString(la[:len(la)-2]), shapeString(lb[:len(lb)-2]), bad)
	}
	out := batch
	if len(a) > 1 {
		out = append(out, m)
	}
	if len(b) > 1 {
		out = append(out, n)
	}
	return out, nil
}

func ruleMatmul(in []*ir.TensorType, _ attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := sameElem(in, 0, 1); err != nil {
		return nil, err
	}
	shape, err := matmulDims(DimsOf(in[0]), DimsOf(in[1]), cs)
	if err != nil {
		return nil, err
	}
	if len(in) == 3 {
		if err := sameElem(in, 0, 2); err != nil {
			return nil, err
		}
		b := DimsOf(in[2])
		ok := len(DimsOf(in[1])) >= 2 && len(b) == 1
		if ok {
			_, ok = meet(b[0], shape[len(shape)-1], cs)
		}
		if !ok {
			return nil, fmt.Errorf("bias must have shape [N] (the result's last dim, N of an rhs of rank >= 2), got %s", in[2])
		}
	}
	return one(TensorWithDims(shape, in[0].ElementType())), nil
}

// Conv2DParams are the attributes of graph.conv2d, normalized.
type Conv2DParams struct {
	Strides   [2]int64 // (h, w)
	Padding   [4]int64 // top, left, bottom, right
	Dilations [2]int64 // (h, w)
	Groups    int64
	// ChannelsLast is layout "NHWC": input [N, H, W, C], weight [O, KH,
	// KW, C/groups] and result [N, OH, OW, O] (graph-channels-last).
	ChannelsLast bool
}

// The values of graph.conv2d's layout attribute.
const (
	LayoutNCHW = "NCHW"
	LayoutNHWC = "NHWC"
)

// NCHWOfNHWC and NHWCOfNCHW are the permutations between the layouts:
// transpose(x, NHWCOfNCHW) stores an [N, C, H, W] tensor channels last,
// transpose(y, NCHWOfNHWC) reads it back.
var (
	NHWCOfNCHW = []int64{0, 2, 3, 1}
	NCHWOfNHWC = []int64{0, 3, 1, 2}
)

// ToNCHW returns dims, an NHWC convolution operand's or result's, in the
// order of dimensions NCHW (channels second): [d0, d3, d1, d2].
func ToNCHW[T any](dims []T) []T { return []T{dims[0], dims[3], dims[1], dims[2]} }

// ToNHWC is the inverse of ToNCHW: [d0, d2, d3, d1].
func ToNHWC[T any](dims []T) []T { return []T{dims[0], dims[2], dims[3], dims[1]} }

// conv2dParams reads and checks the conv2d attributes.
func conv2dParams(a attrView) (Conv2DParams, error) {
	p := Conv2DParams{Strides: [2]int64{1, 1}, Dilations: [2]int64{1, 1}, Groups: a.int("groups", 1)}
	for _, f := range []struct {
		name string
		dst  []int64
	}{{"strides", p.Strides[:]}, {"dilations", p.Dilations[:]}} {
		if !a.has(f.name) {
			continue
		}
		vs := a.ints(f.name)
		if len(vs) != 2 || vs[0] < 1 || vs[1] < 1 {
			return p, fmt.Errorf("'%s' must be 2 positive integers, got %v", f.name, vs)
		}
		copy(f.dst, vs)
	}
	if a.has("padding") {
		switch pad := a.ints("padding"); len(pad) {
		case 2:
			p.Padding = [4]int64{pad[0], pad[1], pad[0], pad[1]}
		case 4:
			p.Padding = [4]int64(pad)
		default:
			return p, fmt.Errorf("'padding' must have 2 (h, w) or 4 (top, left, bottom, right) entries, got %v", pad)
		}
		for _, v := range p.Padding {
			if v < 0 {
				return p, fmt.Errorf("'padding' must be non-negative, got %v", a.ints("padding"))
			}
		}
	}
	if p.Groups < 1 {
		return p, fmt.Errorf("'groups' must be positive, got %d", p.Groups)
	}
	switch l := a.str("layout", LayoutNCHW); l {
	case LayoutNCHW:
	case LayoutNHWC:
		p.ChannelsLast = true
	default:
		return p, fmt.Errorf("'layout' must be %q or %q, got %q", LayoutNCHW, LayoutNHWC, l)
	}
	return p, nil
}

// ConvOutSize is the output size of a convolution along one spatial dim.
func ConvOutSize(in, k, padLo, padHi, stride, dilation int64) int64 {
	return (in+padLo+padHi-dilation*(k-1)-1)/stride + 1
}

func ruleConv2D(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := sameElem(in, 0, 1); err != nil {
		return nil, err
	}
	x, w := DimsOf(in[0]), DimsOf(in[1])
	p, err := conv2dParams(a)
	if err != nil {
		return nil, err
	}
	if len(x) != 4 || len(w) != 4 {
		if p.ChannelsLast {
			return nil, fmt.Errorf("expects a rank-4 input (N, H, W, C) and a rank-4 weight (O, KH, KW, C/groups), got %s and %s", in[0], in[1])
		}
		return nil, fmt.Errorf("expects a rank-4 input (N, C, H, W) and a rank-4 weight (O, C/groups, KH, KW), got %s and %s", in[0], in[1])
	}
	if p.ChannelsLast {
		// The checks below read the dimensions in NCHW order.
		x, w = ToNCHW(x), ToNCHW(w)
	}
	g := sym.Const(p.Groups)
	for _, c := range []struct {
		d    sym.Expr
		what string
	}{{x[1], "input"}, {w[0], "output"}} {
		divides := sym.Eq(sym.Mod(c.d, g), sym.Const(0))
		if IsUnknown(c.d) {
			continue
		}
		if !holdsMaybe(divides) {
			return nil, fmt.Errorf("%s channels %s are not divisible by groups %d", c.what, dimString(c.d), p.Groups)
		}
		require(divides, cs)
	}
	if perGroup := sym.FloorDiv(x[1], g); !IsUnknown(x[1]) {
		if _, ok := meet(perGroup, w[1], cs); !ok {
			wdim := 1
			if p.ChannelsLast {
				wdim = 3
			}
			return nil, fmt.Errorf("weight dim %d is %s but the input has %s channels in %d groups (%s per group)",
				wdim, dimString(w[1]), dimString(x[1]), p.Groups, dimString(perGroup))
		}
	}
	if len(in) == 3 {
		if err := sameElem(in, 0, 2); err != nil {
			return nil, err
		}
		b := DimsOf(in[2])
		ok := len(b) == 1
		if ok {
			_, ok = meet(b[0], w[0], cs)
		}
		if !ok {
			return nil, fmt.Errorf("bias must have shape [%s] (the output channels), got %s", dimString(w[0]), in[2])
		}
	}
	out := []sym.Expr{x[0], w[0], {}, {}}
	for i := range 2 {
		o := convOutDim(x[2+i], w[2+i], p.Padding[i], p.Padding[2+i], p.Strides[i], p.Dilations[i])
		out[2+i] = o
		if IsUnknown(o) {
			continue
		}
		fits := sym.Constraint{L: o, Rel: sym.GE, R: sym.Const(1)}
		if !holdsMaybe(fits) {
			return nil, fmt.Errorf("kernel %s (dilated) does not fit the padded input %s along spatial dim %d", in[1], in[0], i)
		}
		require(fits, cs)
	}
	if p.ChannelsLast {
		out = ToNHWC(out)
	}
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

// convOutDim is ConvOutSize on symbolic sizes.
func convOutDim(in, k sym.Expr, padLo, padHi, stride, dilation int64) sym.Expr {
	span := sym.Add(sym.Mul(sym.Const(dilation), sym.Sub(k, sym.Const(1))), sym.Const(1))
	n := sym.Sub(sym.Add(in, sym.Const(padLo+padHi)), span)
	return sym.Add(sym.FloorDiv(n, sym.Const(stride)), sym.Const(1))
}

// ruleNorm checks layer_norm (x, w, b) and rms_norm (x, w): the weight and
// bias shapes equal the normalized dims axis…rank-1 of x.
func ruleNorm(in []*ir.TensorType, a attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	x := DimsOf(in[0])
	axis, err := normAxis("axis", a.int("axis", -1), len(x))
	if err != nil {
		return nil, err
	}
	norm := x[axis:]
	for i := 1; i < len(in); i++ {
		if err := sameElem(in, 0, i); err != nil {
			return nil, err
		}
		s := DimsOf(in[i])
		ok := len(s) == len(norm)
		for j := 0; ok && j < len(s); j++ {
			_, ok = meet(s[j], norm[j], cs)
		}
		if !ok {
			return nil, fmt.Errorf("operand #%d (%s) must have shape %s (dims %d… of %s), got %s",
				i, []string{"", "weight", "bias"}[i], shapeString(norm), axis, in[0], in[i])
		}
	}
	if e := a.float("epsilon", 1e-5); e < 0 {
		return nil, fmt.Errorf("'epsilon' must be non-negative, got %g", e)
	}
	return one(in[0]), nil
}

func ruleAttention(in []*ir.TensorType, _ attrView, _ []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := sameElem(in, 0, 1, 2); err != nil {
		return nil, err
	}
	q, k, v := DimsOf(in[0]), DimsOf(in[1]), DimsOf(in[2])
	if len(q) < 2 || len(k) < 2 || len(v) < 2 {
		return nil, fmt.Errorf("q, k and v must have rank >= 2 (..., L, D), got %s, %s and %s", in[0], in[1], in[2])
	}
	if _, ok := meet(q[len(q)-1], k[len(k)-1], cs); !ok {
		return nil, fmt.Errorf("q and k head dims differ: %s vs %s", dimString(q[len(q)-1]), dimString(k[len(k)-1]))
	}
	lk, ok := meet(k[len(k)-2], v[len(v)-2], cs)
	if !ok {
		return nil, fmt.Errorf("k and v sequence lengths differ: %s vs %s", dimString(k[len(k)-2]), dimString(v[len(v)-2]))
	}
	batch, _, ok := broadcastShapes(q[:len(q)-2], k[:len(k)-2], cs)
	if ok {
		batch, _, ok = broadcastShapes(batch, v[:len(v)-2], cs)
	}
	if !ok {
		return nil, fmt.Errorf("batch dims of q, k and v are not broadcast-compatible: %s, %s and %s", in[0], in[1], in[2])
	}
	lq := q[len(q)-2]
	if len(in) == 4 {
		scores := append(slices.Clone(batch), lq, lk)
		mask := DimsOf(in[3])
		if _, _, ok := broadcastShapes(mask, scores, cs); !ok || len(mask) > len(scores) {
			return nil, fmt.Errorf("mask %s does not broadcast to the scores shape %s", in[3], shapeString(scores))
		}
		if e := in[3].ElementType(); e != ir.I1 && e != in[0].ElementType() {
			return nil, fmt.Errorf("mask must be i1 (true keeps a score) or %s (added to the scores), got %s", in[0].ElementType(), e)
		}
	}
	out := append(batch, lq, v[len(v)-1])
	return one(TensorWithDims(out, in[0].ElementType())), nil
}

// ruleAttentionGrad: q, k and v as for attention but with equal batch
// dims (no broadcasting), o and do of attention's result type; the
// results are q's, k's and v's types.
func ruleAttentionGrad(in []*ir.TensorType, a attrView, d []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if err := sameElem(in, 0, 1, 2, 3, 4); err != nil {
		return nil, err
	}
	fwd, err := ruleAttention(in[:3], a, nil, cs)
	if err != nil {
		return nil, err
	}
	q, k, v := DimsOf(in[0]), DimsOf(in[1]), DimsOf(in[2])
	if len(k) != len(q) || len(v) != len(q) {
		return nil, fmt.Errorf("q, k and v must have the same rank (equal batch dims), got %s, %s and %s", in[0], in[1], in[2])
	}
	for i := range len(q) - 2 {
		if _, ok := meet(q[i], k[i], cs); !ok {
			return nil, fmt.Errorf("q and k batch dim %d differ: %s vs %s (broadcast batch dims are not supported)", i, dimString(q[i]), dimString(k[i]))
		}
		if _, ok := meet(q[i], v[i], cs); !ok {
			return nil, fmt.Errorf("q and v batch dim %d differ: %s vs %s (broadcast batch dims are not supported)", i, dimString(q[i]), dimString(v[i]))
		}
	}
	out := DimsOf(fwd[0].(*ir.TensorType))
	for i, name := range []string{"o", "do"} {
		t := DimsOf(in[3+i])
		ok := len(t) == len(out)
		for j := 0; ok && j < len(t); j++ {
			_, ok = meet(t[j], out[j], cs)
		}
		if !ok {
			return nil, fmt.Errorf("%s must have attention's result shape %s, got %s", name, fwd[0], in[3+i])
		}
	}
	return []ir.Type{in[0], in[1], in[2]}, nil
}

// ruleRegion returns the declared results of fusion; the region's yield is
// checked by verifyFusion.
func ruleRegion(_ []*ir.TensorType, _ attrView, declared []ir.Type, cs *sym.Constraints) ([]ir.Type, error) {
	if declared == nil {
		return nil, fmt.Errorf("result types come from the region and cannot be inferred")
	}
	for i, t := range declared {
		if _, err := asTensor(t, fmt.Sprintf("result #%d", i), anyElem); err != nil {
			return nil, err
		}
	}
	return declared, nil
}

// ruleYield: yield has no results.
func ruleYield([]*ir.TensorType, attrView, []ir.Type, *sym.Constraints) ([]ir.Type, error) {
	return nil, nil
}

// verifyFusion checks that the body's arguments match the operands.
func verifyFusion(op *ir.Operation) error {
	if op.NumRegions() != 1 {
		return fmt.Errorf("expects 1 region, got %d", op.NumRegions())
	}
	body := op.Region(0).Front()
	if body == nil {
		return fmt.Errorf("expects a non-empty region")
	}
	if body.NumArguments() != op.NumOperands() {
		return fmt.Errorf("region has %d arguments but the op has %d operands", body.NumArguments(), op.NumOperands())
	}
	for i, a := range body.Arguments() {
		if a.Type() != op.Operand(i).Type() {
			return fmt.Errorf("region argument #%d has type %s but operand #%d has type %s", i, a.Type(), i, op.Operand(i).Type())
		}
	}
	return nil
}

// verifyYield checks that yield ends a fusion and gives its result types.
func verifyYield(op *ir.Operation) error {
	parent := op.ParentOp()
	if parent == nil || parent.Name() != Name+".fusion" {
		return fmt.Errorf("expects parent op 'graph.fusion'")
	}
	if op.NumOperands() != parent.NumResults() {
		return fmt.Errorf("yields %d values but the parent fusion has %d results", op.NumOperands(), parent.NumResults())
	}
	for i, v := range op.Operands() {
		if v.Type() != parent.Result(i).Type() {
			return fmt.Errorf("operand #%d has type %s but the parent fusion's result #%d has type %s", i, v.Type(), i, parent.Result(i).Type())
		}
	}
	return nil
}
