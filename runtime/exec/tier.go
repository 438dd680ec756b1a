package exec

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Tiered compilation (LoadPolicy.Tier): a kernel's first compile is at a
// low JIT level, whose code the program runs at once; the same text is
// compiled again at the final level in the background and swapped in.
// The driver's JIT spends most of a small kernel's compile on
// optimization (bench/NOTES.md, session 5, H2), and a first call waits
// for every kernel it launches.
//
// The PTX fixes every rounding (add.rn, mul.rn, no contraction), so both
// tiers compute the same values; only their speed differs.

// tieredModule is a loaded text whose code may still be replaced: cur is
// what launches use, first the first tier's module, then the final
// one's. The kernels handed out follow cur.
type tieredModule struct {
	mu      sync.Mutex
	first   module // the first tier's module, for LoadStats
	cur     module
	old     []module // replaced modules, unloaded with the Runtime
	kernels map[string]*tieredKernel
	done    chan struct{} // closed when the upgrade has ended
	err     error         // why the upgrade failed; the first tier stays
}

// tieredKernel is a kernel of a tieredModule; launches resolve it to the
// module's current code (current).
type tieredKernel struct {
	name string
	mod  *tieredModule
	cur  atomic.Pointer[kernelRef]
}

// kernelRef boxes a kernel for atomic.Pointer.
type kernelRef struct{ k kernel }

func newTieredModule(m module) *tieredModule {
	return &tieredModule{first: m, cur: m, kernels: map[string]*tieredKernel{}, done: make(chan struct{})}
}

// function returns the kernel name of the module, one tieredKernel per
// name, resolved in the current code.
func (t *tieredModule) function(name string) (kernel, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if k, ok := t.kernels[name]; ok {
		return k, nil
	}
	inner, err := t.cur.function(name)
	if err != nil {
		return nil, err
	}
	k := &tieredKernel{name: name, mod: t}
	k.cur.Store(&kernelRef{inner})
	t.kernels[name] = k
	return k, nil
}

// upgrade replaces the module's code by m, the final tier: every kernel
// handed out is looked up in m first, and nothing changes when one is
// missing (then m is unloaded and the error kept).
func (t *tieredModule) upgrade(m module) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	next := make(map[*tieredKernel]kernel, len(t.kernels))
	for name, k := range t.kernels {
		inner, err := m.function(name)
		if err != nil {
			m.unload()
			return err
		}
		next[k] = inner
	}
	for k, inner := range next {
		k.cur.Store(&kernelRef{inner})
	}
	// Launches queued with the old code may still run: the old module
	// stays loaded until the Runtime unloads this one.
	t.old = append(t.old, t.cur)
	t.cur = m
	return nil
}

// finish records how the upgrade ended and releases its waiters.
func (t *tieredModule) finish(err error) {
	t.mu.Lock()
	t.err = err
	t.mu.Unlock()
	close(t.done)
}

// wait blocks until the upgrade has ended.
func (t *tieredModule) wait() { <-t.done }

// upgraded reports whether the module runs the final tier's code.
func (t *tieredModule) upgraded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur != t.first
}

// unload waits for the upgrade (which may still load a module) and
// unloads every module the text had.
func (t *tieredModule) unload() error {
	t.wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	var first error
	for _, m := range append(t.old, t.cur) {
		if err := m.unload(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// LoadStats are the first tier's: what the program waited for.
func (t *tieredModule) LoadStats() cuda.LoadStats {
	if s, ok := t.first.(interface{ LoadStats() cuda.LoadStats }); ok {
		return s.LoadStats()
	}
	return cuda.LoadStats{}
}

// Name returns the kernel's name.
func (k *tieredKernel) Name() string { return k.name }

// current returns the code launches of k use now.
func (k *tieredKernel) current() kernel { return k.cur.Load().k }

// resolve returns the kernel a launch of k runs: k itself, or a tiered
// kernel's current code.
func resolve(k kernel) kernel {
	if t, ok := k.(*tieredKernel); ok {
		return t.current()
	}
	return k
}

// settle waits until every kernel of the Bound runs its final tier's
// code (or its upgrade failed), so that timings and CUDA graphs use it.
func (b *Bound) settle() {
	for _, k := range b.kernels {
		if t, ok := k.(*tieredKernel); ok {
			t.mod.wait()
		}
	}
}

// upgradeAll compiles each text of mods again with final, at most
// parallel at once, and swaps the code in; it returns at once. A failed
// upgrade leaves the first tier running and is logged under
// STRATA_LOGS=perf_hints.
func (rt *Runtime) upgradeAll(texts []string, mods []*tieredModule, final cuda.JITOptions, parallel int) {
	if len(mods) == 0 {
		return
	}
	sem := make(chan struct{}, max(parallel, 1))
	for i, t := range mods {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// At the lowest priority: the batches of other graphs' first
			// tiers (cnn_small_train's forward pass, while its backward
			// pass's final tier compiles), and the first runs, come first.
			inBackground()
			m, err := rt.dev.load(texts[i], final, true)
			if err == nil {
				err = t.upgrade(m)
			}
			if err != nil {
				err = fmt.Errorf("exec: compiling a kernel at the final JIT level: %w (it keeps its first-tier code)", err)
				logs.Printf(TopicPerfHints, "%v", err)
			}
			t.finish(err)
		}()
	}
}

// Settle waits until every kernel loaded so far runs its final tier's
// code (LoadPolicy.Tier), and returns the first upgrade that failed (the
// kernel then keeps running its first tier's code, which is correct but
// slower). It waits for the libraries' warm-ups in progress too
// (WarmLibraries, WarmLibraryCalls), whose timing runs would otherwise
// share the device with what the caller times next.
func (rt *Runtime) Settle() error {
	rt.libs.warm.Wait()
	rt.mu.Lock()
	var tiered []*tieredModule
	for _, m := range rt.modules {
		if t, ok := m.(*tieredModule); ok {
			tiered = append(tiered, t)
		}
	}
	rt.mu.Unlock()
	var first error
	for _, t := range tiered {
		t.wait()
		t.mu.Lock()
		if t.err != nil && first == nil {
			first = t.err
		}
		t.mu.Unlock()
	}
	return first
}
