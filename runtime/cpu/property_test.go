package cpu_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/cpu"
	"github.com/strata-ir/strata/runtime/interp"
	target "github.com/strata-ir/strata/targets/cpu"
)

// TestRandomProgramsMatchTheInterpreter draws graph programs with
// passtest's rapid generator (every op family, f64/f32/f16/bf16 and
// integers, ranks up to 3), lowers each with lower-to-loop, compiles them
// all into one library (one run of opt, llc and the linker) and checks
// that each gives the interpreter's results on the graph, within the GPU
// backend's tolerances (passtest.Compare), on two calls, with arguments
// of one type passed as one tensor in every other program, and without
// writing an argument.
func TestRandomProgramsMatchTheInterpreter(t *testing.T) {
	needTools(t)
	n := 120
	if testing.Short() {
		n = 40
	}
	for _, cfg := range []passtest.Config{{MaxDim: 5, MaxOps: 8}, {MaxDim: 40, MaxOps: 6, Floats: []ir.Type{ir.F32}}} {
		checkBatch(t, passtest.GraphProgram(cfg), n/2)
	}
	// Matmuls with epilogues, for the register-blocked kernel (which the
	// programs above hardly reach), in k blocks of 1 to 3 steps for three
	// programs in four (Program.MatmulKC). Four ops at most: chains of
	// five f32 matmuls differ from the interpreter's unfused sums by more
	// than the elementwise tolerance through rounding alone (identically
	// for every k block).
	matmuls := passtest.Config{MaxDim: 30, MaxOps: 4, MaxRank: 3, Floats: []ir.Type{ir.F32, ir.F64},
		Families: []string{"matmul", "matmul", "matmul", "matmul", "unary", "binary"}}
	if blocked := checkBatch(t, passtest.GraphProgram(matmuls), n/2); blocked == 0 {
		t.Error("no program of the matmul batch has a register-blocked matmul")
	}
}

// checkBatch compiles n programs of gen as one library, compares each
// with the interpreter (matmuls in k blocks of 1 to 3 steps for three
// programs in four) and returns how many register-blocked matmul kernels
// the library has.
func checkBatch(t *testing.T, gen interface {
	Example(...int) *passtest.Program
}, n int) int {
	t.Helper()
	ctx := dialects.NewContext()
	combined, err := ir.ParseString(ctx, "module {\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	body := combined.Region(0).Front()
	type prog struct {
		src   *passtest.Program
		graph *ir.Operation
		name  string
	}
	var progs []prog
	for i := range n {
		p := gen.Example(i)
		graph, err := p.Parse(ctx)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", i, err, p)
		}
		lowered, err := p.Parse(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pm, err := passes.Parse("builtin.module(lower-to-loop)")
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.Run(ctx, lowered); err != nil {
			t.Fatalf("seed %d: lower-to-loop: %v\n%s", i, err, p)
		}
		if _, err := target.Translate(lowered); err != nil {
			t.Errorf("seed %d: %v\nprogram:\n%s", i, err, p)
			continue
		}
		name := fmt.Sprintf("p%d", i)
		for _, op := range lowered.Region(0).Front().Ops() {
			if op.Name() == "func.func" && ir.SymbolName(op) == p.Func {
				op.Remove()
				op.SetProperty(ir.SymNameAttr, ir.StringAttr{Value: name})
				body.Append(op)
			}
		}
		progs = append(progs, prog{p, graph, name})
	}
	lib, err := cpu.Compile(combined)
	if err != nil {
		t.Fatal(err)
	}
	blocked := strings.Count(lib.LLVM, "_pack_packed(")
	t.Logf("%d register-blocked matmul kernels", blocked)
	compared, aliased := 0, 0
	defer func() {
		t.Logf("%d of %d programs compared (the others fail in the interpreter); %d arguments passed as another", compared, len(progs), aliased)
		if compared < len(progs)/2 {
			t.Errorf("only %d of %d programs ran in the interpreter", compared, len(progs))
		}
	}()
	for i, p := range progs {
		in := interp.New(p.graph)
		ft, err := interp.FuncType(in.Func(p.src.Func))
		if err != nil {
			t.Fatal(err)
		}
		args, err := interp.RandomInputs(ft, int64(i))
		if err != nil {
			t.Fatal(err)
		}
		// In every other program, arguments of one type are one tensor:
		// the library must bind a buffer listed twice as it binds two.
		if i%2 == 1 {
			for j := range args {
				for k := range j {
					if ft.Inputs[j].String() == ft.Inputs[k].String() {
						args[j] = args[k]
						aliased++
						break
					}
				}
			}
		}
		want, err := in.Call(p.src.Func, args...)
		if err != nil {
			continue // the program fails in the interpreter (out of memory, …)
		}
		compared++
		tensors := make([]*interp.Tensor, len(args))
		for j, a := range args {
			tensors[j] = a.(*interp.Tensor)
		}
		before := make([][]uint64, len(tensors))
		for j, x := range tensors {
			before[j] = x.Bits()
		}
		lib.MatmulKC = i % 4
		// Twice: the second call runs in the buffers the first left.
		for call := range 2 {
			got, err := lib.Run(p.name, tensors)
			if err != nil {
				t.Errorf("%s: %v\nprogram:\n%s", p.name, err, p.src)
				break
			}
			for j := range want {
				if err := passtest.Compare(got[j], want[j]); err != nil {
					t.Errorf("%s call %d result %d: %v\nprogram:\n%s", p.name, call+1, j, err, p.src)
					break
				}
			}
		}
		for j, x := range tensors {
			if !slices.Equal(x.Bits(), before[j]) {
				t.Errorf("%s wrote its argument %d\nprogram:\n%s", p.name, j, p.src)
			}
		}
	}
	return blocked
}
