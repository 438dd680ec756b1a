package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

// AllModes are Strata's modes, as torch.compile names them; an engine that
// lacks one records "n/a" for it.
var AllModes = []string{"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"}

// Options configure Prepare.
type Options struct {
	Dir    string
	Engine Engine
	Size   Size
	Seed   uint64
	// Only restricts the run to these workloads (all when empty).
	Only []string
	// DefaultOnly names workloads measured in Strata's default mode alone
	// (the others record "n/a"), for ones too slow to tune in one device call.
	DefaultOnly []string
	// WarmupMs and RepMs are the time spent warming up and measuring, as
	// triton.testing.do_bench's warmup and rep (50 and 300 on the device).
	WarmupMs, RepMs float64
	// Commit is recorded in the manifest.
	Commit string
	// Log receives one line per workload and mode.
	Log io.Writer
	// Now gives the run's date (time.Now when nil).
	Now func() time.Time
}

// Prepare writes every workload's inputs into opts.Dir, runs Strata on them
// in every mode the engine has, writes the default mode's results, and
// leaves the manifest for torch_side.py and Report. A workload Strata cannot
// compile or run is recorded as unsupported, with the reason; its inputs are
// still written so the PyTorch side measures it.
func Prepare(opts Options) (*Manifest, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	m := &Manifest{
		Date: now().UTC().Format("2006-01-02"), Size: sizeName(opts.Size), Seed: opts.Seed,
		Engine: opts.Engine.Name(), Modes: AllModes, Commit: opts.Commit,
		WarmupMs: opts.WarmupMs, RepMs: opts.RepMs,
	}
	for _, w := range Workloads {
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, w.Name) {
			continue
		}
		pw, err := prepareWorkload(opts, w)
		if err != nil {
			return nil, err
		}
		m.Workloads = append(m.Workloads, *pw)
	}
	if len(m.Workloads) == 0 {
		return nil, fmt.Errorf("no workload selected by %v", opts.Only)
	}
	return m, writeJSON(filepath.Join(opts.Dir, ManifestFile), m)
}

func sizeName(s Size) string {
	if s == Small {
		return "small"
	}
	return "full"
}

// prepareWorkload writes one workload's inputs and measures Strata on it.
// Only I/O errors are returned; Strata's failures land in the manifest.
func prepareWorkload(opts Options, w *Workload) (*PreparedWorkload, error) {
	inst, err := w.Build(opts.Size)
	if err != nil {
		return nil, err
	}
	pw := &PreparedWorkload{
		Name: w.Name, Summary: w.Summary, Shape: w.Shape, Tol: w.Tol, TorchTol: w.TorchTol, TorchModes: w.TorchModes,
		Dynamic: len(inst.Variants) > 1, Bytes: inst.Bytes, Flops: inst.Flops,
		Strata: map[string]*StrataMode{},
	}
	if err := os.WriteFile(filepath.Join(opts.Dir, w.Name+".mlir"), []byte(inst.Program), 0o644); err != nil {
		return nil, err
	}
	args := make([][]*npy.Array, len(inst.Variants))
	for vi, v := range inst.Variants {
		pv := PreparedVariant{Label: v.Label}
		for _, t := range v.Inputs {
			arr, err := ToNPY(t, MakeInput(t, opts.Seed, w.Name+"/"+v.Label+"/"+t.Name))
			if err != nil {
				return nil, err
			}
			fs := FileSpec{TensorSpec: t, File: fileName(w.Name, v.Label, "in", t.Name), StrataOnly: t.Fill != nil}
			if err := npy.WriteFile(filepath.Join(opts.Dir, fs.File), arr); err != nil {
				return nil, err
			}
			pv.Inputs = append(pv.Inputs, fs)
			args[vi] = append(args[vi], arr)
		}
		for _, t := range v.Outputs {
			pv.Outputs = append(pv.Outputs, FileSpec{TensorSpec: t,
				StrataFile: fileName(w.Name, v.Label, "strata", t.Name),
				TorchFile:  fileName(w.Name, v.Label, "torch", t.Name)})
		}
		pw.Variants = append(pw.Variants, pv)
	}
	var defaults [][]*npy.Array // default mode's results, per variant
	for _, mode := range AllModes {
		if mode != "default" && slices.Contains(opts.DefaultOnly, w.Name) {
			pw.Strata[mode] = &StrataMode{Error: "n/a (measured in default mode only)"}
			fmt.Fprintf(opts.Log, "%-16s %-28s n/a (default only)\n", w.Name, mode)
			continue
		}
		if !slices.Contains(opts.Engine.Modes(), mode) {
			pw.Strata[mode] = &StrataMode{Error: "n/a"}
			fmt.Fprintf(opts.Log, "%-16s %-28s n/a\n", w.Name, mode)
			continue
		}
		sm, outs, err := runMode(opts, inst, mode, args)
		pw.Strata[mode] = sm
		if err != nil {
			sm.Error = err.Error()
			if mode == "default" {
				pw.Unsupported = err.Error()
			}
		} else if mode == "default" {
			defaults = outs
			if err := writeOutputs(opts.Dir, pw, outs); err != nil {
				return nil, err
			}
		} else if defaults != nil {
			c, err := compareRuns(pw, outs, defaults)
			if err != nil {
				sm.Error = err.Error()
			} else {
				sm.VsDefault = &c
			}
		}
		fmt.Fprintf(opts.Log, "%-16s %-28s %s\n", w.Name, mode, sm.summary())
	}
	return pw, nil
}

func (sm *StrataMode) summary() string {
	switch {
	case sm.Error != "":
		return "error: " + sm.Error
	case sm.TotalS > 0:
		return fmt.Sprintf("total %.4f s, kernels %d", sm.TotalS, sm.Kernels)
	default:
		return fmt.Sprintf("%.4f ms (wall %.4f ms), first call %.4f s", sm.Ms, sm.WallMs, sm.FirstCallS)
	}
}

func fileName(workload, variant, side, tensor string) string {
	if variant != "" {
		workload += "." + variant
	}
	return workload + "." + side + "." + tensor + ".npy"
}

// runMode compiles inst once for mode, calls every variant once (the first
// call), then times each single-variant workload.
func runMode(opts Options, inst *Instance, mode string, args [][]*npy.Array) (*StrataMode, [][]*npy.Array, error) {
	sm := &StrataMode{PhasesS: map[string]float64{}}
	if err := quiesce(opts.Engine); err != nil {
		return sm, nil, err
	}
	gc0 := gcCycles()
	t0 := time.Now()
	ctx, module, err := Load(inst)
	if err != nil {
		return sm, nil, fmt.Errorf("trace: %w", err)
	}
	sm.PhasesS["trace"] = time.Since(t0).Seconds()
	prog, err := compile(opts.Engine, ctx, module, inst.Entry, mode)
	if err != nil {
		return sm, nil, err
	}
	for k, v := range prog.Phases() {
		sm.PhasesS[k] = v
	}
	sm.Kernels = prog.Kernels()
	outs := make([][]*npy.Array, len(args))
	// transfer is the time the calls spent converting and copying data,
	// left out of the first-call time (see Transferrer).
	transfer := 0.0
	for i, a := range args {
		t1 := time.Now()
		res, err := prog.Run(a)
		if err != nil {
			return sm, nil, fmt.Errorf("run %s: %w", inst.Variants[i].Label, err)
		}
		run := time.Since(t1).Seconds()
		if tr, ok := prog.(Transferrer); ok {
			run -= tr.TransferS()
			transfer += tr.TransferS()
		}
		if i == 0 {
			// first_run includes the module load, also reported alone as
			// "load" by engines that know it.
			sm.PhasesS["first_run"] = run
		}
		outs[i] = res
	}
	elapsed := time.Since(t0).Seconds() - transfer
	sm.GCCycles = int(gcCycles() - gc0)
	if transfer > 0 {
		sm.PhasesS["transfer"] = transfer
	}
	for k, v := range prog.Phases() { // with those of the first call ("load")
		sm.PhasesS[k] = v
	}
	if lr, ok := prog.(LoadReporter); ok {
		rep, err := lr.LoadsSince(t0)
		if err != nil {
			return sm, nil, fmt.Errorf("load report: %w", err)
		}
		if rep.Modules > 0 {
			sm.PhasesS["jit"] = rep.JIT.Seconds()
			sm.PhasesS["driver_load"] = rep.Wall.Seconds()
		}
	}
	if len(args) > 1 {
		sm.TotalS = elapsed
		return sm, outs, nil
	}
	sm.FirstCallS = elapsed
	ms, err := timeProgram(prog, args[0], opts.WarmupMs, opts.RepMs)
	if err != nil {
		return sm, nil, fmt.Errorf("timing: %w", err)
	}
	sm.Ms = ms
	if wt, ok := prog.(WallTimer); ok {
		if sm.WallMs, err = wt.WallTime(args[0], wallIters(ms)); err != nil {
			return sm, nil, fmt.Errorf("wall timing: %w", err)
		}
	}
	return sm, outs, nil
}

// quiesce starts a first call from a clean slate: the garbage of earlier
// workloads (their inputs and results, gigabytes) collected, and the
// device done with the launches earlier measurements queued. Neither is
// the workload's cost; a user's first call pays neither.
func quiesce(e Engine) error {
	runtime.GC()
	if q, ok := e.(Quiescer); ok {
		return q.Quiesce()
	}
	return nil
}

// gcCycles returns the number of garbage collections the process has
// completed.
// heapAllocs returns the bytes the Go heap has allocated since the
// process started.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// compile turns a panic of an engine under construction into an error, so
// that one workload's failure does not end the run.
func compile(e Engine, ctx *ir.Context, module *ir.Operation, entry, mode string) (p Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("compile: panic: %v", r)
		}
	}()
	p, err = e.Compile(ctx, module, entry, mode)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return p, nil
}

// wallIters is the number of back-to-back calls WallTime makes: about
// 20 ms of device time, 10 to 2000 calls (torch_side.py's wall_ms).
func wallIters(ms float64) int {
	return int(min(max(20/max(ms, 1e-3), 10), 2000))
}

// timeProgram follows do_bench: estimate one call, then warm up for
// warmupMs and take the median over repMs worth of calls. The estimate is
// do_bench's (five cache clears and calls, the clears included) where the
// Program is an Estimator, and a median of three calls otherwise. Slow
// programs (a naive kernel taking seconds) get at least three measured
// calls, so the suite stays within one device call.
func timeProgram(p Program, args []*npy.Array, warmupMs, repMs float64) (float64, error) {
	est, err := estimate(p, args)
	if err != nil {
		return 0, err
	}
	if est*3 > repMs {
		return p.Time(args, 0, 3)
	}
	est = max(est, 1e-3)
	n := func(ms float64) int { return int(min(max(math.Floor(ms/est), 3), 100000)) }
	return p.Time(args, n(warmupMs), n(repMs))
}

// estimate is do_bench's estimate of one call of p (Estimator), or the
// median of three when p has none.
func estimate(p Program, args []*npy.Array) (float64, error) {
	if e, ok := p.(Estimator); ok {
		return e.Estimate(args, 5)
	}
	return p.Time(args, 1, 3)
}

func writeOutputs(dir string, pw *PreparedWorkload, outs [][]*npy.Array) error {
	for vi, pv := range pw.Variants {
		if len(outs[vi]) != len(pv.Outputs) {
			return fmt.Errorf("%s: %d results, want %d", pw.Name, len(outs[vi]), len(pv.Outputs))
		}
		for oi, o := range pv.Outputs {
			if err := npy.WriteFile(filepath.Join(dir, o.StrataFile), outs[vi][oi]); err != nil {
				return err
			}
		}
	}
	return nil
}

// compareRuns compares a mode's results with the default mode's.
func compareRuns(pw *PreparedWorkload, got, want [][]*npy.Array) (Check, error) {
	c := Check{OK: true}
	for vi, pv := range pw.Variants {
		for oi, o := range pv.Outputs {
			oc, err := compareArrays(o.TensorSpec, got[vi][oi], want[vi][oi], pw.Tol)
			if err != nil {
				return c, err
			}
			c = c.Merge(oc)
		}
	}
	return c, nil
}

func compareArrays(t TensorSpec, got, want *npy.Array, tol float64) (Check, error) {
	g, err := FromNPY(t, got)
	if err != nil {
		return Check{}, err
	}
	w, err := FromNPY(t, want)
	if err != nil {
		return Check{}, err
	}
	return Compare(g, w, tol)
}

// Report compares Strata's results in dir with PyTorch's and assembles the
// results.
func Report(dir string) (*Results, error) {
	var m Manifest
	if err := readJSON(filepath.Join(dir, ManifestFile), &m); err != nil {
		return nil, err
	}
	var ts TorchSide
	if err := readJSON(filepath.Join(dir, TorchFile), &ts); err != nil {
		return nil, err
	}
	r := &Results{
		Date: m.Date, GPU: ts.GPU, CUDA: ts.CUDA, Torch: ts.Torch, Triton: ts.Triton,
		Engine: m.Engine, Size: m.Size, Commit: m.Commit, Ceiling: ts.Ceilings, Modes: m.Modes,
	}
	for _, pw := range m.Workloads {
		tw := ts.Workloads[pw.Name]
		wr := WorkloadResult{
			Name: pw.Name, Summary: pw.Summary, Shape: pw.Shape, Bytes: pw.Bytes, Flops: pw.Flops,
			Unsupported: pw.Unsupported, Strata: pw.Strata, Torch: tw.Modes,
		}
		if wr.Torch == nil {
			wr.Torch = map[string]*TorchMode{}
		}
		if tw.Error != "" {
			wr.Torch["default"] = &TorchMode{Error: tw.Error}
		}
		if pw.Unsupported == "" && tw.Error == "" {
			c, err := checkAgainstTorch(dir, pw)
			if err != nil {
				c.Mismatched, c.OK = -1, false
				wr.Unsupported = "comparison: " + err.Error()
			}
			wr.Correctness = &c
		}
		wr.fill(r.Ceiling)
		r.Workloads = append(r.Workloads, wr)
	}
	return r, nil
}

// checkAgainstTorch compares every output of every variant, within
// TorchTol when the workload has one, else Tol.
func checkAgainstTorch(dir string, pw PreparedWorkload) (Check, error) {
	c := Check{OK: true}
	tol := pw.Tol
	if pw.TorchTol != 0 {
		tol = pw.TorchTol
	}
	for _, pv := range pw.Variants {
		for _, o := range pv.Outputs {
			got, err := npy.ReadFile(filepath.Join(dir, o.StrataFile))
			if err != nil {
				return c, err
			}
			want, err := npy.ReadFile(filepath.Join(dir, o.TorchFile))
			if err != nil {
				return c, err
			}
			oc, err := compareArrays(o.TensorSpec, got, want, tol)
			if err != nil {
				return c, fmt.Errorf("%s: %w", o.StrataFile, err)
			}
			c = c.Merge(oc)
		}
	}
	return c, nil
}

// torchCompileModes are torch.compile's modes, in the order "best" scans.
var torchCompileModes = []string{"default", "reduce-overhead", "max-autotune-no-cudagraphs"}

// fill computes ratios and rates from the measurements.
func (wr *WorkloadResult) fill(c Ceilings) {
	wr.Ratios = map[string]float64{}
	sd, td, te := wr.Strata["default"], wr.Torch["default"], wr.Torch["eager"]
	ratio := func(key string, a, b float64) {
		if a > 0 && b > 0 {
			wr.Ratios[key] = a / b
		}
	}
	if sd != nil && td != nil {
		ratio("default", sd.Ms, td.Ms)
		ratio("first_call", sd.FirstCallS, td.FirstCallS)
		ratio("total", sd.TotalS, td.TotalS)
	}
	if sd != nil && te != nil {
		ratio("eager", sd.Ms, te.Ms)
	}
	ratio("best", bestStrata(wr.Strata), bestTorch(wr.Torch))
	if len(wr.Ratios) == 0 {
		wr.Ratios = nil
	}
	rate := func(ms float64) float64 {
		switch {
		case ms <= 0:
			return 0
		case wr.Bytes > 0:
			return float64(wr.Bytes) / ms / 1e6
		default:
			return float64(wr.Flops) / ms / 1e9
		}
	}
	switch {
	case wr.Bytes > 0:
		wr.RateUnit = "GB/s"
	case wr.Flops > 0:
		wr.RateUnit = "TFLOP/s"
	}
	if td != nil {
		wr.TorchRate = rate(td.Ms)
	}
	if sd == nil {
		return
	}
	wr.Rate = rate(sd.Ms)
	ceiling := c.CopyGBps
	if wr.Bytes == 0 {
		ceiling = c.BF16TFLOPs
	}
	if wr.Rate > 0 && ceiling > 0 {
		wr.CeilingFraction = wr.Rate / ceiling
	}
}

func bestStrata(ms map[string]*StrataMode) float64 {
	best := 0.0
	for _, m := range ms {
		if m != nil && m.Error == "" && m.Ms > 0 && (best == 0 || m.Ms < best) {
			best = m.Ms
		}
	}
	return best
}

func bestTorch(ms map[string]*TorchMode) float64 {
	best := 0.0
	for _, name := range torchCompileModes {
		if m := ms[name]; m != nil && m.Error == "" && m.Ms > 0 && (best == 0 || m.Ms < best) {
			best = m.Ms
		}
	}
	return best
}

// WriteResults writes r as dir/<date>-h200.json and returns the path.
func WriteResults(r *Results, dir string) (string, error) {
	if r.Date == "" {
		return "", errors.New("results without a date")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Date+"-h200.json")
	return path, writeJSON(path, r)
}
