package togpu

import (
	"fmt"
	"math"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/gpu"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// expand-math: PTX has no f64 approximations of exp, log, sin, … and no
// pow in any type, so targets/llvm cannot translate those math ops. This
// pass rewrites them inside gpu.func bodies into arith and exact math ops
// (fma, roundeven, sqrt, absf, copysign, floor), which every target
// translates and the interpreter simulates bit-exactly; the accuracy of
// each sequence is therefore measured on the CPU (expandmath_test.go) and
// listed in docs/ptx-math.md. f32, f16 and bf16 math other than powf stays
// with targets/llvm's shorter sequences.

// ExpandMathPassName is the pass's pipeline name.
const ExpandMathPassName = "expand-math"

func init() {
	passes.Register(&passes.PassInfo{
		Name:    ExpandMathPassName,
		Summary: "Expand the math ops PTX cannot approximate into arith sequences inside gpu.func bodies",
		Description: "Rewrites f64 `math.exp`, `math.log`, `math.rsqrt`, `math.tanh`, `math.erf`, " +
			"`math.sin` and `math.cos`, and `math.powf` of every float type (f32, f16 and bf16 " +
			"computed in f64), into arith ops and exact math ops. The error of each sequence is in " +
			"docs/ptx-math.md. An f32 `arith.divf` of a constant (a reciprocal, computed once a row in " +
			"softmax and layer_norm) becomes an exact f64 Newton sequence, so that the kernel needs no " +
			"div.rn.f32 subroutine (bit-identical results, less work for the driver's JIT); one with " +
			"fastmath `afn` stays an approximate reciprocal.",
		Anchor: passes.AnyOp,
		After: []passes.Order{
			{Pass: "convert-loop-to-gpu", Reason: "it rewrites math ops inside the gpu.func bodies convert-loop-to-gpu makes"},
		},
		New: func(passes.Options) (passes.Pass, error) { return expandMathPass{}, nil },
	})
}

type expandMathPass struct{}

func (expandMathPass) Name() string { return ExpandMathPassName }

// Run expands the math ops of every gpu.func nested in op.
func (expandMathPass) Run(op *ir.Operation, st *passes.State) error {
	var n int
	var err error
	op.Walk(func(o *ir.Operation) bool {
		if err != nil {
			return false
		}
		if o.Name() != gpu.FuncOp {
			return true
		}
		var k int
		k, err = ExpandMath(st.Ctx, o)
		n += k
		return false
	})
	st.Stat("num-expanded", "math ops expanded into arith").Add(int64(n))
	if n == 0 {
		st.MarkUnchanged()
	}
	return err
}

// f64Expansions are the f64 math ops expanded, by op name.
var f64Expansions = map[string]func(e *expander, x *ir.Value) *ir.Value{
	mathd.OpExp:   (*expander).exp,
	mathd.OpLog:   (*expander).log,
	mathd.OpRsqrt: (*expander).rsqrt,
	mathd.OpTanh:  (*expander).tanh,
	mathd.OpErf:   (*expander).erf,
	mathd.OpSin:   func(e *expander, x *ir.Value) *ir.Value { return e.sinCos(x, false) },
	mathd.OpCos:   func(e *expander, x *ir.Value) *ir.Value { return e.sinCos(x, true) },
}

// ExpandMath rewrites the expandable math ops nested in root (f64 math in
// f64Expansions, powf of any float type) and returns how many it rewrote.
// Other ops, and math ops of other types, are left alone.
func ExpandMath(ctx *ir.Context, root *ir.Operation) (int, error) {
	var todo []*ir.Operation
	root.Walk(func(o *ir.Operation) bool {
		if o.NumResults() == 1 && (o.Name() == mathd.OpPowF || f64Expansions[o.Name()] != nil && ir.ElementTypeOf(o.Result(0).Type()) == ir.F64 ||
			isF32Reciprocal(o)) {
			todo = append(todo, o)
		}
		return true
	})
	b := ir.NewBuilder(ctx)
	for _, o := range todo {
		b.SetInsertionPointBefore(o)
		t := o.Result(0).Type()
		ft, ok := ir.ElementTypeOf(t).(*ir.FloatType)
		if !ok {
			return 0, fmt.Errorf("%s: %s has a non-float result type %s", o.Loc(), o.Name(), t)
		}
		e := newExpander(b, o.Loc(), withElem(t, ir.F64))
		var r *ir.Value
		if o.Name() == arith.OpDivF {
			r = arith.NewCast(b, arith.OpTruncF, e.loc, e.quotient(e.ext(o.Operand(0)), e.ext(o.Operand(1))), t)
		} else if o.Name() == mathd.OpPowF {
			// f32, f16 and bf16 go through f64: the f64 sequence's error
			// is far below their ulp, so one rounding remains.
			x, y := e.ext(o.Operand(0)), e.ext(o.Operand(1))
			r = e.pow(x, y)
			if ft != ir.F64 {
				r = arith.NewCast(b, arith.OpTruncF, e.loc, r, t)
			}
		} else {
			r = f64Expansions[o.Name()](e, o.Operand(0))
		}
		o.Result(0).ReplaceAllUsesWith(r)
		o.Erase()
	}
	return len(todo), nil
}

// isF32Reciprocal reports whether o is an f32 divf whose dividend is a
// finite, nonzero constant (1 in softmax's and layer_norm's row scales).
// PTX's div.rn.f32 carries an out-of-line slow path that the driver's JIT
// compiles anew in every kernel that divides (about a fifth of the JIT's
// work on a softmax kernel, measured with ptxas), while such a division
// runs once a row: expanding it costs nothing at run time and keeps the
// kernel free of the subroutine. Divisions by a variable dividend (one per
// element) keep div.rn.f32. A division with fastmath afn asks for
// rcp.approx (targets/llvm), not the correctly rounded quotient: it stays
// (the flash kernels' 1/l, which their Newton step corrects, was a chain
// of f64 fmas on the fp64 pipe at the end of every row block).
func isF32Reciprocal(o *ir.Operation) bool {
	if o.Name() != arith.OpDivF || ir.ElementTypeOf(o.Result(0).Type()) != ir.F32 || arith.HasFastMath(o, "afn") {
		return false
	}
	c := o.Operand(0).DefiningOp()
	if c == nil || !c.HasTrait(ir.ConstantLike) {
		return false
	}
	var bits uint64
	switch a := c.Attr("value").(type) {
	case ir.FloatAttr:
		bits = a.Bits
	case ir.DenseAttr:
		if !a.Splat || len(a.Bits) != 1 {
			return false
		}
		bits = a.Bits[0]
	default:
		return false
	}
	x := ir.FloatFromBits(bits, ir.F32)
	return x != 0 && !math.IsInf(x, 0) && !math.IsNaN(x)
}

// quotient is x/y for f32 values x (finite, nonzero) and y held in f64,
// accurate to about 2^-52: rounding it to f32 then gives the correctly
// rounded f32 quotient, because the quotient of two 24-bit significands
// is either an f32 value or at least 2^-49 (relative) away from every
// rounding boundary of the f32 grid, subnormal results included.
// 1/|y| comes from Newton's iteration started at an integer seed (the
// exponent negated by one subtraction, at most 5.1% off), four quadratic
// steps reach the f64 precision (0.051^16 ≪ 2^-53), and one correction by the residual
// x − y·q (exact by fma) rounds the product. Zero, infinite and NaN
// divisors take x·(1/y) with 1/±0 = ±∞, 1/±∞ = ±0.
func (e *expander) quotient(x, y *ir.Value) *ir.Value {
	ay := e.abs(y)
	r := e.float(e.bin(arith.OpSubI, e.ci(0x7FDE623822FC16E6), e.bits(ay)))
	negY, one := e.neg(ay), e.c(1)
	for range 4 {
		r = e.fma(r, e.fma(negY, r, one), r)
	}
	r = e.math(mathd.OpCopySign, r, y)
	q := e.mul(x, r)
	q = e.fma(e.fma(e.neg(y), q, x), r, q)

	zero := e.cmp(arith.CmpFOEQ, y, e.c(0))
	inf := e.cmp(arith.CmpFOEQ, ay, e.c(math.Inf(1)))
	rs := e.math(mathd.OpCopySign, e.sel(zero, e.c(math.Inf(1)), e.c(0)), y)
	rs = e.sel(e.isNaN(y), y, rs)
	special := e.or(e.or(zero, inf), e.isNaN(y))
	return e.sel(special, e.mul(x, rs), q)
}

// withElem returns t (a scalar or ranked tensor type) with element type
// elem. Kernels hold scalars (convert-loop-to-gpu emits no vector types);
// tensors let the tests run many inputs through the interpreter at once.
func withElem(t, elem ir.Type) ir.Type {
	if t, ok := t.(*ir.TensorType); ok {
		return ir.TensorWithEncoding(t.Shape(), elem, t.Encoding)
	}
	return elem
}

// expander emits an f64 sequence before the op being expanded; t is f64 (a
// tensor of f64 in tests), it the i64 type of the same shape.
type expander struct {
	b     *ir.Builder
	loc   ir.Location
	t, it ir.Type
}

func newExpander(b *ir.Builder, loc ir.Location, t ir.Type) *expander {
	return &expander{b: b, loc: loc, t: t, it: withElem(t, ir.I64)}
}

func (e *expander) ext(x *ir.Value) *ir.Value {
	if x.Type() == e.t {
		return x
	}
	return arith.NewCast(e.b, arith.OpExtF, e.loc, x, e.t)
}

func (e *expander) c(v float64) *ir.Value { return arith.ConstantFloat(e.b, e.loc, v, e.t) }
func (e *expander) ci(v int64) *ir.Value  { return arith.ConstantInt(e.b, e.loc, v, e.it) }
func (e *expander) bin(name string, x, y *ir.Value) *ir.Value {
	return arith.Binary(e.b, name, e.loc, x, y)
}
func (e *expander) add(x, y *ir.Value) *ir.Value { return e.bin(arith.OpAddF, x, y) }
func (e *expander) sub(x, y *ir.Value) *ir.Value { return e.bin(arith.OpSubF, x, y) }
func (e *expander) mul(x, y *ir.Value) *ir.Value { return e.bin(arith.OpMulF, x, y) }
func (e *expander) div(x, y *ir.Value) *ir.Value { return e.bin(arith.OpDivF, x, y) }
func (e *expander) neg(x *ir.Value) *ir.Value    { return arith.Unary(e.b, arith.OpNegF, e.loc, x) }

// math emits the exact math op name on xs.
func (e *expander) math(name string, xs ...*ir.Value) *ir.Value {
	return e.b.Op(name, e.loc, xs, []ir.Type{xs[0].Type()},
		ir.NamedAttr{Name: arith.FastMathAttr, Value: arith.FastMathNone}).Result(0)
}
func (e *expander) fma(x, y, z *ir.Value) *ir.Value { return e.math(mathd.OpFMA, x, y, z) }
func (e *expander) abs(x *ir.Value) *ir.Value       { return e.math(mathd.OpAbsF, x) }

func (e *expander) cmp(p arith.CmpFPredicate, x, y *ir.Value) *ir.Value {
	return arith.NewCmpF(e.b, e.loc, p, x, y)
}
func (e *expander) cmpi(p arith.CmpIPredicate, x, y *ir.Value) *ir.Value {
	return arith.NewCmpI(e.b, e.loc, p, x, y)
}
func (e *expander) sel(c, x, y *ir.Value) *ir.Value { return arith.NewSelect(e.b, e.loc, c, x, y) }
func (e *expander) and(x, y *ir.Value) *ir.Value    { return e.bin(arith.OpAndI, x, y) }
func (e *expander) or(x, y *ir.Value) *ir.Value     { return e.bin(arith.OpOrI, x, y) }
func (e *expander) bits(x *ir.Value) *ir.Value {
	return arith.NewCast(e.b, arith.OpBitcast, e.loc, x, e.it)
}
func (e *expander) float(i *ir.Value) *ir.Value {
	return arith.NewCast(e.b, arith.OpBitcast, e.loc, i, e.t)
}

// isNaN is x ≠ x.
func (e *expander) isNaN(x *ir.Value) *ir.Value { return e.cmp(arith.CmpFUNO, x, x) }

// poly is c[0] + x·(c[1] + x·(… + x·c[n])), Horner's rule with fma.
func (e *expander) poly(x *ir.Value, c ...float64) *ir.Value {
	p := e.c(c[len(c)-1])
	for i := len(c) - 2; i >= 0; i-- {
		p = e.fma(p, x, e.c(c[i]))
	}
	return p
}

// pow2 is 2^k for an integer k (i64) in [-1022, 1023], built from its
// exponent bits.
func (e *expander) pow2(k *ir.Value) *ir.Value {
	return e.float(e.bin(arith.OpShLI, e.bin(arith.OpAddI, k, e.ci(1023)), e.ci(52)))
}

// Cody–Waite split of ln 2: ln2Hi has 32 trailing zero bits, so k·ln2Hi is
// exact for |k| < 2^20 (fdlibm's constants).
const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
)

// expTaylor are 1/i! for i = 0…13: e^r on |r| ≤ ln2/2 with truncation
// below r^14/14! ≤ 5e-18.
var expTaylor = func() []float64 {
	c := make([]float64, 14)
	f := 1.0
	for i := range c {
		if i > 0 {
			f *= float64(i)
		}
		c[i] = 1 / f
	}
	return c
}()

// reduceExp returns k (f64, an integer) and r = x − k·ln2 with |r| ≤ ln2/2
// (+ rounding), for x already clamped to [-746, 710].
func (e *expander) reduceExp(x *ir.Value) (kf, r *ir.Value) {
	kf = e.math(mathd.OpRoundEven, e.mul(x, e.c(math.Log2E)))
	r = e.fma(e.neg(kf), e.c(ln2Hi), x)
	r = e.fma(e.neg(kf), e.c(ln2Lo), r)
	return kf, r
}

// scale is p·2^k for k (f64, an integer in [-1078, 1026]) in two steps of
// representable powers, so that a subnormal result is rounded once and an
// overflow gives inf.
func (e *expander) scale(p, kf *ir.Value) *ir.Value {
	k := arith.NewCast(e.b, arith.OpFPToSI, e.loc, kf, e.it)
	k1 := e.bin(arith.OpShRSI, k, e.ci(1))
	k2 := e.bin(arith.OpSubI, k, k1)
	return e.mul(e.mul(p, e.pow2(k1)), e.pow2(k2))
}

// clampExp limits x to [-746, 710], beyond which e^x rounds to 0 or inf,
// and maps NaN to 0 (the caller restores it), so k converts to an integer.
func (e *expander) clampExp(x *ir.Value) *ir.Value {
	x = e.sel(e.isNaN(x), e.c(0), x)
	return e.bin(arith.OpMinimumF, e.bin(arith.OpMaximumF, x, e.c(-746)), e.c(710))
}

// exp: e^x = 2^k·e^r, r = x − k·ln2 (Cody–Waite), e^r by its Taylor series.
func (e *expander) exp(x *ir.Value) *ir.Value { return e.expDD(x, nil) }

// expDD is e^(x + lo) for a small lo (|lo| ≤ ulp(x), |x| < 1024: below
// 2^-42), added to the reduced argument; nil lo is exp.
func (e *expander) expDD(x, lo *ir.Value) *ir.Value {
	kf, r := e.reduceExp(e.clampExp(x))
	if lo != nil {
		r = e.add(r, lo)
	}
	y := e.scale(e.poly(r, expTaylor...), kf)
	return e.sel(e.isNaN(x), x, y)
}

// expm1 is e^x − 1 as fma(2^k, p, 2^k − 1), with k and r = x − k·ln2 as in
// exp and p = e^r − 1 by its Taylor series without the 1: 2^k − 1 is exact
// for |k| ≤ 53, so one rounding joins the parts and nothing cancels at
// small |x| (k = 0 gives p itself). For x ≤ 44, as tanh needs.
func (e *expander) expm1(x *ir.Value) *ir.Value {
	kf, r := e.reduceExp(e.clampExp(x))
	p := e.mul(r, e.poly(r, expTaylor[1:]...))
	t := e.scale(e.c(1), kf)
	return e.fma(t, p, e.sub(t, e.c(1)))
}

// logSplit writes x (positive, finite) as 2^k·(1+f) with 1+f in
// [√2/2, √2), from the exponent bits (subnormals scaled by 2^54 first); f
// is exact.
func (e *expander) logSplit(x *ir.Value) (kf, f *ir.Value) {
	sub := e.cmp(arith.CmpFOLT, x, e.c(0x1p-1022))
	xs := e.sel(sub, e.mul(x, e.c(0x1p54)), x)
	bits := e.bits(xs)
	k := e.bin(arith.OpSubI, e.bin(arith.OpShRUI, bits, e.ci(52)), e.ci(1023))
	k = e.bin(arith.OpSubI, k, e.sel(sub, e.ci(54), e.ci(0)))
	m := e.float(e.or(e.and(bits, e.ci(1<<52-1)), e.ci(1023<<52)))
	big := e.cmp(arith.CmpFOGT, m, e.c(math.Sqrt2))
	m = e.sel(big, e.mul(m, e.c(0.5)), m)
	k = e.bin(arith.OpAddI, k, e.sel(big, e.ci(1), e.ci(0)))
	return arith.NewCast(e.b, arith.OpSIToFP, e.loc, k, e.t), e.sub(m, e.c(1))
}

// twoThirdsHi + twoThirdsLo is 2/3 to about 2^-107 (atanhTail[0]'s
// rounding, which logDD carries).
const (
	twoThirdsHi = 2.0 / 3
	twoThirdsLo = 3.700743415417188e-17
)

// atanhTail are the coefficients of 2·atanh(s) = 2s + s·R(s²), R's
// 2/3, 2/5, …: |s| ≤ 0.172, so z = s² ≤ 0.0295 and z^12 < 2^-61.
var atanhTail = func() []float64 {
	c := make([]float64, 11)
	for i := range c {
		c[i] = 2 / float64(2*i+3)
	}
	return c
}()

// log: fdlibm's log(1+f) = f − (f²/2 − s·(f²/2 + R)) with s = f/(2+f) and
// R = z·atanhTail(z), plus k·ln2 in two parts.
func (e *expander) log(x *ir.Value) *ir.Value {
	kf, f := e.logSplit(x)
	s := e.div(f, e.add(e.c(2), f))
	z := e.mul(s, s)
	R := e.mul(z, e.poly(z, atanhTail...))
	hfsq := e.mul(e.c(0.5), e.mul(f, f))
	lm := e.sub(f, e.sub(hfsq, e.mul(s, e.add(hfsq, R))))
	y := e.add(e.mul(kf, e.c(ln2Hi)), e.fma(kf, e.c(ln2Lo), lm))
	// Specials: log(±0) = −inf, log(x<0) = NaN, log(inf) = inf, NaN stays.
	y = e.sel(e.cmp(arith.CmpFOEQ, x, e.c(0)), e.c(math.Inf(-1)), y)
	y = e.sel(e.cmp(arith.CmpFOLT, x, e.c(0)), e.c(math.NaN()), y)
	y = e.sel(e.cmp(arith.CmpFOEQ, x, e.c(math.Inf(1))), x, y)
	return e.sel(e.isNaN(x), x, y)
}

// twoSum returns a + b as hi + lo exactly (Knuth).
func (e *expander) twoSum(a, b *ir.Value) (hi, lo *ir.Value) {
	hi = e.add(a, b)
	bb := e.sub(hi, a)
	return hi, e.add(e.sub(a, e.sub(hi, bb)), e.sub(b, bb))
}

// logDD is log x (x positive, finite) as hi + lo with a relative error
// below 2^-59 (2^-59.4 at worst over 200,000 x in [½, 2), 2^-62 typical),
// for pow, whose exp amplifies log's error by |y·log x|: 2·s with s =
// f/(2+f) carried as a double-double (fma residual), the atanh tail
// s·R(s²) = ⅔s³ + s³·z·R₁(z) with its leading term's roundings recovered
// by fmas and its slope times s's residual added, k·ln2 in two parts.
// (The tail in plain double, up to 0.7% of |2s|, cost 2^-56.8: 7 ulp of
// pow at |y·log x| = 305; session 23.)
func (e *expander) logDD(x *ir.Value) (hi, lo *ir.Value) {
	kf, f := e.logSplit(x)
	two := e.c(2)
	d := e.add(two, f)
	dl := e.add(e.sub(two, d), f) // 2 + f = d + dl exactly (|f| < 2)
	s := e.div(f, d)
	sl := e.div(e.sub(e.fma(e.neg(s), d, f), e.mul(s, dl)), d)
	z := e.mul(s, s)
	zl := e.fma(s, s, e.neg(z)) // s² = z + zl
	c := e.mul(s, z)
	cl := e.fma(s, zl, e.fma(s, z, e.neg(c))) // s³ = c + cl, to 2^-104
	t1 := e.mul(c, e.c(twoThirdsHi))
	t1l := e.fma(c, e.c(twoThirdsHi), e.neg(t1))
	t1l = e.fma(cl, e.c(twoThirdsHi), e.fma(c, e.c(twoThirdsLo), t1l)) // ⅔s³ = t1 + t1l
	rest := e.mul(e.mul(c, z), e.poly(z, atanhTail[1:]...))
	hi, lo = e.twoSum(e.mul(kf, e.c(ln2Hi)), e.add(s, s))
	// (The tail is of s, not s + sl: its slope 2s²/(1−s²) times sl,
	// 2^-58 of log at |s| near 0.17, goes in to first order.)
	small := e.fma(e.add(z, z), sl, e.add(e.add(e.add(sl, sl), t1l), rest))
	lo = e.add(lo, e.fma(kf, e.c(ln2Lo), e.add(t1, small)))
	h := e.add(hi, lo)
	return h, e.sub(lo, e.sub(h, hi))
}

// rsqrt is 1/sqrt(x), both correctly rounded.
func (e *expander) rsqrt(x *ir.Value) *ir.Value {
	return e.div(e.c(1), e.math(mathd.OpSqrt, x))
}

// tanh: below |x| = 0.625, Cephes' x + x·z·P(z)/Q(z), z = x² (Go's
// math.Tanh; the correction is under a fifth of x, so its rounding barely
// shows); above, sign(x)·u/(u+2) with u = expm1(2|x|) ≥ 2.49; 1 beyond
// |x| = 22, where tanh rounds to 1 (and u+2 would overflow first).
func (e *expander) tanh(x *ir.Value) *ir.Value {
	a := e.abs(x)
	z := e.mul(x, x)
	small := e.fma(e.mul(x, z), e.div(e.poly(z, tanhP...), e.poly(z, tanhQ...)), x)
	u := e.expm1(e.add(a, a))
	t := e.div(u, e.add(u, e.c(2)))
	t = e.sel(e.cmp(arith.CmpFOGT, a, e.c(22)), e.c(1), t)
	t = e.sel(e.isNaN(x), x, t) // expm1 clamps NaN to 0
	t = e.math(mathd.OpCopySign, t, x)
	return e.sel(e.cmp(arith.CmpFOLT, a, e.c(0.625)), small, t)
}

// Cephes' tanh coefficients (Go's math.Tanh), lowest degree first.
var (
	tanhP = []float64{-1.61468768441708447952e3, -9.92877231001918586564e1, -9.64399179425052238628e-1}
	tanhQ = []float64{4.84406305325125486048e3, 2.23548839060100448583e3, 1.12811678491632931402e2, 1}
)

// erf is fdlibm's (Go's math.Erf): rational approximations on [0, 0.84375),
// [0.84375, 1.25), [1.25, 1/0.35) and [1/0.35, 6), 1 beyond; every piece is
// computed and the one of |x| selected.
func (e *expander) erf(x *ir.Value) *ir.Value {
	a := e.abs(x)
	z := e.mul(a, a)
	small := e.fma(a, e.div(e.poly(z, erfPP...), e.poly(z, erfQQ...)), a)
	s := e.sub(a, e.c(1))
	mid := e.add(e.c(erfErx), e.div(e.poly(s, erfPA...), e.poly(s, erfQA...)))
	w := e.div(e.c(1), z)
	near := e.cmp(arith.CmpFOLT, a, e.c(1/0.35))
	R := e.sel(near, e.poly(w, erfRA...), e.poly(w, erfRB...))
	S := e.sel(near, e.poly(w, erfSA...), e.poly(w, erfSB...))
	// zz is a with its low 32 bits cleared, so zz·zz is exact and
	// e^(-a²) = e^(-zz²)·e^((zz-a)(zz+a)) loses nothing to the square.
	zz := e.float(e.and(e.bits(a), e.ci(-1<<32)))
	r := e.mul(e.exp(e.sub(e.neg(e.mul(zz, zz)), e.c(0.5625))),
		e.exp(e.add(e.mul(e.sub(zz, a), e.add(zz, a)), e.div(R, S))))
	large := e.sub(e.c(1), e.div(r, a))
	y := e.sel(e.cmp(arith.CmpFOLT, a, e.c(1.25)), mid, large)
	y = e.sel(e.cmp(arith.CmpFOLT, a, e.c(0.84375)), small, y)
	y = e.sel(e.cmp(arith.CmpFOGE, a, e.c(6)), e.c(1), y)
	return e.math(mathd.OpCopySign, y, x)
}

// fdlibm's erf coefficients (s_erf.c), lowest degree first.
const erfErx = 8.45062911510467529297e-01

var (
	erfPP = []float64{1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02, -5.77027029648944159157e-03, -2.37630166566501626084e-05}
	erfQQ = []float64{1, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03, 1.32494738004321644526e-04, -3.96022827877536812320e-06}
	erfPA = []float64{-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01, 3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02, -2.16637559486879084300e-03}
	erfQA = []float64{1, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02}
	erfRA = []float64{-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01, -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02, -8.12874355063065934246e+01, -9.81432934416914548592e+00}
	erfSA = []float64{1, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02}
	erfRB = []float64{-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01, -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03, -4.83519191608651397019e+02}
	erfSB = []float64{1, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02, -2.24409524465858183362e+01}
)

// 2/π as the sum of two doubles (to 2^-107 relative).
const (
	twoOverPiA = 0x1.45f306dc9c883p-1
	twoOverPiB = -0x1.6b01ec5417056p-55
)

// π/2 as the sum of three doubles (the first two exact to 159 bits).
const (
	pio2A = 0x1.921fb54442d18p+00
	pio2B = 0x1.1a62633145c07p-54
	pio2C = -0x1.f1976b7ed8fbcp-110
)

// trigReduceMax bounds the Cody–Waite reduction: below it x·2/π is off by
// less than 0.1, so |x − q·pio2A| < 2 and the fma computing it is exact;
// above it the result is NaN (docs/ptx-math.md), as Payne–Hanek reduction
// is out of scope.
const trigReduceMax = 0x1p50

// fdlibm's kernels (k_sin.c, k_cos.c) on [-π/4, π/4], lowest degree first.
var (
	sinS = []float64{-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04, 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10}
	cosC = []float64{4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05, -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11}
)

// sinCos is sin x (cos x when cos): x = q·π/2 + y + yl with the
// reduced argument as a double-double (Cody–Waite, three-part π/2), then
// fdlibm's kernels, chosen and signed by q mod 4.
func (e *expander) sinCos(x *ir.Value, cos bool) *ir.Value {
	inRange := e.cmp(arith.CmpFOLE, e.abs(x), e.c(trigReduceMax))
	// q is the integer nearest x·2/π, from x·2/π as a double-double: the
	// rounded product alone can be off by 0.06 near 2^50, and then |y|
	// reaches 0.88, beyond the kernels' [-π/4, π/4].
	p := e.mul(x, e.c(twoOverPiA))
	lo := e.fma(x, e.c(twoOverPiB), e.fma(x, e.c(twoOverPiA), e.neg(p)))
	q := e.math(mathd.OpRoundEven, p)
	f := e.add(e.sub(p, q), lo) // (p − q exact: q is p's nearest integer)
	q = e.add(q, e.sel(e.cmp(arith.CmpFOGT, f, e.c(0.5)), e.c(1), e.c(0)))
	q = e.sub(q, e.sel(e.cmp(arith.CmpFOLT, f, e.c(-0.5)), e.c(1), e.c(0)))
	q = e.sel(inRange, q, e.c(0))
	nq := e.neg(q)
	r := e.fma(nq, e.c(pio2A), x) // exact: |r| < 2 and a multiple of 2^-52
	t := e.mul(q, e.c(pio2B))
	tl := e.fma(q, e.c(pio2B), e.neg(t))
	// y + yl = r − t exactly (TwoSum), then the lower terms.
	y := e.sub(r, t)
	bb := e.sub(y, r)
	yl := e.sub(e.sub(r, e.sub(y, bb)), e.add(t, bb))
	yl = e.fma(nq, e.c(pio2C), e.sub(yl, tl))
	y2 := e.add(y, yl)
	yl = e.sub(yl, e.sub(y2, y))
	y = y2

	z := e.mul(y, y)
	v := e.mul(z, y)
	sr := e.poly(z, sinS[1:]...)
	sinK := e.sub(y, e.sub(e.sub(e.mul(z, e.sub(e.mul(e.c(0.5), yl), e.mul(v, sr))), yl), e.mul(v, e.c(sinS[0]))))
	cr := e.mul(z, e.poly(z, cosC...))
	hz := e.mul(e.c(0.5), z)
	w := e.sub(e.c(1), hz)
	cosK := e.add(w, e.add(e.sub(e.sub(e.c(1), w), hz), e.sub(e.mul(z, cr), e.mul(y, yl))))

	n := arith.NewCast(e.b, arith.OpFPToSI, e.loc, q, e.it)
	if cos {
		n = e.bin(arith.OpAddI, n, e.ci(1)) // cos x = sin(x + π/2)
	}
	odd := e.cmpi(arith.CmpINE, e.and(n, e.ci(1)), e.ci(0))
	negate := e.cmpi(arith.CmpINE, e.and(n, e.ci(2)), e.ci(0))
	res := e.sel(odd, cosK, sinK)
	res = e.sel(negate, e.neg(res), res)
	res = e.sel(inRange, res, e.c(math.NaN()))
	if !cos {
		res = e.sel(e.cmp(arith.CmpFOEQ, x, e.c(0)), x, res) // sin(-0) = -0
	}
	return e.sel(e.isNaN(x), x, res)
}

// pow is x^y = e^(y·log|x|), signed by the parity of y, with the special
// cases of Go's math.Pow (which the interpreter runs) as selects.
func (e *expander) pow(x, y *ir.Value) *ir.Value {
	ax := e.abs(x)
	// y·log|x| as ph + pl, so that exp does not amplify its rounding.
	lh, ll := e.logDD(ax)
	inf := e.c(math.Inf(1))
	lh = e.sel(e.cmp(arith.CmpFOEQ, ax, e.c(0)), e.neg(inf), lh)
	lh = e.sel(e.cmp(arith.CmpFOEQ, ax, inf), inf, lh)
	lh = e.sel(e.isNaN(ax), ax, lh)
	ph := e.mul(y, lh)
	pl := e.add(e.fma(y, lh, e.neg(ph)), e.mul(y, ll))
	// Beyond |ph| = 1024 the result is 0 or inf (exp clamps ph) and pl,
	// up to ulp(ph), would swamp the reduced argument.
	pl = e.sel(e.cmp(arith.CmpFOLT, e.abs(ph), e.c(1024)), pl, e.c(0))
	r := e.expDD(ph, pl)
	fy := e.math(mathd.OpFloor, y)
	yInt := e.cmp(arith.CmpFOEQ, fy, y)
	h := e.mul(y, e.c(0.5))
	yOdd := e.and(yInt, e.cmp(arith.CmpFONE, e.math(mathd.OpFloor, h), h))
	signBit := e.cmpi(arith.CmpISLT, e.bits(x), e.ci(0))
	r = e.sel(e.and(signBit, yOdd), e.neg(r), r)
	finiteY := e.cmp(arith.CmpFOLT, e.abs(y), inf)
	finiteNegX := e.and(e.cmp(arith.CmpFOLT, x, e.c(0)), e.cmp(arith.CmpFOGT, x, e.neg(inf)))
	nonInt := e.cmp(arith.CmpFUNE, fy, y)
	r = e.sel(e.and(e.and(finiteNegX, finiteY), nonInt), e.c(math.NaN()), r)
	one := e.c(1)
	r = e.sel(e.and(e.cmp(arith.CmpFOEQ, ax, one), e.cmp(arith.CmpFOEQ, e.abs(y), inf)), one, r)
	// y = ±1/2 of a positive finite x: Go returns sqrt(x) and 1/sqrt(x).
	posX := e.and(e.cmp(arith.CmpFOGT, x, e.c(0)), e.cmp(arith.CmpFOLT, x, inf))
	sq := e.math(mathd.OpSqrt, x)
	r = e.sel(e.and(posX, e.cmp(arith.CmpFOEQ, y, e.c(0.5))), sq, r)
	r = e.sel(e.and(posX, e.cmp(arith.CmpFOEQ, y, e.c(-0.5))), e.div(one, sq), r)
	r = e.sel(e.cmp(arith.CmpFOEQ, y, one), x, r)
	return e.sel(e.or(e.cmp(arith.CmpFOEQ, y, e.c(0)), e.cmp(arith.CmpFOEQ, x, one)), one, r)
}
