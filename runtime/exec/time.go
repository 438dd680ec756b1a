package exec

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// flushBytes is the buffer Time clears before each timed launch: larger
// than the L2 cache of any current GPU (H200: 60 MiB), and the size
// triton.testing.do_bench clears, so both sides of a benchmark start every
// launch from a cold cache.
const flushBytes = 256 << 20

// Time launches the plan warmup times, then iters times between two CUDA
// events each, and returns the median time of one launch in milliseconds.
//
// The method is triton.testing.do_bench's, which times the PyTorch side of
// the benchmarks: before each timed launch the stream clears a 256 MiB
// buffer (so the L2 cache is cold), and the host does not wait between
// launches, so the host-side cost of one launch overlaps the clearing
// before it and the events see the device time. The inputs are already on
// the device; the plan's allocations are served from the allocator's
// cache after the warm-up.
func (b *Bound) Time(warmup, iters int) (float64, error) {
	if iters < 1 {
		return 0, fmt.Errorf("exec: timing needs at least one iteration, got %d", iters)
	}
	dev, flush, err := b.timing()
	if err != nil {
		return 0, err
	}
	defer dev.Free(flush)
	for range warmup {
		if err := b.Launch(); err != nil {
			return 0, err
		}
	}
	events := make([]*cuda.Event, 0, 2*iters)
	defer func() {
		for _, e := range events {
			e.Destroy()
		}
	}()
	for range 2 * iters {
		e, err := dev.NewEvent()
		if err != nil {
			return 0, err
		}
		events = append(events, e)
	}
	s := b.stream()
	for i := range iters {
		if err := dev.MemsetD32(flush, 0, flushBytes/4, s); err != nil {
			return 0, err
		}
		if err := events[2*i].Record(s); err != nil {
			return 0, err
		}
		if err := b.Launch(); err != nil {
			return 0, err
		}
		if err := events[2*i+1].Record(s); err != nil {
			return 0, err
		}
	}
	if err := events[len(events)-1].Synchronize(); err != nil {
		return 0, err
	}
	times := make([]float64, iters)
	for i := range times {
		ms, err := cuda.Elapsed(events[2*i], events[2*i+1])
		if err != nil {
			return 0, err
		}
		times[i] = float64(ms)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// Estimate clears the cache and launches the plan n times back to back
// between two CUDA events, and returns the mean milliseconds of one clear
// and launch: triton.testing.do_bench's estimate (n = 5), from which it
// derives how many launches warm up and how many it times. A benchmark
// that sets its counts from this, not from Time's kernel-only median,
// times as many launches as do_bench on the other side.
func (b *Bound) Estimate(n int) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("exec: an estimate needs at least one launch, got %d", n)
	}
	dev, flush, err := b.timing()
	if err != nil {
		return 0, err
	}
	defer dev.Free(flush)
	var events [2]*cuda.Event
	for i := range events {
		if events[i], err = dev.NewEvent(); err != nil {
			return 0, err
		}
		defer events[i].Destroy()
	}
	s := b.stream()
	if err := events[0].Record(s); err != nil {
		return 0, err
	}
	for range n {
		if err := dev.MemsetD32(flush, 0, flushBytes/4, s); err != nil {
			return 0, err
		}
		if err := b.Launch(); err != nil {
			return 0, err
		}
	}
	if err := events[1].Record(s); err != nil {
		return 0, err
	}
	if err := events[1].Synchronize(); err != nil {
		return 0, err
	}
	ms, err := cuda.Elapsed(events[0], events[1])
	if err != nil {
		return 0, err
	}
	return float64(ms) / float64(n), nil
}

// timing readies b to be timed: its final tier's code (not the first's)
// and a cache-flush buffer the caller frees.
func (b *Bound) timing() (*cuda.Device, cuda.DevicePtr, error) {
	dev := b.rt.cuda
	if dev == nil {
		return nil, 0, errors.New("exec: timing needs a CUDA device")
	}
	b.settle()
	flush, err := dev.Alloc(flushBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("exec: timing: cache-flush buffer: %w", err)
	}
	return dev, flush, nil
}

// WallTime launches the plan iters times back to back, waits once, and
// returns the host clock's milliseconds per launch. Without the cache
// clearing and the events of Time, it is the rate a caller issuing calls
// in a loop sees: the device time of a call, or the host's cost of issuing
// one when that is larger (a launch-bound program).
func (b *Bound) WallTime(iters int) (float64, error) {
	if iters < 1 {
		return 0, fmt.Errorf("exec: timing needs at least one iteration, got %d", iters)
	}
	// The final tier's code, not the first's.
	b.settle()
	if err := b.Launch(); err != nil { // the allocator's cache warm, the device busy
		return 0, err
	}
	if err := b.Wait(); err != nil {
		return 0, err
	}
	start := time.Now()
	for range iters {
		if err := b.Launch(); err != nil {
			return 0, err
		}
	}
	if err := b.Wait(); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Nanoseconds()) / 1e6 / float64(iters), nil
}

// RunTimed prepares host function fn on args, times it (see Bound.Time)
// and frees it: the median milliseconds of one launch. Its kernels load
// at the final JIT level at once (no tiers: the timing would wait for
// that level anyway), as max-autotune's candidates do.
func (p *Program) RunTimed(rt *Runtime, fn string, args []interp.Value, warmup, iters int) (float64, error) {
	pl, err := p.plan(fn)
	if err != nil {
		return 0, err
	}
	b, err := p.prepare(rt, pl, args, false, false)
	if err != nil {
		return 0, err
	}
	defer b.Free()
	return b.Time(warmup, iters)
}
