package fusion_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-ir/strata/passes/fusion"
	"github.com/strata-ir/strata/passes/lower"
	"github.com/strata-ir/strata/passes/passtest"
)

// stagedCases are matmul operands graph-fuse gives a copy group of their
// own (or not), with the kinds of the fusions it makes.
var stagedCases = []struct {
	name, src string
	kinds     []string
	log       string // a line the log must hold
}{
	{"attention-heads-merged", fn("%o: tensor<2x4x8x16xbf16>, %w: tensor<64x32xbf16>", "tensor<16x32xbf16>", `
  %t = "graph.transpose"(%o) <{perm = [0, 2, 1, 3]}> : (tensor<2x4x8x16xbf16>) -> tensor<2x8x4x16xbf16>
  %r = "graph.reshape"(%t) <{shape = [16, 64]}> : (tensor<2x8x4x16xbf16>) -> tensor<16x64xbf16>
  %y = "graph.matmul"(%r, %w) : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>`), []string{"copy", "matmul"}, "cannot read in place"},
	// A reshape, or a transpose of the last two dims, is read in place.
	{"reshape-read-in-place", fn("%x: tensor<2x8x64xbf16>, %w: tensor<64x32xbf16>", "tensor<16x32xbf16>", `
  %r = "graph.reshape"(%x) <{shape = [16, 64]}> : (tensor<2x8x64xbf16>) -> tensor<16x64xbf16>
  %y = "graph.matmul"(%r, %w) : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>`), []string{"matmul"}, ""},
	// f32 products run on no tensor core: nothing is copied.
	{"f32-not-staged", fn("%o: tensor<2x4x8x16xf32>, %w: tensor<64x32xf32>", "tensor<16x32xf32>", `
  %t = "graph.transpose"(%o) <{perm = [0, 2, 1, 3]}> : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %r = "graph.reshape"(%t) <{shape = [16, 64]}> : (tensor<2x8x4x16xf32>) -> tensor<16x64xf32>
  %y = "graph.matmul"(%r, %w) : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  return %y : tensor<16x32xf32>`), []string{"matmul"}, ""},
	// The bias gradient (a reduction whose prologue computes the view's
	// source) reads the view before the matmuls do: it keeps reading it as
	// index arithmetic, the products read the copy (reading the copy from
	// the reduction's group would make a cycle through it).
	{"earlier-reader-keeps-the-view", fn("%a: tensor<2x8x3x16xbf16>, %b: tensor<2x8x3x16xbf16>, %w: tensor<48x32xbf16>", "tensor<48xbf16>, tensor<16x32xbf16>", `
  %s = "graph.add"(%a, %b) : (tensor<2x8x3x16xbf16>, tensor<2x8x3x16xbf16>) -> tensor<2x8x3x16xbf16>
  %t = "graph.transpose"(%s) <{perm = [1, 0, 2, 3]}> : (tensor<2x8x3x16xbf16>) -> tensor<8x2x3x16xbf16>
  %r = "graph.reshape"(%t) <{shape = [16, 48]}> : (tensor<8x2x3x16xbf16>) -> tensor<16x48xbf16>
  %g = "graph.reduce_sum"(%r) <{axes = [0], keepdims = false}> : (tensor<16x48xbf16>) -> tensor<48xbf16>
  %y = "graph.matmul"(%r, %w) : (tensor<16x48xbf16>, tensor<48x32xbf16>) -> tensor<16x32xbf16>
  return %g, %y : tensor<48xbf16>, tensor<16x32xbf16>`), []string{"reduction", "copy", "matmul"}, "cannot read in place"},
}

// TestStagedMatmulOperands checks which half-precision matmul operands
// graph-fuse materializes for the tensor-core plans, and that the fused
// programs compute what the graphs do.
func TestStagedMatmulOperands(t *testing.T) {
	for _, c := range stagedCases {
		t.Run(c.name, func(t *testing.T) {
			m, log := fuse(t, c.src, fusion.DefaultOptions())
			if got := kinds(m); strings.Join(got, ",") != strings.Join(c.kinds, ",") {
				t.Errorf("fusion kinds %v, want %v\n%s", got, c.kinds, log)
			}
			if c.log != "" && !strings.Contains(log, c.log) {
				t.Errorf("log lacks %q:\n%s", c.log, log)
			}
			p := &passtest.Program{Source: c.src, Func: "f"}
			if err := passtest.CheckSemantics(p, "lower-to-loop", 1); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPrologueSpaceConsumer checks that a pointwise consumer of a
// reduction's prologue joins the reduction's kernel (GPT-2's GELU
// gradient: kept in f32 for the bias gradient's column sums and cast to
// bf16 for the products, it is no longer stored in f32), that one reading
// the reduced value does not, and that both fused programs compute what
// the graphs do.
func TestPrologueSpaceConsumer(t *testing.T) {
	for _, c := range []struct {
		name, src string
		kinds     []string
		log       string
	}{
		{"cast-of-the-gradient", fn("%g: tensor<8x6xbf16>, %x: tensor<8x6xbf16>, %w: tensor<6x4xbf16>", "tensor<2x6xf32>, tensor<8x4xbf16>", `
  %gf = "graph.cast"(%g) : (tensor<8x6xbf16>) -> tensor<8x6xf32>
  %xf = "graph.cast"(%x) : (tensor<8x6xbf16>) -> tensor<8x6xf32>
  %d = "graph.mul"(%gf, %xf) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
  %r = "graph.reshape"(%d) <{shape = [2, 4, 6]}> : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %s = "graph.reduce_sum"(%r) <{axes = [1], keepdims = false}> : (tensor<2x4x6xf32>) -> tensor<2x6xf32>
  %db = "graph.cast"(%d) : (tensor<8x6xf32>) -> tensor<8x6xbf16>
  %y = "graph.matmul"(%db, %w) : (tensor<8x6xbf16>, tensor<6x4xbf16>) -> tensor<8x4xbf16>
  return %s, %y : tensor<2x6xf32>, tensor<8x4xbf16>`), []string{"reduction", "matmul"}, "prologue-space consumer"},
		{"reads-the-sum", fn("%g: tensor<8x6xf32>", "tensor<2x6xf32>, tensor<8x6xf32>", `
  %d = "graph.exp"(%g) : (tensor<8x6xf32>) -> tensor<8x6xf32>
  %r = "graph.reshape"(%d) <{shape = [2, 4, 6]}> : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %s = "graph.reduce_sum"(%r) <{axes = [1], keepdims = true}> : (tensor<2x4x6xf32>) -> tensor<2x1x6xf32>
  %q = "graph.div"(%r, %s) : (tensor<2x4x6xf32>, tensor<2x1x6xf32>) -> tensor<2x4x6xf32>
  %o = "graph.reshape"(%q) <{shape = [8, 6]}> : (tensor<2x4x6xf32>) -> tensor<8x6xf32>
  %s2 = "graph.reshape"(%s) <{shape = [2, 6]}> : (tensor<2x1x6xf32>) -> tensor<2x6xf32>
  return %s2, %o : tensor<2x6xf32>, tensor<8x6xf32>`), []string{"reduction", "pointwise", "copy", "copy"}, "cannot broadcast the reduced value back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, log := fuse(t, c.src, fusion.DefaultOptions())
			if got := kinds(m); strings.Join(got, ",") != strings.Join(c.kinds, ",") {
				t.Errorf("fusion kinds %v, want %v\n%s", got, c.kinds, log)
			}
			if !strings.Contains(log, c.log) {
				t.Errorf("log lacks %q:\n%s", c.log, log)
			}
			p := &passtest.Program{Source: c.src, Func: "f"}
			if err := passtest.CheckSemantics(p, "lower-to-loop", 1); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSiblingColumnReductions: the second halves of a split batch-norm
// statistic ([P, C] → [C] column sums of two partial buffers, the
// variance's epilogue reading the mean) share one kernel; a column sum
// whose input reads the other's result does not (its reduction would
// need the other's sum first), and neither does one over other axes.
// Each fused program computes what the graph does, through the GPU
// lowering too.
func TestSiblingColumnReductions(t *testing.T) {
	p, c := "tensor<64x8xf32>", "tensor<8xf32>"
	for _, tc := range []struct {
		name, src string
		kinds     []string
		log       string
	}{
		{"epilogue-reads-the-mean", fn("%a: "+p+", %b: "+p+", %g: "+c, c+", "+c, `
  %s = "graph.reduce_sum"(%a) <{axes = [0]}> : (`+p+`) -> `+c+`
  %m = "graph.mul"(%s, %s) : (`+c+`, `+c+`) -> `+c+`
  %q = "graph.reduce_sum"(%b) <{axes = [0]}> : (`+p+`) -> `+c+`
  %v = "graph.sub"(%q, %m) : (`+c+`, `+c+`) -> `+c+`
  %r = "graph.mul"(%v, %g) : (`+c+`, `+c+`) -> `+c+`
  return %s, %r : `+c+`, `+c), []string{"reduction"}, "reading the reduced values of group"},
		{"input-reads-the-sum", fn("%a: "+p+", %b: "+p, c+", "+c, `
  %s = "graph.reduce_sum"(%a) <{axes = [0]}> : (`+p+`) -> `+c+`
  %d = "graph.sub"(%b, %s) : (`+p+`, `+c+`) -> `+p+`
  %q = "graph.reduce_sum"(%d) <{axes = [0]}> : (`+p+`) -> `+c+`
  %v = "graph.sub"(%q, %s) : (`+c+`, `+c+`) -> `+c+`
  return %s, %v : `+c+`, `+c), []string{"reduction", "reduction"}, "rows cannot stay in one kernel"},
		{"other-axes", fn("%a: "+p+", %b: tensor<8x64xf32>", c+", "+c, `
  %s = "graph.reduce_sum"(%a) <{axes = [0]}> : (`+p+`) -> `+c+`
  %q = "graph.reduce_sum"(%b) <{axes = [1]}> : (tensor<8x64xf32>) -> `+c+`
  %v = "graph.sub"(%q, %s) : (`+c+`, `+c+`) -> `+c+`
  return %s, %v : `+c+`, `+c), []string{"reduction", "reduction"}, "reduces [8 64] to [8], group 1 reduces [64 8] to [8]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, log := fuse(t, tc.src, fusion.DefaultOptions())
			if got := kinds(m); strings.Join(got, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("fusion kinds %v, want %v\n%s", got, tc.kinds, log)
			}
			if !strings.Contains(log, tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, log)
			}
			for _, pipeline := range []string{"lower-to-loop", "builtin.module(lower-to-gpu)"} {
				if err := passtest.CheckSemantics(&passtest.Program{Source: tc.src, Func: "f"}, pipeline, 1); err != nil {
					t.Errorf("%s: %v", pipeline, err)
				}
			}
		})
	}
}

// TestQKVSplit checks the kernels of a fused qkv projection's bias and
// head split: the bias add joins the kernel that cuts the heads (the
// copies of its views for an attention call, or the group that casts the
// heads to bf16), so that its sum is never stored; with the bias in the
// product, the copies of the heads share one kernel. The fused programs
// compute what the graphs do.
func TestQKVSplit(t *testing.T) {
	split := func(elem, cast string) string {
		body := `
  %p = "graph.matmul"(%x, %w) : (tensor<8x16xbf16>, tensor<16x24xbf16>) -> tensor<8x24xbf16>` + cast + `
  %s = "graph.add"(%pc, %b) : (tensor<8x24xELEM>, tensor<24xELEM>) -> tensor<8x24xELEM>
  %r = "graph.reshape"(%s) <{shape = [2, 4, 3, 2, 4]}> : (tensor<8x24xELEM>) -> tensor<2x4x3x2x4xELEM>
  %t = "graph.transpose"(%r) <{perm = [2, 0, 3, 1, 4]}> : (tensor<2x4x3x2x4xELEM>) -> tensor<3x2x2x4x4xELEM>`
		for i := range 3 {
			body += fmt.Sprintf(`
  %%s%d = "graph.slice"(%%t) <{limits = [%d, 2, 2, 4, 4], starts = [%d, 0, 0, 0, 0]}> : (tensor<3x2x2x4x4xELEM>) -> tensor<1x2x2x4x4xELEM>
  %%h%d = "graph.reshape"(%%s%d) <{shape = [2, 2, 4, 4]}> : (tensor<1x2x2x4x4xELEM>) -> tensor<2x2x4x4xELEM>`, i, i+1, i, i, i)
			if elem == "f32" {
				body += fmt.Sprintf(`
  %%c%d = "graph.cast"(%%h%d) : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xbf16>`, i, i)
			} else {
				body += fmt.Sprintf(`
  %%c%d = "graph.reshape"(%%h%d) <{shape = [2, 2, 4, 4]}> : (tensor<2x2x4x4xbf16>) -> tensor<2x2x4x4xbf16>`, i, i)
			}
		}
		body += `
  return %c0, %c1, %c2 : tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>`
		return strings.ReplaceAll(fn("%x: tensor<8x16xbf16>, %w: tensor<16x24xbf16>, %b: tensor<24xELEM>", "tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>, tensor<2x2x4x4xbf16>", body), "ELEM", elem)
	}
	for _, c := range []struct {
		name, src string
		kinds     []string
		log       string
	}{
		{"bf16-copies", strings.ReplaceAll(split("bf16", ""), "%pc", "%p"), []string{"matmul", "pointwise"}, "computed in place"},
		// The bias in the product (the library's epilogue): the three
		// copies of the heads, siblings, are one kernel.
		{"bf16-bias-in-matmul-copies", strings.NewReplacer(
			`%p = "graph.matmul"(%x, %w) : (tensor<8x16xbf16>, tensor<16x24xbf16>) -> tensor<8x24xbf16>`, "",
			`%s = "graph.add"(%pc, %b) : (tensor<8x24xbf16>, tensor<24xbf16>) -> tensor<8x24xbf16>`,
			`%s = "graph.matmul"(%x, %w, %b) : (tensor<8x16xbf16>, tensor<16x24xbf16>, tensor<24xbf16>) -> tensor<8x24xbf16>`,
		).Replace(split("bf16", "")), []string{"matmul", "pointwise"}, "horizontal (siblings reading the result of 'graph.matmul'"},
		{"f32-bias-cast-heads", split("f32", `
  %pc = "graph.cast"(%p) : (tensor<8x24xbf16>) -> tensor<8x24xf32>`), []string{"matmul", "pointwise"}, "reads no more bytes than it stores"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := fusion.DefaultOptions()
			opts.MatmulLibrary = true
			m, log := fuse(t, c.src, opts)
			if got := kinds(m); strings.Join(got, ",") != strings.Join(c.kinds, ",") {
				t.Errorf("fusion kinds %v, want %v\n%s", got, c.kinds, log)
			}
			if !strings.Contains(log, c.log) {
				t.Errorf("log lacks %q:\n%s", c.log, log)
			}
			p := &passtest.Program{Source: c.src, Func: "f"}
			if err := passtest.CheckSemantics(p, "builtin.module("+lower.LowerToLoop("matmul-library=true")+")", 1); err != nil {
				t.Error(err)
			}
		})
	}
}
