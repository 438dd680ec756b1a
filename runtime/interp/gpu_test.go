package interp

import (
	"fmt"
	"math"
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

// parseGPU reads and verifies a module in the gpu and loop dialects.
func parseGPU(t testing.TB, src string) *ir.Operation {
	t.Helper()
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, arith.Dialect, mathd.Dialect, loop.Dialect, gpu.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "k.mlir"})
	if err == nil {
		err = ir.Verify(m)
	}
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return m
}

// vectorAdd is c = a + b with a grid-stride loop, so any grid covers any n.
const vectorAdd = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %gdim = gpu.grid_dim x
      %base = arith.muli %bid, %bdim : index
      %start = arith.addi %base, %tid : index
      %stride = arith.muli %bdim, %gdim : index
      "loop.for"(%start, %n, %stride) ({
      ^bb0(%i: index):
        %x = loop.load %a[%i] : memref<?xf32>
        %y = loop.load %b[%i] : memref<?xf32>
        %s = arith.addf %x, %y : f32
        loop.store %s, %c[%i] : memref<?xf32>
        loop.yield
      }) : (index, index, index) -> ()
      gpu.return
    }
  }
  func.func @main(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %grid: index, %block: index) -> memref<?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = loop.dim %a, 0 : memref<?xf32>
    gpu.launch_func @k::@add blocks in (%grid, %c1, %c1) threads in (%block, %c1, %c1) args(%a : memref<?xf32>, %b : memref<?xf32>, %c : memref<?xf32>, %n : index)
    return %c : memref<?xf32>
  }
}
`

func ramp(t testing.TB, n int, scale float64) *Buffer {
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = float64(i%1000) * scale
	}
	return f32Buffer(t, []int64{int64(n)}, vs...)
}

func TestGPUVectorAdd(t *testing.T) {
	m := parseGPU(t, vectorAdd)
	for _, c := range []struct{ n, grid, block int }{
		{1000, 1, 32}, {1000, 3, 64}, {16384, 64, 256}, {16421, 64, 256}, {5, 2, 7},
	} {
		t.Run(fmt.Sprintf("n=%d grid=%d block=%d", c.n, c.grid, c.block), func(t *testing.T) {
			a, b := ramp(t, c.n, 1), ramp(t, c.n, 0.5)
			out := f32Buffer(t, []int64{int64(c.n)}, make([]float64, c.n)...)
			start := time.Now()
			res, err := New(m).Call("main", a, b, out, indexScalar(int64(c.grid)), indexScalar(int64(c.block)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%v", time.Since(start))
			got := bufferFloats(t, res[0])
			for i, v := range got {
				if want := float64(i%1000) * 1.5; v != want {
					t.Fatalf("c[%d] = %v, want %v", i, v, want)
				}
			}
		})
	}
}

// blockSum sums in[0:n) per block into out[block], each thread first
// accumulating a grid-stride slice, then a tree reduction in workgroup
// memory with a barrier after each step.
const blockSum = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @sum(%in: memref<?xf32>, %out: memref<?xf32>, %n: index) workgroup(%buf : memref<256xf32, 3>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %gdim = gpu.grid_dim x
      %base = arith.muli %bid, %bdim : index
      %start = arith.addi %base, %tid : index
      %stride = arith.muli %bdim, %gdim : index
      %acc = "loop.for"(%start, %n, %stride, %zero) ({
      ^bb0(%i: index, %s: f32):
        %x = loop.load %in[%i] : memref<?xf32>
        %s1 = arith.addf %s, %x : f32
        loop.yield %s1 : f32
      }) : (index, index, index, f32) -> f32
      loop.store %acc, %buf[%tid] : memref<256xf32, 3>
      gpu.barrier
      "loop.for"(%c0, %c8, %c1) ({
      ^bb0(%k: index):
        %half = arith.shrui %c128, %k : index
        %active = arith.cmpi ult, %tid, %half : index
        "loop.if"(%active) ({
          %j = arith.addi %tid, %half : index
          %l = loop.load %buf[%tid] : memref<256xf32, 3>
          %r = loop.load %buf[%j] : memref<256xf32, 3>
          %t = arith.addf %l, %r : f32
          loop.store %t, %buf[%tid] : memref<256xf32, 3>
          loop.yield
        }, {
        }) : (i1) -> ()
        gpu.barrier
        loop.yield
      }) : (index, index, index) -> ()
      %first = arith.cmpi eq, %tid, %c0 : index
      "loop.if"(%first) ({
        %total = loop.load %buf[%c0] : memref<256xf32, 3>
        loop.store %total, %out[%bid] : memref<?xf32>
        loop.yield
      }, {
      }) : (i1) -> ()
      gpu.return
    }
  }
  func.func @main(%in: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %n = loop.dim %in, 0 : memref<?xf32>
    %g = loop.dim %out, 0 : memref<?xf32>
    gpu.launch_func @k::@sum blocks in (%g, %c1, %c1) threads in (%c256, %c1, %c1) args(%in : memref<?xf32>, %out : memref<?xf32>, %n : index)
    return %out : memref<?xf32>
  }
}
`

func TestGPUBlockReduction(t *testing.T) {
	m := parseGPU(t, blockSum)
	const n, grid = 10000, 4
	in := ramp(t, n, 1)
	out := f32Buffer(t, []int64{grid}, make([]float64, grid)...)
	res, err := New(m).Call("main", in, out)
	if err != nil {
		t.Fatal(err)
	}
	// Each block's sum is over the elements i with i / 256 % grid == block.
	var want [grid]float64
	for i := range n {
		want[i/256%grid] += float64(i % 1000)
	}
	for b, v := range bufferFloats(t, res[0]) {
		if math.Abs(v-want[b]) > 1e-6*want[b] {
			t.Errorf("block %d sum = %v, want %v", b, v, want[b])
		}
	}
}

// shuffleKernel stores, per thread, the shuffled value of in and whether
// it was valid, for one mode, offset and width.
const shuffleKernel = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @shuf(%in: memref<?xi32>, %out: memref<?xi32>, %valid: memref<?xi1>, %off: i32, %width: i32) kernel {
      %tid = gpu.thread_id x
      %v = loop.load %in[%tid] : memref<?xi32>
      %r, %ok = gpu.shuffle MODE %v, %off, %width : i32
      loop.store %r, %out[%tid] : memref<?xi32>
      loop.store %ok, %valid[%tid] : memref<?xi1>
      gpu.return
    }
  }
  func.func @main(%in: memref<?xi32>, %out: memref<?xi32>, %valid: memref<?xi1>, %off: i32, %width: i32) {
    %c1 = arith.constant 1 : index
    %n = loop.dim %in, 0 : memref<?xi32>
    gpu.launch_func @k::@shuf blocks in (%c1, %c1, %c1) threads in (%n, %c1, %c1) args(%in : memref<?xi32>, %out : memref<?xi32>, %valid : memref<?xi1>, %off : i32, %width : i32)
    return
  }
}
`

func TestGPUShuffleModes(t *testing.T) {
	const n = 64 // two warps
	// source returns the lane read by lane k, as upstream MLIR defines it.
	source := map[string]func(k, off int64) int64{
		"xor":  func(k, off int64) int64 { return k ^ off },
		"down": func(k, off int64) int64 { return k + off },
		"up":   func(k, off int64) int64 { return k - off },
		"idx":  func(_, off int64) int64 { return off },
	}
	for _, mode := range gpu.ShuffleModes {
		m := parseGPU(t, strings.Replace(shuffleKernel, "MODE", mode, 1))
		for _, c := range []struct{ off, width int64 }{{1, 32}, {16, 32}, {3, 32}, {5, 16}, {0, 1}, {31, 32}, {7, 8}} {
			t.Run(fmt.Sprintf("%s/offset=%d/width=%d", mode, c.off, c.width), func(t *testing.T) {
				vs := make([]int64, n)
				for i := range vs {
					vs[i] = int64(100 + i)
				}
				in, _ := FromInt64s(ir.I32, []int64{n}, vs)
				out, _ := NewBuffer(ir.I32, []int64{n})
				valid, _ := NewBuffer(ir.I1, []int64{n})
				off, _ := ScalarInt(ir.I32, c.off)
				width, _ := ScalarInt(ir.I32, c.width)
				if _, err := New(m).Call("main", BufferFromTensor(in), out, valid, off, width); err != nil {
					t.Fatal(err)
				}
				gotT, _ := out.Tensor()
				validT, _ := valid.Tensor()
				got, gotValid := gotT.Int64s(), validT.Int64s()
				for i := range int64(n) {
					lane, warp := i%32, i/32
					src := source[mode](lane, c.off)
					want, wantValid := vs[i], int64(0)
					if src >= 0 && src < c.width {
						want, wantValid = vs[warp*32+src], 1
					}
					if got[i] != want || gotValid[i] != wantValid {
						t.Errorf("thread %d: got (%d, %d), want (%d, %d)", i, got[i], gotValid[i], want, wantValid)
					}
				}
			})
		}
	}
}

// warpSum gives every lane the sum of its warp with a butterfly of
// gpu.shuffle xor.
const warpSum = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @wsum(%in: memref<?xf32>, %out: memref<?xf32>) kernel {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %w = arith.constant 32 : i32
      %o16 = arith.constant 16 : i32
      %o8 = arith.constant 8 : i32
      %o4 = arith.constant 4 : i32
      %o2 = arith.constant 2 : i32
      %o1 = arith.constant 1 : i32
      %v0 = loop.load %in[%i] : memref<?xf32>
      %r1, %k1 = gpu.shuffle xor %v0, %o16, %w : f32
      %v1 = arith.addf %v0, %r1 : f32
      %r2, %k2 = gpu.shuffle xor %v1, %o8, %w : f32
      %v2 = arith.addf %v1, %r2 : f32
      %r3, %k3 = gpu.shuffle xor %v2, %o4, %w : f32
      %v3 = arith.addf %v2, %r3 : f32
      %r4, %k4 = gpu.shuffle xor %v3, %o2, %w : f32
      %v4 = arith.addf %v3, %r4 : f32
      %r5, %k5 = gpu.shuffle xor %v4, %o1, %w : f32
      %v5 = arith.addf %v4, %r5 : f32
      loop.store %v5, %out[%i] : memref<?xf32>
      gpu.return
    }
  }
  func.func @main(%in: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@wsum blocks in (%c2, %c1, %c1) threads in (%c64, %c1, %c1) args(%in : memref<?xf32>, %out : memref<?xf32>)
    return %out : memref<?xf32>
  }
}
`

func TestGPUWarpReduction(t *testing.T) {
	m := parseGPU(t, warpSum)
	const n = 128
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = float64(i * i % 97)
	}
	res, err := New(m).Call("main", f32Buffer(t, []int64{n}, vs...), f32Buffer(t, []int64{n}, make([]float64, n)...))
	if err != nil {
		t.Fatal(err)
	}
	got := bufferFloats(t, res[0])
	for i := range n {
		want := 0.0
		for _, v := range vs[i/32*32 : i/32*32+32] {
			want += v
		}
		if got[i] != want {
			t.Errorf("lane %d: warp sum %v, want %v", i, got[i], want)
		}
	}
}

// divergent wraps a kernel body that runs with 64 threads in one block;
// %tid, %c16 and the constants %w, %one are defined.
const divergent = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @bad() kernel {
      %tid = gpu.thread_id x
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %tid, %c16 : index
      %w = arith.constant 32 : i32
      %one = arith.constant 1 : i32
      %f = arith.constant 1.0 : f32
BODY
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@bad blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
    return
  }
}
`

// warpExchange has each of 64 threads write 3·tid to workgroup memory,
// meet its warp at gpu.warp_sync and read the value of lane tid xor 5.
const warpExchange = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @swap(%out: memref<?xi32>) workgroup(%buf : memref<64xi32, 3>) kernel {
      %tid = gpu.thread_id x
      %c3 = arith.constant 3 : index
      %c5 = arith.constant 5 : index
      %v = arith.muli %tid, %c3 : index
      %vi = arith.index_cast %v : index to i32
      loop.store %vi, %buf[%tid] : memref<64xi32, 3>
      "gpu.warp_sync"() : () -> ()
      %j = arith.xori %tid, %c5 : index
      %r = loop.load %buf[%j] : memref<64xi32, 3>
      loop.store %r, %out[%tid] : memref<?xi32>
      gpu.return
    }
  }
  func.func @main(%out: memref<?xi32>) -> memref<?xi32> {
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @k::@swap blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%out : memref<?xi32>)
    return %out : memref<?xi32>
  }
}
`

// TestGPUWarpSync checks that the lanes of a warp see one another's
// workgroup-memory writes after gpu.warp_sync.
func TestGPUWarpSync(t *testing.T) {
	m := parseGPU(t, warpExchange)
	out, err := NewBuffer(ir.I32, []int64{64})
	if err != nil {
		t.Fatal(err)
	}
	res, err := New(m).Call("main", out)
	if err != nil {
		t.Fatal(err)
	}
	tt, err := res[0].(*Buffer).Tensor()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range tt.Int64s() {
		if want := int64(3 * (i ^ 5)); v != want {
			t.Errorf("thread %d read %v, want %v", i, v, want)
		}
	}
}

func TestGPUDivergenceErrors(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"warp sync in an if", `
      "loop.if"(%low) ({
        "gpu.warp_sync"() : () -> ()
        loop.yield
      }, {
      }) : (i1) -> ()`, "'gpu.warp_sync' needs all 32 lanes of warp 0; lane 16 is not active"},
		{"barrier in an if", `
      "loop.if"(%low) ({
        gpu.barrier
        loop.yield
      }, {
      }) : (i1) -> ()`, "divergent barrier: 48 of the 64 threads of the block exited without reaching it (threads 16-63)"},
		{"different barriers", `
      "loop.if"(%low) ({
        gpu.barrier
        loop.yield
      }, {
        gpu.barrier
        loop.yield
      }) : (i1) -> ()`, "divergent 'gpu.barrier': threads of the block wait at different synchronization points"},
		{"shuffle and barrier", `
      "loop.if"(%low) ({
        %r, %ok = gpu.shuffle xor %f, %one, %w : f32
        loop.yield
      }, {
        gpu.barrier
        loop.yield
      }) : (i1) -> ()`, "deadlock: every thread of the block waits and none can proceed"},
		{"shuffle reads an exited lane", `
      "loop.if"(%low) ({
        %r, %ok = gpu.shuffle xor %f, %c16i, %w : f32
        loop.yield
      }, {
      }) : (i1) -> ()`, "lane 0 of warp 0 (thread 0) reads lane 16, which is not active"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := strings.ReplaceAll(c.body, "%c16i", "%c16i32")
			if strings.Contains(body, "%c16i32") {
				body = "      %c16i32 = arith.constant 16 : i32" + body
			}
			m := parseGPU(t, strings.Replace(divergent, "BODY", body, 1))
			done := make(chan error, 1)
			go func() {
				_, err := New(m).Call("main")
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got error %v, want %q", err, c.want)
				}
				if !strings.Contains(err.Error(), "k.mlir:") || !strings.Contains(err.Error(), "in block (0, 0, 0) of the launch here") {
					t.Errorf("error is not located at the op and the launch: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the launch hangs")
			}
		})
	}
}

func TestGPULaunchErrors(t *testing.T) {
	m := parseGPU(t, vectorAdd)
	a := ramp(t, 8, 1)
	for _, c := range []struct {
		name        string
		grid, block int64
		want        string
	}{
		{"empty grid", 0, 32, "sizes must be positive"},
		{"huge block", 1, 2048, "block of (2048, 1, 1) threads exceeds 1024 threads"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(m).Call("main", a, a, a, indexScalar(c.grid), indexScalar(c.block))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// BenchmarkGPUVectorAdd simulates 64 blocks of 256 threads over 16k elements.
func BenchmarkGPUVectorAdd(b *testing.B) {
	m := parseGPU(b, vectorAdd)
	const n = 16384
	a, c := ramp(b, n, 1), ramp(b, n, 2)
	out := f32Buffer(b, []int64{n}, make([]float64, n)...)
	in := New(m)
	for b.Loop() {
		if _, err := in.Call("main", a, c, out, indexScalar(64), indexScalar(256)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGPUPrivateBuffers: every thread gets its own private attribution;
// each reverses its 4 elements through it, with a barrier between the
// writes and the reads, so shared buffers would mix the threads' values.
func TestGPUPrivateBuffers(t *testing.T) {
	m := parseGPU(t, `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @rev(%in: memref<?xf32>, %out: memref<?xf32>) private(%tmp : memref<4xf32, 5>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %base = arith.muli %tid, %c4 : index
      "loop.for"(%c0, %c4, %c1) ({
      ^bb0(%i: index):
        %j = arith.addi %base, %i : index
        %x = loop.load %in[%j] : memref<?xf32>
        loop.store %x, %tmp[%i] : memref<4xf32, 5>
        loop.yield
      }) : (index, index, index) -> ()
      gpu.barrier
      "loop.for"(%c0, %c4, %c1) ({
      ^bb0(%i: index):
        %r = arith.subi %c3, %i : index
        %x = loop.load %tmp[%r] : memref<4xf32, 5>
        %j = arith.addi %base, %i : index
        loop.store %x, %out[%j] : memref<?xf32>
        loop.yield
      }) : (index, index, index) -> ()
      gpu.return
    }
  }
  func.func @main(%in: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    gpu.launch_func @k::@rev blocks in (%c1, %c1, %c1) threads in (%c8, %c1, %c1) args(%in : memref<?xf32>, %out : memref<?xf32>)
    return %out : memref<?xf32>
  }
}
`)
	in, out := ramp(t, 32, 1), f32Buffer(t, []int64{32}, make([]float64, 32)...)
	res, err := New(m).Call("main", in, out)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range bufferFloats(t, res[0]) {
		if want := float64(i/4*4 + 3 - i%4); v != want {
			t.Fatalf("out[%d] = %v, want %v", i, v, want)
		}
	}
}

// TestGPUUpperBound: an id op's upper_bound is a promise; a launch that
// breaks it is reported instead of running on.
func TestGPUUpperBound(t *testing.T) {
	m := parseGPU(t, `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @ids() kernel {
      %t = gpu.thread_id x upper_bound 4
      %b = gpu.block_id x upper_bound 2
      gpu.return
    }
  }
  func.func @main(%blocks: index, %threads: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@ids blocks in (%blocks, %c1, %c1) threads in (%threads, %c1, %c1)
    return
  }
}
`)
	for _, c := range []struct {
		name            string
		blocks, threads int64
		want            string // "" when the launch runs
	}{
		{"within", 2, 4, ""},
		{"threads", 1, 5, "is 4, not below its upper_bound 4"},
		{"blocks", 3, 1, "is 2, not below its upper_bound 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(m).Call("main", indexScalar(c.blocks), indexScalar(c.threads))
			switch {
			case c.want == "" && err != nil:
				t.Fatal(err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
