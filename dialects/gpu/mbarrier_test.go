package gpu_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

// mbarrierKernel is a kernel with the barriers %bars of type bars, an
// index %i, i32 %n and %p, and body.
func mbarrierKernel(bars, body string) string {
	return `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%i: index, %n: i32, %p: i32) workgroup(%bars : ` + bars + `) kernel {
      ` + body + `
      gpu.return
    }
  }
}`
}

// TestMbarrierVerify checks the operands the mbarrier ops and
// gpu.setmaxnreg accept, the errors of those they refuse, and that the
// generic form reads back unchanged.
func TestMbarrierVerify(t *testing.T) {
	const ok = `"gpu.mbarrier_init"(%bars, %i, %n) : (memref<8xi64, 3>, index, i32) -> ()
      "gpu.mbarrier_arrive"(%bars, %i) : (memref<8xi64, 3>, index) -> ()
      "gpu.mbarrier_wait"(%bars, %i, %p) : (memref<8xi64, 3>, index, i32) -> ()
      "gpu.setmaxnreg"() <{increase, regs = 232 : i64}> : () -> ()
      "gpu.setmaxnreg"() <{regs = 40 : i64}> : () -> ()`
	m, err := ir.Parse(newCtx(), mbarrierKernel("memref<8xi64, 3>", ok), ir.ParseOptions{})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Fatal(err)
	}
	generic := ir.Sprint(m, ir.PrintOptions{Generic: true})
	m2, err := ir.Parse(newCtx(), generic, ir.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again := ir.Sprint(m2, ir.PrintOptions{Generic: true}); again != generic {
		t.Errorf("generic form does not round-trip:\n%s\n---\n%s", generic, again)
	}
	for _, c := range []struct{ name, bars, body, want string }{
		{"global", "memref<8xi64, 3>", `%g = arith.constant 0 : index
      "gpu.mbarrier_arrive"(%g, %i) : (index, index) -> ()`, "the barriers must be a 1-D memref, not index"},
		{"elem", "memref<8xi32, 3>", `"gpu.mbarrier_arrive"(%bars, %i) : (memref<8xi32, 3>, index) -> ()`, "the barriers must be i64 words, not i32"},
		{"index", "memref<8xi64, 3>", `"gpu.mbarrier_arrive"(%bars, %n) : (memref<8xi64, 3>, i32) -> ()`, "operand #1 must be index, not i32"},
		{"count", "memref<8xi64, 3>", `"gpu.mbarrier_init"(%bars, %i, %i) : (memref<8xi64, 3>, index, index) -> ()`, "operand #2 must be i32, not index"},
		{"parity-missing", "memref<8xi64, 3>", `"gpu.mbarrier_wait"(%bars, %i) : (memref<8xi64, 3>, index) -> ()`, "expects 3 operands and no results, not 2 and 0"},
		{"regs", "memref<8xi64, 3>", `"gpu.setmaxnreg"() <{regs = 20 : i64}> : () -> ()`, "'regs' to be a multiple of 8 from 24 to 256, not 20"},
		{"regs-step", "memref<8xi64, 3>", `"gpu.setmaxnreg"() <{regs = 100 : i64}> : () -> ()`, "not 100"},
		{"increase", "memref<8xi64, 3>", `"gpu.setmaxnreg"() <{increase = 1 : i64, regs = 232 : i64}> : () -> ()`, "'increase' to be a unit attribute"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), mbarrierKernel(c.bars, c.body)); !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
	outside := `func.func @f(%b: memref<8xi64, 3>, %i: index) {
  "gpu.mbarrier_arrive"(%b, %i) : (memref<8xi64, 3>, index) -> ()
  return
}`
	if got := mlirtest.VerifyError(t, newCtx(), outside); !strings.Contains(got, "must be nested in a 'gpu.func'") {
		t.Errorf("outside a kernel: got error %q", got)
	}
}
