package exec

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/cuda"
)

// TestLoads checks that Loads lists the modules of a host function once
// each, only after they are loaded, and that a second program with the
// same PTX text sees the first one's load.
func TestLoads(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	rt := newRuntime(newFake())
	got, err := p.Loads(rt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("before loading: Loads = %+v, want none", got)
	}
	if err := p.Load(rt, "main"); err != nil {
		t.Fatal(err)
	}
	got, err = p.Loads(rt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Module != "k" {
		t.Fatalf("after Load: Loads = %+v, want module k once", got)
	}
	q := compileFile(t, "vadd.mlir")
	if got, err := q.Loads(rt, "main"); err != nil || len(got) != 1 {
		t.Errorf("same PTX, other program: Loads = %+v, %v; want the loaded module", got, err)
	}
	if _, err := p.Loads(rt, "nope"); err == nil {
		t.Error("Loads of a missing host function: no error")
	}
}

// TestLoadPolicies loads a gpu.module of two kernels whole and split, in
// one thread and in several: split loads one module per kernel, each
// holding that kernel only; whole loads one; every policy runs the program
// to the interpreter's results, and Loads reports the gpu.module once with
// the number of driver modules it took.
func TestLoadPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy LoadPolicy
		loads  int
	}{
		{LoadPolicy{}, 1},
		{LoadPolicy{Parallel: 1}, 1},
		{LoadPolicy{Split: true, Parallel: 1}, 2},
		{LoadPolicy{Split: true, Parallel: 4}, 2},
		{LoadPolicy{Split: true}, 2},
		{LoadPolicy{Split: true, Link: true}, 2},
	} {
		t.Run(fmt.Sprintf("%+v", tc.policy), func(t *testing.T) {
			p := compileFile(t, "twokernels.mlir")
			d := newFake()
			rt := newRuntime(d)
			rt.SetLoadPolicy(tc.policy)
			if err := p.Load(rt, "main"); err != nil {
				t.Fatal(err)
			}
			if d.loads != tc.loads {
				t.Fatalf("%d loads, want %d", d.loads, tc.loads)
			}
			if want := map[bool]int{true: tc.loads}[tc.policy.Link]; d.linked != want {
				t.Errorf("%d loads asked for the linker, want %d", d.linked, want)
			}
			for _, text := range d.texts {
				if n := strings.Count(text, ".entry"); n != 3-tc.loads {
					t.Errorf("a loaded text holds %d kernels, want %d:\n%s", n, 3-tc.loads, text)
				}
				if !strings.Contains(text, ".version") || !strings.Contains(text, ".target") {
					t.Errorf("a loaded text lacks the header:\n%s", text)
				}
			}
			loads, err := p.Loads(rt, "main")
			if err != nil || len(loads) != 1 || loads[0].Module != "k" || loads[0].Parts != tc.loads {
				t.Errorf("Loads = %+v, %v; want module k in %d parts", loads, err, tc.loads)
			}
			args := cases[1].args(t, rand.New(rand.NewPCG(3, 4)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, 1e-6)
			// Loaded already: a second program with the same PTX loads nothing.
			if err := compileFile(t, "twokernels.mlir").Load(rt, "main"); err != nil || d.loads != tc.loads {
				t.Errorf("second program: %v, %d loads, want %d", err, d.loads, tc.loads)
			}
		})
	}
}

// TestLoadErrorNamesKernel fails the load of one kernel's module: the
// error names that kernel and its launch, under every policy, and a later
// load retries it (a failed load is not cached).
func TestLoadErrorNamesKernel(t *testing.T) {
	for _, policy := range []LoadPolicy{{Parallel: 1}, {Split: true, Parallel: 1}, {Split: true}, linkOnce, DefaultLoadPolicy} {
		p := compileFile(t, "twokernels.mlir")
		d := newFake()
		d.loadErr = func(ptx string) error {
			if strings.Contains(ptx, "mul.rn.f32") { // vmul, renamed or not
				return errors.New("ptxas says no")
			}
			return nil
		}
		rt := newRuntime(d)
		rt.SetLoadPolicy(policy)
		err := p.Load(rt, "main")
		// Split, only vmul's module fails; whole, the module holds vadd
		// too and the first launch (vadd's) reports it.
		want := "@k::@vmul"
		if !policy.Split {
			want = "@k::@vadd"
		}
		if err == nil || !strings.Contains(err.Error(), "loading kernel "+want+": ptxas says no") ||
			!strings.Contains(err.Error(), "twokernels.mlir:") {
			t.Errorf("%+v: got %v, want a located error naming %s", policy, err, want)
		}
		rt.Settle() // background loads read loadErr
		d.loadErr = nil
		if err := p.Load(rt, "main"); err != nil {
			t.Errorf("%+v: retry: %v", policy, err)
		}
		rt.Settle()
	}
}

// linkOnce is the default policy without tiers: each text compiled once.
var linkOnce = LoadPolicy{Split: true, Link: true}

// TestParseLoadPolicy reads the STRATA_PTX_LOAD values and rejects others;
// a bad value in the environment fails the first load with its message.
func TestParseLoadPolicy(t *testing.T) {
	for s, want := range map[string]LoadPolicy{
		"whole":             {Parallel: 1},
		"whole:3":           {Parallel: 3},
		"split":             {Split: true},
		"split:2":           {Split: true, Parallel: 2},
		"whole,O1":          {Parallel: 1, OptLevel: 2},
		"split,O0":          {Split: true, OptLevel: 1},
		"link":              TieredLoadPolicy,
		"link:4,O3,tier=O1": {Split: true, Link: true, Parallel: 4, OptLevel: 4, Tier: 2},
		"link,tier=off":     linkOnce,
		"link,tier=O2,O4":   {Split: true, Link: true, OptLevel: 5, Tier: 3},
		"link,ptxas":        DefaultLoadPolicy,
		"split:2,ptxas,O3":  {Split: true, Parallel: 2, OptLevel: 4, PTXAS: true},
	} {
		if got, err := ParseLoadPolicy(s); err != nil || got != want {
			t.Errorf("ParseLoadPolicy(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "parallel", "split:0", "split:x", "whole:-1", "whole,O5", "whole,3", "whole,Ox",
		"link,tier=O5", "link,tier=", "link,tier=on", "split,tier=O0", "whole,tier=O1", "link,,O1", "link,ptxas=1"} {
		if _, err := ParseLoadPolicy(s); err == nil {
			t.Errorf("ParseLoadPolicy(%q): no error", s)
		}
	}
	t.Setenv(LoadPolicyEnv, "sideways")
	rt := newRuntime(newFake())
	err := compileFile(t, "vadd.mlir").Load(rt, "main")
	if err == nil || !strings.Contains(err.Error(), LoadPolicyEnv) || !strings.Contains(err.Error(), "sideways") {
		t.Errorf("bad %s: got %v", LoadPolicyEnv, err)
	}
	t.Setenv(LoadPolicyEnv, "")
	if got := newRuntime(newFake()).LoadPolicy(); got != DefaultLoadPolicy {
		t.Errorf("unset %s: policy %+v, want the default %+v", LoadPolicyEnv, got, DefaultLoadPolicy)
	}
}

// TestLoadSharesEqualKernels loads a gpu.module whose two kernels are the
// same code under two names: whole, the module holds the first kernel
// only and both launches run it; split, one module serves both.
func TestLoadSharesEqualKernels(t *testing.T) {
	src, err := testdata.ReadFile("testdata/twokernels.mlir")
	if err != nil {
		t.Fatal(err)
	}
	twice := strings.ReplaceAll(string(src), "arith.mulf", "arith.addf") // @vmul adds too
	for _, policy := range []LoadPolicy{{Parallel: 1}, {Split: true}, linkOnce} {
		p, err := Compile(parse(t, "twice.mlir", twice), Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := newFake()
		rt := newRuntime(d)
		rt.SetLoadPolicy(policy)
		args := cases[1].args(t, rand.New(rand.NewPCG(5, 6)))
		got, err := p.Run(rt, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, p, args, got, 1e-6)
		if d.loads != 1 || strings.Count(d.texts[0], ".entry") != 1 {
			t.Errorf("%+v: %d loads, texts %q; want one load of one kernel", policy, d.loads, d.texts)
		}
		if loads, err := p.Loads(rt, "main"); err != nil || len(loads) != 1 || loads[0].Parts != 1 {
			t.Errorf("%+v: Loads = %+v, %v; want module k in 1 part", policy, loads, err)
		}
		for _, l := range d.launches {
			if l.kernel != "vadd" {
				t.Errorf("%+v: launched %s, want vadd for both launches", policy, l.kernel)
			}
		}
	}
}

// TestLinkFallsBackToModuleLoad: a text the linker refuses with a compile
// error is loaded through the module-load JIT instead; any other linker
// error is reported as it is.
func TestLinkFallsBackToModuleLoad(t *testing.T) {
	p := compileFile(t, "twokernels.mlir")
	d := newFake()
	d.linkErr = func(ptx string) error {
		if strings.Contains(ptx, "mul.rn.f32") {
			return &cuda.JITError{Err: &cuda.Error{Op: "cuLinkComplete"}, Log: "not for the linker"}
		}
		return nil
	}
	rt := newRuntime(d)
	rt.SetLoadPolicy(linkOnce)
	args := cases[1].args(t, rand.New(rand.NewPCG(7, 8)))
	got, err := p.Run(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	compare(t, p, args, got, 1e-6)
	if d.linked != 2 || d.loads != 2 {
		t.Errorf("%d link attempts and %d loads, want 2 (vadd, and vmul refused) and 2 (vadd linked, vmul through the module-load JIT)", d.linked, d.loads)
	}
	d2 := newFake()
	d2.linkErr = func(string) error { return errors.New("out of host memory") }
	rt2 := newRuntime(d2)
	rt2.SetLoadPolicy(linkOnce)
	if err := compileFile(t, "twokernels.mlir").Load(rt2, "main"); err == nil || !strings.Contains(err.Error(), "out of host memory") {
		t.Errorf("a linker error that is not a compile error: got %v", err)
	}
}

// TestSplitLoadDedupsWholeTextLazily loads a two-kernel gpu.module under
// the split policy: the whole module's deduplicated text, which that
// policy never loads, is not made until Loads asks for it.
func TestSplitLoadDedupsWholeTextLazily(t *testing.T) {
	p := compileFile(t, "twokernels.mlir")
	d := newFake()
	rt := newRuntime(d)
	rt.SetLoadPolicy(LoadPolicy{Split: true, Parallel: 1})
	if err := p.Load(rt, "main"); err != nil {
		t.Fatal(err)
	}
	m := p.texts("k")
	if m.whole != "" {
		t.Fatalf("the whole text was deduplicated for a split load")
	}
	loads, err := p.Loads(rt, "main")
	if err != nil || len(loads) != 1 || loads[0].Parts != 2 {
		t.Fatalf("Loads = %+v, %v; want module k in 2 parts", loads, err)
	}
	if m.whole == "" || d.loads != 2 {
		t.Errorf("after Loads: whole text %d bytes, %d loads; want the text and 2 loads", len(m.whole), d.loads)
	}
}

// TestConcurrentLoadBatches checks that two batches of loads run at once
// and compile a text they share once: batch B compiles its own text while
// batch A is still compiling the shared one, then waits for A's module
// instead of compiling it again; when A's compile of the shared text
// fails, B compiles it itself.
func TestConcurrentLoadBatches(t *testing.T) {
	text := func(name string) string { return ".visible .entry " + name + "()\n{\n\tret;\n}\n" }
	shared, own, other := text("shared"), text("own"), text("other")
	for _, fail := range []bool{false, true} {
		d := newFake()
		rt := newRuntime(d)
		inShared, release := make(chan struct{}), make(chan struct{})
		sharedLoads := 0
		d.loadErr = func(ptx string) error {
			if ptx != shared {
				return nil
			}
			sharedLoads++
			if sharedLoads > 1 {
				return nil // B's retry
			}
			close(inShared)
			<-release
			if fail {
				return errors.New("fake: the first compile of the shared text fails")
			}
			return nil
		}
		policy := LoadPolicy{Split: true, Parallel: 4}
		none := func(string) ([]byte, bool) { return nil, false }
		aDone := make(chan map[[32]byte]error)
		go func() { aDone <- rt.loadAll([]string{shared, own}, policy, none) }()
		<-inShared
		bDone := make(chan map[[32]byte]error)
		go func() { bDone <- rt.loadAll([]string{other, shared}, policy, none) }()
		// B compiles its own text while A holds the shared one.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("fail=%v: batch B compiled nothing while A compiled the shared text", fail)
			}
			d.loadMu.Lock()
			n := slices.Contains(d.texts, other)
			d.loadMu.Unlock()
			if n {
				break
			}
			select {
			case errs := <-bDone:
				t.Fatalf("fail=%v: batch B ended (%v) before A's shared compile did", fail, errs)
			case <-time.After(time.Millisecond):
			}
		}
		close(release)
		aErrs, bErrs := <-aDone, <-bDone
		key := sha256.Sum256([]byte(shared))
		if fail {
			if aErrs[key] == nil || len(bErrs) != 0 || sharedLoads != 2 {
				t.Errorf("failing shared text: A's errors %v, B's %v, %d compiles of it; want A's error, none for B (its own compile), 2", aErrs, bErrs, sharedLoads)
			}
		} else if len(aErrs) != 0 || len(bErrs) != 0 || sharedLoads != 1 {
			t.Errorf("A's errors %v, B's %v, %d compiles of the shared text; want none and 1", aErrs, bErrs, sharedLoads)
		}
		rt.mu.Lock()
		_, loaded := rt.modules[key]
		pending := len(rt.loading)
		rt.mu.Unlock()
		if !loaded || pending != 0 {
			t.Errorf("fail=%v: shared text loaded %v, %d loads still marked", fail, loaded, pending)
		}
	}
}

// TestLoadBatchesShareCPUs checks that under one load per CPU (Parallel
// 0) two batches loading at once compile at most one text per CPU in
// all, not one per CPU each: the Runtime's slots are shared.
func TestLoadBatchesShareCPUs(t *testing.T) {
	d := newFake()
	rt := newRuntime(d)
	var inFlight, most atomic.Int32
	d.loadErr = func(string) error {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		inFlight.Add(-1)
		return nil
	}
	batch := func(name string) []string {
		var texts []string
		for i := range runtime.NumCPU() + 1 {
			texts = append(texts, fmt.Sprintf(".visible .entry %s%d()\n{\n\tret;\n}\n", name, i))
		}
		return texts
	}
	policy := LoadPolicy{Split: true}
	none := func(string) ([]byte, bool) { return nil, false }
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Go(func() {
			if errs := rt.loadAll(batch(name), policy, none); len(errs) != 0 {
				t.Errorf("batch %s: %v", name, errs)
			}
		})
	}
	wg.Wait()
	if got := int(most.Load()); got > runtime.NumCPU() || got < 1 {
		t.Errorf("%d compiles at once, want 1 to %d (one per CPU across the batches)", got, runtime.NumCPU())
	}
}

// TestJITSlotsLongestFirst checks that a freed slot goes to the longest
// text waiting, whichever asked first.
func TestJITSlotsLongestFirst(t *testing.T) {
	s := newJITSlots(1)
	s.acquire(1)
	got := make(chan int, 3)
	var wg sync.WaitGroup
	for i, size := range []int{10, 30, 20} {
		wg.Go(func() {
			s.acquire(size)
			got <- size
			s.release()
		})
		// Each waits before the next asks.
		for {
			s.mu.Lock()
			n := len(s.waiting)
			s.mu.Unlock()
			if n == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	s.release()
	wg.Wait()
	close(got)
	var order []int
	for size := range got {
		order = append(order, size)
	}
	if !slices.Equal(order, []int{30, 20, 10}) {
		t.Errorf("slots taken in the order %v, want [30 20 10]", order)
	}
}

// TestLoadPanicEndsMarks checks that a load that panics (and whose
// caller recovers) ends its marks and frees its slot: a later batch that
// needs the same text loads it rather than waiting for ever.
func TestLoadPanicEndsMarks(t *testing.T) {
	text := ".visible .entry k()\n{\n\tret;\n}\n"
	none := func(string) ([]byte, bool) { return nil, false }
	for _, parallel := range []int{1, 0} { // 0: the Runtime's shared slots
		d := newFake()
		rt := newRuntime(d)
		calls := 0
		d.loadErr = func(string) error {
			if calls++; calls == 1 {
				panic("fake: the driver panics")
			}
			return nil
		}
		policy := LoadPolicy{Split: true, Parallel: parallel}
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("parallel %d: the load did not panic", parallel)
				}
			}()
			rt.loadAll([]string{text}, policy, none)
		}()
		rt.mu.Lock()
		pending := len(rt.loading)
		rt.mu.Unlock()
		if pending != 0 {
			t.Errorf("parallel %d: %d loads still marked after the panic", parallel, pending)
		}
		rt.jitSlots.mu.Lock()
		free := rt.jitSlots.free
		rt.jitSlots.mu.Unlock()
		if free != runtime.NumCPU() {
			t.Errorf("parallel %d: %d of %d shared slots free after the panic", parallel, free, runtime.NumCPU())
		}
		done := make(chan map[[32]byte]error, 1)
		go func() { done <- rt.loadAll([]string{text}, policy, none) }()
		select {
		case errs := <-done:
			if len(errs) != 0 || calls != 2 {
				t.Errorf("parallel %d: the next batch's errors %v after %d compiles, want none after 2", parallel, errs, calls)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("parallel %d: the next batch still waits for the panicked load's mark", parallel)
		}
	}
}

// TestFailedLoadRetriedOnce checks that when a text fails to compile in
// one batch while two others wait for it, one of them retries it and the
// other takes the retry's error: two compiles, not one per batch.
func TestFailedLoadRetriedOnce(t *testing.T) {
	text := func(name string) string { return ".visible .entry " + name + "()\n{\n\tret;\n}\n" }
	shared, ownB, ownC := text("shared"), text("b"), text("c")
	d := newFake()
	rt := newRuntime(d)
	inShared, release := make(chan struct{}), make(chan struct{})
	var sharedLoads atomic.Int32
	d.loadErr = func(ptx string) error {
		if ptx != shared {
			return nil
		}
		if sharedLoads.Add(1) == 1 {
			close(inShared)
			<-release
		}
		return errors.New("fake: the shared text does not compile")
	}
	policy := LoadPolicy{Split: true, Parallel: 1}
	none := func(string) ([]byte, bool) { return nil, false }
	results := make(chan map[[32]byte]error, 3)
	go func() { results <- rt.loadAll([]string{shared}, policy, none) }()
	<-inShared
	for _, own := range []string{ownB, ownC} {
		go func() { results <- rt.loadAll([]string{own, shared}, policy, none) }()
	}
	// B and C have marked their own texts, seen A's mark on the shared
	// one, and compiled their own: they wait for A.
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.loadMu.Lock()
		both := slices.Contains(d.texts, ownB) && slices.Contains(d.texts, ownC)
		d.loadMu.Unlock()
		if both {
			break
		}
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("batches B and C compiled nothing while A held the shared text")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	key := sha256.Sum256([]byte(shared))
	for range 3 {
		select {
		case errs := <-results:
			if errs[key] == nil || len(errs) != 1 {
				t.Errorf("a batch's errors %v, want the shared text's only", errs)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a batch still waits")
		}
	}
	if n := sharedLoads.Load(); n != 2 {
		t.Errorf("%d compiles of the failing shared text, want 2 (the first and one retry)", n)
	}
	rt.mu.Lock()
	pending := len(rt.loading)
	rt.mu.Unlock()
	if pending != 0 {
		t.Errorf("%d loads still marked", pending)
	}
}
