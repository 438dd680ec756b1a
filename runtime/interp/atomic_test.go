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

// bulkSum has every thread t of 3 blocks of 8 write t + 1 to element t
// of a workgroup buffer; after a barrier, thread 0 adds the buffer's
// elements 0..7 (32 bytes) to out[4:12] and thread 1 elements 4..7 to
// out[0:4]: out[4+t] = 3·(t+1), out[t] = 3·(t+5) (t < 4), if no addition
// is lost among the blocks.
const bulkSum = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @sum(%out: memref<?xf32>) workgroup(%w : memref<8xf32, 3>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %t1 = arith.addi %tid, %c1 : index
      %ti = arith.index_cast %t1 : index to i32
      %v = arith.sitofp %ti : i32 to f32
      loop.store %v, %w[%tid] : memref<8xf32, 3>
      "gpu.fence_proxy_async"() : () -> ()
      gpu.barrier
      %first = arith.cmpi eq, %tid, %c0 : index
      "loop.if"(%first) ({
        "gpu.bulk_reduce_add"(%out, %c4, %w, %c0) <{bytes = 32 : i64}> : (memref<?xf32>, index, memref<8xf32, 3>, index) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      %second = arith.cmpi eq, %tid, %c1 : index
      "loop.if"(%second) ({
        "gpu.bulk_reduce_add"(%out, %c0, %w, %c4) <{bytes = 16 : i64}> : (memref<?xf32>, index, memref<8xf32, 3>, index) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.bulk_wait"() <{pending = 0 : i64}> : () -> ()
      gpu.return
    }
  }
  func.func @main(%out: memref<?xf32>) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @k::@sum blocks in (%c3, %c1, %c1) threads in (%c8, %c1, %c1) args(%out : memref<?xf32>)
    return %out : memref<?xf32>
  }
}
`

// TestBulkReduceAdd checks that concurrent gpu.bulk_reduce_add lose no
// addition and that a span past the buffer or misaligned is an error.
func TestBulkReduceAdd(t *testing.T) {
	res, err := New(parseGPU(t, bulkSum)).Call("main", f32Buffer(t, []int64{12}, make([]float64, 12)...))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 12)
	for i := range 4 {
		want[i] = 3 * float64(i+5)
	}
	for i := range 8 {
		want[4+i] = 3 * float64(i+1)
	}
	for i, v := range bufferFloats(t, res[0]) {
		if v != want[i] {
			t.Errorf("out[%d] = %v, want %v", i, v, want[i])
		}
	}
	_, err = New(parseGPU(t, bulkSum)).Call("main", f32Buffer(t, []int64{8}, make([]float64, 8)...))
	if err == nil || !strings.Contains(err.Error(), "out of bounds") || !strings.Contains(err.Error(), "k.mlir:") {
		t.Errorf("a span past the end: %v, want a located out-of-bounds error", err)
	}
	_, err = New(parseGPU(t, strings.Replace(bulkSum, "(%out, %c4, %w, %c0)", "(%out, %c1, %w, %c0)", 1))).Call("main", f32Buffer(t, []int64{12}, make([]float64, 12)...))
	if err == nil || !strings.Contains(err.Error(), "not 16-byte aligned") {
		t.Errorf("a misaligned span: %v, want an error", err)
	}
}
