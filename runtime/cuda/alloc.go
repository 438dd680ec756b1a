package cuda

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
)

// Backend is the raw device memory an Allocator caches: *Device satisfies
// it, and tests use a fake.
type Backend interface {
	Alloc(bytes uint64) (DevicePtr, error)
	Free(p DevicePtr) error
}

// Size classes. Small blocks round up to a power of two so that the few
// classes are reused often; larger ones round up only to 512 bytes (the
// driver's own granularity is coarser), so a big tensor wastes at most 511
// bytes and is reused by tensors of the same size, the common case when a
// compiled program runs again on the same shapes.
const (
	minBlock   = 512
	smallLimit = 1 << 20
)

// sizeClass returns the block size that serves a request of n bytes.
func sizeClass(n uint64) uint64 {
	switch {
	case n <= minBlock:
		return minBlock
	case n <= smallLimit:
		return 1 << bits.Len64(n-1)
	default:
		return (n + minBlock - 1) &^ (minBlock - 1)
	}
}

// Stats describes an Allocator's memory, in bytes of blocks (size classes,
// not the sizes asked for).
type Stats struct {
	Allocated uint64 // in blocks handed out and not yet freed
	Cached    uint64 // in free blocks kept for reuse
	Peak      uint64 // the largest Allocated has been
	Hits      uint64 // allocations served from the cache
	Misses    uint64 // allocations that went to the backend
}

// Reserved returns the bytes held from the backend: Allocated + Cached.
func (s Stats) Reserved() uint64 { return s.Allocated + s.Cached }

// Allocator is a caching device allocator: freed blocks go to a free list
// per size class and serve later allocations of the same class without a
// driver call (cuMemAlloc and cuMemFree synchronise the device). When the
// backend runs out of memory, the cache is returned to it and the
// allocation tried once more. It is safe for concurrent use.
type Allocator struct {
	mu    sync.Mutex
	be    Backend
	free  map[uint64][]DevicePtr // size class → free blocks
	live  map[DevicePtr]uint64   // block → its size class
	stats Stats
}

// NewAllocator returns an Allocator drawing memory from be.
func NewAllocator(be Backend) *Allocator {
	return &Allocator{be: be, free: map[uint64][]DevicePtr{}, live: map[DevicePtr]uint64{}}
}

// Alloc returns a block of at least n bytes. Alloc(0) returns the null
// pointer, which Free accepts.
func (a *Allocator) Alloc(n uint64) (DevicePtr, error) { return a.alloc(n, true) }

// AllocFresh is Alloc without the cache: the block comes from the
// backend. Free is ordered on the host, not on a stream: a block freed
// while work queued before the Free still reads or writes it is cached at
// once, and only work queued after that work on the same stream may use
// it. Memory that another stream writes first (a library's warm-up
// scratch and tuning workspace, on streams of their own beside a
// program's first run) is fresh: a cached block there may be one a
// program freed while its queued kernels still read it, which the other
// stream's writes would overwrite under them. Freed, a fresh block joins
// the cache.
func (a *Allocator) AllocFresh(n uint64) (DevicePtr, error) { return a.alloc(n, false) }

// alloc is Alloc, from the cache when cached.
func (a *Allocator) alloc(n uint64, cached bool) (DevicePtr, error) {
	if n == 0 {
		return 0, nil
	}
	class := sizeClass(n)
	a.mu.Lock()
	defer a.mu.Unlock()
	if list := a.free[class]; cached && len(list) > 0 {
		p := list[len(list)-1]
		a.free[class] = list[:len(list)-1]
		a.stats.Cached -= class
		a.stats.Hits++
		a.handOut(p, class)
		return p, nil
	}
	p, err := a.be.Alloc(class)
	if err != nil && a.stats.Cached > 0 {
		// Cached blocks of other classes may be what is missing.
		if ferr := a.emptyLocked(); ferr != nil {
			return 0, errors.Join(err, ferr)
		}
		p, err = a.be.Alloc(class)
	}
	if err != nil {
		return 0, err
	}
	a.stats.Misses++
	a.handOut(p, class)
	return p, nil
}

// handOut records p as allocated.
func (a *Allocator) handOut(p DevicePtr, class uint64) {
	a.live[p] = class
	a.stats.Allocated += class
	a.stats.Peak = max(a.stats.Peak, a.stats.Allocated)
}

// Free returns a block from Alloc to the cache. Freeing the null pointer
// does nothing; freeing anything else not allocated here is an error.
func (a *Allocator) Free(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	class, ok := a.live[p]
	if !ok {
		return fmt.Errorf("cuda: Allocator.Free(%#x): not an allocated block", uint64(p))
	}
	delete(a.live, p)
	a.stats.Allocated -= class
	a.stats.Cached += class
	a.free[class] = append(a.free[class], p)
	return nil
}

// EmptyCache returns every cached block to the backend.
func (a *Allocator) EmptyCache() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.emptyLocked()
}

func (a *Allocator) emptyLocked() error {
	var errs []error
	for class, list := range a.free {
		for _, p := range list {
			if err := a.be.Free(p); err != nil {
				errs = append(errs, err)
			}
			a.stats.Cached -= class
		}
		delete(a.free, class)
	}
	return errors.Join(errs...)
}

// Stats returns the allocator's statistics.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}
