package togpu

import (
	"runtime"
	"slices"
	"sync"

	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// DedupKernelsPassName is the pipeline name of the pass that merges the
// kernels of a gpu.module that are the same code.
const DedupKernelsPassName = "gpu-dedup-kernels"

func init() {
	passes.Register(&passes.PassInfo{
		Name:    DedupKernelsPassName,
		Summary: "Merge the kernels of each gpu.module that are the same code, launching one of them in place of the others",
		Description: "Two kernel `gpu.func`s of one `gpu.module` are the same code when they differ in their " +
			"symbol name alone: the same ops in the same order with the same operands, properties, " +
			"attributes (the function's own included), result types and regions (locations are " +
			"ignored). The first of each such set is kept; every symbol reference to the others " +
			"(the `gpu.launch_func`s) is redirected to it and they are erased, so that code " +
			"generation, the PTX and the driver's JIT see each distinct kernel once. A model's " +
			"repeated blocks make many: ResNet-50's training step lowers to 1069 kernels of which " +
			"282 are distinct, GPT-2's to 590 of which 60 are.",
		Anchor: passes.AnyOp,
		After: []passes.Order{
			{Pass: PassName, Reason: "it merges the kernels convert-loop-to-gpu makes"},
		},
		New: func(passes.Options) (passes.Pass, error) { return dedupKernelsPass{}, nil },
	})
}

type dedupKernelsPass struct{}

func (dedupKernelsPass) Name() string { return DedupKernelsPassName }

// Run merges the identical kernels of every gpu.module nested in op and
// redirects the references to them in op.
func (dedupKernelsPass) Run(op *ir.Operation, st *passes.State) error {
	n := DedupKernels(op)
	st.Stat("num-merged", "kernels erased as the same code as another").Add(int64(n))
	if n == 0 {
		st.MarkUnchanged()
	}
	return nil
}

// DedupKernels merges, in every gpu.module nested in root, the kernels
// that are the same code (sameKernel): the first of each set is kept, the
// symbol references to the others anywhere under root are redirected to
// it, and the others are erased. It returns how many kernels it erased.
// References from outside root are not seen: root should hold every
// launch of its gpu.modules' kernels (the builtin.module).
func DedupKernels(root *ir.Operation) int {
	var mods []*ir.Operation
	root.Walk(func(o *ir.Operation) bool {
		if o.Name() == gpu.ModuleOp {
			mods = append(mods, o)
			return false
		}
		return true
	})
	// renamed maps a gpu.module's name and an erased kernel's name to the
	// kept kernel's.
	renamed := map[[2]string]string{}
	for _, mod := range mods {
		body := mod.Region(0).Front()
		if body == nil {
			continue
		}
		modName := ir.SymbolName(mod)
		var fns []*ir.Operation
		for _, fn := range body.Ops() {
			if fn.Name() == gpu.FuncOp && fn.Attr(gpu.KernelAttr) != nil {
				fns = append(fns, fn)
			}
		}
		for i, j := range sameAs(fns) {
			if j >= 0 {
				renamed[[2]string{modName, ir.SymbolName(fns[i])}] = ir.SymbolName(fns[j])
				fns[i].Erase()
			}
		}
	}
	if len(renamed) == 0 {
		return 0
	}
	root.Walk(func(o *ir.Operation) bool {
		if o.Name() == gpu.ModuleOp {
			return false
		}
		if d, ok := redirectDict(o.Properties(), renamed); ok {
			o.SetProperties(d)
		}
		if d, ok := redirectDict(o.Attributes(), renamed); ok {
			o.SetAttributes(d)
		}
		return true
	})
	return len(renamed)
}

// sameAs returns, for each kernel of fns, the index of the first kernel
// before it that is the same code (sameKernel), or -1 when none is: the
// first of each set is kept. Being the same code is an equivalence, so
// the first earlier match is a kept kernel, and each kernel's match is
// found apart from the others': the hashes, then the comparisons, run on
// every core (the IR is only read), a share of the kernels each.
// resnet50_train's backward graph of 115 kernels spent 42 ms in the first
// dedup on one core of the H200 host, on the first call's critical path.
func sameAs(fns []*ir.Operation) []int {
	keys := make([]uint64, len(fns))
	parallelShares(len(fns), func(lo, hi int) {
		h := newKernelHasher()
		for i := lo; i < hi; i++ {
			keys[i] = h.kernel(fns[i])
		}
	})
	first := map[uint64][]int{} // the kernels of each hash, in order
	for i, k := range keys {
		first[k] = append(first[k], i)
	}
	same := make([]int, len(fns))
	parallelShares(len(fns), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			same[i] = -1
			for _, j := range first[keys[i]] {
				if j >= i {
					break
				}
				if sameKernel(fns[j], fns[i]) {
					same[i] = j
					break
				}
			}
		}
	})
	return same
}

// parallelShares calls f on consecutive shares [lo, hi) of n items, one
// goroutine a share, as many shares as cores (one, on the caller's
// goroutine, for a few items).
func parallelShares(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/4)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w*n/workers, (w+1)*n/workers)
		}()
	}
	wg.Wait()
}

// redirectDict returns d with every reference @m::@k to an erased kernel
// replaced by its kept kernel, and whether it changed anything.
func redirectDict(d ir.DictAttr, renamed map[[2]string]string) (ir.DictAttr, bool) {
	var out ir.DictAttr
	for i, na := range d {
		v, ok := redirect(na.Value, renamed)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(d)
		}
		out[i].Value = v
	}
	return out, out != nil
}

// redirect returns a with references to erased kernels redirected, looking
// into arrays and dictionaries, and whether it changed.
func redirect(a ir.Attribute, renamed map[[2]string]string) (ir.Attribute, bool) {
	switch a := a.(type) {
	case ir.SymbolRefAttr:
		if len(a.Nested) != 1 {
			return a, false
		}
		if k, ok := renamed[[2]string{a.Root, a.Nested[0]}]; ok {
			return ir.SymbolRefAttr{Root: a.Root, Nested: []string{k}}, true
		}
	case ir.ArrayAttr:
		var out ir.ArrayAttr
		for i, e := range a {
			v, ok := redirect(e, renamed)
			if !ok {
				continue
			}
			if out == nil {
				out = slices.Clone(a)
			}
			out[i] = v
		}
		if out != nil {
			return out, true
		}
	case ir.DictAttr:
		if d, ok := redirectDict(a, renamed); ok {
			return d, true
		}
	}
	return a, false
}

// withoutSymName returns d without its sym_name entry.
func withoutSymName(d ir.DictAttr) ir.DictAttr {
	if d.Get(ir.SymNameAttr) == nil {
		return d
	}
	return d.With(ir.SymNameAttr, nil)
}

// sameKernel reports whether kernels a and b are the same code: equal but
// for their symbol names (and locations).
func sameKernel(a, b *ir.Operation) bool {
	if !withoutSymName(a.Properties()).Equal(withoutSymName(b.Properties())) ||
		!withoutSymName(a.Attributes()).Equal(withoutSymName(b.Attributes())) {
		return false
	}
	m := &matcher{values: map[*ir.Value]*ir.Value{}, blocks: map[*ir.Block]*ir.Block{}}
	return m.regions(a, b)
}

// matcher compares two ops' bodies, mapping the values and blocks of the
// first to those of the second as it goes.
type matcher struct {
	values map[*ir.Value]*ir.Value
	blocks map[*ir.Block]*ir.Block
}

// regions reports whether a's and b's regions are the same: as many, with
// as many blocks, whose arguments have the same types and whose ops are
// the same (op).
func (m *matcher) regions(a, b *ir.Operation) bool {
	ra, rb := a.Regions(), b.Regions()
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		ba, bb := ra[i].Blocks(), rb[i].Blocks()
		if len(ba) != len(bb) {
			return false
		}
		// Blocks first, so that branches to later blocks map.
		for j := range ba {
			m.blocks[ba[j]] = bb[j]
			if ba[j].NumArguments() != bb[j].NumArguments() {
				return false
			}
			for k, arg := range ba[j].Arguments() {
				if !sameType(arg.Type(), bb[j].Argument(k).Type()) {
					return false
				}
				m.values[arg] = bb[j].Argument(k)
			}
		}
		for j := range ba {
			oa, ob := ba[j].First(), bb[j].First()
			for ; oa != nil && ob != nil; oa, ob = oa.Next(), ob.Next() {
				if !m.op(oa, ob) {
					return false
				}
			}
			if oa != nil || ob != nil {
				return false
			}
		}
	}
	return true
}

// op reports whether ops a and b are the same, their operands the values
// already mapped, and maps their results.
func (m *matcher) op(a, b *ir.Operation) bool {
	if a.Name() != b.Name() || a.NumOperands() != b.NumOperands() || a.NumResults() != b.NumResults() ||
		len(a.Successors()) != len(b.Successors()) {
		return false
	}
	for i := range a.NumOperands() {
		if w, ok := m.values[a.Operand(i)]; !ok || w != b.Operand(i) {
			return false
		}
	}
	for i, s := range a.Successors() {
		if m.blocks[s] != b.Successors()[i] {
			return false
		}
	}
	for i := range a.NumResults() {
		if !sameType(a.Result(i).Type(), b.Result(i).Type()) {
			return false
		}
	}
	if !a.Properties().Equal(b.Properties()) || !a.Attributes().Equal(b.Attributes()) {
		return false
	}
	for i := range a.NumResults() {
		m.values[a.Result(i)] = b.Result(i)
	}
	return m.regions(a, b)
}

// sameType reports whether two types are equal (types are uniqued, so
// mostly the same pointer).
func sameType(a, b ir.Type) bool { return a == b || a.String() == b.String() }

// kernelHasher hashes kernels so that those that may be the same code
// (sameKernel) meet: kernels that are the same code hash the same. It
// mixes 64-bit words (FNV-1a's multiply on words rather than bytes): a
// collision costs only a comparison.
type kernelHasher struct {
	h     uint64
	types map[ir.Type]uint64 // the hash of each type's text, printed once a run
	names map[string]uint64  // the hash of each op and attribute name
	ids   map[*ir.Value]uint64
}

func newKernelHasher() *kernelHasher {
	return &kernelHasher{types: map[ir.Type]uint64{}, names: map[string]uint64{}, ids: map[*ir.Value]uint64{}}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// kernel returns fn's hash: its properties and attributes but its name,
// and its body (ops, operands by the order their values are defined in,
// result and argument types, attributes).
func (k *kernelHasher) kernel(fn *ir.Operation) uint64 {
	k.h = fnvOffset
	clear(k.ids)
	k.dict(withoutSymName(fn.Properties()))
	k.dict(withoutSymName(fn.Attributes()))
	k.regions(fn)
	return k.h
}

func (k *kernelHasher) regions(o *ir.Operation) {
	for _, r := range o.Regions() {
		k.word(uint64(len(r.Blocks())))
		for _, b := range r.Blocks() {
			k.word(uint64(b.NumArguments()))
			for _, a := range b.Arguments() {
				k.define(a)
				k.typ(a.Type())
			}
			for op := b.First(); op != nil; op = op.Next() {
				k.op(op)
			}
		}
	}
}

func (k *kernelHasher) op(o *ir.Operation) {
	k.name(o.Name())
	k.word(uint64(o.NumOperands()))
	for i := range o.NumOperands() {
		k.word(k.ids[o.Operand(i)])
	}
	k.word(uint64(o.NumResults()))
	for _, r := range o.Results() {
		k.define(r)
		k.typ(r.Type())
	}
	k.word(uint64(len(o.Successors())))
	k.dict(o.Properties())
	k.dict(o.Attributes())
	k.word(uint64(o.NumRegions()))
	k.regions(o)
}

// define numbers v in the order of definition.
func (k *kernelHasher) define(v *ir.Value) { k.ids[v] = uint64(len(k.ids) + 1) }

// word mixes v into the hash.
func (k *kernelHasher) word(v uint64) { k.h = (k.h ^ v) * fnvPrime }

// text returns the FNV-1a hash of s.
func text(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// name mixes in a name (of an op or attribute), hashed once a run.
func (k *kernelHasher) name(s string) {
	h, ok := k.names[s]
	if !ok {
		h = text(s)
		k.names[s] = h
	}
	k.word(h)
}

func (k *kernelHasher) typ(t ir.Type) {
	h, ok := k.types[t]
	if !ok {
		h = text(t.String())
		k.types[t] = h
	}
	k.word(h)
}

func (k *kernelHasher) dict(d ir.DictAttr) {
	k.word(uint64(len(d)))
	for _, na := range d {
		k.name(na.Name)
		k.attr(na.Value)
	}
}

// attr hashes a: the common scalar kinds by value, arrays element by
// element, the rest by their text.
func (k *kernelHasher) attr(a ir.Attribute) {
	switch a := a.(type) {
	case ir.IntegerAttr:
		k.word('i')
		k.word(uint64(a.Value))
		if a.Type != nil {
			k.typ(a.Type)
		}
	case ir.FloatAttr:
		k.word('f')
		k.word(a.Bits)
		if a.Type != nil {
			k.typ(a.Type)
		}
	case ir.StringAttr:
		k.word('s')
		k.word(text(a.Value))
	case ir.UnitAttr:
		k.word('u')
	case ir.TypeAttr:
		k.word('t')
		if a.Type != nil {
			k.typ(a.Type)
		}
	case ir.ArrayAttr:
		k.word('a')
		k.word(uint64(len(a)))
		for _, e := range a {
			k.attr(e)
		}
	case ir.DictAttr:
		k.word('d')
		k.dict(a)
	case nil:
		k.word(0)
	default:
		k.word('o')
		k.word(text(a.String()))
	}
}
