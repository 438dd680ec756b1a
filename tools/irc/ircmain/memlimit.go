package ircmain

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The soft memory limit of a large input (memoryLimitFor) is a guess from
// its size: text in the custom syntax, say, holds more ops per byte than
// the generic text the guess was made on. A live heap above the limit
// would make the collector run back to back (up to half the CPU, for the
// rest of the run), so the limit follows the live heap: never below the
// live heap plus an eighth and memoryLimitBase. The tuner reads the live
// heap every memoryTuneEvery.
const (
	memoryTuneEvery    = 50 * time.Millisecond
	memoryLiveHeadroom = 0.125
)

// liveHeapMetric is the runtime metric of the heap the last collection
// found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// tunedMemoryLimit returns the limit for a live heap of live bytes, given
// the input's limit.
func tunedMemoryLimit(input, live int64) int64 {
	return max(input, live+int64(memoryLiveHeadroom*float64(live))+memoryLimitBase)
}

// tuneMemoryLimit sets the soft memory limit to limit, raises it as the
// live heap grows (see tunedMemoryLimit) until stop is called, and then
// restores the limit it found.
func tuneMemoryLimit(limit int64) (stop func()) {
	saved := debug.SetMemoryLimit(limit)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sample := []metrics.Sample{{Name: liveHeapMetric}}
		tick := time.NewTicker(memoryTuneEvery)
		defer tick.Stop()
		current := limit
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return // not measured by this runtime: keep the limit
			}
			if want := tunedMemoryLimit(limit, int64(sample[0].Value.Uint64())); want != current {
				debug.SetMemoryLimit(want)
				current = want
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		debug.SetMemoryLimit(saved)
	}
}
