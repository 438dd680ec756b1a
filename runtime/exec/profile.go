package exec

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
)

// ProfileEntry is the device time of one host op of a launch plan (a
// kernel launch or a library call) summed over the launches a profile saw.
type ProfileEntry struct {
	// Func is the host function whose plan the op belongs to.
	Func string
	// Label names the op: the kernel and its mapping for a launch, the
	// direction and operand types for a library call, "cuda graph" for a
	// whole replayed graph.
	Label string
	// Kind groups ops for a summary: "kernel (MAPPING)" for a launch,
	// "library_conv2d DIRECTION", "library_matmul" or "cuda graph"; "idle"
	// for the time between a launch's first op and its last when none of
	// its ops ran (the device waited for the host to queue the next one),
	// one entry a plan, one call a launch.
	Kind string
	// Bytes is the size of the memref operands the op reads or writes
	// (each counted once); Bytes / Ms is a lower bound of the bandwidth
	// the op used. Zero for a graph.
	Bytes int64
	// Calls counts the timed launches of the op.
	Calls int
	// Ms is the total device time of those launches, in milliseconds.
	Ms float64
}

// profileStep is one timed op of one launch: its event pair.
type profileStep struct {
	key        profileKey
	start, end *cuda.Event
}

// profileKey identifies an op of a plan (index -1: a graph replay).
type profileKey struct {
	plan  *plan
	index int
}

// profiler collects the event pairs of the launches while a profile is
// on (Runtime.StartProfile).
type profiler struct {
	mu    sync.Mutex
	steps []profileStep
	free  []*cuda.Event
	// launches holds, for each profiled plan launch, the indices in
	// steps of its ops, in order (idleKey).
	launches []profiledLaunch
}

// profiledLaunch is one launch of a plan under a profile: its ops' steps.
type profiledLaunch struct {
	plan  *plan
	steps []int
}

// IdleKind is ProfileEntry.Kind of a plan's idle time between its ops.
const IdleKind = "idle"

// idleIndex is the profileKey index of a plan's idle time: from the start
// of a launch's first op to the end of its last, the time no op of the
// launch ran (the device waited for the host to queue the next one).
const idleIndex = -2

// launchAttr is the kernel attribute that records how convert-loop-to-gpu
// mapped the kernel's nest (togpu.LaunchAttr; exec does not import the
// passes).
const launchAttr = "strata.launch"

// deviceOps are the host ops that queue device work: the only ones a
// profile times.
var deviceOps = map[string]bool{
	gpu.LaunchFuncOp:    true,
	gpu.LibraryMatmulOp: true,
	gpu.LibraryConv2DOp: true,
}

// StartProfile makes every later launch of a plan on rt record a pair of
// CUDA events around each kernel launch and library call (around the
// whole replay for a captured CUDA graph), until StopProfile returns their
// times and each plan's idle time between them. A step's time runs from
// the moment the stream reaches its first event to its end: when the host
// queues more slowly than the device runs, it includes the host's work
// between the two (the launch itself, a library's own setup), and the
// device idles between steps while the host runs the plan's host ops. Profiling adds two event records to
// every launch; time the plan without it.
func (rt *Runtime) StartProfile() error {
	if rt.cuda == nil {
		return errors.New("exec: profiling needs a CUDA device")
	}
	if !rt.prof.CompareAndSwap(nil, &profiler{}) {
		return errors.New("exec: a profile is already running")
	}
	return nil
}

// StopProfile waits for the device, ends the profile StartProfile began
// and returns its ops, longest total time first.
func (rt *Runtime) StopProfile() ([]ProfileEntry, error) {
	p := rt.prof.Swap(nil)
	if p == nil {
		return nil, errors.New("exec: no profile is running")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer func() {
		for _, s := range p.steps {
			p.free = append(p.free, s.start, s.end)
		}
		for _, e := range p.free {
			_ = e.Destroy()
		}
	}()
	if err := rt.dev.Synchronize(); err != nil {
		return nil, fmt.Errorf("exec: profile: %w", err)
	}
	byKey := map[profileKey]*ProfileEntry{}
	var out []*ProfileEntry
	entry := func(key profileKey) *ProfileEntry {
		e := byKey[key]
		if e == nil {
			e = &ProfileEntry{Func: key.plan.name, Label: "cuda graph", Kind: "cuda graph"}
			switch {
			case key.index == idleIndex:
				e.Label, e.Kind = "idle between ops (waiting for the host)", IdleKind
			case key.index >= 0:
				op := key.plan.fn.Region(0).Front().Ops()[key.index]
				e.Label, e.Kind = profileLabel(op)
				e.Bytes = operandBytes(op)
			}
			byKey[key] = e
			out = append(out, e)
		}
		return e
	}
	times := make([]float64, len(p.steps))
	for i, s := range p.steps {
		ms, err := cuda.Elapsed(s.start, s.end)
		if err != nil {
			return nil, fmt.Errorf("exec: profile of @%s: %w", s.key.plan.name, err)
		}
		times[i] = float64(ms)
		e := entry(s.key)
		e.Calls++
		e.Ms += times[i]
	}
	for _, l := range p.launches {
		if len(l.steps) < 2 {
			continue
		}
		first, last := p.steps[l.steps[0]], p.steps[l.steps[len(l.steps)-1]]
		span, err := cuda.Elapsed(first.start, last.end)
		if err != nil {
			return nil, fmt.Errorf("exec: profile of @%s: %w", l.plan.name, err)
		}
		busy := 0.0
		for _, i := range l.steps {
			busy += times[i]
		}
		e := entry(profileKey{l.plan, idleIndex})
		e.Calls++
		e.Ms += max(float64(span)-busy, 0)
	}
	entries := make([]ProfileEntry, len(out))
	for i, e := range out {
		entries[i] = *e
	}
	slices.SortStableFunc(entries, func(a, b ProfileEntry) int { return cmp.Compare(b.Ms, a.Ms) })
	return entries, nil
}

// Profile launches the plan once at its final JIT tier (the allocator's
// cache warm), then n times under a device profile of its own
// (Runtime.StartProfile), and returns the profile's entries: each op's
// device time summed over the n launches. It fails when another profile
// is running on the runtime.
func (b *Bound) Profile(n int) ([]ProfileEntry, error) {
	if n < 1 {
		return nil, fmt.Errorf("exec: a profile needs at least one launch, got %d", n)
	}
	b.settle()
	if err := b.Launch(); err != nil {
		return nil, err
	}
	if err := b.rt.StartProfile(); err != nil {
		return nil, err
	}
	for range n {
		if err := b.Launch(); err != nil {
			_, _ = b.rt.StopProfile()
			return nil, err
		}
	}
	return b.rt.StopProfile()
}

// event returns an event of the pool, or a new one.
func (p *profiler) event(dev *cuda.Device) (*cuda.Event, error) {
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		return e, nil
	}
	return dev.NewEvent()
}

// timed runs step between a pair of events recorded on r's stream, and
// keeps the pair under key.
func (p *profiler) timed(dev *cuda.Device, key profileKey, r *runState, step func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	start, err := p.event(dev)
	if err != nil {
		return err
	}
	end, err := p.event(dev)
	if err != nil {
		p.free = append(p.free, start)
		return err
	}
	p.steps = append(p.steps, profileStep{key: key, start: start, end: end})
	if key.index >= 0 && len(p.launches) > 0 {
		if l := &p.launches[len(p.launches)-1]; l.plan == key.plan {
			l.steps = append(l.steps, len(p.steps)-1)
		}
	}
	if err := start.Record(r.stream); err != nil {
		return err
	}
	if err := step(); err != nil {
		return err
	}
	return end.Record(r.stream)
}

// runProfiled runs the steps of b's plan as Launch does, timing those
// that queue device work.
func (b *Bound) runProfiled(p *profiler, r *runState) error {
	p.mu.Lock()
	p.launches = append(p.launches, profiledLaunch{plan: b.plan})
	p.mu.Unlock()
	ops := b.plan.fn.Region(0).Front().Ops()
	for i, step := range b.plan.steps {
		if !deviceOps[ops[i].Name()] {
			if err := step(r); err != nil {
				return err
			}
			continue
		}
		if err := p.timed(b.rt.cuda, profileKey{b.plan, i}, r, func() error { return step(r) }); err != nil {
			return err
		}
	}
	return nil
}

// profileLabel names a device op of a plan for a profile, and its kind
// (ProfileEntry): a launch by its kernel and the kernel's mapping, a
// library call by what it computes on which operand types.
func profileLabel(op *ir.Operation) (label, kind string) {
	switch op.Name() {
	case gpu.LaunchFuncOp:
		name, mapping := "launch", "?"
		if l, ok := gpu.LaunchOf(op); ok && len(l.Kernel.Nested) > 0 {
			name = "@" + l.Kernel.Nested[len(l.Kernel.Nested)-1]
		}
		if k := gpu.LookupKernel(op); k != nil {
			if m, ok := k.Attr(launchAttr).(ir.DictAttr); ok {
				if s, ok := m.Get("mapping").(ir.StringAttr); ok {
					mapping = s.Value
				}
			}
		}
		return fmt.Sprintf("%s (%s)", name, mapping), fmt.Sprintf("kernel (%s)", mapping)
	case gpu.LibraryMatmulOp:
		ta, tb := gpu.LibraryTransposes(op)
		t := map[bool]string{true: "ᵀ"}
		epi := ""
		if gpu.LibraryBias(op) != nil {
			epi = " + bias"
		}
		return fmt.Sprintf("library_matmul %s%s × %s%s%s", op.Operand(0).Type(), t[ta], op.Operand(1).Type(), t[tb], epi), "library_matmul"
	case gpu.LibraryConv2DOp:
		g, _ := gpu.LibraryConvGeometry(op) // verified
		var types []string
		for _, v := range op.Operands() {
			types = append(types, v.Type().String())
		}
		kind := "library_conv2d " + string(g.Direction)
		if g.ChannelsLast {
			kind += " " + gpu.ConvLayoutNHWC
		}
		return fmt.Sprintf("%s stride %d pad %d: %s", kind, g.Strides[0], g.Padding[0], strings.Join(types, ", ")), kind
	}
	return op.Name(), op.Name()
}

// operandBytes sums the sizes of op's distinct memref operands.
func operandBytes(op *ir.Operation) int64 {
	var n int64
	seen := map[*ir.Value]bool{}
	for _, v := range op.Operands() {
		mt, ok := v.Type().(*ir.MemRefType)
		if !ok || seen[v] {
			continue
		}
		seen[v] = true
		elems := int64(1)
		for _, d := range mt.Shape() {
			if d < 0 {
				elems = 0 // dynamic: unknown here
			}
			elems *= d
		}
		size, _ := elemSize(mt.ElementType())
		n += elems * int64(size)
	}
	return n
}

// FormatProfile writes a profile as two tables: the total time, share,
// calls and label of each kind of op (ProfileEntry.Kind, idle time
// included), then of the top n ops (all with n <= 0) with the bandwidth
// their operands' bytes give a lower bound of.
func FormatProfile(entries []ProfileEntry, n int) string {
	var total, idle float64
	ops := 0
	kinds := map[string]*ProfileEntry{}
	var byKind []*ProfileEntry
	for _, e := range entries {
		total += e.Ms
		if e.Kind == IdleKind {
			idle += e.Ms
		} else {
			ops++
		}
		k := kinds[e.Kind]
		if k == nil {
			k = &ProfileEntry{Label: e.Kind}
			kinds[e.Kind] = k
			byKind = append(byKind, k)
		}
		k.Calls += e.Calls
		k.Ms += e.Ms
	}
	slices.SortStableFunc(byKind, func(a, b *ProfileEntry) int { return cmp.Compare(b.Ms, a.Ms) })
	share := func(ms float64) float64 {
		if total == 0 {
			return 0
		}
		return 100 * ms / total
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%10s %6s %6s  %s\n", "ms", "%", "calls", "kind")
	for _, k := range byKind {
		fmt.Fprintf(&b, "%10.3f %6.2f %6d  %s\n", k.Ms, share(k.Ms), k.Calls, k.Label)
	}
	fmt.Fprintf(&b, "%10.3f total over %d ops", total, ops)
	if idle > 0 {
		fmt.Fprintf(&b, " (%.3f ms of it idle between them)", idle)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "%10s %6s %6s %9s  %s\n", "ms", "%", "calls", "GB/s≥", "op")
	for i, e := range entries {
		if n > 0 && i == n {
			fmt.Fprintf(&b, "(%d more ops)\n", len(entries)-n)
			break
		}
		bw := 0.0
		if e.Ms > 0 {
			bw = float64(e.Bytes) * float64(e.Calls) / (e.Ms * 1e6)
		}
		fmt.Fprintf(&b, "%10.3f %6.2f %6d %9.0f  @%s: %s\n", e.Ms, share(e.Ms), e.Calls, bw, e.Func, e.Label)
	}
	return b.String()
}
