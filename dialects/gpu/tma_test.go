package gpu_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

// tmaKernel is a kernel whose argument %map has the tensor-map attribute
// attr and type mapType, with workgroup buffers %dst and %bars, i32 %x
// and %y, and body.
func tmaKernel(mapType, attr, body string) string {
	return `module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%map: ` + mapType + ` {gpu.tensor_map = ` + attr + `}, %x: i32, %y: i32) workgroup(%dst : memref<8192xbf16, 3>, %bars : memref<4xi64, 3>) kernel {
      %i = arith.constant 0 : index
      %n = arith.constant 16384 : i32
      ` + body + `
      gpu.return
    }
  }
}`
}

// TestTMAVerify checks the operands and tensor maps gpu.tma_load and
// gpu.mbarrier_expect_tx accept, the errors of those they refuse, and
// that the generic form reads back unchanged.
func TestTMAVerify(t *testing.T) {
	const attr = `{box = array<i64: 128, 64>, inner = array<i64: 72>, swizzle = 128 : i64}`
	const load = `"gpu.tma_load"(%dst, %i, %bars, %i, %map, %x, %y) : (memref<8192xbf16, 3>, index, memref<4xi64, 3>, index, memref<?xbf16>, i32, i32) -> ()`
	const ok = `"gpu.mbarrier_expect_tx"(%bars, %i, %n) : (memref<4xi64, 3>, index, i32) -> ()
      ` + load
	m, err := ir.Parse(newCtx(), tmaKernel("memref<?xbf16>", attr, ok), ir.ParseOptions{})
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
	for _, c := range []struct{ name, mapType, attr, body, want string }{
		{"coords", "memref<?xbf16>", attr, `"gpu.tma_load"(%dst, %i, %bars, %i, %map, %x) : (memref<8192xbf16, 3>, index, memref<4xi64, 3>, index, memref<?xbf16>, i32) -> ()`,
			"has 1 coordinates for a tensor map of rank 2"},
		{"coord-type", "memref<?xbf16>", attr, `"gpu.tma_load"(%dst, %i, %bars, %i, %map, %x, %i) : (memref<8192xbf16, 3>, index, memref<4xi64, 3>, index, memref<?xbf16>, i32, index) -> ()`,
			"coordinate 1 must be i32, not index"},
		{"elem", "memref<?xf16>", attr, `"gpu.tma_load"(%dst, %i, %bars, %i, %map, %x, %y) : (memref<8192xbf16, 3>, index, memref<4xi64, 3>, index, memref<?xf16>, i32, i32) -> ()`,
			"copies f16 elements into a buffer of bf16"},
		{"box-fits", "memref<?xbf16>", `{box = array<i64: 256, 64>, inner = array<i64: 72>, swizzle = 128 : i64}`, load,
			"a box of 16384 elements does not fit the 8192 of the destination"},
		{"swizzle-span", "memref<?xbf16>", `{box = array<i64: 64, 128>, inner = array<i64: 128>, swizzle = 128 : i64}`, load,
			"inner extent of 256 bytes must be a multiple of 16, and at most the swizzle span 128"},
		{"stride", "memref<?xbf16>", `{box = array<i64: 128, 64>, inner = array<i64: 70>, swizzle = 128 : i64}`, load,
			"rows of 140 bytes"},
		{"rank", "memref<?xbf16>", `{box = array<i64: 128, 64>, inner = array<i64: 72, 2>, swizzle = 128 : i64}`, load,
			"inner one fewer entries than box"},
		{"whole-rows", "memref<100xbf16>", attr, strings.ReplaceAll(load, "memref<?xbf16>", "memref<100xbf16>"),
			"a buffer of 100 elements is not whole slices of [72]"},
		{"other-use", "memref<?xbf16>", attr, load + `
      "gpu.cp_async"(%dst, %i, %map, %i, %x) <{bytes = 16 : i64}> : (memref<8192xbf16, 3>, index, memref<?xbf16>, index, i32) -> ()`,
			"only gpu.tma_load reads, not gpu.cp_async"},
		{"expect-bytes", "memref<?xbf16>", attr, `"gpu.mbarrier_expect_tx"(%bars, %i, %i) : (memref<4xi64, 3>, index, index) -> ()`,
			"operand #2 must be i32, not index"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), tmaKernel(c.mapType, c.attr, c.body)); !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
