package frontend

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/exec"
)

// TestWorkLogExplains checks that a driver error after asynchronous work
// names the calls that queued it, and that other errors, or errors after
// a synchronization, are left alone.
func TestWorkLogExplains(t *testing.T) {
	var l workLog
	fault := &cuda.Error{Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS", Op: "cuMemcpyDtoH_v2"}
	if err := l.explain(fault); err != error(fault) {
		t.Errorf("no work queued: %v", err)
	}
	l.queued("graph0", 0)
	err := l.explain(fault)
	if !errors.Is(err, &cuda.Error{Code: 700}) {
		t.Errorf("the driver error is not wrapped: %v", err)
	}
	if s := err.Error(); !strings.Contains(s, "1 compiled calls, @graph0 called at ") || !strings.Contains(s, ".go:") {
		t.Errorf("one call: %s", s)
	}
	l.queued("graph1", 0)
	if s := l.explain(fault).Error(); !strings.Contains(s, "2 compiled calls, the first @graph0") || !strings.Contains(s, "the last @graph1") {
		t.Errorf("two calls: %s", s)
	}
	if l.first.n == 0 || l.last.n != 0 {
		t.Errorf("stacks kept: first %d frames, last %d; want the first call's only (unwinding costs a cached call)", l.first.n, l.last.n)
	}
	plain := errors.New("not a driver error")
	if err := l.explain(plain); err != plain {
		t.Errorf("a non-driver error was changed: %v", err)
	}
	// A launch error located at its gpu.launch_func keeps the driver's
	// error in its chain.
	launch := &exec.LaunchError{Diag: ir.Errorf(ir.UnknownLoc{}, "launching @k: %v", fault), Err: fault}
	if err := l.explain(launch); !strings.Contains(err.Error(), "2 compiled calls") || !errors.As(err, new(*exec.LaunchError)) {
		t.Errorf("a launch error: %v", err)
	}
	// An allocation that did not fit is its own call's, whatever was
	// queued: it keeps its message (asked for, free) alone.
	oom := &exec.AllocError{Diag: ir.Errorf(ir.UnknownLoc{}, "loop.alloc: out of memory"),
		Err: &cuda.OutOfMemoryError{Requested: 1 << 40, Free: 1 << 30, Total: 1 << 37, Err: &cuda.Error{Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}}}
	if err := l.explain(oom); err != error(oom) {
		t.Errorf("an out-of-memory error was changed: %v", err)
	}
	l.synced()
	if err := l.explain(fault); err != error(fault) {
		t.Errorf("after a synchronization: %v", err)
	}
}

// TestFreedErrorLocated checks the lazily located error of a tensor used
// after Free: at the first frame outside this package (here the testing
// package, which calls this test; TestGPUFreeAndCleanup checks a user's
// line).
func TestFreedErrorLocated(t *testing.T) {
	e := &freedError{}
	e.n = runtime.Callers(1, e.pcs[:])
	got := e.Error()
	if !strings.Contains(got, "testing.go:") || !strings.Contains(got, ": error: tensor used after Free released its GPU memory") {
		t.Errorf("got %q", got)
	}
}
