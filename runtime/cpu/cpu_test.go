package cpu_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/interp"

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

var _ = fmt.Sprint
