package arith_test

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/ir"
)

// goInt computes op the way Go does on the fixed-size type of width w; ok is
// false where the op is undefined.
func goInt(op string, w int, a, b int64) (int64, bool) {
	switch w {
	case 8:
		return goIntN[int8, uint8](op, 8, a, b)
	case 16:
		return goIntN[int16, uint16](op, 16, a, b)
	case 32:
		return goIntN[int32, uint32](op, 32, a, b)
	}
	return goIntN[int64, uint64](op, 64, a, b)
}

type signed interface {
	~int8 | ~int16 | ~int32 | ~int64
}
type unsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

func goIntN[S signed, U unsigned](op string, w uint64, a, b int64) (int64, bool) {
	x, y := S(a), S(b)
	ux, uy := U(x), U(y)
	minS := S(-1) << (w - 1)
	switch op {
	case "arith.addi":
		return int64(x + y), true
	case "arith.subi":
		return int64(x - y), true
	case "arith.muli":
		return int64(x * y), true
	case "arith.andi":
		return int64(x & y), true
	case "arith.ori":
		return int64(x | y), true
	case "arith.xori":
		return int64(x ^ y), true
	case "arith.divsi":
		if y == 0 || (x == minS && y == -1) {
			return 0, false
		}
		return int64(x / y), true
	case "arith.remsi":
		if y == 0 {
			return 0, false
		}
		if y == -1 {
			return 0, true
		}
		return int64(x % y), true
	case "arith.divui":
		if uy == 0 {
			return 0, false
		}
		return int64(S(ux / uy)), true
	case "arith.remui":
		if uy == 0 {
			return 0, false
		}
		return int64(S(ux % uy)), true
	case "arith.maxsi":
		return int64(max(x, y)), true
	case "arith.minsi":
		return int64(min(x, y)), true
	case "arith.maxui":
		return int64(S(max(ux, uy))), true
	case "arith.minui":
		return int64(S(min(ux, uy))), true
	case "arith.shli":
		if uint64(uy) >= w {
			return 0, false
		}
		return int64(x << uy), true
	case "arith.shrsi":
		if uint64(uy) >= w {
			return 0, false
		}
		return int64(x >> uy), true
	case "arith.shrui":
		if uint64(uy) >= w {
			return 0, false
		}
		return int64(S(ux >> uy)), true
	case "arith.floordivsi", "arith.ceildivsi":
		if y == 0 || (x == minS && y == -1) {
			return 0, false
		}
		// big.Int's Div is Euclidean: the floor of n/d for d > 0.
		n, d := big.NewInt(int64(x)), big.NewInt(int64(y))
		if op == "arith.ceildivsi" { // ceil(x/y) = -floor(-x/y)
			n.Neg(n)
		}
		if d.Sign() < 0 {
			n.Neg(n)
			d.Neg(d)
		}
		q := new(big.Int).Div(n, d)
		if op == "arith.ceildivsi" {
			q.Neg(q)
		}
		return int64(S(q.Int64())), true
	case "arith.ceildivui":
		if uy == 0 {
			return 0, false
		}
		q := ux / uy
		if ux%uy != 0 {
			q++
		}
		return int64(S(q)), true
	}
	return 0, false
}

var intBinaryOps = []string{"arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
	"arith.remui", "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi", "arith.maxsi", "arith.maxui",
	"arith.minsi", "arith.minui", "arith.andi", "arith.ori", "arith.xori", "arith.shli", "arith.shrsi", "arith.shrui"}

var floatBinaryOps = []string{"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf",
	"arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"}

// foldOne builds op on two constants of type t, folds it with the op's
// folder and returns the folded constant (nil if it did not fold).
func foldOne(t *testing.T, op string, ty ir.Type, a, b ir.Attribute) ir.Attribute {
	ctx := newContext()
	blk := ir.NewBlock()
	bld := ir.NewBuilder(ctx)
	bld.SetInsertionPointToEnd(blk)
	x, y := arith.Constant(bld, nil, a), arith.Constant(bld, nil, b)
	v := arith.Binary(bld, op, nil, x, y)
	if err := v.DefiningOp().Def().Verify(v.DefiningOp()); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	res := v.DefiningOp().Def().Fold(v.DefiningOp(), []ir.Attribute{a, b})
	if len(res) != 1 {
		return nil
	}
	if res[0].Value != nil { // an identity such as x + 0 gave an operand
		return res[0].Value.DefiningOp().Attr("value")
	}
	return res[0].Attr
}

// TestEvalIntMatchesGo checks EvalInt, and the folders built on it, against
// Go's own arithmetic on int8, int16, int32 and int64 (unsigned ops through
// the uint types).
func TestEvalIntMatchesGo(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := rapid.SampledFrom([]int{8, 16, 32, 64}).Draw(rt, "width")
		op := rapid.SampledFrom(intBinaryOps).Draw(rt, "op")
		ty := ir.IntegerOf(w)
		edge := rapid.SampledFrom([]int64{0, 1, -1, 2, int64(w), math.MinInt64, math.MaxInt64})
		val := rapid.OneOf(rapid.Int64(), edge)
		a := ir.TruncInt(val.Draw(rt, "a"), ty)
		b := ir.TruncInt(val.Draw(rt, "b"), ty)
		got, ok := arith.EvalInt(op, ty, a, b)
		want, wantOK := goInt(op, w, a, b)
		if ok != wantOK || (ok && got != want) {
			rt.Fatalf("%s(%d, %d) : i%d = %d, %v; Go gives %d, %v", op, a, b, w, got, ok, want, wantOK)
		}
		folded := foldOne(t, op, ty, ir.Int(a, ty), ir.Int(b, ty))
		if !ok {
			if folded != nil {
				rt.Fatalf("%s(%d, %d) folded to %s but is undefined", op, a, b, folded)
			}
			return
		}
		if folded == nil || !ir.AttrEqual(folded, ir.Int(got, ty)) {
			rt.Fatalf("%s(%d, %d) folded to %v, want %d", op, a, b, folded, got)
		}
	})
}

// TestEvalFloatFolds checks that folding float constants gives EvalFloat's
// result, and that f32 arithmetic is Go's float32 arithmetic.
func TestEvalFloatFolds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ft := rapid.SampledFrom([]*ir.FloatType{ir.F16, ir.BF16, ir.F32, ir.F64}).Draw(rt, "type")
		op := rapid.SampledFrom(floatBinaryOps).Draw(rt, "op")
		val := rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1, math.Inf(1), math.Inf(-1), math.NaN()}))
		a := ir.Float(val.Draw(rt, "a"), ft)
		b := ir.Float(val.Draw(rt, "b"), ft)
		got, ok := arith.EvalFloat(op, ft, a.Value(), b.Value())
		if !ok {
			rt.Fatalf("%s on %s not evaluated", op, ft)
		}
		if ir.RoundToType(got, ft) != got && !math.IsNaN(got) {
			rt.Fatalf("%s result %v is not a %s value", op, got, ft)
		}
		folded := foldOne(t, op, ft, a, b)
		if folded == nil || folded.(ir.FloatAttr).Bits != ir.FloatToBits(got, ft) {
			rt.Fatalf("%s(%s, %s) folded to %v, want %v", op, a, b, folded, got)
		}
		if ft == ir.F32 && !math.IsNaN(got) {
			x, y := float32(a.Value()), float32(b.Value())
			want := map[string]float32{"arith.addf": x + y, "arith.subf": x - y, "arith.mulf": x * y, "arith.divf": x / y}
			if w, has := want[op]; has && float32(got) != w {
				rt.Fatalf("%s(%v, %v) = %v, float32 gives %v", op, x, y, got, w)
			}
		}
	})
}

func TestCmpF(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		p    arith.CmpFPredicate
		a, b float64
		want bool
	}{
		{arith.CmpFOLT, 1, 2, true}, {arith.CmpFOLT, nan, 2, false}, {arith.CmpFULT, nan, 2, true},
		{arith.CmpFONE, 1, 1, false}, {arith.CmpFUNE, nan, nan, true}, {arith.CmpFORD, 1, nan, false},
		{arith.CmpFUNO, 1, nan, true}, {arith.CmpFAlwaysTrue, nan, nan, true}, {arith.CmpFAlwaysFalse, 1, 1, false},
		{arith.CmpFOEQ, 0, math.Copysign(0, -1), true}, {arith.CmpFUGE, 3, 2, true}, {arith.CmpFOLE, 2, 2, true},
	}
	for _, c := range cases {
		if got := arith.CmpF(c.p, c.a, c.b); got != c.want {
			t.Errorf("CmpF(%s, %v, %v) = %v, want %v", c.p, c.a, c.b, got, c.want)
		}
	}
}

func TestPredicates(t *testing.T) {
	for i, n := range arith.CmpIPredicateNames {
		p, ok := arith.ParseCmpIPredicate(n)
		if !ok || int(p) != i || p.String() != n {
			t.Errorf("cmpi predicate %d %q: parsed %v %v", i, n, p, ok)
		}
		// Swapping and inverting agree with evaluation.
		for _, ab := range [][2]int64{{1, 2}, {2, 1}, {-1, 1}, {3, 3}} {
			a, b := ab[0], ab[1]
			if arith.CmpI(p, ir.I8, a, b) != arith.CmpI(p.Swapped(), ir.I8, b, a) {
				t.Errorf("%s swapped is %s, which disagrees on %d, %d", p, p.Swapped(), a, b)
			}
			if arith.CmpI(p, ir.I8, a, b) == arith.CmpI(p.Inverted(), ir.I8, a, b) {
				t.Errorf("%s inverted is %s, which agrees on %d, %d", p, p.Inverted(), a, b)
			}
		}
	}
	for i, n := range arith.CmpFPredicateNames {
		if p, ok := arith.ParseCmpFPredicate(n); !ok || int(p) != i || p.String() != n {
			t.Errorf("cmpf predicate %d %q: parsed %v %v", i, n, p, ok)
		}
	}
	if _, ok := arith.ParseCmpIPredicate("olt"); ok {
		t.Error("olt parsed as a cmpi predicate")
	}
}

func TestCast(t *testing.T) {
	cases := []struct {
		op       string
		from, to ir.Type
		in, want uint64
		ok       bool
	}{
		{"arith.extsi", ir.I8, ir.I32, uint64(ir.TruncInt(-3, ir.I8)), uint64(ir.TruncInt(-3, ir.I32)), true},
		{"arith.extui", ir.I8, ir.I32, uint64(ir.TruncInt(-3, ir.I8)), 253, true},
		{"arith.extsi", ir.I1, ir.I8, 1, uint64(ir.TruncInt(-1, ir.I8)), true},
		{"arith.trunci", ir.I32, ir.I8, 0x1ff, uint64(ir.TruncInt(-1, ir.I8)), true},
		{"arith.index_cast", ir.Index, ir.I8, 0x80, uint64(ir.TruncInt(-128, ir.I8)), true},
		{"arith.index_castui", ir.I8, ir.Index, uint64(ir.TruncInt(-1, ir.I8)), 255, true},
		{"arith.fptosi", ir.F32, ir.I8, ir.FloatToBits(-128.9, ir.F32), uint64(ir.TruncInt(-128, ir.I8)), true},
		{"arith.fptosi", ir.F32, ir.I8, ir.FloatToBits(128, ir.F32), 0, false},
		{"arith.fptosi", ir.F32, ir.I32, ir.FloatToBits(math.NaN(), ir.F32), 0, false},
		{"arith.fptoui", ir.F64, ir.I8, ir.FloatToBits(255.5, ir.F64), uint64(ir.TruncInt(255, ir.I8)), true},
		{"arith.fptoui", ir.F64, ir.I8, ir.FloatToBits(-1, ir.F64), 0, false},
		{"arith.fptoui", ir.F64, ir.I64, ir.FloatToBits(1<<63, ir.F64), 1 << 63, true},
		{"arith.sitofp", ir.I64, ir.F32, uint64(1<<60 + 1<<36 + 1), ir.FloatToBits(1<<60+1<<37, ir.F32), true},
		{"arith.uitofp", ir.I8, ir.F16, uint64(ir.TruncInt(-1, ir.I8)), ir.FloatToBits(255, ir.F16), true},
		{"arith.truncf", ir.F32, ir.F16, ir.FloatToBits(1e6, ir.F32), ir.FloatToBits(math.Inf(1), ir.F16), true},
		{"arith.bitcast", ir.F32, ir.I32, 0xbf800000, uint64(ir.TruncInt(0xbf800000, ir.I32)), true},
		{"arith.bitcast", ir.I32, ir.F32, uint64(ir.TruncInt(0xbf800000, ir.I32)), 0xbf800000, true},
		{"arith.bitcast", ir.I32, ir.F64, 0, 0, false},
		{"arith.extf", ir.F80, ir.F128, 0, 0, false},
	}
	for _, c := range cases {
		got, ok := arith.Cast(c.op, c.from, c.to, c.in)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("Cast(%s, %s, %s, %#x) = %#x, %v; want %#x, %v", c.op, c.from, c.to, c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestBuildersAndMaterialize(t *testing.T) {
	ctx := newContext()
	blk := ir.NewBlock()
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointToEnd(blk)
	i := arith.ConstantIndex(b, nil, 4)
	f := arith.ConstantFloat(b, nil, 0.1, ir.F16)
	v := arith.ConstantFloat(b, nil, 2, ir.VectorOf([]int64{4}, ir.F32))
	arith.ConstantInt(b, nil, 300, ir.I8)
	s := arith.Binary(b, "arith.addf", nil, f, f)
	arith.NewCmpF(b, nil, arith.CmpFOLT, v, v)
	arith.NewSelect(b, nil, arith.NewCmpI(b, nil, arith.CmpISLT, i, i), i, i)
	arith.NewCast(b, "arith.extf", nil, s, ir.F32)
	want := []string{
		"%0 = arith.constant 4 : index",
		"%1 = arith.constant 9.997550e-02 : f16",
		"%2 = arith.constant dense<2.000000e+00> : vector<4xf32>",
		"%3 = arith.constant 44 : i8",
		"%4 = arith.addf %1, %1 : f16",
		"%5 = arith.cmpf olt, %2, %2 : vector<4xf32>",
		"%6 = arith.cmpi slt, %0, %0 : index",
		"%7 = arith.select %6, %0, %0 : index",
		"%8 = arith.extf %4 : f16 to f32",
	}
	mod := ir.NewOperation(ctx, ir.OperationState{Name: "builtin.module", Regions: []*ir.Region{ir.NewRegion()}})
	mod.Region(0).Append(blk)
	if err := ir.Verify(mod); err != nil {
		t.Errorf("verify: %v", err)
	}
	var printed []string
	for _, l := range strings.Split(ir.Sprint(mod, ir.PrintOptions{}), "\n") {
		if strings.HasPrefix(l, "  ") {
			printed = append(printed, l[2:])
		}
	}
	if got := strings.Join(printed, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("built\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if got := arith.Dialect.MaterializeConstant(b, ir.Int(1, ir.I32), ir.I64, nil); got != nil {
		t.Errorf("materialized a constant of the wrong type: %s", got)
	}
	if got := arith.Dialect.MaterializeConstant(b, ir.Str("x"), ir.I64, nil); got != nil {
		t.Errorf("materialized a string constant: %s", got)
	}
	if got := arith.Dialect.MaterializeConstant(b, ir.Bool(true), ir.I1, nil); got == nil || got.Name() != "arith.constant" {
		t.Errorf("did not materialize true: %v", got)
	}
}

// TestDivfByPowerOfTwo checks the canonicalization of divf by ±2^k: it
// fires exactly when 2^-k is representable, and the multiplication it makes
// gives the division's bits on every operand, subnormals, zeros, infinities
// and NaN included.
func TestDivfByPowerOfTwo(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ft := rapid.SampledFrom([]*ir.FloatType{ir.F16, ir.BF16, ir.F32, ir.F64}).Draw(rt, "type")
		// Half the draws near the types' exponent limits, where 2^k is
		// subnormal or 2^-k overflows.
		edges := []int{-1074, -1025, -1024, -1023, -1022, 1022, 1023, -149, -128, -127, -126, 126, 127, -133, -25, -24, -15, -14, 14, 15}
		k := rapid.OneOf(rapid.IntRange(-1100, 1100), rapid.SampledFrom(edges)).Draw(rt, "k")
		c := math.Ldexp(rapid.SampledFrom([]float64{1, -1}).Draw(rt, "sign"), k)
		if ir.RoundToType(c, ft) != c || c == 1 || c == 0 || math.IsInf(c, 0) {
			rt.Skip("±2^k is not a finite value of the type, or 1 (divf folds away)")
		}
		ctx := newContext()
		m := parse(t, ctx, fmt.Sprintf(`func.func @f(%%x: %[1]s) -> %[1]s {
  %%c = arith.constant %[2]s
  %%r = arith.divf %%x, %%c : %[1]s
  return %%r : %[1]s
}`, ft, ir.Float(c, ft)))
		canonicalize(t, ctx, m)
		var rewritten *ir.Operation
		m.Walk(func(op *ir.Operation) bool {
			if op.Name() == "arith.mulf" {
				rewritten = op
			}
			return true
		})
		representable := !math.IsInf(1/c, 0) && ir.RoundToType(1/c, ft) == 1/c
		if (rewritten != nil) != representable {
			rt.Fatalf("divf by %v in %s: rewritten %v, but 1/c representable is %v", c, ft, rewritten != nil, representable)
		}
		if rewritten == nil {
			return
		}
		inv := rewritten.Operand(1).DefiningOp().Attr("value").(ir.FloatAttr).Value()
		for range 20 {
			x := ir.FloatFromBits(rapid.Uint64().Draw(rt, "xbits")&(1<<ft.Width-1), ft)
			q, _ := arith.EvalFloat("arith.divf", ft, x, c)
			p, _ := arith.EvalFloat("arith.mulf", ft, x, inv)
			if math.Float64bits(q) != math.Float64bits(p) && !(math.IsNaN(q) && math.IsNaN(p)) {
				rt.Fatalf("%s: %v / %v = %v but %v · %v = %v", ft, x, c, q, x, inv, p)
			}
		}
	})
}
