package frontend

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/targets/nvptx"
)

// OptionValidator is implemented by backends that check their
// BackendOptions when Compile is called, so that a misspelt option or a
// bad value is an error of Compile rather than of the first call.
type OptionValidator interface {
	ValidateOptions(opts map[string]any) error
}

// validateBackendOptions checks opts.BackendOptions with the backend.
func validateBackendOptions(be backendEntry, opts Options) error {
	v, ok := be.b.(OptionValidator)
	if !ok || len(opts.BackendOptions) == 0 {
		return nil
	}
	if err := v.ValidateOptions(opts.BackendOptions); err != nil {
		return fmt.Errorf("frontend: backend %s: %w", be.name, err)
	}
	return nil
}

// ValidateOptions implements OptionValidator: the one option, pipeline,
// must be a pass pipeline that parses.
func (b interpBackend) ValidateOptions(opts map[string]any) error {
	for k, v := range opts {
		if k != "pipeline" {
			return fmt.Errorf("backend has no option %q (it takes: pipeline)", k)
		}
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("backend option pipeline must be a string, got %T", v)
		}
		if s == "" {
			continue
		}
		if _, err := passes.Parse(s); err != nil {
			return fmt.Errorf("backend option pipeline: %w", err)
		}
	}
	return nil
}

// ValidateOptions implements OptionValidator: ptx_backend (native or
// llc) and ptx_target (a PTX target).
func (nvptxBackend) ValidateOptions(opts map[string]any) error {
	for k, v := range opts {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("backend option %s must be a string, got %T", k, v)
		}
		switch k {
		case "ptx_backend":
			if s != "native" && s != "llc" && s != "" {
				return fmt.Errorf("backend option ptx_backend %q: want native or llc", s)
			}
		case "ptx_target":
			if !slices.Contains(nvptx.Targets, s) && !slices.Contains(nvptx.ArchTargets, s) {
				return fmt.Errorf("backend option ptx_target %q: want one of %s", s, ptxTargets())
			}
		default:
			return fmt.Errorf("backend has no option %q (it takes: ptx_backend, ptx_target)", k)
		}
	}
	return nil
}

// ValidateOptions implements OptionValidator as nvptx does.
func (defaultGPUBackend) ValidateOptions(opts map[string]any) error {
	return nvptxBackend{}.ValidateOptions(opts)
}

// disabledAll is set by DisableAll.
var disabledAll atomic.Bool

// Disable makes c run its function as plain Go code, op by op, without
// recording or compiling graphs (torch.compiler.disable for one
// function); Enable undoes it. The compiled graphs are kept.
func (c *Compiled) Disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disabled = true
}

// Enable undoes Disable.
func (c *Compiled) Enable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disabled = false
}

// DisableAll makes every compiled function run as plain Go code (on
// true) or compile again (on false), as a process-wide switch for
// debugging a suspected compiler bug.
func DisableAll(disable bool) { disabledAll.Store(disable) }

// Reset forgets everything c compiled and learned (torch._dynamo.reset
// for one function): its graphs, guards, recompile counts, dynamic dims,
// counters and first-call times. The next call compiles afresh.
func (c *Compiled) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache = map[string][]*cached{}
	c.latest = map[int]*cached{}
	c.compiles = map[int]int{}
	c.dyn, c.lastShapes = nil, nil
	c.stats = Stats{}
	c.times, c.last = nil, nil
	c.resetReplay()
}
