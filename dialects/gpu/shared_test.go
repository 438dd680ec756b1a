package gpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/internal/mlirtest"
	"github.com/strata-ir/strata/ir"
)

// sharedKernel is a module whose kernel @k has the workgroup buffers wg
// and whose @f launches it with the launch's extra text (a
// dynamic_shared_memory_size clause, say).
func sharedKernel(wg, clause string) string {
	return fmt.Sprintf(`module attributes {gpu.container_module} {
  gpu.module @mod {
    gpu.func @k() workgroup(%s) kernel {
      gpu.return
    }
  }
  func.func @f(%%n: i32) {
    %%c1 = arith.constant 1 : index
    %%small = arith.constant 1024 : i32
    %%big = arith.constant 98304 : i32
    gpu.launch_func @mod::@k blocks in (%%c1, %%c1, %%c1) threads in (%%c1, %%c1, %%c1) %s
    return
  }
}
`, wg, clause)
}

// TestSharedLayout checks the offsets (16-byte aligned, in order), the
// total, and when the buffers become dynamic.
func TestSharedLayout(t *testing.T) {
	for _, c := range []struct {
		wg      string
		offsets []int64
		total   int64
		dynamic int64
	}{
		{"%a : memref<3xf16, 3>, %b : memref<5xi1, 3>, %c : memref<2xindex, 3>", []int64{0, 16, 32}, 48, 0},
		{"%a : memref<24576xbf16, 3>", []int64{0}, 49152, 0}, // exactly 48 KiB: static
		{"%a : memref<24577xbf16, 3>, %b : memref<8xf32, 3>", []int64{0, 49168}, 49200, 49200},
		{"%a : memref<2x3xf32, 3>, %b : memref<4xf64, 3>", []int64{0, 32}, 64, 0},
	} {
		ctx := newCtx()
		m := mlirtest.Parse(t, ctx, sharedKernel(c.wg, ""))
		fn := kernelK(m)
		offsets, total, err := gpu.SharedLayout(fn)
		if err != nil || fmt.Sprint(offsets) != fmt.Sprint(c.offsets) || total != c.total {
			t.Errorf("%s: SharedLayout = %v, %d, %v; want %v, %d", c.wg, offsets, total, err, c.offsets, c.total)
		}
		if n, err := gpu.DynamicSharedBytes(fn); err != nil || n != c.dynamic {
			t.Errorf("%s: DynamicSharedBytes = %d, %v; want %d", c.wg, n, err, c.dynamic)
		}
	}
	m := mlirtest.Parse(t, newCtx(), sharedKernel("%a : memref<60000xf32, 3>", ""))
	if _, err := gpu.DynamicSharedBytes(kernelK(m)); err == nil || !strings.Contains(err.Error(), "more than the 232448") {
		t.Errorf("240000 bytes: got %v, want an error", err)
	}
}

// TestLaunchSharedVerify checks that a launch of a kernel with dynamic
// shared memory passes enough of it: none or a smaller constant is an
// error, a larger constant or a run-time value is accepted, and a static
// kernel needs nothing.
func TestLaunchSharedVerify(t *testing.T) {
	const big = "%a : memref<32768xbf16, 3>, %b : memref<16384xbf16, 3>" // 96 KiB
	for _, c := range []struct{ wg, clause, want string }{
		{big, "", "kernel @mod::@k keeps its 98304 bytes of workgroup memory in dynamic shared memory (more than 49152): the launch must pass dynamic_shared_memory_size"},
		{big, "dynamic_shared_memory_size %small", "dynamic_shared_memory_size 1024 is less than the 98304 bytes of kernel @mod::@k's workgroup memory"},
		{big, "dynamic_shared_memory_size %big", ""},
		{big, "dynamic_shared_memory_size %n", ""},
		{"%a : memref<128xf32, 3>", "", ""},
	} {
		if got := mlirtest.VerifyError(t, newCtx(), sharedKernel(c.wg, c.clause)); !strings.Contains(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%s / %q: got error %q, want %q", c.wg, c.clause, got, c.want)
		}
	}
}

// TestDynamicSharedSize checks the builder: an i32 constant of the bytes
// for a dynamic kernel, nil for a static one.
func TestDynamicSharedSize(t *testing.T) {
	for _, c := range []struct {
		wg   string
		want string
	}{
		{"%a : memref<32768xbf16, 3>, %b : memref<16384xbf16, 3>", "98304 : i32"},
		{"%a : memref<128xf32, 3>", ""},
	} {
		ctx := newCtx()
		m := mlirtest.Parse(t, ctx, sharedKernel(c.wg, ""))
		fn := kernelK(m)
		b := ir.NewBuilder(ctx)
		b.SetInsertionPointBefore(fn)
		v, err := gpu.DynamicSharedSize(b, ir.UnknownLoc{}, fn)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.wg, err)
		case c.want == "" && v != nil:
			t.Errorf("%s: got a size for static shared memory", c.wg)
		case c.want != "" && (v == nil || !strings.Contains(ir.Sprint(v.DefiningOp(), ir.PrintOptions{}), c.want)):
			t.Errorf("%s: got %v, want the constant %s", c.wg, v, c.want)
		}
	}
}

// kernelK returns @mod::@k of a sharedKernel module.
func kernelK(m *ir.Operation) *ir.Operation {
	return ir.LookupSymbol(ir.LookupSymbol(m, ir.SymbolRef("mod")), ir.SymbolRef("k"))
}
