package exec

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// mib is a host tensor of 1 MiB.
func mib(t *testing.T) *interp.Tensor {
	t.Helper()
	v, err := interp.FromFloat64s(ir.F32, []int64{1 << 18}, make([]float64, 1<<18))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestUnreachableArraysMakeRoom uploads many more Arrays than the device
// holds and drops each without Release, as a loop that replaces its
// device tensors does: an upload that does not fit collects the
// unreachable ones and succeeds.
func TestUnreachableArraysMakeRoom(t *testing.T) {
	d := newFake()
	d.capacity = 4 << 20
	rt := newRuntime(d)
	v := mib(t)
	for i := range 40 {
		if _, err := rt.Upload(v); err != nil {
			t.Fatalf("upload %d of 1 MiB on a 4 MiB device, the earlier ones unreachable: %v", i, err)
		}
	}
	// Live Arrays still fill the device: the error is the driver's.
	var keep []*Array
	for range 5 {
		a, err := rt.Upload(v)
		if err != nil {
			if len(keep) < 3 {
				t.Fatalf("out of memory with %d live 1 MiB Arrays on a 4 MiB device: %v", len(keep), err)
			}
			return
		}
		keep = append(keep, a)
	}
	t.Errorf("%d live 1 MiB Arrays on a 4 MiB device", len(keep))
}

// TestCollectionsPacedByDeviceMemory: the Runtime starts a collection
// after every gcEveryBytes of device memory it hands out.
func TestCollectionsPacedByDeviceMemory(t *testing.T) {
	rt := newRuntime(newFake())
	rt.gcEveryBytes = 4 << 20
	v := mib(t)
	for range 3 {
		if _, err := rt.Upload(v); err != nil {
			t.Fatal(err)
		}
	}
	if n := rt.gcStarted.Load(); n != 0 {
		t.Fatalf("%d collections started after 3 MiB, bound 4 MiB", n)
	}
	for range 13 {
		if _, err := rt.Upload(v); err != nil {
			t.Fatal(err)
		}
	}
	if n := rt.gcStarted.Load(); n < 1 || n > 4 {
		t.Errorf("%d collections started after 16 MiB, bound 4 MiB: want 1 to 4", n)
	}
}

// TestPlanFreesStartNoCollections: what a plan frees itself (vadd.mlir's
// temporary at the end of each launch, the last launch's result when the
// next one releases it) is not memory the collector must find, so
// launches that free all they allocate start no collection; results
// handed out as Arrays still count.
func TestPlanFreesStartNoCollections(t *testing.T) {
	rt := newRuntime(newFake())
	rt.gcEveryBytes = 8 << 20 // above the arguments and one launch's allocations
	p := compileFile(t, "vadd.mlir")
	v := mib(t)
	b, err := p.Prepare(rt, "main", []interp.Value{v, v})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for range 20 { // 2 MiB a launch: the result and the temporary
		if err := b.Launch(); err != nil {
			t.Fatal(err)
		}
	}
	if n := rt.gcStarted.Load(); n != 0 {
		t.Errorf("%d collections started by 20 launches that free what they allocate", n)
	}
	// MemoryCounters: 2 MiB handed out a launch, all of it returned but
	// the last launch's result (and the arguments' own buffers).
	m := rt.MemoryCounters()
	if left := m.HandedOut - m.Returned; m.HandedOut < 40<<20 || left != 3<<20 {
		t.Errorf("after 20 launches: %d bytes handed out, %d left to the collector; want ≥ 40 MiB and 3 MiB (2 arguments, 1 result)", m.HandedOut, left)
	}
	r := NewRunner(p, rt, "main", false)
	var keep []interp.Value
	for range 16 { // 1 MiB an Array
		res, err := r.RunDevice([]interp.Value{v, v})
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, res...)
	}
	runtime.KeepAlive(keep) // the results stay reachable: only the bytes handed out start a collection
	if n := rt.gcStarted.Load(); n < 1 {
		t.Errorf("no collection started after 16 MiB of result Arrays, bound 8 MiB")
	}
	if c := rt.MemoryCounters(); c.Collections != rt.gcStarted.Load() || c.HandedOut-c.Returned < m.HandedOut-m.Returned+16<<20 {
		t.Errorf("counters %+v after 16 MiB of result Arrays kept (before: %+v)", c, m)
	}
}

// TestReleasedArraysStartNoCollections: an Array released explicitly
// gave its memory back without the collector, so a loop that releases
// what it does not keep (a training step's saved values and gradients)
// starts no collection, while the same loop leaving its Arrays to the
// collector does.
func TestReleasedArraysStartNoCollections(t *testing.T) {
	for _, release := range []bool{true, false} {
		rt := newRuntime(newFake())
		rt.gcEveryBytes = 4 << 20
		v := mib(t)
		var keep []*Array
		for range 16 {
			a, err := rt.Upload(v)
			if err != nil {
				t.Fatal(err)
			}
			if release {
				if err := a.Release(); err != nil {
					t.Fatal(err)
				}
			} else {
				keep = append(keep, a)
			}
		}
		if n := rt.gcStarted.Load(); (n == 0) != release {
			t.Errorf("released %v: %d collections started after 16 MiB, bound 4 MiB", release, n)
		}
		for _, a := range keep {
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestReleasedAfterACollectionStartsNoMore: a training step's pattern —
// more than the bound handed out and kept for a while (the saved
// values), then released. The first round starts a collection at its
// peak; the memory released after it offsets the next rounds, which
// leave nothing to the collector and start none. (Floored at zero, the
// balance lost those releases and every round started one.) Memory
// then left to the collector still starts collections.
func TestReleasedAfterACollectionStartsNoMore(t *testing.T) {
	rt := newRuntime(newFake())
	rt.gcEveryBytes = 4 << 20
	v := mib(t)
	round := func(keep bool) []*Array {
		var held []*Array
		for range 6 {
			a, err := rt.Upload(v)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, a)
		}
		// Let a collection started in this round end before the next.
		for rt.collecting.Load() {
			runtime.Gosched()
		}
		if keep {
			return held
		}
		for _, a := range held {
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	for range 10 {
		round(false)
	}
	if n := rt.gcStarted.Load(); n != 1 {
		t.Errorf("%d collections started by 10 rounds of 6 MiB released after each, bound 4 MiB: want 1 (the first round's)", n)
	}
	var keep [][]*Array
	for range 3 {
		keep = append(keep, round(true))
	}
	runtime.KeepAlive(keep)
	if n := rt.gcStarted.Load(); n < 2 {
		t.Errorf("%d collections started after 18 MiB more left to the collector, bound 4 MiB", n)
	}
}

// TestOutOfMemoryLocated: a program whose buffers do not fit the device
// (a batch too large) fails at the allocation's line, saying how much it
// asked for and how much was free, before any kernel runs.
func TestOutOfMemoryLocated(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	d := newFake()
	d.capacity = 3 << 20 // the two 1 MiB inputs and the result; not the temporary
	rt := newRuntime(d)
	rng := rand.New(rand.NewPCG(1, 2))
	_, err := p.Run(rt, "main", []interp.Value{randomF32(t, rng, 1<<18, 1), randomF32(t, rng, 1<<18, 1)})
	var oom *cuda.OutOfMemoryError
	if !errors.As(err, &oom) || oom.Requested != 1<<20 || oom.Free != 0 {
		t.Fatalf("error %v, want an out-of-memory error asking for 1 MiB with none free", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "vadd.mlir:25:") || !strings.Contains(msg, "asked for 1.0 MiB (1048576 bytes), 0 B free of 3.0 MiB") {
		t.Errorf("error %q, want it at vadd.mlir:25 (the temporary's loop.alloc) saying what was asked and free", msg)
	}
	if len(d.launches) != 0 {
		t.Errorf("%d launches ran before the allocation failed", len(d.launches))
	}
}
