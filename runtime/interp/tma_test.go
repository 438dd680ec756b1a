package interp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	mathd "github.com/strata-ir/strata/dialects/math"
	"github.com/strata-ir/strata/ir"
)

// tmaCopy copies the box at (%r0, %c0) of an R × 40 f32 tensor (8 × 32
// boxes, the map's swizzle SWIZZLE) into stage 1 of a workgroup buffer
// with one gpu.tma_load of thread 0, signalled by 1024 expected bytes,
// and after the phase's wait every thread copies the buffer out.
const tmaCopy = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @copy(%src: memref<?xf32> {gpu.tensor_map = {box = array<i64: 8, 32>, inner = array<i64: 40>, swizzle = SWIZZLE : i64}}, %out: memref<?xf32>, %r0: i32, %c0: i32) workgroup(%bars : memref<1xi64, 3>, %buf : memref<512xf32, 3>) kernel {
      %tid = gpu.thread_id x
      %z = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c256 = arith.constant 256 : index
      %c512 = arith.constant 512 : index
      %one = arith.constant 1 : i32
      %bytes = arith.constant 1024 : i32
      %p0 = arith.constant 0 : i32
      %first = arith.cmpi eq, %tid, %z : index
      "loop.if"(%first) ({
        "gpu.mbarrier_init"(%bars, %z, %one) : (memref<1xi64, 3>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.barrier
      "loop.if"(%first) ({
        "gpu.tma_load"(%buf, %c256, %bars, %z, %src, %r0, %c0) : (memref<512xf32, 3>, index, memref<1xi64, 3>, index, memref<?xf32>, i32, i32) -> ()
        "gpu.mbarrier_expect_tx"(%bars, %z, %bytes) : (memref<1xi64, 3>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.mbarrier_wait"(%bars, %z, %p0) : (memref<1xi64, 3>, index, i32) -> ()
      "loop.for"(%tid, %c512, %c32) ({
      ^bb0(%i: index):
        %v = loop.load %buf[%i] : memref<512xf32, 3>
        loop.store %v, %out[%i] : memref<?xf32>
        loop.yield
      }) : (index, index, index) -> ()
      gpu.return
    }
  }
  func.func @main(%src: memref<?xf32>, %out: memref<?xf32>, %r0: i32, %c0: i32) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @k::@copy blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%src : memref<?xf32>, %out : memref<?xf32>, %r0 : i32, %c0 : i32)
    return %out : memref<?xf32>
  }
}
`

// TestTMALoad copies boxes inside and across the edges of a 21 × 40
// tensor, with and without the 128-byte swizzle, and checks every
// element of the workgroup buffer: element (r, c) of the box at 4·(32r +
// c) bytes from the stage, its 16-byte chunk xored with r%8 when
// swizzled, zero outside the tensor, and stage 0 untouched.
func TestTMALoad(t *testing.T) {
	const rows, cols = 21, 40
	data := make([]float64, rows*cols)
	for i := range data {
		data[i] = float64(i + 1)
	}
	for _, swizzle := range []int64{0, 128} {
		m := parseGPU(t, strings.ReplaceAll(tmaCopy, "SWIZZLE", fmt.Sprint(swizzle)))
		for _, at := range [][2]int64{{0, 0}, {5, 8}, {17, 16}, {-2, -4}} {
			src := f32Buffer(t, []int64{rows * cols}, data...)
			out := f32Buffer(t, []int64{512}, make([]float64, 512)...)
			res, err := New(m).Call("main", src, out, i32Scalar(uint32(at[0])), i32Scalar(uint32(at[1])))
			if err != nil {
				t.Fatalf("swizzle %d, box at %v: %v", swizzle, at, err)
			}
			got := bufferFloats(t, res[0])
			want := make([]float64, 512)
			for r := range int64(8) {
				for c := range int64(32) {
					off := 4 * (32*r + c)
					if swizzle != 0 {
						off ^= (r % 8) << 4
					}
					gr, gc := at[0]+r, at[1]+c
					if gr >= 0 && gr < rows && gc >= 0 && gc < cols {
						want[256+off/4] = data[gr*cols+gc]
					}
				}
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("swizzle %d, box at %v: buf[%d] = %v, want %v", swizzle, at, i, got[i], want[i])
				}
			}
		}
	}
}

// TestTMAErrors: a phase whose expected bytes differ from the copy's, or
// that nobody expects bytes on, never completes (a located deadlock at
// the wait); a misaligned destination and a tensor map read by another
// op are located errors.
func TestTMAErrors(t *testing.T) {
	fixed := strings.ReplaceAll(tmaCopy, "SWIZZLE", "128")
	expect := `"gpu.mbarrier_expect_tx"(%bars, %z, %bytes) : (memref<1xi64, 3>, index, i32) -> ()`
	for _, c := range []struct{ name, from, to, want string }{
		{"few-bytes", `%bytes = arith.constant 1024 : i32`, `%bytes = arith.constant 512 : i32`, "deadlock"},
		{"many-bytes", `%bytes = arith.constant 1024 : i32`, `%bytes = arith.constant 2048 : i32`, "deadlock"},
		{"no-expect", expect, `"gpu.mbarrier_arrive"(%bars, %z) : (memref<1xi64, 3>, index) -> ()`, "deadlock"},
		{"misaligned", `%c256 = arith.constant 256 : index`, `%c256 = arith.constant 128 : index`, "not a 1024-byte aligned box"},
		{"other-use", `%v = loop.load %buf[%i] : memref<512xf32, 3>`, `%v = loop.load %src[%i] : memref<?xf32>`, "only gpu.tma_load reads"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(fixed, c.from, c.to, 1)
			if src == fixed {
				t.Fatal("the replacement does not apply")
			}
			m, perr := parseGPUErr(src)
			if perr != nil {
				if !strings.Contains(perr.Error(), c.want) {
					t.Fatalf("got error %v, want %q", perr, c.want)
				}
				return
			}
			done := make(chan error, 1)
			go func() {
				in := f32Buffer(t, []int64{21 * 40}, make([]float64, 21*40)...)
				out := f32Buffer(t, []int64{512}, make([]float64, 512)...)
				_, err := New(m).Call("main", in, out, i32Scalar(0), i32Scalar(0))
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

// parseGPUErr parses and verifies a gpu program, returning the error.
func parseGPUErr(src string) (*ir.Operation, error) {
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, arith.Dialect, mathd.Dialect, loop.Dialect, gpu.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "k.mlir"})
	if err == nil {
		err = ir.Verify(m)
	}
	return m, err
}
