package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

// wgmmaKernel is a kernel holding one gpu.wgmma with the given properties,
// A register count, B buffer type and accumulator count.
func wgmmaKernel(props string, nA int, buf string, nC, nD int) string {
	var ops, types, res []string
	for range nA {
		ops, types = append(ops, "%a"), append(types, "i32")
	}
	ops, types = append(ops, "%buf", "%off"), append(types, buf, "index")
	for range nC {
		ops, types = append(ops, "%c"), append(types, "f32")
	}
	for range nD {
		res = append(res, "f32")
	}
	return fmt.Sprintf(`module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @k(%%off: index) workgroup(%%buf : %[5]s) kernel {
      %%a = arith.constant 0 : i32
      %%c = arith.constant 0.0 : f32
      %%d:%[6]d = "gpu.wgmma"(%[1]s) <{%[2]s}> : (%[3]s) -> (%[4]s)
      "gpu.fence_proxy_async"() : () -> ()
      gpu.return
    }
  }
}`, strings.Join(ops, ", "), props, strings.Join(types, ", "), strings.Join(res, ", "), buf, nD)
}

// wgmmaSharedA is wgmmaKernel with A read from the workgroup buffer aBuf
// (the kernel's %abuf, at %off; a_shared added to props).
func wgmmaSharedA(props, aBuf, buf string, nC, nD int) string {
	src := wgmmaKernel(props+", a_shared", 0, buf, nC, nD)
	src = strings.Replace(src, `"gpu.wgmma"(`, `"gpu.wgmma"(%abuf, %off, `, 1)
	src = strings.Replace(src, `> : (`, `> : (`+aBuf+`, index, `, 1)
	return strings.Replace(src, ") kernel {", ", %abuf : "+aBuf+") kernel {", 1)
}

// TestWGMMAVerify checks the shapes gpu.wgmma accepts and the errors of
// those it refuses, and that the generic form reads back unchanged.
func TestWGMMAVerify(t *testing.T) {
	for _, src := range []string{
		wgmmaKernel("ab_type = bf16, k_steps = 4 : i64, n = 64 : i64", 16, "memref<4096xbf16, 3>", 0, 32),
		wgmmaKernel("ab_type = bf16, k_steps = 4 : i64, n = 64 : i64, trans_b", 16, "memref<4096xbf16, 3>", 32, 32),
		wgmmaKernel("ab_type = f16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xf16, 3>", 4, 4),
		// K-major over two panels (K = 128), MN-major N = 128.
		wgmmaKernel("ab_type = bf16, k_steps = 8 : i64, n = 64 : i64, panel = 4096 : i64", 32, "memref<8192xbf16, 3>", 0, 32),
		wgmmaKernel("ab_type = bf16, k_steps = 4 : i64, n = 128 : i64, panel = 4096 : i64, trans_b", 16, "memref<8192xbf16, 3>", 64, 64),
		// In flight, then awaited.
		strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64, pending = 1 : i64", 4, "memref<512xbf16, 3>", 0, 4),
			`"gpu.fence_proxy_async"() : () -> ()`, `%w:4 = "gpu.wgmma_wait"(%d#0, %d#1, %d#2, %d#3) <{pending = 0 : i64}> : (f32, f32, f32, f32) -> (f32, f32, f32, f32)`, 1),
		// In flight, accumulated into by a second product (its C), which is
		// awaited.
		strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64, pending = 1 : i64", 4, "memref<512xbf16, 3>", 0, 4),
			`"gpu.fence_proxy_async"() : () -> ()`, `%e:4 = "gpu.wgmma"(%a, %a, %a, %a, %buf, %off, %d#0, %d#1, %d#2, %d#3) <{ab_type = bf16, k_steps = 1 : i64, n = 8 : i64, pending = 1 : i64}> : (i32, i32, i32, i32, memref<512xbf16, 3>, index, f32, f32, f32, f32) -> (f32, f32, f32, f32)
      %w:4 = "gpu.wgmma_wait"(%e#0, %e#1, %e#2, %e#3) <{pending = 0 : i64}> : (f32, f32, f32, f32) -> (f32, f32, f32, f32)`, 1),
		// A from workgroup memory, with and without C.
		wgmmaSharedA("ab_type = bf16, k_steps = 4 : i64, n = 64 : i64", "memref<4096xbf16, 3>", "memref<4096xbf16, 3>", 0, 32),
		wgmmaSharedA("ab_type = f16, k_steps = 1 : i64, n = 8 : i64, trans_b", "memref<8192xf16, 3>", "memref<1024xf16, 3>", 4, 4),
	} {
		m, err := ir.Parse(newCtx(), src, ir.ParseOptions{})
		if err == nil {
			err = ir.Verify(m)
		}
		if err != nil {
			t.Fatalf("%s\n: %v", src, err)
		}
		generic := ir.Sprint(m, ir.PrintOptions{Generic: true})
		m2, err := ir.Parse(newCtx(), generic, ir.ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if again := ir.Sprint(m2, ir.PrintOptions{Generic: true}); again != generic {
			t.Errorf("generic form does not round-trip:\n%s\n---\n%s", generic, again)
		}
	}
	for _, c := range []struct{ name, src, want string }{
		{"ab-type", wgmmaKernel("ab_type = f32, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xf32, 3>", 0, 4), "'ab_type' to be bf16 or f16"},
		{"n", wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 12 : i64", 4, "memref<512xbf16, 3>", 0, 6), "multiple of 8 from 8 to 256, not 12"},
		{"k-steps", wgmmaKernel("ab_type = bf16, k_steps = 0 : i64, n = 8 : i64", 0, "memref<512xbf16, 3>", 0, 4), "'k_steps' to be at least 1"},
		{"a-count", wgmmaKernel("ab_type = bf16, k_steps = 2 : i64, n = 8 : i64", 4, "memref<512xbf16, 3>", 0, 4), "expects 8 i32 A registers"},
		{"acc-count", wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 16 : i64", 4, "memref<1024xbf16, 3>", 4, 8), "got 10 operands"},
		{"results", wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 16 : i64", 4, "memref<1024xbf16, 3>", 0, 4), "expects 8 f32 results, not 4"},
		{"global-b", strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xbf16>", 0, 4),
			"(%off: index) workgroup(%buf : memref<512xbf16>)", "(%off: index, %buf: memref<512xbf16>)", 1), "B must be in workgroup (3) memory"},
		{"b-type", wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xf16, 3>", 0, 4), "B's elements are f16, not the ab_type bf16"},
		{"no-panel", wgmmaKernel("ab_type = bf16, k_steps = 8 : i64, n = 64 : i64", 32, "memref<8192xbf16, 3>", 0, 32), "requires 'panel'"},
		{"panel-overlap", wgmmaKernel("ab_type = bf16, k_steps = 8 : i64, n = 64 : i64, panel = 512 : i64", 32, "memref<8192xbf16, 3>", 0, 32), "overlaps the 64 rows"},
		{"panel-align", wgmmaKernel("ab_type = bf16, k_steps = 8 : i64, n = 64 : i64, panel = 4100 : i64", 32, "memref<8192xbf16, 3>", 0, 32), "multiple of 512"},
		{"too-small", wgmmaKernel("ab_type = bf16, k_steps = 4 : i64, n = 64 : i64", 16, "memref<2048xbf16, 3>", 0, 32), "does not fit in memref<2048xbf16, 3>"},
		{"pending-use", strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64, pending = 1 : i64", 4, "memref<512xbf16, 3>", 0, 4),
			`"gpu.fence_proxy_async"() : () -> ()`, `%x = arith.addf %d#0, %c : f32`, 1), "result #0 is in flight ('pending' 1) but used by 'arith.addf', not 'gpu.wgmma_wait'"},
		{"pending-negative", wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64, pending = -1 : i64", 4, "memref<512xbf16, 3>", 0, 4), "'pending' to be non-negative"},
		{"wait-counts", strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xbf16, 3>", 0, 4),
			`"gpu.fence_proxy_async"() : () -> ()`, `%w = "gpu.wgmma_wait"(%d#0, %d#1) <{pending = 0 : i64}> : (f32, f32) -> f32`, 1), "as many results as operands"},
		{"a-shared-wide", wgmmaSharedA("ab_type = bf16, k_steps = 8 : i64, n = 64 : i64, panel = 4096 : i64", "memref<4096xbf16, 3>", "memref<8192xbf16, 3>", 0, 32),
			"an A in workgroup memory is at most 64 elements wide (k_steps ≤ 4), not k_steps 8"},
		{"a-shared-type", wgmmaSharedA("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", "memref<4096xf16, 3>", "memref<512xbf16, 3>", 0, 4),
			"A's elements are f16, not the ab_type bf16"},
		{"a-shared-small", wgmmaSharedA("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", "memref<2048xbf16, 3>", "memref<512xbf16, 3>", 0, 4),
			"A (64 rows of 64 elements) does not fit in memref<2048xbf16, 3>"},
		{"a-shared-registers", strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xbf16, 3>", 0, 4), "n = 8 : i64", "n = 8 : i64, a_shared", 1),
			"expects A's workgroup buffer and index, a workgroup buffer, an index and optionally 4 f32 accumulators; got 6 operands"},
		{"wait-type", strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xbf16, 3>", 0, 4),
			`"gpu.fence_proxy_async"() : () -> ()`, `%w = "gpu.wgmma_wait"(%a) <{pending = 0 : i64}> : (i32) -> i32`, 1), "operand and result #0 must be f32"},
		{"wait-pending", strings.Replace(wgmmaKernel("ab_type = bf16, k_steps = 1 : i64, n = 8 : i64", 4, "memref<512xbf16, 3>", 0, 4),
			`"gpu.fence_proxy_async"() : () -> ()`, `%w = "gpu.wgmma_wait"(%d#0) : (f32) -> f32`, 1), "'pending' to be a non-negative integer"},
		{"outside-kernel", `func.func @f(%b: memref<512xbf16, 3>, %o: index, %a: i32) {
  %d:4 = "gpu.wgmma"(%a, %a, %a, %a, %b, %o) <{ab_type = bf16, k_steps = 1 : i64, n = 8 : i64}> : (i32, i32, i32, i32, memref<512xbf16, 3>, index) -> (f32, f32, f32, f32)
  return
}`, "must be nested in a 'gpu.func'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mlirtest.VerifyError(t, newCtx(), c.src); !strings.Contains(got, c.want) {
				t.Errorf("got error %q, want %q", got, c.want)
			}
		})
	}
}

// TestSwizzledOffset checks the 128-byte swizzle: chunk c of row r lands
// at chunk c xor r%8, and panels add their stride.
func TestSwizzledOffset(t *testing.T) {
	for _, c := range []struct{ row, col, panel, want int64 }{
		{0, 0, 0, 0}, {0, 9, 0, 9}, {1, 0, 0, 64 + 8}, {1, 8, 0, 64}, {7, 63, 0, 7*64 + 0*8 + 7},
		{8, 3, 0, 8*64 + 3}, {9, 17, 0, 9*64 + 3*8 + 1}, {2, 64, 4096, 4096 + 2*64 + 2*8},
	} {
		if got := gpu.SwizzledOffset(c.row, c.col, c.panel); got != c.want {
			t.Errorf("SwizzledOffset(%d, %d, %d) = %d, want %d", c.row, c.col, c.panel, got, c.want)
		}
	}
}
