package cpu

import (
	"fmt"
	"math"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/targets/llvm"
)

// op translates one op, recording its results.
func (k *kt) op(op *ir.Operation) error {
	name := op.Name()
	if f, ok := llvm.IntBinary(name); ok {
		k.set(op, f(k.cur, k.get(op.Operand(0)), k.get(op.Operand(1))))
		return nil
	}
	if f, ok := floatBinary[name]; ok {
		return k.floatOp(op, func(xs []value.Value) (value.Value, error) {
			r := f(k, xs[0], xs[1])
			if k.reductions[op] {
				setFlags(r, enum.FastMathFlagReassoc, enum.FastMathFlagContract)
			}
			if name == "arith.divf" && invariantDivisor(op) {
				setFlags(r, enum.FastMathFlagARcp)
			}
			return r, nil
		})
	}
	if f, ok := mathOps[name]; ok {
		return k.floatOp(op, func(xs []value.Value) (value.Value, error) { return f(k, xs) })
	}
	if f, ok := castOps[name]; ok {
		r, err := f(k, op.Operand(0), op.Result(0).Type())
		if err != nil {
			return err
		}
		k.set(op, r)
		return nil
	}
	switch name {
	case "arith.constant":
		return k.constant(op)
	case "arith.cmpi":
		p, _ := op.Attr("predicate").(ir.IntegerAttr)
		if p.Value < 0 || int(p.Value) >= len(arith.CmpIPredicateNames) {
			return fmt.Errorf("bad predicate")
		}
		k.set(op, k.cur.NewICmp(llvm.ICmpPred(arith.CmpIPredicateNames[p.Value]), k.get(op.Operand(0)), k.get(op.Operand(1))))
		return nil
	case "arith.cmpf":
		p, _ := op.Attr("predicate").(ir.IntegerAttr)
		if p.Value < 0 || int(p.Value) >= len(arith.CmpFPredicateNames) {
			return fmt.Errorf("bad predicate")
		}
		x, err := k.toF32(op.Operand(0))
		if err != nil {
			return err
		}
		y, err := k.toF32(op.Operand(1))
		if err != nil {
			return err
		}
		k.set(op, k.cur.NewFCmp(llvm.FCmpPred(arith.CmpFPredicateNames[p.Value]), x, y))
		return nil
	case "arith.select":
		if kind := k.maxmin[op]; kind != "" {
			return k.floatOp(op, func(xs []value.Value) (value.Value, error) {
				// select(x > acc or x is NaN, x, acc) as llvm.maximum(acc, x).
				return k.call2("llvm."+kind, xs[2], xs[1]), nil
			})
		}
		k.set(op, k.cur.NewSelect(k.get(op.Operand(0)), k.get(op.Operand(1)), k.get(op.Operand(2))))
		return nil
	case "arith.ceildivsi", "arith.floordivsi":
		k.set(op, k.roundedDiv(name == "arith.ceildivsi", k.get(op.Operand(0)), k.get(op.Operand(1))))
		return nil
	case "arith.ceildivui":
		x, y := k.get(op.Operand(0)), k.get(op.Operand(1))
		one := constant.NewInt(x.Type().(*types.IntType), 1)
		q := k.cur.NewUDiv(x, y)
		r := k.cur.NewURem(x, y)
		k.set(op, k.cur.NewSelect(k.cur.NewICmp(enum.IPredNE, r, constant.NewInt(x.Type().(*types.IntType), 0)), k.cur.NewAdd(q, one), q))
		return nil
	case loop.LoadOp:
		return k.load(op)
	case loop.StoreOp:
		return k.store(op)
	case loop.DimOp:
		sizes, ok := k.dims[op.Operand(0)]
		d, _ := op.Attr(loop.IndexAttr).(ir.IntegerAttr)
		if !ok || d.Value < 0 || int(d.Value) >= len(sizes) {
			return fmt.Errorf("dimension of an unknown buffer")
		}
		k.set(op, sizes[d.Value])
		return nil
	case loop.ForOp:
		return k.forOp(op)
	case loop.ParallelOp:
		return k.parallelOp(op)
	case loop.IfOp:
		return k.ifOp(op)
	}
	return fmt.Errorf("op is not supported by the cpu target")
}

// setFlags adds fast-math flags to a float instruction.
func setFlags(v value.Value, flags ...enum.FastMathFlag) {
	switch i := v.(type) {
	case *llir.InstFAdd:
		i.FastMathFlags = append(i.FastMathFlags, flags...)
	case *llir.InstFMul:
		i.FastMathFlags = append(i.FastMathFlags, flags...)
	case *llir.InstCall:
		i.FastMathFlags = append(i.FastMathFlags, flags...)
	case *llir.InstFDiv:
		i.FastMathFlags = append(i.FastMathFlags, flags...)
	}
}

// invariantDivisor reports whether op, an f32 arith.divf in a loop, divides
// by a value defined outside its innermost loop: LLVM may then multiply
// by the reciprocal, computed once (arcp; within ~1.5 ulp of the
// division, as the GPU row kernels do).
func invariantDivisor(op *ir.Operation) bool {
	if op.Result(0).Type() != ir.F32 {
		return false
	}
	l := op.ParentOp()
	for l != nil && l.Name() != loop.ForOp && l.Name() != loop.ParallelOp {
		l = l.ParentOp()
	}
	if l == nil {
		return false
	}
	return !inside(op.Operand(1), l)
}

// roundedDiv is a signed division rounding up (ceil) or down.
func (k *kt) roundedDiv(ceil bool, x, y value.Value) value.Value {
	b := k.cur
	it := x.Type().(*types.IntType)
	zero, one := constant.NewInt(it, 0), constant.NewInt(it, 1)
	q := b.NewSDiv(x, y)
	r := b.NewSRem(x, y)
	nonzero := b.NewICmp(enum.IPredNE, r, zero)
	sameSign := b.NewICmp(enum.IPredEQ, b.NewICmp(enum.IPredSLT, r, zero), b.NewICmp(enum.IPredSLT, y, zero))
	if ceil {
		return b.NewSelect(b.NewAnd(nonzero, sameSign), b.NewAdd(q, one), q)
	}
	return b.NewSelect(b.NewAnd(nonzero, b.NewXor(sameSign, constant.True)), b.NewSub(q, one), q)
}

var floatBinary = map[string]func(k *kt, x, y value.Value) value.Value{
	"arith.addf":     func(k *kt, x, y value.Value) value.Value { return k.cur.NewFAdd(x, y) },
	"arith.subf":     func(k *kt, x, y value.Value) value.Value { return k.cur.NewFSub(x, y) },
	"arith.mulf":     func(k *kt, x, y value.Value) value.Value { return k.cur.NewFMul(x, y) },
	"arith.divf":     func(k *kt, x, y value.Value) value.Value { return k.cur.NewFDiv(x, y) },
	"arith.remf":     func(k *kt, x, y value.Value) value.Value { return k.cur.NewFRem(x, y) },
	"arith.maxnumf":  func(k *kt, x, y value.Value) value.Value { return k.call2("llvm.maxnum", x, y) },
	"arith.minnumf":  func(k *kt, x, y value.Value) value.Value { return k.call2("llvm.minnum", x, y) },
	"arith.maximumf": func(k *kt, x, y value.Value) value.Value { return k.call2("llvm.maximum", x, y) },
	"arith.minimumf": func(k *kt, x, y value.Value) value.Value { return k.call2("llvm.minimum", x, y) },
}

func (k *kt) call1(base string, x value.Value) value.Value {
	t := x.Type()
	return k.cur.NewCall(k.t.intrinsic(base+"."+llvm.TypeSuffix(t), t, t), x)
}

func (k *kt) call2(base string, x, y value.Value) value.Value {
	t := x.Type()
	return k.cur.NewCall(k.t.intrinsic(base+"."+llvm.TypeSuffix(t), t, t, t), x, y)
}

// libm calls the C library's function name (namef for f32).
func (k *kt) libm(name string, xs ...value.Value) value.Value {
	t := xs[0].Type()
	if !types.Equal(t, types.Double) {
		name += "f"
	}
	ps := make([]types.Type, len(xs))
	for i := range xs {
		ps[i] = t
	}
	return k.cur.NewCall(k.t.intrinsic(name, t, ps...), xs...)
}

// floatOp computes op in f32 for f16 and bf16 operands (as the GPU
// targets do) and converts the result back.
func (k *kt) floatOp(op *ir.Operation, f func(xs []value.Value) (value.Value, error)) error {
	xs := make([]value.Value, op.NumOperands())
	for i, v := range op.Operands() {
		x, err := k.toF32(v)
		if err != nil {
			return err
		}
		xs[i] = x
	}
	r, err := f(xs)
	if err != nil {
		return err
	}
	r, err = k.fromF32(r, op.Result(0).Type())
	if err != nil {
		return err
	}
	k.set(op, r)
	return nil
}

func (k *kt) toF32(v *ir.Value) (value.Value, error) {
	x := k.get(v)
	switch v.Type() {
	case ir.F16:
		return k.cur.NewFPExt(x, types.Float), nil
	case ir.BF16:
		return k.cur.NewBitCast(k.cur.NewShl(k.cur.NewZExt(x, types.I32), constant.NewInt(types.I32, 16)), types.Float), nil
	case ir.F32, ir.F64:
		return x, nil
	}
	if _, ok := v.Type().(*ir.FloatType); ok {
		return nil, fmt.Errorf("type %s is not supported by the cpu target", v.Type())
	}
	return x, nil
}

func (k *kt) fromF32(x value.Value, to ir.Type) (value.Value, error) {
	b := k.cur
	switch to {
	case ir.F16:
		return b.NewFPTrunc(x, types.Half), nil
	case ir.BF16:
		// Round to nearest even; a NaN stays a (quiet) NaN.
		u := b.NewBitCast(x, types.I32)
		lsb := b.NewAnd(b.NewLShr(u, constant.NewInt(types.I32, 16)), constant.NewInt(types.I32, 1))
		rounded := b.NewLShr(b.NewAdd(b.NewAdd(u, constant.NewInt(types.I32, 0x7fff)), lsb), constant.NewInt(types.I32, 16))
		nan := b.NewLShr(b.NewOr(u, constant.NewInt(types.I32, 0x400000)), constant.NewInt(types.I32, 16))
		r := b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), nan, rounded)
		return b.NewTrunc(r, types.I16), nil
	}
	return x, nil
}

func fc(t types.Type, v float64) *constant.Float {
	ft := t.(*types.FloatType)
	if ft.Kind == types.FloatKindFloat {
		v = float64(float32(v))
	}
	return constant.NewFloat(ft, v)
}

var mathOps = map[string]func(k *kt, xs []value.Value) (value.Value, error){
	"arith.negf":     func(k *kt, xs []value.Value) (value.Value, error) { return k.cur.NewFNeg(xs[0]), nil },
	"math.absf":      func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.fabs", xs[0]), nil },
	"math.sqrt":      func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.sqrt", xs[0]), nil },
	"math.floor":     func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.floor", xs[0]), nil },
	"math.ceil":      func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.ceil", xs[0]), nil },
	"math.trunc":     func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.trunc", xs[0]), nil },
	"math.roundeven": func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.roundeven", xs[0]), nil },
	"math.round":     func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.round", xs[0]), nil },
	"math.copysign": func(k *kt, xs []value.Value) (value.Value, error) {
		return k.call2("llvm.copysign", xs[0], xs[1]), nil
	},
	"math.fma": func(k *kt, xs []value.Value) (value.Value, error) {
		t := xs[0].Type()
		return k.cur.NewCall(k.t.intrinsic("llvm.fma."+llvm.TypeSuffix(t), t, t, t, t), xs[0], xs[1], xs[2]), nil
	},
	"math.rsqrt": func(k *kt, xs []value.Value) (value.Value, error) {
		return k.cur.NewFDiv(fc(xs[0].Type(), 1), k.call1("llvm.sqrt", xs[0])), nil
	},
	"math.exp":   func(k *kt, xs []value.Value) (value.Value, error) { return k.exp(xs[0]), nil },
	"math.exp2":  func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.exp2", xs[0]), nil },
	"math.log":   func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.log", xs[0]), nil },
	"math.log2":  func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.log2", xs[0]), nil },
	"math.log10": func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.log10", xs[0]), nil },
	"math.sin":   func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.sin", xs[0]), nil },
	"math.cos":   func(k *kt, xs []value.Value) (value.Value, error) { return k.call1("llvm.cos", xs[0]), nil },
	"math.powf":  func(k *kt, xs []value.Value) (value.Value, error) { return k.call2("llvm.pow", xs[0], xs[1]), nil },
	"math.log1p": func(k *kt, xs []value.Value) (value.Value, error) { return k.libm("log1p", xs[0]), nil },
	"math.atan2": func(k *kt, xs []value.Value) (value.Value, error) { return k.libm("atan2", xs[0], xs[1]), nil },
	"math.sinh":  func(k *kt, xs []value.Value) (value.Value, error) { return k.libm("sinh", xs[0]), nil },
	"math.tan":   func(k *kt, xs []value.Value) (value.Value, error) { return k.libm("tan", xs[0]), nil },
	"math.atan":  func(k *kt, xs []value.Value) (value.Value, error) { return k.libm("atan", xs[0]), nil },
	"math.tanh":  func(k *kt, xs []value.Value) (value.Value, error) { return k.tanh(xs[0]), nil },
	"math.erf":   func(k *kt, xs []value.Value) (value.Value, error) { return k.erf(xs[0]), nil },
}

// exp of an f32 is computed inline, so that loops vectorize at the full
// vector width without calls: n = rint(x·log2 e), r = x − n·ln 2 (in two
// parts, Cody and Waite), e^r by its Taylor polynomial of degree 7 (|r| ≤
// ln2/2: truncation error under 5e-9, relative) and the scaling by 2^n in
// two halves so that subnormal results come out right. x above
// 88.7228 gives +inf, below −103.98 zero, NaN NaN. f64 uses llvm.exp
// (the C library's, vectorized with libmvec).
func (k *kt) exp(x value.Value) value.Value {
	t := x.Type()
	if !types.Equal(t, types.Float) {
		return k.call1("llvm.exp", x)
	}
	b := k.cur
	xc := k.call2("llvm.minnum", k.call2("llvm.maxnum", x, fc(t, -104)), fc(t, 88.8))
	n := k.call1("llvm.rint", b.NewFMul(xc, fc(t, math.Log2E)))
	fma := func(a, b2, c value.Value) value.Value {
		return k.cur.NewCall(k.t.intrinsic("llvm.fmuladd.f32", t, t, t, t), a, b2, c)
	}
	// ln2 = 0.693359375 - 2.12194440e-4 (the first part exact in 10 bits).
	r := fma(n, fc(t, -0.693359375), xc)
	r = fma(n, fc(t, 2.12194440e-4), r)
	coef := []float64{1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1, 1}
	var p value.Value = fc(t, coef[0])
	for _, c := range coef[1:] {
		p = fma(p, r, fc(t, c))
	}
	ni := b.NewFPToSI(n, types.I32)
	half := b.NewAShr(ni, constant.NewInt(types.I32, 1))
	rest := b.NewSub(ni, half)
	pow2 := func(e value.Value) value.Value {
		return b.NewBitCast(b.NewShl(b.NewAdd(e, constant.NewInt(types.I32, 127)), constant.NewInt(types.I32, 23)), t)
	}
	res := b.NewFMul(b.NewFMul(p, pow2(half)), pow2(rest))
	res2 := b.NewSelect(b.NewFCmp(enum.FPredOGT, x, fc(t, 88.72283935546875)), fc(t, math.Inf(1)), res)
	res3 := b.NewSelect(b.NewFCmp(enum.FPredOLT, x, fc(t, -103.97208)), fc(t, 0), res2)
	return b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), x, res3)
}

// tanh of an f32 is computed from exp (vectorizable): x + x³·(−1/3 +
// 2x²/15) below |x| = 0.125 (relative error under 2e-7), and
// copysign(1 − 2/(e^{2|x|} + 1), x) above; f64 calls the C library.
func (k *kt) tanh(x value.Value) value.Value {
	t := x.Type()
	if types.Equal(t, types.Double) {
		return k.libm("tanh", x)
	}
	b := k.cur
	a := k.call1("llvm.fabs", x)
	e := k.exp(b.NewFMul(a, fc(t, 2)))
	big := k.call2("llvm.copysign", b.NewFSub(fc(t, 1), b.NewFDiv(fc(t, 2), b.NewFAdd(e, fc(t, 1)))), x)
	x2 := b.NewFMul(x, x)
	poly := b.NewFAdd(fc(t, -1.0/3), b.NewFMul(x2, fc(t, 2.0/15)))
	small := b.NewFAdd(x, b.NewFMul(b.NewFMul(x, x2), poly))
	return b.NewSelect(b.NewFCmp(enum.FPredOLT, a, fc(t, 0.125)), small, big)
}

// erf of an f32 is Abramowitz and Stegun 7.1.26 (absolute error under
// 1.5e-7, as on the GPU), vectorizable; f64 calls the C library.
func (k *kt) erf(x value.Value) value.Value {
	t := x.Type()
	if types.Equal(t, types.Double) {
		return k.libm("erf", x)
	}
	b := k.cur
	a := k.call1("llvm.fabs", x)
	r := b.NewFDiv(fc(t, 1), b.NewFAdd(fc(t, 1), b.NewFMul(a, fc(t, 0.3275911))))
	coef := []float64{1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}
	var poly value.Value = fc(t, coef[0])
	for _, c := range coef[1:] {
		poly = b.NewFAdd(b.NewFMul(poly, r), fc(t, c))
	}
	poly = b.NewFMul(poly, r)
	e := k.exp(b.NewFNeg(b.NewFMul(a, a)))
	return k.call2("llvm.copysign", b.NewFSub(fc(t, 1), b.NewFMul(poly, e)), x)
}

var castOps = map[string]func(k *kt, x *ir.Value, to ir.Type) (value.Value, error){
	"arith.extsi":        intCast(true),
	"arith.extui":        intCast(false),
	"arith.trunci":       intCast(false),
	"arith.index_cast":   intCast(true),
	"arith.index_castui": intCast(false),
	"arith.sitofp":       toFloat(true),
	"arith.uitofp":       toFloat(false),
	"arith.fptosi":       fromFloat(true),
	"arith.fptoui":       fromFloat(false),
	"arith.extf":         floatCast,
	"arith.truncf":       floatCast,
	"arith.bitcast":      bitCast,
}

func intCast(signed bool) func(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
	return func(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
		tt, err := llvm.ScalarType(to)
		if err != nil {
			return nil, err
		}
		tw := tt.(*types.IntType).BitSize
		fromBits := uint64(64) // index
		if from, ok := x.Type().(*ir.IntegerType); ok {
			fromBits = uint64(from.Width)
		}
		switch {
		case fromBits == tw:
			return k.get(x), nil
		case fromBits > tw:
			return k.cur.NewTrunc(k.get(x), tt), nil
		case signed:
			return k.cur.NewSExt(k.get(x), tt), nil
		default:
			return k.cur.NewZExt(k.get(x), tt), nil
		}
	}
}

func toFloat(signed bool) func(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
	return func(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
		ft := types.Float
		if to == ir.F64 {
			ft = types.Double
		}
		var r value.Value
		if signed {
			r = k.cur.NewSIToFP(k.get(x), ft)
		} else {
			r = k.cur.NewUIToFP(k.get(x), ft)
		}
		return k.fromF32(r, to)
	}
}

func fromFloat(signed bool) func(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
	return func(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
		tt, err := llvm.ScalarType(to)
		if err != nil {
			return nil, err
		}
		f, err := k.toF32(x)
		if err != nil {
			return nil, err
		}
		// The lowering selects the saturated bounds around the
		// conversion of an out-of-range value, so its poison is never used.
		if signed {
			return k.cur.NewFPToSI(f, tt), nil
		}
		return k.cur.NewFPToUI(f, tt), nil
	}
}

func floatCast(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
	f, err := k.toF32(x)
	if err != nil {
		return nil, err
	}
	switch {
	case to == ir.F64 && !types.Equal(f.Type(), types.Double):
		return k.cur.NewFPExt(f, types.Double), nil
	case to != ir.F64 && types.Equal(f.Type(), types.Double):
		f = k.cur.NewFPTrunc(f, types.Float)
	}
	return k.fromF32(f, to)
}

func bitCast(k *kt, x *ir.Value, to ir.Type) (value.Value, error) {
	tt, err := llvm.ScalarType(to)
	if err != nil {
		return nil, err
	}
	if types.Equal(tt, k.get(x).Type()) { // bf16 <-> i16: both are i16 here
		return k.get(x), nil
	}
	return k.cur.NewBitCast(k.get(x), tt), nil
}

func (k *kt) constant(op *ir.Operation) error {
	t := op.Result(0).Type()
	lt, err := llvm.ScalarType(t)
	if err != nil {
		return err
	}
	switch a := op.Attr("value").(type) {
	case ir.IntegerAttr:
		v := a.Value
		if it, ok := lt.(*types.IntType); ok && it.BitSize == 1 {
			v &= 1
		}
		it, ok := lt.(*types.IntType)
		if !ok {
			return fmt.Errorf("integer constant of type %s", t)
		}
		k.set(op, constant.NewInt(it, v))
		return nil
	case ir.FloatAttr:
		if t == ir.BF16 {
			k.set(op, constant.NewInt(types.I16, int64(a.Bits)))
			return nil
		}
		v := a.Value()
		ft, ok := t.(*ir.FloatType)
		if !ok {
			return fmt.Errorf("float constant of type %s", t)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || t == ir.F16 {
			bits := ir.FloatToBits(v, ft)
			if !math.IsNaN(v) {
				bits = a.Bits
			}
			k.set(op, constant.NewBitCast(constant.NewInt(types.NewInt(uint64(ft.Width)), int64(bits)), lt))
			return nil
		}
		k.set(op, constant.NewFloat(lt.(*types.FloatType), v))
		return nil
	}
	return fmt.Errorf("only scalar integer and float constants are supported, not %s", op.Attr("value"))
}

// address returns the element pointer of mem[idx…] (row-major).
func (k *kt) address(mem *ir.Value, idx []*ir.Value) (value.Value, types.Type, error) {
	vals := make([]value.Value, len(idx))
	for i, x := range idx {
		vals[i] = k.get(x)
	}
	return k.addressOf(mem, vals)
}

// addressOf is address with the indices' values given.
func (k *kt) addressOf(mem *ir.Value, idx []value.Value) (value.Value, types.Type, error) {
	mt, ok := mem.Type().(*ir.MemRefType)
	sizes, known := k.dims[mem]
	if !ok || !known || len(idx) != len(sizes) {
		return nil, nil, fmt.Errorf("access to an unknown buffer or with the wrong number of indices")
	}
	elem, err := llvm.MemType(mt.ElementType())
	if err != nil {
		return nil, nil, err
	}
	var lin value.Value = i64(0)
	for d, ix := range idx {
		if d == 0 {
			lin = ix
			continue
		}
		m := k.cur.NewMul(lin, sizes[d])
		m.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
		a := k.cur.NewAdd(m, ix)
		a.OverflowFlags = []enum.OverflowFlag{enum.OverflowFlagNSW}
		lin = a
	}
	g := k.cur.NewGetElementPtr(elem, k.get(mem), lin)
	g.InBounds = true
	return g, elem, nil
}

func (k *kt) load(op *ir.Operation) error {
	if k.checked[op] {
		idx := k.indexValues(op.Operands()[1:])
		mt := op.Operand(0).Type().(*ir.MemRefType)
		elem, err := llvm.MemType(mt.ElementType())
		if err != nil {
			return err
		}
		var aerr error
		v := k.checkedAccess(op.Operand(0), idx, elem, func() value.Value {
			p, elem, err := k.addressOf(op.Operand(0), idx)
			if err != nil {
				aerr = err
				return constant.NewZeroInitializer(elem)
			}
			return k.cur.NewLoad(elem, p)
		})
		if aerr != nil {
			return aerr
		}
		if it, ok := op.Result(0).Type().(*ir.IntegerType); ok && it.Width == 1 {
			v = k.cur.NewTrunc(v, types.I1)
		}
		k.set(op, v)
		return nil
	}
	p, elem, err := k.address(op.Operand(0), op.Operands()[1:])
	if err != nil {
		return err
	}
	var v value.Value = k.cur.NewLoad(elem, p)
	if it, ok := op.Result(0).Type().(*ir.IntegerType); ok && it.Width == 1 {
		v = k.cur.NewTrunc(v, types.I1)
	}
	k.set(op, v)
	return nil
}

// indexValues returns the translated values of idx.
func (k *kt) indexValues(idx []*ir.Value) []value.Value {
	out := make([]value.Value, len(idx))
	for i, x := range idx {
		out[i] = k.get(x)
	}
	return out
}

func (k *kt) store(op *ir.Operation) error {
	put := func(p value.Value, elem types.Type) {
		v := k.get(op.Operand(0))
		if it, ok := op.Operand(0).Type().(*ir.IntegerType); ok && it.Width == 1 {
			v = k.cur.NewZExt(v, elem)
		}
		k.cur.NewStore(v, p)
	}
	if k.checked[op] {
		idx := k.indexValues(op.Operands()[2:])
		var aerr error
		k.checkedAccess(op.Operand(1), idx, nil, func() value.Value {
			p, elem, err := k.addressOf(op.Operand(1), idx)
			if err != nil {
				aerr = err
				return nil
			}
			put(p, elem)
			return nil
		})
		return aerr
	}
	p, elem, err := k.address(op.Operand(1), op.Operands()[2:])
	if err != nil {
		return err
	}
	put(p, elem)
	return nil
}

func (k *kt) forOp(op *ir.Operation) error {
	lb, ub, step := k.get(op.Operand(0)), k.get(op.Operand(1)), k.get(op.Operand(2))
	body := loop.Body(op)
	inits := make([]value.Value, 0, op.NumOperands()-3)
	for _, v := range loop.ForInits(op) {
		inits = append(inits, k.get(v))
	}
	k.markReductions(body.Arguments()[1:], body.Terminator())
	res, err := k.loop(lb, ub, step, inits, vecIf(!hasLoops(body)), func(iv value.Value, iters []value.Value) ([]value.Value, error) {
		k.vals[body.Argument(0)] = iv
		for i, it := range iters {
			k.vals[body.Argument(i+1)] = it
		}
		return k.region(body)
	})
	if err != nil {
		return err
	}
	k.set(op, res...)
	return nil
}

// parallelOp runs an inner loop.parallel sequentially: nested loops, its
// reductions combined in order with the loop.reduce regions.
func (k *kt) parallelOp(op *ir.Operation) error {
	lbs, ubs, steps, initVals, err := loop.ParallelBounds(op)
	if err != nil {
		return err
	}
	body := loop.Body(op)
	red := body.Terminator()
	if red == nil || red.Name() != loop.ReduceOp || red.NumOperands() != len(initVals) || red.NumRegions() != len(initVals) {
		return fmt.Errorf("malformed loop.parallel: its body must end with a loop.reduce of its %d values", len(initVals))
	}
	for i := range initVals {
		rb := red.Region(i).Front()
		if rb == nil || rb.NumArguments() != 2 {
			return fmt.Errorf("malformed loop.reduce region %d", i)
		}
		k.markReductions([]*ir.Value{rb.Argument(0)}, rb.Terminator())
	}
	inits := make([]value.Value, len(initVals))
	for i, v := range initVals {
		inits[i] = k.get(v)
	}
	innermost := !hasLoops(body)
	var nest func(d int, accs []value.Value) ([]value.Value, error)
	nest = func(d int, accs []value.Value) ([]value.Value, error) {
		return k.loop(k.get(lbs[d]), k.get(ubs[d]), k.get(steps[d]), accs, vecIf(innermost && d == len(lbs)-1),
			func(iv value.Value, iters []value.Value) ([]value.Value, error) {
				k.vals[body.Argument(d)] = iv
				if d+1 < len(lbs) {
					return nest(d+1, iters)
				}
				vals, err := k.region(body)
				if err != nil {
					return nil, err
				}
				out := make([]value.Value, len(iters))
				for i := range iters {
					rb := red.Region(i).Front()
					k.vals[rb.Argument(0)] = iters[i]
					k.vals[rb.Argument(1)] = vals[i]
					r, err := k.region(rb)
					if err != nil {
						return nil, err
					}
					if len(r) != 1 {
						return nil, fmt.Errorf("a loop.reduce region must yield one value")
					}
					out[i] = r[0]
				}
				return out, nil
			})
	}
	res, err := nest(0, inits)
	if err != nil {
		return err
	}
	k.set(op, res...)
	return nil
}

func (k *kt) ifOp(op *ir.Operation) error {
	cond := k.get(op.Operand(0))
	thenB, merge := k.newBlock("then"), k.newBlock("endif")
	elseB := merge
	hasElse := op.NumRegions() > 1 && !op.Region(1).Empty()
	if hasElse {
		elseB = k.newBlock("else")
	}
	k.cur.NewCondBr(cond, thenB, elseB)
	type arm struct {
		from *llir.Block
		vals []value.Value
	}
	var arms []arm
	k.cur = thenB
	vals, err := k.region(op.Region(0).Front())
	if err != nil {
		return err
	}
	arms = append(arms, arm{k.cur, vals})
	k.cur.NewBr(merge)
	if hasElse {
		k.enter(elseB)
		if vals, err = k.region(op.Region(1).Front()); err != nil {
			return err
		}
		arms = append(arms, arm{k.cur, vals})
		k.cur.NewBr(merge)
	}
	k.enter(merge)
	for i := range op.NumResults() {
		if len(arms) != 2 {
			return fmt.Errorf("a loop.if with results needs an else region")
		}
		incs := make([]*llir.Incoming, len(arms))
		for j, a := range arms {
			incs[j] = llir.NewIncoming(a.vals[i], a.from)
		}
		k.vals[op.Result(i)] = merge.NewPhi(incs...)
	}
	return nil
}

// maxMinSelect recognises select(x > acc or x != x, x, acc) ("maximum")
// and select(x < acc or x != x, x, acc) ("minimum"): graph's reduce_max
// and reduce_min, which keep the first NaN. As llvm.maximum/minimum they
// vectorize; the two differ only in the sign of an equal zero.
func maxMinSelect(sel *ir.Operation, acc *ir.Value) string {
	if sel.Operand(2) != acc {
		return ""
	}
	x := sel.Operand(1)
	if _, ok := x.Type().(*ir.FloatType); !ok {
		return ""
	}
	or := sel.Operand(0).DefiningOp()
	if or == nil || or.Name() != "arith.ori" {
		return ""
	}
	pred := func(v *ir.Value) (string, *ir.Value, *ir.Value) {
		c := v.DefiningOp()
		if c == nil || c.Name() != "arith.cmpf" {
			return "", nil, nil
		}
		p, _ := c.Attr("predicate").(ir.IntegerAttr)
		if p.Value < 0 || int(p.Value) >= len(arith.CmpFPredicateNames) {
			return "", nil, nil
		}
		return arith.CmpFPredicateNames[p.Value], c.Operand(0), c.Operand(1)
	}
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		p1, a1, b1 := pred(or.Operand(order[0]))
		p2, a2, b2 := pred(or.Operand(order[1]))
		if p2 != "uno" || a2 != x || b2 != x || a1 != x || b1 != acc {
			continue
		}
		switch p1 {
		case "ogt":
			return "maximum"
		case "olt":
			return "minimum"
		}
	}
	return ""
}
