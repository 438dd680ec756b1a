package interp

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
)

// tmaCluster runs clusters of two 32-thread blocks (gpu.cluster_size):
// thread 0 of each block initializes its full barrier (one expect-tx
// arrival) and its empty barrier (one arrival), the cluster meets, and
// the block of rank r (its x index modulo 2) of cluster c multicasts the
// 8 × 32 box at rows 16c + 8r of a 40 × 40 f32 tensor to stage r of both
// blocks, expecting both boxes' 2048 bytes. After its full phase every
// thread copies the two stages out (block b's at 512b), thread 0 arrives
// at the peer's empty barrier and waits for its own (which only the peer
// completes), and the cluster meets again before exiting.
const tmaCluster = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @copy(%src: memref<?xf32> {gpu.tensor_map = {box = array<i64: 8, 32>, inner = array<i64: 40>, swizzle = 128 : i64}}, %out: memref<?xf32>) workgroup(%bars : memref<2xi64, 3>, %buf : memref<512xf32, 3>) kernel attributes {gpu.cluster_size = 2 : i64} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %z = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c256 = arith.constant 256 : index
      %c512 = arith.constant 512 : index
      %one = arith.constant 1 : i32
      %bytes = arith.constant 2048 : i32
      %p0 = arith.constant 0 : i32
      %c0i = arith.constant 0 : i32
      %r = arith.remui %bid, %c2 : index
      %c = arith.divui %bid, %c2 : index
      %row16 = arith.muli %c, %c16 : index
      %row8 = arith.muli %r, %c8 : index
      %row = arith.addi %row16, %row8 : index
      %rowi = arith.index_cast %row : index to i32
      %dst = arith.muli %r, %c256 : index
      %peer = arith.subi %c1, %r : index
      %peeri = arith.index_cast %peer : index to i32
      %first = arith.cmpi eq, %tid, %z : index
      "loop.if"(%first) ({
        "gpu.mbarrier_init"(%bars, %z, %one) : (memref<2xi64, 3>, index, i32) -> ()
        "gpu.mbarrier_init"(%bars, %c1, %one) : (memref<2xi64, 3>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.cluster_arrive"() : () -> ()
      "gpu.cluster_wait"() : () -> ()
      "loop.if"(%first) ({
        "gpu.mbarrier_expect_tx"(%bars, %z, %bytes) : (memref<2xi64, 3>, index, i32) -> ()
        "gpu.tma_load"(%buf, %dst, %bars, %z, %src, %rowi, %c0i) <{multicast = MASK : i64}> : (memref<512xf32, 3>, index, memref<2xi64, 3>, index, memref<?xf32>, i32, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.mbarrier_wait"(%bars, %z, %p0) : (memref<2xi64, 3>, index, i32) -> ()
      %base = arith.muli %bid, %c512 : index
      "loop.for"(%tid, %c512, %c32) ({
      ^bb0(%i: index):
        %v = loop.load %buf[%i] : memref<512xf32, 3>
        %o = arith.addi %base, %i : index
        loop.store %v, %out[%o] : memref<?xf32>
        loop.yield
      }) : (index, index, index) -> ()
      "loop.if"(%first) ({
        "gpu.mbarrier_arrive_cluster"(%bars, %c1, %peeri) : (memref<2xi64, 3>, index, i32) -> ()
        "gpu.mbarrier_wait"(%bars, %c1, %p0) : (memref<2xi64, 3>, index, i32) -> ()
        loop.yield
      }, {
      }) : (i1) -> ()
      "gpu.cluster_arrive"() : () -> ()
      "gpu.cluster_wait"() : () -> ()
      gpu.return
    }
  }
  func.func @main(%src: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
    %c1 = arith.constant 1 : index
    %grid = arith.constant GRID : index
    %c32 = arith.constant 32 : index
    gpu.launch_func @k::@copy blocks in (%grid, %c1, %c1) threads in (%c32, %c1, %c1) args(%src : memref<?xf32>, %out : memref<?xf32>)
    return %out : memref<?xf32>
  }
}
`

func clusterSource(mask, grid string) string {
	return strings.NewReplacer("MASK", mask, "GRID", grid).Replace(tmaCluster)
}

// TestTMAMulticast: in each of two clusters, both blocks hold both
// boxes, each at its stage with the 128-byte swizzle, and the remote
// arrivals complete the peers' barriers.
func TestTMAMulticast(t *testing.T) {
	const rows, cols, blocks = 40, 40, 4
	data := make([]float64, rows*cols)
	for i := range data {
		data[i] = float64(i + 1)
	}
	m := parseGPU(t, clusterSource("3", "4"))
	src := f32Buffer(t, []int64{rows * cols}, data...)
	out := f32Buffer(t, []int64{blocks * 512}, make([]float64, blocks*512)...)
	res, err := New(m).Call("main", src, out)
	if err != nil {
		t.Fatal(err)
	}
	got := bufferFloats(t, res[0])
	for b := range int64(blocks) {
		for stage := range int64(2) {
			for r := range int64(8) {
				for c := range int64(32) {
					off := (4 * (32*r + c)) ^ (r%8)<<4
					want := data[(16*(b/2)+8*stage+r)*cols+c]
					if g := got[512*b+256*stage+off/4]; g != want {
						t.Fatalf("block %d, stage %d, box (%d, %d) = %v, want %v", b, stage, r, c, g, want)
					}
				}
			}
		}
	}
}

// TestClusterErrors: a grid that is not whole clusters, a mask naming a
// block outside the cluster (or any block of a kernel without clusters),
// too few blocks signalling a phase (each block keeps its box: a
// deadlock across the cluster) and an arrival at a rank outside the
// cluster are located errors.
func TestClusterErrors(t *testing.T) {
	fixed := clusterSource("3", "4")
	for _, c := range []struct{ name, from, to, want string }{
		{"grid", `%grid = arith.constant 4 : index`, `%grid = arith.constant 3 : index`, "not whole clusters of 2"},
		{"mask", `multicast = 3 : i64`, `multicast = 4 : i64`, "outside a cluster of 2"},
		{"no-cluster", ` attributes {gpu.cluster_size = 2 : i64}`, ``, "outside a cluster of 1"},
		{"size", `gpu.cluster_size = 2 : i64`, `gpu.cluster_size = 9 : i64`, "from 1 to 8"},
		{"own-only", `multicast = 3 : i64`, `multicast = 1 : i64`, "deadlock: every thread of the cluster"},
		{"rank", `%peeri = arith.index_cast %peer : index to i32`, `%peeri = arith.constant 2 : i32`, "rank 2 is outside the cluster of 2 blocks"},
		{"wait-first", "      \"gpu.cluster_arrive\"() : () -> ()\n      \"gpu.cluster_wait\"() : () -> ()\n", "      \"gpu.cluster_wait\"() : () -> ()\n", "without arriving first"},
		{"arrive-twice", "      %base = arith.muli", "      \"gpu.cluster_arrive\"() : () -> ()\n      %base = arith.muli", "again before waiting"},
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
				in := f32Buffer(t, []int64{40 * 40}, make([]float64, 40*40)...)
				out := f32Buffer(t, []int64{4 * 512}, make([]float64, 4*512)...)
				_, err := New(m).Call("main", in, out)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("got error %v, want %q", err, c.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("hangs")
			}
		})
	}
}

// TestClusterPrepareErrorNamesBlock: when a block of a cluster other than
// the first cannot be prepared (here its workgroup buffer finds the
// memory gone after the first block's), the error names that block.
func TestClusterPrepareErrorNamesBlock(t *testing.T) {
	const src = `module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @big() workgroup(%buf : memref<16777216xf32, 3>) kernel attributes {gpu.cluster_size = 2 : i64} {
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    gpu.launch_func @k::@big blocks in (%c2, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}`
	// Parsed without verification: the verifier refuses 64 MiB of
	// workgroup memory, which the interpreter checks like any buffer.
	ctx := ir.NewContext(builtin.Dialect, funcd.Dialect, arith.Dialect, loop.Dialect, gpu.Dialect)
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "k.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	defer func(p, a func() uint64) { physicalMemory, availableMemory = p, a }(physicalMemory, availableMemory)
	calls := 0
	physicalMemory = func() uint64 { return 1 << 40 }
	availableMemory = func() uint64 {
		if calls++; calls == 1 {
			return 1 << 40
		}
		return 1 << 20
	}
	_, err = New(m).Call("main")
	if err == nil || !strings.Contains(err.Error(), "block (1, 0, 0), rank 1 of its cluster: workgroup buffer 0: a tensor of shape [16777216] and element type f32 needs 64.0 MiB") {
		t.Fatalf("error %v, want one naming block (1, 0, 0) of the cluster", err)
	}
}
