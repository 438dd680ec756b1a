// Package cpu runs programs compiled by targets/cpu on the host: it
// builds the shared library of a module's kernels (or finds it in the
// compile cache), loads it with purego's dlopen, and executes each
// function's host ops in Go, calling a kernel once per range of its outer
// iteration space with the ranges spread over GOMAXPROCS goroutines.
//
// Buffers are Go slices of the interpreter's storage types (a result is
// returned as an interp.Tensor owning its slice, without a copy), and the
// kernels read and write them through pointers: Go's heap does not move
// objects, and every buffer a call uses stays reachable until the call
// returns.
package cpu

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	"github.com/ebitengine/purego"

	"github.com/strata-ir/strata/dialects/arith"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/symbolize"
	"github.com/strata-ir/strata/runtime/cache"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/sym"
	target "github.com/strata-ir/strata/targets/cpu"
)

// ErrNoTools is target.ErrNoTools: the compiler tools are missing.
var ErrNoTools = target.ErrNoTools

// Program is a module compiled for the host and loaded.
type Program struct {
	mod *target.Module
	// LLVM is the module's LLVM IR text; Library the shared object.
	LLVM, Library string
	// Cached reports whether the library came from the compile cache.
	Cached bool
	// CPU is the -mcpu the library was compiled for.
	CPU string
	// Workers bounds the goroutines a kernel runs on (0: GOMAXPROCS).
	Workers int
	// MatmulKC is the matmul kernels' k block (0: target.DefaultKC of the
	// kernel's columns; at least K: no blocking).
	MatmulKC int
	fns      map[*target.Kernel]uintptr
	// packs are the matmul kernels' B-packing entries.
	packs map[*target.Kernel]uintptr
	// scratch holds the matmul kernels' packing buffers between calls.
	scratch sync.Pool
	plansMu sync.Mutex
	plans   map[*target.Func]*hostPlan
	// spare holds the buffers earlier calls allocated and did not
	// return, by storage type and length, for later calls to reuse.
	spareMu sync.Mutex
	spare   map[spareKey][]*hostBuf
	// recent are the results of recent calls whose storage the call
	// allocated and no other result shares, for Release to recognise
	// (weakly held: a result the caller drops is collected as usual);
	// next is where the next one goes. Guarded by spareMu.
	recent [maxRecent]weak.Pointer[interp.Tensor]
	next   int
}

// maxRecent is how many recent results Release recognises; an older one
// it ignores (its memory is then collected as usual).
const maxRecent = 64

// spareKey identifies interchangeable buffers.
type spareKey struct {
	storage string
	n       int
}

// maxSpare bounds the buffers kept of one kind (a function that allocates
// more of one size than this per call allocates the rest).
const maxSpare = 8

// takeSpare returns a buffer of elem and shape from an earlier call, or
// nil.
func (p *Program) takeSpare(elem ir.Type, shape []int64) *hostBuf {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	key := spareKey{storage(elem), n}
	p.spareMu.Lock()
	defer p.spareMu.Unlock()
	list := p.spare[key]
	if len(list) == 0 {
		return nil
	}
	b := list[len(list)-1]
	p.spare[key] = list[:len(list)-1]
	return &hostBuf{elem: elem, shape: append([]int64(nil), shape...), data: b.data, ptr: b.ptr}
}

// keepSpares keeps the call's buffers that its results do not use: they
// are dead once the call returns, and reusing them spares the next call
// fresh memory (page faults, and cache misses on the first write). It
// also records the results that Release may take back: those whose
// storage the call allocated (not an input's) and that share it with no
// other result.
//
// Rank-0 results count as any other: a scalar computed into a buffer (a
// loss) is returned as a view of it, so handing that buffer on would let
// the next call overwrite a result the caller holds. (Scalars made from
// a host value have storage of their own, which no buffer matches.)
func (p *Program) keepSpares(live []*hostBuf, results []*interp.Tensor) {
	used := map[unsafe.Pointer]int{}
	for _, t := range results {
		if t != nil {
			used[dataPtr(t.Data())]++
		}
	}
	allocated := map[unsafe.Pointer]bool{}
	p.spareMu.Lock()
	defer p.spareMu.Unlock()
	for _, b := range live {
		if b.ptr == nil || allocated[b.ptr] {
			continue // a buffer listed twice is kept once
		}
		allocated[b.ptr] = true
		if used[b.ptr] == 0 {
			p.addSpare(b)
		}
	}
	for _, t := range results {
		if t != nil && allocated[dataPtr(t.Data())] && used[dataPtr(t.Data())] == 1 {
			p.recent[p.next] = weak.Make(t)
			p.next = (p.next + 1) % maxRecent
		}
	}
}

// addSpare keeps b for a later call (p.spareMu held). Booleans are not
// kept (they are cleared when allocated).
func (p *Program) addSpare(b *hostBuf) {
	if _, ok := b.data.([]bool); ok || b.ptr == nil {
		return
	}
	n := 1
	for _, d := range b.shape {
		n *= int(d)
	}
	key := spareKey{storage(b.elem), n}
	if p.spare == nil {
		p.spare = map[spareKey][]*hostBuf{}
	}
	if len(p.spare[key]) < maxSpare {
		p.spare[key] = append(p.spare[key], b)
	}
}

// Release gives results of recent calls back to the program: their
// memory becomes the buffers of later calls (as PyTorch's caching
// allocator does with a freed tensor's), which spares a later call fresh
// pages and cold cache lines for its results. The caller must not use a
// released tensor, nor any view of its data, afterwards. Tensors that
// are not such results (inputs, results that share storage with another
// result or an input, results released before, results of calls long
// past) are left alone, so releasing them is harmless.
func (p *Program) Release(results ...*interp.Tensor) {
	p.spareMu.Lock()
	defer p.spareMu.Unlock()
	for _, t := range results {
		if t == nil {
			continue
		}
		for i := range p.recent {
			if p.recent[i].Value() == t {
				p.recent[i] = weak.Pointer[interp.Tensor]{}
				p.addSpare(bufOf(t))
				break
			}
		}
	}
}

// hostPlan is what a function's calls share: its top-level constants,
// evaluated once, and its constant buffers (loop.stores of constants at
// entry, before any kernel) as templates copied in at the first store.
type hostPlan struct {
	consts    map[*ir.Value]hostVal
	templates map[*ir.Operation]*hostBuf
	covered   map[*ir.Operation]bool
}

// plan returns f's host plan, made at its first call.
func (p *Program) plan(f *target.Func) *hostPlan {
	p.plansMu.Lock()
	defer p.plansMu.Unlock()
	if h := p.plans[f]; h != nil {
		return h
	}
	h := &hostPlan{consts: map[*ir.Value]hostVal{}, templates: map[*ir.Operation]*hostBuf{}, covered: map[*ir.Operation]bool{}}
	tmpl := map[*ir.Value]*hostBuf{} // by buffer
	isConst := func(v *ir.Value) bool { _, ok := h.consts[v]; return ok }
	ops := f.Op.Region(0).Front().Ops()
	for _, op := range ops {
		if op.Name() != "arith.constant" {
			continue
		}
		switch a := op.Attr("value").(type) {
		case ir.IntegerAttr:
			h.consts[op.Result(0)] = hostVal{i: ir.TruncInt(a.Value, op.Result(0).Type())}
		case ir.FloatAttr:
			h.consts[op.Result(0)] = hostVal{f: a.Value()}
		}
	}
	scratch := &run{p: p, f: f, h: h, vals: map[*ir.Value]hostVal{}}
	for _, op := range ops {
		if op.Name() == loop.ParallelOp {
			break // stores after a kernel keep their place
		}
		if op.Name() != loop.StoreOp {
			continue
		}
		mem := op.Operand(1)
		alloc := mem.DefiningOp()
		mt, ok := mem.Type().(*ir.MemRefType)
		if alloc == nil || alloc.Name() != loop.AllocOp || alloc.NumOperands() != 0 || !ok || !isConst(op.Operand(0)) {
			continue
		}
		all := true
		for _, ix := range op.Operands()[2:] {
			all = all && isConst(ix)
		}
		if !all {
			continue
		}
		t := tmpl[mem]
		if t == nil {
			var err error
			if t, err = newBuf(mt.ElementType(), mt.Shape()); err != nil {
				continue
			}
			clearStorage(t.data)
			tmpl[mem] = t
			h.templates[op] = t
		} else {
			h.covered[op] = true
		}
		scratch.vals[mem] = hostVal{buf: t}
		if err := scratch.store(op); err != nil {
			delete(h.templates, op) // cannot happen for a verified store; keep the op
			delete(h.covered, op)
		}
	}
	if p.plans == nil {
		p.plans = map[*target.Func]*hostPlan{}
	}
	p.plans[f] = h
	return h
}

// copyStorage copies src's elements into dst (storage slices of one type).
func copyStorage(dst, src any) {
	switch d := dst.(type) {
	case []float32:
		copy(d, src.([]float32))
	case []float64:
		copy(d, src.([]float64))
	case []uint16:
		copy(d, src.([]uint16))
	case []bool:
		copy(d, src.([]bool))
	case []int8:
		copy(d, src.([]int8))
	case []int16:
		copy(d, src.([]int16))
	case []int32:
		copy(d, src.([]int32))
	case []int64:
		copy(d, src.([]int64))
	}
}

// clearStorage zeroes a storage slice.
func clearStorage(data any) {
	switch d := data.(type) {
	case []float32:
		clear(d)
	case []float64:
		clear(d)
	case []uint16:
		clear(d)
	case []bool:
		clear(d)
	case []int8:
		clear(d)
	case []int16:
		clear(d)
	case []int32:
		clear(d)
	case []int64:
		clear(d)
	}
}

// cacheFormat changes when the library's ABI or the build changes.
const cacheFormat = "strata-cpu-4"

// Compile translates module (at the loop level), builds or reuses its
// shared library and loads it. The library is cached under the compile
// cache's directory (cache.Dir, subdirectory cpu) by the SHA-256 of the
// LLVM IR and the -mcpu, so a cached library loads without the tools;
// building one without them is an error wrapping ErrNoTools.
func Compile(module *ir.Operation) (*Program, error) {
	cpuName := target.HostCPU()
	m, err := target.TranslateFor(module, cpuName)
	if err != nil {
		return nil, err
	}
	p := &Program{mod: m, LLVM: m.LLVM.String(), CPU: cpuName, fns: map[*target.Kernel]uintptr{}, packs: map[*target.Kernel]uintptr{}}
	h := sha256.New()
	for _, part := range []string{cacheFormat, p.CPU, p.LLVM} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	dir, err := cache.Dir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "cpu")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cpu: cache directory: %w", err)
	}
	p.Library = filepath.Join(dir, hex.EncodeToString(h.Sum(nil))+".so")
	if _, err := os.Stat(p.Library); err == nil {
		p.Cached = true
	} else {
		tools, err := target.FindTools()
		if err != nil {
			return nil, err
		}
		if err := target.Build(tools, p.LLVM, p.CPU, p.Library); err != nil {
			return nil, err
		}
	}
	lib, err := purego.Dlopen(p.Library, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("cpu: loading %s: %w", p.Library, err)
	}
	for _, f := range m.Funcs {
		for _, k := range f.Kernels {
			sym, err := purego.Dlsym(lib, k.Name+"_packed")
			if err != nil {
				return nil, fmt.Errorf("cpu: %s: %w", p.Library, err)
			}
			p.fns[k] = sym
			if k.Matmul {
				if p.packs[k], err = purego.Dlsym(lib, k.Name+"_pack_packed"); err != nil {
					return nil, fmt.Errorf("cpu: %s: %w", p.Library, err)
				}
			}
		}
	}
	return p, nil
}

// Funcs returns the names of the program's functions.
func (p *Program) Funcs() []string {
	var out []string
	for n := range p.mod.Funcs {
		out = append(out, n)
	}
	return out
}

// Params returns the parameter types of function name.
func (p *Program) Params(name string) []ir.Type {
	if f := p.mod.Funcs[name]; f != nil {
		if ft := funcs.Type(f.Op); ft != nil {
			return ft.Inputs
		}
	}
	return nil
}

// hostBuf is a buffer: a Go slice of the interpreter's storage type.
type hostBuf struct {
	elem  ir.Type
	shape []int64
	data  any
	ptr   unsafe.Pointer
}

// hostVal is an SSA value of a host function.
type hostVal struct {
	i   int64
	f   float64
	buf *hostBuf
}

// newBuf allocates a buffer (loop.alloc). Its elements are not zeroed:
// loop.alloc's contents are undefined, and every buffer a lowered
// function allocates is written by a kernel before it is read. Zeroing
// a result in Go's allocator costs more than the kernel that fills it
// (16 MiB: about 1 ms on one core, page faults included, against 0.1 ms
// for the whole layer-norm kernel on 16), so numeric buffers come from
// the garbage-collected heap without it (mallocgc with needzero false:
// pointer-free memory that the collector frees as any other). Booleans
// are zeroed (a Go bool must be 0 or 1).
func newBuf(elem ir.Type, shape []int64) (*hostBuf, error) {
	if err := interp.CheckSize(elem, shape); err != nil {
		return nil, err
	}
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	// Go ends the process when an allocation fails: check large ones
	// against the memory available first (reading /proc costs ~20 µs).
	if bytes := uint64(n) * storageBytes[storage(elem)]; bytes >= 64<<20 {
		if err := interp.CheckMemory(bytes); err != nil {
			return nil, fmt.Errorf("allocating %s of shape %v: %w", elem, shape, err)
		}
	}
	var data any
	if n > 0 {
		switch storage(elem) {
		case "f32":
			data = unsafe.Slice((*float32)(rawAlloc(n*4)), n)
		case "f64":
			data = unsafe.Slice((*float64)(rawAlloc(n*8)), n)
		case "u16":
			data = unsafe.Slice((*uint16)(rawAlloc(n*2)), n)
		case "i8":
			data = unsafe.Slice((*int8)(rawAlloc(n)), n)
		case "i16":
			data = unsafe.Slice((*int16)(rawAlloc(n*2)), n)
		case "i32":
			data = unsafe.Slice((*int32)(rawAlloc(n*4)), n)
		case "i64":
			data = unsafe.Slice((*int64)(rawAlloc(n*8)), n)
		}
	}
	var t *interp.Tensor
	var err error
	if data != nil {
		t, err = interp.FromData(elem, shape, data)
	} else {
		t, err = interp.NewTensor(elem, shape)
	}
	if err != nil {
		return nil, err
	}
	return bufOf(t), nil
}

// storageBytes is the size of an element of each storage type.
var storageBytes = map[string]uint64{"f32": 4, "f64": 8, "u16": 2, "bool": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}

// storage names the Go element type of elem's storage (interp.Tensor).
func storage(elem ir.Type) string {
	switch elem {
	case ir.F32:
		return "f32"
	case ir.F64:
		return "f64"
	case ir.F16, ir.BF16:
		return "u16"
	}
	if it, ok := elem.(*ir.IntegerType); ok {
		switch it.Width {
		case 1:
			return "bool"
		case 8:
			return "i8"
		case 16:
			return "i16"
		case 32:
			return "i32"
		}
	}
	return "i64"
}

// mallocgc is the runtime's allocator; with a nil type and needzero
// false it returns pointer-free memory without clearing it.
//
//go:linkname mallocgc runtime.mallocgc
func mallocgc(size uintptr, typ unsafe.Pointer, needzero bool) unsafe.Pointer

// rawAlloc returns n bytes of uncleared, garbage-collected memory.
func rawAlloc(n int) unsafe.Pointer { return mallocgc(uintptr(n), nil, false) }

func bufOf(t *interp.Tensor) *hostBuf {
	return &hostBuf{elem: t.ElemType(), shape: t.Shape(), data: t.Data(), ptr: dataPtr(t.Data())}
}

// dataPtr returns the address of a storage slice's first element.
func dataPtr(data any) unsafe.Pointer {
	switch s := data.(type) {
	case []float32:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []float64:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []uint16:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []bool:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []int8:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []int16:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []int32:
		return unsafe.Pointer(unsafe.SliceData(s))
	case []int64:
		return unsafe.Pointer(unsafe.SliceData(s))
	}
	return nil
}

// Run calls function name on inputs (a tensor per parameter: buffers'
// elements, or rank-0 tensors for scalars) and returns its results. Input
// tensors are read, never written. A function with graph guards
// (graph-symbolize-shapes) checks them first; the kernels trust the sizes
// the lowering assumed equal (one symbol), as the GPU's do.
func (p *Program) Run(name string, inputs []*interp.Tensor) ([]*interp.Tensor, error) {
	f := p.mod.Funcs[name]
	if f == nil {
		return nil, fmt.Errorf("cpu: no function @%s", name)
	}
	entry := f.Op.Region(0).Front()
	if len(inputs) != entry.NumArguments() {
		return nil, fmt.Errorf("cpu: @%s takes %d arguments, got %d", name, entry.NumArguments(), len(inputs))
	}
	if gs, ok, err := symbolize.Guards(f.Op); ok {
		if err != nil {
			return nil, ir.Errorf(f.Op.Loc(), "'%s' op %s: %v", f.Op.Name(), symbolize.GuardsAttr, err)
		}
		shapes := make([]sym.ShapeDtype, len(inputs))
		for i, t := range inputs {
			shapes[i] = sym.ShapeDtype{Shape: t.Shape(), Dtype: t.ElemType().String()}
		}
		if _, fail := gs.Check(shapes); fail != nil {
			return nil, fmt.Errorf("cpu: @%s: %w", name, fail)
		}
	}
	r := &run{p: p, f: f, h: p.plan(f), vals: make(map[*ir.Value]hostVal, 64)}
	for i, arg := range entry.Arguments() {
		in := inputs[i]
		if mt, ok := arg.Type().(*ir.MemRefType); ok {
			if err := checkInput(mt, in); err != nil {
				return nil, fmt.Errorf("cpu: @%s argument %d: %w", name, i, err)
			}
			r.vals[arg] = hostVal{buf: bufOf(in)}
			continue
		}
		if len(in.Shape()) != 0 || in.ElemType() != arg.Type() && !(isIndex(arg.Type()) && isIndex(in.ElemType())) {
			return nil, fmt.Errorf("cpu: @%s argument %d: want a scalar %s, got %s", name, i, arg.Type(), in)
		}
		if _, ok := arg.Type().(*ir.FloatType); ok {
			r.vals[arg] = hostVal{f: in.Float64s()[0]}
		} else {
			r.vals[arg] = hostVal{i: in.Int64s()[0]}
		}
	}
	defer runtime.KeepAlive(inputs)
	return r.body(entry)
}

func isIndex(t ir.Type) bool {
	_, ok := t.(*ir.IndexType)
	return ok
}

func checkInput(mt *ir.MemRefType, in *interp.Tensor) error {
	if in.ElemType() != mt.ElementType() {
		return fmt.Errorf("want %s elements, got %s", mt.ElementType(), in)
	}
	shape := mt.Shape()
	if len(shape) != len(in.Shape()) {
		return fmt.Errorf("want rank %d (%s), got %s", len(shape), mt, in)
	}
	for d, n := range shape {
		if n != ir.Dynamic && n != in.Shape()[d] {
			return fmt.Errorf("want %s, got %s", mt, in)
		}
	}
	return nil
}

// get returns an SSA value of the call: its own, or a constant.
func (r *run) get(v *ir.Value) hostVal {
	if hv, ok := r.vals[v]; ok {
		return hv
	}
	return r.h.consts[v]
}

// run is one call of a host function.
type run struct {
	h    *hostPlan
	p    *Program
	f    *target.Func
	vals map[*ir.Value]hostVal
	// live keeps every buffer of the call reachable until it returns.
	live []*hostBuf
}

func (r *run) body(entry *ir.Block) ([]*interp.Tensor, error) {
	defer runtime.KeepAlive(r.live)
	for _, op := range entry.Ops() {
		if op.Name() == "arith.constant" && op.NumResults() == 1 {
			if _, ok := r.h.consts[op.Result(0)]; ok {
				continue
			}
		}
		if t := r.h.templates[op]; t != nil {
			copyStorage(r.get(op.Operand(1)).buf.data, t.data)
			continue
		}
		if r.h.covered[op] {
			continue
		}
		if op.Name() == "func.return" {
			out := make([]*interp.Tensor, op.NumOperands())
			for i, v := range op.Operands() {
				hv := r.get(v)
				var err error
				if hv.buf != nil {
					out[i], err = interp.FromData(hv.buf.elem, hv.buf.shape, hv.buf.data)
				} else if ft, ok := v.Type().(*ir.FloatType); ok {
					out[i], err = interp.ScalarFloat(ft, hv.f)
				} else {
					out[i], err = interp.ScalarInt(v.Type(), hv.i)
				}
				if err != nil {
					return nil, fmt.Errorf("cpu: result %d: %w", i, err)
				}
			}
			r.p.keepSpares(r.live, out)
			return out, nil
		}
		if err := r.op(op); err != nil {
			var d *ir.Diagnostic
			if errors.As(err, &d) {
				return nil, err
			}
			return nil, ir.Errorf(op.Loc(), "'%s': %v", op.Name(), err)
		}
	}
	return nil, fmt.Errorf("cpu: @%s has no func.return", r.f.Name)
}

func (r *run) op(op *ir.Operation) error {
	name := op.Name()
	get := func(i int) hostVal { return r.get(op.Operand(i)) }
	setI := func(v int64) { r.vals[op.Result(0)] = hostVal{i: ir.TruncInt(v, op.Result(0).Type())} }
	switch name {
	case "arith.constant":
		switch a := op.Attr("value").(type) {
		case ir.IntegerAttr:
			setI(a.Value)
		case ir.FloatAttr:
			r.vals[op.Result(0)] = hostVal{f: a.Value()}
		default:
			return fmt.Errorf("unsupported constant %v", op.Attr("value"))
		}
		return nil
	case "arith.addi":
		setI(get(0).i + get(1).i)
	case "arith.subi":
		setI(get(0).i - get(1).i)
	case "arith.muli":
		setI(get(0).i * get(1).i)
	case "arith.andi":
		setI(get(0).i & get(1).i)
	case "arith.ori":
		setI(get(0).i | get(1).i)
	case "arith.xori":
		setI(get(0).i ^ get(1).i)
	case "arith.maxsi":
		setI(max(get(0).i, get(1).i))
	case "arith.minsi":
		setI(min(get(0).i, get(1).i))
	case "arith.maxui":
		x, y := uint64(get(0).i), uint64(get(1).i)
		if x != y && x != 1 && y != 1 && isSize(op.Operand(0)) && isSize(op.Operand(1)) {
			// lower-to-loop sizes a broadcast dimension as the maximum
			// of the operands' sizes; unchecked, the kernels would read
			// past the smaller operand.
			return fmt.Errorf("sizes %d and %d do not broadcast (the sizes of a broadcast dimension must be equal or 1)", x, y)
		}
		setI(int64(max(x, y)))
	case "arith.minui":
		setI(int64(min(uint64(get(0).i), uint64(get(1).i))))
	case "arith.divsi", "arith.remsi", "arith.ceildivsi", "arith.floordivsi", "arith.divui", "arith.remui":
		x, y := get(0).i, get(1).i
		if y == 0 {
			return fmt.Errorf("division by zero")
		}
		switch name {
		case "arith.divsi":
			setI(x / y)
		case "arith.remsi":
			setI(x % y)
		case "arith.divui":
			setI(int64(uint64(x) / uint64(y)))
		case "arith.remui":
			setI(int64(uint64(x) % uint64(y)))
		case "arith.ceildivsi":
			q := x / y
			if x%y != 0 && (x < 0) == (y < 0) {
				q++
			}
			setI(q)
		case "arith.floordivsi":
			q := x / y
			if x%y != 0 && (x < 0) != (y < 0) {
				q--
			}
			setI(q)
		}
	case "arith.cmpi":
		p, _ := op.Attr("predicate").(ir.IntegerAttr)
		if p.Value < 0 || int(p.Value) >= len(arith.CmpIPredicateNames) {
			return fmt.Errorf("bad predicate")
		}
		x, y := get(0).i, get(1).i
		var c bool
		switch arith.CmpIPredicateNames[p.Value] {
		case "eq":
			c = x == y
		case "ne":
			c = x != y
		case "slt":
			c = x < y
		case "sle":
			c = x <= y
		case "sgt":
			c = x > y
		case "sge":
			c = x >= y
		case "ult":
			c = uint64(x) < uint64(y)
		case "ule":
			c = uint64(x) <= uint64(y)
		case "ugt":
			c = uint64(x) > uint64(y)
		case "uge":
			c = uint64(x) >= uint64(y)
		}
		r.vals[op.Result(0)] = hostVal{i: b2i(c)}
	case "arith.select":
		if a, b, ok := broadcastOperands(op); ok {
			// lower-to-loop sizes a broadcast dimension as select(a == 1,
			// b, a); unchecked, the kernels would read past the smaller
			// operand.
			if x, y := get(a).i, get(b).i; x != y && x != 1 && y != 1 {
				return fmt.Errorf("sizes %d and %d do not broadcast (the sizes of a broadcast dimension must be equal or 1)", x, y)
			}
		}
		if get(0).i != 0 {
			r.vals[op.Result(0)] = get(1)
		} else {
			r.vals[op.Result(0)] = get(2)
		}
	case "arith.index_cast", "arith.extsi", "arith.trunci":
		setI(get(0).i)
	case "arith.index_castui", "arith.extui":
		v := get(0).i
		if it, ok := op.Operand(0).Type().(*ir.IntegerType); ok && it.Width < 64 {
			v &= 1<<it.Width - 1
		}
		setI(v)
	case loop.AllocOp:
		mt := op.Result(0).Type().(*ir.MemRefType)
		shape := make([]int64, len(mt.Shape()))
		j := 0
		for d, n := range mt.Shape() {
			if n == ir.Dynamic {
				n = get(j).i
				j++
			}
			if n < 0 {
				return fmt.Errorf("negative size %d in dimension %d", n, d)
			}
			shape[d] = n
		}
		b := r.p.takeSpare(mt.ElementType(), shape)
		if b == nil {
			var err error
			if b, err = newBuf(mt.ElementType(), shape); err != nil {
				return err
			}
		}
		r.live = append(r.live, b)
		r.vals[op.Result(0)] = hostVal{buf: b}
	case loop.DeallocOp:
	case loop.DimOp:
		b := get(0).buf
		d, _ := op.Attr(loop.IndexAttr).(ir.IntegerAttr)
		if b == nil || d.Value < 0 || int(d.Value) >= len(b.shape) {
			return fmt.Errorf("bad dimension")
		}
		setI(b.shape[d.Value])
	case loop.ViewOp:
		b := get(0).buf
		mt := op.Result(0).Type().(*ir.MemRefType)
		n := int64(1)
		for _, s := range b.shape {
			n *= s
		}
		shape := append([]int64(nil), mt.Shape()...)
		known, dyn := int64(1), -1
		for d, s := range shape {
			if s == ir.Dynamic {
				dyn = d
			} else {
				known *= s
			}
		}
		if dyn >= 0 && known > 0 {
			shape[dyn] = n / known
		} else if dyn >= 0 {
			shape[dyn] = 0
		}
		r.vals[op.Result(0)] = hostVal{buf: &hostBuf{elem: b.elem, shape: shape, data: b.data, ptr: b.ptr}}
	case loop.StoreOp:
		return r.store(op)
	case loop.ParallelOp:
		return r.launch(r.f.Kernels[op])
	default:
		return fmt.Errorf("not supported on the host")
	}
	return nil
}

// isSize reports whether v is a buffer's size, or the broadcast of sizes
// (their maximum, or select(a == 1, b, a)).
func isSize(v *ir.Value) bool {
	def := v.DefiningOp()
	if def == nil {
		return false
	}
	if def.Name() == loop.DimOp || def.Name() == "arith.maxui" {
		return true
	}
	_, _, ok := broadcastOperands(def)
	return ok
}

// broadcastOperands recognises lower-to-loop's size of a broadcast
// dimension, select(cmpi eq(a, 1), b, a) of two sizes, and returns the
// operand indices of a and b (2 and 1).
func broadcastOperands(op *ir.Operation) (a, b int, ok bool) {
	if op.Name() != "arith.select" || op.NumOperands() != 3 {
		return 0, 0, false
	}
	cmp := op.Operand(0).DefiningOp()
	if cmp == nil || cmp.Name() != "arith.cmpi" || cmp.NumOperands() != 2 || cmp.Operand(0) != op.Operand(2) {
		return 0, 0, false
	}
	if pred, isInt := cmp.Attr("predicate").(ir.IntegerAttr); !isInt || pred.Value != int64(arith.CmpIEQ) {
		return 0, 0, false
	}
	one := cmp.Operand(1).DefiningOp()
	if one == nil || one.Name() != "arith.constant" {
		return 0, 0, false
	}
	if c, isInt := one.Attr("value").(ir.IntegerAttr); !isInt || c.Value != 1 {
		return 0, 0, false
	}
	if !isSize(op.Operand(2)) || !isSize(op.Operand(1)) {
		return 0, 0, false
	}
	return 2, 1, true
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// store writes one element of a buffer (constant buffers filled at
// function entry).
func (r *run) store(op *ir.Operation) error {
	v := r.get(op.Operand(0))
	b := r.get(op.Operand(1)).buf
	if b == nil {
		return fmt.Errorf("store to a non-buffer")
	}
	off := int64(0)
	for d, ix := range op.Operands()[2:] {
		i := r.get(ix).i
		if i < 0 || i >= b.shape[d] {
			return fmt.Errorf("index %d out of bounds for dimension %d of size %d", i, d, b.shape[d])
		}
		off = off*b.shape[d] + i
	}
	switch s := b.data.(type) {
	case []float32:
		s[off] = float32(v.f)
	case []float64:
		s[off] = v.f
	case []uint16:
		s[off] = uint16(ir.FloatToBits(v.f, b.elem.(*ir.FloatType)))
	case []bool:
		s[off] = v.i != 0
	case []int8:
		s[off] = int8(v.i)
	case []int16:
		s[off] = int16(v.i)
	case []int32:
		s[off] = int32(v.i)
	case []int64:
		s[off] = v.i
	default:
		return fmt.Errorf("store to %T", b.data)
	}
	return nil
}

// grain is the least work (estimated instructions) worth a goroutine.
const grain = 1 << 16

// launch runs a kernel over its outer range, split across goroutines.
func (r *run) launch(k *target.Kernel) error {
	fn := r.p.fns[k]
	if k == nil || fn == 0 {
		return fmt.Errorf("kernel not compiled")
	}
	trips := make([]int64, k.Dims)
	for d := range k.Dims {
		lb, ub, step := r.get(k.Lbs[d]).i, r.get(k.Ubs[d]).i, r.get(k.Steps[d]).i
		if step <= 0 {
			return fmt.Errorf("loop.parallel step %d is not positive", step)
		}
		trips[d] = max(0, (ub-lb+step-1)/step)
	}
	total := int64(1)
	outerDims := trips
	switch {
	case k.Flat && k.Dims > 1: // every dimension but the rows (Dims−2)
		outerDims = append(slices.Clone(trips[:k.Dims-2]), trips[k.Dims-1])
	case k.Dims > 1:
		outerDims = trips[:k.Dims-1]
	}
	for _, t := range outerDims {
		total *= t
	}
	if k.Chunk > 0 && k.Dims > 1 { // the last dimension's chunks
		total *= (trips[k.Dims-1] + k.Chunk - 1) / k.Chunk
	}
	if total == 0 || (k.Dims > 1 && trips[k.Dims-1] == 0) {
		return nil
	}
	words := make([]uint64, 0, 2*len(k.Args)+1)
	var scratch []byte
	var panels, rowBlocks, packItems, packWork, batches int64
	if k.Matmul {
		kk := r.intValue(k.MatmulK)
		if kk < 0 {
			kk = 0
		}
		// Sizes the lowering took from one operand: with dynamic shapes
		// nothing else checks them, and the kernel would read past B.
		a, b := r.get(k.MatmulA).buf, r.get(k.MatmulB).buf
		if a == nil || b == nil || k.MatmulAK >= len(a.shape) || k.MatmulBK >= len(b.shape) {
			return fmt.Errorf("matmul kernel without its operand buffers")
		}
		if ka, kb := a.shape[k.MatmulAK], b.shape[k.MatmulBK]; ka < kk || kb < kk || ka == kk && kb != kk {
			return fmt.Errorf("matmul inner dimensions differ: lhs has %d columns, rhs %d rows", ka, kb)
		}
		nb := int64(1)
		for _, t := range trips[:k.MatmulBatch] {
			nb *= t
		}
		n := trips[k.Dims-1]
		rows := trips[k.MatmulBatch]
		if k.MatmulFold { // the batches fold into A's rows
			rows, nb = rows*nb, 1
		}
		cols := int64(k.MatmulCols)
		panels = (n + cols - 1) / cols
		rowBlocks = (rows + int64(k.MatmulRows) - 1) / int64(k.MatmulRows)
		packItems = (kk + target.MatmulPackK - 1) / target.MatmulPackK
		packWork = 4 * target.MatmulPackK * (panels*cols + rowBlocks*int64(k.MatmulRows))
		kc := int64(r.p.MatmulKC)
		if kc <= 0 {
			kc = int64(target.DefaultKC(k.MatmulCols, k.MatmulElemBytes))
		}
		elems := nb * (panels*cols + rowBlocks*int64(k.MatmulRows)) * kk
		if kk > kc { // the partial sums between k blocks
			elems += nb * panels * rowBlocks * int64(k.MatmulRows) * cols
		}
		scratch = r.p.getScratch(int(max(1, elems) * int64(k.MatmulElemBytes)))
		defer r.p.scratch.Put(&scratch)
		words = append(words, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(scratch)))), uint64(r.p.rowGroup(rowBlocks)), uint64(kc))
		batches = nb
		total = nb * panels * rowBlocks
	}
	for _, c := range k.Bounds {
		b := r.get(c.Buf).buf
		lb, ub, step := r.intValue(c.Lb), r.intValue(c.Ub), r.intValue(c.Step)
		if b == nil || c.Dim >= len(b.shape) || step <= 0 || ub <= lb {
			continue
		}
		last := lb + (ub-lb-1)/step*step
		if lb < 0 || last >= b.shape[c.Dim] {
			return fmt.Errorf("sizes differ: the loop over [%d, %d) indexes dimension %d of a %v operand", lb, ub, c.Dim, b.shape)
		}
	}
	var fault []int64
	if k.Checked {
		fault = make([]int64, target.FaultWords)
		words = append(words, uint64(uintptr(unsafe.Pointer(unsafe.SliceData(fault)))))
	}
	for _, a := range k.Args {
		v := r.get(a.Value)
		if v.buf != nil {
			words = append(words, uint64(uintptr(v.buf.ptr)))
			for _, d := range a.DynDims {
				words = append(words, uint64(v.buf.shape[d]))
			}
			continue
		}
		switch t := a.Value.Type().(type) {
		case *ir.FloatType:
			switch t {
			case ir.F32:
				words = append(words, uint64(math.Float32bits(float32(v.f))))
			case ir.F64:
				words = append(words, math.Float64bits(v.f))
			default:
				words = append(words, ir.FloatToBits(v.f, t))
			}
		default:
			words = append(words, uint64(v.i))
		}
	}
	if len(words) == 0 {
		words = append(words, 0)
	}
	args := uintptr(unsafe.Pointer(&words[0]))
	if k.Matmul {
		r.p.parallel(r.p.packs[k], args, batches*packItems, packWork)
		r.p.parallel(fn, args, total, 4*int64(k.MatmulCols)*int64(k.MatmulRows)*max(1, r.intValue(k.MatmulK)))
	} else {
		r.p.parallel(fn, args, total, k.Work)
	}
	runtime.KeepAlive(words)
	runtime.KeepAlive(scratch)
	runtime.KeepAlive(fault)
	if fault != nil && fault[0] != 0 {
		return fmt.Errorf("an index is out of range: %d for dimension %d of size %d (negative indices counted from the end)", fault[1], fault[2], fault[3])
	}
	return nil
}

// rowGroup returns how many row blocks of a matmul form a group (see
// target.Kernel): all of them on up to two cores, where every worker
// streams all of A through its cache once per panel; with more, about
// √workers groups, so that each worker's A blocks stay in its L2 while it
// runs its panels (BLIS splits both the rows and the columns across
// cores the same way).
func (p *Program) rowGroup(rowBlocks int64) int64 {
	workers := p.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	groups := int64(1)
	if workers > 2 {
		groups = int64(math.Ceil(math.Sqrt(float64(workers))))
	}
	groups = max(1, min(groups, rowBlocks))
	return (rowBlocks + groups - 1) / groups
}

// intValue returns an index value: a constant's, or the run's.
func (r *run) intValue(v *ir.Value) int64 {
	if def := v.DefiningOp(); def != nil && def.Name() == "arith.constant" {
		if a, ok := def.Attr("value").(ir.IntegerAttr); ok {
			return a.Value
		}
	}
	return r.get(v).i
}

// getScratch returns a buffer of at least n bytes.
func (p *Program) getScratch(n int) []byte {
	if b, ok := p.scratch.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return unsafe.Slice((*byte)(rawAlloc(n+64)), n+64)[:n] // packed before it is read: no clearing
}

// parallel calls the kernel fn on [0, total), split into contiguous
// ranges over up to Workers goroutines, as many as the work (estimated
// instructions a point) pays for: the pool's where it is free and large
// enough (each range then in pieces that a participant done with its own
// range takes over, see pool.run), new ones otherwise.
func (p *Program) parallel(fn, args uintptr, total, work int64) {
	workers := p.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// In float64: total·work may exceed int64 for deep static nests.
	pays := max(1, min(float64(workers), float64(total)*float64(work)/grain))
	workers = int(min(int64(workers), total, int64(pays)))
	if workers <= 1 {
		purego.SyscallN(fn, args, 0, uintptr(total))
		return
	}
	// Pieces of a range (see pool.run) of at least grain each.
	pieces := int(min(maxPieces, float64(total)*float64(work)/float64(workers)/grain))
	if getPool().run(fn, args, total, workers, pieces) {
		return
	}
	// The calling goroutine runs the last range itself: one wake-up fewer,
	// on a thread that is already running.
	var wg sync.WaitGroup
	for w := range workers - 1 {
		lo := total * int64(w) / int64(workers)
		hi := total * int64(w+1) / int64(workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			purego.SyscallN(fn, args, uintptr(lo), uintptr(hi))
		}()
	}
	purego.SyscallN(fn, args, uintptr(total*int64(workers-1)/int64(workers)), uintptr(total))
	wg.Wait()
}

// FindTools is target.FindTools.
func FindTools() (target.Tools, error) { return target.FindTools() }
