package exec

import (
	"errors"
	"fmt"
	"slices"

	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// Time launches the plan warmup times, then iters times between two CUDA
// events each, and returns the median time of one launch in milliseconds.
// The inputs are already on the device, so only the plan's kernels (and
// its allocations, served from the allocator's cache after the warm-up)
// are measured.
func (b *Bound) Time(warmup, iters int) (float64, error) {
	dev := b.rt.cuda
	if dev == nil {
		return 0, errors.New("exec: timing needs a CUDA device")
	}
	if iters < 1 {
		return 0, fmt.Errorf("exec: timing needs at least one iteration, got %d", iters)
	}
	for range warmup {
		if err := b.Launch(); err != nil {
			return 0, err
		}
	}
	start, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	end, err := dev.NewEvent()
	if err != nil {
		return 0, err
	}
	defer end.Destroy()
	times := make([]float64, iters)
	for i := range times {
		if err := start.Record(b.stream()); err != nil {
			return 0, err
		}
		if err := b.Launch(); err != nil {
			return 0, err
		}
		if err := end.Record(b.stream()); err != nil {
			return 0, err
		}
		if err := end.Synchronize(); err != nil {
			return 0, err
		}
		ms, err := cuda.Elapsed(start, end)
		if err != nil {
			return 0, err
		}
		times[i] = float64(ms)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// RunTimed prepares host function fn on args, times it (see Bound.Time)
// and frees it: the median milliseconds of one launch.
func (p *Program) RunTimed(rt *Runtime, fn string, args []interp.Value, warmup, iters int) (float64, error) {
	b, err := p.Prepare(rt, fn, args)
	if err != nil {
		return 0, err
	}
	defer b.Free()
	return b.Time(warmup, iters)
}
