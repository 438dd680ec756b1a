package passtest

import (
	"fmt"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
)

// PreservesSemantics checks on programs drawn from gen that running
// pipeline keeps the interpreter's results on random inputs, within
// Tolerance (see CheckSemantics).
func PreservesSemantics(t *testing.T, pipeline string, gen *rapid.Generator[*Program]) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		p := gen.Draw(rt, "program")
		seed := rapid.Int64().Draw(rt, "seed")
		if err := CheckSemantics(p, pipeline, seed); err != nil {
			rt.Fatalf("%s: %v", pipeline, err)
		}
	})
}

// Idempotent checks on programs drawn from gen that a second run of
// pipeline leaves the output of the first unchanged.
func Idempotent(t *testing.T, pipeline string, gen *rapid.Generator[*Program]) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		if err := CheckIdempotent(gen.Draw(rt, "program"), pipeline); err != nil {
			rt.Fatalf("%s: %v", pipeline, err)
		}
	})
}

// VerifierAccepts checks on programs drawn from gen that the verifier
// accepts them after pipeline ("" checks the programs themselves).
func VerifierAccepts(t *testing.T, pipeline string, gen *rapid.Generator[*Program]) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		if _, err := runPipeline(gen.Draw(rt, "program"), pipeline); err != nil {
			rt.Fatalf("%s: %v", pipeline, err)
		}
	})
}

// RoundTrips checks on programs drawn from gen that printing, in the
// generic and the pretty form, then parsing gives the program back.
func RoundTrips(t *testing.T, gen *rapid.Generator[*Program]) {
	t.Helper()
	rapid.Check(t, func(rt *rapid.T) {
		if err := CheckRoundTrip(gen.Draw(rt, "program")); err != nil {
			rt.Fatal(err)
		}
	})
}

// runPipeline parses p into a fresh context, runs pipeline on it ("" runs
// nothing) and verifies the result.
func runPipeline(p *Program, pipeline string) (*ir.Operation, error) {
	_, m, err := runIn(dialects.NewContext(), p, pipeline)
	return m, err
}

func runIn(ctx *ir.Context, p *Program, pipeline string) (*ir.Context, *ir.Operation, error) {
	m, err := p.Parse(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the program: %w\n%s", err, p)
	}
	if pipeline != "" {
		pm, err := passes.Parse(pipeline)
		if err != nil {
			return nil, nil, err
		}
		if err := pm.Run(ctx, m); err != nil {
			return nil, nil, fmt.Errorf("running the pipeline: %w\nprogram:\n%s", err, p)
		}
	}
	if err := ir.Verify(m); err != nil {
		return nil, nil, fmt.Errorf("the verifier rejects the output: %w\nprogram:\n%s\noutput:\n%s", err, p, m)
	}
	return ctx, m, nil
}

// CheckSemantics runs p's function in the interpreter on the random inputs
// interp.RandomInputs draws from seed, before and after pipeline, and
// reports the first result that differs beyond Tolerance.
func CheckSemantics(p *Program, pipeline string, seed int64) error {
	before, err := runPipeline(p, "")
	if err != nil {
		return err
	}
	after, err := runPipeline(p, pipeline)
	if err != nil {
		return err
	}
	want, err := call(before, p.Func, seed)
	if err != nil {
		return fmt.Errorf("running the program: %w\n%s", err, p)
	}
	got, err := call(after, p.Func, seed)
	if err != nil {
		return fmt.Errorf("running the output: %w\nprogram:\n%s\noutput:\n%s", err, p, after)
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		if err := Compare(got[i], want[i]); err != nil {
			return fmt.Errorf("result %d (inputs from seed %d): %w\nprogram:\n%s\noutput:\n%s", i, seed, err, p, after)
		}
	}
	return nil
}

func call(m *ir.Operation, fn string, seed int64) ([]interp.Value, error) {
	in := interp.New(m)
	f := in.Func(fn)
	if f == nil {
		return nil, fmt.Errorf("no function @%s", fn)
	}
	ft, err := interp.FuncType(f)
	if err != nil {
		return nil, err
	}
	args, err := interp.RandomInputs(ft, seed)
	if err != nil {
		return nil, err
	}
	return in.Call(fn, args...)
}

// CheckIdempotent runs pipeline on p twice and reports whether the second
// run changed the IR.
func CheckIdempotent(p *Program, pipeline string) error {
	ctx, m, err := runIn(dialects.NewContext(), p, pipeline)
	if err != nil {
		return err
	}
	once := ir.Sprint(m, ir.PrintOptions{Generic: true})
	pm, err := passes.Parse(pipeline)
	if err != nil {
		return err
	}
	if err := pm.Run(ctx, m); err != nil {
		return fmt.Errorf("second run: %w\n%s", err, once)
	}
	if twice := ir.Sprint(m, ir.PrintOptions{Generic: true}); twice != once {
		return fmt.Errorf("not idempotent: the first run gives\n%s\nthe second\n%s", once, twice)
	}
	return nil
}

// CheckRoundTrip prints p generic and pretty, parses each, and checks that
// both print back as the same text and as p's generic form.
func CheckRoundTrip(p *Program) error {
	m, err := runPipeline(p, "")
	if err != nil {
		return err
	}
	want := ir.Sprint(m, ir.PrintOptions{Generic: true})
	for _, opts := range []ir.PrintOptions{{Generic: true}, {}} {
		text := ir.Sprint(m, opts)
		back, err := ir.Parse(dialects.NewContext(), text, ir.ParseOptions{Filename: "roundtrip.mlir"})
		if err != nil {
			return fmt.Errorf("parsing the printed program: %w\n%s", err, text)
		}
		if again := ir.Sprint(back, opts); again != text {
			return fmt.Errorf("print∘parse (generic=%v) is not the identity:\n%s\nbecame\n%s", opts.Generic, text, again)
		}
		if generic := ir.Sprint(back, ir.PrintOptions{Generic: true}); generic != want {
			return fmt.Errorf("parsing the print (generic=%v) changed the program:\n%s\nbecame\n%s", opts.Generic, want, generic)
		}
	}
	return nil
}

// Tolerance returns the relative and absolute tolerance for comparing
// elements of type elem: 0 for integers and i1 (exact), 1e-9 for f64, 1e-4
// for f32 and 1e-2 for f16 and bf16.
func Tolerance(elem ir.Type) float64 {
	switch elem {
	case ir.F64:
		return 1e-9
	case ir.F32:
		return 1e-4
	case ir.F16, ir.BF16:
		return 1e-2
	}
	return 0
}

// Compare reports how got differs from want: in element type, shape, or an
// element beyond Tolerance (|got - want| > tol + tol·|want|, with NaN equal
// to NaN and infinities equal only to themselves).
func Compare(got, want interp.Value) error {
	// Lowered functions return buffers: compare their contents.
	got, want = asTensor(got), asTensor(want)
	g, ok1 := got.(*interp.Tensor)
	w, ok2 := want.(*interp.Tensor)
	if !ok1 || !ok2 {
		return fmt.Errorf("got %T, want %T: only tensors are compared", got, want)
	}
	if g.ElemType() != w.ElemType() || fmt.Sprint(g.Shape()) != fmt.Sprint(w.Shape()) {
		return fmt.Errorf("got %s, want %s", g, w)
	}
	if !ir.IsFloat(w.ElemType()) {
		gi, wi := g.Int64s(), w.Int64s()
		for i := range wi {
			if gi[i] != wi[i] {
				return fmt.Errorf("at flat index %d: got %d, want %d", i, gi[i], wi[i])
			}
		}
		return nil
	}
	tol := Tolerance(w.ElemType())
	gf, wf := g.Float64s(), w.Float64s()
	for i := range wf {
		if !close(gf[i], wf[i], tol) {
			return fmt.Errorf("at flat index %d: got %v, want %v (tolerance %g)", i, gf[i], wf[i], tol)
		}
	}
	return nil
}

// asTensor returns the contents of a buffer as a tensor, and v otherwise.
func asTensor(v interp.Value) interp.Value {
	if b, ok := v.(*interp.Buffer); ok {
		if t, err := b.Tensor(); err == nil {
			return t
		}
	}
	return v
}

func close(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol+tol*math.Abs(want)
}
