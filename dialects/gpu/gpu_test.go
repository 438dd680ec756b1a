package gpu_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

func newCtx() *ir.Context {
	return ir.NewContext(builtin.Dialect, funcs.Dialect, arith.Dialect, gpu.Dialect)
}

// roundTrips are programs whose generic form must equal mlir-opt's.
var roundTrips = []struct{ name, src string }{
	{"targets", `gpu.module @a [#nvvm.target<chip = "sm_90">, #nvvm.target] {
}
gpu.module @b [#rocdl.target]  attributes {foo = 1 : i64} {
}`},
	{"all ops", `module attributes {gpu.container_module} {
  gpu.module @mod {
    gpu.func @k(%arg0: memref<?xf32>, %arg1: index) workgroup(%buf : memref<32xf32, 3>) kernel {
      %t = gpu.thread_id x
      %tb = gpu.thread_id y upper_bound 64
      %b = gpu.block_id y
      %bd = gpu.block_dim z
      %gd = gpu.grid_dim x
      %c = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %f = arith.constant 1.0 : f32
      %r, %v = gpu.shuffle xor %f, %c, %w : f32
      %r2, %v2 = gpu.shuffle down %f, %c, %w : f32
      %r3, %v3 = gpu.shuffle up %c, %c, %w : i32
      %r4, %v4 = gpu.shuffle idx %f, %c, %w : f32
      gpu.barrier
      gpu.return
    }
    gpu.func @helper(%x: f32 {t.a}) -> f32 attributes {t.b = 1 : i64} {
      gpu.return %x : f32
    }
  }
  gpu.module @empty attributes {t.c} {
  }
  func.func @main(%a: memref<?xf32>, %n: index, %s: i32) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%a : memref<?xf32>, %n : index)
    gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) dynamic_shared_memory_size %s args(%a : memref<?xf32>, %n : index) {t.x}
    return
  }
}
`},
	{"i32 sizes", `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k() kernel {
      gpu.return
    }
  }
  func.func @main(%a: i32) {
    gpu.launch_func @m::@k blocks in (%a, %a, %a) threads in (%a, %a, %a) : i32 {t.x}
    return
  }
}
`},
	{"generic", `"builtin.module"() ({
  "gpu.module"() <{sym_name = "m"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> ()}> ({
    ^bb0(%arg0: memref<4xf32>, %arg1: memref<8xi32, 3>, %arg2: memref<2xf64, 3>):
      %0 = "gpu.thread_id"() <{dimension = #gpu<dim z>}> : () -> index
      "gpu.return"() : () -> ()
    }) {gpu.kernel, sym_name = "k", workgroup_attributions = 2 : i64} : () -> ()
    "gpu.module_end"() : () -> ()
  }) : () -> ()
}) {gpu.container_module} : () -> ()
`},
}

// valueName matches SSA value names and their result numbers.
var valueName = regexp.MustCompile(`%[A-Za-z0-9_$.-]+`)

// canonicalNames renames the values of a printed module %v0, %v1, ... in
// order of first appearance, anew in each function. mlir-opt numbers the
// values of sibling functions in one sequence in the generic form (starting
// from the last function), which our printer does not copy; functions are
// isolated, so the structure is what must match.
func canonicalNames(s string) string {
	var out strings.Builder
	names := map[string]string{}
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.Contains(line, `"gpu.func"()`) || strings.Contains(line, `"func.func"()`) {
			clear(names)
		}
		out.WriteString(valueName.ReplaceAllStringFunc(line, func(n string) string {
			if c, ok := names[n]; ok {
				return c
			}
			c := fmt.Sprintf("%%v%d", len(names))
			names[n] = c
			return c
		}))
	}
	return out.String()
}

// TestMatchesMLIROpt checks that our generic form is mlir-opt's (up to value
// names) and that mlir-opt reads our custom syntax to the same IR.
func TestMatchesMLIROpt(t *testing.T) {
	for _, c := range roundTrips {
		t.Run(c.name, func(t *testing.T) {
			m := mlirtest.Parse(t, newCtx(), c.src)
			if err := ir.Verify(m); err != nil {
				t.Fatal(err)
			}
			want := canonicalNames(mlirtest.MLIROpt(t, c.src, "--mlir-print-op-generic"))
			if got := canonicalNames(ir.Sprint(m, ir.PrintOptions{Generic: true})); got != want {
				t.Errorf("generic form differs from mlir-opt's\n--- ours\n%s--- mlir-opt\n%s", got, want)
			}
			pretty := ir.Sprint(m, ir.PrintOptions{})
			if got := canonicalNames(mlirtest.MLIROpt(t, pretty, "--mlir-print-op-generic")); got != want {
				t.Errorf("mlir-opt reads our custom syntax differently\n--- ours\n%s--- its generic form\n%s--- expected\n%s", pretty, got, want)
			}
		})
	}
}

// TestPrettyMatchesMLIROpt checks that our custom syntax is mlir-opt's,
// spacing included.
func TestPrettyMatchesMLIROpt(t *testing.T) {
	for _, c := range roundTrips {
		t.Run(c.name, func(t *testing.T) {
			m := mlirtest.Parse(t, newCtx(), c.src)
			want := mlirtest.MLIROpt(t, c.src)
			// Value names differ (mlir-opt names results after the op);
			// compare after our printer reads mlir-opt's text back.
			back := mlirtest.Parse(t, newCtx(), want)
			got, wantOurs := ir.Sprint(m, ir.PrintOptions{}), ir.Sprint(back, ir.PrintOptions{})
			if got != wantOurs {
				t.Errorf("got\n%s\nmlir-opt's, reprinted\n%s", got, wantOurs)
			}
			for _, line := range strings.Split(want, "\n") {
				if i := strings.Index(line, "gpu."); i >= 0 && !strings.Contains(got, strings.TrimSpace(line[i:])) && !strings.Contains(line, "%") {
					t.Errorf("mlir-opt line %q not in our output:\n%s", line, got)
				}
			}
		})
	}
}

const launchHost = `module attributes {gpu.container_module} {
  gpu.module @mod {
    gpu.func @k(%arg0: memref<?xf32>) kernel {
      gpu.return
    }
    gpu.func @nk(%arg0: memref<?xf32>) {
      gpu.return
    }
  }
  func.func @f(%a: memref<?xf32>, %b: memref<?xi32>, %s: index) {
    %c1 = arith.constant 1 : index
    LAUNCH
    return
  }
}
`

// verifyErrors are invalid programs with the message mlir-opt 19 gives,
// except where Strata is stricter (marked).
var verifyErrors = []struct{ name, src, want string }{
	{"launch arg count", launch(`gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>, %c1 : index)`),
		"got 2 kernel operands but expected 1"},
	{"launch arg type", launch(`gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%b : memref<?xi32>)`),
		"type of function argument 0 does not match"},
	{"launch not a kernel", launch(`gpu.launch_func @mod::@nk blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)`),
		"kernel function is missing the 'gpu.kernel' attribute"},
	{"launch no container", launch(`gpu.launch_func @nomod::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)`),
		"kernel container 'nomod' is undefined"},
	{"launch no kernel", launch(`gpu.launch_func @mod::@none blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)`),
		"kernel function '@mod::@none' is undefined"},
	{"launch without container attribute", strings.Replace(launch(`gpu.launch_func @mod::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)`), " attributes {gpu.container_module}", "", 1),
		"expected the closest surrounding module to have the 'gpu.container_module' attribute"},
	{"kernel returns", `gpu.module @m {
  gpu.func @k() -> f32 kernel {
    %c = arith.constant 1.0 : f32
    gpu.return %c : f32
  }
}`, "expected void return type for kernel function"},
	{"return count", `gpu.module @m {
  gpu.func @k() kernel {
    %c = arith.constant 1.0 : f32
    gpu.return %c : f32
  }
}`, "'gpu.return' op expected 0 result operands"},
	{"return type", `gpu.module @m {
  gpu.func @k() -> f32 {
    %c = arith.constant 1 : i32
    gpu.return %c : i32
  }
}`, "unexpected type `'i32'' for operand #0"},
	{"shuffle type", `gpu.module @m {
  gpu.func @k(%v: f16, %o: i32) kernel {
    %r, %ok = gpu.shuffle xor %v, %o, %o : f16
    gpu.return
  }
}`, "operand #0 must be i32, i64, f32 or f64, but got 'f16'"},
	{"return outside gpu.func", `func.func @f() {
  gpu.return
}`, "expects parent op 'gpu.func'"},
	{"gpu.module in a function", `func.func @f() {
  gpu.module @m {
  }
  return
}`, "symbol's parent must have the SymbolTable trait"},
	// Stricter than upstream: Strata has no gpu.launch, so indices and
	// barriers mean something only in a gpu.func.
	{"thread_id outside gpu.func", `func.func @f() -> index {
  %0 = gpu.thread_id x
  return %0 : index
}`, "must be nested in a 'gpu.func'"},
	{"empty targets", `gpu.module @m [] {
}`, "attribute 'targets' failed to satisfy constraint: array of GPU target attributes with at least 1 elements"},
	{"upper_bound of i32", `gpu.module @m {
  gpu.func @k() kernel {
    %0 = "gpu.thread_id"() <{dimension = #gpu<dim x>, upper_bound = 64 : i32}> : () -> index
    gpu.return
  }
}`, "attribute 'upper_bound' failed to satisfy constraint: index attribute"},
	{"barrier outside gpu.func", `func.func @f() {
  gpu.barrier
  return
}`, "must be nested in a 'gpu.func'"},
	// Stricter than upstream, which accepts any memref: workgroup memory
	// is memory space 3.
	{"workgroup memory space", `gpu.module @m {
  gpu.func @k() workgroup(%b : memref<4xf32>) kernel {
    gpu.return
  }
}`, "expected memref type in address space 3 in workgroup attribution, got memref<4xf32>"},
	{"gpu.func outside gpu.module", `func.func @f() {
  return
}
gpu.func @k() kernel {
  gpu.return
}`, "expects parent op 'gpu.module'"},
}

func launch(op string) string { return strings.Replace(launchHost, "LAUNCH", op, 1) }

func TestVerifyErrors(t *testing.T) {
	for _, c := range verifyErrors {
		t.Run(c.name, func(t *testing.T) {
			got := mlirtest.VerifyError(t, newCtx(), c.src)
			if !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
}

// TestBuilders builds a kernel and its launch with the builders and checks
// that the result verifies and prints as mlir-opt reads it.
func TestBuilders(t *testing.T) {
	ctx := newCtx()
	loc := ir.UnknownLoc{}
	top := mlirtest.Parse(t, ctx, "module {\n}\n")
	gpu.MarkContainer(top)
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointToEnd(top.Region(0).Front())
	mod := gpu.NewModule(b, loc, "kernels")
	b.SetInsertionPointBefore(gpu.Body(mod).Terminator())
	mem := ir.MemRefOf([]int64{ir.Dynamic}, ir.F32)
	k, entry := gpu.NewKernel(b, loc, "k", []ir.Type{mem, ir.Index})
	buf := gpu.AddWorkgroupBuffer(k, gpu.WorkgroupMemRef(256, ir.F32))
	b.SetInsertionPointToEnd(entry)
	gpu.ThreadID(b, loc, "x")
	gpu.BlockID(b, loc, "y")
	gpu.BlockDim(b, loc, "z")
	gpu.GridDim(b, loc, "x")
	gpu.Barrier(b, loc)
	c := arith.ConstantInt(b, loc, 1, ir.I32)
	val, valid := gpu.Shuffle(b, loc, "xor", arith.ConstantFloat(b, loc, 1, ir.F32), c, c)
	gpu.Return(b, loc)

	ft := ir.FunctionOf([]ir.Type{mem, ir.Index}, nil)
	b.SetInsertionPointToEnd(top.Region(0).Front())
	_, host := funcs.NewFunc(b, "main", ft, loc)
	b.SetInsertionPointToEnd(host)
	one := arith.ConstantIndex(b, loc, 1)
	n := host.Argument(1)
	gpu.LaunchFunc(b, loc, gpu.KernelRef("kernels", "k"), [3]*ir.Value{n, one, one}, [3]*ir.Value{one, one, one},
		host.Arguments(), arith.ConstantInt(b, loc, 64, ir.I32))
	funcs.Return(b, loc)

	if err := ir.Verify(top); err != nil {
		t.Fatalf("%v\n%s", err, top)
	}
	if got := gpu.WorkgroupBuffers(k); len(got) != 1 || got[0] != buf {
		t.Errorf("WorkgroupBuffers = %v, want the added buffer", got)
	}
	if val.Type() != ir.F32 || valid.Type() != ir.I1 {
		t.Errorf("shuffle results %s, %s", val.Type(), valid.Type())
	}
	src := ir.Sprint(top, ir.PrintOptions{})
	want := canonicalNames(mlirtest.MLIROpt(t, src, "--mlir-print-op-generic"))
	if got := canonicalNames(ir.Sprint(top, ir.PrintOptions{Generic: true})); got != want {
		t.Errorf("generic form differs from mlir-opt's\n--- ours\n%s--- mlir-opt\n%s", got, want)
	}
}
