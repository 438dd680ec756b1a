package frontend

import (
	"os"
	"slices"
	"weak"

	"github.com/strata-ir/strata/runtime/interp"
)

// This file is the speculative run of a cached call (docs/frontend-state.md).
//
// A replay runs fn again before the tape's executable can run: the
// inputs it collects are only known at the end. For a GPU executable the
// device then idles while the host replays (ResNet-50's forward pass:
// ~2000 ops, about 0.25 ms of host time before the first kernel). When
// the inputs fn collects after the arguments (captured tensors, cached
// constants) were the same tensors with the same elements on the last
// replay, and the tape updates nothing in place, the executable is
// queued first, on the arguments and those tensors, and the replay runs
// while the device works. The replay still decides: if fn matches the
// whole tape on the same inputs, the speculative results are the call's;
// if not (another path, another captured tensor), they are released, the
// call goes on as without speculation, and the tape never speculates
// again. Nothing is written in place by the executable, so a discarded
// run has no effect but the device time it took.

// speculationOff turns speculation off (STRATA_SPECULATE=off): every
// replay runs its executable at its end, for an A/B of the host time it
// hides.
var speculationOff = os.Getenv("STRATA_SPECULATE") == "off"

// speculation is a tape's executable queued when its replay began.
type speculation struct {
	tp     *tape
	inputs []tensorData // the leaves', then the lifted tensors' data
	res    []tensorData
}

// weakData refers to a tensor's data without keeping it alive: a tape
// remembers what its last replay lifted without holding on to tensors fn
// has dropped since.
type weakData struct {
	host weak.Pointer[interp.Tensor]
	dev  weak.Pointer[devData]
}

// makeWeak returns weak references to ds.
func makeWeak(ds []tensorData) []weakData {
	out := make([]weakData, len(ds))
	for i, d := range ds {
		if d.host != nil {
			out[i].host = weak.Make(d.host)
		}
		if d.dev != nil {
			out[i].dev = weak.Make(d.dev)
		}
	}
	return out
}

// strong returns the data ws refer to, or false when some of it is gone.
func strong(ws []weakData) ([]tensorData, bool) {
	out := make([]tensorData, len(ws))
	for i, w := range ws {
		d := tensorData{host: w.host.Value(), dev: w.dev.Value()}
		if d.host == nil && d.dev == nil {
			return nil, false
		}
		out[i] = d
	}
	return out, true
}

// speculable reports whether a replay of tp may run its executable
// before fn has matched the tape: a static tape of one graph that
// updates nothing in place, whose executable runs on the GPU (queued, so
// that the host replays while the device works).
func (tp *tape) speculable() bool {
	if speculationOff || tp.noSpec || tp.dynamic || tp.specialized || tp.train != nil || tp.lifted == nil {
		return false
	}
	if _, ok := tp.exe.(DeviceExecutable); !ok {
		return false
	}
	for i := range tp.steps {
		if tp.steps[i].kind == stepAssign {
			return false
		}
	}
	return true
}

// speculate queues the executable of the tape a replay just began on,
// on the call's arguments and the tensors the tape's last replay lifted,
// when the tape allows it (speculable) and none of those is donated.
func (s *session) speculate() {
	rp := s.rp
	tp := rp.tp
	if !tp.speculable() {
		return
	}
	lifted, ok := strong(*tp.lifted)
	if !ok {
		tp.stopSpeculating()
		return
	}
	inputs := append(slices.Clone(rp.vals), lifted...)
	for _, d := range inputs {
		if d.dev != nil && d.dev.donor != nil {
			return // a donated input may be taken over: only the matched call runs
		}
	}
	res, err := runExecutable(tp.exe, inputs)
	if err != nil {
		// The call's own run reports it, if fn matches the tape.
		tp.stopSpeculating()
		return
	}
	rp.spec = &speculation{tp: tp, inputs: inputs, res: res}
}

// stopSpeculating makes tp's replays run its executable at their end.
func (tp *tape) stopSpeculating() {
	tp.noSpec = true
	tp.lifted = nil
}

// takeSpeculation returns the results of the replay's speculative run
// when it ran the tape fn matched on the inputs fn collected, and drops
// it otherwise.
func (rp *replay) takeSpeculation() ([]tensorData, bool) {
	sp := rp.spec
	if sp == nil {
		return nil, false
	}
	if sp.tp != rp.tp || len(sp.inputs) != len(rp.inputs) || !slices.Equal(sp.inputs, rp.inputs) {
		rp.dropSpeculation()
		return nil, false
	}
	rp.spec = nil
	rp.c.stats.Speculated++
	return sp.res, true
}

// dropSpeculation releases the results of the replay's speculative run,
// if any, and stops its tape from speculating again.
func (rp *replay) dropSpeculation() {
	sp := rp.spec
	if sp == nil {
		return
	}
	rp.spec = nil
	rp.c.stats.Dropped++
	sp.tp.stopSpeculating()
	for _, r := range sp.res {
		if r.dev == nil || slices.ContainsFunc(sp.inputs, func(d tensorData) bool { return d.dev != nil && d.dev.arr == r.dev.arr }) {
			continue
		}
		_ = r.dev.arr.Release() // no tensor holds it: nothing else can fail
	}
}

// rememberLifted records, after a replay ran tp's executable on inputs,
// the data of what it lifted after its nleaves leaves, for the next
// replay's speculation.
func (tp *tape) rememberLifted(inputs []tensorData, nleaves int) {
	if tp.noSpec {
		return
	}
	w := makeWeak(inputs[nleaves:])
	tp.lifted = &w
}
