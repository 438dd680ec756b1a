package ircmain

import (
	"errors"
	"flag"
	"fmt"
	"github.com/strata-ir/strata/internal/atomicfile"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/runtime/npy"
)

// npyUsage is irc npy's help text.
const npyUsage = `usage: %[1]s npy make FILE KIND [--shape 2x3] [--dtype float32] [--seed N]
       %[1]s npy show FILE... [--all]
       %[1]s npy compare A.npy B.npy [--rtol 1e-5] [--atol 1e-8] [--equal-nan]

Makes, prints and compares .npy files, so that irc run's inputs and outputs
need no NumPy.

make writes an array of the given shape (default: a 0-d scalar, shape ()) and
dtype (bool, int8, uint8, int16, int32, int64, float16, float32, float64;
default float32). KIND is
  zeros, ones   every element 0 or 1
  rand          random, from --seed: floats uniform in [-1, 1), integers in
                [-8, 8] (unsigned and bool in their range), as irc run
                --random-inputs draws them
  arange        0, 1, 2, ... in row-major order
  a number      every element that value, e.g. 2.5
show prints each file's shape, dtype and elements (NumPy's layout; arrays of
more than 1000 elements show their first and last three along each axis,
unless --all).
compare checks that two arrays have the same shape and that every pair of
elements satisfies |a - b| <= atol + rtol*|b|, as numpy.allclose; it exits 0
when they do and 1, naming the first difference, when they do not.
`

// npy is irc npy: make, show or compare .npy files.
func (t *tool) npy(args []string) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprintf(t.stdout, npyUsage, t.name)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	switch args[0] {
	case "make":
		return t.npyMake(args[1:])
	case "show":
		return t.npyShow(args[1:])
	case "compare":
		return t.npyCompare(args[1:])
	}
	return t.usageErrorf("npy: unknown command %q (want make, show or compare; %s npy --help)", args[0], t.name)
}

// npyFlags parses the flags of an irc npy command, printing npyUsage for
// --help.
func (t *tool) npyFlags(name string, args []string, define func(fs *flag.FlagSet)) (positional []string, status int, ok bool) {
	fs := newFlagSet(t.name + " npy " + name)
	define(fs)
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(t.stdout, npyUsage, t.name)
			return nil, ExitOK, false
		}
		return nil, t.usageErrorf("npy %s: %v%s (%s npy --help)", name, err, suggestFlag(fs, err), t.name), false
	}
	return positional, ExitOK, true
}

// npyElem returns the element type irc uses for a .npy dtype.
func npyElem(dt npy.DType) ir.Type {
	for _, d := range dtypes {
		if d.dt == dt {
			return d.elem
		}
	}
	return nil
}

// parseDType reads a dtype name: NumPy's (float32) or MLIR's (f32).
func parseDType(s string) (npy.DType, error) {
	alias := map[string]string{"f16": "float16", "f32": "float32", "f64": "float64", "i1": "bool",
		"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "ui8": "uint8"}
	if a, ok := alias[s]; ok {
		s = a
	}
	for dt := npy.Bool; dt.Valid(); dt++ {
		if dt.String() == s {
			return dt, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (want bool, int8, uint8, int16, int32, int64, float16, float32 or float64)", s)
}

// parseShape reads "2x3" (or "2,3"; "" and "()" are the 0-d shape).
func parseShape(s string) ([]int64, error) {
	s = strings.Trim(strings.TrimSpace(s), "()")
	shape := []int64{}
	if s == "" {
		return shape, nil
	}
	for d := range strings.SplitSeq(strings.ReplaceAll(s, ",", "x"), "x") {
		v, err := strconv.ParseInt(strings.TrimSpace(d), 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--shape %q: %q is not a size (want e.g. 2x3)", s, d)
		}
		shape = append(shape, v)
	}
	if _, err := npy.NumElements(shape); err != nil {
		return nil, fmt.Errorf("--shape %q: %w", s, err)
	}
	return shape, nil
}

// npyMake is irc npy make FILE KIND.
func (t *tool) npyMake(args []string) int {
	var shapeText, dtypeText string
	var seed uint64
	// A negative KIND (-1) is a value, not a flag.
	var negative []string
	args = slices.DeleteFunc(slices.Clone(args), func(a string) bool {
		_, err := strconv.ParseFloat(a, 64)
		if err == nil && strings.HasPrefix(a, "-") {
			negative = append(negative, a)
			return true
		}
		return false
	})
	positional, status, ok := t.npyFlags("make", args, func(fs *flag.FlagSet) {
		fs.StringVar(&shapeText, "shape", "", "the `shape`, e.g. 2x3 (default: a 0-d scalar)")
		fs.StringVar(&dtypeText, "dtype", "float32", "the element `dtype`")
		fs.Uint64Var(&seed, "seed", 0, "with rand, the random `seed`")
	})
	if !ok {
		return status
	}
	positional = append(positional, negative...)
	if len(positional) != 2 {
		return t.usageErrorf("npy make: want FILE KIND (zeros, ones, rand, arange or a number), got %q", positional)
	}
	file, kind := positional[0], positional[1]
	shape, err := parseShape(shapeText)
	if err != nil {
		return t.usageErrorf("npy make: %v", err)
	}
	dt, err := parseDType(dtypeText)
	if err != nil {
		return t.usageErrorf("npy make: --dtype: %v", err)
	}
	elem := npyElem(dt)
	n, _ := npy.NumElements(shape)
	if err := interp.CheckMemory(16 * uint64(n)); err != nil {
		return t.usageErrorf("npy make: shape %s: %v", pyShape(shape), err)
	}
	var v *interp.Tensor
	switch kind {
	case "rand":
		vs, err := randomArgs([]ir.Type{ir.TensorOf(shape, elem)}, seed, nil)
		if err != nil {
			return t.usageErrorf("npy make: %v", err)
		}
		v = vs[0].(*interp.Tensor)
	default:
		vals := make([]float64, n)
		var fill float64
		switch kind {
		case "zeros":
		case "ones":
			fill = 1
		case "arange":
		default:
			if fill, err = strconv.ParseFloat(kind, 64); err != nil {
				return t.usageErrorf("npy make: unknown KIND %q (want zeros, ones, rand, arange or a number)", kind)
			}
			if !ir.IsFloat(elem) && fill != math.Trunc(fill) {
				return t.usageErrorf("npy make: %s is not a %s", kind, dt)
			}
		}
		for i := range vals {
			vals[i] = fill
			if kind == "arange" {
				vals[i] = float64(i)
			}
		}
		if ir.IsFloat(elem) {
			v, err = interp.FromFloat64s(elem, shape, vals)
		} else {
			ints := make([]int64, n)
			for i, x := range vals {
				ints[i] = int64(x)
			}
			v, err = interp.FromInt64s(elem, shape, ints)
		}
		if err != nil {
			return t.usageErrorf("npy make: %v", err)
		}
	}
	arr, err := toArray(v)
	if err == nil {
		err = atomicfile.Write(file, func(w io.Writer) error { return npy.Write(w, arr) })
	}
	if err != nil {
		return t.errorf("npy make: %v", err)
	}
	return ExitOK
}

// readNpyTensor reads a .npy file as an interpreter tensor.
func readNpyTensor(path string) (*npy.Array, *interp.Tensor, error) {
	arr, err := npy.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	v, err := fromArray(arr, ir.TensorOf(arr.Shape, npyElem(arr.DType)))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return arr, v.(*interp.Tensor), nil
}

// npyShow is irc npy show FILE...
func (t *tool) npyShow(args []string) int {
	var all bool
	positional, status, ok := t.npyFlags("show", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&all, "all", false, "print every element, however many")
	})
	if !ok {
		return status
	}
	if len(positional) == 0 {
		return t.usageErrorf("npy show: want one or more .npy files")
	}
	failed := false
	for _, path := range positional {
		arr, v, err := readNpyTensor(path)
		if err != nil {
			fmt.Fprintf(t.stderr, "%s: npy show: %v\n", t.name, err)
			failed = true
			continue
		}
		fmt.Fprintf(t.stdout, "%s: shape %s dtype %s\n", path, pyShape(arr.Shape), arr.DType)
		writeElements(t.stdout, v, all || arr.Len() <= 1000)
	}
	if failed {
		return ExitDiagnostics
	}
	return ExitOK
}

// writeElements prints a tensor's elements nested as NumPy prints them;
// unless all, each axis longer than six shows its first and last three.
func writeElements(w io.Writer, v *interp.Tensor, all bool) {
	var text []string
	if ir.IsFloat(v.ElemType()) {
		bits := 32 // float16 and bfloat16 values are float32 values
		if v.ElemType() == ir.F64 {
			bits = 64
		}
		for _, x := range v.Float64s() {
			text = append(text, strconv.FormatFloat(x, 'g', -1, bits))
		}
	} else {
		for _, x := range v.Int64s() {
			s := strconv.FormatInt(x, 10)
			if v.ElemType() == ir.I1 {
				s = strconv.FormatBool(x != 0)
			}
			text = append(text, s)
		}
	}
	width := 0
	for _, s := range text {
		width = max(width, len(s))
	}
	shape := v.Shape()
	var b strings.Builder
	var rec func(dim int, offset, stride int64)
	rec = func(dim int, offset, stride int64) {
		if dim == len(shape) {
			fmt.Fprintf(&b, "%*s", width, text[offset])
			return
		}
		n := shape[dim]
		inner := stride / max(n, 1)
		var shown []int64 // -1 stands for "..."
		for i := int64(0); i < n; i++ {
			if !all && n > 6 && i == 3 {
				shown = append(shown, -1)
				i = n - 3
			}
			shown = append(shown, i)
		}
		b.WriteByte('[')
		for k, i := range shown {
			if k > 0 {
				if dim == len(shape)-1 {
					b.WriteByte(' ')
				} else {
					b.WriteString(strings.Repeat("\n", len(shape)-dim-1) + strings.Repeat(" ", dim+1))
				}
			}
			if i < 0 {
				b.WriteString("...")
				continue
			}
			rec(dim+1, offset+i*inner, inner)
		}
		b.WriteByte(']')
	}
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	rec(0, 0, n)
	fmt.Fprintln(w, b.String())
}

// npyCompare is irc npy compare A B.
func (t *tool) npyCompare(args []string) int {
	var rtol, atol float64
	var equalNaN bool
	positional, status, ok := t.npyFlags("compare", args, func(fs *flag.FlagSet) {
		fs.Float64Var(&rtol, "rtol", 1e-5, "the relative tolerance")
		fs.Float64Var(&atol, "atol", 1e-8, "the absolute tolerance")
		fs.BoolVar(&equalNaN, "equal-nan", false, "count NaN as equal to NaN")
	})
	if !ok {
		return status
	}
	if len(positional) != 2 {
		return t.usageErrorf("npy compare: want two .npy files, got %d", len(positional))
	}
	if rtol < 0 || atol < 0 || math.IsNaN(rtol) || math.IsNaN(atol) {
		return t.usageErrorf("npy compare: tolerances must be non-negative")
	}
	a, av, err := readNpyTensor(positional[0])
	if err != nil {
		return t.errorf("npy compare: %v", err)
	}
	b, bv, err := readNpyTensor(positional[1])
	if err != nil {
		return t.errorf("npy compare: %v", err)
	}
	if !slicesEqual(a.Shape, b.Shape) {
		return t.errorf("npy compare: the shapes differ: %s %s, %s %s", positional[0], pyShape(a.Shape), positional[1], pyShape(b.Shape))
	}
	x, y := float64s(av), float64s(bv)
	bad, first, worst := 0, -1, 0.0
	for i := range x {
		d := math.Abs(x[i] - y[i])
		close := d <= atol+rtol*math.Abs(y[i])
		switch {
		case math.IsNaN(x[i]) || math.IsNaN(y[i]):
			close = equalNaN && math.IsNaN(x[i]) && math.IsNaN(y[i])
		case math.IsInf(x[i], 0) || math.IsInf(y[i], 0):
			close, d = x[i] == y[i], 0
		}
		if !math.IsNaN(d) {
			worst = max(worst, d)
		}
		if !close {
			bad++
			if first < 0 {
				first = i
			}
		}
	}
	tol := fmt.Sprintf("rtol=%g atol=%g", rtol, atol)
	if bad == 0 {
		fmt.Fprintf(t.stdout, "equal within %s: %s, max |a-b| %g\n", tol, count(len(x), "element"), worst)
		return ExitOK
	}
	fmt.Fprintf(t.stdout, "not equal within %s: %d of %s differ, max |a-b| %g; first at %s: %g vs %g\n",
		tol, bad, count(len(x), "element"), worst, pyIndex(first, a.Shape), x[first], y[first])
	return ExitDiagnostics
}

// float64s returns a tensor's elements as float64, integers included.
func float64s(v *interp.Tensor) []float64 {
	if ir.IsFloat(v.ElemType()) {
		return v.Float64s()
	}
	ints := v.Int64s()
	out := make([]float64, len(ints))
	for i, x := range ints {
		out[i] = float64(x)
	}
	return out
}

// pyIndex formats the multi-index of the flat row-major index i.
func pyIndex(i int, shape []int64) string {
	idx := make([]string, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = strconv.FormatInt(int64(i)%shape[d], 10)
		i /= int(shape[d])
	}
	return "[" + strings.Join(idx, ", ") + "]"
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
