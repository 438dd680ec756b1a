package exec

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/interp"
)

// Array is a tensor in the memory of a Runtime's GPU, as a PyTorch tensor
// on "cuda" is: the result of Runtime.Upload or of Runner.RunDevice, and
// an argument Runner.RunDevice takes without copying. An Array is
// immutable. Its memory returns to the Runtime's caching allocator when
// the last Array sharing it is released (Release) or becomes unreachable
// (a cleanup of the garbage collector); that is safe while kernels that
// read it are still queued, because every queue of the Runtime is ordered
// as one stream, so the next user of the block runs after them.
//
// An Array implements interp.Value (its element type and shape).
type Array struct {
	st       *store
	elem     ir.Type
	shape    []int64
	cleanup  runtime.Cleanup
	released atomic.Bool
}

// store is device memory shared by Arrays (results that are views of one
// buffer, or an argument returned as a result), freed with the last one.
//
// A store may borrow its memory from a CUDA graph's static pool (lender):
// a result of a replay is handed out where the replay wrote it, without
// a copy. The graph's next replay would overwrite it, so before that
// replay the graph reclaims the block: a store no Array refers to any
// more (all released, a donated argument among them) just lets it go, and
// one still referred to moves to memory of its own first (a copy). So
// an Array stays immutable, and a loop that releases or donates what it
// does not keep copies nothing out of the graph.
type store struct {
	rt   *Runtime
	refs atomic.Int32
	// mu guards mem and lender, which reclaim changes while Arrays of
	// the store may be read on other goroutines.
	mu     sync.Mutex
	mem    *allocation
	lender *staticPool
}

// unref drops a reference; the last frees the memory. released says the
// reference ended by Release rather than by the collector's cleanup: the
// memory then came back without a collection, and is credited against
// the bytes that start one (gcpace.go), as a plan's own frees are.
func (s *store) unref(released bool) error {
	if s.refs.Add(-1) != 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lender != nil || s.mem == nil {
		return nil // the graph's block, which reclaim lets go
	}
	if released {
		s.rt.freed(s.mem.bytes)
	}
	return s.rt.alloc.Free(s.mem.ptr)
}

// reclaim ends s's loan of a block of pool g before a replay overwrites
// it: when Arrays still refer to s, its elements are copied to memory of
// its own (queued before the replay, on the one stream).
func (s *store) reclaim(g *staticPool) error {
	var p DevicePtr
	if s.refs.Load() > 0 {
		// Allocated outside the lock: an allocation that does not fit
		// waits for the collector's cleanups, which may unref s.
		var err error
		if p, err = s.rt.allocate(s.mem.bytes); err != nil {
			return fmt.Errorf("moving a result out of the CUDA graph's pool: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lender != g {
		return s.freeUnused(p)
	}
	s.lender = nil
	if s.refs.Load() == 0 {
		s.mem = nil // nothing refers to it: the block stays the graph's
		return s.freeUnused(p)
	}
	if err := s.rt.copyDtoD(p, s.mem.ptr, s.mem.bytes); err != nil {
		s.mem = nil
		return errors.Join(err, s.rt.alloc.Free(p))
	}
	s.mem = &allocation{ptr: p, bytes: s.mem.bytes}
	return nil
}

// freeUnused frees p, memory reclaim allocated and did not need.
func (s *store) freeUnused(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return s.rt.alloc.Free(p)
}

// claim gives s memory of its own now if it borrows a graph's block.
func (s *store) claim() error {
	s.mu.Lock()
	g := s.lender
	s.mu.Unlock()
	if g == nil {
		return nil
	}
	return s.reclaim(g)
}

// memory returns s's memory now; a borrowed block may move before the
// lender's next replay.
func (s *store) memory() *allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mem
}

// newArray returns an Array viewing st.
func newArray(st *store, elem ir.Type, shape []int64) *Array {
	st.refs.Add(1)
	a := &Array{st: st, elem: elem, shape: shape}
	a.cleanup = runtime.AddCleanup(a, func(s *store) { _ = s.unref(false) }, st)
	return a
}

// ElemType returns the element type.
func (a *Array) ElemType() ir.Type { return a.elem }

// Shape returns the sizes of the dims (not a copy: do not modify it).
func (a *Array) Shape() []int64 { return a.shape }

// String describes the array, as interp's values describe themselves.
func (a *Array) String() string {
	return fmt.Sprintf("device array %s of shape %v", a.elem, a.shape)
}

// Runtime returns the Runtime whose device holds a.
func (a *Array) Runtime() *Runtime { return a.st.rt }

// Ptr returns the device address of a's elements now: a result of a CUDA
// graph moves out of the graph's pool before its next replay if a is
// still in use then.
func (a *Array) Ptr() DevicePtr { return a.st.memory().ptr }

// bytes returns the size of a's elements in device memory.
func (a *Array) bytes() uint64 {
	size, _ := elemSize(a.elem)
	n, _ := elementCount(a.shape)
	return uint64(n) * uint64(size)
}

// errReleased is returned for an Array used after Release.
var errReleased = errors.New("the device array was released")

// check reports whether a can be argument of type mt on rt.
func (a *Array) check(rt *Runtime, mt *ir.MemRefType) error {
	if a.released.Load() {
		return errReleased
	}
	if a.st.rt != rt {
		return errors.New("the device array belongs to another runtime")
	}
	shape := mt.Shape()
	ok := a.elem == mt.ElementType() && len(a.shape) == len(shape)
	for i := 0; ok && i < len(shape); i++ {
		ok = shape[i] == ir.Dynamic || shape[i] == a.shape[i]
	}
	if !ok {
		return fmt.Errorf("expected %s, got %s", mt, a)
	}
	return nil
}

// Download waits for the work queued before it and copies a's elements
// to the host. An error of that work (a kernel fault) surfaces here.
func (a *Array) Download() (*interp.Tensor, error) {
	if a.released.Load() {
		return nil, errReleased
	}
	// The store's lock keeps a borrowed block where it is until the
	// copy is done.
	a.st.mu.Lock()
	t, err := a.st.rt.downloadTensor(a.st.mem.ptr, a.elem, a.shape)
	a.st.mu.Unlock()
	runtime.KeepAlive(a) // the memory must outlive the copy
	return t, err
}

// Release returns a's memory to the allocator (once the last Array
// sharing it is released) without waiting for the garbage collector. It
// is idempotent; a released Array cannot be read or passed.
func (a *Array) Release() error {
	if a.released.Swap(true) {
		return nil
	}
	a.cleanup.Stop()
	return a.st.unref(true)
}

// Released reports whether a was released (Release, or donated to a
// call: Runner.RunDeviceDonating).
func (a *Array) Released() bool { return a.released.Load() }

// Upload copies a host value (an *interp.Tensor or *interp.Buffer) to a
// new Array. The copy is queued: Upload returns once the driver has
// staged the host data, without waiting for the device.
func (rt *Runtime) Upload(v interp.Value) (*Array, error) {
	t, ok, err := hostTensor(v)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("exec: cannot upload %s", v)
	}
	data, err := encodeView(t)
	if err != nil {
		return nil, err
	}
	st, err := rt.newStore(uint64(len(data)))
	if err != nil {
		return nil, err
	}
	a := newArray(st, t.ElemType(), slices.Clone(t.Shape()))
	if err := rt.upload(st.mem.ptr, data); err != nil {
		_ = a.Release()
		return nil, err
	}
	return a, nil
}

// Zeros returns an Array of zeros of elem and shape, set on the device
// (asynchronously, on the stream of uploads) rather than copied from the
// host: an optimizer's first state for GPT-2 124M is a gigabyte.
func (rt *Runtime) Zeros(elem ir.Type, shape []int64) (*Array, error) {
	bytes, err := storageBytes(elem, shape)
	if err != nil {
		return nil, err
	}
	st, err := rt.workStream()
	if err != nil {
		return nil, err
	}
	if st == nil || bytes%4 != 0 {
		// No stream to set words on (a device without one), or a size
		// the word-wise set would overrun: copied as any upload.
		t, err := interp.NewTensor(elem, shape)
		if err != nil {
			return nil, err
		}
		return rt.Upload(t)
	}
	s, err := rt.newStore(bytes)
	if err != nil {
		return nil, err
	}
	a := newArray(s, elem, slices.Clone(shape))
	if err := rt.cuda.MemsetD32(s.mem.ptr, 0, bytes/4, st); err != nil {
		_ = a.Release()
		return nil, err
	}
	return a, nil
}

// newStore allocates n bytes for Arrays to share.
func (rt *Runtime) newStore(n uint64) (*store, error) {
	p, err := rt.allocate(n)
	if err != nil {
		return nil, err
	}
	return &store{rt: rt, mem: &allocation{ptr: p, bytes: n}}, nil
}

// Synchronize waits for every queued kernel and copy of the Runtime and
// returns the first error of that work.
func (rt *Runtime) Synchronize() error {
	return rt.dev.Synchronize()
}

// UploadStreamEnv set to "default" queues the Runtime's asynchronous
// uploads on the legacy default stream instead of a blocking stream of
// their own (for measuring what that stream costs the launches).
const UploadStreamEnv = "STRATA_UPLOAD_STREAM"

// workStream returns the stream of asynchronous uploads, creating it
// on first use (nil on a Runtime without CUDA: copies are synchronous).
func (rt *Runtime) workStream() (*cuda.Stream, error) {
	if rt.cuda == nil {
		return nil, nil
	}
	rt.workOnce.Do(func() {
		if os.Getenv(UploadStreamEnv) == "default" {
			rt.work = rt.cuda.DefaultStream()
			return
		}
		// Blocking (not CU_STREAM_NON_BLOCKING): the legacy default stream
		// waits for its work and it for the default stream's.
		rt.work, rt.workErr = rt.cuda.NewStream()
		rt.workOwned = true
		if rt.workErr != nil {
			rt.workErr = fmt.Errorf("exec: creating the work stream: %w", rt.workErr)
		}
	})
	return rt.work, rt.workErr
}

// upload queues a copy of data to dst (pageable host memory, which the
// driver stages before returning, so data may change afterwards).
func (rt *Runtime) upload(dst DevicePtr, data []byte) error {
	rt.xfer.htod.Add(1)
	rt.xfer.htodBytes.Add(uint64(len(data)))
	st, err := rt.workStream()
	if err != nil {
		return err
	}
	if st != nil {
		if sg := rt.stager(st); sg != nil {
			if staged, err := sg.upload(dst, data); staged || err != nil {
				return err
			}
		}
		return st.CopyHtoDBytes(dst, data)
	}
	return rt.dev.CopyHtoD(dst, data)
}

// stager returns the stager of small uploads on st, made on first use
// (nil if its pinned buffer could not be allocated).
func (rt *Runtime) stager(st *cuda.Stream) *stager {
	rt.stageOnce.Do(func() {
		d, err := newCUDAStage(rt.cuda, st, stageBytes)
		if err != nil {
			return
		}
		rt.stage, rt.stageDev = newStager(d), d
	})
	return rt.stage
}

// deviceCopier is a device that queues copies between device buffers on
// a stream (the CUDA device does; nil is the default stream, where
// launches and downloads go too), without a host wait.
type deviceCopier interface {
	CopyDtoDAsync(dst, src DevicePtr, n uint64, stream *cuda.Stream) error
}

// copyDtoD queues a copy of n bytes between device buffers.
func (rt *Runtime) copyDtoD(dst, src DevicePtr, n uint64) error {
	return rt.copyDtoDOn(dst, src, n, nil)
}

// copyDtoDOn queues a copy of n bytes between device buffers on stream
// (nil: the default stream; a capturing stream records it in the graph).
func (rt *Runtime) copyDtoDOn(dst, src DevicePtr, n uint64, stream *cuda.Stream) error {
	c, ok := rt.dev.(deviceCopier)
	if !ok {
		return errors.New("exec: the device cannot copy between device buffers")
	}
	rt.xfer.dtod.Add(1)
	rt.xfer.dtodBytes.Add(n)
	return c.CopyDtoDAsync(dst, src, n, stream)
}

// downloadTensor copies device memory holding elements of elem and shape
// to a new tensor, after the work queued before.
func (rt *Runtime) downloadTensor(src DevicePtr, elem ir.Type, shape []int64) (*interp.Tensor, error) {
	bytes, err := storageBytes(elem, shape)
	if err != nil {
		return nil, err
	}
	data := make([]byte, bytes)
	rt.xfer.dtoh.Add(1)
	rt.xfer.dtohBytes.Add(uint64(len(data)))
	if len(data) > 0 {
		if err := rt.dev.CopyDtoH(data, src); err != nil {
			return nil, err
		}
	}
	return decode(elem, shape, data)
}

// Transfers counts the copies a Runtime made: host to device (uploads of
// arguments and Upload), device to host (results read, Download) and
// device to device (Arrays copied into a CUDA graph's buffers, results
// copied out of them), with their bytes.
type Transfers struct {
	HtoD, DtoH, DtoD                int64
	HtoDBytes, DtoHBytes, DtoDBytes uint64
}

// Sub returns the copies made between an earlier count o and t.
func (t Transfers) Sub(o Transfers) Transfers {
	return Transfers{t.HtoD - o.HtoD, t.DtoH - o.DtoH, t.DtoD - o.DtoD,
		t.HtoDBytes - o.HtoDBytes, t.DtoHBytes - o.DtoHBytes, t.DtoDBytes - o.DtoDBytes}
}

// String prints the counts.
func (t Transfers) String() string {
	return fmt.Sprintf("%d uploads (%d B), %d downloads (%d B), %d device copies (%d B)",
		t.HtoD, t.HtoDBytes, t.DtoH, t.DtoHBytes, t.DtoD, t.DtoDBytes)
}

type transferCounters struct {
	htod, dtoh, dtod                atomic.Int64
	htodBytes, dtohBytes, dtodBytes atomic.Uint64
}

// Transfers returns the copies made so far.
func (rt *Runtime) Transfers() Transfers {
	x := &rt.xfer
	return Transfers{x.htod.Load(), x.dtoh.Load(), x.dtod.Load(), x.htodBytes.Load(), x.dtohBytes.Load(), x.dtodBytes.Load()}
}

// takeResults hands the last Launch's memref results to new Arrays
// without copying them: a plan allocation becomes the Arrays' memory (the
// Bound no longer frees it), a result that is an Array argument shares
// that Array's memory, a result in a CUDA graph's static pool borrows its
// block until the next replay (store.reclaim), and anything else (an
// argument's own buffer, which the next call overwrites) is copied device
// to device into new memory. Results that view one buffer share it.
func (b *Bound) takeResults() ([]interp.Value, error) {
	out := make([]interp.Value, len(b.results))
	type made struct {
		mem *allocation
		st  *store
	}
	var stores []made
	fail := func(i int, err error) ([]interp.Value, error) {
		// The Arrays made so far own what they took: drop it from held
		// before releasing them, so it is freed once.
		b.held = slices.DeleteFunc(b.held, func(m *allocation) bool {
			taken := slices.ContainsFunc(stores, func(s made) bool { return s.mem == m })
			m.held = m.held && !taken
			return taken
		})
		for _, v := range out {
			if a, ok := v.(*Array); ok {
				_ = a.Release()
			}
		}
		return nil, fmt.Errorf("@%s result %d: %w", b.plan.name, i, err)
	}
	results := b.resultTypes()
	// Results sharing a buffer share its store; many results (a
	// training step's saved values) look it up in a map.
	var byMem map[*allocation]*store
	if len(b.results) > 32 {
		byMem = make(map[*allocation]*store, len(b.results))
	}
	for i, v := range b.results {
		if v.b == nil {
			r, err := scalarResult(v, results[i])
			if err != nil {
				return fail(i, err)
			}
			out[i] = r
			continue
		}
		var st *store
		if byMem != nil {
			st = byMem[v.b.mem]
		} else {
			for _, m := range stores {
				if m.mem == v.b.mem {
					st = m.st
				}
			}
		}
		if st == nil {
			st = b.resultStore(v.b.mem)
		}
		if st == nil && b.cur != nil && b.cur.pool.holds(v.b.mem) {
			// Lent where the replay wrote it, until the next replay.
			pool := b.cur.pool
			st = &store{rt: b.rt, mem: &allocation{ptr: v.b.mem.ptr, bytes: v.b.mem.bytes}, lender: pool}
			pool.lent = append(pool.lent, st)
		}
		if st == nil {
			var err error
			if st, err = b.rt.newStore(v.b.mem.bytes); err != nil {
				return fail(i, err)
			}
			if err := b.rt.copyDtoD(st.mem.ptr, v.b.mem.ptr, v.b.mem.bytes); err != nil {
				_ = b.rt.alloc.Free(st.mem.ptr)
				return fail(i, err)
			}
		}
		stores = append(stores, made{v.b.mem, st})
		if byMem != nil {
			byMem[v.b.mem] = st
		}
		out[i] = newArray(st, v.b.elem, slices.Clone(v.b.shape))
	}
	if b.graph == nil {
		// Every held allocation is a result's, now owned by the Arrays.
		for _, m := range b.held {
			m.held = false
		}
		b.held, b.results = b.held[:0], b.results[:0]
	}
	return out, nil
}

// resultStore returns the store a result in mem can own without a copy:
// a plan allocation the results hold (outside a CUDA graph), or the
// memory of an Array argument; nil when the result must be copied.
func (b *Bound) resultStore(mem *allocation) *store {
	if b.graph == nil && mem.held {
		return &store{rt: b.rt, mem: mem}
	}
	for _, a := range b.arrays {
		if a == nil {
			continue
		}
		// The same block (a variant's replay reads an argument at the
		// address it was captured with, through a view of its own).
		a.st.mu.Lock()
		same := a.st.mem != nil && a.st.mem.ptr == mem.ptr && a.st.mem.bytes == mem.bytes
		a.st.mu.Unlock()
		if same {
			return a.st
		}
	}
	return nil
}

// resultTypes returns the types of the function's results.
func (b *Bound) resultTypes() []ir.Type {
	if b.resTypes == nil {
		ft, _ := b.plan.fn.Attr("function_type").(ir.TypeAttr)
		b.resTypes = ft.Type.(*ir.FunctionType).Results
	}
	return b.resTypes
}
