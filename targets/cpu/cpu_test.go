package cpu_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	target "github.com/strata-ir/strata/targets/cpu"

	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/lower"
)

func lowered(t *testing.T, src string) *ir.Operation {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.ParseString(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatmulNestsAreRecognised(t *testing.T) {
	m := lowered(t, `func.func @mm(%a: tensor<20x30xf32>, %b: tensor<30x40xf32>) -> tensor<20x40xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<20x30xf32>, tensor<30x40xf32>) -> tensor<20x40xf32>
  %1 = "graph.relu"(%0) : (tensor<20x40xf32>) -> tensor<20x40xf32>
  return %1 : tensor<20x40xf32>
}
func.func @mt(%a: tensor<20x30xf32>, %b: tensor<40x30xf32>) -> tensor<20x40xf32> {
  %t = "graph.transpose"(%b) <{perm = [1, 0]}> : (tensor<40x30xf32>) -> tensor<30x40xf32>
  %0 = "graph.matmul"(%a, %t) : (tensor<20x30xf32>, tensor<30x40xf32>) -> tensor<20x40xf32>
  return %0 : tensor<20x40xf32>
}
func.func @pw(%a: tensor<20x30xf32>) -> tensor<20x30xf32> {
  %0 = "graph.exp"(%a) : (tensor<20x30xf32>) -> tensor<20x30xf32>
  return %0 : tensor<20x30xf32>
}`)
	for _, cpu := range []string{"skylake-avx512", "haswell"} {
		mod, err := target.TranslateFor(m, cpu)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"mm": true, "mt": true, "pw": false}
		for name, matmul := range want {
			f := mod.Funcs[name]
			if f == nil || len(f.Kernels) != 1 {
				t.Fatalf("%s: @%s has no single kernel", cpu, name)
			}
			for _, k := range f.Kernels {
				if k.Matmul != matmul {
					t.Errorf("%s: @%s: Matmul = %v, want %v", cpu, name, k.Matmul, matmul)
				}
				if matmul && (k.MatmulCols*4 != target.VectorBytes(cpu)*map[bool]int{true: 4, false: 2}[cpu == "skylake-avx512"] || k.MatmulRows == 0) {
					t.Errorf("%s: @%s: block %d rows × %d columns", cpu, name, k.MatmulRows, k.MatmulCols)
				}
			}
		}
		if ll := mod.LLVM.String(); !strings.Contains(ll, "@mm_kernel_0_pack_packed(") || !strings.Contains(ll, "@mt_kernel_0_pack(") || strings.Contains(ll, "@pw_kernel_0_pack(") {
			t.Errorf("%s: the packing kernels are wrong:\n%s", cpu, ll)
		}
	}
}

func TestTopLevelScalarMathIsALocatedError(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.ParseString(ctx, "func.func @f(%x: f32) -> f32 {\n  %0 = math.exp %x : f32\n  return %0 : f32\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = target.Translate(m)
	var d *ir.Diagnostic
	if !errors.As(err, &d) || !strings.Contains(err.Error(), "2:8") || !strings.Contains(err.Error(), "'math.exp' is not supported at the top level") {
		t.Fatalf("got %v, want a located error about math.exp", err)
	}
}

func TestFindToolsLooksOnlyInStrataLLVMBin(t *testing.T) {
	t.Setenv("STRATA_LLVM_BIN", t.TempDir())
	_, err := target.FindTools()
	if !errors.Is(err, target.ErrNoTools) || !strings.Contains(err.Error(), "opt, llc not found in STRATA_LLVM_BIN=") {
		t.Fatalf("got %v", err)
	}
}

func TestHostCPUHonoursTheOverride(t *testing.T) {
	t.Setenv("STRATA_CPU_MCPU", "znver4")
	if got := target.HostCPU(); got != "znver4" {
		t.Fatalf("HostCPU() = %q with STRATA_CPU_MCPU=znver4", got)
	}
}

// TestSoftmaxComputesExpOnce: the write pass of a softmax row loads the
// exponentials its sum pass stored in the output row (reuse.go) instead
// of computing them again; a layer norm, whose passes compute nothing
// expensive, is unchanged.
func TestSoftmaxComputesExpOnce(t *testing.T) {
	m := lowered(t, `func.func @sm(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = "graph.softmax"(%x) <{axis = 1 : i64}> : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}`)
	mod, err := target.Translate(m)
	if err != nil {
		t.Fatal(err)
	}
	ll := mod.LLVM.String()
	if n := strings.Count(ll, "call float @llvm.rint.f32("); n != 1 {
		t.Errorf("softmax computes exp %d times a row element, want 1:\n%s", n, ll)
	}
	if n := strings.Count(ll, "store float"); n != 2 {
		t.Errorf("%d stores, want 2 (the exponential, the result):\n%s", n, ll)
	}
}

// TestMatmulBlockOverride: $STRATA_CPU_MATMUL_BLOCK sets the register
// block of the matmul kernels (rows and columns of the kernel), and a
// malformed block or one needing more vector registers than the target
// has is an error naming the variable, not a kernel that spills.
func TestMatmulBlockOverride(t *testing.T) {
	src := `func.func @mm(%a: tensor<20x30xf32>, %b: tensor<30x40xf32>) -> tensor<20x40xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<20x30xf32>, tensor<30x40xf32>) -> tensor<20x40xf32>
  return %0 : tensor<20x40xf32>
}`
	for _, c := range []struct {
		env, cpu   string
		rows, cols int
	}{{"", "skylake-avx512", 6, 64}, {"", "haswell", 6, 16}, {"24x1", "skylake-avx512", 24, 16},
		{"12x2", "skylake-avx512", 12, 32}, {"1x1", "haswell", 1, 8}, {"4x3", "haswell", 4, 24}} {
		t.Setenv(target.MatmulBlockEnv, c.env)
		mod, err := target.TranslateFor(lowered(t, src), c.cpu)
		if err != nil {
			t.Fatalf("%q on %s: %v", c.env, c.cpu, err)
		}
		var got []string
		for _, k := range mod.Funcs["mm"].Kernels {
			if k.Matmul {
				got = append(got, fmt.Sprintf("%d × %d", k.MatmulRows, k.MatmulCols))
			}
		}
		if want := fmt.Sprintf("%d × %d", c.rows, c.cols); len(got) != 1 || got[0] != want {
			t.Errorf("%q on %s: matmul blocks %v, want one of %s", c.env, c.cpu, got, want)
		}
	}
	for _, c := range []struct{ env, cpu string }{{"bad", "skylake-avx512"}, {"0x4", "skylake-avx512"}, {"6x0", "skylake-avx512"},
		{"12x2x1", "skylake-avx512"}, {"-6x4", "skylake-avx512"}, {"32x1", "skylake-avx512"}, {"10x3", "skylake-avx512"}, {"12x2", "haswell"}} {
		t.Setenv(target.MatmulBlockEnv, c.env)
		_, err := target.TranslateFor(lowered(t, src), c.cpu)
		if err == nil || !strings.Contains(err.Error(), target.MatmulBlockEnv) {
			t.Errorf("%q on %s: %v, want an error naming %s", c.env, c.cpu, err, target.MatmulBlockEnv)
		}
	}
}

// TestDefaultKCKeepsThePanelBlockIn32KiB: the default k block keeps KC ×
// NR elements of the packed panel within 32 KiB, between 64 and
// MatmulKC steps.
func TestDefaultKCKeepsThePanelBlockIn32KiB(t *testing.T) {
	for _, c := range []struct{ cols, bytes, want int }{{64, 4, 128}, {16, 4, 256}, {32, 8, 128}, {8, 8, 256}, {96, 4, 85}, {1024, 4, 64}, {0, 4, target.MatmulKC}} {
		if got := target.DefaultKC(c.cols, c.bytes); got != c.want {
			t.Errorf("DefaultKC(%d, %d) = %d, want %d", c.cols, c.bytes, got, c.want)
		}
	}
}

// TestFewRowDotProductsRunOverEveryElement: x·Wᵀ with at most
// MatmulDotRows rows is no blocked matmul but a flat kernel, its outer
// range every element of C (one row would otherwise be one range on one
// core); with more rows it is blocked.
func TestFewRowDotProductsRunOverEveryElement(t *testing.T) {
	src := `func.func @dot(%a: tensor<2x64xf32>, %w: tensor<300x64xf32>) -> tensor<2x300xf32> {
  %t = "graph.transpose"(%w) <{perm = [1, 0]}> : (tensor<300x64xf32>) -> tensor<64x300xf32>
  %0 = "graph.matmul"(%a, %t) : (tensor<2x64xf32>, tensor<64x300xf32>) -> tensor<2x300xf32>
  return %0 : tensor<2x300xf32>
}
func.func @mm(%a: tensor<20x64xf32>, %w: tensor<300x64xf32>) -> tensor<20x300xf32> {
  %t = "graph.transpose"(%w) <{perm = [1, 0]}> : (tensor<300x64xf32>) -> tensor<64x300xf32>
  %0 = "graph.matmul"(%a, %t) : (tensor<20x64xf32>, tensor<64x300xf32>) -> tensor<20x300xf32>
  return %0 : tensor<20x300xf32>
}`
	mod, err := target.TranslateFor(lowered(t, src), "skylake-avx512")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]bool{"dot": {true, false}, "mm": {false, true}} {
		for _, k := range mod.Funcs[name].Kernels {
			if k.Flat != want[0] || k.Matmul != want[1] {
				t.Errorf("@%s: Flat %v, Matmul %v; want %v, %v", name, k.Flat, k.Matmul, want[0], want[1])
			}
		}
	}
}

// TestLongLastDimensionsAreChunked: a pointwise nest whose static last
// dimension holds at least two chunks splits it into chunks of
// ChunkIterations, each a point of the outer range; a short or dynamic
// last dimension, or a nest with loops inside (softmax's rows), keeps it
// whole.
func TestLongLastDimensionsAreChunked(t *testing.T) {
	src := `func.func @long(%a: tensor<1x16384xf32>) -> tensor<1x16384xf32> {
  %0 = "graph.exp"(%a) : (tensor<1x16384xf32>) -> tensor<1x16384xf32>
  return %0 : tensor<1x16384xf32>
}
func.func @short(%a: tensor<64x4096xf32>) -> tensor<64x4096xf32> {
  %0 = "graph.exp"(%a) : (tensor<64x4096xf32>) -> tensor<64x4096xf32>
  return %0 : tensor<64x4096xf32>
}
func.func @dyn(%a: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = "graph.exp"(%a) : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}
func.func @rows(%a: tensor<2x16384xf32>) -> tensor<2x16384xf32> {
  %0 = "graph.softmax"(%a) <{axis = -1 : i64}> : (tensor<2x16384xf32>) -> tensor<2x16384xf32>
  return %0 : tensor<2x16384xf32>
}`
	mod, err := target.TranslateFor(lowered(t, src), "skylake-avx512")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{"long": target.ChunkIterations, "short": 0, "dyn": 0, "rows": 0} {
		for _, k := range mod.Funcs[name].Kernels {
			if k.Chunk != want {
				t.Errorf("@%s: Chunk %d, want %d", name, k.Chunk, want)
			}
		}
	}
}

// TestOneRowProductsUseAOneRowBlock: a product of one static row takes a
// 1 × 8 block (1 × 7 with AVX2's 16 registers), unless
// $STRATA_CPU_MATMUL_BLOCK chooses every block; two rows keep the
// default.
func TestOneRowProductsUseAOneRowBlock(t *testing.T) {
	src := `func.func @one(%a: tensor<1x64xf32>, %w: tensor<64x300xf32>, %b: tensor<300xf32>) -> tensor<1x300xf32> {
  %0 = "graph.matmul"(%a, %w) : (tensor<1x64xf32>, tensor<64x300xf32>) -> tensor<1x300xf32>
  %1 = "graph.add"(%0, %b) : (tensor<1x300xf32>, tensor<300xf32>) -> tensor<1x300xf32>
  return %1 : tensor<1x300xf32>
}
func.func @two(%a: tensor<2x64xf32>, %w: tensor<64x300xf32>) -> tensor<2x300xf32> {
  %0 = "graph.matmul"(%a, %w) : (tensor<2x64xf32>, tensor<64x300xf32>) -> tensor<2x300xf32>
  return %0 : tensor<2x300xf32>
}`
	for _, c := range []struct {
		env, cpu, fn string
		rows, cols   int
	}{{"", "skylake-avx512", "one", 1, 128}, {"", "haswell", "one", 1, 56}, {"", "skylake-avx512", "two", 6, 64},
		{"12x2", "skylake-avx512", "one", 12, 32}} {
		t.Setenv(target.MatmulBlockEnv, c.env)
		mod, err := target.TranslateFor(lowered(t, src), c.cpu)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range mod.Funcs[c.fn].Kernels {
			if !k.Matmul || k.MatmulRows != c.rows || k.MatmulCols != c.cols {
				t.Errorf("@%s on %s (%q): matmul %v, a %d × %d block; want %d × %d", c.fn, c.cpu, c.env, k.Matmul, k.MatmulRows, k.MatmulCols, c.rows, c.cols)
			}
		}
	}
}
