package exec

import (
	"errors"
	"runtime"
	"time"

	"github.com/strata-ir/strata/runtime/cuda"
)

// An Array's memory returns to the caching allocator when the Array is
// released or when the garbage collector finds it unreachable. The
// collector paces itself by the host heap, which device results hardly
// grow: a loop that replaces its device tensors every call (a decoding
// step's new KV caches, a prefill's logits) would fill the device, each
// allocation a new cuMemAlloc, long before a collection ran (GPT-2's
// batch-8 decoding ran out of 140 GB at step 98). So the Runtime starts a
// collection in the background after every gcEveryBytes it hands out,
// and an allocation that does not fit collects and waits for the
// cleanups before it gives up. What a plan frees itself, and what an
// Array's Release returns, is not counted (freed): only memory left to
// the collector is.

// gcEveryBytes is the device memory handed out between two collections
// the Runtime starts.
const gcEveryBytes = 1 << 30

// oomRetries is how many times an allocation that does not fit collects
// and tries again; the waits between tries double from oomWait.
const (
	oomRetries = 6
	oomWait    = time.Millisecond
)

// allocate returns n bytes of device memory from the caching allocator,
// starting a collection after every gcEveryBytes handed out, and
// collecting before it reports that n bytes do not fit.
func (rt *Runtime) allocate(n uint64) (DevicePtr, error) {
	rt.handedOut.Add(n)
	if rt.sinceGC.Add(int64(n)) >= int64(rt.gcEvery()) && rt.collecting.CompareAndSwap(false, true) {
		rt.sinceGC.Store(0)
		rt.gcStarted.Add(1)
		go func() {
			runtime.GC()
			rt.collecting.Store(false)
		}()
	}
	p, err := rt.alloc.Alloc(n)
	var oom *cuda.OutOfMemoryError
	wait := oomWait
	for i := 0; i < oomRetries && errors.As(err, &oom); i++ {
		// The cleanups of the Arrays found unreachable run on their
		// own goroutine after the collection: give them the time.
		runtime.GC()
		time.Sleep(wait)
		wait *= 2
		p, err = rt.alloc.Alloc(n)
	}
	return p, err
}

// freed credits n bytes that a plan returned to the allocator itself (a
// deallocation, an allocation neither returned nor deallocated, the last
// launch's results a Bound releases) against the bytes handed out since
// the last collection: only memory that Arrays hold comes back through
// the collector. Without the credit, a plan's own temporaries started
// collections for nothing: resnet50_train's step allocates 15 GB and
// returns all of it but its results, a collection every 1 GB.
//
// The balance may go below zero: memory handed out before a collection
// started and returned after it (a training step's saved values, taken
// at the forward pass and released once the backward pass is queued)
// offsets what later calls hand out. Floored at zero, it did not: each
// step's saved values counted again from zero after the collection they
// started, so resnet50_train started ~1.7 collections a step (call 1 of
// session 14: 172 in 100 steps, the collector ~68% of the process's CPU
// samples) where the memory left to the collector, the replaced
// parameters, is ~0.1 GB a step.
func (rt *Runtime) freed(n uint64) {
	rt.credited.Add(n)
	rt.sinceGC.Add(-int64(n))
}

// gcEvery is gcEveryBytes, or the Runtime's own bound (tests).
func (rt *Runtime) gcEvery() uint64 {
	if rt.gcEveryBytes != 0 {
		return rt.gcEveryBytes
	}
	return gcEveryBytes
}

// MemoryCounters counts what a Runtime's caching allocator handed out and
// got back since the Runtime opened: Collections are the Go collections
// it started (after every gcEveryBytes left to the collector), HandedOut
// the bytes it allocated, Returned the bytes that came back without the
// collector (a plan's own frees, Release). HandedOut − Returned grows by
// what each call leaves to the collector.
type MemoryCounters struct {
	Collections         int64
	HandedOut, Returned uint64
}

// MemoryCounters returns the Runtime's counters.
func (rt *Runtime) MemoryCounters() MemoryCounters {
	return MemoryCounters{Collections: rt.gcStarted.Load(), HandedOut: rt.handedOut.Load(), Returned: rt.credited.Load()}
}
