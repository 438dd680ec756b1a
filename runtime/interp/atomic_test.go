package interp

import (
	"strings"
	"testing"
)

// atomicSum has every thread of 3 blocks of 64 add its thread id + 1 to
// out[tid % 4], 1 to out[4] and (1, tid + 1) to out[6:8]: out[i] =
// 3·Σ_{t%4=i} (t+1), out[4] = out[6] = 192, out[7] = 3·Σ (t+1) only if no
// addition is lost among the concurrent threads.
const atomicSum = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @sum(%out: memref<?xf32>) kernel {
      %tid = gpu.thread_id x
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c6 = arith.constant 6 : index
      %one = arith.constant 1.0 : f32
      %i = arith.remui %tid, %c4 : index
      %t1 = arith.addi %tid, %c1 : index
      %ti = arith.index_cast %t1 : index to i32
      %v = arith.sitofp %ti : i32 to f32
      "gpu.atomic_add"(%out, %i, %v) : (memref<?xf32>, index, f32) -> ()
      "gpu.atomic_add"(%out, %c4, %one) : (memref<?xf32>, index, f32) -> ()
      "gpu.atomic_add"(%out, %c6, %one, %v) : (memref<?xf32>, index, f32, f32) -> ()
      gpu.return
    }
  }
  func.func @main(%out: memref<?xf32>) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@sum blocks in (%c3, %c1, %c1) threads in (%c64, %c1, %c1) args(%out : memref<?xf32>)
    return %out : memref<?xf32>
  }
}
`

// TestAtomicAdd checks that concurrent gpu.atomic_add lose no addition
// and that an index past the buffer is a located error.
func TestAtomicAdd(t *testing.T) {
	res, err := New(parseGPU(t, atomicSum)).Call("main", f32Buffer(t, []int64{8}, make([]float64, 8)...))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 8)
	for tid := range 64 {
		want[tid%4] += 3 * float64(tid+1)
		want[7] += 3 * float64(tid+1)
	}
	want[4], want[6] = 192, 192
	for i, v := range bufferFloats(t, res[0]) {
		if v != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, v, want[i])
		}
	}
	_, err = New(parseGPU(t, atomicSum)).Call("main", f32Buffer(t, []int64{4}, 0, 0, 0, 0))
	if err == nil || !strings.Contains(err.Error(), "out of bounds") || !strings.Contains(err.Error(), "k.mlir:") {
		t.Errorf("index past the end: %v, want a located out-of-bounds error", err)
	}
	_, err = New(parseGPU(t, strings.Replace(atomicSum, "%c6, %one, %v", "%c1, %one, %v", 1))).Call("main", f32Buffer(t, []int64{8}, make([]float64, 8)...))
	if err == nil || !strings.Contains(err.Error(), "not an even element") {
		t.Errorf("two values at an odd index: %v, want an error", err)
	}
}
