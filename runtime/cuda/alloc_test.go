package cuda

import (
	"errors"
	"testing"
)

// fakeBackend hands out addresses from a counter and fails allocations
// beyond its capacity, like a device running out of memory.
type fakeBackend struct {
	capacity uint64
	used     uint64
	next     DevicePtr
	live     map[DevicePtr]uint64
	allocs   int
	frees    int
}

func newFakeBackend(capacity uint64) *fakeBackend {
	return &fakeBackend{capacity: capacity, next: 1 << 20, live: map[DevicePtr]uint64{}}
}

var errFakeOOM = errors.New("fake: out of memory")

func (f *fakeBackend) Alloc(n uint64) (DevicePtr, error) {
	if f.used+n > f.capacity {
		return 0, errFakeOOM
	}
	p := f.next
	f.next += DevicePtr(n)
	f.used += n
	f.live[p] = n
	f.allocs++
	return p, nil
}

func (f *fakeBackend) Free(p DevicePtr) error {
	n, ok := f.live[p]
	if !ok {
		return errors.New("fake: double free")
	}
	delete(f.live, p)
	f.used -= n
	f.frees++
	return nil
}

func TestSizeClass(t *testing.T) {
	tests := map[uint64]uint64{
		1: 512, 512: 512, 513: 1024, 1000: 1024, 4097: 8192,
		1 << 20: 1 << 20, 1<<20 + 1: 1<<20 + 512, 3_000_000: 3_000_320,
	}
	for n, want := range tests {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestAllocatorReuse(t *testing.T) {
	be := newFakeBackend(1 << 30)
	a := NewAllocator(be)
	p, err := a.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(p); err != nil {
		t.Fatal(err)
	}
	q, err := a.Alloc(600) // same 1024-byte class: the cached block
	if err != nil {
		t.Fatal(err)
	}
	if q != p {
		t.Errorf("Alloc after Free got %#x, want the cached block %#x", q, p)
	}
	r, err := a.Alloc(2000) // another class: a new block
	if err != nil {
		t.Fatal(err)
	}
	if r == p {
		t.Error("a different size class reused the cached block")
	}
	want := Stats{Allocated: 1024 + 2048, Cached: 0, Peak: 1024 + 2048, Hits: 1, Misses: 2}
	if got := a.Stats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if be.allocs != 2 {
		t.Errorf("backend saw %d allocations, want 2", be.allocs)
	}

	for _, x := range []DevicePtr{q, r} {
		if err := a.Free(x); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Stats(); got.Allocated != 0 || got.Cached != 3072 || got.Peak != 3072 {
		t.Errorf("after freeing all: %+v", got)
	}
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats(); got.Cached != 0 || got.Reserved() != 0 {
		t.Errorf("after EmptyCache: %+v", got)
	}
	if len(be.live) != 0 {
		t.Errorf("backend still holds %d blocks after EmptyCache", len(be.live))
	}
}

// TestAllocatorAllocFresh: AllocFresh never hands out a cached block (one
// freed under work still queued on its stream), its blocks join the cache
// when freed, and it empties the cache when the backend is out of memory.
func TestAllocatorAllocFresh(t *testing.T) {
	be := newFakeBackend(4096)
	a := NewAllocator(be)
	p, err := a.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(p); err != nil {
		t.Fatal(err)
	}
	q, err := a.AllocFresh(1000)
	if err != nil {
		t.Fatal(err)
	}
	if q == p {
		t.Fatalf("AllocFresh handed out the cached block %#x", p)
	}
	want := Stats{Allocated: 1024, Cached: 1024, Peak: 1024, Misses: 2}
	if got := a.Stats(); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if err := a.Free(q); err != nil {
		t.Fatal(err)
	}
	r, err := a.Alloc(1000)
	if err != nil || (r != p && r != q) {
		t.Errorf("Alloc after freeing a fresh block = %#x, %v; want a cached block (%#x or %#x)", r, err, p, q)
	}
	if err := a.Free(r); err != nil {
		t.Fatal(err)
	}
	// 2048 of 4096 bytes cached: a fresh 4096-byte block needs the cache
	// emptied first.
	if _, err := a.AllocFresh(4000); err != nil {
		t.Errorf("AllocFresh with the backend full of cached blocks: %v", err)
	}
	if a.Stats().Cached != 0 {
		t.Errorf("cache after an out-of-memory AllocFresh: %+v, want emptied", a.Stats())
	}
	if p, err := a.AllocFresh(0); p != 0 || err != nil {
		t.Errorf("AllocFresh(0) = %#x, %v; want the null pointer", p, err)
	}
}

func TestAllocatorFreeErrors(t *testing.T) {
	a := NewAllocator(newFakeBackend(1 << 20))
	if err := a.Free(0); err != nil {
		t.Errorf("Free(0) = %v, want nil", err)
	}
	if p, err := a.Alloc(0); p != 0 || err != nil {
		t.Errorf("Alloc(0) = %#x, %v; want 0, nil", p, err)
	}
	if err := a.Free(0xdead); err == nil {
		t.Error("Free of an unknown pointer succeeded")
	}
	p, _ := a.Alloc(10)
	if err := a.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(p); err == nil {
		t.Error("double Free succeeded")
	}
}

func TestAllocatorEmptiesCacheWhenOutOfMemory(t *testing.T) {
	be := newFakeBackend(4096)
	a := NewAllocator(be)
	p, err := a.Alloc(2048)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Free(p); err != nil {
		t.Fatal(err)
	}
	// 4096 bytes do not fit beside the cached 2048-byte block; the
	// allocator must give the cache back and retry.
	q, err := a.Alloc(4096)
	if err != nil {
		t.Fatalf("Alloc with a reclaimable cache failed: %v", err)
	}
	if got := a.Stats(); got.Cached != 0 || got.Allocated != 4096 || got.Misses != 2 {
		t.Errorf("stats %+v", got)
	}
	// Now nothing can be reclaimed: the backend's error comes through.
	if _, err := a.Alloc(512); !errors.Is(err, errFakeOOM) {
		t.Errorf("Alloc beyond capacity: %v, want the backend's error", err)
	}
	if err := a.Free(q); err != nil {
		t.Fatal(err)
	}
}

func TestAllocatorPeak(t *testing.T) {
	a := NewAllocator(newFakeBackend(1 << 30))
	var ps []DevicePtr
	for range 4 {
		p, err := a.Alloc(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		a.Free(p)
	}
	if _, err := a.Alloc(1 << 20); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats(); got.Peak != 4<<20 || got.Allocated != 1<<20 || got.Cached != 3<<20 {
		t.Errorf("stats %+v, want peak 4 MiB, 1 MiB allocated, 3 MiB cached", got)
	}
}

// Device must satisfy Backend so the executor can cache its memory.
var _ Backend = (*Device)(nil)
