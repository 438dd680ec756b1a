package onnx

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

func sameDims(a, b []sym.Expr) bool {
	return slices.EqualFunc(a, b, func(x, y sym.Expr) bool { return x.Equal(y) })
}

// reshape gives x the dims; a konst stays a konst. The graph op takes a
// static shape with at most one -1, so at most one dim may be symbolic.
func (c *nodeCtx) reshape(x *val, dims []sym.Expr) (*val, error) {
	if sameDims(x.dims, dims) {
		return x, nil
	}
	if x.k != nil {
		if shape, ok := (&val{dims: dims}).staticShape(); ok && ir.NumElements(shape) == int64(x.k.len()) {
			k := *x.k
			k.shape = shape
			return kval(&k), nil
		}
	}
	v := c.reshapeValue(x, dims)
	if v == nil {
		return nil, c.e.Err
	}
	return c.im.wrap(v), nil
}

func (c *nodeCtx) reshapeValue(x *val, dims []sym.Expr) *ir.Value {
	shape := make([]int64, len(dims))
	dynamic := 0
	for i, d := range dims {
		if v, ok := d.IsConst(); ok {
			shape[i] = v
			continue
		}
		shape[i] = -1
		dynamic++
	}
	if dynamic > 1 {
		if c.e.Err == nil {
			c.e.Err = errSymbolic("a reshape of %s to a shape with several symbolic sizes %s is not supported (one may be symbolic): "+
				"give dim_params static sizes (irc import --dim NAME=SIZE, Options.Dims; irc run and frontend.Load do it from their inputs)",
				shapeString(x.dims), shapeString(dims))
		}
		return nil
	}
	return c.e.Op("reshape", []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
}

func shapeString(dims []sym.Expr) string {
	s := "["
	for i, d := range dims {
		if i > 0 {
			s += ", "
		}
		s += d.String()
	}
	return s + "]"
}

// shapeArg reads a shape input (Reshape, Expand, ConstantOfShape) as
// symbolic sizes.
func (c *nodeCtx) shapeArg(i int) ([]sym.Expr, error) {
	x, err := c.input(i)
	if err != nil {
		return nil, err
	}
	if x.k == nil || x.k.isFloat() || len(x.k.shape) != 1 {
		return nil, fmt.Errorf("the shape (input %d) must be a 1-D integer constant or shape computation", i)
	}
	return x.k.i, nil
}

func convReshape(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	target, err := c.shapeArg(1)
	if err != nil {
		return nil, err
	}
	allowZero := c.int("allowzero", 0) != 0
	dims := make([]sym.Expr, len(target))
	infer := -1
	known := sym.Const(1)
	for i, d := range target {
		v, isConst := d.IsConst()
		switch {
		case isConst && v == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("shape %s has more than one -1", shapeString(target))
			}
			infer = i
			continue
		case isConst && v == 0 && !allowZero:
			if i >= x.rank() {
				return nil, fmt.Errorf("shape %s copies dim %d of a rank-%d input", shapeString(target), i, x.rank())
			}
			dims[i] = x.dims[i]
		case isConst && v < 0:
			return nil, fmt.Errorf("shape %s has the negative size %d", shapeString(target), v)
		default:
			dims[i] = d
		}
		known = sym.Mul(known, dims[i])
	}
	if infer >= 0 {
		var rest []sym.Expr
		for i, d := range dims {
			if i != infer {
				rest = append(rest, d)
			}
		}
		dims[infer] = divDims(x.dims, rest)
	}
	return one2(c.reshape(x, dims))
}

// divDims is product(num) / product(den) with equal symbolic factors
// cancelled first, so [s0, 3, 8] / [s0] is 24, not floordiv(s0*24, s0).
func divDims(num, den []sym.Expr) sym.Expr {
	num = slices.Clone(num)
	var left []sym.Expr
	for _, d := range den {
		if _, ok := d.IsConst(); ok {
			left = append(left, d)
			continue
		}
		if j := slices.IndexFunc(num, d.Equal); j >= 0 {
			num = slices.Delete(num, j, j+1)
			continue
		}
		left = append(left, d)
	}
	return sym.FloorDiv(sym.Product(num...), sym.Product(left...))
}

func convFlatten(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	axis := c.int("axis", 1)
	if axis < 0 {
		axis += int64(x.rank())
	}
	if axis < 0 || axis > int64(x.rank()) {
		return nil, fmt.Errorf("axis %d is out of range for rank %d", c.int("axis", 1), x.rank())
	}
	return one2(c.reshape(x, []sym.Expr{sym.Product(x.dims[:axis]...), sym.Product(x.dims[axis:]...)}))
}

func convUnsqueeze(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	axes, has, err := c.axesOf(1)
	if err != nil {
		return nil, err
	}
	if !has {
		return nil, errors.New("missing axes")
	}
	r := x.rank() + len(axes)
	set := make([]bool, r)
	for _, a := range axes {
		n, err := normAxis(a, r)
		if err != nil {
			return nil, err
		}
		if set[n] {
			return nil, fmt.Errorf("axis %d repeats", a)
		}
		set[n] = true
	}
	dims := make([]sym.Expr, 0, r)
	j := 0
	for i := range r {
		if set[i] {
			dims = append(dims, sym.Const(1))
		} else {
			dims = append(dims, x.dims[j])
			j++
		}
	}
	return one2(c.reshape(x, dims))
}

func convSqueeze(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	axes, has, err := c.axesOf(1)
	if err != nil {
		return nil, err
	}
	drop := make([]bool, x.rank())
	if !has || len(axes) == 0 {
		for i, d := range x.dims {
			drop[i] = d.Equal(sym.Const(1))
		}
	}
	for _, a := range axes {
		n, err := normAxis(a, x.rank())
		if err != nil {
			return nil, err
		}
		if v, ok := x.dims[n].IsConst(); ok && v != 1 {
			return nil, fmt.Errorf("cannot squeeze axis %d of size %d", a, v)
		}
		drop[n] = true
	}
	var dims []sym.Expr
	for i, d := range x.dims {
		if !drop[i] {
			dims = append(dims, d)
		}
	}
	return one2(c.reshape(x, dims))
}

func convTranspose(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	perm, ok := c.ints("perm")
	if !ok {
		perm = make([]int64, x.rank())
		for i := range perm {
			perm[i] = int64(x.rank() - 1 - i)
		}
	}
	if x.k != nil && len(perm) == len(x.k.shape) {
		return one(kval(kTranspose(x.k, perm)))
	}
	return c.wrap(c.e.Op("transpose", []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "perm", Value: graph.Ints(perm...)})), nil
}

func convConcat(c *nodeCtx) ([]*val, error) {
	if len(c.in) == 0 {
		return nil, errors.New("no inputs")
	}
	first, err := c.input(0)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(c.int("axis", 0), first.rank())
	if err != nil {
		return nil, err
	}
	allK := true
	var ks []*konst
	var vs []*ir.Value
	for i := range c.in {
		x, err := c.input(i)
		if err != nil {
			return nil, err
		}
		if x.elem != first.elem || x.rank() != first.rank() {
			return nil, fmt.Errorf("input %d (%s, rank %d) does not match input 0 (%s, rank %d)", i, x.elem, x.rank(), first.elem, first.rank())
		}
		if x.k == nil {
			allK = false
		} else {
			ks = append(ks, x.k)
		}
	}
	if allK {
		return one(kval(kConcat(ks, axis)))
	}
	for i := range c.in {
		x := c.in[i]
		if sz, ok := x.dims[axis].IsConst(); ok && sz == 0 {
			continue // empty pieces (ONNX allows them)
		}
		vs = append(vs, c.value(x))
	}
	if len(vs) == 1 {
		return c.wrap(vs[0]), nil
	}
	return c.wrap(c.e.Op("concat", vs, ir.NamedAttr{Name: "axis", Value: ir.Int(int64(axis), ir.I64)})), nil
}

func convGather(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	idx, err := c.input(1)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(c.int("axis", 0), x.rank())
	if err != nil {
		return nil, err
	}
	if ir.IsFloat(idx.elem) || idx.elem == ir.I1 {
		return nil, fmt.Errorf("indices must be integers, got %s", idx.elem)
	}
	if x.k != nil && idx.k != nil {
		if iv, ok := idx.k.concrete(); ok {
			if k, ok := kGather(x.k, iv, idx.k.shape, axis); ok {
				return one(kval(k))
			}
			return nil, fmt.Errorf("an index of %v is out of range for axis %d of %v", iv, axis, x.k.shape)
		}
	}
	return c.wrap(c.e.Op("gather", []*ir.Value{c.value(x), c.value(idx)}, ir.NamedAttr{Name: "axis", Value: ir.Int(int64(axis), ir.I64)})), nil
}

// sliceIndices is ONNX's clamping of one axis's start, end and step, with
// the indices taken; full reports the whole axis in order.
func sliceIndices(dim sym.Expr, start, end, step int64) (idx []int64, full bool, err error) {
	if step == 0 {
		return nil, false, errors.New("a step of 0")
	}
	n, static := dim.IsConst()
	if !static {
		// A symbolic size: only the whole axis in order is expressible.
		if step == 1 && start == 0 && end >= math.MaxInt32 {
			return nil, true, nil
		}
		return nil, false, errSymbolic("slicing [%d:%d:%d] of the symbolic size %s is not supported", start, end, step, dim)
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if step > 0 {
		start, end = min(max(start, 0), n), min(max(end, 0), n)
		for i := start; i < end; i += step {
			idx = append(idx, i)
		}
		return idx, step == 1 && start == 0 && end == n, nil
	}
	start, end = min(max(start, 0), n-1), min(max(end, -1), n-1)
	for i := start; i > end; i += step {
		idx = append(idx, i)
	}
	return idx, false, nil
}

func convSlice(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	var starts, ends, axes, steps []int64
	if c.im.opset < 10 || c.attr("starts") != nil {
		starts, _ = c.ints("starts")
		ends, _ = c.ints("ends")
		axes, _ = c.ints("axes")
	} else {
		if starts, err = c.konstInts(1, "starts"); err != nil {
			return nil, err
		}
		if ends, err = c.konstInts(2, "ends"); err != nil {
			return nil, err
		}
		if c.opt(3) != nil {
			if axes, err = c.konstInts(3, "axes"); err != nil {
				return nil, err
			}
		}
		if c.opt(4) != nil {
			if steps, err = c.konstInts(4, "steps"); err != nil {
				return nil, err
			}
		}
	}
	if axes == nil {
		axes = iotaList(int64(len(starts)))
	}
	if steps == nil {
		steps = ones(len(starts))
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	return one2(c.sliceAxes(x, starts, ends, axes, steps))
}

// sliceAxes takes x[starts:ends:steps] on axes.
func (c *nodeCtx) sliceAxes(x *val, starts, ends, axes, steps []int64) (*val, error) {
	idx := make([][]int64, x.rank())
	full := make([]bool, x.rank())
	for i := range full {
		full[i] = true
	}
	for j, a := range axes {
		ax, err := normAxis(a, x.rank())
		if err != nil {
			return nil, err
		}
		l, f, err := sliceIndices(x.dims[ax], starts[j], ends[j], steps[j])
		if err != nil {
			return nil, fmt.Errorf("axis %d: %w", a, err)
		}
		idx[ax], full[ax] = l, f
	}
	return c.take(x, idx, full)
}

// take keeps the indices idx[d] of each axis d that is not full.
func (c *nodeCtx) take(x *val, idx [][]int64, full []bool) (*val, error) {
	if !slices.Contains(full, false) {
		return x, nil
	}
	if x.k != nil {
		for d := range idx {
			if full[d] {
				idx[d] = iotaList(x.k.shape[d])
			}
		}
		return kval(kSlice(x.k, idx)), nil
	}
	// A static input sliced with positive strides: graph.slice.
	if shape, ok := x.staticShape(); ok {
		starts, limits, strides := make([]int64, len(shape)), slices.Clone(shape), ones(len(shape))
		simple := true
		for d := range shape {
			if full[d] {
				continue
			}
			l := idx[d]
			switch {
			case len(l) == 0:
				starts[d], limits[d] = 0, 0
			case len(l) == 1:
				starts[d], limits[d] = l[0], l[0]+1
			case l[1] > l[0]:
				starts[d], strides[d] = l[0], l[1]-l[0]
				limits[d] = l[len(l)-1] + 1
			default:
				simple = false
			}
		}
		if simple {
			return c.wrap(c.e.Op("slice", []*ir.Value{c.value(x)},
				ir.NamedAttr{Name: "starts", Value: graph.Ints(starts...)},
				ir.NamedAttr{Name: "limits", Value: graph.Ints(limits...)},
				ir.NamedAttr{Name: "strides", Value: graph.Ints(strides...)}))[0], c.e.Err
		}
	}
	// Otherwise gather each sliced axis (symbolic sizes elsewhere stay).
	v := c.value(x)
	for d := range idx {
		if full[d] {
			continue
		}
		v = c.gatherAt(v, int64(d), idx[d])
	}
	if v == nil {
		return nil, c.e.Err
	}
	return c.im.wrap(v), nil
}

func convSplit(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	axis, err := normAxis(c.int("axis", 0), x.rank())
	if err != nil {
		return nil, err
	}
	n, ok := x.dims[axis].IsConst()
	if !ok {
		return nil, errSymbolic("splitting the symbolic size %s is not supported", x.dims[axis])
	}
	var sizes []int64
	switch {
	case c.attr("split") != nil:
		sizes, _ = c.ints("split")
	case c.opt(1) != nil:
		if sizes, err = c.konstInts(1, "split"); err != nil {
			return nil, err
		}
	default:
		parts := int64(len(c.n.Outputs))
		if c.attr("num_outputs") != nil {
			parts = c.int("num_outputs", parts)
		}
		if parts < 1 {
			return nil, errors.New("no outputs")
		}
		each := (n + parts - 1) / parts
		for left := n; left > 0; left -= each {
			sizes = append(sizes, min(each, left))
		}
		for int64(len(sizes)) < parts {
			sizes = append(sizes, 0)
		}
	}
	var sum int64
	for _, s := range sizes {
		if s < 0 {
			return nil, fmt.Errorf("split sizes %v: a size is negative", sizes)
		}
		sum += s
	}
	if len(sizes) != len(c.n.Outputs) {
		return nil, fmt.Errorf("split sizes %v make %d parts for %d outputs", sizes, len(sizes), len(c.n.Outputs))
	}
	if sum != n {
		return nil, fmt.Errorf("split sizes %v do not add up to %d", sizes, n)
	}
	var outs []*val
	var at int64
	for _, s := range sizes {
		idx := make([][]int64, x.rank())
		full := make([]bool, x.rank())
		for d := range full {
			full[d] = d != axis
		}
		idx[axis] = make([]int64, s)
		for j := range idx[axis] {
			idx[axis][j] = at + int64(j)
		}
		if s == n {
			full[axis] = true
		}
		y, err := c.take(x, idx, full)
		if err != nil {
			return nil, err
		}
		outs = append(outs, y)
		at += s
	}
	return outs, nil
}

// broadcastDims is the bidirectional broadcast of Expand.
func broadcastDims(a, b []sym.Expr) ([]sym.Expr, error) {
	r := max(len(a), len(b))
	out := make([]sym.Expr, r)
	for i := range r {
		var x, y sym.Expr = sym.Const(1), sym.Const(1)
		if j := i - (r - len(a)); j >= 0 {
			x = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			y = b[j]
		}
		switch {
		case x.Equal(sym.Const(1)):
			out[i] = y
		case y.Equal(sym.Const(1)) || x.Equal(y):
			out[i] = x
		default:
			xc, xok := x.IsConst()
			yc, yok := y.IsConst()
			if xok && yok && xc != yc {
				return nil, fmt.Errorf("cannot broadcast %s with %s", shapeString(a), shapeString(b))
			}
			if !xok && yok {
				out[i] = y
			} else {
				out[i] = x
			}
		}
	}
	return out, nil
}

func convExpand(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	target, err := c.shapeArg(1)
	if err != nil {
		return nil, err
	}
	for _, d := range target {
		if v, ok := d.IsConst(); ok && v < 0 {
			return nil, fmt.Errorf("shape %s has a negative size", shapeString(target))
		}
	}
	dims, err := broadcastDims(x.dims, target)
	if err != nil {
		return nil, err
	}
	return one2(c.expand(x, dims))
}

// expand broadcasts x to dims: broadcast_to for static dims, otherwise by
// adding zeros of the static part (symbolic sizes must come from x).
func (c *nodeCtx) expand(x *val, dims []sym.Expr) (*val, error) {
	if sameDims(x.dims, dims) {
		return x, nil
	}
	if shape, ok := (&val{dims: dims}).staticShape(); ok {
		if x.k != nil && ir.NumElements(shape) <= smallLimit {
			return kval(kBroadcast(x.k, shape)), nil
		}
		y := c.e.Op("broadcast_to", []*ir.Value{c.value(x)}, ir.NamedAttr{Name: "shape", Value: graph.Ints(shape...)})
		if y == nil {
			return nil, c.e.Err
		}
		return c.im.wrap(y), nil
	}
	off := len(dims) - x.rank()
	zshape := make([]int64, len(dims))
	var missing []int
	for i, d := range dims {
		if v, ok := d.IsConst(); ok {
			zshape[i] = v
			continue
		}
		zshape[i] = 1
		if i < off || !x.dims[i-off].Equal(d) {
			missing = append(missing, i)
		}
	}
	elem := x.elem
	xv := x
	if elem == ir.I1 {
		var err error
		if xv, err = c.cast(x, ir.I32); err != nil {
			return nil, err
		}
	}
	z := &konst{elem: xv.elem, shape: zshape}
	n := ir.NumElements(zshape)
	if ir.IsFloat(xv.elem) {
		z.f = make([]float64, n)
	} else {
		z.i = slices.Repeat([]sym.Expr{sym.Const(0)}, int(n))
	}
	y, err := c.binaryOp("add", xv, kval(z))
	if err != nil {
		return nil, err
	}
	// Symbolic sizes x lacks come from a graph input that has them: ones of
	// that size, multiplied in (exact for every value).
	for _, i := range missing {
		ones, err := c.onesAlong(dims[i], len(dims), i, xv.elem)
		if err != nil {
			return nil, fmt.Errorf("expanding %s to %s: %w", shapeString(x.dims), shapeString(dims), err)
		}
		if y, err = c.binaryOp("mul", y, ones); err != nil {
			return nil, err
		}
	}
	if elem == ir.I1 {
		return c.cast(y, elem)
	}
	return y, nil
}

// onesAlong builds a tensor of ones of elem, of rank r, size 1 everywhere
// but at axis, where its size is the symbol s, taken from a graph input
// whose shape has s.
func (c *nodeCtx) onesAlong(s sym.Expr, r, axis int, elem ir.Type) (*val, error) {
	src, ok := c.im.symSource[s.String()]
	if !ok {
		return nil, fmt.Errorf("no graph input has the symbolic size %s", s)
	}
	x := c.im.wrap(src.arg)
	v := src.arg
	for d := range x.rank() {
		if d == src.axis {
			continue
		}
		zero := c.value(kval(newIntKonst(ir.I64, []int64{1}, []int64{0})))
		v = c.e.Op("gather", []*ir.Value{v, zero}, ir.NamedAttr{Name: "axis", Value: ir.Int(int64(d), ir.I64)})
	}
	g := c.im.wrap(v)
	if g.v == nil {
		return nil, c.e.Err
	}
	// eq or ne is true for every element, NaN included.
	eq := c.e.Op("cmp", []*ir.Value{v, v}, ir.NamedAttr{Name: "predicate", Value: ir.Str("eq")})
	ne := c.e.Op("cmp", []*ir.Value{v, v}, ir.NamedAttr{Name: "predicate", Value: ir.Str("ne")})
	t := c.e.Op("select", []*ir.Value{eq, eq, ne})
	if t == nil {
		return nil, c.e.Err
	}
	ones, err := c.cast(c.im.wrap(t), elem)
	if err != nil {
		return nil, err
	}
	dims := slices.Repeat([]sym.Expr{sym.Const(1)}, r)
	dims[axis] = s
	return c.reshape(ones, dims)
}

func convConstantOfShape(c *nodeCtx) ([]*val, error) {
	dims, err := c.shapeArg(0)
	if err != nil {
		return nil, err
	}
	fill := &konst{elem: ir.F32, shape: []int64{}, f: []float64{0}}
	if a := c.attr("value"); a != nil && a.T != nil {
		if fill, err = c.im.decode(a.T); err != nil {
			return nil, err
		}
		if fill.len() != 1 {
			return nil, errors.New("value must hold one element")
		}
		fill.shape = []int64{}
	}
	shape, ok := (&val{dims: dims}).staticShape()
	if !ok {
		return one2(c.expand(kval(fill), dims))
	}
	if n := ir.NumElements(shape); n <= smallLimit {
		return one(kval(kBroadcast(fill, shape)))
	}
	var f ir.Attribute
	if fill.isFloat() {
		f = ir.Float(fill.f[0], fill.elem.(*ir.FloatType))
	} else {
		v, _ := fill.concrete()
		f = ir.Int(v[0], ir.I64)
		if fill.elem == ir.I1 {
			f = ir.Bool(v[0] != 0)
		}
	}
	return c.wrap(c.e.Typed("full", nil, ir.TensorOf(shape, fill.elem), ir.NamedAttr{Name: "fill", Value: f})), nil
}

func convRange(c *nodeCtx) ([]*val, error) {
	var k [3]*konst
	for i := range 3 {
		x, err := c.input(i)
		if err != nil {
			return nil, err
		}
		if x.k == nil || x.k.len() != 1 {
			return nil, fmt.Errorf("input %d must be a scalar constant", i)
		}
		k[i] = x.k
	}
	elem := k[0].elem
	if ir.IsFloat(elem) {
		start, limit, delta := k[0].f[0], k[1].f[0], k[2].f[0]
		if delta == 0 {
			return nil, errors.New("delta is 0")
		}
		n := max(int64(math.Ceil((limit-start)/delta)), 0)
		if n > smallLimit*64 {
			return nil, fmt.Errorf("range of %d elements is too large to fold", n)
		}
		out := &konst{elem: elem, shape: []int64{n}, f: make([]float64, n)}
		for i := range out.f {
			out.f[i] = ir.RoundToType(start+float64(i)*delta, elem.(*ir.FloatType))
		}
		return one(kval(out))
	}
	var v [3]int64
	for i := range 3 {
		vs, ok := k[i].concrete()
		if !ok {
			return nil, errSymbolic("a range over the symbolic size %s is not supported", k[i].i[0])
		}
		v[i] = vs[0]
	}
	if v[2] == 0 {
		return nil, errors.New("delta is 0")
	}
	n := max((v[1]-v[0]+v[2]-sign(v[2]))/v[2], 0)
	if n > smallLimit*64 {
		return nil, fmt.Errorf("range of %d elements is too large to fold", n)
	}
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = v[0] + int64(i)*v[2]
	}
	return one(kval(newIntKonst(elem, []int64{n}, vals)))
}

func sign(v int64) int64 {
	if v < 0 {
		return -1
	}
	return 1
}

func convPad(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	mode := c.str("mode", "constant")
	switch mode {
	case "constant", "reflect", "edge", "wrap":
	default:
		return nil, fmt.Errorf("mode %q is not one of constant, reflect, edge, wrap", mode)
	}
	var pads []int64
	if p, ok := c.ints("pads"); ok {
		pads = p
	} else if pads, err = c.konstInts(1, "pads"); err != nil {
		return nil, err
	}
	axes := iotaList(int64(x.rank()))
	if c.opt(3) != nil {
		if axes, err = c.konstInts(3, "axes"); err != nil {
			return nil, err
		}
	}
	if len(pads) != 2*len(axes) {
		return nil, fmt.Errorf("pads %v need %d entries", pads, 2*len(axes))
	}
	low, high := make([]int64, x.rank()), make([]int64, x.rank())
	for j, a := range axes {
		ax, err := normAxis(a, x.rank())
		if err != nil {
			return nil, err
		}
		low[ax], high[ax] = pads[j], pads[len(axes)+j]
		if low[ax] < 0 || high[ax] < 0 {
			return nil, fmt.Errorf("negative pads %v are not supported", pads)
		}
	}
	if mode != "constant" {
		return c.padIndexed(x, mode, low, high)
	}
	var fill ir.Attribute
	if cv := c.opt(2); cv != nil {
		if cv.k == nil || cv.k.len() != 1 {
			return nil, errors.New("constant_value must be a scalar constant")
		}
		if cv.k.isFloat() {
			fill = ir.Float(cv.k.f[0], x.elem.(*ir.FloatType))
		} else if vs, ok := cv.k.concrete(); ok {
			fill = ir.Int(vs[0], ir.I64)
		}
	} else if a := c.attr("value"); a != nil && ir.IsFloat(x.elem) {
		fill = ir.Float(float64(a.F), x.elem.(*ir.FloatType))
	}
	attrs := []ir.NamedAttr{{Name: "low", Value: graph.Ints(low...)}, {Name: "high", Value: graph.Ints(high...)}}
	if fill != nil {
		attrs = append(attrs, ir.NamedAttr{Name: "value", Value: fill})
	}
	return c.wrap(c.e.Op("pad", []*ir.Value{c.value(x)}, attrs...)), nil
}

// padIndexed pads x by low and high elements per axis in Pad's reflect
// (mirrored about the edge element, which is not repeated), edge
// (the edge element repeated) or wrap (periodic) mode: each padded axis,
// whose size must be static, is a gather of x at constant indices.
func (c *nodeCtx) padIndexed(x *val, mode string, low, high []int64) ([]*val, error) {
	v := c.value(x)
	for d := range low {
		if low[d] == 0 && high[d] == 0 {
			continue
		}
		n, ok := x.dims[d].IsConst()
		if !ok {
			return nil, errSymbolic("mode %s needs a static size on padded axis %d, not %s", mode, d, x.dims[d])
		}
		if n == 0 || mode == "reflect" && (low[d] >= n || high[d] >= n) {
			return nil, fmt.Errorf("mode %s pads axis %d of size %d by %d and %d: want pads smaller than the size", mode, d, n, low[d], high[d])
		}
		idx := make([]int64, 0, low[d]+n+high[d])
		for j := -low[d]; j < n+high[d]; j++ {
			r := j
			switch mode {
			case "reflect":
				if r < 0 {
					r = -r
				}
				if r >= n {
					r = 2*(n-1) - r
				}
			case "edge":
				r = min(max(r, 0), n-1)
			default: // wrap
				r = (r%n + n) % n
			}
			idx = append(idx, r)
		}
		v = c.gatherAt(v, int64(d), idx)
	}
	return c.wrap(v), nil
}

func convTile(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	reps, err := c.konstInts(1, "repeats")
	if err != nil {
		return nil, err
	}
	if len(reps) != x.rank() {
		return nil, fmt.Errorf("repeats %v need %d entries", reps, x.rank())
	}
	cur := x
	for d, r := range reps {
		if r == 1 {
			continue
		}
		if r < 1 {
			return nil, fmt.Errorf("repeat %d is not supported", r)
		}
		parts := make([]*ir.Value, r)
		v := c.value(cur)
		for i := range parts {
			parts[i] = v
		}
		y := c.e.Op("concat", parts, ir.NamedAttr{Name: "axis", Value: ir.Int(int64(d), ir.I64)})
		if y == nil {
			return nil, c.e.Err
		}
		cur = c.im.wrap(y)
	}
	return one(cur)
}

func convTrilu(c *nodeCtx) ([]*val, error) {
	x, err := c.input(0)
	if err != nil {
		return nil, err
	}
	if x.rank() < 2 {
		return nil, errors.New("the input must have rank >= 2")
	}
	var k int64
	if c.opt(1) != nil {
		ks, err := c.konstInts(1, "k")
		if err != nil {
			return nil, err
		}
		k = ks[0]
	}
	rows, ok1 := x.dims[x.rank()-2].IsConst()
	cols, ok2 := x.dims[x.rank()-1].IsConst()
	if !ok1 || !ok2 {
		return nil, errSymbolic("Trilu needs static sizes in the last two dims")
	}
	upper := c.int("upper", 1) != 0
	mask := make([]int64, rows*cols)
	for i := range rows {
		for j := range cols {
			keep := j-i >= k
			if !upper {
				keep = j-i <= k
			}
			if keep {
				mask[i*cols+j] = 1
			}
		}
	}
	m := kval(newIntKonst(ir.I1, []int64{rows, cols}, mask))
	zero := c.scalar(x.elem, 0)
	if x.elem == ir.I1 {
		zero = c.boolConst(false)
	}
	return c.wrap(c.e.Op("select", []*ir.Value{c.value(m), c.value(x), c.value(zero)})), nil
}
