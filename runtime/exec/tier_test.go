package exec

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// levels returns the JIT levels (plus one) of the fake device's loads.
func (d *fakeDevice) loadLevels() []int {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	return append([]int(nil), d.levels...)
}

// TestTieredLoad runs a program of two kernels under the default policy:
// both are compiled first at JIT level 0 and the program runs that code;
// a gate holds the final compiles back, and once they are through the
// same Bound launches the final tier's code, with the interpreter's
// results both times.
func TestTieredLoad(t *testing.T) {
	p := compileFile(t, "twokernels.mlir")
	d := newFake()
	gate := make(chan struct{})
	d.levelHook = func(level int) error {
		if level != DefaultTier {
			<-gate // the final tier waits for the test
		}
		return nil
	}
	rt := newRuntime(d)
	rt.SetLoadPolicy(TieredLoadPolicy)
	args := cases[1].args(t, rand.New(rand.NewPCG(1, 2)))
	b, err := p.Prepare(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	run := func(wantLevel int) {
		t.Helper()
		before := len(d.launches)
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
		got, err := b.Results()
		if err != nil {
			t.Fatal(err)
		}
		compare(t, p, args, got, 1e-6)
		for _, l := range d.launches[before:] {
			if l.level != wantLevel {
				t.Errorf("%s launched the code of JIT level %d, want %d", l.kernel, l.level-1, wantLevel-1)
			}
		}
	}
	run(DefaultTier)
	if got := d.loadLevels(); len(got) != 2 || got[0] != DefaultTier || got[1] != DefaultTier {
		t.Fatalf("loads before the gate opens at levels %v, want two at %d", got, DefaultTier)
	}
	close(gate)
	b.settle()
	run(0) // the driver's default level
	if got := d.loadLevels(); len(got) != 4 || got[2] != 0 || got[3] != 0 {
		t.Errorf("loads at levels %v, want the first tier twice then the final twice", got)
	}
	if err := rt.Settle(); err != nil {
		t.Errorf("Settle: %v", err)
	}
	if loads, err := p.Loads(rt, "main"); err != nil || len(loads) != 1 || loads[0].Parts != 2 {
		t.Errorf("Loads = %+v, %v; want module k in 2 parts", loads, err)
	}
	if err := rt.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestTieredLoadSkipped: no tiering where the final code is at hand or
// could not come quickly — the link cache holds the text, the driver has
// no linker, the policy turns tiers off or asks for the final level
// first.
func TestTieredLoadSkipped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy LoadPolicy
		setup  func(d *fakeDevice, rt *Runtime)
	}{
		{"cached", TieredLoadPolicy, func(d *fakeDevice, rt *Runtime) {
			rt.linkCache = cuda.NewLinkCache(t.TempDir())
			d.cache = map[string]bool{}
			p := compileFile(t, "twokernels.mlir")
			for _, pc := range p.texts("k").byKernel {
				d.cache[pc.text] = true
			}
		}},
		{"no linker", TieredLoadPolicy, func(d *fakeDevice, _ *Runtime) { d.noLinker = true }},
		{"tier=off", linkOnce, nil},
		{"tier at the final level", LoadPolicy{Split: true, Link: true, OptLevel: 2, Tier: 2}, nil},
		{"tier at the driver's default", LoadPolicy{Split: true, Link: true, Tier: 5}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newFake()
			rt := newRuntime(d)
			rt.SetLoadPolicy(tc.policy)
			if tc.setup != nil {
				tc.setup(d, rt)
			}
			p := compileFile(t, "twokernels.mlir")
			args := cases[1].args(t, rand.New(rand.NewPCG(3, 4)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, 1e-6)
			rt.Settle()
			if levels := d.loadLevels(); len(levels) != 2 || levels[0] != tc.policy.OptLevel || levels[1] != tc.policy.OptLevel {
				t.Errorf("loads at levels %v, want two at %d", levels, tc.policy.OptLevel)
			}
		})
	}
}

// TestTieredUpgradeFails: a final compile that fails leaves the first
// tier running; Settle reports it, and so does STRATA_LOGS=perf_hints.
func TestTieredUpgradeFails(t *testing.T) {
	var log strings.Builder
	defer logs.SetOutput(logs.SetOutput(&log))
	logs.Enable(TopicPerfHints)
	defer logs.Disable()
	d := newFake()
	d.levelHook = func(level int) error {
		if level != DefaultTier {
			return errors.New("out of registers")
		}
		return nil
	}
	rt := newRuntime(d)
	rt.SetLoadPolicy(TieredLoadPolicy)
	p := compileFile(t, "twokernels.mlir")
	if err := p.Load(rt, "main"); err != nil {
		t.Fatal(err)
	}
	err := rt.Settle()
	if err == nil || !strings.Contains(err.Error(), "out of registers") || !strings.Contains(err.Error(), "first-tier") {
		t.Fatalf("Settle = %v, want the failed upgrade", err)
	}
	if !strings.Contains(log.String(), "out of registers") {
		t.Errorf("perf_hints log %q does not name the failure", log.String())
	}
	args := cases[1].args(t, rand.New(rand.NewPCG(5, 6)))
	got, err := p.Run(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, p, args, got, 1e-6)
	for _, l := range d.launches {
		if l.level != DefaultTier {
			t.Errorf("%s ran the code of level %d, want the first tier's", l.kernel, l.level-1)
		}
	}
}

// TestTieredKernelMissingInFinal: a final module that lacks a kernel the
// first had (it cannot happen with the same text, but the swap must not
// half happen) keeps every kernel on the first tier.
func TestTieredKernelMissingInFinal(t *testing.T) {
	d := newFake()
	first := fakeModule{d, "vadd add.rn.f32 .entry", DefaultTier}
	tm := newTieredModule(first)
	k, err := tm.function(sharedKernelName)
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.upgrade(fakeModule{d, "nothing here .entry", 0}); err == nil {
		t.Fatal("upgrade to a module without the kernel: no error")
	}
	if got := resolve(k).(fakeKernel).level; got != DefaultTier || tm.upgraded() {
		t.Errorf("after a failed swap the kernel runs level %d (upgraded %v), want the first tier", got-1, tm.upgraded())
	}
	if err := tm.upgrade(fakeModule{d, "vadd add.rn.f32 .entry", 0}); err != nil {
		t.Fatal(err)
	}
	if got := resolve(k).(fakeKernel).level; got != 0 || !tm.upgraded() {
		t.Errorf("after the swap the kernel runs level %d, want the final", got-1)
	}
	tm.finish(nil)
	if err := tm.unload(); err != nil {
		t.Error(err)
	}
}

// TestUntieredLoads: RunTimed (max-autotune's candidates), LoadFinal and
// a Runner with CUDA graphs compile at the final level only.
func TestUntieredLoads(t *testing.T) {
	args := cases[1].args(t, rand.New(rand.NewPCG(7, 8)))
	for name, load := range map[string]func(p *Program, rt *Runtime) error{
		"RunTimed": func(p *Program, rt *Runtime) error {
			_, err := p.RunTimed(rt, "main", args, 1, 1) // the fake cannot time: only the loads matter
			if err == nil || !strings.Contains(err.Error(), "CUDA device") {
				return err
			}
			return nil
		},
		"LoadFinal": func(p *Program, rt *Runtime) error { return p.LoadFinal(rt, "main") },
		"Runner with graphs": func(p *Program, rt *Runtime) error {
			_, err := NewRunner(p, rt, "main", true).Run(args)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := newFake()
			rt := newRuntime(d)
			rt.SetLoadPolicy(TieredLoadPolicy)
			if err := load(compileFile(t, "twokernels.mlir"), rt); err != nil {
				t.Fatal(err)
			}
			rt.Settle()
			if levels := d.loadLevels(); len(levels) != 2 || levels[0] != 0 || levels[1] != 0 {
				t.Errorf("loads at levels %v, want two at the final level", levels)
			}
		})
	}
}

// TestWGMMALoadsFinalAtOnce checks that under the tiered default policy a
// text with wgmma instructions is compiled once, at the final level,
// while a text without them gets the quick first tier and an upgrade.
func TestWGMMALoadsFinalAtOnce(t *testing.T) {
	const head = ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
	wgmma := head + ".visible .entry gemm()\n{\n\twgmma.fence.sync.aligned;\n\twgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 1;\n\tret;\n}\n"
	plain := head + ".visible .entry vadd()\n{\n\tret;\n}\n"
	d := newFake()
	rt := newRuntime(d)
	rt.SetLoadPolicy(TieredLoadPolicy)
	if failed := rt.loadAll([]string{wgmma, plain}, TieredLoadPolicy, func(string) ([]byte, bool) { return nil, false }); len(failed) != 0 {
		t.Fatal(failed)
	}
	if err := rt.Settle(); err != nil {
		t.Fatal(err)
	}
	byText := map[string][]int{}
	d.loadMu.Lock()
	for i, text := range d.texts {
		byText[text] = append(byText[text], d.levels[i])
	}
	d.loadMu.Unlock()
	if got := byText[wgmma]; len(got) != 1 || got[0] != 0 {
		t.Errorf("the wgmma kernel loaded at levels %v, want once at the final level", got)
	}
	if got := byText[plain]; len(got) != 2 || got[0] != DefaultTier || got[1] != 0 {
		t.Errorf("the plain kernel loaded at levels %v, want the first tier, then the final level", got)
	}
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
}

// TestSetMaxNRegLoadsWhole checks that a text with setmaxnreg is compiled
// by the module-load JIT (whole: wholeProgram) under the default policy,
// where the linker compiles a text without it.
func TestSetMaxNRegLoadsWhole(t *testing.T) {
	const head = ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
	ws := head + ".visible .entry gemm()\n{\n\tsetmaxnreg.inc.sync.aligned.u32 232;\n\twgmma.fence.sync.aligned;\n\tret;\n}\n"
	plain := head + ".visible .entry vadd()\n{\n\tret;\n}\n"
	d := newFake()
	rt := newRuntime(d)
	rt.SetLoadPolicy(TieredLoadPolicy)
	if failed := rt.loadAll([]string{ws, plain}, TieredLoadPolicy, func(string) ([]byte, bool) { return nil, false }); len(failed) != 0 {
		t.Fatal(failed)
	}
	if err := rt.Settle(); err != nil {
		t.Fatal(err)
	}
	d.loadMu.Lock()
	linkedWS, linkedPlain := slices.Contains(d.links, ws), slices.Contains(d.links, plain)
	loadedWS := slices.Contains(d.texts, ws)
	d.loadMu.Unlock()
	if !loadedWS || linkedWS || !linkedPlain {
		t.Errorf("setmaxnreg text loaded %v, through the linker %v; plain text through the linker %v: want true, false, true", loadedWS, linkedWS, linkedPlain)
	}
	if err := rt.Close(); err != nil {
		t.Error(err)
	}
}

// TestLongestTextsLoadFirst checks that a batch of texts starts its loads
// longest first, so that the slowest compile does not wait behind short
// ones.
func TestLongestTextsLoadFirst(t *testing.T) {
	const head = ".version 7.8\n.target sm_90\n.address_size 64\n\n"
	text := func(name string, lines int) string {
		return head + ".visible .entry " + name + "()\n{\n" + strings.Repeat("\tmov.u32 %r1, 0;\n", lines) + "\tret;\n}\n"
	}
	texts := []string{text("short", 1), text("long", 50), text("middle", 10)}
	d := newFake()
	rt := newRuntime(d)
	policy := LoadPolicy{Split: true, Parallel: 1}
	if failed := rt.loadAll(texts, policy, func(string) ([]byte, bool) { return nil, false }); len(failed) != 0 {
		t.Fatal(failed)
	}
	d.loadMu.Lock()
	got := slices.Clone(d.texts)
	d.loadMu.Unlock()
	if want := []string{texts[1], texts[2], texts[0]}; !slices.Equal(got, want) {
		t.Errorf("loads in the order of sizes %v, want longest first", func() (n []int) {
			for _, g := range got {
				n = append(n, len(g))
			}
			return n
		}())
	}
}
