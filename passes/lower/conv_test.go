package lower_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	_ "github.com/strata-ir/strata/autodiff" // graph-autodiff
	"github.com/strata-ir/strata/internal/testsize"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// convCase is a random graph.conv2d program and the static shapes of its
// arguments.
type convCase struct {
	src    string
	inputs []ir.Type // static, even where src has a dynamic batch
}

// drawConv draws a valid convolution: channels divisible by the groups,
// strides, dilations and (possibly asymmetric) padding from small ranges,
// spatial sizes the dilated kernel fits, sometimes a bias, a relu
// epilogue and a dynamic batch size.
func drawConv(t *rapid.T, elems []ir.Type, allowDynamic bool) convCase {
	elem := rapid.SampledFrom(elems).Draw(t, "elem")
	n := rapid.Int64Range(0, 2).Draw(t, "n")
	g := rapid.Int64Range(1, 3).Draw(t, "groups")
	cg := rapid.Int64Range(1, 3).Draw(t, "cg")
	og := rapid.Int64Range(1, 4).Draw(t, "og")
	var k, str, dil, in [2]int64
	var pad [4]int64
	for i := range 2 {
		k[i] = rapid.Int64Range(1, 3).Draw(t, fmt.Sprint("k", i))
		str[i] = rapid.Int64Range(1, 3).Draw(t, fmt.Sprint("stride", i))
		dil[i] = rapid.Int64Range(1, 2).Draw(t, fmt.Sprint("dilation", i))
		pad[i] = rapid.Int64Range(0, 2).Draw(t, fmt.Sprint("padlo", i))
		pad[2+i] = rapid.Int64Range(0, 2).Draw(t, fmt.Sprint("padhi", i))
	}
	var attrs []string
	switch {
	case pad == [4]int64{}:
	case pad[0] == pad[2] && pad[1] == pad[3] && rapid.Bool().Draw(t, "padding2"):
		attrs = append(attrs, fmt.Sprintf("padding = [%d, %d]", pad[0], pad[1]))
	default:
		attrs = append(attrs, fmt.Sprintf("padding = [%d, %d, %d, %d]", pad[0], pad[1], pad[2], pad[3]))
	}
	if str != [2]int64{1, 1} {
		attrs = append(attrs, fmt.Sprintf("strides = [%d, %d]", str[0], str[1]))
	}
	if dil != [2]int64{1, 1} {
		attrs = append(attrs, fmt.Sprintf("dilations = [%d, %d]", dil[0], dil[1]))
	}
	if g > 1 {
		attrs = append(attrs, fmt.Sprintf("groups = %d : i64", g))
	}
	var out [2]int64
	for i := range 2 {
		least := max(1, dil[i]*(k[i]-1)+1-pad[i]-pad[2+i])
		in[i] = rapid.Int64Range(least, least+5).Draw(t, fmt.Sprint("in", i))
		out[i] = (in[i]+pad[i]+pad[2+i]-dil[i]*(k[i]-1)-1)/str[i] + 1
	}
	dynamic := allowDynamic && rapid.Bool().Draw(t, "dynamic")
	batch := fmt.Sprint(n)
	if dynamic {
		batch = "?"
	}
	tensor := func(b string, shape ...int64) string {
		var s strings.Builder
		s.WriteString("tensor<" + b)
		for _, d := range shape {
			fmt.Fprintf(&s, "x%d", d)
		}
		return s.String() + "x" + elem.String() + ">"
	}
	xt := tensor(batch, g*cg, in[0], in[1])
	wt := tensor(fmt.Sprint(g*og), cg, k[0], k[1])
	yt := tensor(batch, g*og, out[0], out[1])
	args := []string{"%x: " + xt, "%w: " + wt}
	operands, types := "%x, %w", xt+", "+wt
	inputs := []ir.Type{
		ir.TensorOf([]int64{n, g * cg, in[0], in[1]}, elem),
		ir.TensorOf([]int64{g * og, cg, k[0], k[1]}, elem),
	}
	if rapid.Bool().Draw(t, "bias") {
		bt := fmt.Sprintf("tensor<%dx%s>", g*og, elem)
		args = append(args, "%b: "+bt)
		operands, types = operands+", %b", types+", "+bt
		inputs = append(inputs, ir.TensorOf([]int64{g * og}, elem))
	}
	props := ""
	if len(attrs) > 0 {
		props = " <{" + strings.Join(attrs, ", ") + "}>"
	}
	body := fmt.Sprintf("  %%0 = \"graph.conv2d\"(%s)%s : (%s) -> %s\n", operands, props, types, yt)
	res, rt := "%0", yt
	switch rapid.IntRange(0, 2).Draw(t, "epilogue") {
	case 1: // relu
		body += fmt.Sprintf("  %%1 = \"graph.relu\"(%%0) : (%s) -> %s\n", yt, yt)
		res = "%1"
	case 2: // relu, and the convolution too: a group with two outputs
		body += fmt.Sprintf("  %%1 = \"graph.relu\"(%%0) : (%s) -> %s\n", yt, yt)
		res, rt = "%1, %0", "("+yt+", "+yt+")"
		yt += ", " + yt
	}
	src := fmt.Sprintf("func.func @main(%s) -> %s {\n%s  return %s : %s\n}\n", strings.Join(args, ", "), rt, body, res, yt)
	return convCase{src: src, inputs: inputs}
}

// runConv runs @main of m on tensors (as buffers when the module is
// lowered) and returns the results as tensors.
func runConv(t passtest.TB, m *ir.Operation, args []interp.Value, lowered bool) []*interp.Tensor {
	t.Helper()
	in := make([]interp.Value, len(args))
	for i, a := range args {
		in[i] = a
		if lowered {
			in[i] = interp.BufferFromTensor(a.(*interp.Tensor))
		}
	}
	res, err := interp.New(m).Call("main", in...)
	if err != nil {
		t.Fatalf("running:\n%s\n%v", m, err)
	}
	out := make([]*interp.Tensor, len(res))
	for i, r := range res {
		switch r := r.(type) {
		case *interp.Tensor:
			out[i] = r
		case *interp.Buffer:
			if out[i], err = r.Tensor(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("result of type %T", r)
		}
	}
	return out
}

// TestConv2DLowering checks random convolutions against the interpreter's
// graph.conv2d: after lower-to-loop bit for bit (NaN matching NaN), and
// after lower-to-gpu, whose launch plan the interpreter simulates thread by
// thread, within passtest's tolerance.
func TestConv2DLowering(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawConv(rt, []ir.Type{ir.F32, ir.F16, ir.BF16, ir.F64, ir.I32}, true)
		args, err := interp.RandomInputs(ir.FunctionOf(c.inputs, nil), 7)
		if err != nil {
			rt.Fatal(err)
		}
		want := runConv(rt, passtest.Run(rt, c.src, ""), args, false)
		loops := runConv(rt, passtest.Run(rt, c.src, "lower-to-loop"), args, true)
		gpu := runConv(rt, passtest.Run(rt, c.src, "builtin.module(lower-to-gpu)"), args, true)
		for r := range want {
			gb, wb := loops[r].Bits(), want[r].Bits()
			gf, wf := loops[r].Float64s(), want[r].Float64s()
			for i := range wb {
				if gb[i] != wb[i] && !(math.IsNaN(gf[i]) && math.IsNaN(wf[i])) {
					rt.Fatalf("lower-to-loop: result %d, element %d is %v (%#x), the interpreter's %v (%#x)\n%s", r, i, gf[i], gb[i], wf[i], wb[i], c.src)
				}
			}
			if err := passtest.Compare(gpu[r], want[r]); err != nil {
				rt.Fatalf("lower-to-gpu: result %d: %v\n%s", r, err, c.src)
			}
		}
	})
}

// TestConv2DGradientLowering differentiates random convolutions with
// graph-autodiff, whose backward pass holds convolutions of other shapes
// (transposed, with the strides as dilations), and checks @main_grad after
// lower-to-gpu against the interpreter.
func TestConv2DGradientLowering(t *testing.T) {
	testsize.RapidChecks(t, 20) // each check lowers and simulates a gradient: 100 under make test-long
	rapid.Check(t, func(rt *rapid.T) {
		c := drawConv(rt, []ir.Type{ir.F32, ir.F64}, false)
		m := passtest.Run(rt, c.src, "builtin.module(graph-autodiff)")
		p := &passtest.Program{Source: ir.Sprint(m, ir.PrintOptions{Generic: true}), Func: "main_grad"}
		if err := passtest.CheckSemantics(p, "builtin.module(lower-to-gpu)", 5); err != nil {
			rt.Fatal(err)
		}
	})
}
