package frontend

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// compileHeadroom is how far the process's memory may grow while a
// compile holds the garbage collector back (holdGC) before it collects
// anyway.
const compileHeadroom = 256 << 20

// compileGC is the state of holdGC: the number of compiles holding the
// collector and the settings to restore when the last one ends.
var compileGC struct {
	mu      sync.Mutex
	holders int
	held    bool  // the settings below are to be restored
	percent int   // GOGC before the first holder
	limit   int64 // the memory limit before the first holder
}

// holdGC lets the compiles running until the returned function is called
// allocate without the collector's pacing, and returns that function.
//
// A first call lowers and generates code for a graph in 10–30 ms and
// allocates a few MB per graph (the examples' transformer: 6.7 MB, 100 000
// objects), in a process whose heap is still small: with GOGC=100 the
// collector then runs every 2–4 MB, six times during the transformer's
// two compiles, and on a 2-core host it costs 40% of their time. As the Go
// compiler raises its starting heap for the same reason, the collector is
// paused (GOGC off) while a compile runs, with a memory limit of the
// process's current size plus compileHeadroom as the bound, and the
// previous settings are restored when the last concurrent compile ends;
// what the compile left behind is then collected in the background, while
// the device loads the code. A program that sets GOGC or GOMEMLIMIT in its
// environment, or a GC percent other than 100, keeps its settings.
func holdGC() (release func()) {
	compileGC.mu.Lock()
	defer compileGC.mu.Unlock()
	compileGC.holders++
	if compileGC.holders == 1 {
		compileGC.held = false
		if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
			if prev := debug.SetGCPercent(-1); prev != 100 {
				debug.SetGCPercent(prev) // the program's own choice
			} else {
				limit := debug.SetMemoryLimit(-1) // reads it
				compileGC.held, compileGC.percent, compileGC.limit = true, prev, limit
				debug.SetMemoryLimit(min(limit, processMemory()+compileHeadroom))
			}
		}
	}
	return func() {
		compileGC.mu.Lock()
		defer compileGC.mu.Unlock()
		compileGC.holders--
		if compileGC.holders == 0 && compileGC.held {
			compileGC.held = false
			debug.SetMemoryLimit(compileGC.limit)
			debug.SetGCPercent(compileGC.percent)
		}
	}
}

// processMemory returns the memory the Go runtime holds from the OS, as
// the memory limit counts it.
func processMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var total, released uint64
	if s[0].Value.Kind() == metrics.KindUint64 {
		total = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		released = s[1].Value.Uint64()
	}
	return int64(total - min(released, total))
}
