package interp

import (
	"strings"
	"testing"
	"time"
)

// ring is a producer/consumer pipeline over two stages of workgroup
// memory, handed back and forth with mbarriers only: warpgroup 1 (the
// producer, its registers lowered) writes round r into stage r%2 once
// the consumers freed it (empty[s], parity (r/2+1)%2: the first round of
// each stage passes at once), then arrives at full[s]; warpgroup 0 (the
// consumers) waits for full[s] with parity (r/2)%2, adds the value and
// arrives at empty[s]. out[tid] = Σ_r (1000·r + tid).
const ring = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @ring(%out: memref<?xf32>, %rounds: index) workgroup(%bars : memref<4xi64, 3>, %buf : memref<256xf32, 3>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c128 = arith.constant 128 : index
      %c1000 = arith.constant 1000 : index
      %n = arith.constant 128 : i32
      %zero = arith.constant 0.0 : f32
      %first = arith.cmpi eq, %tid, %c0 : index
      "loop.if"(%first) ({
        "loop.for"(%c0, %c2, %c1) ({
        ^bb0(%s: index):
          %e = arith.addi %s, %c2 : index
          "gpu.mbarrier_init"(%bars, %s, %n) : (memref<4xi64, 3>, index, i32) -> ()
          "gpu.mbarrier_init"(%bars, %e, %n) : (memref<4xi64, 3>, index, i32) -> ()
          loop.yield
        }) : (index, index, index) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      %producer = arith.cmpi uge, %tid, %c128 : index
      "loop.if"(%producer) ({
        "gpu.setmaxnreg"() <{regs = 40 : i64}> : () -> ()
        %i = arith.subi %tid, %c128 : index
        "loop.for"(%c0, %rounds, %c1) ({
        ^bb0(%r: index):
          %s = arith.remui %r, %c2 : index
          %e = arith.addi %s, %c2 : index
          %q = arith.divui %r, %c2 : index
          %q1 = arith.addi %q, %c1 : index
          %pi = arith.remui %q1, %c2 : index
          %p = arith.index_cast %pi : index to i32
          "gpu.mbarrier_wait"(%bars, %e, %p) : (memref<4xi64, 3>, index, i32) -> ()
          %k = arith.muli %r, %c1000 : index
          %v = arith.addi %k, %i : index
          %vi = arith.index_cast %v : index to i32
          %f = arith.sitofp %vi : i32 to f32
          %off = arith.muli %s, %c128 : index
          %at = arith.addi %off, %i : index
          loop.store %f, %buf[%at] : memref<256xf32, 3>
          "gpu.mbarrier_arrive"(%bars, %s) : (memref<4xi64, 3>, index) -> ()
          loop.yield
        }) : (index, index, index) -> ()
        loop.yield
      }, {
        "gpu.setmaxnreg"() <{increase, regs = 232 : i64}> : () -> ()
        %sum = "loop.for"(%c0, %rounds, %c1, %zero) ({
        ^bb0(%r: index, %acc: f32):
          %s = arith.remui %r, %c2 : index
          %e = arith.addi %s, %c2 : index
          %q = arith.divui %r, %c2 : index
          %pi = arith.remui %q, %c2 : index
          %p = arith.index_cast %pi : index to i32
          "gpu.mbarrier_wait"(%bars, %s, %p) : (memref<4xi64, 3>, index, i32) -> ()
          %off = arith.muli %s, %c128 : index
          %at = arith.addi %off, %tid : index
          %x = loop.load %buf[%at] : memref<256xf32, 3>
          %acc2 = arith.addf %acc, %x : f32
          "gpu.mbarrier_arrive"(%bars, %e) : (memref<4xi64, 3>, index) -> ()
          loop.yield %acc2 : f32
        }) : (index, index, index, f32) -> f32
        loop.store %sum, %out[%tid] : memref<?xf32>
        loop.yield
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main(%out: memref<?xf32>, %rounds: index) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @k::@ring blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%out : memref<?xf32>, %rounds : index)
    return %out : memref<?xf32>
  }
}
`

// TestMbarrierRing runs the ring pipeline for several round counts (odd
// and even, more rounds than stages so that both parities of both
// barriers are waited for) and checks every sum.
func TestMbarrierRing(t *testing.T) {
	m := parseGPU(t, ring)
	for _, rounds := range []int64{1, 2, 5, 8} {
		out := f32Buffer(t, []int64{128}, make([]float64, 128)...)
		res, err := New(m).Call("main", out, indexScalar(rounds))
		if err != nil {
			t.Fatalf("%d rounds: %v", rounds, err)
		}
		for i, v := range bufferFloats(t, res[0]) {
			want := float64(1000*rounds*(rounds-1)/2 + rounds*int64(i))
			if v != want {
				t.Fatalf("%d rounds: out[%d] = %v, want %v", rounds, i, v, want)
			}
		}
	}
}

// TestMbarrierErrors: a wait whose phase never completes is a located
// deadlock, a barrier used before its init and a bad parity are located
// errors, and a gpu.setmaxnreg that only part of a warpgroup executes
// leaves it waiting (a deadlock that names it).
func TestMbarrierErrors(t *testing.T) {
	fixed := ring
	for _, c := range []struct{ name, from, to, want string }{
		// The consumers never free a stage: the producer's third round waits forever.
		{"deadlock", `"gpu.mbarrier_arrive"(%bars, %e) : (memref<4xi64, 3>, index) -> ()`, ``,
			"deadlock: every thread of the block waits and none can proceed"},
		{"uninitialized", `"gpu.mbarrier_init"(%bars, %e, %n)`, `"gpu.mbarrier_init"(%bars, %s, %n)`, "is used before gpu.mbarrier_init"},
		{"parity", `%p = arith.index_cast %pi : index to i32
          "gpu.mbarrier_wait"(%bars, %s, %p)`, `%p = arith.index_cast %e : index to i32
          "gpu.mbarrier_wait"(%bars, %s, %p)`, "parity 2 is not 0 or 1"},
		{"setmaxnreg", `"gpu.setmaxnreg"() <{regs = 40 : i64}> : () -> ()`, `%lo = arith.cmpi ult, %tid, %c192 : index
        "loop.if"(%lo) ({
          "gpu.setmaxnreg"() <{regs = 40 : i64}> : () -> ()
          loop.yield
        }, {
        }) : (i1) -> ()`, "threads 128-191 wait at this 'gpu.setmaxnreg'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(fixed, c.from, c.to, 1)
			if src == fixed {
				t.Fatal("the replacement does not apply")
			}
			src = strings.Replace(src, "%c128 = arith.constant 128 : index", "%c128 = arith.constant 128 : index\n      %c192 = arith.constant 192 : index", 1)
			m := parseGPU(t, src)
			done := make(chan error, 1)
			go func() {
				out := f32Buffer(t, []int64{128}, make([]float64, 128)...)
				_, err := New(m).Call("main", out, indexScalar(5))
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got error %v, want %q", err, c.want)
				}
				if !strings.Contains(err.Error(), "k.mlir:") {
					t.Errorf("error is not located: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the launch hangs")
			}
		})
	}
}
