package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// gemm8192 is the bench's gemm_own_bf16: an 8192³ bf16 product.
const gemm8192 = `func.func @main(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
`

// gemm8192BT is gemm8192 with B stored [N, K] (its rows along K, as
// the tensor cores read B without transposing it).
const gemm8192BT = `func.func @main(%x: tensor<8192x8192xbf16>, %w: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
`

// gemmFlops is the arithmetic of gemm8192.
const gemmFlops = 2 * 8192 * 8192 * 8192

// gemmDevice is gemm8192 (or gemm8192BT) on the device: the runtime,
// fresh random inputs and cuBLASLt's product of them, the reference.
type gemmDevice struct {
	src  string
	rt   *exec.Runtime
	args []interp.Value
	lib  *exec.Program // the product on cuBLASLt
	ref  []float64
}

// openRuntime opens the device, closed when tb ends, or skips tb
// without one.
func openRuntime(tb testing.TB) *exec.Runtime {
	tb.Helper()
	rt, err := exec.Open(0)
	if err != nil {
		tb.Skipf("no GPU: %v", err)
	}
	tb.Cleanup(func() {
		if err := rt.Close(); err != nil {
			tb.Error(err)
		}
	})
	return rt
}

// openGemm opens the device and computes the reference (skipping without
// a device or cuBLASLt); the inputs' seed is logged.
func openGemm(tb testing.TB, src string) *gemmDevice {
	tb.Helper()
	rt := openRuntime(tb)
	seed := uint64(time.Now().UnixNano())
	tb.Logf("inputs from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	g := &gemmDevice{src: src, rt: rt, args: []interp.Value{randomBF16(tb, rng, []int64{8192, 8192}), randomBF16(tb, rng, []int64{8192, 8192})}}
	g.lib = g.compile(tb, "matmul="+togpu.MatmulCuBLASLt)
	want, err := g.lib.Run(rt, "main", g.args)
	if err != nil {
		tb.Skipf("no cuBLASLt: %v", err)
	}
	wt, err := want[0].(*interp.Buffer).Tensor()
	if err != nil {
		tb.Fatal(err)
	}
	g.ref = wt.Float64s()
	return g
}

// compile lowers g's product with the convert-loop-to-gpu options.
func (g *gemmDevice) compile(tb testing.TB, options string) *exec.Program {
	tb.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, g.src, ir.ParseOptions{Filename: "gemm.mlir"})
	if err != nil {
		tb.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(lower-to-loop,convert-loop-to-gpu{" + options + "},canonicalize,cse)")
	if err != nil {
		tb.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		tb.Fatal(err)
	}
	p, err := exec.Compile(m, exec.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// check runs p and compares its product with cuBLASLt's (both accumulate
// in f32: within one bf16 ulp), returning the largest difference.
func (g *gemmDevice) check(tb testing.TB, name string, p *exec.Program) float64 {
	tb.Helper()
	got, err := p.Run(g.rt, "main", g.args)
	if err != nil {
		tb.Fatal(err)
	}
	gt, err := got[0].(*interp.Buffer).Tensor()
	if err != nil {
		tb.Fatal(err)
	}
	worst := 0.0
	for i, v := range gt.Float64s() {
		w := g.ref[i]
		d := math.Abs(v - w)
		if !(d <= math.Max(1, math.Abs(w))/128) {
			tb.Fatalf("element %d: %s %g, cuBLASLt %g", i, name, v, w)
		}
		worst = math.Max(worst, d)
	}
	return worst
}

// mmaTilesOnGPU are the tilings the device tests time: the default and
// every wgmma one.
func mmaTilesOnGPU() []togpu.MMATile {
	var ts []togpu.MMATile
	for _, tile := range togpu.MMATiles {
		if tile.WGMMA || tile == togpu.DefaultConfig.MMATile {
			ts = append(ts, tile)
		}
	}
	return ts
}

// TestGPUWGMMAGemm runs the 8192³ bf16 product on the device (skipped
// without one, or without cuBLASLt) with cuBLASLt, the default mma.sync
// tiling and every wgmma tiling, on fresh random inputs (the seed is
// logged); each of Strata's results is compared with cuBLASLt's before
// it is timed, and the log gives each one's TFLOP/s and its ratio to
// cuBLASLt's in the same process.
func TestGPUWGMMAGemm(t *testing.T) {
	timeGemmTiles(t, gemm8192, "gemm 8192³", func(togpu.MMATile) bool { return true })
}

// TestGPUWGMMAGemmBT is TestGPUWGMMAGemm's timing with B stored [N, K]
// (gemm8192BT), for the TMA tilings: the tensor cores read B's stages
// K-major instead of transposing MN-major ones.
func TestGPUWGMMAGemmBT(t *testing.T) {
	timeGemmTiles(t, gemm8192BT, "gemm 8192³ (B [N, K])", func(tile togpu.MMATile) bool {
		return tile.TMA && tile.Cluster <= 1
	})
}

// timeGemmTiles times cuBLASLt and each tiling of mmaTilesOnGPU that keep
// takes on the product src, each checked against cuBLASLt first; label
// starts each log line.
func timeGemmTiles(t *testing.T, src, label string, keep func(togpu.MMATile) bool) {
	g := openGemm(t, src)
	libMS, err := g.lib.RunTimed(g.rt, "main", g.args, 5, 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s cuBLASLt: %.4f ms, %.0f TFLOP/s", label, libMS, gemmFlops/libMS/1e9)
	for _, tile := range mmaTilesOnGPU() {
		if !keep(tile) {
			continue
		}
		t.Run(tile.String(), func(t *testing.T) {
			p := g.compile(t, fmt.Sprintf("mma-tile=%s", tile))
			text := ir.Sprint(p.Module(), ir.PrintOptions{})
			if tile.TMA && !strings.Contains(text, `"gpu.tma_load"`) {
				t.Fatal("no gpu.tma_load: the TMA tiling copies with cp.async")
			}
			if tile.Cluster > 1 && !strings.Contains(text, "multicast") {
				t.Fatal("no multicast gpu.tma_load: the cluster tiling runs without clusters")
			}
			worst := g.check(t, tile.String(), p)
			ms, err := p.RunTimed(g.rt, "main", g.args, 5, 20)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %.4f ms, %.0f TFLOP/s, %.1f%% of cuBLASLt (max |diff| %g)", label, tile, ms, gemmFlops/ms/1e9, 100*libMS/ms, worst)
		})
	}
}

// BenchmarkGPUWGMMAGemm times b.N launches of the 8192³ bf16 product
// (exec.Bound.Time: each after a cache clear, the median reported as
// ms/launch and TFLOP/s) on cuBLASLt and on each tiling of
// mmaTilesOnGPU, whose product is first compared with cuBLASLt's on the
// same fresh inputs. Long runs (-test.benchtime 800x) show the device's
// steady clock and power under each kernel (nvidia-smi beside it).
func BenchmarkGPUWGMMAGemm(b *testing.B) {
	g := openGemm(b, gemm8192)
	measure := func(b *testing.B, p *exec.Program) {
		ms, err := p.RunTimed(g.rt, "main", g.args, 5, b.N)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(ms, "ms/launch")
		b.ReportMetric(gemmFlops/ms/1e9, "TFLOP/s")
	}
	b.Run("cublaslt", func(b *testing.B) { measure(b, g.lib) })
	for _, tile := range mmaTilesOnGPU() {
		var p *exec.Program // compiled and checked at the first call
		b.Run(tile.String(), func(b *testing.B) {
			if p == nil {
				p = g.compile(b, fmt.Sprintf("mma-tile=%s", tile))
				g.check(b, tile.String(), p)
			}
			measure(b, p)
		})
	}
}

// TestGPUTMAShapes times GPT-2-sized products (8192 tokens: the
// attention's input projection, the MLP's two, and an LM head of 2048 tokens stored [D, V], whose
// 50257 columns TMA cannot address, so that the TMA tiling falls back to
// 128x256x64s4go) with cuBLASLt, the wgmma kernel with its products in
// flight and the TMA tilings (alone, in clusters, with the staged
// epilogue), on fresh random inputs; Strata's products are compared with
// cuBLASLt's before they are timed.
func TestGPUTMAShapes(t *testing.T) {
	staged := tmaTile
	staged.Staged = true
	tiles := []togpu.MMATile{
		{M: 128, N: 256, K: 64, Stages: 4, WGMMA: true, Overlap: true},
		tmaTile,
		clusterTile,
		staged,
	}
	testTMAShapes(t, tiles, []gemmShape{{"qkv", 8192, 768, 2304}, {"mlp-up", 8192, 768, 3072}, {"mlp-down", 8192, 3072, 768}, {"lm-head", 2048, 768, 50257}})
}

// TestGPUOneWave times a product of exactly one wave of 128 × 256 tiles
// on the H200's 132 SMs (12 × 11 tiles) with 256 k tiles each, against
// cuBLASLt: without the last wave's idle SMs of 8192³ (15.5 waves) and
// with twice its k tiles a tile, it separates the k loop's rate from
// the per-tile costs (fill, epilogue) and the tail.
func TestGPUOneWave(t *testing.T) {
	staged := tmaTile
	staged.Staged = true
	persistent := staged
	persistent.Persistent = 132
	testTMAShapes(t, []togpu.MMATile{tmaTile, staged, persistent}, []gemmShape{{"one-wave", 12 * 128, 16384, 11 * 256}})
}

// gemmShape is an M × K × N product of testTMAShapes.
type gemmShape struct {
	name    string
	m, k, n int64
}

// testTMAShapes compares each product with each tiling against
// cuBLASLt's on fresh random inputs and logs their times.
func testTMAShapes(t *testing.T, tiles []togpu.MMATile, shapes []gemmShape) {
	rt := openRuntime(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("inputs from seed %d", seed)
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			src := fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx%[2]dxbf16>, %%w: tensor<%[2]dx%[3]dxbf16>) -> tensor<%[1]dx%[3]dxbf16> {
  %%r = "graph.matmul"(%%x, %%w) : (tensor<%[1]dx%[2]dxbf16>, tensor<%[2]dx%[3]dxbf16>) -> tensor<%[1]dx%[3]dxbf16>
  return %%r : tensor<%[1]dx%[3]dxbf16>
}`, s.m, s.k, s.n)
			rng := rand.New(rand.NewPCG(seed, uint64(s.n)))
			args := []interp.Value{randomBF16(t, rng, []int64{s.m, s.k}), randomBF16(t, rng, []int64{s.k, s.n})}
			_, lib := gpuProgram(t, src, "builtin.module(lower-to-loop,convert-loop-to-gpu{matmul="+togpu.MatmulCuBLASLt+"},canonicalize,cse)")
			want, err := lib.Run(rt, "main", args)
			if err != nil {
				t.Skipf("no cuBLASLt: %v", err)
			}
			wt, err := want[0].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			ref := wt.Float64s()
			libMS, err := lib.RunTimed(rt, "main", args, 5, 20)
			if err != nil {
				t.Fatal(err)
			}
			flops := float64(2 * s.m * s.k * s.n)
			t.Logf("%s cuBLASLt: %.4f ms, %.0f TFLOP/s", s.name, libMS, flops/libMS/1e9)
			for _, tile := range tiles {
				_, p := gpuProgram(t, src, mmaPipeline(tile))
				tma := strings.Contains(ir.Sprint(p.Module(), ir.PrintOptions{}), `"gpu.tma_load"`)
				if tile.TMA && tma != (s.n%8 == 0) {
					t.Fatalf("%s: gpu.tma_load in the kernel: %v, want %v", tile, tma, s.n%8 == 0)
				}
				got, err := p.Run(rt, "main", args)
				if err != nil {
					t.Fatal(err)
				}
				gt, err := got[0].(*interp.Buffer).Tensor()
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range gt.Float64s() {
					if d := math.Abs(v - ref[i]); !(d <= math.Max(1, math.Abs(ref[i]))/128) {
						t.Fatalf("%s: element %d: %g, cuBLASLt %g", tile, i, v, ref[i])
					}
				}
				ms, err := p.RunTimed(rt, "main", args, 5, 20)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s %s: %.4f ms, %.0f TFLOP/s, %.1f%% of cuBLASLt", s.name, tile, ms, flops/ms/1e9, 100*libMS/ms)
			}
		})
	}
}

// TestGPUTMAGraph captures the TMA tilings' product (without and with
// clusters) into a CUDA graph (its tensor maps encoded at the capture,
// with the bound buffers' addresses) and replays it on two sets of fresh
// inputs copied into those buffers, comparing each result with
// cuBLASLt's.
func TestGPUTMAGraph(t *testing.T) {
	for _, tile := range []togpu.MMATile{tmaTile, clusterTile} {
		t.Run(tile.String(), func(t *testing.T) { testTMAGraph(t, tile) })
	}
}

func testTMAGraph(t *testing.T, tile togpu.MMATile) {
	rt := openRuntime(t)
	const src = `func.func @main(%x: tensor<1000x768xbf16>, %w: tensor<768x2304xbf16>) -> tensor<1000x2304xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<1000x768xbf16>, tensor<768x2304xbf16>) -> tensor<1000x2304xbf16>
  return %r : tensor<1000x2304xbf16>
}`
	seed := uint64(time.Now().UnixNano())
	t.Logf("inputs from seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 9))
	inputs := func() []interp.Value {
		return []interp.Value{randomBF16(t, rng, []int64{1000, 768}), randomBF16(t, rng, []int64{768, 2304})}
	}
	_, lib := gpuProgram(t, src, "builtin.module(lower-to-loop,convert-loop-to-gpu{matmul="+togpu.MatmulCuBLASLt+"},canonicalize,cse)")
	_, p := gpuProgram(t, src, mmaPipeline(tile))
	text := ir.Sprint(p.Module(), ir.PrintOptions{})
	if !strings.Contains(text, `"gpu.tma_load"`) || strings.Contains(text, "multicast") != (tile.Cluster > 1) {
		t.Fatal("no gpu.tma_load, or multicast where there are no clusters or none where there are")
	}
	args := inputs()
	b, err := p.Prepare(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Free() })
	if _, err := b.Capture(); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if round > 0 {
			args = inputs()
			if err := b.Update(args); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
		got, err := b.Results()
		if err != nil {
			t.Fatal(err)
		}
		want, err := lib.Run(rt, "main", args)
		if err != nil {
			t.Skipf("no cuBLASLt: %v", err)
		}
		gt, err := got[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		wt, err := want[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		ws := wt.Float64s()
		for i, v := range gt.Float64s() {
			if d := math.Abs(v - ws[i]); !(d <= math.Max(1, math.Abs(ws[i]))/128) {
				t.Fatalf("replay %d: element %d: %g, cuBLASLt %g", round, i, v, ws[i])
			}
		}
	}
}

// TestGPUClusterShapes runs the cluster tilings (without and with
// persistence) on products with tails on the device, on fresh random
// inputs, and compares them with cuBLASLt's: M, K and N tails (1000 ×
// 200 × 520: a pair's second tile partly past M, a k tile of 8, a last
// column tile of 8), B stored [N, K] (each block's TMA copy is half of a
// 256-row box) and a batch of two (pairs within each matrix). Each
// kernel must be the cluster one (multicast copies).
func TestGPUClusterShapes(t *testing.T) {
	rt := openRuntime(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("inputs from seed %d", seed)
	persistent := clusterTile
	persistent.Persistent = 132
	for _, c := range []struct{ name, args, result, body string }{
		{"tails", "%x: tensor<1000x200xbf16>, %w: tensor<200x520xbf16>", "tensor<1000x520xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<1000x200xbf16>, tensor<200x520xbf16>) -> tensor<1000x520xbf16>`},
		{"b-transposed", "%x: tensor<1000x136xbf16>, %w: tensor<264x136xbf16>", "tensor<1000x264xbf16>",
			`%t = "graph.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<264x136xbf16>) -> tensor<136x264xbf16>
  %r = "graph.matmul"(%x, %t) : (tensor<1000x136xbf16>, tensor<136x264xbf16>) -> tensor<1000x264xbf16>`},
		{"batched", "%x: tensor<2x200x136xbf16>, %w: tensor<2x136x264xbf16>", "tensor<2x200x264xbf16>",
			`%r = "graph.matmul"(%x, %w) : (tensor<2x200x136xbf16>, tensor<2x136x264xbf16>) -> tensor<2x200x264xbf16>`},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := fmt.Sprintf("func.func @main(%s) -> %s {\n  %s\n  return %%r : %s\n}\n", c.args, c.result, c.body, c.result)
			ref, lib := gpuProgram(t, src, "builtin.module(lower-to-loop,convert-loop-to-gpu{matmul="+togpu.MatmulCuBLASLt+"},canonicalize,cse)")
			rng := rand.New(rand.NewPCG(seed, uint64(len(c.name))))
			var args []interp.Value
			for _, in := range ir.NewSymTable(ref).Lookup("main").Region(0).Front().Arguments() {
				args = append(args, randomBF16(t, rng, in.Type().(*ir.TensorType).Shape()))
			}
			want, err := lib.Run(rt, "main", args)
			if err != nil {
				t.Skipf("no cuBLASLt: %v", err)
			}
			wt, err := want[0].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			ws := wt.Float64s()
			for _, tile := range []togpu.MMATile{clusterTile, persistent} {
				_, p := gpuProgram(t, src, mmaPipeline(tile))
				if !strings.Contains(ir.Sprint(p.Module(), ir.PrintOptions{}), "multicast") {
					t.Fatalf("%s: no multicast copy: the kernel runs without clusters", tile)
				}
				got, err := p.Run(rt, "main", args)
				if err != nil {
					t.Fatal(err)
				}
				gt, err := got[0].(*interp.Buffer).Tensor()
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range gt.Float64s() {
					if d := math.Abs(v - ws[i]); !(d <= math.Max(1, math.Abs(ws[i]))/128) {
						t.Fatalf("%s: element %d: %g, cuBLASLt %g", tile, i, v, ws[i])
					}
				}
			}
		})
	}
}
