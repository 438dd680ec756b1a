package interp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/internal/refmath"
	"github.com/strata-ir/strata/ir"
)

// unaryFn / binaryFn build a function applying one op to its arguments.
func opFunc(op string, argTypes []string, result string, props string) string {
	operands := make([]string, len(argTypes))
	for i := range argTypes {
		operands[i] = fmt.Sprintf("%%a%d", i)
	}
	return fn("f", argTypes, []string{result}, fmt.Sprintf(`  %%0 = %q(%s) %s : (%s) -> %s
  "func.return"(%%0) : (%s) -> ()`, op, strings.Join(operands, ", "), props, strings.Join(argTypes, ", "), result, result))
}

// special are float inputs that exercise rounding, signed zeros and NaNs.
var special = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 3.5, -2.25, 1e30, -1e-30, math.Inf(1), math.Inf(-1), math.NaN(), 65504, 1e-7}

func randomFloats(rng *rand.Rand, n int) []float64 {
	vs := append([]float64{}, special...)
	for len(vs) < n {
		vs = append(vs, (rng.Float64()*2-1)*math.Pow(2, float64(rng.IntN(20)-10)))
	}
	return vs
}

// sameFloat compares results bit for bit, except that all NaNs are equal.
func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

var floatTypes = []*ir.FloatType{ir.F64, ir.F32, ir.F16, ir.BF16}

// TestArithFloatOps checks every float op on every float type against
// arith.EvalFloat and, for f32 and f64, against Go's own arithmetic.
func TestArithFloatOps(t *testing.T) {
	goOps := map[string]func(a, b float64) float64{
		"arith.addf": func(a, b float64) float64 { return a + b },
		"arith.subf": func(a, b float64) float64 { return a - b },
		"arith.mulf": func(a, b float64) float64 { return a * b },
		"arith.divf": func(a, b float64) float64 { return a / b },
		"arith.remf": math.Mod,
		"arith.negf": func(a, _ float64) float64 { return -a },
	}
	rng := rand.New(rand.NewPCG(1, 2))
	xs, ys := randomFloats(rng, 64), randomFloats(rng, 64)
	rng.Shuffle(len(ys), func(i, j int) { ys[i], ys[j] = ys[j], ys[i] })
	for _, op := range []string{"arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf",
		"arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf", "arith.negf"} {
		for _, ft := range floatTypes {
			t.Run(op+"/"+ft.Name, func(t *testing.T) {
				ty := fmt.Sprintf("tensor<%dx%s>", len(xs), ft)
				args := []string{ty, ty}
				if op == "arith.negf" {
					args = args[:1]
				}
				m := parse(t, opFunc(op, args, ty, ""))
				a := must(FromFloat64s(ft, []int64{int64(len(xs))}, xs))
				b := must(FromFloat64s(ft, []int64{int64(len(ys))}, ys))
				in := []Value{a, b}[:len(args)]
				got := call(t, m, "f", in...)[0].(*Tensor).Float64s()
				av, bv := a.Float64s(), b.Float64s()
				for i := range got {
					want, ok := arith.EvalFloat(op, ft, av[i], bv[i])
					if !ok || !sameFloat(got[i], want) {
						t.Fatalf("%s(%v, %v) = %v, arith.EvalFloat says %v", op, av[i], bv[i], got[i], want)
					}
					g := goOps[op]
					if g == nil {
						continue
					}
					switch ft {
					case ir.F32:
						want = float64(float32(g(av[i], bv[i])))
						if op != "arith.remf" {
							want = float64(goOp32(op, float32(av[i]), float32(bv[i])))
						}
					case ir.F64:
						want = g(av[i], bv[i])
					default:
						continue
					}
					if !sameFloat(got[i], want) {
						t.Fatalf("%s(%v, %v) = %v, Go computes %v", op, av[i], bv[i], got[i], want)
					}
				}
			})
		}
	}
}

// goOp32 computes op in Go's float32 arithmetic.
func goOp32(op string, a, b float32) float32 {
	switch op {
	case "arith.addf":
		return a + b
	case "arith.subf":
		return a - b
	case "arith.mulf":
		return a * b
	case "arith.divf":
		return a / b
	}
	return -a
}

// TestArithIntOps checks the integer ops on several widths against
// arith.EvalInt and, for i32, against Go's int32 arithmetic.
func TestArithIntOps(t *testing.T) {
	go32 := map[string]func(a, b int32) int32{
		"arith.addi":  func(a, b int32) int32 { return a + b },
		"arith.subi":  func(a, b int32) int32 { return a - b },
		"arith.muli":  func(a, b int32) int32 { return a * b },
		"arith.andi":  func(a, b int32) int32 { return a & b },
		"arith.ori":   func(a, b int32) int32 { return a | b },
		"arith.xori":  func(a, b int32) int32 { return a ^ b },
		"arith.maxsi": func(a, b int32) int32 { return max(a, b) },
		"arith.minui": func(a, b int32) int32 { return int32(min(uint32(a), uint32(b))) },
		"arith.divsi": func(a, b int32) int32 { return a / b },
		"arith.remui": func(a, b int32) int32 { return int32(uint32(a) % uint32(b)) },
		"arith.shrsi": func(a, b int32) int32 { return a >> b },
		"arith.shrui": func(a, b int32) int32 { return int32(uint32(a) >> b) },
		"arith.shli":  func(a, b int32) int32 { return a << b },
	}
	xs := []int64{0, 1, -1, 7, -7, 100, math.MaxInt32, math.MinInt32, 12345, -99, 3, 31}
	ys := []int64{1, 3, -2, 2, 5, -7, 2, 3, 1, 4, 30, 1}
	for _, op := range []string{"arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
		"arith.maxsi", "arith.maxui", "arith.minsi", "arith.minui", "arith.divsi", "arith.divui", "arith.remsi",
		"arith.remui", "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi", "arith.shli", "arith.shrsi", "arith.shrui"} {
		for _, it := range []ir.Type{ir.I64, ir.I32, ir.I16, ir.I8, ir.IntegerOf(7), ir.Index} {
			t.Run(op+"/"+it.String(), func(t *testing.T) {
				ty := fmt.Sprintf("tensor<%dx%s>", len(xs), it)
				m := parse(t, opFunc(op, []string{ty, ty}, ty, ""))
				bs := ys
				if strings.HasPrefix(op, "arith.sh") { // shift amounts below every width
					bs = []int64{0, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5}
				}
				a := must(FromInt64s(it, []int64{int64(len(xs))}, xs))
				b := must(FromInt64s(it, []int64{int64(len(xs))}, bs))
				out, err := New(m).Call("f", a, b)
				av, bv := a.Int64s(), b.Int64s()
				for i := range av {
					_, ok := arith.EvalInt(op, it, av[i], bv[i])
					if !ok {
						if err == nil {
							t.Fatalf("%s(%d, %d) is undefined, but the call succeeded", op, av[i], bv[i])
						}
						return
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				got := out[0].(*Tensor).Int64s()
				for i := range got {
					want, _ := arith.EvalInt(op, it, av[i], bv[i])
					if got[i] != want {
						t.Fatalf("%s(%d, %d) = %d, arith.EvalInt says %d", op, av[i], bv[i], got[i], want)
					}
					if g := go32[op]; g != nil && it == ir.I32 {
						if w := int64(g(int32(av[i]), int32(bv[i]))); got[i] != w {
							t.Fatalf("%s(%d, %d) = %d, Go computes %d", op, av[i], bv[i], got[i], w)
						}
					}
				}
			})
		}
	}
}

func TestIntUndefined(t *testing.T) {
	for _, tc := range []struct {
		op   string
		a, b int64
		want string
	}{
		{"arith.divsi", 5, 0, "integer division by zero (element 1)"},
		{"arith.remui", 5, 0, "integer division by zero (element 1)"},
		{"arith.divsi", math.MinInt32, -1, "signed division overflow: -2147483648 / -1 (element 1)"},
		{"arith.shli", 1, 32, "shift amount 32 is not less than the bit width 32"},
	} {
		m := parse(t, opFunc(tc.op, []string{"tensor<2xi32>", "tensor<2xi32>"}, "tensor<2xi32>", ""))
		_, err := New(m).Call("f", must(FromInt64s(ir.I32, []int64{2}, []int64{1, tc.a})), must(FromInt64s(ir.I32, []int64{2}, []int64{1, tc.b})))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s(%d, %d): error %v, want %q", tc.op, tc.a, tc.b, err, tc.want)
		}
	}
}

func TestCompareAndSelect(t *testing.T) {
	m := parse(t, fn("f", []string{"tensor<4xf32>", "tensor<4xf32>", "tensor<4xi8>", "tensor<4xi8>"}, []string{"tensor<4xf32>", "tensor<4xi1>", "tensor<4xi8>"}, `
  %c = "arith.cmpf"(%a0, %a1) <{fastmath = #arith.fastmath<none>, predicate = 4 : i64}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %s = "arith.select"(%c, %a0, %a1) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u = "arith.cmpi"(%a2, %a3) <{predicate = 6 : i64}> : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  %t = "arith.constant"() <{value = true}> : () -> i1
  %v = "arith.select"(%t, %a3, %a2) : (i1, tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  "func.return"(%s, %u, %v) : (tensor<4xf32>, tensor<4xi1>, tensor<4xi8>) -> ()`))
	nan := math.NaN()
	out := call(t, m, "f", f32s(t, []int64{4}, 1, 5, nan, -1), f32s(t, []int64{4}, 2, 4, 0, -1),
		must(FromInt64s(ir.I8, []int64{4}, []int64{-1, 1, 0, 5})), must(FromInt64s(ir.I8, []int64{4}, []int64{1, 2, 0, -3})))
	// olt: ordered less-than; min-like select.
	if got := out[0].(*Tensor).Float64s(); got[0] != 1 || got[1] != 4 || got[2] != 0 || got[3] != -1 {
		t.Errorf("select(olt) = %v", got)
	}
	// ult (6) on i8: -1 is 255 unsigned.
	if got := Elems[bool](out[1].(*Tensor)); fmt.Sprint(got) != "[false true false true]" {
		t.Errorf("cmpi ult = %v", got)
	}
	if got := out[2].(*Tensor).Int64s(); fmt.Sprint(got) != "[1 2 0 -3]" {
		t.Errorf("scalar select = %v", got)
	}
}

func TestConstants(t *testing.T) {
	m := parse(t, fn("f", nil, []string{"tensor<2x2xf16>", "tensor<3xi32>", "index", "f64", "tensor<2xbf16>", "tensor<2xi1>"}, `
  %0 = "arith.constant"() <{value = dense<1.5> : tensor<2x2xf16>}> : () -> tensor<2x2xf16>
  %1 = "arith.constant"() <{value = dense<[1, -2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %2 = "arith.constant"() <{value = 42 : index}> : () -> index
  %3 = "arith.constant"() <{value = 2.5 : f64}> : () -> f64
  %4 = "arith.constant"() <{value = dense<[1.0, 3.140625]> : tensor<2xbf16>}> : () -> tensor<2xbf16>
  %5 = "arith.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
  "func.return"(%0, %1, %2, %3, %4, %5) : (tensor<2x2xf16>, tensor<3xi32>, index, f64, tensor<2xbf16>, tensor<2xi1>) -> ()`))
	out := call(t, m, "f")
	for i, want := range []string{
		"f16 of shape [2 2]: [1.5 1.5 1.5 1.5]",
		"i32 of shape [3]: [1 -2 3]",
		"index scalar: [42]",
		"f64 scalar: [2.5]",
		"bf16 of shape [2]: [1 3.140625]",
		"i1 of shape [2]: [1 0]",
	} {
		if got := out[i].(*Tensor).Format(); got != want {
			t.Errorf("constant %d = %s, want %s", i, got, want)
		}
	}
}

func TestCasts(t *testing.T) {
	for _, tc := range []struct {
		op, from, to string
		in           *Tensor
		want         string
	}{
		{"arith.extsi", "i8", "i32", must(FromInt64s(ir.I8, []int64{2}, []int64{-1, 100})), "[-1 100]"},
		{"arith.extui", "i8", "i32", must(FromInt64s(ir.I8, []int64{2}, []int64{-1, 100})), "[255 100]"},
		{"arith.trunci", "i32", "i8", must(FromInt64s(ir.I32, []int64{2}, []int64{300, -129})), "[44 127]"},
		{"arith.sitofp", "i32", "f32", must(FromInt64s(ir.I32, []int64{2}, []int64{16777217, -3})), "[1.6777216e+07 -3]"},
		{"arith.uitofp", "i8", "f16", must(FromInt64s(ir.I8, []int64{2}, []int64{-1, 3})), "[255 3]"},
		{"arith.fptosi", "f32", "i32", f32s(t, []int64{2}, -2.9, 7.9), "[-2 7]"},
		{"arith.fptoui", "f64", "i8", must(FromFloat64s(ir.F64, []int64{2}, []float64{255.5, 0.5})), "[-1 0]"},
		{"arith.extf", "f16", "f64", must(FromFloat64s(ir.F16, []int64{2}, []float64{0.1, 65504})), "[0.0999755859375 65504]"},
		{"arith.truncf", "f64", "bf16", must(FromFloat64s(ir.F64, []int64{2}, []float64{1.00390625, 1.01171875})), "[1 1.015625]"},
		{"arith.index_cast", "i32", "index", must(FromInt64s(ir.I32, []int64{2}, []int64{-5, 5})), "[-5 5]"},
		{"arith.index_castui", "i32", "index", must(FromInt64s(ir.I32, []int64{2}, []int64{-5, 5})), "[4294967291 5]"},
		{"arith.bitcast", "f32", "i32", f32s(t, []int64{2}, 1, math.Copysign(0, -1)), "[1065353216 -2147483648]"},
	} {
		in, out := fmt.Sprintf("tensor<2x%s>", tc.from), fmt.Sprintf("tensor<2x%s>", tc.to)
		m := parse(t, opFunc(tc.op, []string{in}, out, ""))
		got := call(t, m, "f", tc.in)[0].(*Tensor)
		var s string
		if ir.IsFloat(got.elem) {
			s = fmt.Sprint(got.Float64s())
		} else {
			s = fmt.Sprint(got.Int64s())
		}
		if s != tc.want {
			t.Errorf("%s %s -> %s = %s, want %s", tc.op, tc.from, tc.to, s, tc.want)
		}
	}
	m := parse(t, opFunc("arith.fptosi", []string{"tensor<2xf32>"}, "tensor<2xi8>", ""))
	if _, err := New(m).Call("f", f32s(t, []int64{2}, 1, 300)); err == nil || !strings.Contains(err.Error(), "cannot convert 300 (element 1) from f32 to i8") {
		t.Errorf("out-of-range fptosi: %v", err)
	}
}

// TestMathOps checks each float math op against Go's math package (or
// internal/refmath, where Go's amd64 math is wrong), rounded once to the
// element type.
func TestMathOps(t *testing.T) {
	unary := map[string]func(float64) float64{
		"math.exp": refmath.Exp, "math.exp2": math.Exp2, "math.log": refmath.Log, "math.log2": math.Log2,
		"math.sqrt": math.Sqrt, "math.rsqrt": func(x float64) float64 { return 1 / math.Sqrt(x) },
		"math.tanh": math.Tanh, "math.erf": math.Erf, "math.sin": math.Sin, "math.cos": math.Cos,
		"math.absf": math.Abs, "math.floor": math.Floor, "math.ceil": math.Ceil, "math.round": math.Round,
		"math.trunc": math.Trunc, "math.log1p": math.Log1p, "math.expm1": math.Expm1, "math.cbrt": math.Cbrt,
	}
	rng := rand.New(rand.NewPCG(3, 4))
	xs := randomFloats(rng, 32)
	for op, f := range unary {
		for _, ft := range floatTypes {
			ty := fmt.Sprintf("tensor<%dx%s>", len(xs), ft)
			m := parse(t, opFunc(op, []string{ty}, ty, ""))
			a := must(FromFloat64s(ft, []int64{int64(len(xs))}, xs))
			got := call(t, m, "f", a)[0].(*Tensor)
			for i, x := range a.Float64s() {
				if want := ir.RoundToType(f(x), ft); !sameFloat(got.Float64s()[i], want) {
					t.Fatalf("%s %s(%v) = %v, want %v", op, ft, x, got.Float64s()[i], want)
				}
			}
		}
	}
	m := parse(t, opFunc("math.powf", []string{"tensor<2xf32>", "tensor<2xf32>"}, "tensor<2xf32>", ""))
	if got := call(t, m, "f", f32s(t, []int64{2}, 2, 9), f32s(t, []int64{2}, 10, 0.5))[0].(*Tensor).Float64s(); fmt.Sprint(got) != "[1024 3]" {
		t.Errorf("powf = %v", got)
	}
}

// TestFMA checks that f32 fma rounds once, where rounding the float64 fma
// to float32 would round twice and differ.
func TestFMA(t *testing.T) {
	// a*b+c = 1 + 2^-11 + 2^-24 + 2^-60 exactly. The float64 result drops
	// the 2^-60, leaving a tie between two float32s that rounds down to the
	// even 1 + 2^-11; the exact value is above the tie and rounds up.
	a := 1 + math.Ldexp(1, -12)
	c := math.Ldexp(1, -60)
	m := parse(t, opFunc("math.fma", []string{"f32", "f32", "f32"}, "f32", ""))
	got := call(t, m, "f", f32s(t, nil, a), f32s(t, nil, a), f32s(t, nil, c))[0].(*Tensor).Float64s()[0]
	want := 1 + math.Ldexp(1, -11) + math.Ldexp(1, -23)
	if twice := float64(float32(math.FMA(a, a, c))); twice == want {
		t.Fatalf("test inputs do not expose double rounding")
	}
	if got != want {
		t.Errorf("fma = %v, want %v", got, want)
	}
}

func TestMathIntOps(t *testing.T) {
	for _, tc := range []struct {
		op   string
		in   []int64
		want string
	}{
		{"math.absi", []int64{-5, -128}, "[5 -128]"},
		{"math.ctlz", []int64{1, 0}, "[7 8]"},
		{"math.cttz", []int64{8, 0}, "[3 8]"},
		{"math.ctpop", []int64{-1, 5}, "[8 2]"},
	} {
		m := parse(t, opFunc(tc.op, []string{"tensor<2xi8>"}, "tensor<2xi8>", ""))
		got := call(t, m, "f", must(FromInt64s(ir.I8, []int64{2}, tc.in)))[0].(*Tensor).Int64s()
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s(%v) = %v, want %s", tc.op, tc.in, got, tc.want)
		}
	}
	m := parse(t, opFunc("math.ipowi", []string{"tensor<3xi32>", "tensor<3xi32>"}, "tensor<3xi32>", ""))
	got := call(t, m, "f", must(FromInt64s(ir.I32, []int64{3}, []int64{3, -1, 2})), must(FromInt64s(ir.I32, []int64{3}, []int64{4, -3, 31})))[0].(*Tensor).Int64s()
	if fmt.Sprint(got) != "[81 -1 -2147483648]" {
		t.Errorf("ipowi = %v", got)
	}
}

// TestEveryOpHasARule keeps the rule tables in step with the dialects.
func TestEveryOpHasARule(t *testing.T) {
	for _, d := range []*ir.Dialect{arith.Dialect, mathd.Dialect} {
		for _, op := range d.Ops {
			if !HasRule(op.Name) {
				t.Errorf("no interpreter rule for %s", op.Name)
			}
		}
	}
	for _, name := range []string{"func.call", "func.return", "builtin.unrealized_conversion_cast"} {
		if !HasRule(name) {
			t.Errorf("no interpreter rule for %s", name)
		}
	}
}
