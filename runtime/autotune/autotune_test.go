package autotune

import (
	"bytes"
	"embed"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/runtime/interp"
)

// testdata is embedded so that the test binary runs anywhere (the GPU
// tests run on the device machine from another directory).
//
//go:embed testdata
var testdata embed.FS

// compiler parses a loop-level testdata program.
func compiler(t *testing.T, name string) *Compiler {
	t.Helper()
	src, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, string(src), ir.ParseOptions{Filename: name})
	if err != nil {
		t.Fatal(err)
	}
	return &Compiler{Ctx: ctx, Loop: m}
}

// TestCandidates checks which parameters vary for the kernels of real
// compiles: the softmax rows of static length 64 get a warp per row, so
// rows per block varies; pointwise kernels vary block, vector and grid.
func TestCandidates(t *testing.T) {
	for _, tc := range []struct {
		file    string
		mapping string
		vary    func(c togpu.Config) bool // some candidate differs so
		fixed   func(c togpu.Config) bool // every candidate satisfies
	}{
		{"elementwise.mlir", togpu.MappingPointwise,
			func(c togpu.Config) bool { return c.Vector == 1 && c.MaxBlocks != togpu.DefaultConfig.MaxBlocks },
			func(c togpu.Config) bool { return c.RowsPerBlock == 0 }},
		{"softmax.mlir", togpu.MappingRow,
			func(c togpu.Config) bool { return c.Block == 1024 },
			func(c togpu.Config) bool {
				return c.Vector == togpu.DefaultConfig.Vector && c.MaxBlocks == togpu.DefaultConfig.MaxBlocks
			}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, err := compiler(t, tc.file).Compile(togpu.DefaultConfig)
			if err != nil {
				t.Fatal(err)
			}
			ks := Kernels(p.Module())
			if len(ks) == 0 || ks[0].Mapping != tc.mapping {
				t.Fatalf("kernels %+v, want a %s kernel", ks, tc.mapping)
			}
			cands := Candidates(ks)
			if cands[0] != togpu.DefaultConfig {
				t.Errorf("first candidate %+v is not the default", cands[0])
			}
			for i, c := range cands {
				if slices.Contains(cands[:i], c) {
					t.Errorf("duplicate candidate %+v", c)
				}
				if !tc.fixed(c) {
					t.Errorf("candidate %s varies a parameter no kernel uses", ConfigString(c))
				}
			}
			if !slices.ContainsFunc(cands, tc.vary) {
				t.Errorf("no candidate varies what the kernels use: %v", cands)
			}
		})
	}
	mma := Candidates([]Kernel{{Mapping: togpu.MappingMMA, Block: 256}})
	if len(mma) != len(togpu.MMATiles) || mma[0] != togpu.DefaultConfig || mma[1].MMATile != togpu.MMATiles[1] {
		t.Errorf("mma kernels: candidates %v, want the default and every other tiling", mma)
	}
	rolled := Candidates([]Kernel{{Mapping: togpu.MappingPointwise, Block: 256, NoUnroll: true}})
	if len(rolled) < 2 || !rolled[1].UnrollInner || slices.ContainsFunc(rolled[2:], func(c togpu.Config) bool { return c.UnrollInner }) {
		t.Errorf("rolled inner loops: the unrolled default must come second, once: %v", rolled)
	}
	if slices.ContainsFunc(Candidates([]Kernel{{Mapping: togpu.MappingPointwise, Block: 256}}), func(c togpu.Config) bool { return c.UnrollInner }) {
		t.Error("no rolled loop, yet an unroll-inner candidate")
	}
	short := Candidates([]Kernel{{Mapping: togpu.MappingRow, RowsPerBlock: 4}})
	if !slices.ContainsFunc(short, func(c togpu.Config) bool { return c.RowsPerBlock == 8 }) || len(short) != 10 {
		t.Errorf("short rows: %d candidates %v, want rows per block 0, 1, 2, 4, 8 with 64- and 32-bit indices", len(short), short)
	}
}

func TestConfigRoundTrip(t *testing.T) {
	c := togpu.DefaultConfig
	c.Block, c.Vector, c.RowsPerBlock, c.MaxBlocks = 512, 1, 8, 2048
	for _, tile := range togpu.MMATiles {
		for _, unroll := range []bool{false, true} {
			c.MMATile, c.UnrollInner = tile, unroll
			got, err := ParseConfig(ConfigString(c))
			if err != nil || got != c {
				t.Errorf("round trip of %+v: %+v, %v", c, got, err)
			}
		}
	}
	for _, bad := range []string{"block=1", "block=1 vector=1 rows-per-block=0 max-blocks=1 mma-tile=1x1x1s1", "block=x vector=1 rows-per-block=0 max-blocks=1", "warp=2 block=1 vector=1 rows-per-block=0 max-blocks=1"} {
		if _, err := ParseConfig(bad); err == nil {
			t.Errorf("ParseConfig(%q) accepted", bad)
		}
	}
}

func TestDB(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Device: "NVIDIA H200", Source: "abc", Shapes: "f32[64,1024]"}
	if _, ok := db.Lookup(k); ok {
		t.Fatal("empty database has a decision")
	}
	first := Decision{Config: togpu.DefaultConfig, MS: 0.5, DefaultMS: 0.5, Tried: 1}
	cfg := togpu.DefaultConfig
	cfg.Block, cfg.Vector, cfg.MaxBlocks = 128, 1, 2048
	second := Decision{Config: cfg, MS: 0.25, DefaultMS: 0.5, Tried: 9}
	if err := db.Store(k, first); err != nil {
		t.Fatal(err)
	}
	if err := db.Store(k, second); err != nil {
		t.Fatal(err)
	}
	other := Key{Device: "NVIDIA H200", Source: "abc", Shapes: "f32[64,2048]"}
	if err := db.Store(other, first); err != nil {
		t.Fatal(err)
	}
	// A torn last line is skipped.
	f, _ := os.OpenFile(db.Path(), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("NVIDIA H200\tabc\tf32[1]\tblock=")
	f.Close()
	re, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := re.Lookup(k); !ok || d != second {
		t.Errorf("reloaded %+v %v, want the last decision %+v", d, ok, second)
	}
	if d, ok := re.Lookup(other); !ok || d != first {
		t.Errorf("reloaded other %+v %v", d, ok)
	}
	if len(re.entries) != 2 {
		t.Errorf("%d entries, want 2", len(re.entries))
	}
	if err := db.Store(Key{Device: "a\tb"}, first); err == nil {
		t.Error("a key with a tab was stored")
	}
	os.WriteFile(filepath.Join(dir, DBFile), []byte("# another format\nx\n"), 0o644)
	if re, err := OpenDB(dir); err != nil || len(re.entries) != 0 {
		t.Errorf("a file of another format: %v, %d entries", err, len(re.entries))
	}
}

func TestSearch(t *testing.T) {
	cands := Candidates([]Kernel{{Mapping: togpu.MappingPointwise, Vector: 4}})
	times := map[togpu.Config]float64{}
	for i, c := range cands {
		times[c] = float64(100 - i%7)
	}
	fail := cands[3]
	measure := func(c togpu.Config) (float64, error) {
		if c == fail {
			return 0, errors.New("too many resources requested for launch")
		}
		return times[c], nil
	}
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(Topic)
	defer logs.Disable()
	d, err := Search("@main", cands, measure, Options{Budget: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if d.MS != 94 || d.DefaultMS != 100 || d.Tried != len(cands) || times[d.Config] != 94 {
		t.Errorf("decision %+v", d)
	}
	out := buf.String()
	if n := strings.Count(out, "autotune: @main: block="); n != len(cands) {
		t.Errorf("%d candidate lines for %d candidates:\n%s", n, len(cands), out)
	}
	if !strings.Contains(out, "failed: too many resources") || !strings.Contains(out, "picked") {
		t.Errorf("log:\n%s", out)
	}

	// A spent budget stops after the baseline.
	slow := func(c togpu.Config) (float64, error) { time.Sleep(2 * time.Millisecond); return 1, nil }
	if d, err := Search("@main", cands, slow, Options{Budget: time.Millisecond}); err != nil || d.Tried != 1 || d.Config != togpu.DefaultConfig {
		t.Errorf("budget: %+v, %v", d, err)
	}
	none := func(togpu.Config) (float64, error) { return 0, errors.New("boom") }
	if _, err := Search("@main", cands[:2], none, Options{}); err == nil || !strings.Contains(err.Error(), "every candidate failed") {
		t.Errorf("all failing: %v", err)
	}
	// The progress bar writes to its writer.
	var bar bytes.Buffer
	if _, err := Search("@main", cands[:3], measure, Options{Progress: &bar}); err != nil || !strings.Contains(bar.String(), "autotune @main") {
		t.Errorf("progress: %v %q", err, bar.String())
	}
}

// TestSearchFinalRound checks the final round: the candidates within
// FinalMargin of the fastest (FinalCandidates at most) are timed again
// with the sustained measure, twice each, and the fastest there is
// picked (its search time reported); one that fails there is out; with
// a single finalist there is no final round.
func TestSearchFinalRound(t *testing.T) {
	cands := Candidates([]Kernel{{Mapping: togpu.MappingPointwise, Vector: 4}})[:6]
	short := map[togpu.Config]float64{cands[0]: 100, cands[1]: 101, cands[2]: 102.5, cands[3]: 110, cands[4]: 102.9, cands[5]: 130}
	long := map[togpu.Config]float64{cands[0]: 120, cands[1]: 112, cands[2]: 111, cands[4]: 90}
	measure := func(c togpu.Config) (float64, error) { return short[c], nil }
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(Topic)
	defer logs.Disable()
	calls := map[togpu.Config]int{}
	sustained := func(c togpu.Config) (float64, error) {
		calls[c]++
		if c == cands[2] && calls[c] == 2 {
			return 0, errors.New("launch failed")
		}
		return long[c], nil
	}
	d, err := Search("@main", cands, measure, Options{Budget: time.Hour, Sustained: sustained})
	if err != nil {
		t.Fatal(err)
	}
	// Finalists: 100, 101, 102.5 (102.9 is the fourth within the margin).
	if d.Config != cands[1] || d.MS != 101 || d.DefaultMS != 100 {
		t.Errorf("decision %+v, want candidate 1 (sustained 112; candidate 2 failed its second round)", d)
	}
	if calls[cands[0]] != 2 || calls[cands[1]] != 2 || calls[cands[2]] != 2 || calls[cands[3]]+calls[cands[4]]+calls[cands[5]] != 0 {
		t.Errorf("sustained calls %v, want 2 each for the three finalists", calls)
	}
	if n := strings.Count(buf.String(), "final round"); n != 6 {
		t.Errorf("%d final-round lines, want 6:\n%s", n, buf.String())
	}
	// One finalist: no final round.
	buf.Reset()
	clear(calls)
	if d, err := Search("@main", []togpu.Config{cands[0], cands[3]}, measure, Options{Sustained: sustained}); err != nil || d.Config != cands[0] || len(calls) != 0 {
		t.Errorf("one finalist: %+v, %v, sustained calls %v", d, err, calls)
	}
}

// TestGPUTune tunes the softmax on a GPU, checks the result against the
// interpreter and that a second Tune is served by the database.
func TestGPUTune(t *testing.T) {
	rt := openRuntime(t)
	db, err := OpenDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := compiler(t, "softmax.mlir")
	rng := rand.New(rand.NewPCG(1, 2))
	x, _ := interp.NewBuffer(ir.F32, []int64{256, 64})
	data := x.Data().([]float32)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	args := []interp.Value{x}
	key := Key{Device: rt.Device().Name(), Source: "softmax", Shapes: ShapesOf(args)}
	res, err := Tune(rt, db, key, "main", args, c.Compile, Options{Budget: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("picked %s: %.4f ms (default %.4f ms, %d tried)", ConfigString(res.Config), res.MS, res.DefaultMS, res.Tried)
	if res.MS > res.DefaultMS || res.Tried < 2 {
		t.Errorf("decision %+v", res.Decision)
	}
	got, err := res.Program.Run(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	want, err := interp.New(c.Loop).Call("main", args...)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := got[0].(*interp.Buffer).Tensor()
	w, _ := want[0].(*interp.Buffer).Tensor()
	gd, wd := g.Data().([]float32), w.Data().([]float32)
	for i := range wd {
		if d := gd[i] - wd[i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("element %d: %v, interpreter %v", i, gd[i], wd[i])
		}
	}
	again, err := Tune(rt, db, key, "main", args, c.Compile, Options{})
	if err != nil || !again.Cached || again.Config != res.Config {
		t.Errorf("second Tune: cached %v %+v, %v", again.Cached, again.Decision, err)
	}
}

// openRuntime opens the first GPU for a device test (skipping it without
// one) and closes it when the test ends.
func openRuntime(t *testing.T) *exec.Runtime {
	t.Helper()
	rt, err := exec.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt
}
