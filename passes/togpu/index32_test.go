package togpu_test

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
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
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, text, ir.ParseOptions{Filename: "index32.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse(fmt.Sprintf("builtin.module(lower-to-loop,convert-loop-to-gpu{index-bits=%d},canonicalize,cse)", bits))
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	mod, err := llvm.TranslateAll(llvm.GPUModules(m))
	if err != nil {
		t.Fatal(err)
	}
	be, err := nvptx.New(backend)
	if err != nil {
		t.Fatal(err)
	}
	ptx, err := be.Compile(mod, nvptx.Options{})
	if err != nil {
		if backend == "llc" {
			t.Skipf("llc backend unavailable: %v", err)
		}
		t.Fatal(err)
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
