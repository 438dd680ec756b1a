package llvm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/targets/llvm"
)

// vectorKernel is a kernel with two runs of four f32 accesses at
// x·scale + 0…3 (index arithmetic between the accesses, as flattening
// leaves it): a load run and a store run.
func vectorKernel(scale int) string {
	return fmt.Sprintf(`gpu.module @m {
  gpu.func @k(%%a: memref<1024xf32>, %%o: memref<1024xf32>) kernel {
    %%c1 = arith.constant 1 : index
    %%c2 = arith.constant 2 : index
    %%c3 = arith.constant 3 : index
    %%cs = arith.constant %d : index
    %%t = gpu.thread_id x
    %%b = arith.muli %%t, %%cs : index
    %%x0 = loop.load %%a[%%b] : memref<1024xf32>
    %%i1 = arith.addi %%b, %%c1 : index
    %%x1 = loop.load %%a[%%i1] : memref<1024xf32>
    %%i2 = arith.addi %%b, %%c2 : index
    %%x2 = loop.load %%a[%%i2] : memref<1024xf32>
    %%i3 = arith.addi %%c3, %%b : index
    %%x3 = loop.load %%a[%%i3] : memref<1024xf32>
    loop.store %%x3, %%o[%%b] : memref<1024xf32>
    loop.store %%x2, %%o[%%i1] : memref<1024xf32>
    %%y = arith.addf %%x0, %%x1 : f32
    loop.store %%y, %%o[%%i2] : memref<1024xf32>
    loop.store %%x0, %%o[%%i3] : memref<1024xf32>
    gpu.return
  }
}`, scale)
}

// TestVectorAccesses: adjacent accesses of base+0…3 become one <4 x float>
// access when base is a multiple of 4, two <2 x float> when it is only a
// multiple of 2, and stay scalar otherwise; llc accepts the result.
func TestVectorAccesses(t *testing.T) {
	for _, tc := range []struct {
		scale      int
		want, deny []string
	}{
		{8, []string{"load <4 x float>", "store <4 x float>", "align 16"}, []string{"load float", "store float"}},
		{2, []string{"load <2 x float>", "store <2 x float>", "align 8"}, []string{"<4 x float>", "load float"}},
		{1, []string{"load float", "store float"}, []string{"x float>"}},
	} {
		t.Run(fmt.Sprint(tc.scale), func(t *testing.T) {
			m, err := llvm.Translate(parse(t, vectorKernel(tc.scale)).Region(0).Front().First())
			if err != nil {
				t.Fatal(err)
			}
			text := m.String()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in\n%s", w, text)
				}
			}
			for _, d := range tc.deny {
				if strings.Contains(text, d) {
					t.Errorf("unexpected %q in\n%s", d, text)
				}
			}
			run(t, text, "llc-19", "-march=nvptx64", "-mcpu=sm_90", "-o", "/dev/null")
		})
	}
}

// TestVectorAccessesFlattenedIndex: the column of a flattened N-D index
// (x·4 mod n, or x·4 & mask) keeps the alignment of x·4 as far as n or the
// mask allow, so a 2-D elementwise kernel (a bias add) gets vector accesses.
func TestVectorAccessesFlattenedIndex(t *testing.T) {
	for _, tc := range []struct {
		base       string // the computation of %b from %x = thread_id·4
		want, deny string
	}{
		{"%n = arith.constant 4096 : index\n    %b = arith.remui %x, %n : index", "load <4 x float>", "load float"},
		{"%n = arith.constant 6 : index\n    %b = arith.remui %x, %n : index", "load <2 x float>", "<4 x float>"},
		{"%n = arith.constant 4095 : index\n    %b = arith.andi %x, %n : index", "load <4 x float>", "load float"},
		{"%n = arith.constant 2 : index\n    %b = arith.shli %t, %n : index", "load <4 x float>", "load float"},
		{"%n = arith.constant 4096 : index\n    %b = arith.divui %x, %n : index", "load float", "x float>"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			k := `gpu.module @m {
  gpu.func @k(%a: memref<8192xf32>, %o: memref<8192xf32>) kernel {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %t = gpu.thread_id x
    %x = arith.muli %t, %c4 : index
    ` + tc.base + `
    %x0 = loop.load %a[%b] : memref<8192xf32>
    %i1 = arith.addi %b, %c1 : index
    %x1 = loop.load %a[%i1] : memref<8192xf32>
    %i2 = arith.addi %b, %c2 : index
    %x2 = loop.load %a[%i2] : memref<8192xf32>
    %i3 = arith.addi %b, %c3 : index
    %x3 = loop.load %a[%i3] : memref<8192xf32>
    %y = arith.addf %x0, %x3 : f32
    %z = arith.addf %x1, %x2 : f32
    %w = arith.addf %y, %z : f32
    loop.store %w, %o[%t] : memref<8192xf32>
    gpu.return
  }
}`
			m, err := llvm.Translate(parse(t, k).Region(0).Front().First())
			if err != nil {
				t.Fatal(err)
			}
			text := m.String()
			if !strings.Contains(text, tc.want) || strings.Contains(text, tc.deny) {
				t.Errorf("want %q and no %q in\n%s", tc.want, tc.deny, text)
			}
		})
	}
}
