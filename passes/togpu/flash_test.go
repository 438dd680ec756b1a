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
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// flashCase is one attention of the flash tests: q [b, h, lq, d], k and
// v [b, h, lk, d], causal or not, the scale (0: graph.attention's default
// 1/√d), in bf16 or f16.
type flashCase struct {
	b, h, lq, lk, d int64
	causal          bool
	scale           float64
	elem            ir.Type
}

// flashCases are small attentions whose sizes are not multiples of the
// 64- and 128-row and 64-key tiles (row and key tails, several row blocks
// and key tiles, more keys than queries and fewer), causal and not, every
// head dim whose chunk count per row does not divide the block size (48,
// 80), 128 (dynamic workgroup memory), a negative scale (the row minimum
// instead of the maximum) and large ones.
var flashCases = []flashCase{
	{1, 2, 40, 40, 32, false, 0, ir.BF16},
	{1, 2, 40, 40, 32, true, 0, ir.BF16},
	{2, 1, 70, 70, 16, true, 0, ir.BF16},
	{1, 1, 24, 90, 16, false, 0, ir.BF16},
	{1, 1, 24, 90, 16, true, 0, ir.BF16},
	{1, 1, 67, 33, 64, true, 0, ir.BF16},
	{1, 1, 64, 128, 64, false, 0, ir.BF16},
	{1, 1, 140, 150, 64, true, 0, ir.BF16}, // unmasked tiles before the diagonal ones
	{1, 1, 130, 200, 48, false, 0, ir.BF16},
	{1, 1, 33, 70, 80, true, 0, ir.BF16},
	{1, 1, 40, 70, 32, false, -0.3, ir.BF16},
	{1, 1, 40, 70, 64, false, 1, ir.BF16},  // scores up to ±30 at scale 1: their bf16 rounding shows
	{1, 1, 40, 200, 32, false, 4, ir.BF16}, // sharp: rows' extremes move past 2^8 in later tiles (rescaling)
	{1, 1, 70, 40, 128, true, 0.5, ir.BF16},
	// Head dim 64 (the wgmma tiling's only one): several warpgroups and
	// row blocks, row and key tails, causal diagonals, rescaling.
	{2, 1, 200, 130, 64, false, 0, ir.BF16},
	{1, 2, 130, 70, 64, true, 0, ir.BF16},
	{1, 1, 40, 200, 64, false, 4, ir.BF16},
	{1, 1, 64, 64, 64, false, -0.3, ir.BF16},
	// Head dim 128 for the wgmma tilings (two panels): row and key
	// tails, causal diagonals across two warpgroups, rescaling.
	{1, 1, 130, 200, 128, false, 0, ir.BF16},
	{1, 2, 150, 140, 128, true, 0, ir.BF16},
	// Even row blocks a head, for the clusters' pairs: causal pairs
	// (the earlier block's last key tile fully masked), key and row
	// tails, rescaling.
	{1, 2, 250, 140, 128, true, 0, ir.BF16},
	{2, 1, 120, 200, 64, true, 0, ir.BF16},
	{1, 1, 120, 200, 128, false, 4, ir.BF16},
	{1, 1, 120, 300, 64, false, 4, ir.BF16}, // three 128-key tiles: a stage reused
	// f16: the row sums on the tensor cores (causal), and the wgmma
	// tilings with rescaling.
	{1, 2, 40, 40, 32, true, 0, ir.F16},
	{1, 1, 130, 200, 48, false, 0, ir.F16},
	{1, 1, 40, 200, 64, false, 4, ir.F16},
	{1, 1, 40, 200, 128, false, 4, ir.F16},
}

func (c flashCase) String() string {
	return fmt.Sprintf("%dx%dx%dx%d-d%d-causal=%v-scale=%g-%s", c.b, c.h, c.lq, c.lk, c.d, c.causal, c.scale, c.elem)
}

// types returns the q and k (and v) tensor types of c.
func (c flashCase) types() (q, k string) {
	typ := func(l int64) string { return fmt.Sprintf("tensor<%dx%dx%dx%dx%s>", c.b, c.h, l, c.d, c.elem) }
	return typ(c.lq), typ(c.lk)
}

// source is @main(q, k, v) returning c's graph.attention.
func (c flashCase) source() string {
	q, k := c.types()
	attrs := fmt.Sprintf("causal = %v", c.causal)
	if c.scale != 0 {
		attrs += fmt.Sprintf(", scale = %e : f64", c.scale) // (a float literal: 4 alone is an integer)
	}
	return fmt.Sprintf(`func.func @main(%%q: %s, %%k: %s, %%v: %s) -> %s {
  %%r = "graph.attention"(%%q, %%k, %%v) <{%s}> : (%s, %s, %s) -> %s
  return %%r : %s
}`, q, k, k, q, attrs, q, k, k, q, q)
}

// flash is c's kernel with tiling t.
func (c flashCase) flash(t togpu.FlashTile) togpu.Flash {
	scale := c.scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(c.d))
	}
	return togpu.Flash{Batch: c.b * c.h, Lq: c.lq, Lk: c.lk, D: c.d, Causal: c.causal, Scale: scale, Elem: c.elem, Tile: t}
}

// inputs returns random q, k and v for c.
func (c flashCase) inputs(t *testing.T) (q, k, v *interp.Tensor) {
	rng := rand.New(rand.NewPCG(uint64(c.lq), uint64(c.lk)))
	qs, ks := []int64{c.b, c.h, c.lq, c.d}, []int64{c.b, c.h, c.lk, c.d}
	return randomFloats(t, rng, c.elem, qs), randomFloats(t, rng, c.elem, ks), randomFloats(t, rng, c.elem, ks)
}

// compare fails t at the first element of got farther than tol from want
// (NaN fails) and returns the largest difference.
func compare(t *testing.T, got, want []float64, tol float64) float64 {
	t.Helper()
	worst := 0.0
	for i := range want {
		d := math.Abs(got[i] - want[i])
		if !(d <= tol) {
			t.Fatalf("element %d: kernel %g, graph %g", i, got[i], want[i])
		}
		worst = max(worst, d)
	}
	return worst
}

// flashModule returns a module whose @main(q, k, v, out), or @main(q, k,
// v, out, lse) when f saves the log-sum-exp, launches the flash kernel of f
// on 1-D buffers.
func flashModule(t *testing.T, ctx *ir.Context, f togpu.Flash) *ir.Operation {
	t.Helper()
	var params []string
	for i, ty := range f.ArgTypes() {
		if ty == ir.Index {
			continue // (a dynamic length: Launch reads it off q)
		}
		params = append(params, fmt.Sprintf("%%%s: %s", []string{"q", "k", "v", "o", "lse"}[i], ty))
	}
	src := fmt.Sprintf("module attributes {gpu.container_module} {\n  func.func @main(%s) {\n    return\n  }\n}\n", strings.Join(params, ", "))
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "flash.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := ir.NewSymTable(m).Lookup("main")
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointAfter(fn)
	gmod := gpu.NewModule(b, fn.Loc(), "main_kernels")
	b.SetInsertionPointBefore(gmod.Region(0).Front().Last())
	kernel, err := f.Kernel(b, fn.Loc(), "flash")
	if err != nil {
		t.Fatal(err)
	}
	body := fn.Region(0).Front()
	b.SetInsertionPointBefore(body.Last())
	a := body.Arguments()
	if _, err := f.Launch(b, fn.Loc(), kernel, gpu.KernelRef("main_kernels", "flash"), a[0], a[1], a[2], a[3], a[4:]...); err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
	}
	return m
}

// randomBF16 returns n values in [-2, 2) as a bf16 tensor of shape.
func randomBF16(t testing.TB, rng *rand.Rand, shape []int64) *interp.Tensor {
	t.Helper()
	return randomFloats(t, rng, ir.BF16, shape)
}

// randomFloats returns values in [-2, 2) as a tensor of elem and shape.
func randomFloats(t testing.TB, rng *rand.Rand, elem ir.Type, shape []int64) *interp.Tensor {
	t.Helper()
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = 4*rng.Float64() - 2
	}
	x, err := interp.FromFloat64s(elem, shape, vs)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// flat reshapes x to 1-D.
func flat(t *testing.T, x *interp.Tensor) *interp.Buffer {
	t.Helper()
	y, err := interp.FromBits(x.ElemType(), []int64{int64(x.Len())}, x.Bits())
	if err != nil {
		t.Fatal(err)
	}
	return interp.BufferFromTensor(y)
}

// TestFlashSemantics runs the kernel in the interpreter (which simulates
// cp.async, ldmatrix, mma.sync and the shuffles lane by lane) and compares
// it with the interpreter's graph.attention.
//
// Tolerance: the values of v are in [-2, 2), so each output, a convex
// combination of them, is too. The graph rounds each normalised
// probability p = e/l to bf16 once and the output once; the kernel
// rounds the unnormalised e·α once and divides by l (f32) after the
// product. Each probability may then differ by up to 2 bf16 half-ulps
// (2·2⁻⁹ relative), which moves Σ p·v by at most 2⁻⁸·max|v| = 2⁻⁷, and
// the final rounding adds up to one bf16 ulp of |out| ≤ 2 (2⁻⁶ near 2):
// 2⁻⁷ + 2⁻⁶ ≈ 0.023 in all. A wrong mask, scale or rescaling moves
// outputs by far more (a probability mass of 1/Lk at least on a
// different v).
func TestFlashSemantics(t *testing.T) {
	const tol = 1.0/128 + 1.0/64
	// Each case with one tiling and each tiling with one case, unless
	// STRATA_TEST_LONG asks for every pair (make test-long).
	usable := func(i, j int) bool {
		return flashCases[i].flash(togpu.FlashTiles[j]).Check() == nil || !togpu.FlashTiles[j].WGMMA
	}
	run := testsize.Cover(len(flashCases), len(togpu.FlashTiles), usable)
	for i, tc := range flashCases {
		for j, tile := range togpu.FlashTiles {
			if !run(i, j) && usable(i, j) {
				continue
			}
			t.Run(fmt.Sprintf("%v-%v", tc, tile), func(t *testing.T) {
				t.Parallel()
				if err := tc.flash(tile).Check(); err != nil && tile.WGMMA {
					t.Skipf("not for this tiling: %v", err)
				}
				checkFlash(t, tc, tile, tol)
			})
		}
	}
}

// checkFlash runs tc's kernel of tiling tile in the interpreter and
// compares it with the interpreter's graph.attention within tol.
func checkFlash(t *testing.T, tc flashCase, tile togpu.FlashTile, tol float64) {
	t.Helper()
	q, k, v := tc.inputs(t)
	ctx := dialects.NewContext()
	rm, err := ir.Parse(ctx, tc.source(), ir.ParseOptions{Filename: "ref.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.New(rm).Call("main", q, k, v)
	if err != nil {
		t.Fatal(err)
	}
	m := flashModule(t, ctx, tc.flash(tile))
	out, err := interp.NewBuffer(tc.elem, []int64{int64(q.Len())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := interp.New(m).Call("main", flat(t, q), flat(t, k), flat(t, v), out); err != nil {
		t.Fatal(err)
	}
	got, err := out.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	worst := compare(t, got.Float64s(), want[0].(*interp.Tensor).Float64s(), tol)
	t.Logf("max |kernel − graph| = %.3g (tolerance %.3g)", worst, tol)
}

// TestFlashPersistent runs the one-warpgroup o tilings (64x128gplqo,
// 64x64gplvqo, 64x64gplqko) persistent (FlashTile.Persistent; Staged
// with the grid of 3, without with the grid of 2) in the interpreter with grids of 2 and 3
// blocks, so that each block
// computes several row blocks in turn — of several heads, with row and
// key tails, causal diagonals (and the heavier row blocks first) and
// rescaling — and compares them with graph.attention as
// TestFlashSemantics does.
func TestFlashPersistent(t *testing.T) {
	const tol = 1.0/128 + 1.0/64
	for _, tc := range []flashCase{
		// (Non-causal with an even number of key tiles: the next row
		// block's first copies are issued in the last key tile.)
		{2, 1, 200, 130, 64, false, 0, ir.BF16},
		{1, 3, 70, 256, 64, false, 0, ir.BF16},
		{1, 2, 130, 70, 64, true, 0, ir.BF16},
		{2, 1, 120, 200, 64, true, 0, ir.BF16},
		{1, 1, 120, 300, 64, false, 4, ir.BF16},
		{1, 2, 150, 140, 128, true, 0, ir.BF16},
		{1, 1, 130, 200, 128, false, 0, ir.BF16},
	} {
		for _, base := range []togpu.FlashTile{
			{Rows: 64, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Staged: true},
			{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true, Staged: true},
			{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Staged: true},
		} {
			for _, p := range []int64{2, 3} {
				tile := base
				tile.Persistent = p
				// (Staged with the grid of 3: O's staging stage beside
				// the next row block's copies in flight.)
				tile.Staged = p == 3
				if tc.flash(tile).Check() != nil {
					continue
				}
				t.Run(fmt.Sprintf("%v-%v", tc, tile), func(t *testing.T) {
					t.Parallel()
					if g, want := tc.flash(tile).Grid(), min(p, int64(tc.b*tc.h)*((tc.lq+63)/64)); g != want {
						t.Fatalf("grid %d, want %d", g, want)
					}
					checkFlash(t, tc, tile, tol)
				})
			}
		}
	}
}

// TestFlashPersistentSpecialized runs the persistent specialized kernel
// (emitPersistentWS: the producer's copies and the stages' mbarrier
// phases carried through a block's row blocks; ping-pong turns, TMA) in
// the interpreter with grids of 2 and 3 blocks, each computing several
// row blocks of 128 rows in turn, with row and key tails, causal
// diagonals (row blocks of different key tile counts) and rescaling.
// It runs the 192-row tiling at head dim 64 alike: its row tails of 8
// and 58 rows leave two of its three consumer warpgroups idle
// (idleWarpgroup) in a head's last row block, a block's first or second.
func TestFlashPersistentSpecialized(t *testing.T) {
	const tol = 1.0/128 + 1.0/64
	for _, tc := range []flashCase{
		{1, 2, 300, 140, 128, true, 0, ir.BF16},
		{2, 1, 200, 330, 64, false, 0, ir.BF16},
		{1, 2, 250, 300, 64, true, 4, ir.BF16},
		// (PrefetchQ's: three row blocks a block with a grid of 2, both Q
		// tiles in turn, the last row block's a tail; causal, the turns.)
		{2, 1, 300, 200, 128, false, 0, ir.BF16},
		{2, 1, 300, 300, 128, true, 0, ir.BF16},
		// (Row blocks of 40 rows, two warpgroups of three idle: two
		// such a block with a grid of 2, a negative scale; and six key
		// tiles for a tail of 8 rows.)
		{3, 1, 40, 200, 64, false, -0.5, ir.BF16},
		{2, 1, 200, 700, 64, false, 0, ir.BF16},
	} {
		for _, tile := range togpu.FlashTiles {
			if !tile.Specialized || tile.Persistent == 0 || !tile.PingPong && (tile.Rows != 192 || tc.d != 64) {
				continue
			}
			for _, p := range []int64{2, 3} {
				tile := tile
				tile.Persistent = p
				t.Run(fmt.Sprintf("%v-%v", tc, tile), func(t *testing.T) {
					t.Parallel()
					if g, want := tc.flash(tile).Grid(), min(p, int64(tc.b*tc.h)*((tc.lq+tile.Rows-1)/tile.Rows)); g != want {
						t.Fatalf("grid %d, want %d", g, want)
					}
					checkFlash(t, tc, tile, tol)
				})
			}
		}
	}
}

// TestFlashPersistentForms runs the other forms of the forward (saving the
// log-sum-exp, the training rows'; a length known at run time; both) with
// the persistent specialized tiling of head dim 128 on a grid of 2 blocks
// (three row blocks a block, both Q tiles, a row tail, the causal turns)
// in the interpreter, and compares the output and the log-sum-exp with the
// mma.sync kernel 64x64f's of the same form.
func TestFlashPersistentForms(t *testing.T) {
	tc := flashCase{2, 1, 300, 300, 128, true, 0, ir.BF16}
	q, k, v := tc.inputs(t)
	run := func(t *testing.T, fl togpu.Flash) (o, lse []float64) {
		m := flashModule(t, dialects.NewContext(), fl)
		args := flashArgs(t, fl, q, k, v)
		if _, err := interp.New(m).Call("main", args...); err != nil {
			t.Fatal(err)
		}
		return flashOutputs(t, args)
	}
	tile := togpu.FlashTileWGMMA128
	tile.Persistent = 2
	for _, form := range []flashForm{{lse: true}, {dynamic: true}, {lse: true, dynamic: true}} {
		fl := form.apply(tc.flash(tile))
		t.Run(fmt.Sprintf("%v-%v", form, fl.Tile), func(t *testing.T) {
			t.Parallel()
			if err := fl.Check(); err != nil {
				t.Fatal(err)
			}
			if g := fl.Grid(); !fl.Dynamic && g != 2 {
				t.Fatalf("grid %d, want 2", g)
			}
			wantO, wantL := run(t, form.apply(tc.flash(togpu.FlashTile{Rows: 64, Keys: 64, Fused: true})))
			o, lse := run(t, fl)
			t.Logf("max |o − 64x64f's| = %.3g", closeTo(t, "o", o, wantO, 1.0/64))
			if fl.LSE {
				t.Logf("max |lse − 64x64f's| = %.3g", closeTo(t, "lse", lse, wantL, 1.0/64))
			}
		})
	}
}

// flashArgs returns the arguments of fl's @main: q, k and v flattened, the
// output buffer and, when fl saves it, the log-sum-exp's.
func flashArgs(t *testing.T, fl togpu.Flash, q, k, v *interp.Tensor) []interp.Value {
	t.Helper()
	args := []interp.Value{flat(t, q), flat(t, k), flat(t, v), newBuffer(t, fl.Elem, q.Len())}
	if fl.LSE {
		args = append(args, newBuffer(t, ir.F32, q.Len()/int(fl.D)))
	}
	return args
}

// flashOutputs reads back what @main wrote into flashArgs' buffers: the
// output and the log-sum-exp (nil when not saved).
func flashOutputs(t *testing.T, args []interp.Value) (o, lse []float64) {
	t.Helper()
	for i, a := range args[3:] {
		x, err := a.(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			o = x.Float64s()
		} else {
			lse = x.Float64s()
		}
	}
	return o, lse
}

// TestFlashStagedSpecialized runs the Staged tilings with several
// warpgroups a block (each warp stores O through its own rows of the Q
// tile) in the interpreter on row and key tails, both head dims and
// causal diagonals, and compares them with graph.attention as
// TestFlashSemantics does.
func TestFlashStagedSpecialized(t *testing.T) {
	const tol = 1.0/128 + 1.0/64
	for _, tc := range []flashCase{
		{1, 1, 200, 300, 128, false, 0, ir.BF16},
		{1, 2, 130, 270, 128, true, 0, ir.BF16},
		{2, 1, 100, 256, 64, false, 0, ir.BF16},
		{1, 1, 190, 130, 64, true, 0, ir.BF16},
	} {
		for _, tile := range togpu.FlashTiles {
			if !tile.Staged || tile.Rows == 64 {
				continue
			}
			t.Run(fmt.Sprintf("%v-%v", tc, tile), func(t *testing.T) {
				t.Parallel()
				if err := tc.flash(tile).Check(); err != nil {
					t.Skipf("not for this tiling: %v", err)
				}
				checkFlash(t, tc, tile, tol)
			})
		}
	}
}

// TestFlashCheck rejects what the kernel cannot compute.
func TestFlashCheck(t *testing.T) {
	for _, ok := range []togpu.Flash{
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 0.125, Elem: ir.BF16},
		{Batch: 1, Lq: 8, Lk: 8, D: 128, Scale: -2, Elem: ir.BF16, Tile: togpu.FlashTiles[1]},
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.F16},
		{Batch: 1, Lq: 8, Lk: 8, D: 128, Scale: 1, Elem: ir.BF16, Tile: togpu.WGMMATile(128, false)},
	} {
		if err := ok.Check(); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []togpu.Flash{
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.F32},
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.F64},
		{Batch: 1, Lq: 8, Lk: 8, D: 24, Scale: 1, Elem: ir.BF16},
		{Batch: 1, Lq: 8, Lk: 8, D: 144, Scale: 1, Elem: ir.BF16},
		{Batch: 0, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.BF16},
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 0, Elem: ir.BF16},
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: math.Inf(1), Elem: ir.BF16},
		{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.BF16, Tile: togpu.FlashTile{Rows: 32, Keys: 64}},
		{Batch: 1, Lq: 8, Lk: 8, D: 128, Scale: 1, Elem: ir.BF16, Tile: togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true}},
		{Batch: 1, Lq: 8, Lk: 8, D: 96, Scale: 1, Elem: ir.BF16, Tile: togpu.WGMMATile(128, false)},
		// PrefetchQ needs the persistent producer's kernel.
		{Batch: 1, Lq: 8, Lk: 8, D: 128, Scale: 1, Elem: ir.BF16, Tile: togpu.FlashTile{Rows: 128, Keys: 128, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true, Staged: true, PrefetchQ: true}},
	} {
		if f.Check() == nil {
			t.Errorf("%+v accepted", f)
		}
	}
	// Several pipelined warpgroups without PrefetchV: refused for what
	// it is, not only as a tiling outside FlashTiles.
	f := togpu.Flash{Batch: 1, Lq: 8, Lk: 8, D: 64, Scale: 1, Elem: ir.BF16, Tile: togpu.FlashTile{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true}}
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "PrefetchV") {
		t.Errorf("128x64gplq: %v, want an error about PrefetchV", err)
	}
	// One K stage with V prefetched (whose copy at the top of a tile
	// would need K's other stage).
	f.Tile = togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, PrefetchV: true, QShared: true, OneK: true}
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "OneK") {
		t.Errorf("64x64gplvqk: %v, want an error about OneK", err)
	}
	// A producer warpgroup needs the pipelined kernel reading Q by
	// descriptor, its own stages (no PrefetchV, no OneK).
	for _, tile := range []togpu.FlashTile{
		{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, Specialized: true},
		{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, PrefetchV: true, Specialized: true},
		{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, OneK: true, Specialized: true},
	} {
		f.Tile = tile
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), "Specialized") {
			t.Errorf("%v: %v, want an error about Specialized", tile, err)
		}
	}
	// Ping-pong takes turns between two consumers of a producer.
	for _, tile := range []togpu.FlashTile{
		{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, PrefetchV: true, PingPong: true},
		{Rows: 64, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true, PingPong: true},
	} {
		f.Tile = tile
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), "PingPong") {
			t.Errorf("%v: %v, want an error about PingPong", tile, err)
		}
	}
	// So are the row sums on the tensor cores with wgmma, which a
	// producer's kernel does not have.
	sumWS := flashTile128LatePack
	sumWS.SumMMA = true
	for _, tile := range []togpu.FlashTile{{Rows: 64, Keys: 64, SumMMA: true, WGMMA: true}, sumWS} {
		f.Tile = tile
		if err := f.Check(); err == nil || !strings.Contains(err.Error(), "SumMMA") {
			t.Errorf("%v: %v, want an error about SumMMA", f.Tile, err)
		}
	}
	// Unrolling is the pipelined kernel's.
	f.Tile = togpu.FlashTile{Rows: 64, Keys: 64, WGMMA: true, Unroll: true}
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "Unroll") {
		t.Errorf("%v: %v, want an error about Unroll", f.Tile, err)
	}
	// 192 rows at head dim 128: more shared memory than a block has,
	// refused before the module is built.
	f.D, f.Tile = 128, togpu.FlashTileWGMMA
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "shared memory") {
		t.Errorf("d128 %v: %v, want an error about shared memory", f.Tile, err)
	}
	f.D = 64
	// Its block: two consumer warpgroups and the producer.
	f.Tile = togpu.FlashTile{Rows: 128, Keys: 64, WGMMA: true, Pipe: true, Lazy: true, QShared: true, Specialized: true}
	if err := f.Check(); err != nil || f.Threads() != 384 {
		t.Errorf("%v: %v, %d threads, want none and 384", f.Tile, err, f.Threads())
	}
}

// TestFlashDefaultTiling: the zero Tile picks 128x64w32f for non-causal
// attentions up to d64, 64x64fsb4 for causal ones, 64x64f beyond d64
// (whose registers the others would spill); an explicit tile stays.
func TestFlashDefaultTiling(t *testing.T) {
	for _, tc := range []struct {
		d      int64
		causal bool
		tile   togpu.FlashTile
		want   string
	}{
		{64, false, togpu.FlashTile{}, "128x64w32f"},
		{16, false, togpu.FlashTile{}, "128x64w32f"},
		{64, true, togpu.FlashTile{}, "64x64fsb4"},
		{128, false, togpu.FlashTile{}, "64x64f"},
		{80, true, togpu.FlashTile{}, "64x64f"},
		{64, false, togpu.FlashTile{Rows: 64, Keys: 64}, "64x64"},
	} {
		f := togpu.Flash{Batch: 1, Lq: 8, Lk: 8, D: tc.d, Causal: tc.causal, Scale: 1, Elem: ir.BF16, Tile: tc.tile}
		if got := f.Tiling().String(); got != tc.want {
			t.Errorf("d%d causal=%v tile %v: tiling %s, want %s", tc.d, tc.causal, tc.tile, got, tc.want)
		}
	}
}

// TestFlashWGMMADefault checks the tiling graph-attention-to-flash takes
// on sm_90a: at head dim 128 the persistent specialized one with Q
// prefetched, causal or not, with a log-sum-exp or without, and without
// TMA when dynamic; 64x64gplqko when causal and dynamic. At head dim 64
// three consumer warpgroups when non-causal, but 64-row blocks copying by
// cp.async when dynamic; 64x64gplvqo when causal.
func TestFlashWGMMADefault(t *testing.T) {
	for _, tc := range []struct {
		d                    int64
		causal, lse, dynamic bool
		want                 string
	}{
		{128, false, false, false, "128x128gplqdatonr132"},
		{128, true, false, false, "128x128gplqdatonr132"},
		{128, false, true, false, "128x128gplqdatonr132"},
		{128, true, true, false, "128x128gplqdatonr132"},
		{128, false, false, true, "128x128gplqdaonr132"},
		{128, true, false, true, "64x64gplqko"},
		{128, true, true, true, "64x64gplqko"},
		{64, false, false, false, "192x128gplqdtmonr132"},
		{64, false, true, false, "192x128gplqdtmonr132"},
		{64, false, false, true, "64x128gplqmo"},
		{64, false, true, true, "64x128gplqmo"},
		{64, true, false, false, "64x64gplvqo"},
		{64, true, true, true, "64x64gplvqo"},
	} {
		f := togpu.Flash{Batch: 2, Lq: 300, Lk: 300, D: tc.d, Causal: tc.causal, LSE: tc.lse, Scale: 0.125, Elem: ir.BF16, Dynamic: tc.dynamic}
		if tc.dynamic {
			f.Lq, f.Lk = ir.Dynamic, ir.Dynamic
		}
		f.Tile = f.WGMMADefault()
		if got := f.Tile.String(); got != tc.want {
			t.Errorf("d%d causal=%v lse=%v dynamic=%v: %s, want %s", tc.d, tc.causal, tc.lse, tc.dynamic, got, tc.want)
		}
		if err := f.Check(); err != nil {
			t.Errorf("d%d causal=%v lse=%v dynamic=%v: %v", tc.d, tc.causal, tc.lse, tc.dynamic, err)
		}
	}
}

// TestFlashPTX compiles the bench's attention kernel (b16 h16 s1024
// d64) in every tiling, causal and not, a d128 one (in dynamic
// workgroup memory) and f16 ones with both PTX backends, assembles each with the
// offline ptxas for sm_90 and checks that nothing spills (but to meet a
// tiling's MinBlocks) and that ptxas pipelines the native backend's wgmma
// ones.
func TestFlashPTX(t *testing.T) {
	ptxas := os.Getenv("STRATA_PTXAS")
	if ptxas == "" {
		ptxas, _ = filepath.Abs("../../.cache/tools/bin/ptxas")
	}
	if _, err := os.Stat(ptxas); err != nil {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	var fs []togpu.Flash
	for _, tile := range togpu.FlashTiles {
		for _, causal := range []bool{false, true} {
			fs = append(fs, togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: 64, Causal: causal, Scale: 0.125, Elem: ir.BF16, Tile: tile})
		}
	}
	fs = append(fs, togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: 128, Causal: true, Scale: 0.125, Elem: ir.BF16})
	// Head dim 128: every wgmma tiling that takes it.
	for _, tile := range togpu.FlashTiles {
		for _, causal := range []bool{false, true} {
			if f := (togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: 128, Causal: causal, Scale: 0.125, Elem: ir.BF16, Tile: tile}); tile.WGMMA && f.Check() == nil {
				fs = append(fs, f)
			}
		}
	}
	// f16: the default tilings, and the wgmma ones.
	for _, causal := range []bool{false, true} {
		for _, d := range []int64{64, 128} {
			for _, tile := range []togpu.FlashTile{{}, togpu.WGMMATile(d, causal)} {
				fs = append(fs, togpu.Flash{Batch: 256, Lq: 1024, Lk: 1024, D: d, Causal: causal, Scale: 0.125, Elem: ir.F16, Tile: tile})
			}
		}
	}
	// Each kernel through one backend, and each backend for some kernels,
	// unless STRATA_TEST_LONG asks for every pair (make test-long).
	backends := nvptx.BackendNames()
	run := testsize.Cover(len(fs), len(backends), nil)
	for i, f := range fs {
		for j, name := range backends {
			if !run(i, j) {
				continue
			}
			t.Run(fmt.Sprintf("%s-d%d-causal=%v-%v-%s", name, f.D, f.Causal, f.Tiling(), f.Elem), func(t *testing.T) {
				t.Parallel()
				m := flashModule(t, dialects.NewContext(), f)
				mod, err := llvm.Translate(llvm.GPUModules(m)[0])
				if err != nil {
					t.Fatal(err)
				}
				be, err := nvptx.New(name)
				if err != nil {
					t.Fatal(err)
				}
				opts, arch := nvptx.Options{}, "sm_90"
				if f.Tiling().WGMMA {
					opts.Target, arch = "sm_90a", "sm_90a"
				}
				ptx, err := be.Compile(mod, opts)
				if err != nil {
					if name == "llc" {
						t.Skipf("llc backend unavailable: %v", err)
					}
					t.Fatal(err)
				}
				if mb := f.Tiling().MinBlocks; mb > 0 && !strings.Contains(ptx, fmt.Sprintf(".minnctapersm %d", mb)) {
					t.Errorf("the PTX lacks the launch bounds of %v", f.Tiling())
				}
				// The output's column pairs are stored together (one
				// 32-bit store with an immediate offset from the row's
				// address), not as 16-bit stores with an address each
				// (session 15's ncu: a third of the d64 default's
				// instructions after the loop).
				if name == nvptx.DefaultBackend && scalarStore16.MatchString(ptx) {
					t.Errorf("the PTX stores single 16-bit elements: %s", scalarStore16.FindString(ptx))
				}
				// STRATA_FLASH_PTX names a directory to keep the PTX in
				// (to read the SASS: ptxas, then cuobjdump -sass).
				dir := os.Getenv("STRATA_FLASH_PTX")
				if dir == "" {
					dir = t.TempDir()
				}
				file := filepath.Join(dir, strings.NewReplacer("/", "_", "=", "").Replace(t.Name())+".ptx")
				if err := os.WriteFile(file, []byte(ptx), 0o644); err != nil {
					t.Fatal(err)
				}
				// (-c: relocatable code, as the driver's linker compiles
				// PTX — the runtime's default load — where ptxas is
				// stricter: a subroutine call serializes every wgmma.
				// The specialized tilings' setmaxnreg needs the whole
				// program, which the runtime gives them: exec's
				// wholeProgram.)
				args := []string{"-arch=" + arch, "-v", "-c", "-o", os.DevNull, file}
				if f.Tiling().Specialized {
					args = slices.Delete(args, 2, 3)
				}
				out, err := osexec.Command(ptxas, args...).CombinedOutput()
				if err != nil {
					t.Fatalf("ptxas rejected the PTX: %v\n%s", err, out)
				}
				if strings.Contains(string(out), "serialized") {
					// (ptxas info C7513/C7514: a non-wgmma instruction touched
					// an in-flight wgmma's registers; C7509: the kernel
					// calls a subroutine, such as div.rn.f32's slow path;
					// every wgmma then waits.) Known for the llc backend;
					// the native backend's kernels, which the bench and
					// the frontend run, must pipeline.
					if name == nvptx.DefaultBackend {
						t.Errorf("ptxas serializes the kernel's wgmma:\n%s", out)
					} else {
						t.Logf("ptxas serializes the kernel's wgmma:\n%s", out)
					}
				}
				if strings.Contains(string(out), "C7508") {
					// (setmaxnreg ignored: the specialized tilings' consumers
					// would run on the registers the producer gave up.)
					t.Errorf("ptxas ignores the kernel's setmaxnreg:\n%s", out)
				}
				if !strings.Contains(string(out), "0 bytes spill stores, 0 bytes spill loads") {
					if mb := f.Tiling().MinBlocks; mb == 0 {
						t.Errorf("the kernel spills:\n%s", out)
					} else {
						// (Launch bounds may buy the blocks with spills.)
						t.Logf("spills to fit %d blocks an SM:\n%s", mb, out)
					}
				}
				if i := strings.Index(string(out), "Used "); i >= 0 {
					t.Log(strings.TrimSpace(string(out[i:])))
				}
			})
		}
	}
}

// scalarStore16 matches a PTX store of one 16-bit element to global memory.
var scalarStore16 = regexp.MustCompile(`st\.global\.[bu]16 [^\n]*`)

// TestFlashPipeline runs graph-attention-to-flash before lower-to-gpu:
// the attentions it takes become one flash kernel each (and no mma
// kernels), the others are decomposed as before, and the lowered
// programs compute what the graph does (within passtest's bf16
// tolerance, 1e-2 + 1e-2·|want|; see TestFlashSemantics for why the
// results differ at all).
func TestFlashPipeline(t *testing.T) {
	for _, tc := range []struct {
		name, args, result, body string
		flash                    int
	}{
		{"causal-4d", "%q: tensor<1x2x70x32xbf16>, %k: tensor<1x2x40x32xbf16>, %v: tensor<1x2x40x32xbf16>", "tensor<1x2x70x32xbf16>", `
  %r = "graph.attention"(%q, %k, %v) <{causal = true}> : (tensor<1x2x70x32xbf16>, tensor<1x2x40x32xbf16>, tensor<1x2x40x32xbf16>) -> tensor<1x2x70x32xbf16>`, 1},
		{"scaled-3d-in-graph", "%q: tensor<3x20x16xbf16>, %b: tensor<16xbf16>", "tensor<3x20x16xbf16>", `
  %x = "graph.add"(%q, %b) : (tensor<3x20x16xbf16>, tensor<16xbf16>) -> tensor<3x20x16xbf16>
  %a = "graph.attention"(%x, %q, %q) <{scale = 0.5 : f64}> : (tensor<3x20x16xbf16>, tensor<3x20x16xbf16>, tensor<3x20x16xbf16>) -> tensor<3x20x16xbf16>
  %r = "graph.add"(%a, %x) : (tensor<3x20x16xbf16>, tensor<3x20x16xbf16>) -> tensor<3x20x16xbf16>`, 1},
		{"f32-left-alone", "%q: tensor<2x8x16xf32>", "tensor<2x8x16xf32>", `
  %r = "graph.attention"(%q, %q, %q) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>`, 0},
		{"f16", "%q: tensor<2x8x16xf16>", "tensor<2x8x16xf16>", `
  %r = "graph.attention"(%q, %q, %q) : (tensor<2x8x16xf16>, tensor<2x8x16xf16>, tensor<2x8x16xf16>) -> tensor<2x8x16xf16>`, 1},
		{"head-dim-8-left-alone", "%q: tensor<2x8x8xbf16>", "tensor<2x8x8xbf16>", `
  %r = "graph.attention"(%q, %q, %q) : (tensor<2x8x8xbf16>, tensor<2x8x8xbf16>, tensor<2x8x8xbf16>) -> tensor<2x8x8xbf16>`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &passtest.Program{Func: "main", Source: fmt.Sprintf("func.func @main(%s) -> %s {%s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.body, tc.result)}
			const pipeline = "builtin.module(graph-attention-to-flash,lower-to-gpu)"
			text := lowerText(t, p, pipeline)
			if got := strings.Count(text, `mapping = "flash"`); got != tc.flash {
				t.Errorf("%d flash kernels, want %d", got, tc.flash)
			}
			if tc.flash > 0 && (strings.Contains(text, `mapping = "mma"`) || strings.Contains(text, togpu.FlashAttr)) {
				t.Errorf("mma kernels or flash declarations left:\n%s", text)
			}
			if err := passtest.CheckSemantics(p, pipeline, 1); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestFlashPipelineWGMMA runs graph-attention-to-flash{wgmma=true}: a
// head-dim-64 attention takes the wgmma tiling (gpu.wgmma in a gpu.module
// asking for sm_90a, which exec.Compile then targets) — with 128-key
// tiles (an S product of n 128) when not causal —, computes what the
// graph does, and other head dims keep the mma.sync kernel.
func TestFlashPipelineWGMMA(t *testing.T) {
	for _, tc := range []struct {
		name          string
		d             int64
		causal, wgmma bool
	}{{"d64-causal", 64, true, true}, {"d64", 64, false, true}, {"d128-causal", 128, true, true}, {"d32", 32, true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ty := fmt.Sprintf("tensor<1x2x70x%dxbf16>", tc.d)
			p := &passtest.Program{Func: "main", Source: fmt.Sprintf(`func.func @main(%%q: %s, %%k: %s, %%v: %s) -> %s {
  %%r = "graph.attention"(%%q, %%k, %%v) <{causal = %v}> : (%s, %s, %s) -> %s
  return %%r : %s
}
`, ty, ty, ty, ty, tc.causal, ty, ty, ty, ty, ty)}
			const pipeline = "builtin.module(graph-attention-to-flash{wgmma=true},lower-to-gpu)"
			text := lowerText(t, p, pipeline)
			if got := strings.Contains(text, gpu.WGMMAOp); got != tc.wgmma {
				t.Errorf("gpu.wgmma in the kernel: %v, want %v", got, tc.wgmma)
			}
			if got, want := strings.Contains(text, "n = 128 : i64"), tc.wgmma && !tc.causal; tc.d == 64 && got != want {
				t.Errorf("an n-128 gpu.wgmma (128-key tiles) in the kernel: %v, want %v", got, want)
			}
			if got := strings.Contains(text, gpu.PTXTargetAttr); got != tc.wgmma {
				t.Errorf("%s on the gpu.module: %v, want %v", gpu.PTXTargetAttr, got, tc.wgmma)
			}
			if err := passtest.CheckSemantics(p, pipeline, 1); err != nil {
				t.Error(err)
			}
			ctx := dialects.NewContext()
			m, err := ir.Parse(ctx, p.Source, ir.ParseOptions{Filename: "wgmma.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			pm, err := passes.Parse(pipeline)
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, m); err != nil {
				t.Fatal(err)
			}
			prog, err := exec.Compile(m, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for name, ptx := range prog.PTX() {
				if strings.Contains(name, "flash") && strings.Contains(ptx, ".target sm_90a") != tc.wgmma {
					t.Errorf("gpu.module @%s: PTX for sm_90a %v, want %v", name, !tc.wgmma, tc.wgmma)
				}
			}
			if _, err := exec.Compile(m, exec.Options{Target: "sm_80"}); (err != nil) != tc.wgmma {
				t.Errorf("compiling for sm_80: error %v, want one: %v", err, tc.wgmma)
			}
		})
	}
}

// TestGPUFlashLarge compares, on the device, every wgmma tiling with the
// mma.sync kernel 64x64f (itself checked against the interpreter by
// TestGPUFlash) on shapes too large for the interpreter: many key tiles,
// many blocks, and the bench's size.
func TestGPUFlashLarge(t *testing.T) {
	rt := openRuntime(t)
	run := func(t *testing.T, tc flashCase, tile togpu.FlashTile, q, k, v *interp.Tensor) []float64 {
		return runFlash(t, rt, tc.flash(tile), q, k, v)
	}
	ref := togpu.FlashTile{Rows: 64, Keys: 64, Fused: true}
	for _, tc := range []flashCase{
		{1, 1, 64, 1024, 64, false, 0, ir.BF16},
		{1, 1, 1024, 64, 64, false, 0, ir.BF16},
		{16, 16, 64, 64, 64, false, 0, ir.BF16},
		{1, 1, 1024, 1024, 64, false, 0, ir.BF16},
		{16, 16, 1024, 1024, 64, false, 0, ir.BF16},
		{16, 16, 1024, 1024, 64, true, 0, ir.BF16},
		{1, 1, 1024, 1024, 128, false, 0, ir.BF16},
		{16, 16, 1024, 1024, 128, false, 0, ir.BF16},
		{16, 16, 1024, 1024, 128, true, 0, ir.BF16},
		// (Row and key tails in every head, with 2048 row blocks: the
		// persistent blocks' next row blocks, PrefetchQ's, are partial.)
		{16, 16, 1000, 1000, 128, false, 0, ir.BF16},
	} {
		t.Run(tc.String(), func(t *testing.T) {
			q, k, v := tc.inputs(t)
			want := run(t, tc, ref, q, k, v)
			for _, tile := range togpu.FlashTiles {
				if !tile.WGMMA || tc.flash(tile).Check() != nil {
					continue
				}
				t.Run(tile.String(), func(t *testing.T) {
					got := run(t, tc, tile, q, k, v)
					bad, worst, first := 0, 0.0, -1
					for i := range want {
						d := math.Abs(got[i] - want[i])
						if !(d <= 1.0/64) {
							bad++
							if first < 0 {
								first = i
							}
						}
						if !(d <= worst) {
							worst = d
						}
					}
					if bad > 0 {
						i := int64(first)
						t.Errorf("%d of %d outputs differ from %v's by more than 1/64 (max %.3g); the first: batch %d, row %d, column %d: %g vs %g",
							bad, len(want), ref, worst, i/(tc.lq*tc.d), i/tc.d%tc.lq, i%tc.d, got[first], want[first])
					} else {
						t.Logf("max |%v − %v| = %.3g", tile, ref, worst)
					}
				})
			}
		})
	}
}

// precompileFlash has the ptxas that STRATA_PTXAS names (exec.PTXASEnv)
// compile p's kernels (Program.Precompile) rather than the driver's JIT,
// when it names one: TestGPUFlash then checks and times the code of that
// ptxas, which may schedule the wgmma kernels differently from the
// driver's (the CUDA 13 driver serialized every flash wgmma that ptxas
// 12.4 pipelines: bench/NOTES.md, session 13).
func precompileFlash(t *testing.T, p *exec.Program) {
	t.Helper()
	if path := os.Getenv(exec.PTXASEnv); path != "" && path != "off" {
		if err := p.Precompile("main", path); err != nil {
			t.Fatal(err)
		}
	}
}

// runFlash compiles fl's kernel (with ptxas where STRATA_PTXAS names it),
// runs it on rt over q, k and v and returns its output.
func runFlash(t *testing.T, rt *exec.Runtime, fl togpu.Flash, q, k, v *interp.Tensor) []float64 {
	t.Helper()
	p, err := exec.Compile(flashModule(t, dialects.NewContext(), fl), flashExecOptions(fl.Tile))
	if err != nil {
		t.Fatal(err)
	}
	precompileFlash(t, p)
	out := newBuffer(t, fl.Elem, q.Len())
	if _, err := p.Run(rt, "main", []interp.Value{flat(t, q), flat(t, k), flat(t, v), out}); err != nil {
		t.Fatal(err)
	}
	got, err := out.Tensor()
	if err != nil {
		t.Fatal(err)
	}
	return got.Float64s()
}

// flashExecOptions are the compile options of tiling t's kernel: the
// wgmma tilings need the sm_90a target.
func flashExecOptions(t togpu.FlashTile) exec.Options {
	if t.WGMMA {
		return exec.Options{Target: "sm_90a"}
	}
	return exec.Options{}
}

// TestGPUFlash runs graph-attention-to-flash + lower-to-gpu on the device
// (skipped without one) for flashCases, and the kernel of every other
// tiling, and compares with the interpreter's graph.attention within
// TestFlashSemantics's tolerance; then it times the kernel of each tiling
// at the bench's attention size (b16 h16 s1024 bf16, d64 and d128: every
// wgmma tiling that takes it and the mma.sync default), causal and not.
func TestGPUFlash(t *testing.T) {
	rt := openRuntime(t)
	const tol = 1.0/128 + 1.0/64
	for _, tc := range flashCases {
		t.Run(tc.String(), func(t *testing.T) {
			q, k, v := tc.inputs(t)
			ctx := dialects.NewContext()
			ref, err := ir.Parse(ctx, tc.source(), ir.ParseOptions{Filename: "ref.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			m, err := ir.Parse(ctx, tc.source(), ir.ParseOptions{Filename: "flash.mlir"})
			if err != nil {
				t.Fatal(err)
			}
			pm, err := passes.Parse("builtin.module(graph-attention-to-flash,lower-to-gpu)")
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(ctx, m); err != nil {
				t.Fatal(err)
			}
			p, err := exec.Compile(m, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Run(rt, "main", []interp.Value{q, k, v})
			if err != nil {
				t.Fatal(err)
			}
			want, err := interp.New(ref).Call("main", q, k, v)
			if err != nil {
				t.Fatal(err)
			}
			gt, err := got[0].(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			wantF := want[0].(*interp.Tensor).Float64s()
			t.Logf("max |device − graph| = %.3g", compare(t, gt.Float64s(), wantF, tol))
			// Every other tiling, launched directly.
			for _, tile := range togpu.FlashTiles {
				if tile == tc.flash(togpu.FlashTile{}).Tiling() {
					continue // (the pipeline's, above)
				}
				t.Run(tile.String(), func(t *testing.T) {
					if err := tc.flash(tile).Check(); err != nil && tile.WGMMA {
						t.Skipf("not for this tiling: %v", err)
					}
					got := runFlash(t, rt, tc.flash(tile), q, k, v)
					t.Logf("max |device − graph| = %.3g", compare(t, got, wantF, tol))
				})
			}
		})
	}
	type timed struct {
		tc   flashCase
		tile togpu.FlashTile
	}
	var times []timed
	for _, d := range []int64{64, 128} {
		for _, tile := range togpu.FlashTiles {
			for _, causal := range []bool{false, true} {
				tc := flashCase{16, 16, 1024, 1024, d, causal, 0, ir.BF16}
				if d == 64 || tile == (togpu.FlashTile{Rows: 64, Keys: 64, Fused: true}) || tile.WGMMA && tc.flash(tile).Check() == nil {
					times = append(times, timed{tc, tile})
				}
			}
		}
	}
	// The inputs of each shape, made once (16M random values each).
	args := map[[4]int64][]interp.Value{}
	for _, tm := range times {
		tc, tile := tm.tc, tm.tile
		t.Run(fmt.Sprintf("time-%v-%v", tc, tc.flash(tile).Tiling()), func(t *testing.T) {
			m := flashModule(t, dialects.NewContext(), tc.flash(tile))
			p, err := exec.Compile(m, flashExecOptions(tile))
			if err != nil {
				t.Fatal(err)
			}
			precompileFlash(t, p)
			shape := [4]int64{tc.b * tc.h, tc.lq, tc.lk, tc.d}
			if args[shape] == nil {
				q, k, v := tc.inputs(t)
				out, err := interp.NewBuffer(tc.elem, []int64{int64(q.Len())})
				if err != nil {
					t.Fatal(err)
				}
				args[shape] = []interp.Value{flat(t, q), flat(t, k), flat(t, v), out}
			}
			ms, err := p.RunTimed(rt, "main", args[shape], 5, 20)
			if err != nil {
				t.Fatal(err)
			}
			// The wall time of back-to-back launches (warm L2, no events)
			// next to the cold-cache median, as the bench's rows report
			// both: their gap is the kernel's cost of a cold L2.
			b, err := p.Prepare(rt, "main", args[shape])
			if err != nil {
				t.Fatal(err)
			}
			defer b.Free()
			wall, err := b.WallTime(50)
			if err != nil {
				t.Fatal(err)
			}
			warm := eventMedian(t, rt, b, 20)
			flops := 4 * float64(tc.b*tc.h*tc.lq*tc.lk*tc.d)
			if tc.causal {
				flops /= 2
			}
			t.Logf("%.3f ms, %.0f TFLOP/s (no flush %.3f ms, wall %.3f ms)", ms, flops/ms/1e9, warm, wall)
		})
	}
}

// eventMedian is the median of iters launches of b between two CUDA events
// each, as exec.Bound.Time but without its cache flush before each launch:
// with the wall time of back-to-back launches and Time's cold-cache median
// it separates a kernel's cost of the flush from that of the events.
func eventMedian(t *testing.T, rt *exec.Runtime, b *exec.Bound, iters int) float64 {
	t.Helper()
	dev := rt.Device()
	events := make([]*cuda.Event, 2*iters)
	for i := range events {
		e, err := dev.NewEvent()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Destroy()
		events[i] = e
	}
	if err := b.Launch(); err != nil { // the final tier loaded, the allocator warm
		t.Fatal(err)
	}
	for i := range iters {
		if err := events[2*i].Record(nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
		if err := events[2*i+1].Record(nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := events[len(events)-1].Synchronize(); err != nil {
		t.Fatal(err)
	}
	times := make([]float64, iters)
	for i := range times {
		ms, err := cuda.Elapsed(events[2*i], events[2*i+1])
		if err != nil {
			t.Fatal(err)
		}
		times[i] = float64(ms)
	}
	slices.Sort(times)
	return times[iters/2]
}
