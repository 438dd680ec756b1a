package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// wgmmaCallRE is a subroutine call in PTX, or a 64-bit division or
// remainder (which ptxas compiles to one).
var wgmmaCallRE = regexp.MustCompile(`\bcall(\.uni)?\s|\b(div|rem)\.[us]64\b`)

// TestWGMMAGemmPTX compiles the bench's mm_bias_gelu with every wgmma
// tiling through both PTX backends for sm_90a, assembles it with the
// offline ptxas and checks that the products are wgmma.mma_async reading
// both operands from shared memory, that nothing spills, that the kernel
// calls no subroutine, and that ptxas does not serialize the wgmma (its
// "Potential Performance Loss" warning: it would wait for each product
// before issuing the copies).
func TestWGMMAGemmPTX(t *testing.T) {
	ptxas := ptxasPath(t)
	for _, tile := range togpu.MMATiles {
		if !tile.WGMMA {
			continue
		}
		m := lowerGraph(t, mmBiasGelu, mmaPipeline(tile))
		gms := llvm.GPUModules(m)
		if len(gms) != 1 || gms[0].Attr(gpu.PTXTargetAttr) == nil {
			t.Fatalf("%s: the gpu.module does not ask for %s", tile, gpu.WGMMATarget)
		}
		mod, err := llvm.TranslateAll(gms)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range nvptx.BackendNames() {
			t.Run(tile.String()+"/"+name, func(t *testing.T) {
				be, err := nvptx.New(name)
				if err != nil {
					t.Fatal(err)
				}
				ptx, err := be.Compile(mod, nvptx.Options{Target: gpu.WGMMATarget})
				if err != nil {
					if name == "llc" {
						t.Skipf("llc backend unavailable: %v", err)
					}
					t.Fatal(err)
				}
				// A k tile's 4 k16 steps, in the main loop and the loop
				// of the last tiles (one loop with Overlap).
				want, loops := fmt.Sprintf("wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16", tile.N), 2
				if tile.Overlap || tile.Specialized {
					loops = 1
				}
				if n := strings.Count(ptx, want); n != 4*loops {
					t.Errorf("%d %s in the PTX, want %d", n, want, 4*loops)
				}
				// (A cluster's size is the kernel's; its B tiles multicast.)
				for _, want := range []string{".reqnctapercluster 2, 1, 1", ".multicast::cluster", "mapa.shared::cluster"} {
					if strings.Contains(ptx, want) != (tile.Cluster == 2) {
						t.Errorf("%q in the PTX: %v, want %v", want, !(tile.Cluster == 2), tile.Cluster == 2)
					}
				}
				// No subroutine call (a 64-bit division by a variable is
				// one): the driver's ptxas (CUDA 13) serializes every
				// wgmma of a kernel that calls, a wait after each product
				// (session 13's ncu of the device's SASS), which the
				// offline ptxas 12.4 does not report.
				if c := wgmmaCallRE.FindString(ptx); c != "" {
					t.Errorf("a call in the wgmma kernel: %q", c)
				}
				// (setup bounds the registers of a block above 256 threads.)
				if want := fmt.Sprintf(".maxntid %d, 1, 1", 32*tile.Warps()); tile.Warps() > 8 && !strings.Contains(ptx, want) {
					t.Errorf("no %q: the JIT may give the kernel more registers than a block of it can have", want)
				}
				file := filepath.Join(t.TempDir(), "k.ptx")
				if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := osexec.Command(ptxas, "-arch=sm_90a", "-O3", "-v", "-o", os.DevNull, file).CombinedOutput()
				if err != nil {
					t.Fatalf("ptxas: %v\n%s", err, out)
				}
				if strings.Contains(string(out), "Performance Loss") {
					t.Errorf("ptxas serializes the wgmma:\n%s", out)
				}
				// (ptxas ignores a setmaxnreg it cannot apply, with a warning.)
				if strings.Contains(string(out), "setmaxnreg") {
					t.Errorf("ptxas does not apply setmaxnreg:\n%s", out)
				}
				regs, spills := registersRE.FindSubmatch(out), spillRE.FindSubmatch(out)
				if regs == nil || spills == nil {
					t.Fatalf("no register or spill count in\n%s", out)
				}
				if string(spills[1]) != "0" || string(spills[2]) != "0" {
					t.Errorf("spills: %s", spills[0])
				}
				r, _ := strconv.Atoi(string(regs[1]))
				t.Logf("%d registers a thread, %d threads, %d bytes of shared memory", r, 32*tile.Warps(), tile.SharedBytes())
			})
		}
	}
}

// TestWGMMAOverlapLoop checks the order of the Overlap kernels' main
// loop, which decides which stage the copies may overwrite: the wait for
// the copies of the tile (leaving the groups of the tiles ahead), the
// barrier, the product, then the copies of the tile Stages−2 ahead, into
// the stage of the product two tiles back (complete in every thread once
// each has issued the product before). Copies before the barrier, or
// further ahead, would overwrite a stage a product may still read.
func TestWGMMAOverlapLoop(t *testing.T) {
	for _, tile := range togpu.MMATiles {
		if !tile.Overlap {
			continue
		}
		t.Run(tile.String(), func(t *testing.T) {
			m := lowerGraph(t, mmBiasGelu, mmaPipeline(tile))
			var body *ir.Block
			m.Walk(func(o *ir.Operation) bool {
				if o.Name() == gpu.WGMMAOp {
					body = o.Block()
				}
				return true
			})
			if body == nil || body.ParentOp().Name() != loop.ForOp {
				t.Fatal("no gpu.wgmma in a loop.for")
			}
			ahead := tile.Stages - 2
			var barriers, products, copies []int
			wait := int64(-1)
			for i, o := range body.Ops() {
				switch o.Name() {
				case gpu.BarrierOp:
					barriers = append(barriers, i)
				case gpu.WGMMAOp:
					products = append(products, i)
				case gpu.CpAsyncWaitOp:
					wait = gpu.IntProp(o, gpu.PendingAttr, -1)
				}
				o.Walk(func(in *ir.Operation) bool {
					if in.Name() == gpu.CpAsyncOp {
						copies = append(copies, i)
					}
					return true
				})
			}
			switch {
			case len(barriers) != 1 || len(products) != 1 || len(copies) == 0:
				t.Fatalf("%d barriers, %d products, %d copies in the loop; want 1, 1 and some", len(barriers), len(products), len(copies))
			case wait != ahead-1:
				t.Errorf("the loop waits for the copies leaving %d groups, want %d (copies %d tiles ahead)", wait, ahead-1, ahead)
			case products[0] < barriers[0]:
				t.Errorf("the product (op %d) before the barrier (op %d)", products[0], barriers[0])
			case copies[0] < products[0]:
				t.Errorf("a copy (op %d) before the product (op %d)", copies[0], products[0])
			}
		})
	}
}

// TestWSLoops checks the order of the warp-specialized kernels' two
// k loops, which decides whether a stage is read while it is written:
// the producer's waits for the stage to be free before copying into it,
// then completes the iteration before (its copies awaited leaving the
// newest group, fenced for the tensor cores, then its arrival), or with
// TMA expects the stage's bytes before issuing its copies; the
// consumers' waits for the stage to be full before the product, and
// frees a stage only after issuing the next product (which completes the
// one before).
func TestWSLoops(t *testing.T) {
	for _, tile := range togpu.MMATiles {
		if !tile.Specialized {
			continue
		}
		t.Run(tile.String(), func(t *testing.T) {
			m := lowerGraph(t, mmBiasGelu, mmaPipeline(tile))
			var order [2][]string // the producer's and the consumers' loop
			m.Walk(func(o *ir.Operation) bool {
				if o.Name() != loop.ForOp {
					return true
				}
				var ops []string
				role, inner := -1, true
				for _, in := range loop.Body(o).Ops() {
					in.Walk(func(c *ir.Operation) bool {
						name := c.Name()
						switch name {
						case loop.ForOp:
							inner = false
						case gpu.CpAsyncOp, gpu.TMALoadOp:
							role = 0
						case gpu.WGMMAOp:
							role = 1
						case gpu.CpAsyncWaitOp:
							name += fmt.Sprint(gpu.IntProp(c, gpu.PendingAttr, -1))
						case gpu.MbarrierWaitOp, gpu.MbarrierArriveOp, gpu.FenceProxyAsyncOp, gpu.MbarrierExpectTxOp, gpu.MbarrierArriveClusterOp:
						default:
							return true
						}
						if len(ops) == 0 || ops[len(ops)-1] != name {
							ops = append(ops, name)
						}
						return true
					})
				}
				if role >= 0 && inner {
					order[role] = ops
				}
				return true
			})
			want := [2][]string{
				{gpu.MbarrierWaitOp, gpu.CpAsyncOp, gpu.CpAsyncWaitOp + "1", gpu.FenceProxyAsyncOp, gpu.MbarrierArriveOp},
				{gpu.MbarrierWaitOp, gpu.WGMMAOp, gpu.MbarrierArriveOp},
			}
			if tile.TMA { // the stage's bytes expected, then its copies
				want[0] = []string{gpu.MbarrierWaitOp, gpu.MbarrierExpectTxOp, gpu.TMALoadOp}
			}
			if tile.Cluster > 1 { // freed in every block of the cluster
				want[1] = append(want[1], gpu.MbarrierArriveClusterOp)
			}
			for r, name := range []string{"producer", "consumers"} {
				if !slices.Equal(order[r], want[r]) {
					t.Errorf("the %s' loop does %v, want %v", name, order[r], want[r])
				}
			}
		})
	}
}

// TestWSPersistentTiles runs the persistent warp-specialized kernels, with
// cp.async and with TMA copies, on a grid of two blocks in the
// interpreter, so that each block loops over several output tiles (tails
// in M, N and K included, batched with rank-3 tensor maps; with more k
// tiles a block than stages, the barriers' phases wrap across tiles),
// and compares with the graph program on random inputs.
func TestWSPersistentTiles(t *testing.T) {
	for _, tma := range []bool{false, true} {
		tile := togpu.MMATile{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, Persistent: 2, TMA: tma}
		t.Run(tile.String(), func(t *testing.T) { testPersistentTiles(t, tile) })
	}
}

// TestWS192Tiles runs the 192-wide TMA tiling (three B panels a stage,
// a tile count along N by division), alone and persistent on two blocks,
// in the interpreter on testPersistentTiles's products (N tails of 136,
// 104 and 72; B stored [N, K] in one box of 192 rows) against the graph
// program.
func TestWS192Tiles(t *testing.T) {
	tile := togpu.MMATile{M: 128, N: 192, K: 64, Stages: 5, WGMMA: true, Specialized: true, TMA: true}
	persistent := tile
	persistent.Persistent = 2
	for _, tile := range []togpu.MMATile{tile, persistent} {
		t.Run(tile.String(), func(t *testing.T) { testPersistentTiles(t, tile) })
	}
}

// TestWSClusterTiles runs the tilings whose blocks pair up in clusters,
// sharing B's tile by multicast, in the interpreter (which runs a
// cluster's blocks together): two tile rows of a batch of two, five k
// tiles over four stages, B stored [N, K] (each block copies half of its
// rows) with a tail in N, and compares with the graph program; an odd
// number of tile rows takes the kernel without clusters. Persistent on
// one cluster, its two blocks walk every pair of tiles, their barriers'
// phases wrapping across tiles.
func TestWSClusterTiles(t *testing.T) {
	persistent := clusterTile
	persistent.Persistent = 2
	for _, tile := range []togpu.MMATile{clusterTile, persistent} {
		t.Run(tile.String(), func(t *testing.T) { testClusterTiles(t, tile) })
	}
}

func testClusterTiles(t *testing.T, tile togpu.MMATile) {
	testWSTiles(t, tile, []wsCase{
		{"batched", "%x: tensor<2x200x72xbf16>, %w: tensor<2x72x520xbf16>", "tensor<2x200x520xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<2x200x72xbf16>, tensor<2x72x520xbf16>) -> tensor<2x200x520xbf16>`, 2, false},
		{"many-k-tiles", "%x: tensor<256x304xbf16>, %w: tensor<304x296xbf16>", "tensor<256x296xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<256x304xbf16>, tensor<304x296xbf16>) -> tensor<256x296xbf16>`, 2, false},
		{"b-transposed", "%x: tensor<136x136xbf16>, %w: tensor<264x136xbf16>", "tensor<136x264xbf16>",
			`%t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<264x136xbf16>) -> tensor<136x264xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<136x136xbf16>, tensor<136x264xbf16>) -> tensor<136x264xbf16>`, 2, false},
		{"odd-tile-rows", "%x: tensor<260x64xbf16>, %w: tensor<64x264xbf16>", "tensor<260x264xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<260x64xbf16>, tensor<64x264xbf16>) -> tensor<260x264xbf16>`, 1, false},
	})
}

// wsCase is a product for testWSTiles: the function's arguments, result
// type and body, the cluster size its kernel must have, and whether a
// Staged tile stages its epilogue (gpu.warp_sync in the kernel).
type wsCase struct {
	name, args, result, body string
	cluster                  int64
	staged                   bool
}

// TestWSStagedTiles runs the TMA tilings whose epilogue goes through
// workgroup memory, alone and persistent on two blocks, in the
// interpreter against the graph program: tails in M and in N (whole
// 16-byte chunks: a pass partly and wholly past the output), a batch, B
// stored [N, K], a fused bias and GELU, f16; and a product the staged
// epilogue does not take (N not a multiple of 8) keeps the plain one.
func TestWSStagedTiles(t *testing.T) {
	tile := togpu.MMATile{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Specialized: true, TMA: true, Staged: true}
	persistent := tile
	persistent.Persistent = 2
	for _, tile := range []togpu.MMATile{tile, persistent} {
		t.Run(tile.String(), func(t *testing.T) {
			testWSTiles(t, tile, []wsCase{
				{"batched", "%x: tensor<2x200x72xbf16>, %w: tensor<2x72x520xbf16>", "tensor<2x200x520xbf16>",
					`%r = "graph.matmul"(%x, %w) : (tensor<2x200x72xbf16>, tensor<2x72x520xbf16>) -> tensor<2x200x520xbf16>`, 1, true},
				{"many-k-tiles", "%x: tensor<260x304xbf16>, %w: tensor<304x296xbf16>", "tensor<260x296xbf16>",
					`%r = "graph.matmul"(%x, %w) : (tensor<260x304xbf16>, tensor<304x296xbf16>) -> tensor<260x296xbf16>`, 1, true},
				{"b-transposed-bias-gelu", "%x: tensor<136x136xbf16>, %w: tensor<264x136xbf16>, %b: tensor<264xbf16>", "tensor<136x264xbf16>",
					`%t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<264x136xbf16>) -> tensor<136x264xbf16>
  %0 = "graph.matmul"(%x, %t) : (tensor<136x136xbf16>, tensor<136x264xbf16>) -> tensor<136x264xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<136x264xbf16>, tensor<264xbf16>) -> tensor<136x264xbf16>
  %r = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<136x264xbf16>) -> tensor<136x264xbf16>`, 1, true},
				{"f16-n-40", "%x: tensor<70x64xf16>, %w: tensor<64x40xf16>", "tensor<70x40xf16>",
					`%r = "graph.matmul"(%x, %w) : (tensor<70x64xf16>, tensor<64x40xf16>) -> tensor<70x40xf16>`, 1, true},
				// (B stored [N, K], so that TMA reads it.)
				{"n-36", "%x: tensor<70x64xbf16>, %w: tensor<36x64xbf16>", "tensor<70x36xbf16>",
					`%t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<36x64xbf16>) -> tensor<64x36xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<70x64xbf16>, tensor<64x36xbf16>) -> tensor<70x36xbf16>`, 1, false},
			})
		})
	}
}

func testPersistentTiles(t *testing.T, tile togpu.MMATile) {
	testWSTiles(t, tile, []wsCase{
		// 2 × 2 × 3 tiles, 2 k tiles each.
		{"batched", "%x: tensor<2x200x72xbf16>, %w: tensor<2x72x520xbf16>", "tensor<2x200x520xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<2x200x72xbf16>, tensor<2x72x520xbf16>) -> tensor<2x200x520xbf16>`, 1, false},
		// 3 × 2 tiles of 5 k tiles: 15 iterations a block over 4 stages
		// (rows of 16-byte multiples, which TMA needs).
		{"many-k-tiles", "%x: tensor<260x304xbf16>, %w: tensor<304x296xbf16>", "tensor<260x296xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<260x304xbf16>, tensor<304x296xbf16>) -> tensor<260x296xbf16>`, 1, false},
		// B stored [N, K]: TMA copies its tile in one box of N rows.
		{"b-transposed", "%x: tensor<136x136xbf16>, %w: tensor<264x136xbf16>", "tensor<136x264xbf16>",
			`%t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<264x136xbf16>) -> tensor<136x264xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<136x136xbf16>, tensor<136x264xbf16>) -> tensor<136x264xbf16>`, 1, false},
	})
}

// testWSTiles lowers each case with tile, runs it in the interpreter on
// random inputs and compares with the graph program.
func testWSTiles(t *testing.T, tile togpu.MMATile, cases []wsCase) {
	cfg := togpu.DefaultConfig
	cfg.MMATile = tile
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("func.func @main(%s) -> %s {\n  %s\n  return %%r : %s\n}\n", c.args, c.result, c.body, c.result)
			ctx := dialects.NewContext()
			ref, err := ir.Parse(ctx, src, ir.ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := ir.Parse(ctx, src, ir.ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pm, err := passes.Parse("builtin.module(lower-to-loop)")
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, m); err != nil {
				t.Fatal(err)
			}
			if err := togpu.Run(ctx, m, cfg); err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(m); err != nil {
				t.Fatal(err)
			}
			text := ir.Sprint(m, ir.PrintOptions{})
			if !strings.Contains(text, `"gpu.mbarrier_wait"`) || !strings.Contains(text, `"gpu.wgmma"`) {
				t.Fatal("no warp-specialized kernel")
			}
			if got := strings.Contains(text, `"gpu.tma_load"`); got != tile.TMA {
				t.Fatalf("gpu.tma_load in the kernel: %v, want %v", got, tile.TMA)
			}
			if got, want := strings.Contains(text, `"gpu.warp_sync"`), tile.Staged && c.staged; got != want {
				t.Fatalf("a staged epilogue (gpu.warp_sync): %v, want %v", got, want)
			}
			var cluster int64
			m.Walk(func(o *ir.Operation) bool {
				if o.Name() == gpu.FuncOp && gpu.IsKernel(o) {
					cluster = gpu.ClusterSize(o)
				}
				return true
			})
			if cluster != c.cluster || strings.Contains(text, "multicast") != (c.cluster > 1) {
				t.Fatalf("a kernel in clusters of %d (multicast: %v), want %d", cluster, strings.Contains(text, "multicast"), c.cluster)
			}
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			var args []interp.Value
			for _, in := range ir.NewSymTable(ref).Lookup("main").Region(0).Front().Arguments() {
				tt := in.Type().(*ir.TensorType)
				args = append(args, randomFloats(t, rng, tt.ElementType(), tt.Shape()))
			}
			want, err := interp.New(ref).Call("main", args...)
			if err != nil {
				t.Fatal(err)
			}
			bufs := make([]interp.Value, len(args))
			for i, a := range args {
				bufs[i] = interp.BufferFromTensor(a.(*interp.Tensor))
			}
			got, err := interp.New(m).Call("main", bufs...)
			if err != nil {
				t.Fatal(err)
			}
			gt, ok := got[0].(*interp.Tensor)
			if buf, isBuf := got[0].(*interp.Buffer); isBuf {
				if gt, err = buf.Tensor(); err != nil {
					t.Fatal(err)
				}
				ok = true
			}
			if !ok {
				t.Fatalf("result %T", got[0])
			}
			gs, ws := gt.Float64s(), want[0].(*interp.Tensor).Float64s()
			for i := range ws {
				if d := math.Abs(gs[i] - ws[i]); !(d <= math.Max(1, math.Abs(ws[i]))/128) {
					t.Fatalf("element %d: kernel %g, graph %g", i, gs[i], ws[i])
				}
			}
		})
	}
}
