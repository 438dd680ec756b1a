package interp

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
)

// errOutOfFuel stops a fuzzed program that runs too many ops.
var errOutOfFuel = errors.New("fuzz: out of fuel")

// fuzzFuel is how many ops one fuzzed call may execute.
const fuzzFuel = 200_000

// fuzzMaxSize bounds every static shape's element count and every integer
// attribute of a fuzzed module, so that each run is quick.
const fuzzMaxSize = 4096

// FuzzInterpret parses arbitrary text with every dialect loaded and, when it
// verifies, runs each of its functions whose arguments RandomInputs can make
// up. A run may fail (shape mismatches at run time, out-of-range indices,
// division by zero, ...) but must fail with a located diagnostic: it must
// never panic. The seeds are the repository's .mlir files.
func FuzzInterpret(f *testing.F) {
	for _, root := range []string{"../../examples", "../../test"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".mlir") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, chunk := range strings.Split(string(src), "\n// -----\n") {
				if strings.Contains(chunk, "func.func") {
					f.Add(chunk)
				}
			}
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	ctx := dialects.NewContext()
	f.Fuzz(func(t *testing.T, src string) {
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "fuzz.mlir"})
		if err != nil || ir.Verify(m) != nil || !small(m) {
			return
		}
		in := New(m)
		fuel := fuzzFuel
		for name, r := range in.rules {
			in.rules[name] = func(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
				if fuel--; fuel < 0 {
					return nil, errOutOfFuel
				}
				return r(f, op, args)
			}
		}
		for op := range topLevelFuncs(m) {
			ft, err := FuncType(op)
			if err != nil || op.NumRegions() == 0 || op.Region(0).Front() == nil {
				continue
			}
			args, err := RandomInputs(ft, 1)
			if err != nil {
				continue
			}
			fuel = fuzzFuel
			_, err = in.Call(ir.SymbolName(op), args...)
			if err == nil || errors.Is(err, errOutOfFuel) {
				continue
			}
			if len(ir.Diagnostics(err)) == 0 {
				t.Fatalf("@%s failed without a located diagnostic: %v", ir.SymbolName(op), err)
			}
		}
	})
}

// topLevelFuncs yields the func.func ops directly in module m.
func topLevelFuncs(m *ir.Operation) func(yield func(*ir.Operation) bool) {
	return func(yield func(*ir.Operation) bool) {
		for _, r := range m.Regions() {
			for b := r.Front(); b != nil; b = b.Next() {
				for op := b.First(); op != nil; op = op.Next() {
					if op.Name() == "func.func" && !yield(op) {
						return
					}
				}
			}
		}
	}
}

// small reports whether every static shape in m has at most fuzzMaxSize
// elements and every integer attribute is at most fuzzMaxSize in magnitude.
func small(m *ir.Operation) bool {
	ok := true
	smallType := func(t ir.Type) bool {
		st, shaped := t.(ir.ShapedType)
		if !shaped || !st.Ranked() {
			return true
		}
		n := int64(1)
		for _, d := range st.Shape() {
			if d > fuzzMaxSize {
				return false
			}
			if d > 0 {
				n *= d
			}
			if n > fuzzMaxSize {
				return false
			}
		}
		return true
	}
	m.Walk(func(op *ir.Operation) bool {
		for _, v := range op.Results() {
			ok = ok && smallType(v.Type())
		}
		for _, r := range op.Regions() {
			for b := r.Front(); b != nil; b = b.Next() {
				for _, a := range b.Arguments() {
					ok = ok && smallType(a.Type())
				}
			}
		}
		for _, na := range append(append(ir.DictAttr{}, op.Properties()...), op.Attributes()...) {
			if ia, isInt := na.Value.(ir.IntegerAttr); isInt && (ia.Value > fuzzMaxSize || ia.Value < -fuzzMaxSize) {
				ok = false
			}
			if ta, isType := na.Value.(ir.TypeAttr); isType {
				if ft, isFunc := ta.Type.(*ir.FunctionType); isFunc {
					for _, t := range append(append([]ir.Type{}, ft.Inputs...), ft.Results...) {
						ok = ok && smallType(t)
					}
				}
			}
		}
		return ok
	})
	return ok
}
