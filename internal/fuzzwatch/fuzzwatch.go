// Package fuzzwatch makes a hang a failure in the project's fuzz targets.
//
// Go's fuzzing engine gives one input as long as it likes, so an input
// that loops forever (an unterminated attribute, a nesting that costs
// exponential time) stalls the fuzzer instead of being reported. Each
// target starts a watchdog per input:
//
//	f.Fuzz(func(t *testing.T, src string) {
//		defer fuzzwatch.Start(src)()
//		...
//	})
//
// Once the deadline passes the watchdog panics on its own goroutine, which
// ends the fuzzing process: the engine reports the crash and keeps the
// input under testdata/fuzz, as for any other failure.
package fuzzwatch

import (
	"fmt"
	"os"
	"time"
)

// DefaultDeadline is how long one input may run: every target handles a
// typical input in milliseconds, so twenty seconds (on a loaded machine)
// is a hang, not a slow input. STRATA_FUZZ_DEADLINE (a Go duration)
// overrides it.
const DefaultDeadline = 20 * time.Second

// Deadline returns the deadline in force.
func Deadline() time.Duration {
	if s := os.Getenv("STRATA_FUZZ_DEADLINE"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return DefaultDeadline
}

// Start starts the watchdog of one input, described by inputs in the
// panic's message, and returns the function that stops it.
func Start(inputs ...any) (stop func()) {
	d := Deadline()
	timer := time.AfterFunc(d, func() {
		panic(fmt.Sprintf("fuzzwatch: input still running after %v (a hang): %.2000q", d, fmt.Sprint(inputs...)))
	})
	return func() { timer.Stop() }
}
