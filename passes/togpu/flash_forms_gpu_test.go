package togpu_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// flashForm is a form of the forward kernel other than TestGPUFlash's:
// saving the log-sum-exp (the training rows' forward) or taking its length
// at run time.
type flashForm struct {
	lse, dynamic bool
}

func (f flashForm) String() string {
	switch {
	case f.lse && f.dynamic:
		return "lse-dynamic"
	case f.lse:
		return "lse"
	}
	return "dynamic"
}

// apply returns fl in form f.
func (f flashForm) apply(fl togpu.Flash) togpu.Flash {
	fl.LSE = f.lse
	if f.dynamic {
		fl.Lq, fl.Lk, fl.Dynamic = ir.Dynamic, ir.Dynamic, true
		fl.Tile.TMA = false // (as Flash.WGMMADefault: a tensor map holds the length)
	}
	return fl
}

// formTiles are the wgmma tilings whose other forms TestGPUFlashForms
// checks and times: the defaults and the persistent specialized tilings
// graph-attention-to-flash may give them.
var formTiles = []togpu.FlashTile{
	togpu.FlashTileWGMMA,
	togpu.FlashTileWGMMADynamic,
	togpu.FlashTileWGMMACausal,
	togpu.FlashTileWGMMA128Causal,
	togpu.FlashTileWGMMA128,
}

// TestGPUFlashForms runs the forward kernel's other forms (saving the
// log-sum-exp; a length known at run time) with formTiles on the device
// (skipped without one) and compares each output and log-sum-exp with the
// mma.sync kernel 64x64f's of the same form (TestFlashGradSemantics and
// TestFlashDynamicSemantics check those forms against the interpreter),
// on small attentions with row and key tails and at the bench's size; then
// it times each at the bench's attention_train_d128 size (b16 h16 s1024
// d128 causal), where graph-attention-to-flash's choice for those forms is
// open.
func TestGPUFlashForms(t *testing.T) {
	rt := openRuntime(t)
	ref := togpu.FlashTile{Rows: 64, Keys: 64, Fused: true}
	run := func(t *testing.T, fl togpu.Flash, q, k, v *interp.Tensor) (o, lse []float64) {
		m := flashModule(t, dialects.NewContext(), fl)
		p, err := exec.Compile(m, flashExecOptions(fl.Tile))
		if err != nil {
			t.Fatal(err)
		}
		args := flashArgs(t, fl, q, k, v)
		if _, err := p.Run(rt, "main", args); err != nil {
			t.Fatal(err)
		}
		return flashOutputs(t, args)
	}
	forms := []flashForm{{lse: true}, {dynamic: true}, {lse: true, dynamic: true}}
	for _, tc := range []flashCase{
		{1, 2, 150, 140, 128, true, 0, ir.BF16},
		{1, 1, 130, 200, 128, false, 0, ir.BF16},
		{2, 1, 300, 200, 128, true, 0, ir.BF16}, // (persistent blocks over several row blocks at small grids)
		{2, 1, 200, 130, 64, false, 0, ir.BF16},
		{1, 2, 130, 70, 64, true, 0, ir.BF16},
		// (One length with key tails, for the dynamic forms: the copies
		// of the tiles before the last take no guards, copyKeys.)
		{2, 1, 200, 200, 64, false, 0, ir.BF16},
		{1, 2, 130, 130, 128, true, 0, ir.BF16},
		{1, 1, 70, 70, 64, true, 4, ir.BF16},
		{16, 16, 1024, 1024, 128, true, 0, ir.BF16},
		{16, 16, 1000, 1000, 128, true, 0, ir.BF16},
	} {
		t.Run(tc.String(), func(t *testing.T) {
			q, k, v := tc.inputs(t)
			for _, form := range forms {
				if form.dynamic && tc.lq != tc.lk {
					continue // (one length)
				}
				wantO, wantL := run(t, form.apply(tc.flash(ref)), q, k, v)
				for _, tile := range formTiles {
					fl := form.apply(tc.flash(tile))
					if fl.Check() != nil {
						continue
					}
					t.Run(fmt.Sprintf("%v-%v", form, fl.Tile), func(t *testing.T) {
						o, lse := run(t, fl, q, k, v)
						t.Logf("max |o − %v's| = %.3g", ref, closeTo(t, "o", o, wantO, 1.0/64))
						if fl.LSE {
							t.Logf("max |lse − %v's| = %.3g", ref, closeTo(t, "lse", lse, wantL, 1.0/64))
						}
					})
				}
			}
		})
	}
	var q, k, v *interp.Tensor
	tc := flashCase{16, 16, 1024, 1024, 128, true, 0, ir.BF16}
	for _, form := range forms {
		for _, tile := range formTiles {
			fl := form.apply(tc.flash(tile))
			if fl.Check() != nil {
				continue
			}
			t.Run(fmt.Sprintf("time-%v-%v-%v", tc, form, fl.Tile), func(t *testing.T) {
				if q == nil {
					q, k, v = tc.inputs(t)
				}
				m := flashModule(t, dialects.NewContext(), fl)
				p, err := exec.Compile(m, flashExecOptions(fl.Tile))
				if err != nil {
					t.Fatal(err)
				}
				args := []interp.Value{flat(t, q), flat(t, k), flat(t, v), newBuffer(t, tc.elem, q.Len())}
				if fl.LSE {
					args = append(args, newBuffer(t, ir.F32, q.Len()/int(tc.d)))
				}
				ms, err := p.RunTimed(rt, "main", args, 5, 20)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%.3f ms, %.0f TFLOP/s", ms, 2*float64(tc.b*tc.h*tc.lq*tc.lk*tc.d)/ms/1e9)
			})
		}
	}
}

// closeTo fails t when an element of got is farther than tol from
// want's (NaN fails), naming the first and counting them, and returns the
// largest difference.
func closeTo(t *testing.T, name string, got, want []float64, tol float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	bad, first, worst := 0, -1, 0.0
	for i := range want {
		d := math.Abs(got[i] - want[i])
		if !(d <= tol) {
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
		t.Errorf("%s: %d of %d elements differ by more than %g (max %.3g); the first, %d: %g vs %g", name, bad, len(want), tol, worst, first, got[first], want[first])
	}
	return worst
}

// TestGPUFlashRow times the bench's attention rows' program (graph.attention
// lowered by graph-attention-to-flash with wgmma and lower-to-gpu: its
// output allocated by @main, its kernel launched on views of the inputs)
// against the kernel of the same tiling launched alone on 1-D buffers, as
// TestGPUFlash times it, and against rowCandidates' kernels, each with
// TestGPUFlash's short loop (5 launches to warm up, 20 timed), the row's
// long warm-up with the short count timed, the short warm-up with the
// long count, the row's long one (about 50 ms of launches to warm up,
// 100 ms timed, as bench.timeProgram counted them before session 22; since
// it counts from do_bench's estimate, clears included, about 230+450 at
// d64), then the short one again; and it lists the kernels
// the row's program launches (a device profile of 5 calls). Its logs say
// whether the row's program runs anything the kernel test does not,
// whether the row's ms over the test's is the timing loop's, and which
// kernel is fastest in the row's loop.
func TestGPUFlashRow(t *testing.T) {
	rt := openRuntime(t)
	for _, tc := range []flashCase{
		{16, 16, 1024, 1024, 64, false, 0, ir.BF16},
		{16, 16, 1024, 1024, 128, false, 0, ir.BF16},
	} {
		t.Run(tc.String(), func(t *testing.T) {
			q, k, v := tc.inputs(t)
			row := attentionRowProgram(t, tc)
			type timed struct {
				name string
				p    *exec.Program
				args []interp.Value
			}
			progs := []timed{{"row", row, []interp.Value{q, k, v}}}
			kernelArgs := []interp.Value{flat(t, q), flat(t, k), flat(t, v), newBuffer(t, tc.elem, q.Len())}
			for _, tile := range append([]togpu.FlashTile{togpu.WGMMATile(tc.d, tc.causal)}, rowCandidates[tc.d]...) {
				p, err := exec.Compile(flashModule(t, dialects.NewContext(), tc.flash(tile)), flashExecOptions(tile))
				if err != nil {
					t.Fatal(err)
				}
				progs = append(progs, timed{"kernel " + tile.String(), p, kernelArgs})
			}
			t.Logf("row's kernels (5 calls):\n%s", kernelProfile(t, rt, row, progs[0].args, 5))
			for _, loop := range []struct {
				name          string
				warmup, iters int
			}{{"short", 5, 20}, {"warm-up", 300, 20}, {"timed", 5, 600}, {"long", 300, 600}, {"short again", 5, 20}} {
				for _, x := range progs {
					ms, err := x.p.RunTimed(rt, "main", x.args, loop.warmup, loop.iters)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%-11s loop (%d+%d): %-32s %.4f ms", loop.name, loop.warmup, loop.iters, x.name, ms)
				}
			}
		})
	}
}

// rowCandidates are the tilings TestGPUFlashRow times beside the default
// of each head dim: at d64 the default before session 24 (64-row blocks,
// FlashTileWGMMADynamic), cuDNN's layout (the head dim 128 default) and
// session 23's lead, that with LatePack, whose 128-row blocks take less
// energy a launch than the 64-row ones but were slower in the row's loop
// (bench/NOTES.md); at d128 the lead too (equal there).
var rowCandidates = map[int64][]togpu.FlashTile{
	64:  {togpu.FlashTileWGMMADynamic, togpu.FlashTileWGMMA128, flashTile128LatePack},
	128: {flashTile128LatePack},
}

// flashTile128LatePack is FlashTileWGMMA128 with LatePack.
var flashTile128LatePack = func() togpu.FlashTile {
	t := togpu.FlashTileWGMMA128
	t.LatePack = true
	return t
}()

// attentionRowProgram is the bench's attention row's program for tc:
// graph.attention lowered by graph-attention-to-flash with wgmma and
// lower-to-gpu, compiled for sm_90a.
func attentionRowProgram(t *testing.T, tc flashCase) *exec.Program {
	t.Helper()
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, tc.source(), ir.ParseOptions{Filename: "row.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	pm, err := passes.Parse("builtin.module(graph-attention-to-flash{wgmma=true},lower-to-gpu)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	row, err := exec.Compile(m, exec.Options{Target: "sm_90a"})
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// TestGPUFlashEnergy runs the attention rows' programs (d64, d128) and
// energyCandidates' kernels in the phases bench/energy_side.py runs
// PyTorch's SDPA in, for a power sampler (energy_side.py sample) to
// attribute the device's energy, power and SM clock to: 0.7 s idle, about
// 1.5 s of launches back to back, 1.2 s of one launch a millisecond (the
// SM clock at its top: energy a launch at one clock), then the row's
// timing loop (50 ms of launches back to back, 100 ms of flushed ones:
// bench.timeProgram's) repeated for about 1.2 s. Each phase is logged as a line "PHASE name
// start end launches ms" (Unix nanoseconds; ms a launch: host wall clock
// back to back, the median of the loops' medians for the row's loop),
// which energy_side.py report joins with the samples. With -test.short each
// program launches once (its final JIT tier's kernel) and nothing else
// runs: a run for ncu.
func TestGPUFlashEnergy(t *testing.T) {
	rt := openRuntime(t)
	phase := func(name string, start time.Time, launches int, ms float64) {
		t.Logf("PHASE %s %d %d %d %.4f", name, start.UnixNano(), time.Now().UnixNano(), launches, ms)
	}
	for _, tc := range []flashCase{
		{16, 16, 1024, 1024, 64, false, 0, ir.BF16},
		{16, 16, 1024, 1024, 128, false, 0, ir.BF16},
	} {
		q, k, v := tc.inputs(t)
		type program struct {
			name string
			p    *exec.Program
			args []interp.Value
		}
		progs := []program{{fmt.Sprintf("strata-d%d", tc.d), attentionRowProgram(t, tc), []interp.Value{q, k, v}}}
		for _, tile := range energyCandidates[tc.d] {
			p, err := exec.Compile(flashModule(t, dialects.NewContext(), tc.flash(tile)), flashExecOptions(tile))
			if err != nil {
				t.Fatal(err)
			}
			progs = append(progs, program{fmt.Sprintf("strata-d%d-%v", tc.d, tile), p, []interp.Value{flat(t, q), flat(t, k), flat(t, v), newBuffer(t, tc.elem, q.Len())}})
		}
		for _, x := range progs {
			b, err := x.p.Prepare(rt, "main", x.args)
			if err != nil {
				t.Fatal(err)
			}
			if testing.Short() {
				_, err = b.Time(0, 1)
				b.Free()
				if err != nil {
					t.Fatal(err)
				}
				continue
			}
			err = energyPhases(b, x.name, phase)
			b.Free()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// energyPhases runs TestGPUFlashEnergy's phases on b, reporting each.
func energyPhases(b *exec.Bound, name string, phase func(string, time.Time, int, float64)) error {
	start := time.Now()
	time.Sleep(700 * time.Millisecond)
	phase(name+"-idle", start, 0, 0)
	ms, err := b.WallTime(50)
	if err != nil {
		return err
	}
	n := int(1500 / ms)
	start = time.Now()
	if ms, err = b.WallTime(n); err != nil {
		return err
	}
	phase(name+"-b2b", start, n+1, ms)
	// Paced: one launch a millisecond, waited for, so that the device stays
	// far below its power cap and its SM clock at the top: the energy a
	// launch of every kernel (and PyTorch's) at one clock.
	time.Sleep(300 * time.Millisecond)
	start = time.Now()
	paced := 0
	for next := start; time.Since(start) < 1200*time.Millisecond; paced++ {
		if err := b.Launch(); err != nil {
			return err
		}
		if err := b.Wait(); err != nil {
			return err
		}
		next = next.Add(time.Millisecond)
		time.Sleep(time.Until(next))
	}
	phase(name+"-paced", start, paced, 0)
	// The row's loop: bench.timeProgram's counts from do_bench's estimate.
	est, err := b.Estimate(5)
	if err != nil {
		return err
	}
	warmup, iters := max(int(50/est), 3), max(int(100/est), 3)
	var medians []float64
	start = time.Now()
	for time.Since(start) < 1200*time.Millisecond {
		m, err := b.Time(warmup, iters)
		if err != nil {
			return err
		}
		medians = append(medians, m)
	}
	slices.Sort(medians)
	phase(name+"-row", start, len(medians)*(warmup+iters), medians[len(medians)/2])
	return nil
}

// energyCandidates are the kernels TestGPUFlashEnergy runs beside the
// rows' programs: at d64 the default before session 24 (64-row blocks,
// FlashTileWGMMADynamic: ~20 mJ a launch more than the 192-row default
// at one clock), cuDNN's layout (128-row blocks, which read a quarter of
// the 64-row kernel's L2 sectors and take as little energy a launch as
// PyTorch's kernel, but at d64 are latency-bound) and that with LatePack.
// Session 23 measured the other 64-row forms (bench/NOTES.md).
var energyCandidates = map[int64][]togpu.FlashTile{
	64: {togpu.FlashTileWGMMADynamic, togpu.FlashTileWGMMA128, flashTile128LatePack},
}
