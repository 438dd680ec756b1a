package llvm

import (
	"fmt"
	"math"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

type llvmValue = value.Value

// kernelTranslator translates one kernel body. cur is the block new
// instructions go to; structured control flow moves it.
type kernelTranslator struct {
	t      *translator
	f      *llir.Func
	cur    *llir.Block
	vals   map[*ir.Value]llvmValue
	blocks int
	// pending holds the accesses of vector runs not reached yet.
	pending map[*ir.Operation][]*ir.Operation
}

func (k *kernelTranslator) newBlock(hint string) *llir.Block {
	k.blocks++
	return k.f.NewBlock(fmt.Sprintf("%s%d", hint, k.blocks))
}

func (k *kernelTranslator) get(v *ir.Value) llvmValue { return k.vals[v] }

// block translates the ops of b into k.cur and returns the values of its
// loop.yield terminator, if any.
func (k *kernelTranslator) block(b *ir.Block) error {
	_, err := k.region(b)
	return err
}

func (k *kernelTranslator) region(b *ir.Block) ([]llvmValue, error) {
	ops := b.Ops()
	for i, op := range ops {
		for _, in := range op.Operands() {
			if _, ok := k.vals[in]; !ok {
				return nil, ir.Errorf(op.Loc(), "'%s': operand defined outside the kernel or not translated", op.Name())
			}
		}
		if run, ok := k.pending[op]; ok {
			// A member of a vector run: loads were translated with the
			// first; a store run is translated at its last store.
			delete(k.pending, op)
			if op == run[len(run)-1] && op.Name() == loop.StoreOp {
				if err := k.vectorAccess(run); err != nil {
					return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
				}
			}
			continue
		}
		if run := vectorRun(ops, i); run != nil {
			for _, o := range run[1:] {
				k.pending[o] = run
			}
			if op.Name() == loop.LoadOp {
				if err := k.vectorAccess(run); err != nil {
					return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
				}
			}
			continue
		}
		switch op.Name() {
		case loop.YieldOp:
			out := make([]llvmValue, op.NumOperands())
			for i, v := range op.Operands() {
				out[i] = k.get(v)
			}
			return out, nil
		case gpu.ReturnOp:
			if op.NumOperands() > 0 {
				return nil, ir.Errorf(op.Loc(), "a kernel returns no values")
			}
			k.cur.NewRet(nil)
			return nil, nil
		}
		if err := k.op(op); err != nil {
			if _, ok := err.(*ir.Diagnostic); ok {
				return nil, err
			}
			return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
		}
	}
	return nil, nil
}

// op translates one op, recording its results.
func (k *kernelTranslator) op(op *ir.Operation) error {
	name := op.Name()
	if f, ok := intBinary[name]; ok {
		k.set(op, f(k.cur, k.get(op.Operand(0)), k.get(op.Operand(1))))
		return nil
	}
	if name == arith.OpDivF && arith.HasFastMath(op, "afn") && op.Result(0).Type() != ir.F64 {
		// Approximate functions allowed: x·rcp.approx(y) (1/y alone for
		// x = 1), one MUFU instruction with no slow path. An IEEE
		// division's slow path is a subroutine call, and ptxas serializes
		// every wgmma of a kernel that calls one when it compiles it as
		// relocatable code, as the driver's linker does (C7509).
		return k.floatOp(op, func(xs []llvmValue) (llvmValue, error) {
			r, err := k.nvvm("rcp.approx.ftz.f", xs[1])
			if err != nil || isOne(op.Operand(0)) {
				return r, err
			}
			return k.cur.NewFMul(xs[0], r), nil
		})
	}
	if f, ok := floatBinary[name]; ok {
		return k.floatOp(op, func(xs []llvmValue) (llvmValue, error) { return f(k, xs[0], xs[1]), nil })
	}
	if name == mathd.OpExp2 && arith.HasFastMath(op, "afn") && op.Result(0).Type() != ir.F64 {
		// Approximate functions allowed: the flush-to-zero form, one MUFU
		// instruction, without the scaling ex2.approx.f32 needs to get
		// subnormal results right (flash attention's probabilities).
		return k.floatOp(op, func(xs []llvmValue) (llvmValue, error) { return k.nvvm("ex2.approx.ftz.f", xs[0]) })
	}
	if f, ok := mathOps[name]; ok {
		return k.floatOp(op, func(xs []llvmValue) (llvmValue, error) { return f(k, xs) })
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
	case arith.OpConstant:
		return k.constant(op)
	case arith.OpCmpI:
		p, _ := op.Attr("predicate").(ir.IntegerAttr)
		if p.Value < 0 || int(p.Value) >= len(arith.CmpIPredicateNames) {
			return fmt.Errorf("bad predicate")
		}
		k.set(op, k.cur.NewICmp(icmpPreds[arith.CmpIPredicateNames[p.Value]], k.get(op.Operand(0)), k.get(op.Operand(1))))
		return nil
	case arith.OpCmpF:
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
		k.set(op, k.cur.NewFCmp(fcmpPreds[arith.CmpFPredicateNames[p.Value]], x, y))
		return nil
	case arith.OpSelect:
		k.set(op, k.cur.NewSelect(k.get(op.Operand(0)), k.get(op.Operand(1)), k.get(op.Operand(2))))
		return nil
	case loop.LoadOp:
		return k.load(op)
	case loop.StoreOp:
		return k.store(op)
	case loop.ForOp:
		return k.forOp(op)
	case loop.IfOp:
		return k.ifOp(op)
	case gpu.ThreadIDOp, gpu.BlockIDOp, gpu.BlockDimOp, gpu.GridDimOp:
		sreg := map[string]string{gpu.ThreadIDOp: "tid", gpu.BlockIDOp: "ctaid", gpu.BlockDimOp: "ntid", gpu.GridDimOp: "nctaid"}[name]
		d := gpu.Dimension(op)
		if d == "" {
			return fmt.Errorf("missing dimension")
		}
		r := k.cur.NewCall(k.t.intrinsic("llvm.nvvm.read.ptx.sreg."+sreg+"."+d, types.I32))
		k.set(op, k.cur.NewZExt(r, types.I64))
		return nil
	case gpu.BarrierOp:
		k.cur.NewCall(k.t.intrinsic("llvm.nvvm.barrier0", types.Void))
		return nil
	case gpu.ShuffleOp:
		return k.shuffle(op)
	}
	if f, ok := tensorCoreOps[name]; ok {
		return f(k, op)
	}
	return fmt.Errorf("op is not supported by the LLVM translation")
}

func (k *kernelTranslator) set(op *ir.Operation, vs ...llvmValue) {
	for i, v := range vs {
		k.vals[op.Result(i)] = v
	}
}

// floatBinary maps arith float ops to LLVM on f32 or f64 operands.
var floatBinary = map[string]func(k *kernelTranslator, x, y llvmValue) llvmValue{
	arith.OpAddF:     func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.cur.NewFAdd(x, y) },
	arith.OpSubF:     func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.cur.NewFSub(x, y) },
	arith.OpMulF:     func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.cur.NewFMul(x, y) },
	arith.OpDivF:     func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.cur.NewFDiv(x, y) },
	arith.OpMaxNumF:  func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.call2("llvm.maxnum", x, y) },
	arith.OpMinNumF:  func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.call2("llvm.minnum", x, y) },
	arith.OpMaximumF: func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.nanMinMax("maximum", x, y) },
	arith.OpMinimumF: func(k *kernelTranslator, x, y llvmValue) llvmValue { return k.nanMinMax("minimum", x, y) },
}

// nanMinMax is arith.maximumf (base "maximum") or arith.minimumf
// ("minimum"): NaN-propagating, -0 below +0. On f32 it is llvm.maximum /
// llvm.minimum, one max.NaN / min.NaN (sm_80) in both PTX backends. PTX
// has no f64 form: there x + y, NaN when either is, carries a NaN past
// maxnum/minnum.
func (k *kernelTranslator) nanMinMax(base string, x, y llvmValue) llvmValue {
	if types.Equal(x.Type(), types.Float) {
		return k.call2("llvm."+base, x, y)
	}
	num := map[string]string{"maximum": "llvm.maxnum", "minimum": "llvm.minnum"}[base]
	return k.cur.NewSelect(k.cur.NewFCmp(enum.FPredUNO, x, y), k.cur.NewFAdd(x, y), k.call2(num, x, y))
}

func (k *kernelTranslator) call1(base string, x llvmValue) llvmValue {
	t := x.Type()
	return k.cur.NewCall(k.t.intrinsic(base+"."+TypeSuffix(t), t, t), x)
}

func (k *kernelTranslator) call2(base string, x, y llvmValue) llvmValue {
	t := x.Type()
	return k.cur.NewCall(k.t.intrinsic(base+"."+TypeSuffix(t), t, t, t), x, y)
}

// nvvm calls an f32 NVVM intrinsic such as llvm.nvvm.ex2.approx.f.
func (k *kernelTranslator) nvvm(name string, x llvmValue) (llvmValue, error) {
	if !types.Equal(x.Type(), types.Float) {
		return nil, fmt.Errorf("only f32 (and f16, bf16 through f32) is supported, not %s", x.Type())
	}
	return k.cur.NewCall(k.t.intrinsic("llvm.nvvm."+name, types.Float, types.Float), x), nil
}

// isOne reports whether v is the float constant 1.
func isOne(v *ir.Value) bool {
	op := v.DefiningOp()
	if op == nil || op.Name() != arith.OpConstant {
		return false
	}
	f, ok := op.Attr("value").(ir.FloatAttr)
	return ok && f.Value() == 1
}

// floatOp computes op in f32 (f16 and bf16 operands are widened and the
// result narrowed back) or f64.
func (k *kernelTranslator) floatOp(op *ir.Operation, f func(xs []llvmValue) (llvmValue, error)) error {
	xs := make([]llvmValue, op.NumOperands())
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

// toF32 returns a float operand as f32, or as itself when f32 or f64.
func (k *kernelTranslator) toF32(v *ir.Value) (llvmValue, error) {
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
		return nil, fmt.Errorf("type %s is not supported in kernels", v.Type())
	}
	return x, nil
}

// fromF32 narrows an f32 result to f16 or bf16 (round to nearest even,
// NaN kept quiet). The native PTX backend selects the bf16 sequence as
// one cvt.rn.bf16.f32, and toF32's as one cvt.f32.bf16 (TestShortPTX).
func (k *kernelTranslator) fromF32(x llvmValue, to ir.Type) (llvmValue, error) {
	b := k.cur
	switch to {
	case ir.F16:
		return b.NewFPTrunc(x, types.Half), nil
	case ir.BF16:
		u := b.NewBitCast(x, types.I32)
		lsb := b.NewAnd(b.NewLShr(u, constant.NewInt(types.I32, 16)), constant.NewInt(types.I32, 1))
		rounded := b.NewLShr(b.NewAdd(b.NewAdd(u, constant.NewInt(types.I32, 0x7fff)), lsb), constant.NewInt(types.I32, 16))
		nan := b.NewLShr(b.NewOr(u, constant.NewInt(types.I32, 0x400000)), constant.NewInt(types.I32, 16))
		r := b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), nan, rounded)
		return b.NewTrunc(r, types.I16), nil
	}
	return x, nil
}

func f32c(v float64) *constant.Float { return constant.NewFloat(types.Float, float64(float32(v))) }

// mathOps builds each math op from intrinsics both PTX backends select.
// docs/ptx-math.md gives the error of each sequence.
var mathOps = map[string]func(k *kernelTranslator, xs []llvmValue) (llvmValue, error){
	arith.OpNegF:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.cur.NewFNeg(xs[0]), nil },
	mathd.OpAbsF:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.call1("llvm.fabs", xs[0]), nil },
	mathd.OpSqrt:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.call1("llvm.sqrt", xs[0]), nil },
	mathd.OpFloor: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.call1("llvm.floor", xs[0]), nil },
	mathd.OpCeil:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.call1("llvm.ceil", xs[0]), nil },
	mathd.OpTrunc: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.call1("llvm.trunc", xs[0]), nil },
	mathd.OpRoundEven: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) {
		return k.call1("llvm.roundeven", xs[0]), nil
	},
	mathd.OpCopySign: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) {
		return k.call2("llvm.copysign", xs[0], xs[1]), nil
	},
	mathd.OpFMA: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) {
		t := xs[0].Type()
		return k.cur.NewCall(k.t.intrinsic("llvm.fma."+TypeSuffix(t), t, t, t, t), xs[0], xs[1], xs[2]), nil
	},
	// round: half away from zero, as copysign(floor(|x| + 0.5), x).
	mathd.OpRound: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) {
		a := k.call1("llvm.fabs", xs[0])
		half := constant.NewFloat(xs[0].Type().(*types.FloatType), 0.5)
		return k.call2("llvm.copysign", k.call1("llvm.floor", k.cur.NewFAdd(a, half)), xs[0]), nil
	},
	mathd.OpRsqrt: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.nvvm("rsqrt.approx.f", xs[0]) },
	mathd.OpExp2:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.nvvm("ex2.approx.f", xs[0]) },
	mathd.OpLog2:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.nvvm("lg2.approx.f", xs[0]) },
	mathd.OpSin:   func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.nvvm("sin.approx.f", xs[0]) },
	mathd.OpCos:   func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.nvvm("cos.approx.f", xs[0]) },
	mathd.OpExp:   func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.exp(xs[0]) },
	mathd.OpLog:   func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.logScaled(xs[0], math.Ln2) },
	mathd.OpLog10: func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.logScaled(xs[0], math.Log10(2)) },
	mathd.OpTanh:  func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.tanh(xs[0]) },
	mathd.OpErf:   func(k *kernelTranslator, xs []llvmValue) (llvmValue, error) { return k.erf(xs[0]) },
}

// exp(x) = 2^(x·log2 e).
func (k *kernelTranslator) exp(x llvmValue) (llvmValue, error) {
	if !types.Equal(x.Type(), types.Float) {
		return nil, fmt.Errorf("only f32 (and f16, bf16 through f32) is supported, not %s", x.Type())
	}
	return k.nvvm("ex2.approx.f", k.cur.NewFMul(x, f32c(math.Log2E)))
}

// logScaled(x, s) = log2(x)·s.
func (k *kernelTranslator) logScaled(x llvmValue, s float64) (llvmValue, error) {
	l, err := k.nvvm("lg2.approx.f", x)
	if err != nil {
		return nil, err
	}
	return k.cur.NewFMul(l, f32c(s)), nil
}

// tanh(x) = sign(x)·(1 − 2/(e^{2|x|} + 1)); below |x| = 0.125, where that
// form cancels, the odd series x − x³/3 + 2x⁵/15 (error < 2.5e-8·|x|).
// Two products by 2 fold away, bit for bit: |x|·2·log2 e is one product
// by the f32 constant 2·log2 e (doubling is exact, in x and in the
// constant's rounding), and 1 − 2r one fma (2r is exact, so both round
// 1 − 2r once).
func (k *kernelTranslator) tanh(x llvmValue) (llvmValue, error) {
	if !types.Equal(x.Type(), types.Float) {
		return nil, fmt.Errorf("only f32 (and f16, bf16 through f32) is supported, not %s", x.Type())
	}
	b := k.cur
	a := k.call1("llvm.fabs", x)
	e, err := k.nvvm("ex2.approx.f", b.NewFMul(a, f32c(2*math.Log2E)))
	if err != nil {
		return nil, err
	}
	// e + 1 ≥ 1: rcp.approx (≤ 1 ulp, no denormals to flush) instead of
	// an IEEE division, a dozen instructions with a slow path.
	r, err := k.nvvm("rcp.approx.ftz.f", b.NewFAdd(e, f32c(1)))
	if err != nil {
		return nil, err
	}
	fma := k.t.intrinsic("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float)
	big := k.call2("llvm.copysign", b.NewCall(fma, f32c(-2), r, f32c(1)), x)
	x2 := b.NewFMul(x, x)
	poly := b.NewFAdd(f32c(-1.0/3), b.NewFMul(x2, f32c(2.0/15)))
	small := b.NewFAdd(x, b.NewFMul(b.NewFMul(x, x2), poly))
	return b.NewSelect(b.NewFCmp(enum.FPredOLT, a, f32c(0.125)), small, big), nil
}

// erf by Abramowitz and Stegun 7.1.26 (absolute error ≤ 1.5e-7, plus the
// error of ex2.approx): 1 − (a1 t + … + a5 t⁵)·e^{−x²}, t = 1/(1 + p|x|).
func (k *kernelTranslator) erf(x llvmValue) (llvmValue, error) {
	b := k.cur
	a := k.call1("llvm.fabs", x)
	t, err := k.nvvm("rcp.approx.ftz.f", b.NewFAdd(f32c(1), b.NewFMul(a, f32c(0.3275911)))) // argument ≥ 1
	if err != nil {
		return nil, err
	}
	coef := []float64{1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}
	var poly llvmValue = f32c(coef[0])
	for _, c := range coef[1:] {
		poly = b.NewFAdd(b.NewFMul(poly, t), f32c(c))
	}
	poly = b.NewFMul(poly, t)
	e, err := k.exp(b.NewFNeg(b.NewFMul(a, a)))
	if err != nil {
		return nil, err
	}
	r := b.NewFSub(f32c(1), b.NewFMul(poly, e))
	return k.call2("llvm.copysign", r, x), nil
}

// castOps translates arith casts.
var castOps = map[string]func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error){
	arith.OpExtSI:       intCast(true),
	arith.OpExtUI:       intCast(false),
	arith.OpTruncI:      intCast(false),
	arith.OpIndexCast:   intCast(true),
	arith.OpIndexCastUI: intCast(false),
	arith.OpSIToFP:      toFloat(true),
	arith.OpUIToFP:      toFloat(false),
	arith.OpFPToSI:      fromFloat(true),
	arith.OpFPToUI:      fromFloat(false),
	arith.OpExtF:        floatCast,
	arith.OpTruncF:      floatCast,
	arith.OpBitcast:     bitCast,
}

func intCast(signed bool) func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
	return func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
		tt, err := ScalarType(to)
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
			// Narrowing a value just widened (a special register read as
			// index, then as i32) gives back the narrow value.
			if z, ok := k.get(x).(*llir.InstZExt); ok && z.From.Type().Equal(tt) {
				return z.From, nil
			}
			return k.cur.NewTrunc(k.get(x), tt), nil
		case signed:
			return k.cur.NewSExt(k.get(x), tt), nil
		default:
			return k.cur.NewZExt(k.get(x), tt), nil
		}
	}
}

func toFloat(signed bool) func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
	return func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
		ft := types.Float
		if to == ir.F64 {
			ft = types.Double
		}
		var r llvmValue
		if signed {
			r = k.cur.NewSIToFP(k.get(x), ft)
		} else {
			r = k.cur.NewUIToFP(k.get(x), ft)
		}
		return k.fromF32(r, to)
	}
}

func fromFloat(signed bool) func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
	return func(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
		tt, err := ScalarType(to)
		if err != nil {
			return nil, err
		}
		f, err := k.toF32(x)
		if err != nil {
			return nil, err
		}
		if signed {
			return k.cur.NewFPToSI(f, tt), nil
		}
		return k.cur.NewFPToUI(f, tt), nil
	}
}

// floatCast is extf and truncf between f16, bf16, f32 and f64.
func floatCast(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
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

func bitCast(k *kernelTranslator, x *ir.Value, to ir.Type) (llvmValue, error) {
	tt, err := ScalarType(to)
	if err != nil {
		return nil, err
	}
	if types.Equal(tt, k.get(x).Type()) { // bf16 <-> i16: both are i16 here
		return k.get(x), nil
	}
	return k.cur.NewBitCast(k.get(x), tt), nil
}

// constant translates arith.constant of a scalar.
func (k *kernelTranslator) constant(op *ir.Operation) error {
	t := op.Result(0).Type()
	lt, err := ScalarType(t)
	if err != nil {
		return err
	}
	switch a := op.Attr("value").(type) {
	case ir.IntegerAttr:
		v := a.Value
		if it, ok := lt.(*types.IntType); ok && it.BitSize == 1 {
			v &= 1
		}
		k.set(op, constant.NewInt(lt.(*types.IntType), v))
		return nil
	case ir.FloatAttr:
		if t == ir.BF16 {
			k.set(op, constant.NewInt(types.I16, int64(a.Bits)))
			return nil
		}
		v := a.Value()
		if math.IsNaN(v) || math.IsInf(v, 0) {
			// llir prints special values as hex only for f64-exact bits.
			k.set(op, k.cur.NewBitCast(specialBits(t, v), lt))
			return nil
		}
		k.set(op, constant.NewFloat(lt.(*types.FloatType), v))
		return nil
	}
	return fmt.Errorf("only scalar integer and float constants are supported, not %s", op.Attr("value"))
}

// specialBits is a NaN or infinity of type t as an integer constant.
func specialBits(t ir.Type, v float64) *constant.Int {
	ft := t.(*ir.FloatType)
	bits := ir.FloatToBits(v, ft)
	return constant.NewInt(types.NewInt(uint64(ft.Width)), int64(bits))
}

// address returns the element pointer of a 1-D memref access.
func (k *kernelTranslator) address(mem, idx *ir.Value) (llvmValue, types.Type, error) {
	mt, ok := mem.Type().(*ir.MemRefType)
	if !ok || len(mt.Shape()) != 1 {
		return nil, nil, fmt.Errorf("kernels access 1-D memrefs only, not %s", mem.Type())
	}
	elem, err := MemType(mt.ElementType())
	if err != nil {
		return nil, nil, err
	}
	return k.cur.NewGetElementPtr(elem, k.get(mem), k.get(idx)), elem, nil
}

func (k *kernelTranslator) load(op *ir.Operation) error {
	if op.NumOperands() != 2 {
		return fmt.Errorf("kernels access 1-D memrefs only")
	}
	p, elem, err := k.address(op.Operand(0), op.Operand(1))
	if err != nil {
		return err
	}
	var v llvmValue = k.cur.NewLoad(elem, p)
	if it, ok := op.Result(0).Type().(*ir.IntegerType); ok && it.Width == 1 {
		v = k.cur.NewTrunc(v, types.I1)
	}
	k.set(op, v)
	return nil
}

func (k *kernelTranslator) store(op *ir.Operation) error {
	if op.NumOperands() != 3 {
		return fmt.Errorf("kernels access 1-D memrefs only")
	}
	p, elem, err := k.address(op.Operand(1), op.Operand(2))
	if err != nil {
		return err
	}
	v := k.get(op.Operand(0))
	if it, ok := op.Operand(0).Type().(*ir.IntegerType); ok && it.Width == 1 {
		v = k.cur.NewZExt(v, elem)
	}
	k.cur.NewStore(v, p)
	return nil
}

// forOp lowers loop.for to header, body and exit blocks:
//
//	pre:    br header
//	header: iv = phi [lb, pre], [iv+step, latch]; iters = phi …
//	        br (iv < ub) body, exit
//	body…:  the region; its yield feeds the phis; br header
func (k *kernelTranslator) forOp(op *ir.Operation) error {
	lb, ub, step := k.get(op.Operand(0)), k.get(op.Operand(1)), k.get(op.Operand(2))
	inits := op.Operands()[3:]
	body := op.Region(0).Front()
	pre := k.cur
	header, entry, exit := k.newBlock("loop"), k.newBlock("body"), k.newBlock("exit")
	pre.NewBr(header)
	iv := header.NewPhi(llir.NewIncoming(lb, pre))
	k.vals[body.Argument(0)] = iv
	phis := make([]*llir.InstPhi, len(inits))
	for i, in := range inits {
		phis[i] = header.NewPhi(llir.NewIncoming(k.get(in), pre))
		k.vals[body.Argument(i+1)] = phis[i]
		k.vals[op.Result(i)] = phis[i]
	}
	header.NewCondBr(header.NewICmp(enum.IPredSLT, iv, ub), entry, exit)
	k.cur = entry
	next, err := k.region(body)
	if err != nil {
		return err
	}
	latch := k.cur
	iv.Incs = append(iv.Incs, llir.NewIncoming(latch.NewAdd(iv, step), latch))
	for i, p := range phis {
		p.Incs = append(p.Incs, llir.NewIncoming(next[i], latch))
	}
	br := latch.NewBr(header)
	if op.Attr(loop.NoUnrollAttr) != nil {
		br.Metadata = append(br.Metadata, &metadata.Attachment{Name: LoopMetadata, Node: k.t.noUnroll()})
	}
	k.cur = exit
	return nil
}

// ifOp lowers loop.if to then, else and merge blocks with a phi per result.
func (k *kernelTranslator) ifOp(op *ir.Operation) error {
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
		vals []llvmValue
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
		k.cur = elseB
		if vals, err = k.region(op.Region(1).Front()); err != nil {
			return err
		}
		arms = append(arms, arm{k.cur, vals})
		k.cur.NewBr(merge)
	}
	// merge was made before the arms' blocks; keep blocks in order.
	k.moveToEnd(merge)
	for i := range op.NumResults() {
		incs := make([]*llir.Incoming, len(arms))
		for j, a := range arms {
			incs[j] = llir.NewIncoming(a.vals[i], a.from)
		}
		k.vals[op.Result(i)] = merge.NewPhi(incs...)
	}
	k.cur = merge
	return nil
}

// moveToEnd moves b to the end of the function's block list.
func (k *kernelTranslator) moveToEnd(b *llir.Block) {
	bs := k.f.Blocks
	for i, x := range bs {
		if x == b {
			k.f.Blocks = append(append(bs[:i:i], bs[i+1:]...), b)
			return
		}
	}
}

// shuffle lowers gpu.shuffle to shfl.sync with a full mask. The clamp
// operand packs the segment mask ((32 − width) << 8) with the lane bound
// (31, or 0 for up). The valid flag is computed only when used.
func (k *kernelTranslator) shuffle(op *ir.Operation) error {
	mode := map[string]string{"xor": "bfly", "down": "down", "up": "up", "idx": "idx"}[gpu.ShuffleMode(op)]
	if mode == "" {
		return fmt.Errorf("unknown shuffle mode")
	}
	vt := op.Operand(0).Type()
	var x llvmValue
	var err error
	suffix := "f32"
	switch vt {
	case ir.I32:
		x, suffix = k.get(op.Operand(0)), "i32"
	case ir.F16, ir.BF16, ir.F32:
		if x, err = k.toF32(op.Operand(0)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("shuffles of %s are not supported (want i32, f32, f16 or bf16)", vt)
	}
	b := k.cur
	off, width := k.get(op.Operand(1)), k.get(op.Operand(2))
	i32 := func(v int64) *constant.Int { return constant.NewInt(types.I32, v) }
	clamp := b.NewShl(b.NewSub(i32(32), width), i32(8))
	var c llvmValue = clamp
	if mode != "up" {
		c = b.NewOr(clamp, i32(31))
	}
	fn := k.t.intrinsic("llvm.nvvm.shfl.sync."+mode+"."+suffix, x.Type(), types.I32, x.Type(), types.I32, types.I32)
	r := b.NewCall(fn, i32(-1), x, off, c)
	res, err := k.fromF32(r, vt)
	if err != nil {
		return err
	}
	k.vals[op.Result(0)] = res
	if !op.Result(1).HasUses() {
		k.vals[op.Result(1)] = constant.True
		return nil
	}
	lane := b.NewURem(b.NewCall(k.t.intrinsic("llvm.nvvm.read.ptx.sreg.laneid", types.I32)), width)
	var valid llvmValue
	switch mode {
	case "bfly":
		valid = b.NewICmp(enum.IPredULT, b.NewXor(lane, off), width)
	case "down":
		valid = b.NewICmp(enum.IPredULT, b.NewAdd(lane, off), width)
	case "up":
		valid = b.NewICmp(enum.IPredUGE, lane, off)
	default:
		valid = b.NewICmp(enum.IPredULT, off, width)
	}
	k.vals[op.Result(1)] = valid
	return nil
}
