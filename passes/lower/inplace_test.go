package lower_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// inPlaceSrc is a decoding step's cache update: %k [2, 3, 1, 4] written
// into the caches %kc and %vc [2, 3, 8, 4] where the slot equals %at, as
// convert-graph-to-loop lowers where(slot, k, cache); %new is also read
// after the update (the attention's scores). BODY is replaced by each
// case's variation.
const inPlaceSrc = `func.func @main(%kc: memref<2x3x8x4xf32>, %vc: memref<2x3x8x4xf32>, %k: memref<2x3x1x4xf32>, %slots: memref<8xi64>, %at: memref<i64>) -> (memref<2x3x8x4xf32>, memref<2x3x8x4xf32>, memref<2x3x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %newk = loop.alloc() : memref<2x3x8x4xf32>
  %newv = loop.alloc() : memref<2x3x8x4xf32>
  "loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c3, %c8, %c4, %c1, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 4, 4, 4, 0>}> ({
  ^bb0(%b: index, %h: index, %s: index, %d: index):
    %sp = loop.load %slots[%s] : memref<8xi64>
    %p = loop.load %at[] : memref<i64>
    %m = arith.cmpi eq, %sp, %p : i64
    %x = loop.load %k[%b, %h, %c0, %d] : memref<2x3x1x4xf32>
    %old = loop.load %kc[%b, %h, %s, %d] : memref<2x3x8x4xf32>
    %y = arith.select %m, %x, %old : f32
    loop.store %y, %newk[%b, %h, %s, %d] : memref<2x3x8x4xf32>
    %xv = loop.load %k[%b, %h, %c0, %d] : memref<2x3x1x4xf32>
    %x2 = arith.negf %xv : f32
    %old2 = loop.load %vc[%b, %h, %s, %d] : memref<2x3x8x4xf32>
    %y2 = arith.select %m, %x2, %old2 : f32
    loop.store %y2, %newv[%b, %h, %s, %d] : memref<2x3x8x4xf32>
    "loop.reduce"() : () -> ()
  }) {loop.nest = "pointwise"} : (index, index, index, index, index, index, index, index, index, index, index, index) -> ()
  %sum = loop.alloc() : memref<2x3x8xf32>
  "loop.parallel"(%c0, %c0, %c0, %c2, %c3, %c8, %c1, %c1, %c1) <{operandSegmentSizes = array<i32: 3, 3, 3, 0>}> ({
  ^bb0(%b: index, %h: index, %s: index):
    %z = arith.constant 0.0 : f32
    %t = "loop.for"(%c0, %c4, %c1, %z) ({
    ^bb0(%d: index, %acc: f32):
      %e = loop.load %newk[%b, %h, %s, %d] : memref<2x3x8x4xf32>
      %f = loop.load %VREAD[%b, %h, %s, %d] : memref<2x3x8x4xf32>
      %g = arith.addf %e, %f : f32
      %a = arith.addf %acc, %g : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
    loop.store %t, %sum[%b, %h, %s] : memref<2x3x8xf32>
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index, index, index, index) -> ()
  return %newk, %newv, %sum : memref<2x3x8x4xf32>, memref<2x3x8x4xf32>, memref<2x3x8xf32>
}`

// TestUpdateInPlace checks loop-update-in-place on variations of a cache
// update: which arguments it writes in place (loop.UpdatesArgsAttr), and
// that the function's results are the same in the interpreter before and
// after (each run on fresh copies of the same random inputs).
func TestUpdateInPlace(t *testing.T) {
	for _, tc := range []struct {
		name, vread string
		edit        func(string) string
		want        []int64
		// sunk: the loads of the new key moved into the updates' loop.if
		// (a point the mask leaves alone loads nothing).
		sunk bool
	}{
		{"both caches", "newv", nil, []int64{0, 1}, true},
		// The old V cache is read after the update: it must stay.
		{"old value read later", "vc", nil, []int64{0}, false},
		// The select keeps the cache where the mask holds: not an update
		// of the form the pass rewrites.
		{"select swapped", "newv", func(s string) string {
			return replace(s, "%y = arith.select %m, %x, %old : f32", "%y = arith.select %m, %old, %x : f32")
		}, []int64{1}, false},
		// The nest covers half of the cache's positions.
		{"partial nest", "newv", func(s string) string {
			return replace(s, `"loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c3, %c8, %c4`, `"loop.parallel"(%c0, %c0, %c0, %c0, %c2, %c3, %c4, %c4`)
		}, nil, false},
		// The new buffer is read before it is written (and the nest's
		// other store writes a buffer: no load moves past it).
		{"read before", "newv", func(s string) string {
			return replace(s, "  %newv = loop.alloc() : memref<2x3x8x4xf32>\n", "  %newv = loop.alloc() : memref<2x3x8x4xf32>\n  %peek = loop.load %newk[%c0, %c0, %c0, %c0] : memref<2x3x8x4xf32>\n")
		}, []int64{1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := replace(inPlaceSrc, "%VREAD", "%"+tc.vread)
			if tc.edit != nil {
				src = tc.edit(src)
			}
			before := parseLoop(t, src)
			after := parseLoop(t, src)
			pm, err := passes.Parse("builtin.module(func.func(" + lower.UpdateInPlacePassName + "))")
			if err != nil {
				t.Fatal(err)
			}
			if err := pm.Run(dialects.NewContext(), after); err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(after); err != nil {
				t.Fatal(err)
			}
			fn := funcsOf(after)[0]
			var got []int64
			if a, ok := fn.Attr(loop.UpdatesArgsAttr).(ir.DenseArrayAttr); ok {
				got = a.Values
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("updated arguments %v, want %v\n%s", got, tc.want, ir.Sprint(after, ir.PrintOptions{}))
			}
			sunk := true
			body := fn.Region(0).Front()
			nest := body.Ops()[slices.IndexFunc(body.Ops(), func(op *ir.Operation) bool { return op.Name() == loop.ParallelOp })]
			for _, op := range loop.Body(nest).Ops() {
				if op.Name() == loop.LoadOp && op.Operand(0) == body.Argument(2) {
					sunk = false
				}
			}
			if sunk != tc.sunk {
				t.Errorf("the loads of the key moved into the updates: %v, want %v\n%s", sunk, tc.sunk, ir.Sprint(after, ir.PrintOptions{}))
			}
			for seed := range int64(3) {
				want, gotRes := runMain(t, before, seed), runMain(t, after, seed)
				for i := range want {
					if err := passtest.Compare(gotRes[i], want[i]); err != nil {
						t.Fatalf("seed %d, result %d: %v\n%s", seed, i, err, ir.Sprint(after, ir.PrintOptions{}))
					}
				}
			}
		})
	}
}

// replace replaces old, which must occur, in s.
func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("inplace_test: no " + old)
	}
	return strings.Replace(s, old, new, 1)
}

func parseLoop(t *testing.T, src string) *ir.Operation {
	t.Helper()
	m, err := ir.Parse(dialects.NewContext(), src, ir.ParseOptions{Filename: "inplace.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runMain calls @main of m on random inputs from seed, with the slot
// position set to 5 (so that the mask selects one slot).
func runMain(t *testing.T, m *ir.Operation, seed int64) []interp.Value {
	t.Helper()
	in := interp.New(m)
	ft, err := interp.FuncType(in.Func("main"))
	if err != nil {
		t.Fatal(err)
	}
	args, err := interp.RandomInputs(ft, seed)
	if err != nil {
		t.Fatal(err)
	}
	slots, _ := interp.FromInt64s(ir.I64, []int64{8}, []int64{0, 1, 2, 3, 4, 5, 6, 7})
	at, _ := interp.FromInt64s(ir.I64, nil, []int64{5})
	args[3], args[4] = interp.BufferFromTensor(slots), interp.BufferFromTensor(at)
	out, err := in.Call("main", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
