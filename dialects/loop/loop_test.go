package loop_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/arith"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// buildRowSums builds, with the builders only,
//
//	func @rowsums(%m: memref<?x?xf32>, %flip: i1) -> (memref<?xf32>, f32)
//
// which stores each row's sum (a loop.for with an iter arg) into a new
// buffer, and returns it with the total (a loop.parallel reduction), negated
// by a loop.if when %flip is set.
func buildRowSums(t *testing.T) *ir.Operation {
	t.Helper()
	ctx := dialects.NewContext()
	loc := ir.UnknownLoc{}
	mod := ir.NewOperation(ctx, ir.OperationState{Name: "builtin.module", Regions: []*ir.Region{ir.NewRegion()}})
	mod.Region(0).Append(ir.NewBlock())
	b := ir.NewBuilder(ctx)
	b.SetInsertionPointToEnd(mod.Region(0).Front())
	mt := ir.MemRefOf([]int64{ir.Dynamic, ir.Dynamic}, ir.F32)
	vt := ir.MemRefOf([]int64{ir.Dynamic}, ir.F32)
	_, entry := funcs.NewFunc(b, "rowsums", ir.FunctionOf([]ir.Type{mt, ir.I1}, []ir.Type{vt, ir.F32}), loc)
	b.SetInsertionPointToEnd(entry)
	m, flip := entry.Argument(0), entry.Argument(1)

	c0 := arith.ConstantIndex(b, loc, 0)
	c1 := arith.ConstantIndex(b, loc, 1)
	zero := arith.ConstantFloat(b, loc, 0, ir.F32)
	rows, cols := loop.Dim(b, loc, m, 0), loop.Dim(b, loc, m, 1)
	sums := loop.Alloc(b, loc, vt, rows)
	loop.Parallel(b, loc, []*ir.Value{c0}, []*ir.Value{rows}, []*ir.Value{c1}, nil,
		func(b *ir.Builder, ivs []*ir.Value) []*ir.Value {
			f := loop.For(b, loc, c0, cols, c1, []*ir.Value{zero},
				func(b *ir.Builder, j *ir.Value, iters []*ir.Value) []*ir.Value {
					x := loop.Load(b, loc, m, ivs[0], j)
					return []*ir.Value{arith.Binary(b, "arith.addf", loc, iters[0], x)}
				})
			loop.Store(b, loc, f.Result(0), sums, ivs[0])
			return nil
		})
	total := loop.Parallel(b, loc, []*ir.Value{c0}, []*ir.Value{rows}, []*ir.Value{c1}, []*ir.Value{zero},
		func(b *ir.Builder, ivs []*ir.Value) []*ir.Value {
			return []*ir.Value{loop.Load(b, loc, sums, ivs[0])}
		},
		func(b *ir.Builder, lhs, rhs *ir.Value) *ir.Value { return arith.Binary(b, "arith.addf", loc, lhs, rhs) })
	res := loop.If(b, loc, flip, []ir.Type{ir.F32},
		func(b *ir.Builder) []*ir.Value {
			return []*ir.Value{arith.Unary(b, "arith.negf", loc, total.Result(0))}
		},
		func(b *ir.Builder) []*ir.Value { return []*ir.Value{total.Result(0)} })
	funcs.Return(b, loc, sums, res.Result(0))
	if err := ir.Verify(mod); err != nil {
		t.Fatalf("built IR does not verify: %v\n%s", err, ir.Sprint(mod, ir.PrintOptions{}))
	}
	return mod
}

func TestBuildersRunAndRoundTrip(t *testing.T) {
	mod := buildRowSums(t)
	m, err := interp.FromData(ir.F32, []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	for _, flip := range []bool{false, true} {
		c, _ := interp.FromData(ir.I1, nil, []bool{flip})
		out, err := interp.New(mod).Call("rowsums", interp.BufferFromTensor(m), c)
		if err != nil {
			t.Fatal(err)
		}
		sums, err := out[0].(*interp.Buffer).Tensor()
		if err != nil {
			t.Fatal(err)
		}
		if got := sums.Float64s(); !slices.Equal(got, []float64{6, 15}) {
			t.Errorf("row sums = %v, want [6 15]", got)
		}
		want := 21.0
		if flip {
			want = -21
		}
		if got := out[1].(*interp.Tensor).Float64s()[0]; got != want {
			t.Errorf("flip=%v: total = %v, want %v", flip, got, want)
		}
	}

	// The custom and generic forms both read back to the same text.
	for _, generic := range []bool{false, true} {
		text := ir.Sprint(mod, ir.PrintOptions{Generic: generic})
		again, err := ir.Parse(dialects.NewContext(), text, ir.ParseOptions{Filename: "x.mlir"})
		if err != nil {
			t.Fatalf("generic=%v: %v\n%s", generic, err, text)
		}
		if got := ir.Sprint(again, ir.PrintOptions{Generic: generic}); got != text {
			t.Errorf("generic=%v: round trip changed the text:\n%s\nvs\n%s", generic, text, got)
		}
	}
}

func TestTraits(t *testing.T) {
	ctx := dialects.NewContext()
	for _, tc := range []struct {
		op         string
		has, hasNt ir.Trait
	}{
		{loop.AllocOp, 0, ir.Pure},
		{loop.DeallocOp, 0, ir.Pure},
		{loop.LoadOp, 0, ir.Pure}, // reads memory: CSE must not merge loads across stores
		{loop.StoreOp, 0, ir.Pure},
		{loop.DimOp, ir.Pure, 0},
		{loop.ForOp, ir.RecursiveEffects | ir.SingleBlock, ir.Pure},
		{loop.ParallelOp, ir.RecursiveEffects | ir.SingleBlock, ir.Pure},
		{loop.IfOp, ir.RecursiveEffects | ir.SingleBlock, ir.Pure},
		{loop.ReduceOp, ir.Terminator, 0},
		{loop.YieldOp, ir.Terminator | ir.ReturnLike, 0},
	} {
		d := ctx.OpDef(tc.op)
		if d == nil {
			t.Fatalf("%s is not registered", tc.op)
		}
		if d.Traits&tc.has != tc.has || d.Traits&tc.hasNt != 0 {
			t.Errorf("%s traits = %v; want %v and not %v", tc.op, d.Traits, tc.has, tc.hasNt)
		}
	}
}

// TestVerifierErrors checks one case per verifier rule that the text
// format cannot express in invalid.mlir: ops built directly.
func TestVerifierErrors(t *testing.T) {
	ctx := dialects.NewContext()
	loc := ir.UnknownLoc{}
	for _, tc := range []struct {
		name  string
		build func(b *ir.Builder, idx, f *ir.Value)
		want  string
	}{
		{"segments missing", func(b *ir.Builder, idx, _ *ir.Value) {
			b.Op(loop.ParallelOp, loc, []*ir.Value{idx, idx, idx}, nil)
		}, "'loop.parallel' op requires property 'operandSegmentSizes' of type array<i32> with 4 elements"},
		{"segments i64", func(b *ir.Builder, idx, _ *ir.Value) {
			b.Op(loop.ParallelOp, loc, []*ir.Value{idx, idx, idx}, nil,
				ir.NamedAttr{Name: loop.SegmentsAttr, Value: ir.I64Array(1, 1, 1, 0)})
		}, "requires property 'operandSegmentSizes' of type array<i32>"},
		{"dim without index", func(b *ir.Builder, _, _ *ir.Value) {
			m := loop.Alloc(b, loc, ir.MemRefOf([]int64{4}, ir.F32))
			b.Op(loop.DimOp, loc, []*ir.Value{m}, []ir.Type{ir.Index})
		}, "'loop.dim' op requires i64 property 'index'"},
		{"for without region", func(b *ir.Builder, idx, _ *ir.Value) {
			b.Op(loop.ForOp, loc, []*ir.Value{idx, idx, idx}, nil)
		}, "'loop.for' op requires one region, but found 0"},
		{"for iv type", func(b *ir.Builder, idx, f *ir.Value) {
			blk := ir.NewBlock(ir.F32)
			r := ir.NewRegion()
			r.Append(blk)
			b.Create(ir.OperationState{Name: loop.ForOp, Loc: loc, Operands: []*ir.Value{idx, idx, idx}, Regions: []*ir.Region{r}})
			loop.Yield(nestedAt(b, blk), loc)
		}, "'loop.for' op expects the induction variable to be of type index, but found 'f32'"},
		{"if regions", func(b *ir.Builder, _, _ *ir.Value) {
			c := arith.ConstantInt(b, loc, 1, ir.I1)
			b.Op(loop.IfOp, loc, []*ir.Value{c}, nil)
		}, "'loop.if' op requires two regions (then, else), but found 0"},
	} {
		mod := ir.NewOperation(ctx, ir.OperationState{Name: "builtin.module", Regions: []*ir.Region{ir.NewRegion()}})
		mod.Region(0).Append(ir.NewBlock())
		b := ir.NewBuilder(ctx)
		b.SetInsertionPointToEnd(mod.Region(0).Front())
		_, entry := funcs.NewFunc(b, "f", ir.FunctionOf([]ir.Type{ir.Index, ir.F32}, nil), loc)
		b.SetInsertionPointToEnd(entry)
		tc.build(b, entry.Argument(0), entry.Argument(1))
		funcs.Return(b, loc)
		err := ir.Verify(mod)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func nestedAt(b *ir.Builder, blk *ir.Block) *ir.Builder {
	nb := ir.NewBuilder(b.Ctx)
	nb.SetInsertionPointToEnd(blk)
	return nb
}
