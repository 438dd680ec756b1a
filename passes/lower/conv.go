package lower

import (
	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
)

// convParams reads graph.conv2d's attributes with their defaults (the
// verifier has checked them).
func convParams(op *ir.Operation) (graph.Conv2DParams, error) {
	p := graph.Conv2DParams{Strides: [2]int64{1, 1}, Dilations: [2]int64{1, 1}, Groups: intAttr(op, "groups", 1)}
	for _, f := range []struct {
		name string
		dst  []int64
	}{{"strides", p.Strides[:]}, {"dilations", p.Dilations[:]}} {
		if v, ok := graph.IntList(op.Attr(f.name)); ok {
			if len(v) != 2 {
				return p, errorf(op.Loc(), "graph.conv2d '%s' must have 2 entries, got %v", f.name, v)
			}
			copy(f.dst, v)
		}
	}
	if v, ok := graph.IntList(op.Attr("padding")); ok {
		switch len(v) {
		case 2:
			p.Padding = [4]int64{v[0], v[1], v[0], v[1]}
		case 4:
			p.Padding = [4]int64(v)
		default:
			return p, errorf(op.Loc(), "graph.conv2d 'padding' must have 2 or 4 entries, got %v", v)
		}
	}
	if p.Groups < 1 {
		return p, errorf(op.Loc(), "graph.conv2d 'groups' must be positive, got %d", p.Groups)
	}
	return p, nil
}

// conv2d emits the element idx = (n, o, oh, ow) of a convolution: a
// loop.for nest over (c, kh, kw) of the group's input channels and the
// window, in the interpreter's order, accumulating x·w in f32 (f16, bf16,
// f32) or f64 (f64; integers, which the interpreter also sums in float64),
// then the bias, then one rounding to the element type. Window positions in
// the padding add nothing: the load reads a clamped index and a select
// keeps the sum (no branch, and 0·inf never enters it).
func (k *kernel) conv2d(op *ir.Operation, idx []*ir.Value) (*ir.Value, error) {
	p, err := convParams(op)
	if err != nil {
		return nil, err
	}
	x, w := op.Operand(0), op.Operand(1)
	elem := elemOf(op.Result(0))
	acc := accType(elem)
	if !ir.IsFloat(elem) {
		acc = ir.F64
	}
	n, o, oh, ow := idx[0], idx[1], idx[2], idx[3]
	// The input channel block of output channel o: o / (O / groups).
	grp := k.index(0)
	if p.Groups > 1 {
		outs, err := k.size(w, 0)
		if err != nil {
			return nil, err
		}
		grp = k.indexOp("arith.divui", o, k.outerOp("arith.divui", outs, k.outerIndex(p.Groups)))
	}
	ubs := make([]*ir.Value, 3)
	for i, d := range []int{1, 2, 3} {
		if ubs[i], err = k.size(w, d); err != nil {
			return nil, err
		}
	}
	var inSize [2]*ir.Value // read where the bottom (right) padding needs a bound
	for i := range inSize {
		if p.Padding[2+i] > 0 {
			if inSize[i], err = k.size(x, 2+i); err != nil {
				return nil, err
			}
		}
	}
	base := [2]*ir.Value{ // oh·stride - pad_lo, the window's first row (column)
		k.indexOp("arith.subi", k.indexOp("arith.muli", oh, k.index(p.Strides[0])), k.index(p.Padding[0])),
		k.indexOp("arith.subi", k.indexOp("arith.muli", ow, k.index(p.Strides[1])), k.index(p.Padding[1])),
	}
	res, err := k.loops(k.levelOf(idx...), ubs, []*ir.Value{k.zero(acc)}, func(ivs, iters []*ir.Value) ([]*ir.Value, error) {
		c, kh, kw := ivs[0], ivs[1], ivs[2]
		ci := k.indexOp("arith.addi", k.indexOp("arith.muli", grp, ubs[0]), c)
		pos := [2]*ir.Value{
			k.indexOp("arith.addi", base[0], k.indexOp("arith.muli", kh, k.index(p.Dilations[0]))),
			k.indexOp("arith.addi", base[1], k.indexOp("arith.muli", kw, k.index(p.Dilations[1]))),
		}
		var inside *ir.Value
		for i, q := range pos {
			// Only a side with padding can be left: a position in the top
			// or left padding is negative (signed compare), one in the
			// bottom or right padding is at least the size.
			var in *ir.Value
			if p.Padding[i] > 0 {
				in = k.cmpi(arith.CmpISGE, q, k.index(0))
			}
			if p.Padding[2+i] > 0 {
				hi := k.cmpi(arith.CmpISLT, q, inSize[i])
				if in == nil {
					in = hi
				} else {
					in = k.andi(in, hi)
				}
			}
			if in == nil {
				continue
			}
			if inside == nil {
				inside = in
			} else {
				inside = k.andi(inside, in)
			}
			pos[i] = k.sel(in, q, k.index(0))
		}
		xv, err := k.value(x, []*ir.Value{n, ci, pos[0], pos[1]})
		if err != nil {
			return nil, err
		}
		wv, err := k.value(w, []*ir.Value{o, c, kh, kw})
		if err != nil {
			return nil, err
		}
		prod := k.binary("arith.mulf", k.convert(xv, elem, acc), k.convert(wv, elem, acc))
		sum := k.binary("arith.addf", iters[0], prod)
		if inside != nil {
			sum = k.sel(inside, sum, iters[0])
		}
		return []*ir.Value{sum}, nil
	})
	if err != nil {
		return nil, err
	}
	s := res[0]
	if op.NumOperands() == 3 {
		b, err := k.value(op.Operand(2), []*ir.Value{o})
		if err != nil {
			return nil, err
		}
		s = k.binary("arith.addf", s, k.convert(b, elem, acc))
	}
	if ir.IsFloat(elem) {
		return k.convert(s, acc, elem), nil
	}
	// The interpreter converts its float64 sum with Go's int64(); then the
	// integer wraps to the element type.
	return k.convert(k.cast("arith.fptosi", s, ir.I64), ir.I64, elem), nil
}

// convSize returns dim d of a convolution's result at function level:
// N from the input, O from the weight, and the spatial sizes by
// graph.ConvOutSize in index arithmetic.
func (k *kernel) convSize(op *ir.Operation, d int) (*ir.Value, error) {
	switch d {
	case 0:
		return k.size(op.Operand(0), 0)
	case 1:
		return k.size(op.Operand(1), 0)
	case 2, 3:
	default:
		return nil, errorf(op.Loc(), "graph.conv2d has no dim %d", d)
	}
	p, err := convParams(op)
	if err != nil {
		return nil, err
	}
	in, err := k.size(op.Operand(0), d)
	if err != nil {
		return nil, err
	}
	kn, err := k.size(op.Operand(1), d)
	if err != nil {
		return nil, err
	}
	i := d - 2
	b := k.outer()
	c := func(v int64) *ir.Value { return arith.ConstantIndex(b, k.loc, v) }
	bin := func(name string, x, y *ir.Value) *ir.Value { return arith.Binary(b, name, k.loc, x, y) }
	// (in + pad_lo + pad_hi - dilation·(k-1) - 1) / stride + 1, where the
	// numerator is non-negative for a verified op.
	span := bin("arith.muli", bin("arith.subi", kn, c(1)), c(p.Dilations[i]))
	num := bin("arith.subi", bin("arith.subi", bin("arith.addi", in, c(p.Padding[i]+p.Padding[2+i])), span), c(1))
	return bin("arith.addi", bin("arith.divui", num, c(p.Strides[i])), c(1)), nil
}
