package togpu_test

import (
	"fmt"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/symbolize"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/sym"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// index32Programs are the bench's row kernels and pointwise kernel at
// their full sizes, and a 2-D bias add (N-D coordinates by div/rem).
var index32Programs = []struct{ name, text string }{
	{"layernorm", `func.func @main(%x: tensor<16384x4096xf32>, %w: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<16384x4096xf32> {
  %0 = "graph.layer_norm"(%x, %w, %b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<16384x4096xf32>, tensor<4096xf32>, tensor<4096xf32>) -> tensor<16384x4096xf32>
  return %0 : tensor<16384x4096xf32>
}`},
	{"softmax", `func.func @main(%x: tensor<8192x8192xf32>) -> tensor<8192x8192xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
  return %0 : tensor<8192x8192xf32>
}`},
	{"rowsum", `func.func @main(%x: tensor<16384x8192xf32>) -> tensor<16384xf32> {
  %0 = "graph.reduce_sum"(%x) <{axes = [1], keepdims = false}> : (tensor<16384x8192xf32>) -> tensor<16384xf32>
  return %0 : tensor<16384xf32>
}`},
	{"pointwise", `func.func @main(%x: tensor<67108864xf32>, %a: tensor<67108864xf32>) -> tensor<67108864xf32> {
  %0 = "graph.mul"(%x, %a) : (tensor<67108864xf32>, tensor<67108864xf32>) -> tensor<67108864xf32>
  %1 = "graph.sigmoid"(%0) : (tensor<67108864xf32>) -> tensor<67108864xf32>
  return %1 : tensor<67108864xf32>
}`},
	{"bias_add", biasAdd(4096, 1000)},
	{"maxpool_grad", maxPoolGradTaps(64, 64, 56)},
}

// maxPoolGradTaps is two taps of the data gradient of a 3×3 max pool of
// stride 2 and padding 1 over [n, c, 2h, 2h] (ResNet-50's stem at h = 56,
// as autodiff writes it): each tap's [n, c, h, h] gradient dilated by the
// stride (a reshape, a pad of the inserted axis, a slice), padded to the
// padded input at the tap's offset, summed, and the padding sliced off.
// The kernel reads a tap's gradient at (x - p) / 2 only where x >= p: the
// index is negative elsewhere, which 32-bit arithmetic may read only
// under the loop.if guards.
func maxPoolGradTaps(n, c, h int64) string {
	t := func(dims ...int64) string {
		s := "tensor<"
		for _, d := range dims {
			s += fmt.Sprintf("%dx", d)
		}
		return s + "bf16>"
	}
	h2, p := 2*h, 2*h+2
	var b strings.Builder
	fmt.Fprintf(&b, "func.func @main(%%a: %s, %%b: %s) -> %s {\n", t(n, c, h, h), t(n, c, h, h), t(n, c, h2, h2))
	for i, tap := range []struct {
		arg    string
		lo, hi [2]int64
	}{{"a", [2]int64{2, 2}, [2]int64{1, 1}}, {"b", [2]int64{2, 1}, [2]int64{1, 2}}} {
		v := func(k int) string { return fmt.Sprintf("%%t%d_%d", i, k) }
		fmt.Fprintf(&b, "  %s = \"graph.reshape\"(%%%s) <{shape = [%d, %d, %d, 1, %d]}> : (%s) -> %s\n", v(0), tap.arg, n, c, h, h, t(n, c, h, h), t(n, c, h, 1, h))
		fmt.Fprintf(&b, "  %s = \"graph.pad\"(%s) <{high = [0, 0, 0, 1, 0], low = [0, 0, 0, 0, 0]}> : (%s) -> %s\n", v(1), v(0), t(n, c, h, 1, h), t(n, c, h, 2, h))
		fmt.Fprintf(&b, "  %s = \"graph.reshape\"(%s) <{shape = [%d, %d, %d, %d]}> : (%s) -> %s\n", v(2), v(1), n, c, h2, h, t(n, c, h, 2, h), t(n, c, h2, h))
		fmt.Fprintf(&b, "  %s = \"graph.slice\"(%s) <{limits = [%d, %d, %d, %d], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (%s) -> %s\n", v(3), v(2), n, c, h2-1, h, t(n, c, h2, h), t(n, c, h2-1, h))
		fmt.Fprintf(&b, "  %s = \"graph.reshape\"(%s) <{shape = [%d, %d, %d, %d, 1]}> : (%s) -> %s\n", v(4), v(3), n, c, h2-1, h, t(n, c, h2-1, h), t(n, c, h2-1, h, 1))
		fmt.Fprintf(&b, "  %s = \"graph.pad\"(%s) <{high = [0, 0, 0, 0, 1], low = [0, 0, 0, 0, 0]}> : (%s) -> %s\n", v(5), v(4), t(n, c, h2-1, h, 1), t(n, c, h2-1, h, 2))
		fmt.Fprintf(&b, "  %s = \"graph.reshape\"(%s) <{shape = [%d, %d, %d, %d]}> : (%s) -> %s\n", v(6), v(5), n, c, h2-1, h2, t(n, c, h2-1, h, 2), t(n, c, h2-1, h2))
		fmt.Fprintf(&b, "  %s = \"graph.slice\"(%s) <{limits = [%d, %d, %d, %d], starts = [0, 0, 0, 0], strides = [1, 1, 1, 1]}> : (%s) -> %s\n", v(7), v(6), n, c, h2-1, h2-1, t(n, c, h2-1, h2), t(n, c, h2-1, h2-1))
		fmt.Fprintf(&b, "  %s = \"graph.pad\"(%s) <{high = [0, 0, %d, %d], low = [0, 0, %d, %d]}> : (%s) -> %s\n", v(8), v(7), tap.hi[0], tap.hi[1], tap.lo[0], tap.lo[1], t(n, c, h2-1, h2-1), t(n, c, p, p))
	}
	fmt.Fprintf(&b, "  %%sum = \"graph.add\"(%%t0_8, %%t1_8) : (%s, %s) -> %s\n", t(n, c, p, p), t(n, c, p, p), t(n, c, p, p))
	fmt.Fprintf(&b, "  %%r = \"graph.slice\"(%%sum) <{limits = [%d, %d, %d, %d], starts = [0, 0, 1, 1], strides = [1, 1, 1, 1]}> : (%s) -> %s\n", n, c, p-1, p-1, t(n, c, p, p), t(n, c, h2, h2))
	fmt.Fprintf(&b, "  return %%r : %s\n}\n", t(n, c, h2, h2))
	return b.String()
}

// TestIndex32GuardedReads checks the narrowed max-pool gradient in the
// interpreter (a small size, every thread): the taps' indices are
// negative outside their guards, so 32-bit arithmetic is exact only
// where the loop.if conditions hold.
func TestIndex32GuardedReads(t *testing.T) {
	src := maxPoolGradTaps(2, 3, 5)
	if err := passtest.CheckSemantics(&passtest.Program{Func: "main", Source: src}, "builtin.module(lower-to-loop,convert-loop-to-gpu{index-bits=32},canonicalize,cse)", 2); err != nil {
		t.Fatal(err)
	}
	m := lowerGraph(t, src, "builtin.module(lower-to-loop,convert-loop-to-gpu{index-bits=32},canonicalize,cse)")
	m.Walk(func(o *ir.Operation) bool {
		if (o.Name() == "arith.remui" || o.Name() == "arith.divui" || o.Name() == "arith.shrui") && o.Result(0).Type() != ir.I32 {
			t.Errorf("index arithmetic left in 64 bits: %s", o)
		}
		return true
	})
}

// biasAdd is x + b over rows × cols, b broadcast over the rows.
func biasAdd(rows, cols int64) string {
	return fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx%[2]dxf32>, %%b: tensor<%[2]dxf32>) -> tensor<%[1]dx%[2]dxf32> {
  %%0 = "graph.add"(%%x, %%b) : (tensor<%[1]dx%[2]dxf32>, tensor<%[2]dxf32>) -> tensor<%[1]dx%[2]dxf32>
  return %%0 : tensor<%[1]dx%[2]dxf32>
}`, rows, cols)
}

var (
	// wideIndexRE matches a 64-bit integer multiplication, division or
	// remainder in PTX.
	wideIndexRE = regexp.MustCompile(`\b(mul\.lo|mad\.lo|mul\.hi|div|rem)\.[us]64\b.*`)
	// addressRE is an address: a widened offset times the element size
	// plus the base pointer.
	addressRE = regexp.MustCompile(`^mad\.lo\.s64 %rd\d+, %rd\d+, (1|2|4|8), %rd\d+;`)
)

// wideIndexOps returns the 64-bit multiplications, divisions and
// remainders of ptx that are not address computations.
func wideIndexOps(ptx string) []string {
	var out []string
	for _, l := range wideIndexRE.FindAllString(ptx, -1) {
		if !addressRE.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// compileIndexBits lowers text with the given index-bits and returns the
// gpu-level module and the PTX of the native backend.
func compileIndexBits(t *testing.T, text string, bits int) (*ir.Operation, string) {
	t.Helper()
	return compileIndexBitsWith(t, text, bits, "native")
}

// compileIndexBitsWith is compileIndexBits with the given PTX backend; it
// skips the test when llc is not installed.
func compileIndexBitsWith(t *testing.T, text string, bits int, backend string) (*ir.Operation, string) {
	t.Helper()
	m := lowerGraph(t, text, fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{index-bits=%d},canonicalize,cse)", bits))
	mod, err := llvm.TranslateAll(llvm.GPUModules(m))
	if err != nil {
		t.Fatal(err)
	}
	ptx, ok := backendPTX(t, mod, backend)
	if !ok {
		t.Skip("llc backend unavailable")
	}
	return m, ptx
}

// ptxasAccepts assembles ptx for sm_90 when the offline ptxas is there.
func ptxasAccepts(t *testing.T, ptx string) {
	t.Helper()
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Log("no ptxas: PTX not assembled")
		return
	}
	file := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := osexec.Command(ptxas, "-arch=sm_90", "-o", os.DevNull, file).CombinedOutput(); err != nil {
		t.Fatalf("ptxas rejected the PTX: %v\n%s", err, out)
	}
}

// TestIndex32PTX checks that under index-bits=32 the bench's row and
// pointwise kernels and a 2-D bias add do their index arithmetic in 32
// bits (no 64-bit mul, div or rem: only the widening of each offset into
// an address), keep their vector accesses, and assemble.
func TestIndex32PTX(t *testing.T) {
	for _, p := range index32Programs {
		t.Run(p.name, func(t *testing.T) {
			_, wide := compileIndexBits(t, p.text, 64)
			_, narrow := compileIndexBits(t, p.text, 32)
			if got := wideIndexOps(narrow); len(got) > 0 {
				t.Errorf("64-bit index arithmetic under index-bits=32: %v\n%s", got, narrow)
			}
			if len(wideIndexOps(wide)) == 0 {
				t.Errorf("no 64-bit index arithmetic under index-bits=64: the check would not see it")
			}
			if w, n := strings.Count(wide, ".v4."), strings.Count(narrow, ".v4."); n != w {
				t.Errorf("%d vector accesses under index-bits=32, %d under 64", n, w)
			}
			// Special registers are read as i32 directly (targets/llvm
			// folds the narrowing of their widening); only a grid-stride
			// loop's induction variable, a 64-bit index, is narrowed.
			if n, k := strings.Count(narrow, "cvt.u32.u64"), strings.Count(narrow, ".entry"); n > k {
				t.Errorf("%d 64-to-32-bit conversions in %d kernels", n, k)
			}
			ptxasAccepts(t, narrow)
			t.Logf("PTX lines: %d (index-bits=64) → %d (index-bits=32)", strings.Count(wide, "\n"), strings.Count(narrow, "\n"))
		})
		t.Run(p.name+"/llc", func(t *testing.T) {
			_, narrow := compileIndexBitsWith(t, p.text, 32, "llc")
			if got := wideIndexOps(narrow); len(got) > 0 {
				t.Errorf("64-bit index arithmetic under index-bits=32: %v", got)
			}
			ptxasAccepts(t, narrow)
		})
	}
}

// TestIndex32KeepsHugeBuffers checks that kernels touching a buffer of
// 2^31 elements keep their index arithmetic in 64 bits: one over all of
// it, and one reading 4 of its rows (whose offsets would fit).
func TestIndex32KeepsHugeBuffers(t *testing.T) {
	for _, text := range []string{biasAdd(1<<16, 1<<15), `func.func @main(%x: tensor<65536x32768xf32>) -> tensor<4x32768xf32> {
  %0 = "graph.slice"(%x) {starts = [0, 0], limits = [4, 32768]} : (tensor<65536x32768xf32>) -> tensor<4x32768xf32>
  %1 = "graph.neg"(%0) : (tensor<4x32768xf32>) -> tensor<4x32768xf32>
  return %1 : tensor<4x32768xf32>
}`} {
		m, _ := compileIndexBits(t, text, 32)
		m.Walk(func(o *ir.Operation) bool {
			if o.Name() == "arith.index_castui" || o.Name() == "arith.index_cast" {
				t.Errorf("index arithmetic narrowed over a buffer of 2^31 elements: %s", o)
				return false
			}
			return true
		})
	}
}

// index32Dynamic are programs over symbolic sizes (graph-symbolize-shapes),
// narrowed under the bounds the pass puts on the symbols: a softmax over
// [s0, 4096] (a row kernel, its output allocated with s0 rows), a bias add
// over [s0, 1000] (a pointwise kernel, N-D coordinates by div/rem by 1000)
// and one over [s0, s1] (div/rem by the dynamic s1: the grid-stride
// loop's bound s0·s1 bounds the quotient by s1 below s0).
var index32Dynamic = []struct {
	name, text, dims string
	bounds           []string  // the guards the pass adds
	sizes            [][]int64 // per run: the dynamic sizes of the arguments, in order
}{
	{"softmax", `func.func @main(%x: tensor<8x4096xf32>) -> tensor<8x4096xf32> {
  %0 = "graph.softmax"(%x) <{axis = -1 : i64}> : (tensor<8x4096xf32>) -> tensor<8x4096xf32>
  return %0 : tensor<8x4096xf32>
}`, "0:0", []string{"s0 <= 524287"}, [][]int64{{3}, {1}}},
	{"bias_add", biasAdd(6, 1000), "0:0", []string{"s0 <= 2147483"}, [][]int64{{5}, {1}}},
	{"bias_add_2d", biasAdd(6, 1000), "0:0,0:1,1:0", []string{"s0 <= 46341", "s1 <= 46340"}, [][]int64{{5, 7, 7}, {3, 1000, 1000}, {1, 1, 1}}},
}

// lowerDynamic symbolizes text's dims and lowers it to loops.
func lowerDynamic(t *testing.T, text, dims string) (*ir.Context, *ir.Operation) {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: "index32_dynamic.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(fmt.Sprintf("builtin.module(graph-symbolize-shapes{dims=%s},lower-to-loop)", dims))
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	return ctx, m
}

// TestIndex32DynamicShapes checks that kernels over symbolic sizes are
// narrowed under a guard that bounds the symbols: no 64-bit index
// arithmetic left in the PTX, the guard on the host function (parsed and
// checked as the executor does: it holds at the bound, fails above), and
// the same results as the loop-level program in the interpreter.
func TestIndex32DynamicShapes(t *testing.T) {
	for _, p := range index32Dynamic {
		t.Run(p.name, func(t *testing.T) {
			_, loopLevel := lowerDynamic(t, p.text, p.dims)
			ctx, m := lowerDynamic(t, p.text, p.dims)
			cfg := togpu.DefaultConfig
			cfg.IndexBits = 32
			if err := togpu.Run(ctx, m, cfg); err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(m); err != nil {
				t.Fatal(err)
			}
			mod, err := llvm.TranslateAll(llvm.GPUModules(m))
			if err != nil {
				t.Fatal(err)
			}
			be, _ := nvptx.New("native")
			ptx, err := be.Compile(mod, nvptx.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ptxasAccepts(t, ptx)
			gs, has, err := symbolize.Guards(interp.New(m).Func("main"))
			if err != nil || !has {
				t.Fatalf("guards: %v (present: %v)", err, has)
			}
			var bounds []string
			for _, g := range gs.Strings() {
				if strings.Contains(g, " <= ") {
					bounds = append(bounds, g)
				}
			}
			fn := interp.New(loopLevel).Func("main")
			ft, err := interp.FuncType(fn)
			if err != nil {
				t.Fatal(err)
			}
			if got := wideIndexOps(ptx); len(got) > 0 {
				t.Errorf("64-bit index arithmetic under index-bits=32: %v\n%s", got, ptx)
			}
			if !slices.Equal(bounds, p.bounds) {
				t.Fatalf("bound guards %q, want %q", bounds, p.bounds)
			}
			checkBounds(t, gs, ft, bounds)
			for _, sizes := range p.sizes {
				// sizes lists the dynamic dims of all arguments in order.
				dyn := make([][]int64, len(ft.Inputs))
				k := 0
				for i, it := range ft.Inputs {
					for _, n := range it.(*ir.MemRefType).Shape() {
						if n == ir.Dynamic {
							dyn[i] = append(dyn[i], sizes[k])
							k++
						}
					}
				}
				args := inputs(t, loopLevel, dyn, 3)
				want := run(t, loopLevel, args)
				got := run(t, m, args)
				for i := range want {
					if err := passtest.Compare(got[i], want[i]); err != nil {
						t.Errorf("sizes %v, result %d: %v", sizes, i, err)
					}
				}
			}
		})
	}
}

// checkBounds checks the guards "s <= n" as the executor does: every
// symbol at its bound passes the guards, and each symbol one past its
// bound fails naming it.
func checkBounds(t *testing.T, gs sym.Guards, ft *ir.FunctionType, bounds []string) {
	t.Helper()
	at := map[string]int64{}
	for _, b := range bounds {
		s, n, _ := strings.Cut(b, " <= ")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		at[s] = v
	}
	// dimSym maps "argN.shape[D]" to its symbol.
	dimSym := map[string]string{}
	for _, g := range gs.Strings() {
		if l, r, ok := strings.Cut(g, " == "); ok && strings.Contains(l, ".shape[") {
			dimSym[l] = r
		}
	}
	shapes := func(vals map[string]int64) []sym.ShapeDtype {
		in := make([]sym.ShapeDtype, len(ft.Inputs))
		for i, it := range ft.Inputs {
			mt := it.(*ir.MemRefType)
			shape := slices.Clone(mt.Shape())
			for d := range shape {
				if shape[d] == ir.Dynamic {
					shape[d] = vals[dimSym[fmt.Sprintf("arg%d.shape[%d]", i, d)]]
				}
			}
			in[i] = sym.ShapeDtype{Shape: shape, Dtype: mt.ElementType().String()}
		}
		return in
	}
	if _, fail := gs.Check(shapes(at)); fail != nil {
		t.Errorf("every symbol at its bound %v: %v", at, fail)
	}
	for s := range at {
		past := maps.Clone(at)
		past[s]++
		if _, fail := gs.Check(shapes(past)); fail == nil || !strings.Contains(fail.Error(), s+" <= ") {
			t.Errorf("%s = %d, past its bound: guard failure %v, want its bound named", s, past[s], fail)
		}
	}
}

// TestIndex32NeedsGuards checks that a dynamic kernel whose host function
// has no guards (no size symbols to bound) keeps 64-bit index arithmetic.
func TestIndex32NeedsGuards(t *testing.T) {
	ctx, m := parse(t, "softmax.mlir")
	cfg := togpu.DefaultConfig
	cfg.IndexBits = 32
	if err := togpu.Run(ctx, m, cfg); err != nil {
		t.Fatal(err)
	}
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == "arith.index_castui" || o.Name() == "arith.index_cast" {
			t.Errorf("index arithmetic narrowed without guards: %s", o)
			return false
		}
		return true
	})
}
