package gpu_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

// atomicKernel is a kernel with a global f32 buffer %g, a workgroup one
// %w, an index %i, an f32 %v and an i32 %n, and body.
func atomicKernel(body string) string {
	return `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%g: memref<?xf32>, %h: memref<8xf16>, %i: index, %v: f32, %n: i32) workgroup(%w : memref<8xf32, 3>) kernel {
      ` + body + `
      gpu.return
    }
  }
}`
}

// TestAtomicAddVerify checks the operands gpu.atomic_add accepts and the
// errors of those it refuses.
func TestAtomicAddVerify(t *testing.T) {
	m, err := ir.Parse(newCtx(), atomicKernel(`"gpu.atomic_add"(%g, %i, %v) : (memref<?xf32>, index, f32) -> ()
      "gpu.atomic_add"(%g, %i, %v, %v) : (memref<?xf32>, index, f32, f32) -> ()`), ir.ParseOptions{})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"workgroup", `"gpu.atomic_add"(%w, %i, %v) : (memref<8xf32, 3>, index, f32) -> ()`, "operand #0 must be in global memory"},
		{"elem", `"gpu.atomic_add"(%h, %i, %v) : (memref<8xf16>, index, f32) -> ()`, "operand #0 must hold f32, not f16"},
		{"index", `"gpu.atomic_add"(%g, %n, %v) : (memref<?xf32>, i32, f32) -> ()`, "operand #1 must be index, not i32"},
		{"value", `"gpu.atomic_add"(%g, %i, %n) : (memref<?xf32>, index, i32) -> ()`, "operand #2 must be f32, not i32"},
		{"second", `"gpu.atomic_add"(%g, %i, %v, %n) : (memref<?xf32>, index, f32, i32) -> ()`, "operand #3 must be f32, not i32"},
		{"three", `"gpu.atomic_add"(%g, %i, %v, %v, %v) : (memref<?xf32>, index, f32, f32, f32) -> ()`, "expects a memref, an index and 1 or 2 values and no results, not 5 operands and 0 results"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), atomicKernel(c.body)); !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
}
