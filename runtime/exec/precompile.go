package exec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Precompiling with the toolkit's ptxas (Program.Precompile).
//
// The driver compiles PTX only once a context exists, and creating the
// primary context takes ≈ 200 ms on the H200 (cuInit ≈ 100 ms, the context
// ≈ 100 ms; bench/NOTES.md, session 5, H2): a program's first call waits
// for both, then for the compile. ptxas, the CUDA toolkit's assembler (as
// Triton uses it), needs neither, so where it is installed the kernels
// compile while the device opens, at ptxas's full optimization, and the
// load is a cubin load of a few milliseconds.

// PTXASEnv names the ptxas Program.Precompile runs (FindPTXAS); "off"
// turns precompiling off.
const PTXASEnv = "STRATA_PTXAS"

// FindPTXAS returns the ptxas to precompile with: PTXASEnv's path, else
// ptxas on PATH, else bin/ptxas under $CUDA_HOME, $CUDA_PATH or
// /usr/local/cuda. It reports false when there is none or PTXASEnv is
// "off".
func FindPTXAS() (string, bool) {
	switch env := os.Getenv(PTXASEnv); env {
	case "off":
		return "", false
	case "":
	default:
		return env, true
	}
	if p, err := exec.LookPath("ptxas"); err == nil {
		return p, true
	}
	for _, root := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if root == "" {
			continue
		}
		p := filepath.Join(root, "bin", "ptxas")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// precompiled is one text's cubin from ptxas, ready once done is closed.
type precompiled struct {
	done  chan struct{}
	cubin []byte
	err   error
}

// ptxTargetRE finds a PTX text's architecture.
var ptxTargetRE = regexp.MustCompile(`(?m)^\.target\s+(sm_[0-9]+[a-z]?)`)

// Precompile starts compiling, with ptxas at path, each distinct kernel
// text that host function fn launches (a module per kernel, as the link
// policy loads them), for the architecture its .target names, at ptxas's
// default optimization (-O3); it returns at once, the PTX split in the
// background too. A later Load, Prepare or Run of fn on any Runtime
// loads these cubins instead of compiling with the driver, and with the
// final code (no tiers); a cubin the driver refuses (a toolkit newer than
// the driver, another architecture) or a failed ptxas leaves that text to
// the driver, logged under STRATA_LOGS=perf_hints. It needs no device.
func (p *Program) Precompile(fn, path string) error {
	pl, err := p.plan(fn)
	if err != nil {
		return err
	}
	ready := make(chan struct{})
	p.mu.Lock()
	if p.pre == nil {
		p.pre = map[string]*precompiled{}
	}
	p.preReady = append(p.preReady, ready)
	p.mu.Unlock()
	go func() {
		var todo []string
		for _, l := range pl.launches {
			text, _ := p.texts(l.module).textFor(ptxSymbol(l.kernel), LoadPolicy{Split: true})
			p.mu.Lock()
			if _, ok := p.pre[text]; !ok {
				p.pre[text] = &precompiled{done: make(chan struct{})}
				todo = append(todo, text)
			}
			p.mu.Unlock()
		}
		close(ready)
		if len(todo) == 0 {
			return
		}
		dir, err := os.MkdirTemp("", "strata-ptxas-")
		if err != nil {
			p.abandon(todo, err) // the driver compiles them
			return
		}
		defer os.RemoveAll(dir)
		sem := make(chan struct{}, runtime.NumCPU())
		var wg sync.WaitGroup
		for i, text := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				pc := p.precompiledFor(text)
				pc.cubin, _, pc.err = runPTXAS(path, dir, i, text)
				close(pc.done)
			}()
		}
		wg.Wait()
	}()
	return nil
}

// abandon marks texts as not precompiled, for err.
func (p *Program) abandon(texts []string, err error) {
	for _, t := range texts {
		pc := p.precompiledFor(t)
		pc.err = err
		close(pc.done)
	}
}

// precompiledFor returns the precompile of text, nil when none started.
func (p *Program) precompiledFor(text string) *precompiled {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pre[text]
}

// waitPrecompiles waits until every Precompile started has registered
// its texts.
func (p *Program) waitPrecompiles() {
	p.mu.Lock()
	ready := p.preReady
	p.mu.Unlock()
	for _, r := range ready {
		<-r
	}
}

// cubinFor waits for text's precompile, if one started, and returns its
// cubin; false when there is none.
func (p *Program) cubinFor(text string) ([]byte, bool) {
	p.waitPrecompiles()
	pc := p.precompiledFor(text)
	if pc == nil {
		return nil, false
	}
	<-pc.done
	if pc.err != nil {
		logs.Printf(TopicPerfHints, "precompiling a kernel with ptxas: %v (the driver compiles it)", pc.err)
		return nil, false
	}
	return pc.cubin, true
}

// runPTXAS assembles text with ptxas into a cubin, through files named
// by i in dir, and returns it with ptxas's CPU time.
func runPTXAS(path, dir string, i int, text string) ([]byte, time.Duration, error) {
	return runPTXASFiles(path, dir, i, []string{text})
}

// runPTXASFiles assembles texts, all for one architecture, with one
// ptxas process into one cubin (ptxas takes several inputs and compiles
// each whole, as alone), through files named by i in dir, and returns it
// with ptxas's CPU time.
func runPTXASFiles(path, dir string, i int, texts []string) ([]byte, time.Duration, error) {
	m := ptxTargetRE.FindStringSubmatch(texts[0])
	if m == nil {
		return nil, 0, fmt.Errorf("no .target in the PTX")
	}
	out := filepath.Join(dir, fmt.Sprintf("k%d.cubin", i))
	args := []string{"-arch=" + m[1], "-o", out}
	for j, text := range texts {
		in := filepath.Join(dir, fmt.Sprintf("k%d_%d.ptx", i, j))
		if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
			return nil, 0, err
		}
		args = append(args, in)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, args...)
	cmd.Stderr = &stderr
	err := cmd.Start()
	if err == nil {
		// Below the process's own threads, whose passes, code generation
		// and library warm-ups lead to the first call as much as the
		// compiles do (lowerPriority).
		lowerPriority(cmd.Process.Pid)
		err = cmd.Wait()
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s -arch=%s: %v: %s", path, m[1], err, bytes.TrimSpace(stderr.Bytes()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	cubin, err := os.ReadFile(out)
	if err == nil && len(cubin) == 0 {
		err = fmt.Errorf("%s wrote an empty cubin", path)
	}
	return cubin, cpu, err
}

// ptxasRun compiles the texts of one load batch with ptxas
// (LoadPolicy.PTXAS): the ptxas found, and a temporary directory for the
// batch's files, made on first use.
type ptxasRun struct {
	path string // "" when none was found
	once sync.Once
	dir  string
	err  error
	n    atomic.Int64 // files named so far
}

// newPTXASRun finds the ptxas a batch compiles with; without one, the
// batch's texts go to the driver (logged under TopicPerfHints).
func newPTXASRun() *ptxasRun {
	path, ok := FindPTXAS()
	if !ok {
		logs.Printf(TopicPerfHints, "load policy ptxas: no ptxas (%s, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin): the driver compiles", PTXASEnv)
	}
	return &ptxasRun{path: path}
}

// load assembles text with ptxas and loads the cubin on dev. It reports
// false, having logged why under TopicPerfHints, when the driver should
// compile the text instead: no ptxas, a failed ptxas, a refused cubin.
// The module's LoadStats are ptxas's wall time with the load, and its
// CPU time as JIT.
func (r *ptxasRun) load(dev device, text string) (module, bool) {
	if r.path == "" {
		return nil, false
	}
	r.once.Do(func() { r.dir, r.err = os.MkdirTemp("", "strata-ptxas-") })
	if r.err != nil {
		logs.Printf(TopicPerfHints, "load policy ptxas: %v (the driver compiles)", r.err)
		return nil, false
	}
	start := time.Now()
	cubin, cpu, err := runPTXAS(r.path, r.dir, int(r.n.Add(1)), text)
	if err != nil {
		logs.Printf(TopicPerfHints, "compiling a kernel with ptxas: %v (the driver compiles it)", err)
		return nil, false
	}
	m, err := dev.loadImage(cubin)
	if err != nil {
		logs.Printf(TopicPerfHints, "the driver refused a cubin from ptxas: %v (it compiles the kernel itself)", err)
		return nil, false
	}
	return ptxasModule{m, cuda.LoadStats{At: start, Wall: time.Since(start), JIT: cpu}}, true
}

// close removes the batch's files.
func (r *ptxasRun) close() {
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
}

// ptxasModule is a module ptxas compiled, with what that cost.
type ptxasModule struct {
	module
	stats cuda.LoadStats
}

// LoadStats are ptxas's and the cubin load's.
func (m ptxasModule) LoadStats() cuda.LoadStats { return m.stats }

// loadJob is what one slot of a load batch compiles: one text, or a bin
// of texts for one ptxas process (ptxasBins), by their indices.
type loadJob struct {
	texts []int
	size  int // the texts' bytes
}

// ptxasBins puts the texts ptxas compiles (those eligible says, each one
// kernel for one architecture, neither wgmma nor setmaxnreg code) into at
// most n bins of at least two texts, by the longest-processing-time rule
// on their sizes, a bin's texts all of one architecture; it returns the
// bins and the texts in them. A ptxas process costs ≈ 15 ms of CPU before
// its first kernel (ptxas 12.4; 2.5 ms of it starting the 37 MB binary):
// resnet50_train's 115 backward kernels took 3.2 s of CPU one process
// each and 1.8 s in one process, and the H200 host's 16 cores were busy
// with ptxas for the whole load (session 16). The wgmma and setmaxnreg
// texts, the longest compiles, stay alone, and with several bins so does
// a text of at least half a bin's share of the bytes: a bin holding one
// takes no other text. A large kernel's compile costs more than its share by size
// (resnet50_train's 57 KB batch-norm backward kernel: 360 ms of ptxas's
// CPU, a tenth of the graph's for a twentieth of its bytes), so the bin
// that held it and ≈ 13 KB more ended the graph's load 100 ms after the
// others (session 17).
func ptxasBins(todo []string, n int, eligible func(text string) bool) ([]loadJob, map[int]bool) {
	var cands []int
	arch := map[int]string{}
	for i, text := range todo {
		m := ptxTargetRE.FindStringSubmatch(text)
		if m == nil || strings.Count(text, ".entry ") != 1 || finalAtOnce(text) || wholeProgram(text) || !eligible(text) {
			continue
		}
		cands, arch[i] = append(cands, i), m[1]
	}
	n = min(n, len(cands))
	if n < 1 || len(cands) <= n {
		return nil, nil // a bin each: nothing shared
	}
	slices.SortStableFunc(cands, func(a, b int) int { return len(todo[b]) - len(todo[a]) })
	total := 0
	for _, i := range cands {
		total += len(todo[i])
	}
	// A text this long fills its bin, where there are bins to spread the
	// others over (with one, every text waits for the same process).
	alone := total / (2 * n)
	if n == 1 {
		alone = total + 1
	}
	type bin struct {
		arch   string
		job    loadJob
		closed bool // it holds a text of at least alone bytes
	}
	bins := make([]bin, n)
	for _, i := range cands {
		best := -1
		for b := range bins {
			if bins[b].closed || bins[b].arch != "" && bins[b].arch != arch[i] {
				continue
			}
			if best < 0 || bins[b].job.size < bins[best].job.size {
				best = b
			}
		}
		if best < 0 && !slices.ContainsFunc(bins, func(b bin) bool { return !b.closed }) {
			bins = append(bins, bin{}) // every bin holds a long text: one more
			best = len(bins) - 1
		}
		if best < 0 {
			continue // every open bin holds another architecture: alone
		}
		bins[best].arch = arch[i]
		bins[best].job.texts = append(bins[best].job.texts, i)
		bins[best].job.size += len(todo[i])
		bins[best].closed = len(todo[i]) >= alone
	}
	var jobs []loadJob
	in := map[int]bool{}
	for _, b := range bins {
		if len(b.job.texts) < 2 {
			continue
		}
		jobs = append(jobs, b.job)
		for _, i := range b.job.texts {
			in[i] = true
		}
	}
	return jobs, in
}

// ptxEntryRE finds a PTX text's kernel name.
var ptxEntryRE = regexp.MustCompile(`\.entry\s+([A-Za-z_$%][A-Za-z0-9_$]*)`)

// loadBin assembles texts (a bin of ptxasBins) with one ptxas process and
// loads the cubin once, and returns a module for each text, which finds
// the text's kernel in the shared module. It reports false, having
// logged why under TopicPerfHints, when the texts should compile one by
// one instead. Each module's LoadStats are the bin's wall time and a
// share of its CPU time by size.
func (r *ptxasRun) loadBin(dev device, texts []string) ([]module, bool) {
	if r.path == "" {
		return nil, false
	}
	r.once.Do(func() { r.dir, r.err = os.MkdirTemp("", "strata-ptxas-") })
	if r.err != nil {
		logs.Printf(TopicPerfHints, "load policy ptxas: %v (the driver compiles)", r.err)
		return nil, false
	}
	// Every text of a bin names its kernel the same (sharedKernelName):
	// each is renamed apart for the one module.
	named := make([]string, len(texts))
	from := make([]string, len(texts))
	total := 0
	for k, text := range texts {
		m := ptxEntryRE.FindStringSubmatch(text)
		if m == nil {
			return nil, false
		}
		to := fmt.Sprintf("strata_bin_kernel_%d", k)
		t, ok := cuda.RenameKernel(text, m[1], to)
		if !ok {
			return nil, false
		}
		named[k], from[k] = t, m[1]
		total += len(text)
	}
	start := time.Now()
	cubin, cpu, err := runPTXASFiles(r.path, r.dir, int(r.n.Add(1)), named)
	if err != nil {
		logs.Printf(TopicPerfHints, "compiling %d kernels with one ptxas: %v (each compiles alone)", len(texts), err)
		return nil, false
	}
	m, err := dev.loadImage(cubin)
	if err != nil {
		logs.Printf(TopicPerfHints, "the driver refused a cubin of %d kernels from ptxas: %v (each compiles alone)", len(texts), err)
		return nil, false
	}
	// Every kernel must be in the one cubin (a ptxas that took only some
	// of its inputs would leave the others out).
	for k := range texts {
		if _, err := m.function(fmt.Sprintf("strata_bin_kernel_%d", k)); err != nil {
			logs.Printf(TopicPerfHints, "a cubin of %d kernels from ptxas lacks one: %v (each compiles alone)", len(texts), err)
			_ = m.unload()
			return nil, false
		}
	}
	wall := time.Since(start)
	shared := &sharedModule{m: m}
	mods := make([]module, len(texts))
	for k, text := range texts {
		share := time.Duration(float64(cpu) * float64(len(text)) / float64(total))
		mods[k] = binModule{shared: shared, from: from[k], to: fmt.Sprintf("strata_bin_kernel_%d", k),
			stats: cuda.LoadStats{At: start, Wall: wall, JIT: share}}
	}
	return mods, true
}

// sharedModule is a loaded module that several texts' modules share
// (binModule): it unloads once.
type sharedModule struct {
	m    module
	once sync.Once
	err  error
}

func (s *sharedModule) unload() error {
	s.once.Do(func() { s.err = s.m.unload() })
	return s.err
}

// binModule is one text's module within a module ptxas compiled from a
// bin of texts: its kernel from is the shared module's kernel to.
type binModule struct {
	shared   *sharedModule
	from, to string
	stats    cuda.LoadStats
}

func (m binModule) function(name string) (kernel, error) {
	if name == m.from {
		name = m.to
	}
	return m.shared.m.function(name)
}

func (m binModule) unload() error { return m.shared.unload() }

// LoadStats are the bin's wall time and this text's share of its CPU.
func (m binModule) LoadStats() cuda.LoadStats { return m.stats }
