package exec

import (
	"testing"

	"github.com/strata-ir/strata/ir"
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
