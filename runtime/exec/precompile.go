package exec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
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
	m := ptxTargetRE.FindStringSubmatch(text)
	if m == nil {
		return nil, 0, fmt.Errorf("no .target in the PTX")
	}
	in := filepath.Join(dir, fmt.Sprintf("k%d.ptx", i))
	out := filepath.Join(dir, fmt.Sprintf("k%d.cubin", i))
	if err := os.WriteFile(in, []byte(text), 0o644); err != nil {
		return nil, 0, err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, "-arch="+m[1], "-o", out, in)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
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
