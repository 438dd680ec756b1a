package togpu_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
)

// twice returns p with its function computing its body a second time on
// arguments of its own (appended to the first ones), returning both
// results: a program whose kernels come in pairs that are the same code,
// which no cleanup can merge (their buffers differ).
func twice(t *rapid.T, p *passtest.Program) *passtest.Program {
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	var fn *ir.Operation
	for _, o := range m.Region(0).Front().Ops() {
		if o.Name() == funcs.FuncOp && ir.SymbolName(o) == p.Func {
			fn = o
		}
	}
	entry := funcs.Body(fn)
	mapping := map[*ir.Value]*ir.Value{}
	for _, a := range entry.Arguments() {
		mapping[a] = entry.AddArgument(a.Type())
	}
	ret := entry.Terminator()
	results := ret.Operands()
	for _, o := range entry.Ops() {
		if o != ret {
			entry.InsertBefore(o.Clone(mapping), ret)
		}
	}
	for _, r := range ret.Operands() {
		results = append(results, mapping[r])
	}
	ret.SetOperands(results)
	if err := funcs.UpdateType(fn); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("the doubled program does not verify: %v", err)
	}
	return &passtest.Program{Source: ir.Sprint(m, ir.PrintOptions{Generic: true}), Func: p.Func}
}

// kernels lowers p with pipeline and returns the number of its kernels
// and of those that differ in more than their names, by their printed
// text.
func kernels(t *rapid.T, p *passtest.Program, pipeline string) (n, distinct int) {
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	pm, err := passes.Parse(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatalf("%s: %v\n%s", pipeline, err, p)
	}
	texts := map[string]bool{}
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() != gpu.FuncOp {
			return true
		}
		n++
		name := ir.SymbolName(o)
		texts[ir.SymbolName(o.ParentOp())+" "+strings.ReplaceAll(o.GenericString(), `"`+name+`"`, `"K"`)] = true
		return false
	})
	return n, len(texts)
}

// TestDedupKernelsPreservesSemantics checks lower-to-gpu (which merges the
// kernels that are the same code) against the interpreter on programs that
// compute their body twice, on arguments of their own, and that it leaves
// exactly the kernels that differ in their printed text from those it
// makes without gpu-dedup-kernels.
func TestDedupKernelsPreservesSemantics(t *testing.T) {
	gen := passtest.GraphProgram(small)
	const (
		pipeline = "builtin.module(lower-to-gpu)"
		without  = "builtin.module(lower-to-loop," + togpu.PassName +
			",func.func(canonicalize,cse),gpu.module(gpu.func(expand-math,canonicalize,cse)))"
	)
	merged := 0
	rapid.Check(t, func(t *rapid.T) {
		two := twice(t, gen.Draw(t, "program"))
		if err := passtest.CheckSemantics(two, pipeline, 1); err != nil {
			t.Fatal(err)
		}
		n, distinct := kernels(t, two, pipeline)
		if n != distinct {
			t.Fatalf("%d kernels left, %d of them distinct\n%s", n, distinct, two)
		}
		n0, distinct0 := kernels(t, two, without)
		if n != distinct0 {
			t.Fatalf("%d kernels left, want the %d distinct ones of the %d made without %s\n%s", n, distinct0, n0, togpu.DedupKernelsPassName, two)
		}
		merged += n0 - n
	})
	if merged == 0 {
		t.Errorf("no kernel was merged in any program")
	}
}

// dedupSource is a module with four kernels: @k1 is @k0 under another
// name, @k2 differs from @k0 in a constant and @k3 in an attribute of the
// function.
const dedupSource = `"builtin.module"() ({
  "gpu.module"() <{sym_name = "m"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> ()}> ({
    ^bb0(%a: memref<4xf32>):
      %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
      "loop.store"(%c, %a, %i) : (f32, memref<4xf32>, index) -> ()
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k0"} : () -> ()
    "gpu.func"() <{function_type = (memref<4xf32>) -> ()}> ({
    ^bb0(%a: memref<4xf32>):
      %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
      "loop.store"(%c, %a, %i) : (f32, memref<4xf32>, index) -> ()
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k1"} : () -> ()
    "gpu.func"() <{function_type = (memref<4xf32>) -> ()}> ({
    ^bb0(%a: memref<4xf32>):
      %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c = "arith.constant"() <{value = 3.0 : f32}> : () -> f32
      "loop.store"(%c, %a, %i) : (f32, memref<4xf32>, index) -> ()
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k2"} : () -> ()
    "gpu.func"() <{function_type = (memref<4xf32>) -> ()}> ({
    ^bb0(%a: memref<4xf32>):
      %i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %c = "arith.constant"() <{value = 2.0 : f32}> : () -> f32
      "loop.store"(%c, %a, %i) : (f32, memref<4xf32>, index) -> ()
      "gpu.return"() : () -> ()
    }) {gpu.kernel, strata.other, sym_name = "k3"} : () -> ()
    "gpu.module_end"() : () -> ()
  }) : () -> ()
  "func.func"() <{function_type = (memref<4xf32>) -> (), sym_name = "f"}> ({
  ^bb0(%a: memref<4xf32>):
    %one = "arith.constant"() <{value = 1 : index}> : () -> index
    %n = "arith.constant"() <{value = 4 : index}> : () -> index
    gpu.launch_func @m::@k0 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<4xf32>)
    gpu.launch_func @m::@k1 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<4xf32>)
    gpu.launch_func @m::@k2 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<4xf32>)
    gpu.launch_func @m::@k3 blocks in (%one, %one, %one) threads in (%n, %one, %one) args(%a : memref<4xf32>)
    "func.return"() : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()`

// TestDedupKernelsMergesOnlyTheSame checks that gpu-dedup-kernels merges
// the kernel that is another under a new name, redirects its launch, and
// keeps the kernels that differ in a constant or a function attribute.
func TestDedupKernelsMergesOnlyTheSame(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, dedupSource, ir.ParseOptions{Filename: "dedup.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(" + togpu.DedupKernelsPassName + ")")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("the output does not verify: %v\n%s", err, m)
	}
	var names, launched []string
	m.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case gpu.FuncOp:
			names = append(names, ir.SymbolName(o))
		case gpu.LaunchFuncOp:
			launched = append(launched, o.Attr(gpu.KernelRefAttr).String())
		}
		return true
	})
	if got := strings.Join(names, " "); got != "k0 k2 k3" {
		t.Errorf("kernels left: %s, want k0 k2 k3\n%s", got, m)
	}
	if got := strings.Join(launched, " "); got != "@m::@k0 @m::@k0 @m::@k2 @m::@k3" {
		t.Errorf("launches: %s, want @m::@k0 @m::@k0 @m::@k2 @m::@k3", got)
	}
	// Once merged, nothing is left to merge.
	if n := togpu.DedupKernels(m); n != 0 {
		t.Errorf("a second run merged %d kernels", n)
	}
}

// TestDedupKernelsManyKernels checks the merge on a module of 48 kernels
// (hashed and compared on several goroutines, a share each): kernel i
// stores the constant i mod 5, so the first five are kept and every other
// launch goes to the first kernel of its constant.
func TestDedupKernelsManyKernels(t *testing.T) {
	const n, distinct = 48, 5
	var kernels, launches strings.Builder
	for i := range n {
		fmt.Fprintf(&kernels, `    "gpu.func"() <{function_type = (memref<4xf32>) -> ()}> ({
    ^bb0(%%a: memref<4xf32>):
      %%i = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %%c = "arith.constant"() <{value = %d.0 : f32}> : () -> f32
      "loop.store"(%%c, %%a, %%i) : (f32, memref<4xf32>, index) -> ()
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k%d"} : () -> ()
`, i%distinct, i)
		fmt.Fprintf(&launches, "    gpu.launch_func @m::@k%d blocks in (%%one, %%one, %%one) threads in (%%n, %%one, %%one) args(%%a : memref<4xf32>)\n", i)
	}
	src := `"builtin.module"() ({
  "gpu.module"() <{sym_name = "m"}> ({
` + kernels.String() + `    "gpu.module_end"() : () -> ()
  }) : () -> ()
  "func.func"() <{function_type = (memref<4xf32>) -> (), sym_name = "f"}> ({
  ^bb0(%a: memref<4xf32>):
    %one = "arith.constant"() <{value = 1 : index}> : () -> index
    %n = "arith.constant"() <{value = 4 : index}> : () -> index
` + launches.String() + `    "func.return"() : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()`
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "many.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if got := togpu.DedupKernels(m); got != n-distinct {
		t.Errorf("%d kernels merged, want %d", got, n-distinct)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("the output does not verify: %v", err)
	}
	var names []string
	i := 0
	m.Walk(func(o *ir.Operation) bool {
		switch o.Name() {
		case gpu.FuncOp:
			names = append(names, ir.SymbolName(o))
		case gpu.LaunchFuncOp:
			if got, want := o.Attr(gpu.KernelRefAttr).String(), fmt.Sprintf("@m::@k%d", i%distinct); got != want {
				t.Errorf("launch %d: %s, want %s", i, got, want)
			}
			i++
		}
		return true
	})
	if got := strings.Join(names, " "); got != "k0 k1 k2 k3 k4" {
		t.Errorf("kernels left: %s, want k0 k1 k2 k3 k4", got)
	}
}
