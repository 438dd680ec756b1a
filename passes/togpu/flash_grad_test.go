package togpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// flashGradCases are small attentions for the backward kernels: row and
// key tails, several blocks and tiles both ways, more keys than queries
// and fewer (causal blocks with no query tile), head dims 16 to 128 (the
// dK/dV kernel's 32-query tiles; causal d128 over two blocks of 128 keys,
// the second partial, and whole query tiles), a negative scale, f16.
var flashGradCases = []flashCase{
	{1, 2, 40, 40, 32, false, 0, ir.BF16},
	{1, 2, 40, 40, 32, true, 0, ir.BF16},
	{2, 1, 70, 70, 16, true, 0, ir.BF16},
	{1, 1, 24, 90, 16, true, 0, ir.BF16},
	{1, 1, 130, 70, 64, true, 0, ir.BF16},
	{1, 1, 100, 90, 64, false, 0, ir.BF16},
	{1, 1, 64, 128, 64, true, 0, ir.BF16},
	{1, 1, 150, 100, 64, false, 0.3, ir.BF16},
	{1, 1, 40, 70, 32, false, -0.3, ir.BF16},
	{1, 1, 70, 40, 128, true, 0.5, ir.BF16},
	{1, 1, 67, 100, 128, false, 0, ir.BF16},
	{1, 1, 192, 200, 128, true, 0, ir.BF16},
	{1, 2, 40, 40, 48, true, 0, ir.F16},
}

// gradSource is @main(q, k, v, o, do) returning c's graph.attention_grad.
func (c flashCase) gradSource() string {
	q, k := c.types()
	attrs := fmt.Sprintf("causal = %v", c.causal)
	if c.scale != 0 {
		attrs += fmt.Sprintf(", scale = %e : f64", c.scale) // (a float literal: 4 alone is an integer)
	}
	return fmt.Sprintf(`func.func @main(%%q: %[1]s, %%k: %[2]s, %%v: %[2]s, %%o: %[1]s, %%do: %[1]s) -> (%[1]s, %[2]s, %[2]s) {
  %%r:3 = "graph.attention_grad"(%%q, %%k, %%v, %%o, %%do) <{%[3]s}> : (%[1]s, %[2]s, %[2]s, %[1]s, %[1]s) -> (%[1]s, %[2]s, %[2]s)
  return %%r#0, %%r#1, %%r#2 : %[1]s, %[2]s, %[2]s
}`, q, k, attrs)
}

// flashGradModule returns a module whose @main(q, k, v, do, o, lse, dq,
// dk, dv, dd) launches the forward kernel of f with LSE (writing o and
// lse), then the backward kernels.
// gradTiling is the FlashGrad options of a test: the dK/dV kernel's query
// tile, the dQ kernel's fragment reloads, the wgmma kernels, the staged
// stores and the staged statistics.
type gradTiling struct {
	qt                           int64
	reload, wgmma, staged, stats bool
}

func (g gradTiling) String() string {
	s := fmt.Sprintf("qt%d-reload=%v", g.qt, g.reload)
	if g.wgmma {
		s = fmt.Sprintf("qt%d-wgmma", g.qt)
	}
	if g.staged {
		s += "-staged"
	}
	if g.stats {
		s += "-stats"
	}
	return s
}

// gradTilings are the backward options a test of case i takes: the
// mma.sync kernels with one of the query tiles (the default, 16 or 32)
// and held or reloaded fragments, and for head dims 64 and 128 the wgmma
// kernels with 64- or 32-query tiles, stores through workgroup memory
// (Staged, with the other tile), the lse and D in workgroup memory
// (SharedStats, where the query count is a multiple of the tile, in
// every other case Staged too).
func gradTilings(i int, tc flashCase) []gradTiling {
	gts := []gradTiling{{qt: []int64{0, 16, 32}[i%3], reload: i%2 == 1}}
	if tc.d == 64 || tc.d == 128 {
		gts = append(gts, gradTiling{qt: []int64{64, 32}[i%2], wgmma: true},
			gradTiling{qt: []int64{32, 64}[i%2], wgmma: true, staged: true})
		if qt := []int64{32, 64}[i%2]; tc.lq%qt == 0 {
			gts = append(gts, gradTiling{qt: qt, wgmma: true, stats: true, staged: i%2 == 0})
		}
	}
	return gts
}

// gradExecOptions are the exec options of a forward tiling and backward
// options: the sm_90a target when either takes wgmma.
func gradExecOptions(tile togpu.FlashTile, gt gradTiling) exec.Options {
	tile.WGMMA = tile.WGMMA || gt.wgmma
	return flashExecOptions(tile)
}

// wgmmaGradTilings are the wgmma backward options that TestFlashGradPTX
// compiles and TestGPUFlashGrad times at head dims 64 and 128: both query
// tiles (also with Staged, SharedStats and both).
func wgmmaGradTilings() []gradTiling {
	return []gradTiling{{qt: 32, wgmma: true}, {qt: 64, wgmma: true},
		{qt: 32, wgmma: true, staged: true}, {qt: 64, wgmma: true, staged: true}, {qt: 32, wgmma: true, stats: true}, {qt: 64, wgmma: true, stats: true},
		{qt: 32, wgmma: true, staged: true, stats: true}, {qt: 64, wgmma: true, staged: true, stats: true}}
}

func flashGradModule(t *testing.T, ctx *ir.Context, f togpu.Flash, gt gradTiling) *ir.Operation {
	t.Helper()
	f.LSE = true
	fg := togpu.FlashGrad{Flash: f, QueryTile: gt.qt, Reload: gt.reload, WGMMA: gt.wgmma, Staged: gt.staged, SharedStats: gt.stats}
	ft, dq := f.ArgTypes(), fg.DQArgTypes()
	dkv := fg.DKVArgTypes()
	src := fmt.Sprintf("module attributes {gpu.container_module} {\n  func.func @main(%%q: %s, %%k: %s, %%v: %s, %%do: %s, %%o: %s, %%lse: %s, %%dq: %s, %%dk: %s, %%dv: %s, %%dd: %s) {\n    return\n  }\n}\n",
		ft[0], ft[1], ft[2], ft[0], ft[3], ft[4], dq[6], dkv[6], dkv[7], dq[7])
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "flash.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(m).Lookup("main")
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointAfter(fn)
	gmod := gpu.NewModule(b, fn.Loc(), "main_kernels")
	b.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	fwd, err := f.Kernel(b, fn.Loc(), "flash")
	if err != nil {
		t.Fatal(err)
	}
	kernels, err := fg.Kernels(b, fn.Loc(), "flash_bwd")
	if err != nil {
		t.Fatal(err)
	}
	body := fn.Region(0).Front()
	b.SetInsertionPointBefore(body.Last())
	a := body.Arguments()
	q, k, v, do, o, lse, dqB, dkB, dvB, dd := a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]
	if _, err := f.Launch(b, fn.Loc(), fwd, gpu.KernelRef("main_kernels", "flash"), q, k, v, o, lse); err != nil {
		t.Fatal(err)
	}
	ref := func(name string) ir.SymbolRefAttr { return gpu.KernelRef("main_kernels", name) }
	dqArgs, dkvArgs := []*ir.Value{q, k, v, o, do, lse, dqB, dd}, []*ir.Value{q, k, v, do, lse, dd, dkB, dvB}
	if err := fg.Launch(b, fn.Loc(), kernels, ref, dqArgs, dkvArgs); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	return m
}

// gradClose fails t unless got is within tol of want normwise (‖got −
// want‖ ≤ tol·‖want‖) and every element within 4·tol·max|want|; it
// returns the normwise error.
func gradClose(t *testing.T, name string, got, want []float64, tol float64) float64 {
	t.Helper()
	var num, den, top float64
	for i := range want {
		d := got[i] - want[i]
		if math.IsNaN(got[i]) {
			t.Fatalf("%s: element %d is NaN", name, i)
		}
		num += d * d
		den += want[i] * want[i]
		top = max(top, math.Abs(want[i]))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 4*tol*top {
			t.Fatalf("%s: element %d: kernel %g, graph %g (max |graph| %g)", name, i, got[i], want[i], top)
		}
	}
	rel := math.Sqrt(num / max(den, 1e-300))
	if top == 0 {
		t.Fatalf("%s: the graph's gradient is all zeros (a test that cannot fail)", name)
	}
	if rel > tol {
		t.Fatalf("%s: normwise error %.3g > %.3g", name, rel, tol)
	}
	return rel
}

// TestFlashGradSemantics runs the forward kernel (with its log-sum-exp)
// and the backward kernels in the interpreter's GPU simulation and
// compares dq, dk and dv with the interpreter's graph.attention_grad on
// the kernel's o. Tolerance: both sides round P and dS to the element
// type once, but at different points (the kernel's P comes from the
// saved log-sum-exp, the graph's from a normalised softmax), and sum in
// other orders: a few bf16 ulps of each term, 2⁻⁶ normwise; a wrong mask,
// tile or statistic moves gradients by far more.
func TestFlashGradSemantics(t *testing.T) {
	const tol = 1.0 / 64
	for i, tc := range flashGradCases {
		tile := togpu.FlashTile{}
		if (tc.d == 64 || tc.d == 128) && tc.lq != 100 {
			// The wgmma forward kernels' log-sum-exp (both tilings).
			tile = togpu.WGMMATile(tc.d, tc.causal)
		}
		for _, gt := range gradTilings(i, tc) {
			t.Run(fmt.Sprintf("%v-%v-%v", tc, tc.flash(tile).Tiling(), gt), func(t *testing.T) {
				t.Parallel()
				q, k, v := tc.inputs(t)
				rng := rand.New(rand.NewPCG(uint64(tc.d), 7))
				do := randomFloats(t, rng, tc.elem, q.Shape())
				oq, dq, dk, dv := runFlashGrad(t, tc, tile, gt, q, k, v, do, func(m *ir.Operation, args []interp.Value) {
					if _, err := interp.New(m).Call("main", args...); err != nil {
						t.Fatal(err)
					}
				})
				ctx := dialects.NewContext()
				rm, err := ir.Parse(ctx, tc.gradSource(), ir.ParseOptions{Filename: "ref.mlir"})
				if err != nil {
					t.Fatal(err)
				}
				want, err := interp.New(rm).Call("main", q, k, v, oq, do)
				if err != nil {
					t.Fatal(err)
				}
				for i, g := range []*interp.Tensor{dq, dk, dv} {
					name := []string{"dq", "dk", "dv"}[i]
					t.Logf("%s: normwise error %.3g", name, gradClose(t, name, g.Float64s(), want[i].(*interp.Tensor).Float64s(), tol))
				}
			})
		}
	}
}

// TestFlashGradCheck: the backward options each refused for what they
// are (a query tile not 16, 32 or 64; wgmma at a head dim, query tile or
// with Reload it does not take), and DefaultFlashGrad's wgmma choice.
func TestFlashGradCheck(t *testing.T) {
	f := togpu.Flash{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.BF16}
	d32, d128 := f, f
	d32.D, d128.D = 32, 128
	long := d128
	long.Lq, long.Lk = 1024, 1024
	for _, tc := range []struct {
		g    togpu.FlashGrad
		want string // "" when accepted
	}{
		{togpu.FlashGrad{Flash: f}, ""},
		{togpu.FlashGrad{Flash: f, QueryTile: 48}, "query tile 48"},
		{togpu.FlashGrad{Flash: f, WGMMA: true}, ""},
		{togpu.FlashGrad{Flash: f, WGMMA: true, QueryTile: 64}, ""},
		{togpu.FlashGrad{Flash: f, WGMMA: true, QueryTile: 16}, "query tiles 32 and 64"},
		{togpu.FlashGrad{Flash: f, WGMMA: true, Reload: true}, "Reload"},
		{togpu.FlashGrad{Flash: d32, WGMMA: true}, "head dims 64 and 128 only, not 32"},
		{togpu.FlashGrad{Flash: f, Staged: true}, ""},
		{togpu.FlashGrad{Flash: togpu.Flash{Batch: 1, Lq: 128, Lk: 8, D: 128, Scale: 1, Elem: ir.BF16}, WGMMA: true, QueryTile: 64, SharedStats: true, Staged: true}, ""},
		{togpu.FlashGrad{Flash: d128, WGMMA: true, QueryTile: 64, SharedStats: true}, "query count a multiple of the query tile"},
		{togpu.FlashGrad{Flash: f, SharedStats: true}, "SharedStats takes the wgmma kernels"},
		{togpu.FlashGrad{Flash: f, WGMMA: true, QueryTile: 16, SharedStats: true}, "query tiles 32 and 64"},
	} {
		err := tc.g.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.g, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want an error about %q", tc.g, err, tc.want)
		}
	}
	for _, tc := range []struct {
		f     togpu.Flash
		wgmma bool
		want  togpu.FlashGrad
	}{
		{f, false, togpu.FlashGrad{Flash: f, Reload: true}},
		{f, true, togpu.FlashGrad{Flash: f, WGMMA: true, QueryTile: 32, Staged: true}},
		{long, true, togpu.FlashGrad{Flash: long, WGMMA: true, QueryTile: 64, Staged: true, SharedStats: true}},
		{d32, true, togpu.FlashGrad{Flash: d32, Reload: true}},
	} {
		if got := togpu.DefaultFlashGrad(tc.f, tc.wgmma); got != tc.want {
			t.Errorf("DefaultFlashGrad(d%d, %v) = %+v, want %+v", tc.f.D, tc.wgmma, got, tc.want)
		}
	}
}

// TestFlashGradPipeline runs graph-attention-to-flash and lower-to-gpu on
// programs with graph.attention_grad: paired with the attention that
// computes its o (one forward kernel, which also writes the log-sum-exp,
// and the two backward kernels), or alone (a forward kernel of its own
// for the log-sum-exp), or with a mask-free attention of other operands
// (not paired); the simulated GPU results match the interpreter's.
func TestFlashGradPipeline(t *testing.T) {
	const ty = "tensor<1x2x40x32xbf16>"
	grad := func(o string) string {
		return fmt.Sprintf(`%%g:3 = "graph.attention_grad"(%%q, %%k, %%v, %s, %%do) <{causal = true}> : (%[2]s, %[2]s, %[2]s, %[2]s, %[2]s) -> (%[2]s, %[2]s, %[2]s)`, o, ty)
	}
	for _, tc := range []struct {
		name, body string
		kernels    int
	}{
		{"paired", `%o = "graph.attention"(%q, %k, %v) <{causal = true}> : (T, T, T) -> T
  ` + grad("%o"), 3},
		{"alone", grad("%do"), 3},
		{"other-scale", `%o = "graph.attention"(%q, %k, %v) <{causal = true, scale = 0.5 : f64}> : (T, T, T) -> T
  ` + grad("%o"), 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.ReplaceAll(tc.body, "(T, T, T) -> T", fmt.Sprintf("(%[1]s, %[1]s, %[1]s) -> %[1]s", ty))
			ret := "%g#0, %g#1, %g#2"
			rty := ty + ", " + ty + ", " + ty
			if strings.Contains(body, `%o = `) {
				ret, rty = "%o, "+ret, ty+", "+rty
			}
			src := fmt.Sprintf("func.func @main(%%q: %[1]s, %%k: %[1]s, %%v: %[1]s, %%do: %[1]s) -> (%[2]s) {\n  %[3]s\n  return %[4]s : %[2]s\n}\n", ty, rty, body, ret)
			p := &passtest.Program{Func: "main", Source: src}
			const pipeline = "builtin.module(graph-attention-to-flash,lower-to-gpu)"
			text := lowerText(t, p, pipeline)
			if got := strings.Count(text, `mapping = "flash"`); got != tc.kernels {
				t.Errorf("%d flash kernels, want %d", got, tc.kernels)
			}
			if strings.Contains(text, togpu.FlashAttr) || strings.Contains(text, togpu.FlashGradAttr) || strings.Contains(text, "graph.") {
				t.Errorf("flash declarations or graph ops left:\n%s", text)
			}
			if err := passtest.CheckSemantics(p, pipeline, 1); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFlashGradPipelineWGMMA runs graph-attention-to-flash{wgmma=true}
// on an attention and its gradient: at head dims 64 and 128 both backward
// kernels compute their products with gpu.wgmma (and the gpu.module asks
// for sm_90a), at 32 they keep mma.sync; the simulated results match the
// interpreter's. 128 rows at d128 take the default's SharedStats (a
// second workgroup buffer in the dK/dV kernel), 70 rows not.
func TestFlashGradPipelineWGMMA(t *testing.T) {
	for _, tc := range []struct {
		d, l  int64
		wgmma bool
	}{{64, 70, true}, {128, 70, true}, {128, 128, true}, {32, 70, false}} {
		t.Run(fmt.Sprintf("d%d-l%d", tc.d, tc.l), func(t *testing.T) {
			ty := fmt.Sprintf("tensor<1x1x%dx%dxbf16>", tc.l, tc.d)
			src := fmt.Sprintf(`func.func @main(%%q: %[1]s, %%k: %[1]s, %%v: %[1]s, %%do: %[1]s) -> (%[1]s, %[1]s, %[1]s, %[1]s) {
  %%o = "graph.attention"(%%q, %%k, %%v) <{causal = true}> : (%[1]s, %[1]s, %[1]s) -> %[1]s
  %%g:3 = "graph.attention_grad"(%%q, %%k, %%v, %%o, %%do) <{causal = true}> : (%[1]s, %[1]s, %[1]s, %[1]s, %[1]s) -> (%[1]s, %[1]s, %[1]s)
  return %%o, %%g#0, %%g#1, %%g#2 : %[1]s, %[1]s, %[1]s, %[1]s
}
`, ty)
			p := &passtest.Program{Func: "main", Source: src}
			const pipeline = "builtin.module(graph-attention-to-flash{wgmma=true},lower-to-gpu)"
			text := lowerText(t, p, pipeline)
			// (Each kernel's text runs to the next gpu.func.)
			kernels := 0
			for _, body := range strings.Split(text, "gpu.func @")[1:] {
				name, _, _ := strings.Cut(body, "(")
				if !strings.HasSuffix(name, "_dq") && !strings.HasSuffix(name, "_dkv") {
					continue
				}
				kernels++
				if got := strings.Contains(body, gpu.WGMMAOp); got != tc.wgmma {
					t.Errorf("gpu.wgmma in kernel %s: %v, want %v", name, got, tc.wgmma)
				}
			}
			if kernels != 2 {
				t.Errorf("%d backward kernels, want 2:\n%s", kernels, text)
			}
			if got := strings.Contains(text, gpu.PTXTargetAttr); got != tc.wgmma {
				t.Errorf("%s on the gpu.module: %v, want %v", gpu.PTXTargetAttr, got, tc.wgmma)
			}
			if err := passtest.CheckSemantics(p, pipeline, 1); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFlashGradPTX compiles the bench's backward kernels (b16 h16 s1024,
// head dims 64 and 128, causal and not; mma.sync and wgmma) and the
// forward kernel with its log-sum-exp with the native backend, assembles
// them with the offline ptxas for sm_90 (sm_90a with wgmma) and checks
// that nothing spills and that ptxas does not serialize the wgmma.
func TestFlashGradPTX(t *testing.T) {
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	for _, d := range []int64{64, 128} {
		for i, causal := range []bool{false, true} {
			f := togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: d, Causal: causal, Scale: 0.125, Elem: ir.BF16}
			// DefaultFlashGrad's options, and the other query tile that
			// does not spill (64 queries spill at d128: 255 registers).
			// The wgmma kernels with both query tiles.
			for _, gt := range append([]gradTiling{[]gradTiling{{reload: d <= 64}, {qt: map[int64]int64{64: 64, 128: 16}[d]}}[i]}, wgmmaGradTilings()...) {
				t.Run(fmt.Sprintf("d%d-causal=%v-%v", d, causal, gt), func(t *testing.T) {
					t.Parallel()
					m := flashGradModule(t, dialects.NewContext(), f, gt)
					mod, err := llvm.Translate(llvm.GPUModules(m)[0])
					if err != nil {
						t.Fatal(err)
					}
					be, err := nvptx.New("native")
					if err != nil {
						t.Fatal(err)
					}
					opts := nvptx.Options{}
					if gt.wgmma {
						opts.Target = gpu.WGMMATarget
					}
					ptx, err := be.Compile(mod, opts)
					if err != nil {
						t.Fatal(err)
					}
					dir := os.Getenv("STRATA_FLASH_PTX")
					if dir == "" {
						dir = t.TempDir()
					}
					file := filepath.Join(dir, strings.NewReplacer("/", "_", "=", "").Replace(t.Name())+".ptx")
					if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
						t.Fatal(err)
					}
					arch := "-arch=sm_90"
					if gt.wgmma {
						arch = "-arch=" + gpu.WGMMATarget
					}
					// (-c: relocatable code, as the driver's linker
					// compiles it; see TestFlashPTX.)
					out, err := osexec.Command(ptxas, arch, "-v", "-c", "-o", os.DevNull, file).CombinedOutput()
					if err != nil {
						t.Fatalf("ptxas rejected the PTX: %v\n%s", err, out)
					}
					if strings.Contains(string(out), "serialized") {
						t.Errorf("ptxas serializes the kernel's wgmma:\n%s", out)
					}
					for _, line := range strings.Split(string(out), "\n") {
						if strings.Contains(line, "spill") && !strings.Contains(line, "0 bytes spill stores, 0 bytes spill loads") {
							t.Errorf("a kernel spills:\n%s", out)
							break
						}
					}
					t.Log(string(out))
				})
			}
		}
	}
}

// runFlashGrad runs flashGradModule of tc with tiling tile through run
// (the interpreter's simulation or the device) and returns o, dq, dk, dv.
func runFlashGrad(t *testing.T, tc flashCase, tile togpu.FlashTile, gt gradTiling, q, k, v, do *interp.Tensor,
	run func(m *ir.Operation, args []interp.Value)) (o, dq, dk, dv *interp.Tensor) {
	t.Helper()
	m := flashGradModule(t, dialects.NewContext(), tc.flash(tile), gt)
	buf := func(elem ir.Type, n int) *interp.Buffer {
		b, err := interp.NewBuffer(elem, []int64{int64(n)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	rows := int(tc.b * tc.h * tc.lq)
	bufs := []*interp.Buffer{buf(tc.elem, q.Len()), buf(ir.F32, rows), buf(tc.elem, q.Len()), buf(tc.elem, k.Len()), buf(tc.elem, v.Len()), buf(ir.F32, rows)}
	run(m, []interp.Value{flat(t, q), flat(t, k), flat(t, v), flat(t, do), bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5]})
	var out [4]*interp.Tensor
	for i, b := range []*interp.Buffer{bufs[0], bufs[2], bufs[3], bufs[4]} {
		x, err := b.Tensor()
		if err != nil {
			t.Fatal(err)
		}
		shape := q.Shape()
		if i == 2 || i == 3 {
			shape = k.Shape()
		}
		if out[i], err = interp.FromBits(tc.elem, shape, x.Bits()); err != nil {
			t.Fatal(err)
		}
	}
	return out[0], out[1], out[2], out[3]
}

// TestGPUFlashGrad runs the forward kernel with its log-sum-exp and the
// backward kernels on the device (skipped without one): first against
// the interpreter's graph.attention_grad (on the device's o) within
// TestFlashGradSemantics's tolerance, for flashGradCases and larger
// shapes, with the forward's default and wgmma tilings and the backward
// options of gradTilings (mma.sync, and wgmma at head dims 64 and 128);
// then it times the forward alone and forward plus backward, with the
// mma.sync and wgmma options, at the bench's attention_train sizes (b16
// h16 s1024, head dims 64 and 128, causal).
func TestGPUFlashGrad(t *testing.T) {
	rt := openRuntime(t)
	const tol = 1.0 / 64
	cases := append(slices.Clone(flashGradCases),
		flashCase{2, 2, 300, 260, 64, true, 0, ir.BF16}, flashCase{1, 2, 257, 257, 128, true, 0, ir.BF16},
		flashCase{1, 1, 384, 384, 64, false, 0, ir.BF16})
	for i, tc := range cases {
		tiles := []togpu.FlashTile{{}}
		if tc.flash(togpu.WGMMATile(tc.d, tc.causal)).Check() == nil {
			tiles = append(tiles, togpu.WGMMATile(tc.d, tc.causal))
		}
		for _, tile := range tiles {
			for _, gt := range gradTilings(i, tc) {
				t.Run(fmt.Sprintf("check-%v-%v-%v", tc, tc.flash(tile).Tiling(), gt), func(t *testing.T) {
					q, k, v := tc.inputs(t)
					do := randomFloats(t, rand.New(rand.NewPCG(uint64(tc.d), 7)), tc.elem, q.Shape())
					o, dq, dk, dv := runFlashGrad(t, tc, tile, gt, q, k, v, do, func(m *ir.Operation, args []interp.Value) {
						p, err := exec.Compile(m, gradExecOptions(tile, gt))
						if err != nil {
							t.Fatal(err)
						}
						if _, err := p.Run(rt, "main", args); err != nil {
							t.Fatal(err)
						}
					})
					rm, err := ir.Parse(dialects.NewContext(), tc.gradSource(), ir.ParseOptions{Filename: "ref.mlir"})
					if err != nil {
						t.Fatal(err)
					}
					want, err := interp.New(rm).Call("main", q, k, v, o, do)
					if err != nil {
						t.Fatal(err)
					}
					for i, g := range []*interp.Tensor{dq, dk, dv} {
						name := []string{"dq", "dk", "dv"}[i]
						t.Logf("%s: normwise error %.3g", name, gradClose(t, name, g.Float64s(), want[i].(*interp.Tensor).Float64s(), tol))
					}
				})
			}
		}
	}
	for _, d := range []int64{64, 128} {
		tc := flashCase{16, 16, 1024, 1024, d, true, 0, ir.BF16}
		tile := togpu.WGMMATile(d, true)
		if tc.flash(tile).Check() != nil {
			tile = togpu.FlashTile{}
		}
		// The inputs (64M elements) are drawn by the first timing that
		// runs: -test.run may select none.
		var q, k, v, do *interp.Tensor
		inputs := func(t *testing.T) {
			if q == nil {
				q, k, v = tc.inputs(t)
				do = randomFloats(t, rand.New(rand.NewPCG(uint64(tc.d), 7)), tc.elem, q.Shape())
			}
		}
		flops := 4 * float64(tc.b*tc.h*tc.lq*tc.lk*tc.d) / 2
		var fwd float64
		t.Run(fmt.Sprintf("time-forward-lse-%v-%v", tc, tc.flash(tile).Tiling()), func(t *testing.T) {
			inputs(t)
			f := tc.flash(tile)
			f.LSE = true
			m := flashModule(t, dialects.NewContext(), f)
			p, err := exec.Compile(m, flashExecOptions(tile))
			if err != nil {
				t.Fatal(err)
			}
			args := []interp.Value{flat(t, q), flat(t, k), flat(t, v), newBuffer(t, tc.elem, q.Len()), newBuffer(t, ir.F32, int(tc.b*tc.h*tc.lq))}
			if fwd, err = p.RunTimed(rt, "main", args, 5, 20); err != nil {
				t.Fatal(err)
			}
			t.Logf("forward %.3f ms, %.0f TFLOP/s", fwd, flops/fwd/1e9)
		})
		for _, gt := range append([]gradTiling{{qt: 16}, {qt: 32}, {qt: 64}, {qt: 16, reload: true}, {qt: 32, reload: true}, {qt: 64, reload: true}},
			wgmmaGradTilings()...) {
			t.Run(fmt.Sprintf("time-train-%v-%v-%v", tc, tc.flash(tile).Tiling(), gt), func(t *testing.T) {
				inputs(t)
				runFlashGrad(t, tc, tile, gt, q, k, v, do, func(m *ir.Operation, args []interp.Value) {
					p, err := exec.Compile(m, gradExecOptions(tile, gt))
					if err != nil {
						t.Fatal(err)
					}
					ms, err := p.RunTimed(rt, "main", args, 5, 20)
					if err != nil {
						t.Fatal(err)
					}
					// Forward and backward: 2 + 5 products (FlashAttention's count).
					t.Logf("forward+backward %.3f ms (backward %.3f), %.0f TFLOP/s", ms, ms-fwd, 3.5*flops/ms/1e9)
					t.Logf("per kernel (5 launches):\n%s", kernelProfile(t, rt, p, args, 5))
				})
			})
		}
	}
}

// kernelProfile launches p's @main on args until it runs its final code,
// then n times under a device profile, and returns the profile's table: each kernel's
// time over the n launches (where the backward's time goes).
func kernelProfile(t *testing.T, rt *exec.Runtime, p *exec.Program, args []interp.Value, n int) string {
	t.Helper()
	b, err := p.Prepare(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	entries, err := b.Profile(n)
	if err != nil {
		t.Fatal(err)
	}
	return exec.FormatProfile(entries, 0)
}

// newBuffer returns a buffer of n elements of elem.
func newBuffer(t *testing.T, elem ir.Type, n int) *interp.Buffer {
	t.Helper()
	b, err := interp.NewBuffer(elem, []int64{int64(n)})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
