package togpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/dialects/loop"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// colsumStoreProgram is the first half of a split bias gradient fused with
// the values it sums, as lower-to-loop builds GPT-2's: a nest over
// [p, c] whose first loop sums g·tanh(x) over the run of k rows p·k … p·k+k-1
// of column c into part[p, c], and whose second loop stores g·tanh(x) of
// the same rows. The second loop stores into
//   - "alloc": a buffer of its own, as the model's kernels do (the loops
//     merge);
//   - "arg": x itself, the run's rows in reverse order (they must not
//     merge: the first loop would read rows the second already wrote);
//   - "other": a third argument, which the caller may have made x (the
//     loops must not merge either).
//
// With masked, each loop computes its value in a loop.if on c < c/2 (0
// elsewhere).
func colsumStoreProgram(p, k, c int64, elt, target string, masked bool) string {
	r := p * k
	mem := fmt.Sprintf("memref<%dx%dx%s>", r, c, elt)
	ext := func(v string) string {
		if elt == "f32" {
			return fmt.Sprintf("      %%%sw = arith.addf %%%s, %%zero : f32\n", v, v)
		}
		return fmt.Sprintf("      %%%sw = arith.extf %%%s : %s to f32\n", v, v, elt)
	}
	value := func(row string) string {
		v := fmt.Sprintf("      %%xv = loop.load %%x[%s, %%c] : %s\n", row, mem) +
			fmt.Sprintf("      %%gv = loop.load %%g[%s, %%c] : %s\n", row, mem) +
			ext("xv") + ext("gv") +
			"      %t = math.tanh %xvw : f32\n" +
			"      %v = arith.mulf %gvw, %t : f32\n"
		if !masked {
			return v
		}
		return "      %cut = arith.cmpi ult, %c, %half : index\n" +
			"      %v = \"loop.if\"(%cut) ({\n" + strings.ReplaceAll(v, "%v = arith.mulf", "%in = arith.mulf") +
			"      loop.yield %in : f32\n      }, {\n      loop.yield %zero : f32\n      }) : (i1) -> f32\n"
	}
	args := fmt.Sprintf("%%x: %s, %%g: %s", mem, mem)
	out, alloc, storeRow := "%y", fmt.Sprintf("  %%y = loop.alloc() : %s\n", mem), "%r"
	switch target {
	case "arg":
		out, alloc, storeRow = "%x", "", "%rev"
	case "other":
		args += fmt.Sprintf(", %%z: %s", mem)
		out, alloc = "%z", ""
	}
	stored := "%v"
	if elt != "f32" {
		stored = "%vt"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "func.func @main(%s) -> (memref<%dx%dxf32>, %s) {\n", args, p, c, mem)
	fmt.Fprintf(&b, "  %%c0 = arith.constant 0 : index\n  %%c1 = arith.constant 1 : index\n")
	fmt.Fprintf(&b, "  %%ck = arith.constant %d : index\n  %%ck1 = arith.constant %d : index\n", k, k-1)
	fmt.Fprintf(&b, "  %%cp = arith.constant %d : index\n  %%cc = arith.constant %d : index\n", p, c)
	fmt.Fprintf(&b, "  %%zero = arith.constant 0.000000e+00 : f32\n  %%half = arith.constant %d : index\n", c/2)
	fmt.Fprintf(&b, "  %%part = loop.alloc() : memref<%dx%dxf32>\n%s", p, c, alloc)
	b.WriteString(`  "loop.parallel"(%c0, %c0, %cp, %cc, %c1, %c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%p: index, %c: index):
    %first = arith.muli %p, %ck : index
    %s = "loop.for"(%c0, %ck, %c1, %zero) ({
    ^bb0(%q: index, %acc: f32):
      %r = arith.addi %first, %q : index
`)
	b.WriteString(value("%r"))
	b.WriteString(`      %a = arith.addf %acc, %v : f32
      loop.yield %a : f32
    }) : (index, index, index, f32) -> f32
`)
	fmt.Fprintf(&b, "    loop.store %%s, %%part[%%p, %%c] : memref<%dx%dxf32>\n", p, c)
	b.WriteString(`    "loop.for"(%c0, %ck, %c1) ({
    ^bb0(%q: index):
      %back = arith.subi %ck1, %q : index
      %rev = arith.addi %first, %back : index
      %r = arith.addi %first, %q : index
`)
	b.WriteString(value(storeRow))
	if elt != "f32" {
		fmt.Fprintf(&b, "      %%vt = arith.truncf %%v : f32 to %s\n", elt)
	}
	fmt.Fprintf(&b, "      loop.store %s, %s[%s, %%c] : %s\n", stored, out, storeRow, mem)
	b.WriteString(`      loop.yield
    }) : (index, index, index) -> ()
    "loop.reduce"() : () -> ()
  }) {loop.nest = "reduction"} : (index, index, index, index, index, index) -> ()
`)
	fmt.Fprintf(&b, "  return %%part, %s : memref<%dx%dxf32>, %s\n}\n", out, p, c, mem)
	return b.String()
}

// TestMergeStoreLoopsPreservesSemantics merges the loops of drawn column
// sum programs (mergeStoreLoops on the nest's body) and runs both in the
// interpreter: the loops merge exactly when the stores go to a buffer of
// their own, and the merged nest computes what the two loops did.
func TestMergeStoreLoopsPreservesSemantics(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.Int64Range(1, 3).Draw(rt, "p")
		k := rapid.Int64Range(1, 6).Draw(rt, "k")
		c := rapid.Int64Range(1, 5).Draw(rt, "c")
		elt := rapid.SampledFrom([]string{"f32", "bf16"}).Draw(rt, "elt")
		target := rapid.SampledFrom([]string{"alloc", "arg", "other"}).Draw(rt, "target")
		masked := rapid.Bool().Draw(rt, "masked")
		src := colsumStoreProgram(p, k, c, elt, target, masked)
		_, before := parseProgram(rt, src)
		ctx, after := parseProgram(rt, src)
		var merges int
		after.Walk(func(o *ir.Operation) bool {
			if o.Name() == loop.ParallelOp {
				merges += mergeStoreLoops(ctx, loop.Body(o))
			}
			return true
		})
		if want := map[bool]int{true: 1, false: 0}[target == "alloc"]; merges != want {
			rt.Fatalf("%d merges, want %d (stores into %s):\n%s", merges, want, target, after)
		}
		// Merged, the loops load x once (a load, or a loop.if that loads,
		// both loops make at the same element).
		var loads int
		x := after.Region(0).Front().First().Region(0).Front().Argument(0)
		after.Walk(func(o *ir.Operation) bool {
			if o.Name() == loop.LoadOp && o.Operand(0) == x {
				loads++
			}
			return true
		})
		if want := 2 - merges; loads != want {
			rt.Fatalf("%d loads of x, want %d (masked %v):\n%s", loads, want, masked, after)
		}
		if err := ir.Verify(after); err != nil {
			rt.Fatalf("verifier: %v\n%s", err, after)
		}
		checkSame(rt, before, after, p*100+k*10+c)
	})
}

// TestColumnSumStoreKernels lowers column sum programs of ColumnThreads
// points (the pointwise mapping) to kernels: the stores to a buffer of
// their own run in the sum's loop (one row loop, x and g loaded once a
// lane), the others in a loop of their own, and the kernels
// compute what the nests do.
func TestColumnSumStoreKernels(t *testing.T) {
	for _, tc := range []struct {
		target, elt string
		cfg         Config
	}{
		{"alloc", "bf16", DefaultConfig},
		{"alloc", "f32", Config{Block: 64, Vector: 2, MaxBlocks: 3, IndexBits: 32}},
		{"arg", "bf16", DefaultConfig},
		{"other", "f32", Config{Block: 64, Vector: 1, MaxBlocks: 3}},
	} {
		// Row loops stay loops (UnrollInner), so that a lane's loads
		// of x are counted once a loop: a 3-trip loop that loads would
		// otherwise run straight, its loads copied a trip.
		tc.cfg.UnrollInner = true
		t.Run(tc.target+"/"+tc.elt, func(t *testing.T) {
			const p, k, c = ColumnThreads / 32, 3, 32
			src := colsumStoreProgram(p, k, c, tc.elt, tc.target, false)
			_, before := parseProgram(t, src)
			ctx, after := parseProgram(t, src)
			if err := Run(ctx, after, tc.cfg); err != nil {
				t.Fatal(err)
			}
			if err := ir.Verify(after); err != nil {
				t.Fatalf("verifier: %v\n%s", err, after)
			}
			var mappings []string
			var rowLoops int
			var loads, vec int64
			after.Walk(func(o *ir.Operation) bool {
				if gpu.IsKernel(o) {
					launch := o.Attr(LaunchAttr).(ir.DictAttr)
					mappings = append(mappings, launch.Get("mapping").(ir.StringAttr).Value)
					vec = launch.Get("vector").(ir.IntegerAttr).Value
					args := o.Region(0).Front()
					o.Walk(func(l *ir.Operation) bool {
						// Row loops load x or g themselves (the grid-stride
						// loop only in them).
						if l.Name() == loop.ForOp && slices.ContainsFunc(loop.Body(l).Ops(), func(o *ir.Operation) bool { return o.Name() == loop.LoadOp }) {
							rowLoops++
						}
						if l.Name() == loop.LoadOp && l.Operand(0) == args.Argument(0) {
							loads++
						}
						return true
					})
				}
				return true
			})
			// A load of x a lane and row loop.
			want := 2
			if tc.target == "alloc" {
				want = 1
			}
			wantLoads := int64(want) * vec
			if !slices.Equal(mappings, []string{MappingPointwise}) || rowLoops != want || loads != wantLoads {
				t.Errorf("kernels %v with %d row loops and %d loads of x, want [pointwise] with %d and %d:\n%s",
					mappings, rowLoops, loads, want, wantLoads, after)
			}
			checkSame(t, before, after, 7)
		})
	}
}

// failer is what the helpers need of a *testing.T or a *rapid.T.
type failer interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// parseProgram parses a loop-level program into a fresh context.
func parseProgram(t failer, src string) (*ir.Context, *ir.Operation) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "colsum_store.mlir"})
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return ctx, m
}

// checkSame runs @main of before and after on copies of the same random
// buffers and compares their results.
func checkSame(t failer, before, after *ir.Operation, seed int64) {
	ft, err := interp.FuncType(interp.New(before).Func("main"))
	if err != nil {
		t.Fatal(err)
	}
	args, err := interp.RandomInputs(ft, seed)
	if err != nil {
		t.Fatal(err)
	}
	var res [2][]*interp.Tensor
	for i, m := range []*ir.Operation{before, after} {
		copies := make([]interp.Value, len(args))
		for j, a := range args {
			x, err := a.(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			copies[j] = interp.BufferFromTensor(x)
		}
		out, err := interp.New(m).Call("main", copies...)
		if err != nil {
			t.Fatalf("%v\n%s", err, m)
		}
		for _, o := range out {
			x, err := o.(*interp.Buffer).Tensor()
			if err != nil {
				t.Fatal(err)
			}
			res[i] = append(res[i], x)
		}
	}
	for i := range res[0] {
		if err := passtest.Compare(res[1][i], res[0][i]); err != nil {
			t.Errorf("result %d: %v\n%s", i, err, after)
		}
	}
}

// TestLanesShareRowValues checks that the lanes of a vectorized column sum
// share what they compute from the row alone: a layer norm's weight
// gradient (testdata/colsum_stats.mlir, 4 lanes a thread) loads the row's
// mean and rstd once for the 4 columns, not once a column, and computes
// once what it derives from them; its values are checked against the nest
// by TestPreservesSemantics.
func TestLanesShareRowValues(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "colsum_stats.mlir"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, m := parseProgram(t, string(src))
	if err := Run(ctx, m, DefaultConfig); err != nil {
		t.Fatal(err)
	}
	loads := map[int]int{} // by kernel argument: g, x, mean, rstd, part
	var vec int64
	var subs int
	m.Walk(func(o *ir.Operation) bool {
		if gpu.IsKernel(o) {
			vec = o.Attr(LaunchAttr).(ir.DictAttr).Get("vector").(ir.IntegerAttr).Value
			args := o.Region(0).Front()
			o.Walk(func(l *ir.Operation) bool {
				switch l.Name() {
				case loop.LoadOp:
					if a := l.Operand(0); a.IsBlockArgument() && a.ParentBlock() == args {
						loads[a.Index()]++
					}
				case "arith.subf":
					subs++
				}
				return true
			})
		}
		return true
	})
	if vec < 2 || loads[0] != loads[2]*int(vec) || loads[2] != loads[3] || subs != loads[0] {
		t.Errorf("vector %d: %d loads of g, %d of mean, %d of rstd, %d subtractions; want the row's values loaded once for the %d lanes (g's loads / %d) and one x − mean a lane:\n%s",
			vec, loads[0], loads[2], loads[3], subs, vec, vec, m)
	}
}

// concatHeadsProgram is the q, k, v gradients' merge as the backward pass
// lowers it: three [r, h, d] sources concatenated along the columns of an
// [r, 3·h·d] result, column c reading head (c mod h·d)/d, element c mod d
// of source c/(h·d), chosen by nested loop.ifs on c.
// The first branch's condition is c < h·d, or with le, c ≤ h·d − 1.
func concatHeadsProgram(r, h, d int64, elt string, le bool) string {
	src := fmt.Sprintf("memref<%dx%dx%dx%s>", r, h, d, elt)
	out := fmt.Sprintf("memref<%dx%dx%s>", r, 3*h*d, elt)
	pred, bound := "ult", h*d
	if le {
		pred, bound = "ule", h*d-1
	}
	load := func(m string) string {
		return fmt.Sprintf(`%%v = loop.load %s[%%r, %%h, %%e] : %s
        loop.yield %%v : %s`, m, src, elt)
	}
	return fmt.Sprintf(`func.func @main(%%a: %[1]s, %%b: %[1]s, %%c: %[1]s) -> %[2]s {
  %%c0 = arith.constant 0 : index
  %%c1 = arith.constant 1 : index
  %%cr = arith.constant %[3]d : index
  %%cn = arith.constant %[4]d : index
  %%hd = arith.constant %[5]d : index
  %%hd2 = arith.constant %[6]d : index
  %%cd = arith.constant %[7]d : index
  %%bound = arith.constant %[13]d : index
  %%out = loop.alloc() : %[2]s
  "loop.parallel"(%%c0, %%c0, %%cr, %%cn, %%c1, %%c1) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%%r: index, %%col: index):
    %%within = arith.remui %%col, %%hd : index
    %%h = arith.divui %%within, %%cd : index
    %%e = arith.remui %%within, %%cd : index
    %%first = arith.cmpi %[12]s, %%col, %%bound : index
    %%second = arith.cmpi ult, %%col, %%hd2 : index
    %%x = "loop.if"(%%first) ({
      %[8]s
    }, {
      %%y = "loop.if"(%%second) ({
        %[9]s
      }, {
        %[10]s
      }) : (i1) -> %[11]s
      loop.yield %%y : %[11]s
    }) : (i1) -> %[11]s
    loop.store %%x, %%out[%%r, %%col] : %[2]s
    "loop.reduce"() : () -> ()
  }) : (index, index, index, index, index, index) -> ()
  return %%out : %[2]s
}
`, src, out, r, 3*h*d, h*d, 2*h*d, d, load("%a"), load("%b"), load("%c"), elt, pred, bound)
}

// TestConcatHeadsVectorize checks the lane forms on drawn concatenations
// of heads: the kernel takes the widest vector that the option allows and
// that divides a source's h·d columns (a chunk of lanes then takes one
// branch; its loads, only stored, may gather: within a head of d < V
// columns each lane loads its own element), and computes what the nest
// computes (lanes that derived a head's index past its end would load the
// wrong elements, a chunk straddling sources the wrong source).
func TestConcatHeadsVectorize(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := rapid.Int64Range(1, 3).Draw(rt, "r")
		h := rapid.Int64Range(1, 3).Draw(rt, "h")
		d := rapid.SampledFrom([]int64{1, 2, 3, 4, 6, 8, 12}).Draw(rt, "d")
		elt := rapid.SampledFrom([]string{"f32", "bf16"}).Draw(rt, "elt")
		cfg := Config{
			Block:     rapid.SampledFrom([]int64{32, 64}).Draw(rt, "block"),
			Vector:    rapid.SampledFrom([]int64{1, 2, 4, 6}).Draw(rt, "vector"),
			MaxBlocks: rapid.SampledFrom([]int64{1, 2, 65536}).Draw(rt, "maxBlocks"),
		}
		src := concatHeadsProgram(r, h, d, elt, rapid.Bool().Draw(rt, "le"))
		_, before := parseProgram(rt, src)
		ctx, after := parseProgram(rt, src)
		if err := Run(ctx, after, cfg); err != nil {
			rt.Fatal(err)
		}
		if err := ir.Verify(after); err != nil {
			rt.Fatalf("verifier: %v\n%s", err, after)
		}
		// The option's width when it divides the row of 3·h·d (twice
		// for 16-bit elements when that divides it too), down to a
		// power of two, halved until it divides d.
		want := int64(1)
		if n := 3 * h * d; cfg.Vector > 1 && n%cfg.Vector == 0 {
			want = cfg.Vector
			if elt == "bf16" && n%(2*want) == 0 {
				want *= 2
			}
			for want&(want-1) != 0 {
				want &= want - 1
			}
			for (h*d)%want != 0 {
				want /= 2
			}
		}
		var got int64
		after.Walk(func(o *ir.Operation) bool {
			if gpu.IsKernel(o) {
				got = o.Attr(LaunchAttr).(ir.DictAttr).Get("vector").(ir.IntegerAttr).Value
			}
			return true
		})
		if got != want {
			rt.Fatalf("vector %d, want %d (d=%d, option %d, %s):\n%s", got, want, d, cfg.Vector, elt, after)
		}
		checkSame(rt, before, after, r*100+h*10+d)
	})
}
