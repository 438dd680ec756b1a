package exec

import (
	"encoding/binary"
	"fmt"
	"github.com/strata-ir/strata/runtime/cuda"
	"math"
	"strings"
	"sync"
)

// fakeDevice is a device in host memory whose kernels are Go functions,
// so the executor's host side (binding, plan steps, marshalling, results,
// allocation) is tested without a GPU.
type fakeDevice struct {
	mem      map[DevicePtr][]byte
	next     DevicePtr
	kernels  map[string]fakeKernelFunc
	launches []fakeLaunch

	// Loads may run on several goroutines at once (LoadPolicy.Parallel).
	loadMu sync.Mutex
	loads  int
	linked int      // loads that asked for the linker
	links  []string // the PTX of each load through the linker
	texts  []string // the PTX of each load
	// loadErr, when set, fails the loads of the texts it returns an error
	// for; linkErr does so for the loads through the linker only.
	loadErr, linkErr func(ptx string) error
	levels           []int           // the JIT level (plus one) of each load
	cache            map[string]bool // texts the link cache holds (cached)
	noLinker         bool            // canLink is false
	images           int             // loadImage's loads
	imageErr         error           // fails loadImage
	// capacity, when set, is the device memory in bytes: an allocation
	// past it fails as the driver's out-of-memory does.
	capacity uint64
	// levelHook, when set, runs first in each load with its JIT level
	// (plus one); an error fails the load. Set it before the first load:
	// background loads read it.
	levelHook func(level int) error
	// graphs lets the device capture graphs: the launches queued on
	// capturing are recorded, not run, and a replay runs them in order
	// (replays counts them).
	graphs    bool
	capturing *cuda.Stream
	recorded  []fakeLaunch
	replays   int
}

func (d *fakeDevice) graphBlocker() string {
	if !d.graphs {
		return "the runtime has no CUDA device"
	}
	return ""
}

func (d *fakeDevice) beginCapture() (*cuda.Stream, error) {
	d.capturing, d.recorded = new(cuda.Stream), nil
	return d.capturing, nil
}

func (d *fakeDevice) endCapture(st *cuda.Stream, ok bool) (graphExec, error) {
	if st != d.capturing {
		return nil, &CaptureError{Reason: "fake: not the capture stream"}
	}
	g := &fakeGraph{d: d, launches: d.recorded}
	d.capturing, d.recorded = nil, nil
	if !ok {
		return nil, nil
	}
	return g, nil
}

// fakeGraph is a captured sequence of launches.
type fakeGraph struct {
	d         *fakeDevice
	launches  []fakeLaunch
	destroyed bool
}

func (g *fakeGraph) launch() error {
	if g.destroyed {
		return fmt.Errorf("fake: replay of a destroyed graph")
	}
	g.d.replays++
	for _, l := range g.launches {
		g.d.launches = append(g.d.launches, l)
		if err := g.d.kernels[l.kernel](g.d, l.grid, l.block, l.args); err != nil {
			return err
		}
	}
	return nil
}

func (g *fakeGraph) destroy() error {
	g.destroyed = true
	return nil
}

// fakeKernelFunc runs a kernel on the fake device.
type fakeKernelFunc func(d *fakeDevice, grid, block [3]uint32, args []any) error

type fakeLaunch struct {
	kernel      string
	level       int // the JIT level (plus one) its module was loaded at
	grid, block [3]uint32
	shared      uint32
	args        []any
}

type fakeKernel struct {
	name  string
	level int
}

func (k fakeKernel) Name() string { return k.name }

type fakeModule struct {
	d     *fakeDevice
	ptx   string
	level int
}

func (m fakeModule) function(name string) (kernel, error) {
	if m.d.kernels[name] == nil {
		// A kernel renamed (load.go: in a module of its own, or in a bin
		// of ptxas's): know it by its arithmetic, in its own entry's
		// text where the module holds several.
		body := m.ptx
		if i := strings.Index(body, ".entry "+name+"("); i >= 0 {
			body = body[i+1:]
			if j := strings.Index(body, ".entry "); j >= 0 {
				body = body[:j]
			}
		} else if name != sharedKernelName {
			body = ""
		}
		switch {
		case strings.Contains(body, "add.rn.f32"):
			name = "vadd"
		case strings.Contains(body, "mul.rn.f32"):
			name = "vmul"
		}
	}
	if m.d.kernels[name] == nil {
		return nil, fmt.Errorf("fake: no kernel %q", name)
	}
	return fakeKernel{name, m.level}, nil
}

func (fakeModule) unload() error { return nil }

func newFake() *fakeDevice {
	return &fakeDevice{mem: map[DevicePtr][]byte{}, next: 1 << 20, kernels: map[string]fakeKernelFunc{
		"vadd":    fakeVAdd,
		"vmul":    fakeVMul,
		"row_sum": fakeRowSum,
		"softmax": fakeSoftmax,
		// A device copy a graph recorded (CopyDtoDAsync).
		fakeCopyKernel: fakeRecordedCopy,
	}}
}

func (d *fakeDevice) Alloc(n uint64) (DevicePtr, error) {
	if d.capacity > 0 {
		used := uint64(0)
		for _, b := range d.mem {
			used += uint64(len(b))
		}
		if used+n > d.capacity {
			return 0, &cuda.OutOfMemoryError{Requested: n, Free: d.capacity - used, Total: d.capacity}
		}
	}
	p := d.next
	d.next += DevicePtr(n+255) &^ 255
	d.mem[p] = make([]byte, n)
	return p, nil
}

func (d *fakeDevice) Free(p DevicePtr) error {
	if _, ok := d.mem[p]; !ok {
		return fmt.Errorf("fake: free of unknown %#x", p)
	}
	delete(d.mem, p)
	return nil
}

func (d *fakeDevice) block(p DevicePtr, n int) ([]byte, error) {
	b, ok := d.mem[p]
	if !ok || len(b) < n {
		return nil, fmt.Errorf("fake: %d bytes at %#x are not allocated", n, p)
	}
	return b, nil
}

func (d *fakeDevice) CopyHtoD(dst DevicePtr, src []byte) error {
	b, err := d.block(dst, len(src))
	copy(b, src)
	return err
}

func (d *fakeDevice) CopyDtoH(dst []byte, src DevicePtr) error {
	b, err := d.block(src, len(dst))
	copy(dst, b)
	return err
}

func (d *fakeDevice) Synchronize() error { return nil }

func (d *fakeDevice) canLink() bool { return !d.noLinker }

// fakeCubinLevel marks the modules loadImage makes: the fake's "cubin"
// is the PTX (a fake ptxas copies it).
const fakeCubinLevel = -1

func (d *fakeDevice) loadImage(cubin []byte) (module, error) {
	if d.imageErr != nil {
		return nil, d.imageErr
	}
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	d.images++
	return fakeModule{d, string(cubin), fakeCubinLevel}, nil
}

func (d *fakeDevice) cached(ptx string, jit cuda.JITOptions) bool {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	return d.cache[ptx] && jit.Cache != nil
}

func (d *fakeDevice) load(ptx string, jit cuda.JITOptions, link bool) (module, error) {
	if !strings.Contains(ptx, ".entry") {
		return nil, fmt.Errorf("fake: no kernels in the PTX")
	}
	if d.levelHook != nil {
		if err := d.levelHook(jit.OptLevel); err != nil {
			return nil, err
		}
	}
	if d.loadErr != nil {
		if err := d.loadErr(ptx); err != nil {
			return nil, err
		}
	}
	if link && d.linkErr != nil {
		if err := d.linkErr(ptx); err != nil {
			d.loadMu.Lock()
			d.linked++
			d.loadMu.Unlock()
			return nil, err
		}
	}
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	d.loads++
	d.texts = append(d.texts, ptx)
	d.levels = append(d.levels, jit.OptLevel)
	if link {
		d.linked++
		d.links = append(d.links, ptx)
	}
	return fakeModule{d, ptx, jit.OptLevel}, nil
}

func (d *fakeDevice) launch(k kernel, grid, block [3]uint32, shared uint32, st *cuda.Stream, args []any) error {
	l := fakeLaunch{k.Name(), k.(fakeKernel).level, grid, block, shared, append([]any(nil), args...)}
	if st != nil && st == d.capturing {
		d.recorded = append(d.recorded, l)
		return nil
	}
	d.launches = append(d.launches, l)
	return d.kernels[k.Name()](d, grid, block, args)
}

// f32s views n floats at p.
func (d *fakeDevice) f32s(p any, n int64) ([]float32, func(), error) {
	b, err := d.block(p.(DevicePtr), int(4*n))
	if err != nil {
		return nil, nil, err
	}
	vs := make([]float32, n)
	for i := range vs {
		vs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	store := func() {
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
	}
	return vs, store, nil
}

func fakeVAdd(d *fakeDevice, grid, block [3]uint32, args []any) error {
	n := args[3].(int64)
	if int64(grid[0])*int64(block[0]) < n {
		return fmt.Errorf("fake vadd: grid too small for %d elements", n)
	}
	a, _, err1 := d.f32s(args[0], n)
	b, _, err2 := d.f32s(args[1], n)
	c, store, err3 := d.f32s(args[2], n)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	for i := range c {
		c[i] = a[i] + b[i]
	}
	store()
	return nil
}

func fakeVMul(d *fakeDevice, grid, block [3]uint32, args []any) error {
	n := args[3].(int64)
	a, _, err1 := d.f32s(args[0], n)
	b, _, err2 := d.f32s(args[1], n)
	c, store, err3 := d.f32s(args[2], n)
	if err := firstErr(err1, err2, err3); err != nil {
		return err
	}
	for i := range c {
		c[i] = a[i] * b[i]
	}
	store()
	return nil
}

func fakeRowSum(d *fakeDevice, grid, _ [3]uint32, args []any) error {
	rows, cols := int64(grid[0]), args[2].(int64)
	in, _, err1 := d.f32s(args[0], rows*cols)
	out, store, err2 := d.f32s(args[1], rows)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	for r := range rows {
		var s float32
		for _, x := range in[r*cols : (r+1)*cols] {
			s += x
		}
		out[r] = s
	}
	store()
	return nil
}

func fakeSoftmax(d *fakeDevice, grid, _ [3]uint32, args []any) error {
	rows, cols := int64(grid[0]), args[2].(int64)
	in, _, err1 := d.f32s(args[0], rows*cols)
	out, store, err2 := d.f32s(args[1], rows*cols)
	if err := firstErr(err1, err2); err != nil {
		return err
	}
	for r := range rows {
		row := in[r*cols : (r+1)*cols]
		m := float32(math.Inf(-1))
		for _, x := range row {
			m = max(m, x)
		}
		var s float64
		for _, x := range row {
			s += math.Exp(float64(x - m))
		}
		for j, x := range row {
			out[r*cols+int64(j)] = float32(math.Exp(float64(x-m)) / s)
		}
	}
	store()
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
