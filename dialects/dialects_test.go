package dialects_test

import (
	"fmt"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
)

func TestAllRegistered(t *testing.T) {
	ctx := dialects.NewContext()
	seen := map[string]bool{}
	for _, d := range dialects.All() {
		if seen[d.Name] {
			t.Errorf("dialect %s listed twice", d.Name)
		}
		seen[d.Name] = true
		if ctx.Dialect(d.Name) != d {
			t.Errorf("NewContext did not load %s", d.Name)
		}
		for _, op := range d.Ops {
			if ctx.OpDef(op.Name) != op {
				t.Errorf("op %s is shadowed by another definition", op.Name)
			}
			if op.Summary == "" || op.Example == "" {
				t.Errorf("op %s lacks a summary or an example for the docs", op.Name)
			}
		}
	}
	for _, name := range []string{"builtin", "func", "arith", "math"} {
		if !seen[name] {
			t.Errorf("All() lacks the %s dialect", name)
		}
	}
}

// TestFoldThroughArith checks that math folds materialise as arith.constant
// when all dialects are loaded.
func TestFoldThroughArith(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, `func.func @f() -> f32 {
  %c = arith.constant 0.0 : f32
  %r = math.cos %c : f32
  return %r : f32
}`, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	var cos *ir.Operation
	m.Walk(func(o *ir.Operation) bool {
		if o.Name() == "math.cos" {
			cos = o
		}
		return true
	})
	res := cos.Def().Fold(cos, []ir.Attribute{cos.Operand(0).DefiningOp().Attr("value")})
	if len(res) != 1 || res[0].Attr == nil {
		t.Fatalf("math.cos of a constant did not fold: %v", res)
	}
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointBefore(cos)
	c := cos.Def().Dialect().MaterializeConstant(b, res[0].Attr, cos.Result(0).Type(), cos.Loc())
	if c == nil || c.Name() != "arith.constant" || !c.Registered() {
		t.Fatalf("materialized %v, want a registered arith.constant", c)
	}
	if got := c.String(); got != "%0 = arith.constant 1.000000e+00 : f32" {
		t.Errorf("got %s", got)
	}
}

// TestContextsConcurrently makes, parses into and folds in contexts on
// several goroutines at once, as tests and the autotuner do. The dialects
// are shared package-level values, so loading one must not write to them
// racily; `make test` runs this test under the race detector.
func TestContextsConcurrently(t *testing.T) {
	const src = `func.func @f(%x: f32) -> f32 {
  %c = arith.constant 0.0 : f32
  %r = math.cos %c : f32
  %s = arith.addf %x, %r : f32
  return %s : f32
}`
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			ctx := dialects.NewContext()
			m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "in.mlir"})
			if err == nil {
				err = ir.Verify(m)
			}
			if err == nil && ctx.OpDef("math.cos").Dialect() != ctx.Dialect("math") {
				err = fmt.Errorf("math.cos is not bound to the math dialect")
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
