package autodiff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"pgregory.net/rapid"

	"github.com/strata-ir/strata/dialects"
	funcd "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
)

// sameValues reports how two lists of results differ, bit for bit (NaNs
// equal): the joint and partitioned functions run the same ops in the
// same order as f and f_grad.
func sameValues(got, want []interp.Value) error {
	type result struct {
		Elem   string
		Shape  []int64
		Values []float64
	}
	view := func(vs []interp.Value) []result {
		out := make([]result, len(vs))
		for i, v := range vs {
			t := v.(*interp.Tensor)
			out[i] = result{t.ElemType().String(), t.Shape(), t.Float64s()}
		}
		return out
	}
	if diff := cmp.Diff(view(want), view(got), cmpopts.EquateNaNs()); diff != "" {
		return fmt.Errorf("results differ (-want +got):\n%s", diff)
	}
	return nil
}

// derived is f with its gradient, joint, forward and backward functions.
type derived struct {
	module, fn, grad, joint, fwd, bwd *ir.Operation
	report                            Report
}

// deriveAll adds @f_grad, @f_joint, @f_fwd and @f_bwd next to fn.
func deriveAll(ctx *ir.Context, module, fn *ir.Operation, wrt []int) (*derived, error) {
	d := &derived{module: module, fn: fn}
	var err error
	if d.grad, err = Grad(ctx, fn, wrt); err != nil {
		return nil, err
	}
	if d.joint, err = Joint(ctx, fn, wrt); err != nil {
		return nil, fmt.Errorf("Grad succeeds but Joint fails: %w", err)
	}
	if d.fwd, d.bwd, d.report, err = Partition(ctx, d.joint); err != nil {
		return nil, fmt.Errorf("Partition: %w", err)
	}
	return d, ir.Verify(module)
}

// check runs f, f_grad, f_joint, f_fwd and f_bwd on random inputs and
// compares: the joint returns f's results and f_grad's gradients, the
// forward pass f's results, the backward pass the same gradients; the
// partition saves no more than saving everything.
//
// The arguments are random, from seed; primals, when not nil, replace f's.
func (d *derived) check(primals []interp.Value, seed int64) error {
	in := interp.New(d.module)
	ft := funcd.Type(d.joint)
	args, err := interp.RandomInputs(ft, seed)
	if err != nil {
		return err
	}
	name := ir.SymbolName(d.fn)
	nin := len(funcd.Type(d.fn).Inputs)
	if primals != nil {
		copy(args, primals)
	}
	primals, cts := args[:nin], args[nin:]
	ys, err := in.Call(name, primals...)
	if err != nil {
		return err
	}
	gs, err := in.Call(ir.SymbolName(d.grad), args...)
	if err != nil {
		return err
	}
	js, err := in.Call(ir.SymbolName(d.joint), args...)
	if err != nil {
		return err
	}
	if err := sameValues(js, slices.Concat(ys, gs)); err != nil {
		return fmt.Errorf("joint vs f and f_grad: %w", err)
	}
	fs, err := in.Call(ir.SymbolName(d.fwd), primals...)
	if err != nil {
		return err
	}
	if err := sameValues(fs[:len(ys)], ys); err != nil {
		return fmt.Errorf("forward pass vs f: %w", err)
	}
	bs, err := in.Call(ir.SymbolName(d.bwd), slices.Concat(fs[len(ys):], cts)...)
	if err != nil {
		return err
	}
	if err := sameValues(bs, gs); err != nil {
		return fmt.Errorf("backward pass vs f_grad: %w", err)
	}
	if d.report.SavedBytes > d.report.SaveAllBytes {
		return fmt.Errorf("saves %d bytes, more than saving everything (%d)", d.report.SavedBytes, d.report.SaveAllBytes)
	}
	if len(fs)-len(ys) != len(d.report.Saved) {
		return fmt.Errorf("the forward pass returns %d saved values, the report lists %d", len(fs)-len(ys), len(d.report.Saved))
	}
	return nil
}

// TestJointAndPartitionOnRandomPrograms differentiates random programs
// with respect to every float argument.
func TestJointAndPartitionOnRandomPrograms(t *testing.T) {
	gen := passtest.GraphProgram(passtest.Config{Floats: []ir.Type{ir.F64}, MaxOps: 12})
	rapid.Check(t, func(rt *rapid.T) {
		p := gen.Draw(rt, "program")
		ctx := dialects.NewContext()
		m, err := p.Parse(ctx)
		if err != nil {
			rt.Fatal(err)
		}
		fn := findFunc(m, p.Func)
		d, err := deriveAll(ctx, m, fn, nil)
		if err != nil {
			if strings.HasPrefix(err.Error(), "Grad succeeds") || strings.HasPrefix(err.Error(), "Partition") {
				rt.Fatalf("%v\n%s", err, p)
			}
			rt.Skipf("not differentiable: %v", err)
		}
		if err := d.check(nil, rapid.Int64().Draw(rt, "seed")); err != nil {
			rt.Fatalf("%v\n%s", err, ir.Sprint(m, ir.PrintOptions{}))
		}
	})
}

// TestJointAndPartitionPerRule checks every rule's case through the joint
// form and the partition.
func TestJointAndPartitionPerRule(t *testing.T) {
	for name, gen := range cases {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := gen(rt)
				ctx := dialects.NewContext()
				fx, err := build(ctx, in)
				if err != nil {
					rt.Skipf("shape rule rejects the draw: %v", err)
				}
				d, err := deriveAll(ctx, fx.module, fx.fn, fx.wrt)
				if err != nil {
					rt.Fatal(err)
				}
				seed := rapid.Int64().Draw(rt, "seed")
				if err := fx.draw(in, rand.New(rand.NewPCG(uint64(seed), 3))); err != nil {
					rt.Fatal(err)
				}
				if err := d.check(values(fx.inputs), seed); err != nil {
					rt.Fatalf("%v\n%s", err, ir.Sprint(fx.module, ir.PrintOptions{}))
				}
			})
		})
	}
}

func findFunc(m *ir.Operation, name string) *ir.Operation {
	for op := range m.Region(0).Front().All() {
		if ir.SymbolName(op) == name {
			return op
		}
	}
	return nil
}

const mlp = `
func.func @mlp(%x: tensor<8x4xf32>, %w1: tensor<4x16xf32>, %b1: tensor<16xf32>, %w2: tensor<16x2xf32>) -> tensor<f32> {
  %0 = "graph.matmul"(%x, %w1) : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %1 = "graph.add"(%0, %b1) : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %2 = "graph.tanh"(%1) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %3 = "graph.exp"(%2) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %4 = "graph.matmul"(%3, %w2) : (tensor<8x16xf32>, tensor<16x2xf32>) -> tensor<8x2xf32>
  %5 = "graph.mul"(%4, %4) : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %6 = "graph.reduce_mean"(%5) {axes = [0, 1], keepdims = false} : (tensor<8x2xf32>) -> tensor<f32>
  return %6 : tensor<f32>
}`

// TestPartitionPolicy pins the choices on an MLP: the second matmul's
// output and the inputs the weight gradients need are saved; of the
// pointwise chain add, tanh, exp between the matmuls the exp is saved (the
// second matmul reads it from memory, so the forward pass writes it
// anyway, and the second weight gradient's product reads it again) and
// the add (smaller than the first matmul's output plus the bias), from
// which the backward pass recomputes tanh for exp's derivative.
func TestPartitionPolicy(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, mlp, ir.ParseOptions{Filename: "mlp.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := deriveAll(ctx, m, findFunc(m, "mlp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, s := range d.report.Saved {
		what = append(what, s.What)
	}
	want := []string{"argument 0", "argument 1", "argument 3", "'graph.add' at mlp.mlir:4:8", "'graph.exp' at mlp.mlir:6:8", "'graph.matmul' at mlp.mlir:7:8"}
	if diff := cmp.Diff(want, what); diff != "" {
		t.Errorf("saved values (-want +got):\n%s\n%s", diff, d.report)
	}
	// x 128 + w1 256 + w2 128 + the add 512 + the exp 512 + the matmul 64.
	if d.report.SavedBytes != 1600 {
		t.Errorf("saved %d bytes, want 1600", d.report.SavedBytes)
	}
	if d.report.SavedBytes >= d.report.SaveAllBytes {
		t.Errorf("saving %d bytes is no better than saving everything (%d)", d.report.SavedBytes, d.report.SaveAllBytes)
	}
	bwdOps := map[string]int{}
	for op := range funcd.Body(d.bwd).All() {
		bwdOps[op.Name()]++
	}
	if bwdOps["graph.tanh"] == 0 || bwdOps["graph.exp"] != 0 {
		t.Errorf("the backward pass recomputes %d tanh and %d exp, want tanh only:\n%s", bwdOps["graph.tanh"], bwdOps["graph.exp"], ir.Sprint(d.bwd, ir.PrintOptions{}))
	}
	if err := d.check(nil, 1); err != nil {
		t.Fatal(err)
	}
	s := d.report.String()
	for _, line := range []string{
		"@mlp_joint: saves 6 values, 1600 bytes (saving everything the backward reads: ",
		"  saved 3: 'graph.add' at mlp.mlir:4:8 : tensor<8x16xf32>, 512 bytes\n",
		"  saved 4: 'graph.exp' at mlp.mlir:6:8 : tensor<8x16xf32>, 512 bytes\n",
	} {
		if !strings.Contains(s, line) {
			t.Errorf("the report lacks %q:\n%s", line, s)
		}
	}
}

// tiedHead is a language model's tied output head: the logits read the
// bf16 embedding table transposed, and a 4-D transpose that a product
// cannot read as it is (attention's heads merged back) feeds another.
const tiedHead = `
func.func @head(%x: tensor<8x4xbf16>, %wte: tensor<16x4xf32>, %o: tensor<2x2x4x2xbf16>, %w: tensor<4x4xbf16>) -> tensor<f32> {
  %e = "graph.cast"(%wte) : (tensor<16x4xf32>) -> tensor<16x4xbf16>
  %t = "graph.transpose"(%e) {perm = [1, 0]} : (tensor<16x4xbf16>) -> tensor<4x16xbf16>
  %l = "graph.matmul"(%x, %t) : (tensor<8x4xbf16>, tensor<4x16xbf16>) -> tensor<8x16xbf16>
  %h = "graph.transpose"(%o) {perm = [0, 2, 1, 3]} : (tensor<2x2x4x2xbf16>) -> tensor<2x4x2x2xbf16>
  %r = "graph.reshape"(%h) {shape = [8, 4]} : (tensor<2x4x2x2xbf16>) -> tensor<8x4xbf16>
  %p = "graph.matmul"(%r, %w) : (tensor<8x4xbf16>, tensor<4x4xbf16>) -> tensor<8x4xbf16>
  %lf = "graph.cast"(%l) : (tensor<8x16xbf16>) -> tensor<8x16xf32>
  %pf = "graph.cast"(%p) : (tensor<8x4xbf16>) -> tensor<8x4xf32>
  %a = "graph.reduce_sum"(%lf) {axes = [0, 1], keepdims = false} : (tensor<8x16xf32>) -> tensor<f32>
  %b = "graph.reduce_sum"(%pf) {axes = [0, 1], keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  %s = "graph.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}`

// TestPartitionSavesNoMatrixTranspose checks that the forward pass saves
// the bf16 table a product reads transposed, not the transpose (which
// would be a copy made only to be saved), while the merged heads a
// product reads through a 4-D transpose (which the forward pass copies
// anyway) stay saved as the product reads them.
func TestPartitionSavesNoMatrixTranspose(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, tiedHead, ir.ParseOptions{Filename: "head.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := deriveAll(ctx, m, findFunc(m, "head"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, s := range d.report.Saved {
		what = append(what, s.What)
	}
	want := []string{"argument 0", "argument 3", "'graph.cast' at head.mlir:3:8", "'graph.reshape' at head.mlir:7:8"}
	if diff := cmp.Diff(want, what); diff != "" {
		t.Errorf("saved values (-want +got):\n%s\n%s", diff, d.report)
	}
	if err := d.check(nil, 1); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionErrors: a function that is not joint, and a taken name.
func TestPartitionErrors(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, mlp, ir.ParseOptions{Filename: "mlp.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	fn := findFunc(m, "mlp")
	if _, _, _, err := Partition(ctx, fn); err == nil || !strings.Contains(err.Error(), "is not a joint function") {
		t.Errorf("partitioning @mlp: %v, want 'is not a joint function'", err)
	}
	joint, err := Joint(ctx, fn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Joint(ctx, fn, nil); err == nil || !strings.Contains(err.Error(), "@mlp_joint: the symbol already exists") {
		t.Errorf("a second Joint: %v", err)
	}
	if _, _, _, err := Partition(ctx, joint); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Partition(ctx, joint); err == nil || !strings.Contains(err.Error(), "@mlp_fwd: the symbol already exists") {
		t.Errorf("a second Partition: %v", err)
	}
}

// TestPartitionPass runs graph-autodiff{joint} and graph-partition and
// checks the functions left and the logged report.
func TestPartitionPass(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, mlp, ir.ParseOptions{Filename: "mlp.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	prev := logs.SetOutput(&log)
	defer logs.SetOutput(prev)
	logs.Enable(PartitionTopic)
	defer logs.Disable()
	pm, err := passes.Parse("builtin.module(graph-autodiff{joint=true},graph-partition)")
	if err != nil {
		t.Fatal(err)
	}
	if err := pm.Run(ctx, m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for op := range m.Region(0).Front().All() {
		names = append(names, ir.SymbolName(op))
	}
	if want := []string{"mlp", "mlp_fwd", "mlp_bwd"}; !slices.Equal(names, want) {
		t.Errorf("functions %v, want %v", names, want)
	}
	if !strings.Contains(log.String(), "partition: @mlp_joint: saves 6 values, 1600 bytes") {
		t.Errorf("log:\n%s", log.String())
	}
	bad, err := passes.Parse("builtin.module(graph-partition{func=mlp})")
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Run(ctx, m); err == nil || !strings.Contains(err.Error(), "is not a joint function") {
		t.Errorf("partitioning a plain function: %v", err)
	}
}

// weightView is a 1×1 convolution's weight made a product's operand, as
// graph-channels-last writes it: the bf16 copy of the float32 master
// weight [O, C, 1, 1] read as [O, C], transposed.
const weightView = `
func.func @lin(%x: tensor<8x4xbf16>, %w: tensor<6x4x1x1xf32>) -> tensor<f32> {
  %c = "graph.cast"(%w) : (tensor<6x4x1x1xf32>) -> tensor<6x4x1x1xbf16>
  %r = "graph.reshape"(%c) {shape = [6, 4]} : (tensor<6x4x1x1xbf16>) -> tensor<6x4xbf16>
  %t = "graph.transpose"(%r) {perm = [1, 0]} : (tensor<6x4xbf16>) -> tensor<4x6xbf16>
  %y = "graph.matmul"(%x, %t) : (tensor<8x4xbf16>, tensor<4x6xbf16>) -> tensor<8x6xbf16>
  %yf = "graph.cast"(%y) : (tensor<8x6xbf16>) -> tensor<8x6xf32>
  %s = "graph.reduce_sum"(%yf) {axes = [0, 1], keepdims = false} : (tensor<8x6xf32>) -> tensor<f32>
  return %s : tensor<f32>
}`

// TestPartitionSavesNoReshapeOfStored checks that the forward pass saves
// the cast weight, which it writes anyway, not its reshape (a view the
// forward pass would copy only to return it).
func TestPartitionSavesNoReshapeOfStored(t *testing.T) {
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, weightView, ir.ParseOptions{Filename: "lin.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := deriveAll(ctx, m, findFunc(m, "lin"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var what []string
	for _, s := range d.report.Saved {
		what = append(what, s.What)
	}
	want := []string{"argument 0", "'graph.cast' at lin.mlir:3:8"}
	if diff := cmp.Diff(want, what); diff != "" {
		t.Errorf("saved values (-want +got):\n%s\n%s", diff, d.report)
	}
	if err := d.check(nil, 1); err != nil {
		t.Fatal(err)
	}
}
