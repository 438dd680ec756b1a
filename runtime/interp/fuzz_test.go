package interp

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/internal/fuzzwatch"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// errOutOfFuel stops a fuzzed program that runs too many ops.
var errOutOfFuel = errors.New("fuzz: out of fuel")

// fuzzFuel is how many ops one fuzzed call may execute.
const fuzzFuel = 200_000

// fuzzMaxSize bounds every static shape's element count and every integer
// attribute of a fuzzed module, so that each run is quick.
const fuzzMaxSize = 4096

// seedModules returns the chunks of the repository's .mlir files (split at
// "// -----" lines) that hold a func.func.
func seedModules(f *testing.F) []string {
	var out []string
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
					out = append(out, chunk)
				}
			}
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	return out
}

// fuelled returns an interpreter for m whose every rule fails with
// errOutOfFuel once *fuel ops have run.
func fuelled(m *ir.Operation, fuel *int) *Interpreter {
	in := New(m)
	for name, r := range in.rules {
		in.rules[name] = func(f *Frame, op *ir.Operation, args []Value) ([]Value, error) {
			if *fuel--; *fuel < 0 {
				return nil, errOutOfFuel
			}
			return r(f, op, args)
		}
	}
	return in
}

// FuzzInterpret parses arbitrary text with every dialect loaded and, when it
// verifies, runs each of its functions whose arguments RandomInputs can make
// up. A run may fail (shape mismatches at run time, out-of-range indices,
// division by zero, ...) but must fail with a located diagnostic: it must
// never panic. The seeds are the repository's .mlir files.
func FuzzInterpret(f *testing.F) {
	for _, chunk := range seedModules(f) {
		f.Add(chunk)
	}
	ctx := dialects.NewContext()
	f.Fuzz(func(t *testing.T, src string) {
		defer fuzzwatch.Start(src)()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "fuzz.mlir"})
		if err != nil || ir.Verify(m) != nil || !small(m) {
			return
		}
		fuel := fuzzFuel
		in := fuelled(m, &fuel)
		for op, ft := range runnableFuncs(m) {
			args, _ := RandomInputs(ft, 1)
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

// runnableFuncs yields the func.func ops directly in module m that have a
// body and a signature RandomInputs can make arguments for, each with its
// type.
func runnableFuncs(m *ir.Operation) func(yield func(*ir.Operation, *ir.FunctionType) bool) {
	return func(yield func(*ir.Operation, *ir.FunctionType) bool) {
		for _, r := range m.Regions() {
			for b := r.Front(); b != nil; b = b.Next() {
				for op := b.First(); op != nil; op = op.Next() {
					if op.Name() != "func.func" || op.NumRegions() == 0 || op.Region(0).Front() == nil {
						continue
					}
					ft, err := FuncType(op)
					if err != nil {
						continue
					}
					if _, err := RandomInputs(ft, 1); err != nil {
						continue
					}
					if !yield(op, ft) {
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

// Special values the mutating fuzzer writes into attributes.
var (
	specialInts = []int64{0, 1, -1, 2, 3, -2, 4, 7, 8, 16, 31, 32, 33, 63, 64, 65, 100, 127, 128, 255, 256,
		1000, 4096, 4097, -100, -4096, math.MaxInt32, math.MinInt32, math.MaxUint32, math.MaxInt64, math.MinInt64, 1 << 62}
	specialFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e30,
		1e-30, 65504, 65520, math.MaxFloat32, 5e-324, 1e-45, 3, -2.5}
)

// mutate applies edits to m's attributes, three bytes an edit: what to do,
// which attribute (in walk order, modulo their number) and which value.
// Integer attributes take a special value (kind 0) or move by a small
// signed amount (kind 3), float attributes a special value (kind 1), and
// dense arrays one element a special value (kind 2). Values are wrapped to
// the attribute's type, so the result is what a parser could produce.
func mutate(m *ir.Operation, edits []byte) {
	type slot struct {
		op   *ir.Operation
		prop bool
		name string
		attr ir.Attribute
	}
	var ints, floats, arrays []slot
	m.Walk(func(op *ir.Operation) bool {
		for _, d := range []struct {
			prop  bool
			attrs ir.DictAttr
		}{{true, op.Properties()}, {false, op.Attributes()}} {
			for _, na := range d.attrs {
				s := slot{op, d.prop, na.Name, na.Value}
				switch a := na.Value.(type) {
				case ir.IntegerAttr:
					ints = append(ints, s)
				case ir.FloatAttr:
					floats = append(floats, s)
				case ir.DenseArrayAttr:
					if len(a.Values)+len(a.Floats) > 0 {
						arrays = append(arrays, s)
					}
				}
			}
		}
		return true
	})
	set := func(s slot, a ir.Attribute) {
		if s.prop {
			s.op.SetProperty(s.name, a)
		} else {
			s.op.SetAttr(s.name, a)
		}
	}
	for ; len(edits) >= 3; edits = edits[3:] {
		kind, which, val := edits[0]%4, int(edits[1]), edits[2]
		switch {
		case (kind == 0 || kind == 3) && len(ints) > 0:
			s := &ints[which%len(ints)]
			a := s.attr.(ir.IntegerAttr)
			if kind == 0 {
				a.Value = specialInts[int(val)%len(specialInts)]
			} else {
				a.Value += int64(int8(val))
			}
			a.Value = ir.TruncInt(a.Value, a.Type)
			s.attr = a
			set(*s, a)
		case kind == 1 && len(floats) > 0:
			s := &floats[which%len(floats)]
			a := ir.Float(specialFloats[int(val)%len(specialFloats)], s.attr.(ir.FloatAttr).Type)
			s.attr = a
			set(*s, a)
		case kind == 2 && len(arrays) > 0:
			s := &arrays[which%len(arrays)]
			a := s.attr.(ir.DenseArrayAttr)
			if a.Floats != nil {
				a.Floats = slices.Clone(a.Floats)
				a.Floats[int(val)%len(a.Floats)] = specialFloats[int(val)%len(specialFloats)]
			} else {
				a.Values = slices.Clone(a.Values)
				a.Values[int(val)%len(a.Values)] = ir.TruncInt(specialInts[int(val/8)%len(specialInts)], a.Elem)
			}
			s.attr = a
			set(*s, a)
		}
	}
}

// FuzzMutatedModules takes a module that verifies, changes its attributes
// (mutate: axes, shapes, permutations, constants, loop bounds, ...) and,
// when the result still verifies, runs its functions with RandomInputs. The
// verifier must catch every change the interpreter's rules cannot run: a
// run may fail only with a located diagnostic, never panic. When the run
// succeeds, canonicalize and cse (folding the changed constants) must give
// a module that verifies and computes the same results.
func FuzzMutatedModules(f *testing.F) {
	for i, chunk := range seedModules(f) {
		f.Add(chunk, []byte{byte(i % 4), byte(i), byte(i * 7)})
	}
	ctx := dialects.NewContext()
	f.Fuzz(func(t *testing.T, src string, edits []byte) {
		defer fuzzwatch.Start(src, edits)()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "fuzz.mlir"})
		if err != nil || ir.Verify(m) != nil {
			return
		}
		mutate(m, edits)
		if err := ir.Verify(m); err != nil {
			if len(ir.Diagnostics(err)) == 0 {
				t.Fatalf("verifier error without a diagnostic: %v", err)
			}
			return
		}
		if !small(m) {
			return
		}
		mutated := ir.Sprint(m, ir.PrintOptions{Generic: true})
		canon, canonical := m.Clone(nil), false
		fuel := fuzzFuel
		in := fuelled(m, &fuel)
		for op, ft := range runnableFuncs(m) {
			args, _ := RandomInputs(ft, 1)
			fuel = fuzzFuel
			want, err := in.Call(ir.SymbolName(op), args...)
			if errors.Is(err, errOutOfFuel) {
				return
			}
			if err != nil {
				if len(ir.Diagnostics(err)) == 0 {
					t.Fatalf("@%s failed without a located diagnostic: %v\n%s", ir.SymbolName(op), err, mutated)
				}
				continue
			}
			if !canonical {
				pm, err := passes.Parse("builtin.module(func.func(canonicalize,cse))")
				if err != nil {
					t.Fatal(err)
				}
				if err := pm.Run(ctx, canon); err != nil {
					t.Fatalf("canonicalize failed: %v\n%s", err, mutated)
				}
				canonical = true
			}
			args, _ = RandomInputs(ft, 1)
			fuel = fuzzFuel
			got, err := fuelled(canon, &fuel).Call(ir.SymbolName(op), args...)
			if errors.Is(err, errOutOfFuel) {
				return
			}
			if err != nil {
				t.Fatalf("@%s runs before canonicalize, fails after: %v\nbefore:\n%s\nafter:\n%s", ir.SymbolName(op), err, mutated, ir.Sprint(canon, ir.PrintOptions{Generic: true}))
			}
			if err := sameValues(got, want); err != nil {
				t.Fatalf("@%s computes other results after canonicalize: %v\nbefore:\n%s\nafter:\n%s", ir.SymbolName(op), err, mutated, ir.Sprint(canon, ir.PrintOptions{Generic: true}))
			}
		}
	})
}

// sameValues compares results: integers exactly, floats to a relative
// 1e-5 (NaN equal to NaN).
func sameValues(got, want []Value) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := asTensor(got[i]), asTensor(want[i])
		if g == nil || w == nil {
			continue
		}
		if g.elem != w.elem || !slices.Equal(g.shape, w.shape) {
			return fmt.Errorf("result %d is %s, want %s", i, g, w)
		}
		if ir.IsFloat(g.elem) {
			gs, ws := g.Float64s(), w.Float64s()
			for j := range gs {
				a, b := gs[j], ws[j]
				if a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) <= 1e-5*math.Max(math.Abs(a), math.Abs(b)) {
					continue
				}
				return fmt.Errorf("result %d element %d is %v, want %v", i, j, a, b)
			}
			continue
		}
		if gs, ws := g.Int64s(), w.Int64s(); !slices.Equal(gs, ws) {
			return fmt.Errorf("result %d is %v, want %v", i, gs, ws)
		}
	}
	return nil
}

// asTensor returns v's elements as a tensor (nil for other values).
func asTensor(v Value) *Tensor {
	switch v := v.(type) {
	case *Tensor:
		return v
	case *Buffer:
		t, err := v.Tensor()
		if err == nil {
			return t
		}
	}
	return nil
}
