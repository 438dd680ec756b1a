package bench

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

// fakeTorchSide plays torch_side.py: it writes the float64 reference as
// PyTorch's outputs and made-up timings, so Report can be tested without a
// GPU.
func fakeTorchSide(t *testing.T, dir string, m *Manifest) {
	t.Helper()
	ts := TorchSide{Torch: "2.11.0", Triton: "3.6.0", GPU: "Fake GPU", CUDA: "13.0",
		Ceilings: Ceilings{CopyGBps: 4000, BF16TFLOPs: 700, FP32TFLOPs: 50}, Workloads: map[string]TorchWorkload{}}
	for _, pw := range m.Workloads {
		w := Lookup(pw.Name)
		inst, err := w.Build(Small)
		if err != nil {
			t.Fatal(err)
		}
		inputs := make([][][]float64, len(pw.Variants))
		for vi, pv := range pw.Variants {
			for _, in := range pv.Inputs {
				a, err := npy.ReadFile(filepath.Join(dir, in.File))
				if err != nil {
					t.Fatal(err)
				}
				vs, err := FromNPY(in.TensorSpec, a)
				if err != nil {
					t.Fatal(err)
				}
				inputs[vi] = append(inputs[vi], vs)
			}
		}
		want, err := referenceOutputs(w, inst, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for vi, pv := range pw.Variants {
			for oi, o := range pv.Outputs {
				vs := make([]float32, len(want[vi][oi]))
				for i, v := range want[vi][oi] {
					vs[i] = float32(v)
				}
				a, err := npy.FromSlice(o.Shape, vs)
				if err != nil {
					t.Fatal(err)
				}
				if err := npy.WriteFile(filepath.Join(dir, o.TorchFile), a); err != nil {
					t.Fatal(err)
				}
			}
		}
		modes := map[string]*TorchMode{"eager": {Ms: 2}}
		if pw.Dynamic {
			modes["default"] = &TorchMode{TotalS: 0.5}
		} else {
			for _, mode := range pw.TorchModes {
				modes[mode] = &TorchMode{Ms: 1, FirstCallS: 1}
			}
		}
		ts.Workloads[pw.Name] = TorchWorkload{Modes: modes}
	}
	if err := writeJSON(filepath.Join(dir, TorchFile), ts); err != nil {
		t.Fatal(err)
	}
}

func prepareSmall(t *testing.T, only ...string) (string, *Manifest) {
	t.Helper()
	dir := t.TempDir()
	var log strings.Builder
	m, err := Prepare(Options{Dir: dir, Engine: Interp{}, Size: Small, Seed: 1, Only: only,
		WarmupMs: 0.1, RepMs: 0.5, Log: &log,
		Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "reduce-overhead") {
		t.Errorf("log does not mention every mode:\n%s", log.String())
	}
	return dir, m
}

// The whole flow on the interpreter: prepare, a PyTorch side that computes the
// reference, report.
func TestPrepareReport(t *testing.T) {
	dir, m := prepareSmall(t)
	if m.Date != "2026-11-30" || len(m.Workloads) != len(Workloads) {
		t.Fatalf("manifest date %q with %d workloads", m.Date, len(m.Workloads))
	}
	// torch_side.py times with the run's warm-up and measuring times, by
	// these keys.
	var timing struct {
		WarmupMs *float64 `json:"warmup_ms"`
		RepMs    *float64 `json:"rep_ms"`
	}
	if err := readJSON(filepath.Join(dir, ManifestFile), &timing); err != nil {
		t.Fatal(err)
	}
	if timing.WarmupMs == nil || *timing.WarmupMs != 0.1 || timing.RepMs == nil || *timing.RepMs != 0.5 {
		t.Errorf("manifest warmup_ms %v, rep_ms %v: want the run's 0.1 and 0.5", timing.WarmupMs, timing.RepMs)
	}
	fakeTorchSide(t, dir, m)
	r, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, wr := range r.Workloads {
		if wr.Unsupported != "" {
			t.Errorf("%s: unsupported: %s", wr.Name, wr.Unsupported)
			continue
		}
		if wr.Correctness == nil || !wr.Correctness.OK {
			t.Errorf("%s: correctness %+v", wr.Name, wr.Correctness)
		}
		if got := wr.Strata["reduce-overhead"]; got == nil || got.Error != "n/a" {
			t.Errorf("%s: reduce-overhead %+v, want n/a", wr.Name, got)
		}
		key := "default"
		if wr.Name == "softmax_dynamic" {
			key = "total"
		}
		if wr.Ratios[key] <= 0 {
			t.Errorf("%s: no %s ratio: %v", wr.Name, key, wr.Ratios)
		}
		if (wr.Bytes > 0 || wr.Flops > 0) && wr.Name != "softmax_dynamic" && wr.Rate <= 0 {
			t.Errorf("%s: no rate", wr.Name)
		}
	}
	results := filepath.Join(dir, "results")
	path, err := WriteResults(r, results)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "2026-11-30-h200.json" {
		t.Errorf("results written to %s", path)
	}
	back, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	// Written and read back, the table is the same: every row, cell and
	// ratio (empty and absent lists alike, as JSON has it).
	if diff := cmp.Diff(r, back, cmpopts.EquateEmpty()); diff != "" || back.GPU != "Fake GPU" {
		t.Errorf("results did not round-trip (-written +read):\n%s", diff)
	}
}

// A wrong PyTorch output is a failed check, not a pass.
func TestReportCatchesMismatch(t *testing.T) {
	dir, m := prepareSmall(t, "softmax")
	fakeTorchSide(t, dir, m)
	o := m.Workloads[0].Variants[0].Outputs[0]
	a, err := npy.ReadFile(filepath.Join(dir, o.TorchFile))
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := npy.ToSlice[float32](a)
	vs[3] *= 1.01
	a, _ = npy.FromSlice(a.Shape, vs)
	if err := npy.WriteFile(filepath.Join(dir, o.TorchFile), a); err != nil {
		t.Fatal(err)
	}
	r, err := Report(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Workloads[0].Correctness; c == nil || c.OK || c.Mismatched != 1 {
		t.Errorf("correctness %+v, want one mismatch", c)
	}
}

// A workload's TorchTol replaces its Tol against PyTorch's result: an
// element of the attention row's torch output moved to a scaled error of
// about 0.07 from Strata's (past tolBF16, within tolAttentionFormula)
// passes, one moved to about 0.3 fails.
func TestReportTorchTolerance(t *testing.T) {
	for _, tc := range []struct {
		shift float64 // times the output's rms
		ok    bool
	}{{0.08, true}, {0.5, false}} {
		dir, m := prepareSmall(t, "attention")
		fakeTorchSide(t, dir, m)
		pw := m.Workloads[0]
		if pw.TorchTol != tolAttentionFormula || pw.Tol >= 0.07 {
			t.Fatalf("tolerances %g / %g", pw.Tol, pw.TorchTol)
		}
		o := pw.Variants[0].Outputs[0]
		read := func(file string) []float32 {
			a, err := npy.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			vs, err := FromNPY(o.TensorSpec, a)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float32, len(vs))
			for i, v := range vs {
				out[i] = float32(v)
			}
			return out
		}
		got, want := read(o.StrataFile), read(o.TorchFile)
		// The element nearest 0 of Strata's output, moved by shift·rms.
		var sumSq float64
		at := 0
		for i, v := range want {
			sumSq += float64(v) * float64(v)
			if math.Abs(float64(got[i])) < math.Abs(float64(got[at])) {
				at = i
			}
		}
		want[at] = got[at] + float32(tc.shift*math.Sqrt(sumSq/float64(len(want))))
		a, err := npy.FromSlice(o.Shape, want)
		if err != nil {
			t.Fatal(err)
		}
		if err := npy.WriteFile(filepath.Join(dir, o.TorchFile), a); err != nil {
			t.Fatal(err)
		}
		r, err := Report(dir)
		if err != nil {
			t.Fatal(err)
		}
		if c := r.Workloads[0].Correctness; c == nil || c.OK != tc.ok || c.MaxScaled < 2*tolBF16 {
			t.Errorf("shift %g·rms: correctness %+v, want OK %v (scaled error past %g)", tc.shift, c, tc.ok, 2*tolBF16)
		}
	}
}

// A program the engine cannot run is recorded as unsupported, and its inputs
// are still written for PyTorch.
func TestPrepareRecordsUnsupported(t *testing.T) {
	dir := t.TempDir()
	m, err := Prepare(Options{Dir: dir, Engine: failing{}, Size: Small, Only: []string{"rowsum"}})
	if err != nil {
		t.Fatal(err)
	}
	pw := m.Workloads[0]
	if !strings.Contains(pw.Unsupported, "no kernels today") {
		t.Errorf("unsupported = %q", pw.Unsupported)
	}
	if _, err := os.Stat(filepath.Join(dir, pw.Variants[0].Inputs[0].File)); err != nil {
		t.Error(err)
	}
}

type failing struct{ Interp }

func (failing) Compile(*ir.Context, *ir.Operation, string, string) (Program, error) {
	return nil, errors.New("no kernels today")
}

func TestCompare(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name      string
		got, want []float64
		tol       float64
		ok        bool
		mismatch  int64
	}{
		{"equal", []float64{1, 2, 3}, []float64{1, 2, 3}, 1e-6, true, 0},
		{"within", []float64{1, 2, 3.00001}, []float64{1, 2, 3}, 1e-5, true, 0},
		{"over", []float64{1, 2, 3.01}, []float64{1, 2, 3}, 1e-5, false, 1},
		// Near zero the error is measured against the reference's RMS.
		{"near zero", []float64{1e-7, 1}, []float64{0, 1}, 1e-5, true, 0},
		{"nan on one side", []float64{nan, 1}, []float64{0, 1}, 1, false, 1},
		{"nan on both", []float64{nan, 1}, []float64{nan, 1}, 1e-9, true, 0},
		{"all zero ref", []float64{0, 1e-30}, []float64{0, 0}, 1, false, 1},
	}
	for _, c := range cases {
		got, err := Compare(c.got, c.want, c.tol)
		if err != nil {
			t.Fatal(err)
		}
		if got.OK != c.ok || got.Mismatched != c.mismatch {
			t.Errorf("%s: %+v, want ok=%v mismatched=%d", c.name, got, c.ok, c.mismatch)
		}
	}
	if _, err := Compare([]float64{1}, []float64{1, 2}, 1); err == nil {
		t.Error("lengths differ: no error")
	}
	c, _ := Compare([]float64{1.1, 2}, []float64{1, 2}, 1)
	if want := 0.1 / math.Sqrt(5); math.Abs(c.NormRel-want) > 1e-12 || math.Abs(c.MaxAbs-0.1) > 1e-12 {
		t.Errorf("norm_rel %g max_abs %g, want %g 0.1", c.NormRel, c.MaxAbs, want)
	}
}

func TestRoundBF16(t *testing.T) {
	cases := map[float32]float32{
		1:          1,
		1.00390625: 1,        // halfway between 1 and 1+2⁻⁷: ties to even
		1.01171875: 1.015625, // halfway, rounds up to even
		3.14159265: 3.140625, // nearest
		-2.5:       -2.5,     // exact
		65504:      65536,    // rounds up past f16's max
	}
	for in, want := range cases {
		if got := RoundBF16(in); got != want {
			t.Errorf("RoundBF16(%v) = %v, want %v", in, got, want)
		}
	}
	if v := RoundBF16(float32(math.NaN())); v == v {
		t.Error("NaN did not stay NaN")
	}
}

func TestMakeInputIsDeterministic(t *testing.T) {
	spec := TensorSpec{Name: "x", Shape: []int64{1000}, DType: BF16, Std: 2}
	a, b := MakeInput(spec, 3, "k"), MakeInput(spec, 3, "k")
	c := MakeInput(spec, 3, "other")
	same, sum, sq := true, 0.0, 0.0
	for i := range a {
		same = same && a[i] == c[i]
		if a[i] != b[i] || RoundBF16(a[i]) != a[i] {
			t.Fatalf("element %d: %v %v (not reproducible or not bf16)", i, a[i], b[i])
		}
		sum += float64(a[i])
		sq += float64(a[i]) * float64(a[i])
	}
	if same {
		t.Error("different keys give the same data")
	}
	if std := math.Sqrt(sq / 1000); math.Abs(sum/1000) > 0.3 || std < 1.7 || std > 2.3 {
		t.Errorf("mean %g std %g, want about 0 and 2", sum/1000, std)
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{5, 1, 3}
	if Median(xs) != 3 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 {
		t.Error("median wrong")
	}
	if xs[0] != 5 {
		t.Error("median sorted its input")
	}
}

// slowTransfer is an engine whose calls spend transferS of each Run moving
// data, as the GPU engine's uploads and downloads.
type slowTransfer struct{ transferS float64 }

func (e slowTransfer) Name() string    { return "fake" }
func (e slowTransfer) Modes() []string { return []string{"default"} }
func (e slowTransfer) Compile(*ir.Context, *ir.Operation, string, string) (Program, error) {
	return &slowProgram{e.transferS}, nil
}

type slowProgram struct{ transferS float64 }

func (p *slowProgram) Run(args []*npy.Array) ([]*npy.Array, error) {
	time.Sleep(time.Duration(p.transferS * float64(time.Second)))
	return nil, nil
}
func (p *slowProgram) Time([]*npy.Array, int, int) (float64, error) { return 1, nil }
func (p *slowProgram) Phases() map[string]float64                   { return nil }
func (p *slowProgram) Kernels() int                                 { return 1 }
func (p *slowProgram) TransferS() float64                           { return p.transferS }

// TestFirstCallLeavesOutTransfers checks that the first-call time leaves
// out what the engine reports as data movement, and reports it apart.
func TestFirstCallLeavesOutTransfers(t *testing.T) {
	inst, err := Lookup("softmax").Build(Small)
	if err != nil {
		t.Fatal(err)
	}
	const transfer = 0.2
	sm, _, err := runMode(Options{Engine: slowTransfer{transfer}, RepMs: 1}, inst, "default", [][]*npy.Array{nil})
	if err != nil {
		t.Fatal(err)
	}
	if sm.PhasesS["transfer"] < transfer || sm.FirstCallS >= transfer/2 {
		t.Errorf("first call %.3f s with transfer %.3f s: want the %.1f s of transfer left out", sm.FirstCallS, sm.PhasesS["transfer"], transfer)
	}
}

// countedProgram records the counts Time is called with; its calls take
// callMs. estimatedProgram is one with an Estimator's estimate.
type countedProgram struct {
	slowProgram
	callMs float64
	calls  [][2]int
}

func (p *countedProgram) Time(_ []*npy.Array, warmup, iters int) (float64, error) {
	p.calls = append(p.calls, [2]int{warmup, iters})
	return p.callMs, nil
}

type estimatedProgram struct {
	countedProgram
	estimateMs float64
	estimates  []int
}

func (p *estimatedProgram) Estimate(_ []*npy.Array, n int) (float64, error) {
	p.estimates = append(p.estimates, n)
	return p.estimateMs, nil
}

// TestTimeProgramCounts checks do_bench's counts: from an Estimator's
// estimate of a cache clear and a call (five of them), warmupMs and repMs
// worth of calls, rounded down as do_bench's int(); from a median of three
// calls without one; three measured calls for a program too slow for
// repMs.
func TestTimeProgramCounts(t *testing.T) {
	est := &estimatedProgram{countedProgram: countedProgram{callMs: 0.2}, estimateMs: 0.3}
	if _, err := timeProgram(est, nil, 50, 100); err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{166, 333}}; !cmp.Equal(est.calls, want) || !cmp.Equal(est.estimates, []int{5}) {
		t.Errorf("with an estimate of 0.3 ms: estimates %v, Time%v; want [5], Time%v", est.estimates, est.calls, want)
	}
	plain := &countedProgram{callMs: 0.2}
	if _, err := timeProgram(plain, nil, 50, 100); err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{1, 3}, {250, 500}}; !cmp.Equal(plain.calls, want) {
		t.Errorf("without an estimator: Time%v, want %v", plain.calls, want)
	}
	slow := &estimatedProgram{countedProgram: countedProgram{callMs: 40}, estimateMs: 40}
	if ms, err := timeProgram(slow, nil, 50, 100); err != nil || ms != 40 {
		t.Fatalf("slow program: %v ms, %v", ms, err)
	}
	if want := [][2]int{{0, 3}}; !cmp.Equal(slow.calls, want) {
		t.Errorf("a 40 ms program and 100 ms to measure: Time%v, want %v", slow.calls, want)
	}
}
