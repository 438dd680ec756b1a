package ircmain

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/strata-ir/strata/internal/atomicfile"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/symbolize"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
	"github.com/strata-ir/strata/sym"
)

// runFlags are the flags of irc run.
type runFlags struct {
	pipelineFlags
	funcName string
	inputs   stringList
	outputs  stringList
	seed     optionalSeed
	shapes   stringList
	backend  string
	nvptx    nvptxFlags
	// saveInputs is the directory --save-inputs writes the arguments to.
	saveInputs string
	// pending are the --save-inputs files, written with the --output files.
	pending []atomicfile.File
	// repeat is how many more calls --repeat times after the first.
	repeat int
	// maxOps bounds the ops the interpreter runs (--max-ops; 0: no bound).
	maxOps int64
	// bound are the weights of an imported model, lifted to trailing
	// arguments for the compiling backends (see bindWeights).
	bound []interp.Value
	// signatures are the types of the input's functions before any pass:
	// their #graph.dims encodings say which sizes the arguments share.
	signatures map[string]*ir.FunctionType
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// optionalSeed is an integer flag that remembers whether it was given.
type optionalSeed struct {
	set   bool
	value uint64
}

func (s *optionalSeed) String() string {
	if !s.set {
		return ""
	}
	return strconv.FormatUint(s.value, 10)
}

func (s *optionalSeed) Set(text string) error {
	v, err := strconv.ParseUint(text, 0, 64)
	if err != nil {
		return fmt.Errorf("want a non-negative integer seed, got %q", text)
	}
	s.set, s.value = true, v
	return nil
}

// backends maps each --backend value to whether this build can run it.
// eager and interp both run the reference interpreter: eager is the name
// frontend.Compile uses for "capture, then interpret op by op".
var backends = map[string]bool{"interp": true, "eager": true, "nvptx": true, "cpu": true}

// run is irc run: execute a function of a file with the reference
// interpreter, reading arguments from .npy files and writing results to
// .npy files (or a summary to standard output).
func (t *tool) run(args []string) int {
	var f runFlags
	fs := newFlagSet(t.name + " run")
	f.register(fs)
	fs.StringVar(&f.funcName, "func", "", "run the function `name` (default: main, or the only public function)")
	fs.Var(&f.inputs, "input", "read the next argument from the .npy `file` (repeat, in argument order; bf16 arguments from float32, rounded)")
	fs.Var(&f.outputs, "output", "write the next result to the .npy `file` (repeat, in result order; bf16 results as float32)")
	fs.Var(&f.seed, "random-inputs", "make up the arguments from the random `seed` instead of --input files")
	fs.Var(&f.shapes, "shape", "with --random-inputs, make argument N of a dynamic type with `argN=7x128` (repeat)")
	fs.StringVar(&f.backend, "backend", "interp", "execute with `backend`: interp, eager (both the reference interpreter), nvptx or cpu")
	fs.StringVar(&f.saveInputs, "save-inputs", "", "write the arguments (those --random-inputs drew, say) to `dir`/arg0.npy, arg1.npy, … after a successful run")
	fs.IntVar(&f.repeat, "repeat", 0, "after the first call, time `N` more calls on the same inputs and print 'repeat: N calls, median X ms, min Y ms' on stderr")
	fs.Int64Var(&f.maxOps, "max-ops", DefaultMaxOps, "stop the interpreter with an error after it has run `N` ops, over all calls (0: no limit)")
	f.nvptx.register(fs)
	positional, status, ok := t.parseFlags(fs, t.name+" run FILE [--func NAME] [--input x.npy]... [--output y.npy]... [--random-inputs SEED] [flags]", args)
	if !ok {
		return status
	}
	if err := checkLogs(&f.pipelineFlags); err != nil {
		return t.usageErrorf("run: %v", err)
	}
	if built, known := backends[f.backend]; !known {
		return t.usageErrorf("run: unknown --backend %q (want interp, eager, nvptx or cpu)", f.backend)
	} else if !built {
		return t.usageErrorf("run: the %s backend is not built yet in this build; use --backend=interp", f.backend)
	}
	if status, ok := t.checkMode(&f); !ok {
		return status
	}
	if len(positional) != 1 {
		return t.usageErrorf("run: expected one input file, got %d", len(positional))
	}
	if f.seed.set && len(f.inputs) > 0 {
		return t.usageErrorf("run: give either --input files or --random-inputs, not both")
	}
	if f.repeat < 0 {
		return t.usageErrorf("run: --repeat must be at least 0, got %d", f.repeat)
	}
	if f.maxOps < 0 {
		return t.usageErrorf("run: --max-ops must be at least 0, got %d", f.maxOps)
	}
	if len(f.shapes) > 0 && !f.seed.set {
		return t.usageErrorf("run: --shape sets the shapes of --random-inputs arguments; an --input file's shape is its own")
	}
	imp := importerFor(positional[0])
	var name, text string
	var err error
	if imp == nil {
		if name, text, err = t.readInput(positional[0]); err != nil {
			return t.usageErrorf("run: %v", err)
		}
	} else if _, err = os.Stat(positional[0]); err != nil {
		return t.usageErrorf("run: %v", err)
	}
	pm, err := t.newPassManager(&f.pipelineFlags)
	if err != nil {
		return t.usageErrorf("run: %v", err)
	}

	src := newSource(name, text)
	fail := func(err error) int {
		// An anchor that matches nothing (passes' check before a run), in
		// the pipeline of any backend: the command line's fault.
		if pe := (*passes.PipelineError)(nil); errors.As(err, &pe) {
			return t.usageErrorf("run: --pass-pipeline: %v", err)
		}
		ds := diagnostics(err)
		for _, d := range ds {
			src.write(t.stderr, d)
		}
		if len(ds) == 0 { // never fail silently
			fmt.Fprintf(t.stderr, "%s: run: %v\n", t.name, err)
		}
		return ExitDiagnostics
	}
	ctx := t.newContext(f.allowUnregistered)
	var mod *ir.Operation
	if imp != nil { // a model file (.onnx): import it on the fly
		mod, err = imp(ctx, positional[0], "main", f.inputs)
		if err != nil {
			return t.errorf("run: %v", err)
		}
		if f.backend != "interp" && f.backend != "eager" {
			if f.bound, err = bindWeights(mod); err != nil {
				return t.errorf("run: %v", err)
			}
		}
	} else {
		mod, err = ir.Parse(ctx, text, ir.ParseOptions{Filename: name})
	}
	if err == nil {
		err = ir.Verify(mod)
	}
	if err == nil { // StableHLO (from JAX) runs as the graph ops it converts to
		err = convertStableHLO(ctx, mod)
	}
	if err == nil && imp == nil && f.backend == "nvptx" && (f.funcName == "" || f.funcName == "main") {
		// An imported model's weights are constants; bound as arguments
		// they become device buffers (the nvptx executor does not run the
		// host stores that fill constant buffers).
		f.bound, err = bindWeights(mod)
	}
	if err == nil {
		f.signatures = signatures(mod)
	}
	if err == nil && f.backend == "nvptx" {
		return t.runNVPTX(ctx, &f, name, mod, pm, fail)
	}
	if err == nil && f.backend == "cpu" {
		return t.runCPU(ctx, &f, name, mod, pm, fail)
	}
	if err == nil {
		err = pm.Run(ctx, mod)
	}
	if err != nil {
		return fail(err)
	}
	fn, err := pickFunc(mod, f.funcName)
	if err != nil {
		return t.usageErrorf("run: %s: %v", name, err)
	}
	fnName := ir.SymbolName(fn)
	ft, err := interp.FuncType(fn)
	if err != nil {
		return fail(err)
	}
	argv, status, ok := t.runArgs(&f, fnName, ft)
	if !ok {
		return status
	}
	if err := checkGuards(fn, argv); err != nil {
		if d := (*ir.Diagnostic)(nil); errors.As(err, &d) {
			return fail(err)
		}
		return t.errorf("run: @%s: %v", fnName, err)
	}
	saved, err := inputArrays(argv)
	if err != nil {
		return t.errorf("run: @%s: --save-inputs: %v", fnName, err)
	}
	in := interp.New(mod, interp.WithMaxOps(f.maxOps))
	call := func() ([]interp.Value, error) {
		results, err := in.Call(fnName, argv...)
		if err != nil && f.maxOps > 0 && in.OpsRun() > f.maxOps {
			err = withNote(err, fmt.Sprintf("irc run stops after --max-ops=%d ops; raise the limit, or 0 for none", f.maxOps))
		}
		return results, err
	}
	results, err := call()
	if err != nil {
		return fail(err)
	}
	if err := t.repeatCalls(f.repeat, func() error { _, err := call(); return err }); err != nil {
		return fail(err)
	}
	if status := t.saveInputs(&f, fnName, saved); status != ExitOK {
		return status
	}
	return t.writeResults(&f, fnName, results)
}

// DefaultMaxOps is irc run's default --max-ops: about 3 to 10 seconds of
// scalar ops in the interpreter, far more than any test or example runs,
// so that a program looping for ever (or 10^12 times) ends with a located
// error instead of running for hours.
const DefaultMaxOps = 20_000_000

// withNote adds a note to err's first diagnostic (a plain error gets the
// note appended to its text).
func withNote(err error, note string) error {
	var d *ir.Diagnostic
	if !errors.As(err, &d) {
		return fmt.Errorf("%w (%s)", err, note)
	}
	d.Note(d.Loc, "%s", note)
	return err
}

// inputArrays converts the arguments to .npy arrays before a call (which
// may write into memref arguments), for --save-inputs.
func inputArrays(argv []interp.Value) ([]*npy.Array, error) {
	out := make([]*npy.Array, len(argv))
	for i, v := range argv {
		arr, err := toArray(v)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		out[i] = arr
	}
	return out, nil
}

// saveInputs prepares the arguments' files in --save-inputs's directory,
// arg0.npy, arg1.npy, …: writeResults writes them with the --output files,
// all or none (atomicfile.WriteAll); a run without the flag writes nothing.
func (t *tool) saveInputs(f *runFlags, fnName string, arrays []*npy.Array) int {
	if f.saveInputs == "" {
		return ExitOK
	}
	if err := os.MkdirAll(f.saveInputs, 0o755); err != nil {
		return t.errorf("run: --save-inputs: %v", err)
	}
	for i, arr := range arrays {
		f.pending = append(f.pending, atomicfile.File{Path: filepath.Join(f.saveInputs, fmt.Sprintf("arg%d.npy", i)),
			Write: func(w io.Writer) error { return npy.Write(w, arr) }})
	}
	return ExitOK
}

// repeatCalls is --repeat: it times n more calls of call, then prints
// "repeat: N calls, median X ms, min Y ms" on standard error. Every
// backend calls it after its first call, on the inputs already loaded.
func (t *tool) repeatCalls(n int, call func() error) error {
	if n <= 0 {
		return nil
	}
	ms := make([]float64, n)
	for i := range ms {
		start := time.Now()
		if err := call(); err != nil {
			return err
		}
		ms[i] = float64(time.Since(start).Nanoseconds()) / 1e6
	}
	slices.Sort(ms)
	median := ms[n/2]
	if n%2 == 0 {
		median = (ms[n/2-1] + ms[n/2]) / 2
	}
	fmt.Fprintf(t.stderr, "repeat: %d calls, median %.4f ms, min %.4f ms\n", n, median, ms[0])
	return nil
}

// runArgs checks the --output count and makes the arguments of fnName of
// type ft from --input files or --random-inputs; ok is false after a
// reported error, whose exit status is status.
func (t *tool) runArgs(f *runFlags, fnName string, ft *ir.FunctionType) (argv []interp.Value, status int, ok bool) {
	if len(f.outputs) > 0 && len(f.outputs) != len(ft.Results) {
		return nil, t.usageErrorf("run: @%s has %s, got %d --output files", fnName, count(len(ft.Results), "result"), len(f.outputs)), false
	}
	// Results are shown and written through their .npy dtype: check before
	// running rather than after.
	for i, r := range ft.Results {
		if _, err := dtypeOf(ir.ElementTypeOf(r)); err != nil {
			return nil, t.usageErrorf("run: @%s: result %d of type %s: %v", fnName, i, r, err), false
		}
	}
	var err error
	if f.seed.set {
		var shapes map[int][]int64
		if shapes, err = parseShapes(f.shapes); err != nil {
			return nil, t.usageErrorf("run: %v", err), false
		}
		for n := range shapes {
			if n >= len(ft.Inputs) {
				return nil, t.usageErrorf("run: @%s: --shape arg%d: the function has %s", fnName, n, count(len(ft.Inputs), "argument")), false
			}
		}
		argv, err = randomArgs(ft.Inputs[:len(ft.Inputs)-len(f.bound)], f.seed.value, shapes)
	} else {
		argv, err = readArgs(ft.Inputs[:len(ft.Inputs)-len(f.bound)], f.inputs)
	}
	argv = append(argv, f.bound...)
	if err != nil {
		return nil, t.usageErrorf("run: @%s: %v", fnName, err), false
	}
	// Lowering turns tensors into memrefs without encodings: check the
	// arguments' sizes against the symbolic sizes of the input's types.
	if sig := f.signatures[fnName]; sig != nil && len(sig.Inputs) == len(argv) {
		shapes := make([][]int64, len(argv))
		for i, a := range argv {
			shapes[i] = a.Shape()
		}
		if _, err := graph.CheckShapes(sig.Inputs, shapes); err != nil {
			return nil, t.usageErrorf("run: @%s: %v", fnName, err), false
		}
	}
	return argv, ExitOK, true
}

// signatures returns the types of the func.func ops directly in mod,
// except those of functions with guards (graph-symbolize-shapes's), which
// check the same and more.
func signatures(mod *ir.Operation) map[string]*ir.FunctionType {
	out := map[string]*ir.FunctionType{}
	for _, r := range mod.Regions() {
		for b := r.Front(); b != nil; b = b.Next() {
			for op := b.First(); op != nil; op = op.Next() {
				if op.Name() != funcd.OpFunc {
					continue
				}
				if _, guarded, _ := symbolize.Guards(op); guarded {
					continue
				}
				if ft, err := interp.FuncType(op); err == nil {
					out[ir.SymbolName(op)] = ft
				}
			}
		}
	}
	return out
}

// writeResults writes the results to the --output files, with the
// --save-inputs files, all or none (atomicfile.WriteAll), or their summaries to
// standard output.
func (t *tool) writeResults(f *runFlags, fnName string, results []interp.Value) int {
	files := f.pending
	for i, r := range results {
		arr, err := toArray(r)
		if err != nil {
			return t.errorf("run: @%s result %d: %v", fnName, i, err)
		}
		if len(f.outputs) > 0 {
			files = append(files, atomicfile.File{Path: f.outputs[i], Write: func(w io.Writer) error { return npy.Write(w, arr) }})
			continue
		}
		fmt.Fprintf(t.stdout, "result %d: %s\n", i, summary(r, arr))
	}
	if err := atomicfile.WriteAll(files); err != nil {
		return t.errorf("run: @%s: %v", fnName, err)
	}
	return ExitOK
}

// pickFunc finds the function to run: the one named name, else main, else
// the only public function of the module.
func pickFunc(mod *ir.Operation, name string) (*ir.Operation, error) {
	var funcs, public []*ir.Operation
	if mod.NumRegions() == 0 || mod.Region(0).Front() == nil {
		return nil, errors.New("the module is empty")
	}
	for _, op := range mod.Region(0).Front().Ops() {
		if op.Name() != funcd.OpFunc {
			continue
		}
		funcs = append(funcs, op)
		if vis, _ := op.Attr(ir.SymVisibilityAttr).(ir.StringAttr); vis.Value == "" || vis.Value == "public" {
			public = append(public, op)
		}
	}
	find := func(name string) *ir.Operation {
		for _, op := range funcs {
			if ir.SymbolName(op) == name {
				return op
			}
		}
		return nil
	}
	names := func(ops []*ir.Operation) string {
		var b strings.Builder
		for i, op := range ops {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("@" + ir.SymbolName(op))
		}
		return b.String()
	}
	switch {
	case name != "":
		if fn := find(strings.TrimPrefix(name, "@")); fn != nil {
			return fn, nil
		}
		if len(funcs) == 0 {
			return nil, fmt.Errorf("no function named @%s: the module has no functions", name)
		}
		return nil, fmt.Errorf("no function named @%s (functions: %s)", strings.TrimPrefix(name, "@"), names(funcs))
	case find("main") != nil:
		return find("main"), nil
	case len(public) == 1:
		return public[0], nil
	case len(public) == 0:
		return nil, errors.New("no public function to run")
	}
	return nil, fmt.Errorf("several public functions (%s) and none is @main: choose one with --func", names(public))
}

// dtypes pairs the element types that cross the .npy boundary with their
// NumPy dtypes. index travels as int64, and bf16, which has no NumPy
// dtype, as float32: exactly on the way out, rounded to the nearest bf16
// (ties to even) on the way in.
var dtypes = []struct {
	elem ir.Type
	dt   npy.DType
}{
	{ir.F64, npy.Float64},
	{ir.F32, npy.Float32},
	{ir.F16, npy.Float16},
	{ir.BF16, npy.Float32},
	{ir.I64, npy.Int64},
	{ir.Index, npy.Int64},
	{ir.I32, npy.Int32},
	{ir.I16, npy.Int16},
	{ir.I8, npy.Int8},
	{ir.IntegerWithSign(8, ir.Unsigned), npy.Uint8},
	{ir.I1, npy.Bool},
	// The signed types hold the same values as the signless ones.
	{ir.IntegerWithSign(64, ir.Signed), npy.Int64},
	{ir.IntegerWithSign(32, ir.Signed), npy.Int32},
	{ir.IntegerWithSign(16, ir.Signed), npy.Int16},
	{ir.IntegerWithSign(8, ir.Signed), npy.Int8},
	{ir.IntegerWithSign(1, ir.Unsigned), npy.Bool},
}

// dtypeOf returns the .npy dtype of elem.
func dtypeOf(elem ir.Type) (npy.DType, error) {
	for _, d := range dtypes {
		if d.elem == elem {
			return d.dt, nil
		}
	}
	return 0, fmt.Errorf("element type %s has no .npy dtype", elem)
}

// staticShape returns the shape of a value of type t: () for a scalar, the
// dims of a tensor or vector. Dynamic dims are -1.
func staticShape(t ir.Type) ([]int64, error) {
	s, ok := t.(ir.ShapedType)
	if !ok {
		return []int64{}, nil
	}
	if !s.Ranked() {
		return nil, fmt.Errorf("unranked type %s", t)
	}
	return s.Shape(), nil
}

// pyShape formats a shape as NumPy does: (), (4,), (2, 3).
func pyShape(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		if d == ir.Dynamic {
			parts[i] = "?"
		} else {
			parts[i] = strconv.FormatInt(d, 10)
		}
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// readArgs reads one .npy file per parameter and checks it against the
// parameter's type.
func readArgs(params []ir.Type, files []string) ([]interp.Value, error) {
	if len(files) != len(params) {
		return nil, fmt.Errorf("takes %s, got %d --input files (or use --random-inputs SEED)", count(len(params), "argument"), len(files))
	}
	args := make([]interp.Value, len(params))
	for i, p := range params {
		// An array's data is read whole: check that it fits before.
		if st, err := os.Stat(files[i]); err == nil && st.Mode().IsRegular() {
			if err := interp.CheckMemory(uint64(st.Size())); err != nil {
				return nil, fmt.Errorf("argument %d: %s %w", i, files[i], err)
			}
		}
		arr, err := npy.ReadFile(files[i])
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		if args[i], err = fromArray(arr, p); err != nil {
			return nil, fmt.Errorf("argument %d (%s): %w", i, files[i], err)
		}
	}
	return args, nil
}

// fromArray converts a .npy array into a value of type t, checking its
// dtype and shape.
func fromArray(arr *npy.Array, t ir.Type) (interp.Value, error) {
	elem := ir.ElementTypeOf(t)
	dt, err := dtypeOf(elem)
	if err != nil {
		return nil, err
	}
	shape, err := staticShape(t)
	if err != nil {
		return nil, err
	}
	match := arr.DType == dt && len(arr.Shape) == len(shape)
	for i := 0; match && i < len(shape); i++ {
		match = shape[i] == ir.Dynamic || shape[i] == arr.Shape[i]
	}
	if !match {
		return nil, fmt.Errorf("expected %s (dtype %s, shape %s), got dtype %s, shape %s",
			t, dt, pyShape(shape), arr.DType, pyShape(arr.Shape))
	}
	size := dt.Size()
	bits := make([]uint64, arr.Len())
	var buf [8]byte
	for i := range bits {
		copy(buf[:], arr.Data[i*size:(i+1)*size])
		bits[i] = binary.LittleEndian.Uint64(buf[:])
		clear(buf[:])
	}
	var v *interp.Tensor
	if elem == ir.BF16 {
		vals := make([]float64, len(bits))
		for i, b := range bits {
			vals[i] = float64(math.Float32frombits(uint32(b)))
		}
		v, err = interp.FromFloat64s(elem, arr.Shape, vals)
	} else {
		v, err = interp.FromBits(elem, arr.Shape, bits)
	}
	if err != nil {
		return nil, err
	}
	return asParam(v, t), nil
}

// asParam passes v as a buffer when the parameter type t is a memref.
func asParam(v *interp.Tensor, t ir.Type) interp.Value {
	if _, ok := t.(*ir.MemRefType); ok {
		return interp.BufferFromTensor(v)
	}
	return v
}

// asTensor reads a result that is a buffer as a tensor of its elements.
func asTensor(v interp.Value) (*interp.Tensor, error) {
	if b, ok := v.(*interp.Buffer); ok {
		return b.Tensor()
	}
	t, ok := v.(*interp.Tensor)
	if !ok {
		return nil, fmt.Errorf("a %s cannot be written to .npy", v)
	}
	return t, nil
}

// toArray converts a result into a .npy array.
func toArray(v interp.Value) (*npy.Array, error) {
	t, err := asTensor(v)
	if err != nil {
		return nil, err
	}
	dt, err := dtypeOf(t.ElemType())
	if err != nil {
		return nil, err
	}
	size := dt.Size()
	bits := t.Bits()
	data := make([]byte, len(bits)*size)
	var buf [8]byte
	for i, b := range bits {
		switch {
		case dt == npy.Bool:
			b &= 1
		case t.ElemType() == ir.BF16:
			b <<= 16 // the float32 of the same value
		}
		binary.LittleEndian.PutUint64(buf[:], b)
		copy(data[i*size:], buf[:size])
	}
	return &npy.Array{DType: dt, Shape: append([]int64{}, t.Shape()...), Data: data}, nil
}

// randomArgs makes up one value per parameter from seed: floats uniform in
// [-1, 1), signed integers in [-8, 8], unsigned ones and indices in [0, 8],
// booleans fair coins. The same seed gives the same values.
func randomArgs(params []ir.Type, seed uint64, shapes map[int][]int64) ([]interp.Value, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	args := make([]interp.Value, len(params))
	for i, p := range params {
		shape, err := staticShape(p)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		if given, ok := shapes[i]; ok {
			if !fits(shape, given) {
				return nil, fmt.Errorf("--shape arg%d=%s does not fit the type %s", i, pyShape(given), p)
			}
			shape = given
		}
		n := int64(1)
		for _, d := range shape {
			if d == ir.Dynamic {
				return nil, fmt.Errorf("argument %d has the dynamic type %s: give its shape with --shape arg%d=…, or --input files", i, p, i)
			}
		}
		elem := ir.ElementTypeOf(p)
		if err := interp.CheckSize(elem, shape); err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		for _, d := range shape {
			n *= d
		}
		// The values are drawn as float64 or int64 first: up to 16 bytes
		// an element in all.
		if err := interp.CheckMemory(16 * uint64(n)); err != nil {
			return nil, fmt.Errorf("argument %d: %s of shape %s: making up its values %w", i, p, pyShape(shape), err)
		}
		var v *interp.Tensor
		switch {
		case ir.IsFloat(elem):
			vs := make([]float64, n)
			for j := range vs {
				vs[j] = 2*rng.Float64() - 1
			}
			v, err = interp.FromFloat64s(elem, shape, vs)
		case ir.IsIntOrIndex(elem):
			lo, span := int64(-8), int64(17)
			if it, ok := elem.(*ir.IntegerType); elem == ir.Index || ok && (it.Signedness == ir.Unsigned || it.Width == 1) {
				lo, span = 0, 9
				if ok && it.Width == 1 {
					span = 2
				}
			}
			vs := make([]int64, n)
			for j := range vs {
				vs[j] = lo + rng.Int64N(span)
			}
			v, err = interp.FromInt64s(elem, shape, vs)
		default:
			err = fmt.Errorf("cannot make up values of type %s", p)
		}
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		args[i] = asParam(v, p)
	}
	return args, nil
}

// maxShown is the most elements a result summary lists.
const maxShown = 16

// summary describes a result for standard output: shape, dtype, the sum
// of its elements as float64 and an FNV-1a hash of its .npy data, so that
// runs can be compared at a glance; small results also list their values.
func summary(v interp.Value, arr *npy.Array) string {
	t, _ := asTensor(v) // toArray succeeded
	var sum float64
	var values []string
	if ir.IsFloat(t.ElemType()) {
		for _, x := range t.Float64s() {
			sum += x
			values = append(values, strconv.FormatFloat(x, 'g', -1, 64))
		}
	} else {
		for _, x := range t.Int64s() {
			sum += float64(x)
			values = append(values, strconv.FormatInt(x, 10))
		}
	}
	h := fnv.New64a()
	h.Write(arr.Data)
	s := fmt.Sprintf("shape %s dtype %s sum %s hash %016x", pyShape(arr.Shape), arr.DType,
		strconv.FormatFloat(sum, 'g', -1, 64), h.Sum64())
	if len(values) <= maxShown {
		s += " values [" + strings.Join(values, " ") + "]"
	}
	return s
}

// count formats n things: "1 argument", "2 arguments".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// parseShapes reads --shape flags "argN=7x128" ("argN=" for a scalar).
func parseShapes(flags []string) (map[int][]int64, error) {
	out := map[int][]int64{}
	for _, f := range flags {
		lhs, dims, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(strings.TrimPrefix(lhs, "arg"))
		if !ok || !strings.HasPrefix(lhs, "arg") || err != nil || n < 0 {
			return nil, fmt.Errorf("--shape %q: want argN=D0xD1x…", f)
		}
		shape := []int64{}
		for d := range strings.SplitSeq(dims, "x") {
			if d == "" && dims == "" {
				break
			}
			v, err := strconv.ParseInt(d, 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("--shape %q: %q is not a size", f, d)
			}
			shape = append(shape, v)
		}
		if _, dup := out[n]; dup {
			return nil, fmt.Errorf("--shape arg%d is given twice", n)
		}
		out[n] = shape
	}
	return out, nil
}

// fits reports whether a concrete shape has the rank and static sizes of
// a parameter's shape.
func fits(param, shape []int64) bool {
	if len(param) != len(shape) {
		return false
	}
	for i, d := range param {
		if d != ir.Dynamic && d != shape[i] {
			return false
		}
	}
	return true
}

// checkGuards checks the arguments against the guards that
// graph-symbolize-shapes stored on fn, if any.
func checkGuards(fn *ir.Operation, argv []interp.Value) error {
	gs, ok, err := symbolize.Guards(fn)
	if !ok {
		return nil
	}
	if err != nil {
		return ir.Errorf(fn.Loc(), "'%s' op %s: %v", fn.Name(), symbolize.GuardsAttr, err)
	}
	inputs := make([]sym.ShapeDtype, len(argv))
	for i, v := range argv {
		if t, err := asTensor(v); err == nil {
			inputs[i] = sym.ShapeDtype{Shape: t.Shape(), Dtype: t.ElemType().String()}
		}
	}
	if _, fail := gs.Check(inputs); fail != nil {
		return fail
	}
	return nil
}
