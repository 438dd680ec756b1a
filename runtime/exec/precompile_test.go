package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/logs"
)

// fakePTXAS writes a ptxas stand-in into a temporary folder: it copies
// the input PTX to the -o file (the fake device's "cubin" is the PTX), or
// fails with a message when fail is set.
func fakePTXAS(t *testing.T, fail bool) string {
	t.Helper()
	script := "#!/bin/sh\n# args: -arch=ARCH -o OUT IN...\nout=$3\nshift 3\ncat \"$@\" > \"$out\"\n"
	if fail {
		script = "#!/bin/sh\necho 'ptxas fatal: no' >&2\nexit 1\n"
	}
	path := filepath.Join(t.TempDir(), "ptxas")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPrecompile: the kernels Precompile compiled load as cubins — no
// driver compile, no tiers — and the program computes what the
// interpreter does.
func TestPrecompile(t *testing.T) {
	p := compileFile(t, "twokernels.mlir")
	if err := p.Precompile("main", fakePTXAS(t, false)); err != nil {
		t.Fatal(err)
	}
	d := newFake()
	rt := newRuntime(d)
	rt.SetLoadPolicy(TieredLoadPolicy)
	args := cases[1].args(t, rand.New(rand.NewPCG(9, 10)))
	got, err := p.Run(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, p, args, got, 1e-6)
	rt.Settle()
	if d.images != 2 || len(d.loadLevels()) != 0 {
		t.Errorf("%d cubin loads and driver compiles at levels %v; want 2 cubins and no compile", d.images, d.loadLevels())
	}
	for _, l := range d.launches {
		if l.level != fakeCubinLevel {
			t.Errorf("%s ran code of level %d, not the precompiled cubin", l.kernel, l.level)
		}
	}
	if err := p.Precompile("nope", "ptxas"); err == nil {
		t.Error("Precompile of a missing function: no error")
	}
}

// TestPrecompileFallsBack: a ptxas that fails, or a cubin the driver
// refuses, leaves the kernels to the driver (in tiers), with the reason
// under STRATA_LOGS=perf_hints.
func TestPrecompileFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failing  bool
		imageErr error
		want     string
	}{
		{"ptxas fails", true, nil, "ptxas fatal: no"},
		{"driver refuses", false, os.ErrInvalid, "refused a cubin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log strings.Builder
			defer logs.SetOutput(logs.SetOutput(&log))
			logs.Enable(TopicPerfHints)
			defer logs.Disable()
			p := compileFile(t, "twokernels.mlir")
			if err := p.Precompile("main", fakePTXAS(t, tc.failing)); err != nil {
				t.Fatal(err)
			}
			d := newFake()
			d.imageErr = tc.imageErr
			rt := newRuntime(d)
			rt.SetLoadPolicy(TieredLoadPolicy)
			args := cases[1].args(t, rand.New(rand.NewPCG(11, 12)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, 1e-6)
			rt.Settle()
			if d.images != 0 || len(d.loadLevels()) != 4 {
				t.Errorf("%d cubin loads, driver compiles at levels %v; want none and two kernels in two tiers", d.images, d.loadLevels())
			}
			if !strings.Contains(log.String(), tc.want) {
				t.Errorf("perf_hints log %q lacks %q", log.String(), tc.want)
			}
		})
	}
}

// TestPrecompileWithPTXAS runs the real ptxas (scripts/setup-tools.sh's,
// through STRATA_PTXAS; testPTXAS) on the testdata programs: ELF cubins come back
// for each kernel's own module.
func TestPrecompileWithPTXAS(t *testing.T) {
	path := testPTXAS
	if path == "" {
		t.Skip("no ptxas (source .cache/tools/env.sh for STRATA_PTXAS)")
	}
	for _, c := range cases {
		p := compileFile(t, c.file)
		if err := p.Precompile("main", path); err != nil {
			t.Fatal(err)
		}
		p.waitPrecompiles()
		n := 0
		for text := range p.pre {
			cubin, ok := p.cubinFor(text)
			if !ok || !bytes.HasPrefix(cubin, []byte("\x7fELF")) {
				t.Errorf("%s: no ELF cubin (%v, %q)", c.file, ok, p.pre[text].err)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: nothing precompiled", c.file)
		}
	}
}

// TestFindPTXAS: STRATA_PTXAS names the ptxas or, "off", turns it off;
// otherwise PATH, then CUDA_HOME's bin.
func TestFindPTXAS(t *testing.T) {
	t.Setenv(PTXASEnv, "off")
	if p, ok := FindPTXAS(); ok {
		t.Errorf("%s=off: found %s", PTXASEnv, p)
	}
	t.Setenv(PTXASEnv, "/opt/x/ptxas")
	if p, ok := FindPTXAS(); !ok || p != "/opt/x/ptxas" {
		t.Errorf("%s set: %q, %v", PTXASEnv, p, ok)
	}
	t.Setenv(PTXASEnv, "")
	fake := fakePTXAS(t, false)
	t.Setenv("PATH", filepath.Dir(fake))
	if p, ok := FindPTXAS(); !ok || p != fake {
		t.Errorf("on PATH: %q, %v; want %s", p, ok, fake)
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "bin"), 0o755)
	os.WriteFile(filepath.Join(home, "bin", "ptxas"), []byte("#!/bin/sh\n"), 0o755)
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CUDA_HOME", home)
	if p, ok := FindPTXAS(); !ok || p != filepath.Join(home, "bin", "ptxas") {
		t.Errorf("under CUDA_HOME: %q, %v", p, ok)
	}
}

// TestLoadPolicyPTXAS: under a policy with PTXAS, a device that is open
// already loads ptxas's cubins for every kernel — no driver compile, no
// tiers, the interpreter's results — and Loads reports each module's
// ptxas time; without a ptxas, or with one that fails, or a cubin the
// driver refuses, the driver compiles in tiers, with the reason under
// STRATA_LOGS=perf_hints.
func TestLoadPolicyPTXAS(t *testing.T) {
	policy := TieredLoadPolicy
	policy.PTXAS = true
	policy.Parallel = 2 // a slot per kernel: no bins (TestLoadPolicyPTXASBins)
	for _, tc := range []struct {
		name     string
		ptxas    string // "": a working stand-in
		imageErr error
		want     string // the perf_hints log's reason; "": ptxas's cubins load
	}{
		{"ptxas", "", nil, ""},
		{"no ptxas", "off", nil, "no ptxas"},
		{"ptxas fails", "fail", nil, "ptxas fatal: no"},
		{"driver refuses", "", os.ErrInvalid, "refused a cubin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch tc.ptxas {
			case "":
				t.Setenv(PTXASEnv, fakePTXAS(t, false))
			case "fail":
				t.Setenv(PTXASEnv, fakePTXAS(t, true))
			default:
				t.Setenv(PTXASEnv, tc.ptxas)
			}
			var log strings.Builder
			defer logs.SetOutput(logs.SetOutput(&log))
			logs.Enable(TopicPerfHints)
			defer logs.Disable()
			p := compileFile(t, "twokernels.mlir")
			d := newFake()
			d.imageErr = tc.imageErr
			rt := newRuntime(d)
			rt.SetLoadPolicy(policy)
			args := cases[1].args(t, rand.New(rand.NewPCG(13, 14)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, 1e-6)
			rt.Settle()
			if tc.want != "" {
				if d.images != 0 || len(d.loadLevels()) != 4 {
					t.Errorf("%d cubin loads, driver compiles at levels %v; want none and two kernels in two tiers", d.images, d.loadLevels())
				}
				if !strings.Contains(log.String(), tc.want) {
					t.Errorf("perf_hints log %q lacks %q", log.String(), tc.want)
				}
				return
			}
			if d.images != 2 || len(d.loadLevels()) != 0 {
				t.Errorf("%d cubin loads and driver compiles at levels %v; want 2 cubins and no compile", d.images, d.loadLevels())
			}
			for _, l := range d.launches {
				if l.level != fakeCubinLevel {
					t.Errorf("%s ran code of level %d, not ptxas's cubin", l.kernel, l.level)
				}
			}
			loads, err := p.Loads(rt, "main")
			if err != nil || len(loads) != 1 || len(loads[0].Each) != 2 {
				t.Fatalf("Loads = %+v, %v; want one module of 2 parts", loads, err)
			}
			for _, e := range loads[0].Each {
				if e.Wall <= 0 || e.At.IsZero() || e.Bytes == 0 {
					t.Errorf("part load %+v: want ptxas's wall time, start and size", e)
				}
			}
		})
	}
}

// TestLoadPolicyPTXASBins: with fewer slots than kernels, the kernels
// ptxas compiles share one process and one cubin load (ptxasBins), and
// run as before; a bin ptxas fails on compiles one kernel at a time, with
// the reason under STRATA_LOGS=perf_hints.
func TestLoadPolicyPTXASBins(t *testing.T) {
	policy := DefaultLoadPolicy
	policy.PTXAS = true
	policy.Parallel = 1
	for _, tc := range []struct {
		name   string
		script string // "": a working stand-in
		images int
		want   string // in the perf_hints log
	}{
		{"bin", "", 1, ""},
		{"bin fails", "#!/bin/sh\nif [ $# -gt 4 ]; then echo 'ptxas fatal: too many' >&2; exit 1; fi\nout=$3\nshift 3\ncat \"$@\" > \"$out\"\n", 2, "each compiles alone"},
		// A ptxas that compiles only its last input: the bin's cubin
		// lacks a kernel, and each compiles alone.
		{"bin lacks a kernel", "#!/bin/sh\nout=$3\nshift $(($# - 1))\ncat \"$1\" > \"$out\"\n", 3, "lacks one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fakePTXAS(t, false)
			if tc.script != "" {
				if err := os.WriteFile(path, []byte(tc.script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv(PTXASEnv, path)
			var log strings.Builder
			defer logs.SetOutput(logs.SetOutput(&log))
			logs.Enable(TopicPerfHints)
			defer logs.Disable()
			p := compileFile(t, "twokernels.mlir")
			d := newFake()
			rt := newRuntime(d)
			rt.SetLoadPolicy(policy)
			args := cases[1].args(t, rand.New(rand.NewPCG(15, 16)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, 1e-6)
			rt.Settle()
			if d.images != tc.images || len(d.loadLevels()) != 0 {
				t.Errorf("%d cubin loads and driver compiles at levels %v; want %d cubins and no compile", d.images, d.loadLevels(), tc.images)
			}
			if !strings.Contains(log.String(), tc.want) {
				t.Errorf("perf_hints log %q lacks %q", log.String(), tc.want)
			}
			loads, err := p.Loads(rt, "main")
			if err != nil || len(loads) != 1 || len(loads[0].Each) != 2 {
				t.Fatalf("Loads = %+v, %v; want one module of 2 parts", loads, err)
			}
			for _, e := range loads[0].Each {
				if e.Wall <= 0 || e.At.IsZero() || e.Bytes == 0 {
					t.Errorf("part load %+v: want ptxas's wall time, start and size", e)
				}
			}
			if err := rt.Close(); err != nil {
				t.Errorf("Close (the shared module unloads once): %v", err)
			}
		})
	}
}

// TestPTXASBins checks how ptxasBins shares processes: texts of one
// architecture each, at most n bins of at least two texts balanced by
// size, and alone the wgmma and setmaxnreg texts, those of several
// kernels and those not eligible.
func TestPTXASBins(t *testing.T) {
	text := func(arch string, size int, extra string) string {
		s := ".version 8.0\n.target " + arch + "\n.address_size 64\n.visible .entry k(\n)\n{\n" + extra
		return s + strings.Repeat(" ", max(size-len(s)-2, 0)) + "}\n"
	}
	todo := []string{
		text("sm_90", 900, ""), text("sm_90", 800, ""), text("sm_90", 500, ""), text("sm_90", 400, ""),
		text("sm_90", 300, ""), text("sm_90", 100, ""), text("sm_90a", 700, ""), text("sm_90a", 200, ""),
		text("sm_90", 5000, "wgmma.mma_async"), text("sm_90a", 4000, "setmaxnreg"),
		text("sm_90", 600, ".visible .entry k2(\n)\n{\n}\n"), text("sm_90", 650, "// cached"),
	}
	eligible := func(text string) bool { return !strings.Contains(text, "// cached") }
	// 3900 bytes to bin in 2: no text is half a bin's share.
	bins, in := ptxasBins(todo, 2, eligible)
	if len(bins) == 0 || len(bins) > 2 {
		t.Fatalf("%d bins, want 1 or 2: %+v", len(bins), bins)
	}
	seen := map[int]bool{}
	for _, b := range bins {
		if len(b.texts) < 2 {
			t.Errorf("bin %+v of fewer than two texts", b)
		}
		size := 0
		for _, i := range b.texts {
			if seen[i] || !in[i] {
				t.Errorf("text %d in two bins, or not reported in one", i)
			}
			seen[i] = true
			size += len(todo[i])
			if ptxTargetRE.FindStringSubmatch(todo[i])[1] != ptxTargetRE.FindStringSubmatch(todo[b.texts[0]])[1] {
				t.Errorf("bin %v mixes architectures", b.texts)
			}
		}
		if size != b.size {
			t.Errorf("bin %v: size %d, want %d", b.texts, b.size, size)
		}
	}
	for _, i := range []int{8, 9, 10, 11} {
		if in[i] {
			t.Errorf("text %d binned: want it alone (wgmma, setmaxnreg, two kernels, not eligible)", i)
		}
	}
	if len(in) != len(seen) || len(in) < 6 {
		t.Errorf("%d texts binned, want the 6 to 8 plain ones: %v", len(in), in)
	}
	if bins, in := ptxasBins(todo[:3], 4, eligible); bins != nil || in != nil {
		t.Errorf("as many slots as texts: bins %+v, want none", bins)
	}
	// A text of at least half a bin's share of the bytes is compiled
	// alone, and the others share the remaining bins; when the long texts
	// fill every bin, the others share one more.
	for _, c := range []struct {
		sizes []int
		n     int
		alone []int // the indices of the long texts
		bins  int
	}{
		{[]int{5000, 400, 300, 300, 200, 200, 100}, 3, []int{0}, 2},
		{[]int{1000, 1000, 1000, 100, 100}, 2, []int{0, 1, 2}, 1},
		{[]int{900, 800, 700, 600}, 2, []int{0, 1}, 1},
		{[]int{500, 500, 500, 500, 500, 500}, 2, nil, 2},
	} {
		var todo []string
		for _, size := range c.sizes {
			todo = append(todo, text("sm_90", size, ""))
		}
		bins, in := ptxasBins(todo, c.n, eligible)
		if len(bins) != c.bins {
			t.Errorf("sizes %v in %d: %d bins %+v, want %d", c.sizes, c.n, len(bins), bins, c.bins)
		}
		for i := range todo {
			if long := slices.Contains(c.alone, i); in[i] == long {
				t.Errorf("sizes %v in %d: text %d (%d bytes) binned %v, want %v", c.sizes, c.n, i, c.sizes[i], in[i], !long)
			}
		}
	}
}

// TestLoadJobs checks the order of a load batch's jobs: the longest
// first, a text alone counting twice its bytes beside ptxas's bins (so
// that a long kernel compiled alone starts before bins of more bytes of
// small ones), and its own bytes when nothing is binned.
func TestLoadJobs(t *testing.T) {
	todo := []string{strings.Repeat("a", 100), strings.Repeat("b", 100), strings.Repeat("c", 120), strings.Repeat("d", 150), strings.Repeat("e", 40)}
	bins := []loadJob{{texts: []int{0, 1}, size: 200}}
	binned := map[int]bool{0: true, 1: true}
	var got []string
	for _, j := range loadJobs(todo, bins, binned) {
		got = append(got, fmt.Sprint(j.texts, j.size))
	}
	if want := "[3] 300, [2] 240, [0 1] 200, [4] 80"; strings.Join(got, ", ") != want {
		t.Errorf("jobs %s, want %s", strings.Join(got, ", "), want)
	}
	got = got[:0]
	for _, j := range loadJobs(todo, nil, nil) {
		got = append(got, fmt.Sprint(j.texts, j.size))
	}
	if want := "[3] 150, [2] 120, [0] 100, [1] 100, [4] 40"; strings.Join(got, ", ") != want {
		t.Errorf("jobs without bins %s, want %s", strings.Join(got, ", "), want)
	}
}
