package exec

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// LoadPolicy says how a Runtime hands a program's PTX to the driver.
// Whatever the policy, a kernel that is the same code as another kernel
// of its gpu.module is compiled once (cuda.DedupPTX, cuda.RenameKernel).
//
// Measured on the H200 with driver 580 (bench/NOTES.md, session 4, H3):
// the module-load JIT (cuModuleLoadDataEx) compiles one module at a time
// per process, whatever the number of threads loading; the driver's
// linker (cuLinkAddData, cuLinkComplete) compiles on every thread that
// calls it at once. The default therefore cuts each gpu.module into one
// module per distinct kernel and compiles them all at once through the
// linker: the transformer example's graph of 8 distinct kernels took
// 46–58 ms instead of 217–228.
type LoadPolicy struct {
	// Split loads each kernel of a gpu.module as a module of its own
	// (where cuda.SplitPTX can cut the text; otherwise the module whole).
	Split bool
	// Parallel is how many modules load at once: 1 loads one after
	// another; 0 means one per CPU, shared by the batches of the Runtime
	// that load at once.
	Parallel int
	// OptLevel is the JIT's optimization level plus one
	// (cuda.JITOptions.OptLevel): 0 leaves the driver's default.
	OptLevel int
	// Link compiles through the driver's linker
	// (cuda.Device.LoadModuleLinked), where the driver has it, instead of
	// the module-load JIT.
	Link bool
	// Tier, when not zero, is the JIT optimization level plus one (as
	// OptLevel) of a first, quicker compile (tiered compilation, with
	// Link only): a kernel that the link cache does not hold at OptLevel
	// is compiled at Tier, and the program runs that code at once, while
	// the kernel is compiled again at OptLevel in the background and
	// swapped in when ready. Timing (Bound.Time, WallTime) and CUDA graph
	// capture wait for the swap, so they never see the first tier. Tier
	// equal to OptLevel's level means no tiering.
	Tier int
	// PTXAS compiles each text with the CUDA toolkit's ptxas (FindPTXAS)
	// in a process of its own, as Program.Precompile does before the
	// device opens, instead of the driver's JIT, where a ptxas is
	// installed: the final code at once (ptxas's default level, whole
	// program, so setmaxnreg holds), without tiers; a text ptxas fails
	// on, or whose cubin the driver refuses, goes to the driver as the
	// rest of the policy says.
	PTXAS bool
}

// tiered reports whether p compiles kernels twice, first at p.Tier.
func (p LoadPolicy) tiered() bool {
	final := p.OptLevel
	if final == 0 {
		final = 5 // the driver's default, level 4
	}
	return p.Link && p.Tier != 0 && p.Tier != final
}

// LoadPolicyEnv is the environment variable that sets the load policy of
// new Runtimes, for measurements: "link" (a module per distinct kernel,
// compiled through the linker, one per CPU at once, first at JIT level 0
// then again at the final level in the background: TieredLoadPolicy), "whole"
// (one module per gpu.module through the module-load JIT, one at a time),
// "split" (a module per kernel through the module-load JIT, one per CPU
// at once); ":N" after the name sets the loads at once ("link:4"), a
// suffix ",O<n>" the JIT's final optimization level n (0-4; the driver's
// default is 4), ",tier=O<n>" the level of link's first compile and
// ",tier=off" compiles once ("link,O4,tier=off"), ",ptxas" compiles with
// the toolkit's ptxas where one is installed (LoadPolicy.PTXAS; "link,ptxas"
// is the default).
const LoadPolicyEnv = "STRATA_PTX_LOAD"

// DefaultTier is the first tier of the default policy: JIT level 0. On
// the H200 the examples' kernels compile 20–45% faster at level 0 than at
// the default level 4, and run up to 4× slower (bench/NOTES.md, session
// 5, H2), which the background compile then repairs.
const DefaultTier = 1

// TieredLoadPolicy compiles through the driver's linker in tiers: the
// "link" of LoadPolicyEnv, and the default where no ptxas is installed.
var TieredLoadPolicy = LoadPolicy{Split: true, Link: true, Tier: DefaultTier}

// DefaultLoadPolicy is the policy of a new Runtime when LoadPolicyEnv is
// unset: the texts through the toolkit's ptxas where one is installed
// (bins of texts, a process each: the final code at once), else
// TieredLoadPolicy. On the H200, resnet50_train's cold first call took
// 1.2–1.4 s with ptxas against 1.9–2.1 s with the driver's tiers, and its
// steady step was no slower (15.23–18.03 against 15.43–18.91 ms, three
// processes each in the order ABBAAB: bench/NOTES.md, session 17).
var DefaultLoadPolicy = LoadPolicy{Split: true, Link: true, Tier: DefaultTier, PTXAS: true}

// parseLevel reads "O<n>" (n from 0 to 4) as a JIT level plus one.
func parseLevel(s string) (int, bool) {
	level, err := strconv.Atoi(strings.TrimPrefix(s, "O"))
	if err != nil || !strings.HasPrefix(s, "O") || level < 0 || level > 4 {
		return 0, false
	}
	return level + 1, true
}

// ParseLoadPolicy reads a LoadPolicyEnv value.
func ParseLoadPolicy(s string) (LoadPolicy, error) {
	var p LoadPolicy
	s, opts, _ := strings.Cut(s, ",")
	tier := -1 // not given
	if opts != "" {
		for _, opt := range strings.Split(opts, ",") {
			switch v, isTier := strings.CutPrefix(opt, "tier="); {
			case opt == "ptxas":
				p.PTXAS = true
			case isTier && v == "off":
				tier = 0
			case isTier:
				level, ok := parseLevel(v)
				if !ok {
					return LoadPolicy{}, fmt.Errorf("exec: load policy suffix %q: want tier=O0 to tier=O4, or tier=off", opt)
				}
				tier = level
			default:
				level, ok := parseLevel(opt)
				if !ok {
					return LoadPolicy{}, fmt.Errorf("exec: load policy suffix %q: want O0 to O4, tier=O<n>, tier=off or ptxas", opt)
				}
				p.OptLevel = level
			}
		}
	}
	kind, n, hasN := strings.Cut(s, ":")
	switch kind {
	case "whole":
		p.Parallel = 1
	case "split":
		p.Split = true // Parallel 0: one per CPU
	case "link":
		p.Split, p.Link, p.Tier = true, true, DefaultTier
		if tier >= 0 {
			p.Tier = tier
		}
	default:
		return LoadPolicy{}, fmt.Errorf("exec: load policy %q: want link, whole or split, each with an optional :N", s)
	}
	if hasN {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 {
			return LoadPolicy{}, fmt.Errorf("exec: load policy %q: %q is not a positive count of parallel loads", s, n)
		}
		p.Parallel = v
	}
	if tier > 0 && !p.Link {
		return LoadPolicy{}, fmt.Errorf("exec: load policy %q: tiered compilation needs link", s)
	}
	return p, nil
}

// policyFromEnv returns the policy LoadPolicyEnv sets, the default when
// it is unset, and an error for a value it cannot read.
func policyFromEnv() (LoadPolicy, error) {
	s, ok := os.LookupEnv(LoadPolicyEnv)
	if !ok || s == "" {
		return DefaultLoadPolicy, nil
	}
	p, err := ParseLoadPolicy(s)
	if err != nil {
		return DefaultLoadPolicy, fmt.Errorf("%s: %w", LoadPolicyEnv, err)
	}
	return p, nil
}

// SetLoadPolicy sets how later loads of the Runtime hand PTX to the
// driver; modules already loaded stay as they are.
func (rt *Runtime) SetLoadPolicy(p LoadPolicy) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.policy, rt.policyErr = p, nil
}

// LoadPolicy returns the Runtime's load policy.
func (rt *Runtime) LoadPolicy() LoadPolicy {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.policy
}

// moduleTexts are the PTX texts of one gpu.module as the runtime loads
// it: the whole text without duplicate kernels, and, where it could be
// split, one text per kernel.
type moduleTexts struct {
	byKernel map[string]piece // by PTX kernel name

	// The whole text is deduplicated on first use (wholeText): under the
	// split policy only Loads asks for it, and cuda.DedupPTX reads and
	// renames every kernel of the module (18 ms of resnet50_train's first
	// load on a fast host).
	raw   string
	once  sync.Once
	whole string
	same  map[string]string // a kernel left out of whole -> the kept kernel it equals
}

// wholeText returns the gpu.module's text without duplicate kernels, and
// the kernels left out, each with the kept kernel it equals.
func (m *moduleTexts) wholeText() (string, map[string]string) {
	m.once.Do(func() {
		m.whole = m.raw
		if text, same, ok := cuda.DedupPTX(m.raw); ok {
			m.whole, m.same = text, same
		}
	})
	return m.whole, m.same
}

// piece is one kernel's own module: its text and the kernel's name there.
// The kernel is renamed to sharedKernelName where it can be, so that the
// kernels of a gpu.module that are the same code share one text (and one
// load).
type piece struct{ text, name string }

// sharedKernelName is the name of every kernel in its own module.
const sharedKernelName = "strata_kernel"

// textFor returns the PTX text that holds kernel (a PTX name) under
// policy p, and the kernel's name in it.
func (m *moduleTexts) textFor(kernel string, p LoadPolicy) (text, name string) {
	if p.Split {
		if pc, ok := m.byKernel[kernel]; ok {
			return pc.text, pc.name
		}
	}
	whole, same := m.wholeText()
	if k, ok := same[kernel]; ok {
		return whole, k
	}
	return whole, kernel
}

// texts returns the gpu.module's texts, splitting it on first use.
func (p *Program) texts(module string) *moduleTexts {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.split == nil {
		p.split = map[string]*moduleTexts{}
	}
	if m, ok := p.split[module]; ok {
		return m
	}
	m := &moduleTexts{raw: p.ptx[module]}
	if ks, ok, _ := cuda.SplitPTX(p.ptx[module]); ok && len(ks) > 1 {
		m.byKernel = make(map[string]piece, len(ks))
		for _, k := range ks {
			pc := piece{text: k.PTX, name: k.Name}
			if t, ok := cuda.RenameKernel(k.PTX, k.Name, sharedKernelName); ok {
				pc = piece{text: t, name: sharedKernelName}
			}
			m.byKernel[k.Name] = pc
		}
	}
	p.split[module] = m
	return m
}

// kernels returns the kernel of each launch of pl, loading the modules
// not loaded yet, concurrently as the Runtime's policy says (without its
// tiers unless tiers is set: a caller about to time the kernels would
// only wait for the final tier). An error
// names the first launch, in plan order, whose kernel did not load.
func (p *Program) kernels(rt *Runtime, pl *plan, tiers bool) ([]kernel, error) {
	policy := rt.LoadPolicy()
	if rt.policyErr != nil {
		return nil, rt.policyErr
	}
	if !tiers {
		policy.Tier = 0
	}
	texts := make([]string, len(pl.launches))
	names := make([]string, len(pl.launches))
	for i, l := range pl.launches {
		texts[i], names[i] = p.texts(l.module).textFor(ptxSymbol(l.kernel), policy)
	}
	errs := rt.loadAll(texts, policy, p.cubinFor)
	ks := make([]kernel, 0, len(pl.launches))
	for i, l := range pl.launches {
		key := sha256.Sum256([]byte(texts[i]))
		err := errs[key]
		var k kernel
		if err == nil {
			rt.mu.Lock()
			m := rt.modules[key]
			rt.mu.Unlock()
			k, err = m.function(names[i])
		}
		if err != nil {
			return nil, ir.Errorf(l.op.Loc(), "loading kernel @%s::@%s: %v", l.module, l.kernel, err)
		}
		ks = append(ks, k)
	}
	return ks, nil
}

// loadAll loads the texts the Runtime has not loaded yet, each once,
// policy.Parallel at a time, and returns the error of each text that
// failed, by its key. A text for which cubin has a cubin (Precompile)
// loads that instead, where the driver takes it. Batches run at once (a
// training step's forward and backward graphs load while each other's
// tail compiles), but a text is compiled once: a batch that needs a text
// another is compiling waits for it, and compiles it itself only if that
// load failed — one batch retries, and the others waiting take the
// retry's result, so a text that does not compile is compiled twice, not
// once per graph that shares it.
func (rt *Runtime) loadAll(texts []string, policy LoadPolicy, cubin func(text string) ([]byte, bool)) map[[32]byte]error {
	var keys, waitKeys [][32]byte
	var todo, waitTexts []string
	var waits []*loadMark
	seen := map[[32]byte]bool{}
	rt.mu.Lock()
	for _, t := range texts {
		key := sha256.Sum256([]byte(t))
		if _, loaded := rt.modules[key]; loaded || seen[key] {
			continue
		}
		seen[key] = true
		if m, busy := rt.loading[key]; busy {
			waits, waitKeys, waitTexts = append(waits, m), append(waitKeys, key), append(waitTexts, t)
			continue
		}
		rt.loading[key] = &loadMark{done: make(chan struct{})}
		keys, todo = append(keys, key), append(todo, t)
	}
	rt.mu.Unlock()
	failed := rt.loadBatch(keys, todo, policy, cubin)
	for i, m := range waits {
		if err := rt.await(m, waitKeys[i], waitTexts[i], policy, cubin); err != nil {
			failed[waitKeys[i]] = err
		}
	}
	return failed
}

// loadMark is a text being compiled by one batch (Runtime.loading).
type loadMark struct {
	done  chan struct{} // closed when the batch's load ended
	err   error         // the load's error, set before done is closed
	retry bool          // the load retries a failed one
	// next, set under Runtime.mu, is the load that retries this failed
	// one: the other batches waiting for this one wait for it.
	next *loadMark
}

// errLoadPanicked ends the marks of a batch whose load panicked.
var errLoadPanicked = errors.New("the load of the text panicked in another batch")

// await waits for another batch's load m of text (key) and returns nil
// once the text is loaded. A failed load is retried once: the first
// batch to find it failed compiles the text (holding no other mark
// meanwhile, so batches retrying each other's texts cannot deadlock),
// and the others wait for that retry and take its error.
func (rt *Runtime) await(m *loadMark, key [32]byte, text string, policy LoadPolicy, cubin func(text string) ([]byte, bool)) error {
	for {
		<-m.done
		rt.mu.Lock()
		_, ok := rt.modules[key]
		var mine bool
		switch {
		case ok:
		case m.retry:
			rt.mu.Unlock()
			return m.err
		case m.next != nil:
		default:
			if cur, busy := rt.loading[key]; busy {
				m.next = cur // a new batch compiles it: its result stands
			} else {
				m.next = &loadMark{done: make(chan struct{}), retry: true}
				rt.loading[key] = m.next
				mine = true
			}
		}
		rt.mu.Unlock()
		if ok {
			return nil
		}
		if mine {
			return rt.loadBatch([][32]byte{key}, []string{text}, policy, cubin)[key]
		}
		m = m.next
	}
}

// loadBatch compiles todo (whose keys are keys, each marked as loading
// by this batch), stores the modules, ends the marks, and returns the
// error of each text that failed.
func (rt *Runtime) loadBatch(keys [][32]byte, todo []string, policy LoadPolicy, cubin func(text string) ([]byte, bool)) map[[32]byte]error {
	mods := make([]module, len(todo))
	errs := make([]error, len(todo))
	jit := cuda.JITOptions{OptLevel: policy.OptLevel, Cache: rt.linkCache}
	tiered := policy.tiered() && rt.dev.canLink()
	parallel := policy.Parallel
	// With one load per CPU (Parallel 0), the slots are the Runtime's,
	// shared by the batches running at once and given to the longest
	// text waiting: a second graph's batch of short kernels then waits
	// for a free CPU instead of halving the share of the first's long
	// compiles (cnn_small_train's forward wgmma kernels beside its
	// backward pass's batch).
	slots := newJITSlots(max(parallel, 1))
	if parallel <= 0 {
		parallel, slots = runtime.NumCPU(), rt.jitSlots
	}
	var ptxas *ptxasRun
	if policy.PTXAS {
		ptxas = newPTXASRun()
		defer ptxas.close()
	}
	load := func(i int) {
		text := todo[i]
		// A cubin in the link cache beats waiting for ptxas.
		cached := rt.dev.cached(text, jit)
		if !cached {
			if image, ok := cubin(text); ok {
				m, err := rt.dev.loadImage(image)
				if err == nil {
					mods[i] = m
					return
				}
				logs.Printf(TopicPerfHints, "the driver refused a cubin from ptxas: %v (it compiles the kernel itself)", err)
			}
			if ptxas != nil {
				if m, ok := ptxas.load(rt.dev, text); ok {
					mods[i] = m
					return
				}
			}
		}
		if tiered && !cached && !finalAtOnce(text) && !wholeProgram(text) {
			// The first tier is cached too: a process that ends before
			// its upgrades finish (a short script) leaves it for the
			// next, which loads it at once and upgrades again.
			first := cuda.JITOptions{OptLevel: policy.Tier, Cache: jit.Cache}
			m, err := rt.dev.load(text, first, true)
			if err == nil {
				mods[i] = newTieredModule(m)
				return
			}
			// A text the linker refuses takes the plain path, which
			// reports its own error.
		}
		mods[i], errs[i] = rt.loadOne(text, jit, policy.Link && !wholeProgram(text))
	}
	// The longest texts start first (the longest-processing-time rule):
	// the load ends with its slowest compile, which should not wait in
	// the queue behind short ones (resnet50_infer's 26 kernels: three
	// wgmma templates of 160–225 KB, whose JIT takes seconds, among
	// kernels of a few KB, on 16 threads). With ptxas, the texts it
	// compiles go in bins, a process each (ptxasBins).
	var bins []loadJob
	var binned map[int]bool
	if ptxas != nil && ptxas.path != "" {
		bins, binned = ptxasBins(todo, parallel, func(text string) bool {
			if rt.dev.cached(text, jit) {
				return false
			}
			_, ok := cubin(text)
			return !ok
		})
	}
	jobs := loadJobs(todo, bins, binned)
	run := func(j loadJob) {
		if len(j.texts) > 1 {
			texts := make([]string, len(j.texts))
			for k, i := range j.texts {
				texts[k] = todo[i]
			}
			if ms, ok := ptxas.loadBin(rt.dev, texts); ok {
				for k, i := range j.texts {
					mods[i] = ms[k]
				}
				return
			}
		}
		for _, i := range j.texts {
			load(i)
		}
	}
	// The marks end whatever happens: a panic in a load that a caller
	// recovers must not leave the batches waiting for them blocked for
	// ever (those find no module and compile the text themselves).
	ended := false
	defer func() {
		if !ended {
			rt.endMarks(keys, errLoadPanicked)
		}
	}()
	if parallel <= 1 || len(jobs) <= 1 {
		for _, j := range jobs {
			slots.acquire(j.size)
			func() {
				defer slots.release() // a shared slot, kept by no panic
				run(j)
			}()
		}
	} else {
		// Each load locks its goroutine to an OS thread with the context
		// current (cuda.Device.call), so the driver compiles on several
		// threads; a load waiting in the driver does not hold a P, so
		// GOMAXPROCS does not bound them.
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Add(1)
			slots.acquire(j.size)
			go func() {
				defer wg.Done()
				defer slots.release()
				run(j)
			}()
		}
		wg.Wait()
	}
	failed := map[[32]byte]error{}
	var upTexts []string
	var upMods []*tieredModule
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for i, key := range keys {
		if errs[i] != nil {
			failed[key] = errs[i]
			continue
		}
		rt.modules[key] = mods[i]
		if t, ok := mods[i].(*tieredModule); ok {
			upTexts, upMods = append(upTexts, todo[i]), append(upMods, t)
		}
	}
	rt.endMarksLocked(keys, errs)
	ended = true
	// The final tier is compiled once the whole batch's first tier is
	// loaded, so that it does not compete with the first call for CPUs.
	rt.upgradeAll(upTexts, upMods, jit, parallel)
	return failed
}

// loadJobs returns the jobs of a load batch, the longest first (the
// longest-processing-time rule, which the Runtime's slots follow across
// batches too): ptxas's bins (ptxasBins) and a job for each other text.
// Beside bins, a text alone counts twice its bytes: the texts ptxas
// compiles alone are the long ones and the wgmma templates, whose compile
// costs more than a bin of small kernels of the same bytes
// (resnet50_train's 57 KB batch-norm backward kernel: 360 ms of CPU,
// against ≈ 220 ms for the backward's bins of ≈ 75 KB), and which a load
// waits for last when the bins take the slots first (session 17 call 2:
// that kernel waited ≈ 170 ms for a slot).
func loadJobs(todo []string, bins []loadJob, binned map[int]bool) []loadJob {
	jobs := append(make([]loadJob, 0, len(todo)), bins...)
	weight := 1
	if len(bins) > 0 {
		weight = 2
	}
	for i, text := range todo {
		if !binned[i] {
			jobs = append(jobs, loadJob{texts: []int{i}, size: weight * len(text)})
		}
	}
	slices.SortStableFunc(jobs, func(a, b loadJob) int { return b.size - a.size })
	return jobs
}

// endMarks ends the loading marks of keys, all with the error err.
func (rt *Runtime) endMarks(keys [][32]byte, err error) {
	errs := make([]error, len(keys))
	for i := range errs {
		errs[i] = err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.endMarksLocked(keys, errs)
}

// endMarksLocked ends the loading marks of keys, each with its error in
// errs; rt.mu is held.
func (rt *Runtime) endMarksLocked(keys [][32]byte, errs []error) {
	for i, key := range keys {
		m := rt.loading[key]
		if m == nil {
			continue
		}
		m.err = errs[i]
		close(m.done)
		delete(rt.loading, key)
	}
}

// jitSlots bounds the compiles in flight and gives a free slot to the
// longest text waiting for one (the longest-processing-time rule across
// the batches that share the slots: each batch asks for its texts
// longest first).
type jitSlots struct {
	mu      sync.Mutex
	cond    *sync.Cond
	free    int
	waiting []int // the sizes of the texts waiting
}

func newJITSlots(n int) *jitSlots {
	s := &jitSlots{free: n}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// acquire waits for a slot for a text of size bytes: one is free and no
// longer text waits.
func (s *jitSlots) acquire(size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = append(s.waiting, size)
	for s.free == 0 || slices.Max(s.waiting) > size {
		s.cond.Wait()
	}
	s.waiting = slices.Delete(s.waiting, slices.Index(s.waiting, size), slices.Index(s.waiting, size)+1)
	s.free--
	s.cond.Broadcast() // the next longest may take another free slot
}

// release frees a slot.
func (s *jitSlots) release() {
	s.mu.Lock()
	s.free++
	s.mu.Unlock()
	s.cond.Broadcast()
}

// finalAtOnce reports whether a text is compiled at the final JIT level
// even under a tiered policy: one with Hopper's wgmma instructions (the
// GEMM and convolution templates, flash attention), which level 0 does
// not compile faster and compiles the large ones up to twice slower, its
// register allocation serializing the wgmma pipeline. Measured with
// ptxas 12.4 (CPU time, -O0 against -O3, session 9): ResNet-50's wgmma
// convolution kernels 1.66 / 0.79 s, 0.82 / 0.42 s, 1.33 / 0.69 s; flash
// kernels 0.07–0.11 s either way; SIMT kernels ≤ 0.02 s either way. On
// the H200, resnet50_infer's first tier of 26 kernels took 3.5 s of load
// (7.9 s of JIT CPU), bounded by its largest wgmma kernel.
func finalAtOnce(text string) bool { return strings.Contains(text, "wgmma.mma_async") }

// wholeProgram reports whether a text must be compiled whole, by the
// module-load JIT, rather than by the linker: one that moves registers
// between warpgroups (setmaxnreg: the warp-specialized GEMM and flash
// kernels). The linker compiles PTX as relocatable code, in which ptxas
// ignores setmaxnreg ("(C7504) 'setmaxnreg' ignored to maintain
// compatibility across compilation units"), so that the consumers run on
// the registers of the block's entry and ptxas serializes their wgmma
// ("(C7512) … insufficient register resources"; ptxas 12.4 with -c,
// bench/NOTES.md, session 13).
func wholeProgram(text string) bool { return strings.Contains(text, "setmaxnreg") }

// loadOne loads one text, through the linker when link is set. A text the
// linker refuses with a compile error is given to the module-load JIT,
// which may take what the linker does not (the linker compiles for the
// device's plain architecture, which may not take every .target an
// arch-specific kernel names); when both refuse it, the module-load
// JIT's error is the one reported.
func (rt *Runtime) loadOne(text string, jit cuda.JITOptions, link bool) (module, error) {
	if link {
		m, err := rt.dev.load(text, jit, true)
		var je *cuda.JITError
		if err == nil || !errors.As(err, &je) {
			return m, err
		}
	}
	return rt.dev.load(text, jit, false)
}
