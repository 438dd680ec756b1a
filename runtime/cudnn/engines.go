package cudnn

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/strata-ir/strata/runtime/cuda"
)

// cuDNN 9's graph API (cudnnBackend*): a convolution as a one-operation
// graph whose heuristic lists engine configurations, each with the
// engine's behaviour notes. The legacy entry points (cudnnConvolution*,
// *_v7 heuristics) run the same engines but cannot say which of them
// compiles its kernel at run time (NVRTC): on the H200 the first call of
// cnn_small_train's 3-channel filter gradient took 1.67 s in the legacy
// API, as long as one runtime compilation (bench/NOTES.md, session 12).
// Through the graph API a plan leaves out the engines noted
// CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION, as PyTorch does by default.

// The graph API's enums (cudnn_graph.h), all int32 but the attribute
// values typed INT64.
const (
	// cudnnBackendDescriptorType_t
	descConvolution   = 1
	descEngine        = 2
	descEngineCfg     = 3
	descEngineHeur    = 4
	descExecutionPlan = 5
	descConvForward   = 10
	descConvBwdFilter = 11
	descConvBwdData   = 12
	descOpGraph       = 15
	descVariantPack   = 16
	descTensor        = 17

	// cudnnBackendAttributeType_t
	typeHandle        = 0
	typeDataType      = 1
	typeInt64         = 3
	typeFloat         = 4
	typeVoidPtr       = 6
	typeConvMode      = 7
	typeHeurMode      = 8
	typeNumericalNote = 11
	typeDescriptor    = 15
	typeBehaviorNote  = 19
	// maxNotes bounds the notes an engine may list (cuDNN 9.x has 10
	// kinds of numerical notes and 4 of behaviour notes).
	maxNotes = 64

	// cudnnBackendAttributeName_t
	attrConvCompType      = 100
	attrConvMode          = 101
	attrConvDilations     = 102
	attrConvStrides       = 103
	attrConvPostPaddings  = 104
	attrConvPrePaddings   = 105
	attrConvSpatialDims   = 106
	attrHeurMode          = 200
	attrHeurOpGraph       = 201
	attrHeurResults       = 202
	attrCfgEngine         = 300
	attrPlanHandle        = 400
	attrPlanEngineCfg     = 401
	attrPlanWorkspace     = 402
	attrFwdAlpha          = 700
	attrFwdBeta           = 701
	attrFwdConv           = 702
	attrFwdW              = 703
	attrFwdX              = 704
	attrFwdY              = 705
	attrBwdDataAlpha      = 706
	attrBwdDataBeta       = 707
	attrBwdDataConv       = 708
	attrBwdDataW          = 709
	attrBwdDataDX         = 710
	attrBwdDataDY         = 711
	attrBwdFilterAlpha    = 712
	attrBwdFilterBeta     = 713
	attrBwdFilterConv     = 714
	attrBwdFilterDW       = 715
	attrBwdFilterX        = 716
	attrBwdFilterDY       = 717
	attrGraphHandle       = 800
	attrGraphOps          = 801
	attrTensorAlignment   = 900
	attrTensorDataType    = 901
	attrTensorDims        = 902
	attrTensorStrides     = 903
	attrTensorUID         = 906
	attrPackUIDs          = 1000
	attrPackPointers      = 1001
	attrPackWorkspace     = 1003
	attrEngineGlobalIndex = 1301
	attrEngineNumerical   = 1303
	attrEngineBehavior    = 1305

	// cudnnBackendHeurMode_t
	heurModeFallback = 2
	heurModeA        = 3

	// cudnnBackendBehaviorNote_t
	noteRuntimeCompilation = 0
	// cudnnBackendNumericalNote_t
	noteDownConvertInputs   = 1
	noteReducedPrecisionSum = 2
)

// enginesPerPlan is how many engine configurations a plan finalizes, the
// heuristic's first that need no runtime compilation: choose times them
// all (twice each) on the first call.
const enginesPerPlan = 5

// tensorAlignment is the byte alignment a plan's tensors declare. The
// Runtime's buffers start where cuMemAlloc's do (256 bytes); a call with
// an operand aligned less runs on the legacy API.
const tensorAlignment = 16

// The unique ids of a graph's tensors, in the order of a call's operands.
const (
	uidX = 1 + iota
	uidW
	uidY
)

// graphAPI holds the graph API's entry points, bound when the library
// has them all.
type graphAPI struct {
	create   func(t int32, d *uintptr) Status
	destroy  func(d uintptr) Status
	finalize func(d uintptr) Status
	set      func(d uintptr, name, typ int32, n int64, elems unsafe.Pointer) Status
	get      func(d uintptr, name, typ int32, requested int64, n *int64, elems unsafe.Pointer) Status
	execute  func(h, plan, pack uintptr) Status
}

// bindGraphAPI binds the graph API from the library handle h; nil when
// one entry point is missing (the legacy API then runs every plan).
func bindGraphAPI(h uintptr) *graphAPI {
	g := &graphAPI{}
	for _, s := range []struct {
		name string
		fn   any
	}{
		{"cudnnBackendCreateDescriptor", &g.create},
		{"cudnnBackendDestroyDescriptor", &g.destroy},
		{"cudnnBackendFinalize", &g.finalize},
		{"cudnnBackendSetAttribute", &g.set},
		{"cudnnBackendGetAttribute", &g.get},
		{"cudnnBackendExecute", &g.execute},
	} {
		addr, err := purego.Dlsym(h, s.name)
		if err != nil || addr == 0 {
			return nil
		}
		purego.RegisterFunc(s.fn, addr)
	}
	return g
}

// APIEnv is the environment variable that picks the cuDNN API a Handle
// plans convolutions with, for measurements: "legacy" uses the legacy
// entry points (every algorithm the v7 heuristic lists, runtime-compiled
// or not); unset or "graph", the graph API's engines without runtime
// compilation, the legacy API where they give no plan.
const APIEnv = "STRATA_CUDNN_API"

// useGraphAPI reads APIEnv: an unknown value is an error naming the
// values it takes.
func useGraphAPI() (bool, error) {
	switch v := os.Getenv(APIEnv); v {
	case "", "graph":
		return true, nil
	case "legacy":
		return false, nil
	default:
		return true, fmt.Errorf("$%s=%q: want graph or legacy", APIEnv, v)
	}
}

// builder makes one plan's graph API descriptors, keeping each it creates
// (descs) for the plan to destroy, and the first error: after one, every
// step is skipped.
type builder struct {
	l     *lib
	descs []uintptr
	err   error
}

// create makes a descriptor of type t.
func (b *builder) create(t int32) uintptr {
	if b.err != nil {
		return 0
	}
	var d uintptr
	if b.err = b.l.check("cudnnBackendCreateDescriptor", b.l.graph.create(t, &d)); b.err != nil {
		return 0
	}
	b.descs = append(b.descs, d)
	return d
}

// set sets attribute name of d to the n elements of type typ at elems.
func (b *builder) set(d uintptr, name, typ int32, n int, elems unsafe.Pointer) {
	if b.err != nil {
		return
	}
	if s := b.l.graph.set(d, name, typ, int64(n), elems); s != 0 {
		b.err = fmt.Errorf("attribute %d: %w", name, b.l.check("cudnnBackendSetAttribute", s))
	}
}

// int64s sets attribute name of d to vs, one value or more (an
// attribute of none is an error: the descriptors take none).
func (b *builder) int64s(d uintptr, name int32, vs ...int64) {
	if len(vs) == 0 {
		if b.err == nil {
			b.err = fmt.Errorf("attribute %d: no values", name)
		}
		return
	}
	b.set(d, name, typeInt64, len(vs), unsafe.Pointer(&vs[0]))
	runtime.KeepAlive(vs)
}

func (b *builder) enum(d uintptr, name, typ, v int32) { b.set(d, name, typ, 1, unsafe.Pointer(&v)) }

func (b *builder) desc(d uintptr, name int32, v uintptr) {
	b.set(d, name, typeDescriptor, 1, unsafe.Pointer(&v))
}

func (b *builder) float(d uintptr, name int32, v float32) {
	b.set(d, name, typeFloat, 1, unsafe.Pointer(&v))
}

func (b *builder) handle(d uintptr, name int32, h uintptr) {
	b.set(d, name, typeHandle, 1, unsafe.Pointer(&h))
}

// finalize finalizes d.
func (b *builder) finalize(d uintptr) {
	if b.err == nil {
		b.err = b.l.check("cudnnBackendFinalize", b.l.graph.finalize(d))
	}
}

// tensor makes a finalized tensor descriptor of dims (in NCHW order) with
// the strides of layout.
func (b *builder) tensor(uid int64, dt DataType, layout Layout, dims [4]int64) uintptr {
	st := strides(layout, dims)
	d := b.create(descTensor)
	b.enum(d, attrTensorDataType, typeDataType, int32(dt))
	b.int64s(d, attrTensorDims, dims[:]...)
	b.int64s(d, attrTensorStrides, st[:]...)
	b.int64s(d, attrTensorUID, uid)
	b.int64s(d, attrTensorAlignment, tensorAlignment)
	b.finalize(d)
	return d
}

// strides returns the strides, in elements, of a tensor of dims (in NCHW
// order: N, C, H, W, or O, C, KH, KW) stored in layout.
func strides(layout Layout, dims [4]int64) [4]int64 {
	c, h, w := dims[1], dims[2], dims[3]
	if layout == NHWC {
		return [4]int64{h * w * c, 1, w * c, c}
	}
	return [4]int64{c * h * w, h * w, w, 1}
}

// opGraph makes the finalized one-operation graph of key on handle h.
func (b *builder) opGraph(h uintptr, key planKey) uintptr {
	c := key.Conv
	oh, ow := c.Out()
	x := b.tensor(uidX, c.Type, c.Layout, [4]int64{c.N, c.C, c.H, c.W})
	w := b.tensor(uidW, c.Type, c.Layout, [4]int64{c.O, c.C, c.KH, c.KW})
	y := b.tensor(uidY, c.Type, c.Layout, [4]int64{c.N, c.O, oh, ow})
	conv := b.create(descConvolution)
	b.enum(conv, attrConvCompType, typeDataType, dataFloat)
	b.enum(conv, attrConvMode, typeConvMode, crossCorrelation)
	b.int64s(conv, attrConvSpatialDims, 2)
	b.int64s(conv, attrConvDilations, c.Dilate[:]...)
	b.int64s(conv, attrConvStrides, c.Stride[:]...)
	b.int64s(conv, attrConvPrePaddings, c.Pad[:]...)
	b.int64s(conv, attrConvPostPaddings, c.Pad[:]...)
	b.finalize(conv)
	// Per direction: the operation's type and its attributes for alpha,
	// beta, the convolution, then x, w and y (or their gradients).
	attrs := map[Direction][6]int32{
		DirForward:        {attrFwdAlpha, attrFwdBeta, attrFwdConv, attrFwdX, attrFwdW, attrFwdY},
		DirBackwardData:   {attrBwdDataAlpha, attrBwdDataBeta, attrBwdDataConv, attrBwdDataDX, attrBwdDataW, attrBwdDataDY},
		DirBackwardFilter: {attrBwdFilterAlpha, attrBwdFilterBeta, attrBwdFilterConv, attrBwdFilterX, attrBwdFilterDW, attrBwdFilterDY},
	}[key.dir]
	op := b.create([...]int32{descConvForward, descConvBwdData, descConvBwdFilter}[key.dir])
	b.float(op, attrs[0], 1)
	b.float(op, attrs[1], 0)
	b.desc(op, attrs[2], conv)
	b.desc(op, attrs[3], x)
	b.desc(op, attrs[4], w)
	b.desc(op, attrs[5], y)
	b.finalize(op)
	g := b.create(descOpGraph)
	b.handle(g, attrGraphHandle, h)
	b.desc(g, attrGraphOps, op)
	b.finalize(g)
	return g
}

// engineConfigs returns the engine configurations the heuristic of mode
// ranks for graph g, best first.
func (b *builder) engineConfigs(g uintptr, mode int32) []uintptr {
	heur := b.create(descEngineHeur)
	b.desc(heur, attrHeurOpGraph, g)
	b.enum(heur, attrHeurMode, typeHeurMode, mode)
	b.finalize(heur)
	if b.err != nil {
		return nil
	}
	var n int64
	if b.err = b.l.check("cudnnBackendGetAttribute", b.l.graph.get(heur, attrHeurResults, typeDescriptor, 0, &n, nil)); b.err != nil || n == 0 {
		return nil
	}
	cfgs := make([]uintptr, n)
	for i := range cfgs {
		cfgs[i] = b.create(descEngineCfg)
	}
	if b.err != nil {
		return nil
	}
	var got int64
	b.err = b.l.check("cudnnBackendGetAttribute", b.l.graph.get(heur, attrHeurResults, typeDescriptor, n, &got, unsafe.Pointer(&cfgs[0])))
	runtime.KeepAlive(cfgs)
	return cfgs[:min(got, n)]
}

// engineOf describes the engine of configuration cfg: its global index,
// and why a plan leaves it out ("" when it does not).
func (b *builder) engineOf(cfg uintptr) (index int64, skip string) {
	e := b.create(descEngine)
	if b.err != nil {
		return 0, ""
	}
	var n int64
	if b.err = b.l.check("cudnnBackendGetAttribute", b.l.graph.get(cfg, attrCfgEngine, typeDescriptor, 1, &n, unsafe.Pointer(&e))); b.err != nil {
		return 0, ""
	}
	// An index the library does not give stays -1 (it only names the
	// engine in the logs).
	index = -1
	_ = b.l.graph.get(e, attrEngineGlobalIndex, typeInt64, 1, &n, unsafe.Pointer(&index))
	behavior, ok := b.notes(e, attrEngineBehavior, typeBehaviorNote)
	if !ok {
		return index, "unreadable behaviour notes"
	}
	for _, note := range behavior {
		if note == noteRuntimeCompilation {
			return index, "runtime compilation"
		}
	}
	numerical, ok := b.notes(e, attrEngineNumerical, typeNumericalNote)
	if !ok {
		return index, "unreadable numerical notes"
	}
	for _, note := range numerical {
		// Strata's convolutions sum in f32 from operands as they are: an
		// engine that rounds them or its sums to less would differ from
		// the interpreter.
		switch note {
		case noteDownConvertInputs:
			return index, "down-converted inputs"
		case noteReducedPrecisionSum:
			return index, "reduced-precision sums"
		}
	}
	return index, ""
}

// notes reads engine e's notes of attribute name (of type typ, an enum):
// their count first, then that many. ok is false when the library
// answers neither.
func (b *builder) notes(e uintptr, name, typ int32) (notes []int32, ok bool) {
	var n int64
	if b.l.graph.get(e, name, typ, 0, &n, nil) != 0 || n < 0 || n > maxNotes {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	notes = make([]int32, n)
	var got int64
	if b.l.graph.get(e, name, typ, n, &got, unsafe.Pointer(&notes[0])) != 0 {
		return nil, false
	}
	return notes[:min(got, n)], true
}

// executionPlan finalizes the execution plan of cfg on handle h and
// returns it with its workspace; a plan the library refuses is 0 with
// the refusal, which does not stop the builder.
func (b *builder) executionPlan(h, cfg uintptr) (uintptr, uint64, error) {
	p := b.create(descExecutionPlan)
	b.handle(p, attrPlanHandle, h)
	b.desc(p, attrPlanEngineCfg, cfg)
	if b.err != nil {
		return 0, 0, nil
	}
	if err := b.l.check("cudnnBackendFinalize", b.l.graph.finalize(p)); err != nil {
		return 0, 0, err
	}
	var ws, n int64
	if err := b.l.check("cudnnBackendGetAttribute", b.l.graph.get(p, attrPlanWorkspace, typeInt64, 1, &n, unsafe.Pointer(&ws))); err != nil {
		return 0, 0, err
	}
	return p, uint64(ws), nil
}

// enginePlan makes key's plan on the graph API: up to enginesPerPlan
// execution plans of the heuristic's configurations (mode A, then the
// fallback list) that compile nothing at run time and fit the workspace,
// best first, and says which configurations it left out and why. It
// returns nil and why when there is none (the caller then plans on the
// legacy API); the plan's descriptors are destroyed then. The context is
// current.
func (hd *Handle) enginePlan(key planKey) (*plan, string) {
	b := &builder{l: hd.lib}
	g := b.opGraph(hd.h, key)
	p := &plan{}
	skipped := map[string]int{}
	var refused []string
	// Where a slow plan's time goes, for its log line: the heuristics'
	// queries, or finalizing the candidates' execution plans.
	var heurTime, finTime time.Duration
	configs, finalized := 0, 0
	for _, mode := range []int32{heurModeA, heurModeFallback} {
		began := time.Now()
		cfgs := b.engineConfigs(g, mode)
		heurTime += time.Since(began)
		configs += len(cfgs)
		for _, cfg := range cfgs {
			if len(p.cands) == enginesPerPlan || b.err != nil {
				break
			}
			index, skip := b.engineOf(cfg)
			if skip != "" {
				skipped[skip]++
				continue
			}
			if b.err != nil {
				break
			}
			began := time.Now()
			ex, ws, err := b.executionPlan(hd.h, cfg)
			finTime += time.Since(began)
			finalized++
			switch {
			case err != nil:
				refused = append(refused, fmt.Sprintf("engine %d: %v", index, err))
			case ex != 0 && ws > WorkspaceBytes:
				skipped[fmt.Sprintf("over %d MiB of workspace", WorkspaceBytes>>20)]++
			case ex != 0:
				p.cands = append(p.cands, candidate{exec: ex, engine: index})
			}
		}
		if len(p.cands) > 0 || b.err != nil {
			break
		}
	}
	p.descs = b.descs
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(skipped)) {
		parts = append(parts, fmt.Sprintf("%d left out for %s", skipped[s], s))
	}
	parts = append(parts, refused...)
	parts = append(parts, fmt.Sprintf("heuristics %.1f ms for %d configurations, %d execution plans finalized in %.1f ms",
		float64(heurTime.Microseconds())/1000, configs, finalized, float64(finTime.Microseconds())/1000))
	note := strings.Join(parts, "; ")
	if len(p.cands) > 0 && b.err == nil {
		return p, note
	}
	why := "no engine"
	if b.err != nil {
		why = b.err.Error()
	}
	if note != "" {
		why += " (" + note + ")"
	}
	if err := p.destroy(hd.lib); err != nil {
		why += "; " + err.Error()
	}
	return nil, why
}

// execute queues candidate c's execution plan on the handle's stream with
// the operands ops (x, w, y: their uids' order) and the workspace.
func (hd *Handle) execute(c candidate, ops [3]cuda.DevicePtr, workspace cuda.DevicePtr) Status {
	l := hd.lib
	var pack uintptr
	if s := l.graph.create(descVariantPack, &pack); s != 0 {
		return s
	}
	uids := [3]int64{uidX, uidW, uidY}
	ptrs := [3]uintptr{uintptr(ops[0]), uintptr(ops[1]), uintptr(ops[2])}
	ws := uintptr(workspace)
	s := l.graph.set(pack, attrPackUIDs, typeInt64, 3, unsafe.Pointer(&uids[0]))
	if s == 0 {
		s = l.graph.set(pack, attrPackPointers, typeVoidPtr, 3, unsafe.Pointer(&ptrs[0]))
	}
	if s == 0 {
		s = l.graph.set(pack, attrPackWorkspace, typeVoidPtr, 1, unsafe.Pointer(&ws))
	}
	if s == 0 {
		s = l.graph.finalize(pack)
	}
	if s == 0 {
		s = l.graph.execute(hd.h, c.exec, pack)
	}
	runtime.KeepAlive(&uids)
	runtime.KeepAlive(&ptrs)
	if d := l.graph.destroy(pack); s == 0 {
		s = d
	}
	return s
}

// aligned reports whether every operand is aligned as a graph API plan's
// tensors declare.
func aligned(ops [3]cuda.DevicePtr) bool {
	for _, p := range ops {
		if p%tensorAlignment != 0 {
			return false
		}
	}
	return true
}
