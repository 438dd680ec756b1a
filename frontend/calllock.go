package frontend

import (
	"errors"
	"runtime"
	"strings"
	"sync"
)

// callMu serializes compiled calls process-wide. A compiled call routes
// an op on a concrete tensor to the call that uses that tensor as an
// input (Tensor.in), so that a host read of an argument or a captured
// weight is a graph break. Go has no cheap goroutine identity, so two
// calls in flight at once on different goroutines that share a tensor —
// two compiled functions capturing the same weights, called from two
// goroutines — would record each other's ops (and crashed). Holding
// callMu for the call makes the stamps unambiguous; a compiled call made
// inside a compiled function (nested, on the same goroutine) is found on
// the stack and does not wait for the lock its outer call holds.
var callMu sync.Mutex

// errRecursiveCall is the error of a compiled function that calls itself.
var errRecursiveCall = errors.New("frontend: a compiled function called itself (recursively, while a call of it is in flight on this goroutine); call the Go function, or compile the inner call separately")

// lockCalls takes callMu for a compiled call, unless the call is nested
// in another on this goroutine; it returns the unlock and whether the
// call is nested.
func lockCalls() (unlock func(), nested bool) {
	if callMu.TryLock() {
		return callMu.Unlock, false
	}
	if insideCompiledCall() {
		return func() {}, true
	}
	callMu.Lock()
	return callMu.Unlock, false
}

// insideCompiledCall reports whether this goroutine is running a
// compiled function (its stack holds Compiled.invoke). It is called only
// when callMu is taken, so its cost (a stack walk) is paid by nested or
// contended calls only.
func insideCompiledCall() bool {
	pcs := make([]uintptr, 256)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, pkgPath) && (strings.HasSuffix(f.Function, ".(*Compiled).invoke") || strings.HasSuffix(f.Function, ".(*gradCore).call")) {
			return true
		}
		if !more {
			return false
		}
	}
}

// lockCompiled takes callMu and c.mu for a call of c; a call of c nested
// in a call of c on this goroutine is an error, not a deadlock.
func (c *Compiled) lockCompiled() (unlock func(), err error) {
	unlockCalls, nested := lockCalls()
	if nested {
		if !c.mu.TryLock() {
			unlockCalls()
			return nil, errRecursiveCall
		}
	} else {
		c.mu.Lock()
	}
	return func() { c.mu.Unlock(); unlockCalls() }, nil
}
