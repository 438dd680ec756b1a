package exec

import (
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// tmaCopy passes its first argument as a tensor map of rows of 40 f32.
const tmaCopy = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @copy(%src: memref<?xf32> {gpu.tensor_map = {box = array<i64: 8, 32>, inner = array<i64: 40>, swizzle = 128 : i64}}, %out: memref<?xf32>) workgroup(%bars : memref<1xi64, 3>, %buf : memref<256xf32, 3>) kernel {
      %z = arith.constant 0 : index
      %c0 = arith.constant 0 : i32
      "gpu.tma_load"(%buf, %z, %bars, %z, %src, %c0, %c0) : (memref<256xf32, 3>, index, memref<1xi64, 3>, index, memref<?xf32>, i32, i32) -> ()
      gpu.return
    }
  }
  func.func @main(%src: memref<?xf32>, %out: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@copy blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%src : memref<?xf32>, %out : memref<?xf32>)
    return
  }
}
`

// TestTensorMapLaunch checks that a tensor-map argument reaches the
// device as a cuda.TensorMapArg of the buffer (its outermost size from
// the element count), and that a buffer of partial rows is a located
// error.
func TestTensorMapLaunch(t *testing.T) {
	p, err := Compile(parse(t, "tma.mlir", tmaCopy), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := newFake()
	var got []any
	d.kernels["copy"] = func(_ *fakeDevice, _, _ [3]uint32, args []any) error {
		got = args
		return nil
	}
	rt := newRuntime(d)
	buf := func(n int) *interp.Buffer {
		b, err := interp.NewBuffer(ir.F32, []int64{int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := p.Run(rt, "main", []interp.Value{buf(21 * 40), buf(8)}); err != nil {
		t.Fatal(err)
	}
	m, ok := got[0].(cuda.TensorMapArg)
	if !ok {
		t.Fatalf("argument 0 is %T, want a cuda.TensorMapArg", got[0])
	}
	if m.Elem != cuda.TensorMapF32 || !slices.Equal(m.Sizes, []int64{21, 40}) || !slices.Equal(m.Box, []int64{8, 32}) || m.Swizzle != 128 || m.Ptr == 0 {
		t.Errorf("tensor map %+v", m)
	}
	if _, ok := got[1].(DevicePtr); !ok {
		t.Errorf("argument 1 is %T, want a device pointer", got[1])
	}
	_, err = p.Run(rt, "main", []interp.Value{buf(21*40 + 3), buf(8)})
	if err == nil || !strings.Contains(err.Error(), "not whole slices") || !strings.Contains(err.Error(), "tma.mlir:") {
		t.Errorf("got %v, want a located error about partial rows", err)
	}
}
