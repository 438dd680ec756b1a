package cpu_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/interp"
	target "github.com/strata-ir/strata/targets/cpu"

	_ "github.com/strata-ir/strata/passes/decompose"
	_ "github.com/strata-ir/strata/passes/fusion"
	_ "github.com/strata-ir/strata/passes/lower"
)

// needTools skips a test where the compiler tools are missing.
func needTools(t *testing.T) {
	t.Helper()
	if _, err := cpu.FindTools(); err != nil {
		t.Skip(err)
	}
}

// compileSource parses src, lowers it to the loop level and compiles it;
// it returns the graph-level module too, for the interpreter.
func compileSource(t *testing.T, src string) (*cpu.Program, *ir.Operation) {
	t.Helper()
	ctx := dialects.NewContext()
	graph, err := ir.ParseString(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	lowered, err := ir.ParseString(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, lowered); err != nil {
		t.Fatal(err)
	}
	p, err := cpu.Compile(lowered)
	if err != nil {
		t.Fatal(err)
	}
	return p, graph
}

// check runs fn on the cpu and in the interpreter on the same random
// inputs and compares the results with the GPU tolerances.
func check(t *testing.T, p *cpu.Program, graph *ir.Operation, fn string, seed int64, shapes map[int][]int64) {
	t.Helper()
	in := interp.New(graph)
	f := in.Func(fn)
	ft, err := interp.FuncType(f)
	if err != nil {
		t.Fatal(err)
	}
	ft = concrete(ft, shapes)
	args, err := interp.RandomInputs(ft, seed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := in.Call(fn, args...)
	if err != nil {
		t.Fatal(err)
	}
	tensors := make([]*interp.Tensor, len(args))
	for i, a := range args {
		tensors[i] = a.(*interp.Tensor)
	}
	got, err := p.Run(fn, tensors)
	if err != nil {
		t.Fatalf("@%s: %v", fn, err)
	}
	if len(got) != len(want) {
		t.Fatalf("@%s: %d results, want %d", fn, len(got), len(want))
	}
	for i := range want {
		if err := passtest.Compare(got[i], want[i]); err != nil {
			t.Errorf("@%s result %d: %v", fn, i, err)
		}
	}
}

// concrete gives dynamic dims of parameter i the sizes shapes[i].
func concrete(ft *ir.FunctionType, shapes map[int][]int64) *ir.FunctionType {
	if len(shapes) == 0 {
		return ft
	}
	ins := append([]ir.Type(nil), ft.Inputs...)
	for i, s := range shapes {
		if tt, ok := ins[i].(*ir.TensorType); ok {
			ins[i] = ir.TensorOf(s, tt.ElementType())
		}
	}
	return &ir.FunctionType{Inputs: ins, Results: ft.Results}
}

func TestSoftmaxAndLayerNormMatchTheInterpreter(t *testing.T) {
	needTools(t)
	src, err := os.ReadFile("../../examples/softmax.mlir")
	if err != nil {
		t.Fatal(err)
	}
	p, graph := compileSource(t, string(src))
	for _, rows := range []int64{1, 3, 37} {
		check(t, p, graph, "main", rows, map[int][]int64{0: {rows, 4096}})
	}
}

func TestMissingToolsAreNamed(t *testing.T) {
	t.Setenv("STRATA_LLVM_BIN", t.TempDir())
	t.Setenv("STRATA_CACHE_DIR", t.TempDir())
	_, err := cpu.FindTools()
	if !errors.Is(err, cpu.ErrNoTools) {
		t.Fatalf("FindTools with an empty STRATA_LLVM_BIN: %v, want ErrNoTools", err)
	}
	for _, want := range []string{"opt", "llc", "STRATA_LLVM_BIN=", "setup-tools.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	ctx := dialects.NewContext()
	m, perr := ir.ParseString(ctx, "func.func @f(%a: memref<4xf32>) -> memref<4xf32> {\n  return %a : memref<4xf32>\n}\n")
	if perr != nil {
		t.Fatal(perr)
	}
	if _, err := cpu.Compile(m); !errors.Is(err, cpu.ErrNoTools) {
		t.Fatalf("Compile without tools: %v, want ErrNoTools", err)
	}
}

func TestMatmulWithEpilogueMatchesTheInterpreter(t *testing.T) {
	needTools(t)
	for _, c := range []struct {
		m, k, n int
		elem    string
	}{{1, 1, 1, "f32"}, {7, 5, 33, "f32"}, {13, 64, 40, "f32"}, {6, 0, 32, "f32"}, {37, 19, 70, "f64"}, {250, 40, 90, "f32"}, {61, 2*target.MatmulKC + 37, 50, "f32"}, {30, target.MatmulKC, 20, "f64"}, {50, target.MatmulKC + 1, 17, "f64"}} {
		src := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dx%[4]s>, %%b: tensor<%[2]dx%[3]dx%[4]s>, %%bias: tensor<%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s> {
  %%c = "graph.matmul"(%%a, %%b) : (tensor<%[1]dx%[2]dx%[4]s>, tensor<%[2]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%bb = "graph.broadcast_to"(%%bias) <{shape = [%[1]d, %[3]d]}> : (tensor<%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%d = "graph.add"(%%c, %%bb) : (tensor<%[1]dx%[3]dx%[4]s>, tensor<%[1]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%e = "graph.gelu"(%%d) : (tensor<%[1]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  return %%e : tensor<%[1]dx%[3]dx%[4]s>
}
`, c.m, c.k, c.n, c.elem)
		p, graph := compileSource(t, src)
		// K = 0 or one column: no reduction loop, or no columns to block
		// (the generic path).
		if c.k > 0 && c.n > 1 && !strings.Contains(p.LLVM, "main_kernel_0_pack_packed(") {
			t.Errorf("%dx%dx%d %s: no register-blocked matmul kernel", c.m, c.k, c.n, c.elem)
		}
		// 16 workers split the row blocks into groups (Program.rowGroup);
		// k blocks of 7 leave a partial last one.
		for _, workers := range []int{0, 1, 16} {
			for _, kc := range []int{0, 7} {
				p.Workers, p.MatmulKC = workers, kc
				check(t, p, graph, "main", int64(c.m), nil)
			}
		}
	}
}

// TestMatmulBlocksMatchTheInterpreter draws register blocks (MR rows by
// NV vectors, within the 32 AVX-512 registers) and matmul sizes with
// rapid, compiles matmul + bias + gelu with each block
// ($STRATA_CPU_MATMUL_BLOCK) and compares with the interpreter on 1, 2 and
// 16 workers, whole and in k blocks of 3.
func TestMatmulBlocksMatchTheInterpreter(t *testing.T) {
	needTools(t)
	if target.VectorBytes(target.HostCPU()) < 64 {
		t.Skip("the blocks drawn need AVX-512's 32 registers")
	}
	n := 10
	if testing.Short() {
		n = 4
	}
	for i := range n {
		nv := rapid.IntRange(1, 4).Example(i)
		maxMR := 24
		if nv > 1 {
			maxMR = (31 - nv) / nv
		}
		mr := rapid.IntRange(1, maxMR).Example(i)
		m, k, nn := rapid.IntRange(1, 40).Example(3*i), rapid.IntRange(0, 40).Example(3*i+1), rapid.IntRange(1, 90).Example(3*i+2)
		elem := rapid.SampledFrom([]string{"f32", "f32", "f64"}).Example(i)
		t.Setenv(target.MatmulBlockEnv, fmt.Sprintf("%dx%d", mr, nv))
		src := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dx%[4]s>, %%b: tensor<%[2]dx%[3]dx%[4]s>, %%bias: tensor<%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s> {
  %%c = "graph.matmul"(%%a, %%b) : (tensor<%[1]dx%[2]dx%[4]s>, tensor<%[2]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%bb = "graph.broadcast_to"(%%bias) <{shape = [%[1]d, %[3]d]}> : (tensor<%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%d = "graph.add"(%%c, %%bb) : (tensor<%[1]dx%[3]dx%[4]s>, tensor<%[1]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%e = "graph.gelu"(%%d) : (tensor<%[1]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  return %%e : tensor<%[1]dx%[3]dx%[4]s>
}
`, m, k, nn, elem)
		p, graph := compileSource(t, src)
		if k > 0 && nn > 1 && !strings.Contains(p.LLVM, "main_kernel_0_pack_packed(") {
			t.Fatalf("block %dx%d, %dx%dx%d %s: no register-blocked matmul kernel", mr, nv, m, k, nn, elem)
		}
		for _, workers := range []int{1, 2, 16} {
			for _, kc := range []int{0, 3} {
				p.Workers, p.MatmulKC = workers, kc
				check(t, p, graph, "main", int64(i), nil)
			}
		}
	}
}

// TestFewRowBlockMatmulsReadBInPlace: products with at most
// MatmulDirectBlocks row blocks a batch (a matrix-vector product, a few
// rows of decoding, a batch folded into a few rows, a batched B) read B's
// full panels where they lie and pack only the partial one; rapid draws
// the sizes (M on both sides of the limit, N a multiple of the panel or
// not, K across several k blocks or 0) and element types (f16 operands
// are widened, so packed as before), and each must give the
// interpreter's results on 1, 2 and 16 workers, whole and in k blocks of
// 5.
func TestFewRowBlockMatmulsReadBInPlace(t *testing.T) {
	needTools(t)
	n := 16
	if testing.Short() {
		n = 6
	}
	for i := range n {
		m := rapid.SampledFrom([]int{1, 3, 6, 7, 13, 96, 97, 120}).Example(i)
		k := rapid.SampledFrom([]int{0, 1, 37, 300}).Example(i)
		nn := rapid.SampledFrom([]int{7, 64, 100, 128, 200}).Example(i)
		elem := rapid.SampledFrom([]string{"f32", "f32", "f64", "f16"}).Example(i)
		shape := rapid.SampledFrom([]string{"plain", "batched", "folded"}).Example(i)
		var src string
		switch shape {
		case "plain":
			src = fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dx%[4]s>, %%b: tensor<%[2]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s> {
  %%c = "graph.matmul"(%%a, %%b) : (tensor<%[1]dx%[2]dx%[4]s>, tensor<%[2]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  %%d = "graph.tanh"(%%c) : (tensor<%[1]dx%[3]dx%[4]s>) -> tensor<%[1]dx%[3]dx%[4]s>
  return %%d : tensor<%[1]dx%[3]dx%[4]s>
}
`, m, k, nn, elem)
		case "batched": // B with the batch index: each batch's B in place
			src = fmt.Sprintf(`func.func @main(%%a: tensor<3x%[1]dx%[2]dx%[4]s>, %%b: tensor<3x%[2]dx%[3]dx%[4]s>) -> tensor<3x%[1]dx%[3]dx%[4]s> {
  %%c = "graph.matmul"(%%a, %%b) : (tensor<3x%[1]dx%[2]dx%[4]s>, tensor<3x%[2]dx%[3]dx%[4]s>) -> tensor<3x%[1]dx%[3]dx%[4]s>
  return %%c : tensor<3x%[1]dx%[3]dx%[4]s>
}
`, m, k, nn, elem)
		case "folded": // 2 × ⌈m/2⌉ rows fold into one block of A
			src = fmt.Sprintf(`func.func @main(%%a: tensor<2x%[1]dx%[2]dx%[4]s>, %%b: tensor<%[2]dx%[3]dx%[4]s>) -> tensor<2x%[1]dx%[3]dx%[4]s> {
  %%c = "graph.matmul"(%%a, %%b) : (tensor<2x%[1]dx%[2]dx%[4]s>, tensor<%[2]dx%[3]dx%[4]s>) -> tensor<2x%[1]dx%[3]dx%[4]s>
  return %%c : tensor<2x%[1]dx%[3]dx%[4]s>
}
`, (m+1)/2, k, nn, elem)
		}
		p, graph := compileSource(t, src)
		if k > 0 && !strings.Contains(p.LLVM, "main_kernel_0_pack_packed(") {
			t.Fatalf("%s %dx%dx%d %s: no register-blocked matmul kernel", shape, m, k, nn, elem)
		}
		for _, workers := range []int{1, 2, 16} {
			for _, kc := range []int{0, 5} {
				p.Workers, p.MatmulKC = workers, kc
				check(t, p, graph, "main", int64(i), nil)
			}
		}
	}
}

// TestFewRowsAgainstATransposedBAreDotProducts: x·Wᵀ with at most
// target.MatmulDotRows static rows (all batches' when they fold, each
// batch's when B is batched too) runs on the generic path, dot products
// along k (no pack kernel); one row more, or a dynamic row count, takes
// the blocked kernel. Each gives the interpreter's results.
func TestFewRowsAgainstATransposedBAreDotProducts(t *testing.T) {
	needTools(t)
	for _, c := range []struct {
		a, b    string // operand types; B's last two dims are transposed
		out     string
		perm    string
		blocked bool
	}{
		{"tensor<1x300xf32>", "tensor<70x300xf32>", "tensor<1x70xf32>", "[1, 0]", false},
		{"tensor<16x33xf32>", "tensor<65x33xf32>", "tensor<16x65xf32>", "[1, 0]", false},
		{"tensor<17x33xf32>", "tensor<65x33xf32>", "tensor<17x65xf32>", "[1, 0]", true},
		{"tensor<2x8x40xf32>", "tensor<20x40xf32>", "tensor<2x8x20xf32>", "[1, 0]", false},      // 16 rows folded
		{"tensor<3x6x40xf32>", "tensor<20x40xf32>", "tensor<3x6x20xf32>", "[1, 0]", true},       // 18 rows folded
		{"tensor<5x3x40xf32>", "tensor<5x20x40xf32>", "tensor<5x3x20xf32>", "[0, 2, 1]", false}, // 3 rows a batch
		{"tensor<4x1x64xf32>", "tensor<4x50x64xf32>", "tensor<4x1x50xf32>", "[0, 2, 1]", false}, // q·kᵀ of one query
		{"tensor<1x100xf64>", "tensor<30x100xf64>", "tensor<1x30xf64>", "[1, 0]", false},
		{"tensor<2x64xbf16>", "tensor<30x64xbf16>", "tensor<2x30xbf16>", "[1, 0]", false},
		{"tensor<?x40xf32>", "tensor<20x40xf32>", "tensor<?x20xf32>", "[1, 0]", true}, // rows unknown
	} {
		bt := c.b
		// The transposed type: swap the last two dims of B's type.
		dims := strings.Split(strings.TrimSuffix(strings.TrimPrefix(c.b, "tensor<"), ">"), "x")
		n := len(dims)
		dims[n-3], dims[n-2] = dims[n-2], dims[n-3]
		tt := "tensor<" + strings.Join(dims, "x") + ">"
		src := fmt.Sprintf(`func.func @main(%%a: %[1]s, %%b: %[2]s) -> %[3]s {
  %%t = "graph.transpose"(%%b) <{perm = %[4]s}> : (%[2]s) -> %[5]s
  %%c = "graph.matmul"(%%a, %%t) : (%[1]s, %[5]s) -> %[3]s
  return %%c : %[3]s
}
`, c.a, bt, c.out, c.perm, tt)
		p, graph := compileSource(t, src)
		if got := strings.Contains(p.LLVM, "_pack_packed("); got != c.blocked {
			t.Errorf("%s · %sᵀ: blocked %v, want %v", c.a, c.b, got, c.blocked)
		}
		var shapes map[int][]int64
		if strings.Contains(c.a, "?") {
			shapes = map[int][]int64{0: {5, 40}}
		}
		for _, workers := range []int{1, 2, 16} {
			p.Workers = workers
			check(t, p, graph, "main", 3, shapes)
		}
	}
}

// TestOneRowMatmulsAreBlocked: lower-to-loop indexes a dimension of
// extent 1 by the constant 0, so a matrix-vector product with an
// epilogue (a linear layer's bias at batch 1) loads A[0, k], and a batch
// of one A[0, i, k]; the matcher reads those as the induction variables,
// so they run on the blocked kernel (with B in place) rather than the
// generic path's strided reads of B (1×4096 · 4096×4096 + bias + gelu:
// 154 ms there, 6.5–10.8 blocked, on one core), and give the
// interpreter's results.
func TestOneRowMatmulsAreBlocked(t *testing.T) {
	needTools(t)
	for _, src := range []string{`func.func @main(%a: tensor<1x50xf32>, %w: tensor<50x70xf32>, %bias: tensor<70xf32>) -> tensor<1x70xf32> {
  %0 = "graph.matmul"(%a, %w) : (tensor<1x50xf32>, tensor<50x70xf32>) -> tensor<1x70xf32>
  %1 = "graph.add"(%0, %bias) : (tensor<1x70xf32>, tensor<70xf32>) -> tensor<1x70xf32>
  %2 = "graph.gelu"(%1) : (tensor<1x70xf32>) -> tensor<1x70xf32>
  return %2 : tensor<1x70xf32>
}`, `func.func @main(%a: tensor<1x5x40xf32>, %w: tensor<1x40x33xf32>) -> tensor<1x5x33xf32> {
  %0 = "graph.matmul"(%a, %w) : (tensor<1x5x40xf32>, tensor<1x40x33xf32>) -> tensor<1x5x33xf32>
  %1 = "graph.relu"(%0) : (tensor<1x5x33xf32>) -> tensor<1x5x33xf32>
  return %1 : tensor<1x5x33xf32>
}`, `func.func @main(%a: tensor<2x1x40xf64>, %w: tensor<40x66xf64>) -> tensor<2x1x66xf64> {
  %0 = "graph.matmul"(%a, %w) : (tensor<2x1x40xf64>, tensor<40x66xf64>) -> tensor<2x1x66xf64>
  %1 = "graph.tanh"(%0) : (tensor<2x1x66xf64>) -> tensor<2x1x66xf64>
  return %1 : tensor<2x1x66xf64>
}`, `func.func @main(%a: tensor<300x1xf32>, %w: tensor<300x20xf32>) -> tensor<1x20xf32> {
  %t = "graph.transpose"(%a) <{perm = [1, 0]}> : (tensor<300x1xf32>) -> tensor<1x300xf32>
  %0 = "graph.matmul"(%t, %w) : (tensor<1x300xf32>, tensor<300x20xf32>) -> tensor<1x20xf32>
  %1 = "graph.sigmoid"(%0) : (tensor<1x20xf32>) -> tensor<1x20xf32>
  return %1 : tensor<1x20xf32>
}`} {
		p, graph := compileSource(t, src)
		if !strings.Contains(p.LLVM, "_pack_packed(") {
			t.Errorf("no register-blocked matmul kernel for\n%s", src)
		}
		for _, workers := range []int{1, 2, 16} {
			for _, kc := range []int{0, 7} {
				p.Workers, p.MatmulKC = workers, kc
				check(t, p, graph, "main", 5, nil)
			}
		}
	}
}

// TestTransposedBIsPackedBySquares: a transposed B's full panels are
// packed vl × vl squares at a time (vector loads along k, a transpose in
// shuffles, vector stores); rapid draws the sizes (N with and without a
// partial panel, K with and without a partial item of k), element types
// (bf16 is widened, so packed element by element), batched or not, and
// the target (AVX2's 8 f32 or 4 f64 lanes through STRATA_CPU_MCPU=haswell
// as well as the host's); each must give the interpreter's results.
func TestTransposedBIsPackedBySquares(t *testing.T) {
	needTools(t)
	n := 12
	if testing.Short() {
		n = 4
	}
	for i := range n {
		m := rapid.IntRange(17, 50).Example(i)
		k := rapid.SampledFrom([]int{16, 29, 48, 300}).Example(i)
		nn := rapid.SampledFrom([]int{64, 100, 128, 130}).Example(i)
		elem := rapid.SampledFrom([]string{"f32", "f32", "f64", "bf16"}).Example(i)
		batch := rapid.SampledFrom([]int{0, 2}).Example(i)
		mcpu := rapid.SampledFrom([]string{"", "haswell"}).Example(i)
		if mcpu != "" && target.VectorBytes(target.HostCPU()) < 32 {
			continue
		}
		t.Setenv("STRATA_CPU_MCPU", mcpu)
		pre, perm := "", "[1, 0]"
		if batch > 0 {
			pre, perm = fmt.Sprintf("%dx", batch), "[0, 2, 1]"
		}
		src := fmt.Sprintf(`func.func @main(%%a: tensor<%[5]s%[1]dx%[2]dx%[4]s>, %%b: tensor<%[5]s%[3]dx%[2]dx%[4]s>) -> tensor<%[5]s%[1]dx%[3]dx%[4]s> {
  %%t = "graph.transpose"(%%b) <{perm = %[6]s}> : (tensor<%[5]s%[3]dx%[2]dx%[4]s>) -> tensor<%[5]s%[2]dx%[3]dx%[4]s>
  %%c = "graph.matmul"(%%a, %%t) : (tensor<%[5]s%[1]dx%[2]dx%[4]s>, tensor<%[5]s%[2]dx%[3]dx%[4]s>) -> tensor<%[5]s%[1]dx%[3]dx%[4]s>
  return %%c : tensor<%[5]s%[1]dx%[3]dx%[4]s>
}
`, m, k, nn, elem, pre, perm)
		p, graph := compileSource(t, src)
		if !strings.Contains(p.LLVM, "_pack_packed(") {
			t.Fatalf("%s: no register-blocked matmul kernel", src)
		}
		for _, workers := range []int{1, 2, 16} {
			p.Workers = workers
			check(t, p, graph, "main", int64(i), nil)
		}
	}
}

// TestChunkedLastDimensionsMatchTheInterpreter: pointwise nests whose
// long last dimension is cut into chunks (target.ChunkIterations; the
// last chunk partial, operands broadcast along either dimension) give
// the interpreter's results on 1, 2 and 16 workers.
func TestChunkedLastDimensionsMatchTheInterpreter(t *testing.T) {
	needTools(t)
	src := `func.func @main(%a: tensor<3x10001xf32>, %b: tensor<3x1xf32>, %c: tensor<10001xf32>) -> tensor<3x10001xf32> {
  %0 = "graph.mul"(%a, %b) : (tensor<3x10001xf32>, tensor<3x1xf32>) -> tensor<3x10001xf32>
  %1 = "graph.add"(%0, %c) : (tensor<3x10001xf32>, tensor<10001xf32>) -> tensor<3x10001xf32>
  %2 = "graph.tanh"(%1) : (tensor<3x10001xf32>) -> tensor<3x10001xf32>
  return %2 : tensor<3x10001xf32>
}
func.func @one(%a: tensor<1x2x8193xf64>) -> tensor<1x2x8193xf64> {
  %0 = "graph.sigmoid"(%a) : (tensor<1x2x8193xf64>) -> tensor<1x2x8193xf64>
  return %0 : tensor<1x2x8193xf64>
}`
	p, graph := compileSource(t, src)
	for _, workers := range []int{1, 2, 16} {
		p.Workers = workers
		check(t, p, graph, "main", 7, nil)
		check(t, p, graph, "one", 8, nil)
	}
}

// TestExpIsAccurate checks the inline f32 exp against float64's over its
// whole range: within 2 ulp where the result is normal, the right zero,
// infinity and NaN beyond.
func TestExpIsAccurate(t *testing.T) {
	needTools(t)
	const n = 1 << 16
	p, _ := compileSource(t, fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dxf32>) -> tensor<%[1]dxf32> {
  %%0 = "graph.exp"(%%x) : (tensor<%[1]dxf32>) -> tensor<%[1]dxf32>
  return %%0 : tensor<%[1]dxf32>
}`, n))
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(-106 + 196*float64(i)/n)
	}
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 88.72283, 88.7229, -87.33654, -103.9, -104, 1e-30, -1e-30}
	copy(xs, special)
	in, err := interp.FromData(ir.F32, []int64{n}, xs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run("main", []*interp.Tensor{in})
	if err != nil {
		t.Fatal(err)
	}
	got := interp.Elems[float32](out[0])
	for i, x := range xs {
		want := math.Exp(float64(x))
		g := float64(got[i])
		switch {
		case math.IsNaN(want) || math.IsInf(want, 0) || want > math.MaxFloat32:
			if !(math.IsNaN(want) && math.IsNaN(g) || g == math.Inf(1) && want > math.MaxFloat32 || g == want) {
				t.Errorf("exp(%v) = %v, want %v", x, g, want)
			}
		case want < 0x1p-126:
			if math.Abs(g-want) > 0x1p-149 {
				t.Errorf("exp(%v) = %v, want %v (subnormal)", x, g, want)
			}
		default:
			if ulp := math.Abs(g-want) / float64(math.Nextafter32(float32(want), float32(math.Inf(1)))-float32(want)); ulp > 2 {
				t.Errorf("exp(%v) = %v, want %v (%.1f ulp)", x, g, want, ulp)
			}
		}
	}
}

// TestGuardsAreChecked: a function symbolized by graph-symbolize-shapes
// runs on every row count its guards allow, and refuses inputs that break
// them (arguments that must share a size) instead of reading past a buffer.
func TestGuardsAreChecked(t *testing.T) {
	needTools(t)
	ctx := dialects.NewContext()
	m, err := ir.ParseString(ctx, `func.func @main(%x: tensor<8x64xf32>, %y: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %0 : tensor<8x64xf32>
}`)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(func.func(graph-symbolize-shapes),lower-to-loop)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	p, err := cpu.Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	rows := func(n int64) *interp.Tensor {
		x, err := interp.NewTensor(ir.F32, []int64{n, 64})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	if _, err := p.Run("main", []*interp.Tensor{rows(5), rows(5)}); err != nil {
		t.Fatalf("5 rows: %v", err)
	}
	if _, err := p.Run("main", []*interp.Tensor{rows(5), rows(6)}); err == nil || !strings.Contains(err.Error(), "guard failed") {
		t.Fatalf("5 and 6 rows: %v, want a failed guard", err)
	}
}

// TestBatchedMatmulFoldsTheBatchIntoRows: A[b, i, k] @ B[k, j] (a linear
// layer on a batch of sequences) runs as one matmul of b·M rows.
func TestBatchedMatmulFoldsTheBatchIntoRows(t *testing.T) {
	needTools(t)
	for _, c := range []struct{ b, m, k, n int }{{2, 5, 7, 9}, {3, 13, 32, 40}, {1, 1, 1, 1}} {
		src := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dx%[3]dxf32>, %%w: tensor<%[3]dx%[4]dxf32>, %%bias: tensor<%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32> {
  %%0 = "graph.matmul"(%%a, %%w) : (tensor<%[1]dx%[2]dx%[3]dxf32>, tensor<%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32>
  %%1 = "graph.add"(%%0, %%bias) : (tensor<%[1]dx%[2]dx%[4]dxf32>, tensor<%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32>
  %%2 = "graph.tanh"(%%1) : (tensor<%[1]dx%[2]dx%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32>
  return %%2 : tensor<%[1]dx%[2]dx%[4]dxf32>
}
`, c.b, c.m, c.k, c.n)
		p, graph := compileSource(t, src)
		if c.n > 1 && !strings.Contains(p.LLVM, "main_kernel_0_pack_packed(") {
			t.Errorf("%v: no register-blocked matmul kernel", c)
		}
		check(t, p, graph, "main", int64(c.m), nil)
	}
}

// TestConstantBuffersAreFilledOnEveryCall: a dense constant becomes a
// buffer filled at entry (from a template made at the first call); it is
// right on every call, also when returned.
func TestConstantBuffersAreFilledOnEveryCall(t *testing.T) {
	needTools(t)
	p, graph := compileSource(t, `func.func @main(%x: tensor<2x3xf32>, %i: tensor<3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi32>) {
  %c = "graph.constant"() <{value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]]> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %k = "graph.constant"() <{value = dense<[7, -8, 9]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %0 = "graph.mul"(%x, %c) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "graph.add"(%i, %k) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %0, %c, %1 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xi32>
}`)
	for seed := range int64(3) {
		check(t, p, graph, "main", seed, nil)
	}
}

// TestLayerNormOfOffsetAndOutlierRows: the one-pass row statistics
// (targets/cpu moments.go) shift by the row's first element; rows far
// from zero, a first element far from the rest, constant, tiny and wide
// rows, and a single column give the exact layer norm (computed here in
// float64) within the GPU tolerances, in f32 and f64. (The interpreter's
// f32 mean of the row near 1000 is off by 1.6e-4 of σ.)
func TestLayerNormOfOffsetAndOutlierRows(t *testing.T) {
	needTools(t)
	const rows = 6
	for _, c := range []struct {
		elem string
		cols int
	}{{"f32", 300}, {"f64", 300}, {"f32", 1}, {"f32", 17}} {
		ty := fmt.Sprintf("tensor<%dx%dx%s>", rows, c.cols, c.elem)
		wt := fmt.Sprintf("tensor<%dx%s>", c.cols, c.elem)
		p, _ := compileSource(t, fmt.Sprintf(`func.func @main(%%x: %[1]s, %%w: %[2]s, %%b: %[2]s) -> %[1]s {
  %%0 = "graph.layer_norm"(%%x, %%w, %%b) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (%[1]s, %[2]s, %[2]s) -> %[1]s
  return %%0 : %[1]s
}`, ty, wt))
		if c.cols > 1 && !strings.Contains(p.LLVM, "shift") {
			t.Errorf("%s×%d: the statistics are not one pass", c.elem, c.cols)
		}
		elem := map[string]ir.Type{"f32": ir.F32, "f64": ir.F64}[c.elem]
		round := func(v float64) float64 {
			if elem == ir.F32 {
				return float64(float32(v))
			}
			return v
		}
		x := make([]float64, rows*c.cols)
		for j := range c.cols {
			noise := math.Sin(float64(7*j + 1))
			for r, v := range []float64{1000 + noise, noise, 5, -3e-4 * noise, 0.5 * noise, 1e3 * noise} {
				x[r*c.cols+j] = round(v)
			}
		}
		x[4*c.cols] = 300 // the shift far from the rest of its row
		w, b := make([]float64, c.cols), make([]float64, c.cols)
		for j := range w {
			w[j], b[j] = round(1+0.01*float64(j%7)), round(0.1*float64(j%3))
		}
		want := make([]float64, len(x))
		for r := range rows {
			row := x[r*c.cols : (r+1)*c.cols]
			var mean, v float64
			for _, e := range row {
				mean += e
			}
			mean /= float64(c.cols)
			for _, e := range row {
				v += (e - mean) * (e - mean)
			}
			v /= float64(c.cols)
			for j, e := range row {
				want[r*c.cols+j] = (e-mean)/math.Sqrt(v+float64(float32(1e-5)))*w[j] + b[j]
			}
		}
		mk := func(shape []int64, v []float64) *interp.Tensor {
			var data any = v
			if elem == ir.F32 {
				f := make([]float32, len(v))
				for i := range v {
					f[i] = float32(v[i])
				}
				data = f
			}
			tt, err := interp.FromData(elem, shape, data)
			if err != nil {
				t.Fatal(err)
			}
			return tt
		}
		shape := []int64{rows, int64(c.cols)}
		got, err := p.Run("main", []*interp.Tensor{mk(shape, x), mk(shape[1:], w), mk(shape[1:], b)})
		if err != nil {
			t.Fatal(err)
		}
		if err := passtest.Compare(got[0], mk(shape, want)); err != nil {
			t.Errorf("%s×%d: %v", c.elem, c.cols, err)
		}
	}
}

// TestMismatchedDynamicSizesAreErrors: with dynamic shapes nothing before
// the kernels checks that broadcast sizes agree or that a matmul's inner
// dimensions do; the host side does, with the graph op's location,
// instead of letting the kernels read past the smaller operand — for any
// kernel, a loop whose induction variable indexes a buffer directly must
// stay inside it (targets/cpu BoundCheck).
func TestMismatchedDynamicSizesAreErrors(t *testing.T) {
	needTools(t)
	p, _ := compileSource(t, `func.func @add(%x: tensor<?x?xf32>, %y: tensor<?xf32>) -> tensor<?x?xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @mm(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
func.func @imm(%a: tensor<?x?xi32>, %b: tensor<?x?xi32>) -> tensor<?x?xi32> {
  %0 = "graph.matmul"(%a, %b) : (tensor<?x?xi32>, tensor<?x?xi32>) -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}`)
	tensor := func(elem ir.Type) func(shape ...int64) *interp.Tensor {
		return func(shape ...int64) *interp.Tensor {
			x, err := interp.NewTensor(elem, shape)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	f32, i32 := tensor(ir.F32), tensor(ir.I32)
	for _, c := range []struct {
		fn   string
		args []*interp.Tensor
		want string // "" for success
	}{
		{"add", []*interp.Tensor{f32(3, 5), f32(5)}, ""},
		{"add", []*interp.Tensor{f32(3, 5), f32(1)}, ""},
		{"add", []*interp.Tensor{f32(3, 1), f32(7)}, ""},
		{"add", []*interp.Tensor{f32(3, 5), f32(4)}, "error: 'arith.select': sizes 5 and 4 do not broadcast"},
		{"add", []*interp.Tensor{f32(3, 1), f32(0)}, ""}, // 1 against 0 broadcasts to 0
		{"add", []*interp.Tensor{f32(3, 0), f32(1)}, ""},
		{"add", []*interp.Tensor{f32(3, 0), f32(2)}, "sizes 0 and 2 do not broadcast"},
		{"mm", []*interp.Tensor{f32(30, 50), f32(50, 61)}, ""},
		{"mm", []*interp.Tensor{f32(3, 0), f32(0, 4)}, ""},
		{"mm", []*interp.Tensor{f32(3, 5), f32(4, 6)}, "6:8: error: 'loop.parallel': matmul inner dimensions differ: lhs has 5 columns, rhs 4 rows"},
		{"mm", []*interp.Tensor{f32(3, 5), f32(6, 6)}, "matmul inner dimensions differ: lhs has 5 columns, rhs 6 rows"},
		// The generic path (integers): the loops' bounds against the buffers.
		{"imm", []*interp.Tensor{i32(3, 5), i32(5, 6)}, ""},
		{"imm", []*interp.Tensor{i32(3, 50000), i32(4, 6)}, "10:8: error: 'loop.parallel': sizes differ: the loop over [0, 50000) indexes dimension 0 of a [4 6] operand"},
	} {
		_, err := p.Run(c.fn, c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("@%s %v: %v", c.fn, c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("@%s %v: got %v, want an error containing %q", c.fn, c.args, err, c.want)
		}
	}
}

// TestTransposedAndBatchedMatmulsAreBlocked: products whose operands are
// transposed views (x·Wᵀ, Aᵀ·B) or batched on both sides (attention's
// q·kᵀ and p·v, with one or two batch dimensions), and a 2-D A against a
// batched B, run on the register-blocked kernel and give the
// interpreter's results, ragged sizes, f64 and f16/bf16 operands (widened
// to f32 as they are packed) included.
func TestTransposedAndBatchedMatmulsAreBlocked(t *testing.T) {
	needTools(t)
	tt := func(elem string, dims ...int) string {
		s := "tensor<"
		for _, d := range dims {
			s += fmt.Sprintf("%dx", d)
		}
		return s + elem + ">"
	}
	for _, c := range []struct {
		name       string
		a, b       []int
		ta, tb     bool // transpose the last two dims of the argument first
		elem, perm string
	}{
		{name: "x·Wᵀ", a: []int{37, 29}, b: []int{41, 29}, tb: true, elem: "f32", perm: "[1, 0]"},
		{name: "Aᵀ·B", a: []int{29, 37}, b: []int{29, 41}, ta: true, elem: "f32", perm: "[1, 0]"},
		{name: "Aᵀ·Bᵀ f64", a: []int{9, 30}, b: []int{17, 9}, ta: true, tb: true, elem: "f64", perm: "[1, 0]"},
		{name: "bmm", a: []int{3, 25, 33}, b: []int{3, 33, 18}, elem: "f32"},
		{name: "q·kᵀ", a: []int{2, 3, 17, 8}, b: []int{2, 3, 19, 8}, tb: true, elem: "f32", perm: "[0, 1, 3, 2]"},
		{name: "A·B batched", a: []int{26, 7}, b: []int{4, 7, 20}, elem: "f64"},
		{name: "bf16 x·Wᵀ", a: []int{37, 29}, b: []int{41, 29}, tb: true, elem: "bf16", perm: "[1, 0]"},
		{name: "f16 bmm", a: []int{2, 25, 33}, b: []int{2, 33, 18}, elem: "f16"},
	} {
		at, bt := tt(c.elem, c.a...), tt(c.elem, c.b...)
		lhs, rhs := c.a, c.b
		var pre string
		x, y := "%a", "%b"
		swap := func(s []int) []int {
			s = append([]int(nil), s...)
			s[len(s)-1], s[len(s)-2] = s[len(s)-2], s[len(s)-1]
			return s
		}
		if c.ta {
			lhs = swap(c.a)
			pre += fmt.Sprintf("  %%ta = \"graph.transpose\"(%%a) <{perm = %s}> : (%s) -> %s\n", c.perm, at, tt(c.elem, lhs...))
			x = "%ta"
		}
		if c.tb {
			rhs = swap(c.b)
			pre += fmt.Sprintf("  %%tb = \"graph.transpose\"(%%b) <{perm = %s}> : (%s) -> %s\n", c.perm, bt, tt(c.elem, rhs...))
			y = "%tb"
		}
		out := append(append([]int(nil), rhs[:len(rhs)-2]...), lhs[len(lhs)-2], rhs[len(rhs)-1])
		if len(lhs) > len(rhs) {
			out = append(append([]int(nil), lhs[:len(lhs)-1]...), rhs[len(rhs)-1])
		}
		src := fmt.Sprintf("func.func @main(%%a: %s, %%b: %s) -> %s {\n%s  %%0 = \"graph.matmul\"(%s, %s) : (%s, %s) -> %s\n  return %%0 : %s\n}\n",
			at, bt, tt(c.elem, out...), pre, x, y, tt(c.elem, lhs...), tt(c.elem, rhs...), tt(c.elem, out...), tt(c.elem, out...))
		p, graph := compileSource(t, src)
		if !strings.Contains(p.LLVM, "main_kernel_0_pack_packed(") {
			t.Errorf("%s: no register-blocked matmul kernel:\n%s", c.name, src)
		}
		for seed := range int64(2) {
			// 16: the row blocks in groups; k blocks of 5 (the batches'
			// partial sums in their own slots).
			p.Workers, p.MatmulKC = []int{0, 16}[seed], []int{0, 5}[seed]
			check(t, p, graph, "main", seed, nil)
		}
	}
}

// TestIntermediateBuffersAreReused: a call's buffers that its results do
// not use are handed to the next call; results stay the caller's — a
// later call does not overwrite them — and every call is right, also
// when a result is a view (reshape) of a buffer.
func TestIntermediateBuffersAreReused(t *testing.T) {
	needTools(t)
	p, graph := compileSource(t, `func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<128xf32>) {
  %0 = "graph.matmul"(%x, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = "graph.tanh"(%0) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = "graph.matmul"(%1, %w) : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %3 = "graph.exp"(%2) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %4 = "graph.reshape"(%3) <{shape = array<i64: 128>}> : (tensor<8x16xf32>) -> tensor<128xf32>
  return %2, %4 : tensor<8x16xf32>, tensor<128xf32>
}`)
	checkKeptResults(t, p, graph, 4)
}

// TestScalarResultsStayTheCallers: a rank-0 result computed into a
// buffer (a training step's loss) is the caller's as a larger result is:
// the next call neither reuses its buffer nor overwrites it.
func TestScalarResultsStayTheCallers(t *testing.T) {
	needTools(t)
	p, graph := compileSource(t, `func.func @main(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.reduce_sum"(%0) <{axes = [0, 1], keepdims = false}> : (tensor<4x8xf32>) -> tensor<f32>
  %2 = "graph.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1, %2 : tensor<f32>, tensor<4x8xf32>
}`)
	for call, got := range checkKeptResults(t, p, graph, 3) {
		if len(got[0].Shape()) != 0 {
			t.Errorf("call %d: result 0 has shape %v, want a scalar", call, got[0].Shape())
		}
	}
}

// TestGatherIndicesOutOfRangeAreErrors: indices computed from data are
// checked in the kernel (targets/cpu checked.go): out of range, the call
// fails with the gather's location instead of reading past the buffer;
// in range, negative ones included, it gives the interpreter's result.
func TestGatherIndicesOutOfRangeAreErrors(t *testing.T) {
	needTools(t)
	p, graph := compileSource(t, `func.func @main(%a: tensor<6x4xf32>, %i: tensor<5xi64>) -> tensor<5x4xf32> {
  %0 = "graph.gather"(%a, %i) <{axis = 0 : i64}> : (tensor<6x4xf32>, tensor<5xi64>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}`)
	if !strings.Contains(p.LLVM, "outofrange") {
		t.Error("the gather's load is not checked")
	}
	data := make([]float32, 24)
	for i := range data {
		data[i] = float32(i)
	}
	a, err := interp.FromData(ir.F32, []int64{6, 4}, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		idx  []int64
		want string
	}{
		{[]int64{5, 0, -1, 3, -6}, ""},
		{[]int64{5, 0, 100000000, 3, 2}, "2:8: error: 'loop.parallel': an index is out of range: 100000000 for dimension 0 of size 6"},
		{[]int64{1, -7, 0, 0, 0}, "an index is out of range: -1 for dimension 0 of size 6"},
	} {
		idx, err := interp.FromData(ir.I64, []int64{5}, c.idx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run("main", []*interp.Tensor{a, idx})
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: got %v, want an error containing %q", c.idx, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", c.idx, err)
		}
		want, err := interp.New(graph).Call("main", a, idx)
		if err != nil {
			t.Fatal(err)
		}
		if err := passtest.Compare(got[0], want[0]); err != nil {
			t.Errorf("%v: %v", c.idx, err)
		}
	}
}

// TestReleasedResultsAreReused: a released result's memory becomes a
// later call's result; results that share storage with another result or
// with an input, inputs, and a tensor released twice are left alone, and
// every call stays right.
func TestReleasedResultsAreReused(t *testing.T) {
	needTools(t)
	p, graph := compileSource(t, `func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<4x8xf32>) {
  %0 = "graph.exp"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "graph.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "graph.reshape"(%1) <{shape = array<i64: 32>}> : (tensor<4x8xf32>) -> tensor<32xf32>
  return %0, %1, %2, %x : tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<4x8xf32>
}`)
	in := interp.New(graph)
	ft, err := interp.FuncType(in.Func("main"))
	if err != nil {
		t.Fatal(err)
	}
	ptr := func(x *interp.Tensor) *float32 { return &x.Data().([]float32)[0] }
	call := func(seed int64) ([]*interp.Tensor, []interp.Value) {
		t.Helper()
		args, err := interp.RandomInputs(ft, seed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := in.Call("main", args...)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run("main", []*interp.Tensor{args[0].(*interp.Tensor)})
		if err != nil {
			t.Fatal(err)
		}
		return got, want
	}
	same := func(what string, got []*interp.Tensor, want []interp.Value) {
		t.Helper()
		for i := range want {
			if err := passtest.Compare(got[i], want[i]); err != nil {
				t.Errorf("%s, result %d: %v", what, i, err)
			}
		}
	}
	got1, want1 := call(1)
	input := got1[3]
	inputBefore := append([]float32(nil), input.Data().([]float32)...)
	p.Release(got1...)
	got2, want2 := call(2)
	same("the call after Release", got2, want2)
	if ptr(got2[0]) != ptr(got1[0]) {
		t.Error("the released result's memory was not reused")
	}
	for i, r := range got2[:3] {
		if ptr(r) == ptr(input) {
			t.Errorf("result %d of the second call is the first call's input", i)
		}
	}
	if ptr(got2[1]) == ptr(got1[1]) {
		t.Error("a result sharing storage with another result was reused")
	}
	same("the first call's shared results, after the second call", got1[1:3], want1[1:3])
	if got := input.Data().([]float32); !slices.Equal(got, inputBefore) {
		t.Error("a released input was overwritten")
	}
	p.Release(got1[0]) // again: its memory is got2[0]'s now
	got3, want3 := call(3)
	same("the third call", got3, want3)
	same("the second call's results, after the third call", got2, want2)
	if ptr(got3[0]) == ptr(got2[0]) {
		t.Error("a result released twice was reused twice")
	}
}

// checkKeptResults calls p's main on fresh random inputs calls times,
// keeping every result, and compares each with the interpreter's only
// after the last call: a result whose memory a later call reused or
// overwrote fails. It returns the kept results.
func checkKeptResults(t *testing.T, p *cpu.Program, graph *ir.Operation, calls int) [][]*interp.Tensor {
	t.Helper()
	in := interp.New(graph)
	ft, err := interp.FuncType(in.Func("main"))
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]*interp.Tensor
	var wants [][]interp.Value
	for seed := range int64(calls) {
		args, err := interp.RandomInputs(ft, seed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := in.Call("main", args...)
		if err != nil {
			t.Fatal(err)
		}
		tensors := make([]*interp.Tensor, len(args))
		for i, a := range args {
			tensors[i] = a.(*interp.Tensor)
		}
		got, err := p.Run("main", tensors)
		if err != nil {
			t.Fatal(err)
		}
		kept, wants = append(kept, got), append(wants, want)
	}
	for call := range kept {
		for i := range wants[call] {
			if err := passtest.Compare(kept[call][i], wants[call][i]); err != nil {
				t.Errorf("call %d result %d, checked after the last call: %v", call, i, err)
			}
		}
	}
	return kept
}
