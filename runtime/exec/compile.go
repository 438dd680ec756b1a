package exec

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// Options select how Compile generates PTX.
type Options struct {
	// PTXBackend is the targets/nvptx backend: "native" (default) or "llc".
	PTXBackend string
	// Target is the PTX target architecture, "sm_80" or "sm_90" (default).
	Target string
	// PTXVersion is the PTX ISA version; empty means nvptx's default.
	PTXVersion string
}

// CompileTimes are the durations of Compile's stages, summed over the
// gpu.modules of the program.
type CompileTimes struct {
	// LLVM is the translation of the kernels to LLVM IR.
	LLVM time.Duration
	// PTX is the PTX backend's code generation.
	PTX time.Duration
}

// Total returns the sum of the stages.
func (t CompileTimes) Total() time.Duration { return t.LLVM + t.PTX }

// String prints the stages.
func (t CompileTimes) String() string {
	return fmt.Sprintf("llvm %v, ptx %v (total %v)", t.LLVM, t.PTX, t.Total())
}

// Program is a compiled module: its launch plans (the host functions) and
// the PTX of each gpu.module. A Program may be run by several goroutines
// and on several Runtimes at once.
type Program struct {
	module *ir.Operation
	ptx    map[string]string
	times  CompileTimes

	mu    sync.Mutex
	plans map[string]*planResult
	split map[string]*moduleTexts // by gpu.module, made on first load
	pre   map[string]*precompiled // cubins from ptxas, by text (Precompile)
	// preReady are closed when each Precompile has registered its texts.
	preReady []chan struct{}
}

// planResult memoises building a host function's plan, errors included.
type planResult struct {
	plan *plan
	err  error
}

// Compile compiles every gpu.module of module (a builtin.module at the gpu
// level) to PTX and keeps module's host functions as launch plans. The
// module must not be changed afterwards.
func Compile(module *ir.Operation, opts Options) (*Program, error) {
	backend, err := nvptx.New(opts.PTXBackend)
	if err != nil {
		return nil, err
	}
	nopts := nvptx.Options{Target: opts.Target, PTXVersion: opts.PTXVersion}
	ptx := map[string]string{}
	var times CompileTimes
	for _, g := range llvm.GPUModules(module) {
		start := time.Now()
		m, err := llvm.Translate(g)
		times.LLVM += time.Since(start)
		if err != nil {
			return nil, err
		}
		start = time.Now()
		mopts, err := ModuleTarget(g, nopts)
		if err != nil {
			return nil, err
		}
		text, err := backend.Compile(m, mopts)
		times.PTX += time.Since(start)
		if err != nil {
			return nil, ir.Errorf(g.Loc(), "%s PTX backend: %v", backend.Name(), err)
		}
		ptx[ir.SymbolName(g)] = text
	}
	p, err := NewProgram(module, ptx)
	if err != nil {
		return nil, err
	}
	p.times = times
	return p, nil
}

// ModuleTarget returns the PTX options of gpu.module g: opts, unless g
// asks for an architecture-specific target (gpu.PTXTargetAttr, such as
// sm_90a for gpu.wgmma) that opts' target (empty, or its base such as
// sm_90) allows; then that target at its default ISA version unless
// opts names one.
func ModuleTarget(g *ir.Operation, opts nvptx.Options) (nvptx.Options, error) {
	attr, ok := g.Attr(gpu.PTXTargetAttr).(ir.StringAttr)
	want := attr.Value
	if !ok || want == opts.Target {
		return opts, nil
	}
	base := nvptx.DefaultTarget
	if opts.Target != "" {
		base = opts.Target
	}
	if !strings.HasPrefix(want, base) {
		return opts, ir.Errorf(g.Loc(), "gpu.module @%s needs the PTX target %s, which target %s cannot run", ir.SymbolName(g), want, base)
	}
	opts.Target = want
	if opts.PTXVersion == nvptx.DefaultPTXVersion {
		opts.PTXVersion = ""
	}
	return opts, nil
}

// NewProgram returns the Program of a module whose gpu.modules are already
// compiled: ptx maps each gpu.module's symbol name to its PTX text. It is
// how a compile-cache hit skips code generation.
func NewProgram(module *ir.Operation, ptx map[string]string) (*Program, error) {
	if module == nil {
		return nil, fmt.Errorf("exec: no module")
	}
	for _, g := range llvm.GPUModules(module) {
		if _, ok := ptx[ir.SymbolName(g)]; !ok {
			return nil, ir.Errorf(g.Loc(), "no PTX for gpu.module @%s", ir.SymbolName(g))
		}
	}
	return &Program{module: module, ptx: ptx, plans: map[string]*planResult{}}, nil
}

// Module returns the program's module: host functions and gpu.modules.
func (p *Program) Module() *ir.Operation { return p.module }

// PTX returns the PTX text of each gpu.module, by symbol name. The map
// must not be modified.
func (p *Program) PTX() map[string]string { return p.ptx }

// Times returns the durations of Compile's stages (zero for NewProgram).
func (p *Program) Times() CompileTimes { return p.times }

// Func returns the host function named name, or nil.
func (p *Program) Func(name string) *ir.Operation {
	if p.module.NumRegions() == 0 || p.module.Region(0).Front() == nil {
		return nil
	}
	for _, op := range p.module.Region(0).Front().Ops() {
		if op.Name() == funcs.OpFunc && ir.SymbolName(op) == name {
			return op
		}
	}
	return nil
}

// Check reports whether host function fn can run: that it exists and
// holds only host ops the executor supports, with their kernels compiled.
// Run and Prepare check too; Check lets a caller report such errors
// before it opens a device.
func (p *Program) Check(fn string) error {
	_, err := p.plan(fn)
	return err
}

// plan returns the plan of host function fn, building it on first use.
func (p *Program) plan(fn string) (*plan, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.plans[fn]; ok {
		return r.plan, r.err
	}
	r := &planResult{}
	if f := p.Func(fn); f == nil {
		r.err = fmt.Errorf("exec: no host function @%s", fn)
	} else {
		r.plan, r.err = buildPlan(p, f)
	}
	p.plans[fn] = r
	return r.plan, r.err
}

// kernelOf returns the gpu.module and kernel names of a launch and the
// kernel's gpu.func.
func kernelOf(launch *ir.Operation) (module, kernel string, fn *ir.Operation, err error) {
	l, ok := gpu.LaunchOf(launch)
	if !ok {
		return "", "", nil, ir.Errorf(launch.Loc(), "gpu.launch_func has malformed operand segments")
	}
	fn = gpu.LookupKernel(launch)
	if fn == nil || len(l.Kernel.Nested) != 1 {
		return "", "", nil, ir.Errorf(launch.Loc(), "gpu.launch_func: %s is not a gpu.func kernel of a gpu.module", l.Kernel)
	}
	return l.Kernel.Root, l.Kernel.Nested[0], fn, nil
}

// ModuleLoad is what loading one gpu.module of a program cost on a
// Runtime: the host clock around the load and the driver's own account of
// its PTX compiler (zero on a hit in the driver's ComputeCache, and on a
// Runtime not on CUDA). A gpu.module loaded as one driver module per
// kernel (LoadPolicy.Split) reports them together: At is the first one's
// start, Wall runs to the last one's end (the loads overlap), JIT is the
// sum of the driver's compile times (CPU time on several threads, so it
// may exceed Wall).
type ModuleLoad struct {
	// Module is the gpu.module's symbol name.
	Module string
	// Parts is the number of driver modules the gpu.module was loaded as
	// (kernels that are the same code share one).
	Parts int
	cuda.LoadStats
	// Each is each driver module's load (its PTX text's size in Bytes),
	// for the JIT time of the longest texts (STRATA_LOGS=compile).
	Each []PartLoad
}

// PartLoad is the load of one driver module of a gpu.module.
type PartLoad struct {
	Bytes int
	cuda.LoadStats
}

// Loads reports the loads of the gpu.modules whose kernels host function
// fn launches, in launch order, for the modules rt has loaded so far. A
// module is loaded once per Runtime and PTX text, by whichever program got
// there first (Load, Prepare, Run, a Runner or the autotuner), so a caller
// that wants one call's cost compares At with the call's start.
func (p *Program) Loads(rt *Runtime, fn string) ([]ModuleLoad, error) {
	pl, err := p.plan(fn)
	if err != nil {
		return nil, err
	}
	var out []ModuleLoad
	seen := map[string]bool{}
	for _, l := range pl.launches {
		if seen[l.module] {
			continue
		}
		seen[l.module] = true
		texts := p.texts(l.module)
		whole, _ := texts.wholeText()
		parts := []string{whole}
		if m, ok := rt.loaded(whole); !ok || m == nil {
			parts = parts[:0]
			distinct := map[string]bool{}
			for _, pc := range texts.byKernel {
				if !distinct[pc.text] {
					distinct[pc.text] = true
					parts = append(parts, pc.text)
				}
			}
		}
		ml := ModuleLoad{Module: l.module}
		var end time.Time
		for _, t := range parts {
			m, ok := rt.loaded(t)
			if !ok {
				continue
			}
			ml.Parts++
			s, ok := m.(interface{ LoadStats() cuda.LoadStats })
			if !ok {
				continue
			}
			st := s.LoadStats()
			ml.Each = append(ml.Each, PartLoad{Bytes: len(t), LoadStats: st})
			if ml.At.IsZero() || st.At.Before(ml.At) {
				ml.At = st.At
			}
			if e := st.At.Add(st.Wall); e.After(end) {
				end = e
			}
			ml.JIT += st.JIT
		}
		if ml.Parts == 0 {
			continue
		}
		if !ml.At.IsZero() {
			ml.Wall = end.Sub(ml.At)
		}
		out = append(out, ml)
	}
	return out, nil
}

// loaded returns the module rt loaded from a PTX text, if any.
func (rt *Runtime) loaded(text string) (module, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	m, ok := rt.modules[sha256.Sum256([]byte(text))]
	return m, ok
}
