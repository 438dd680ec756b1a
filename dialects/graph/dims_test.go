package graph_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/sym"
)

func mustExpr(t *testing.T, s string) sym.Expr {
	t.Helper()
	e, err := sym.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// symTensor is the f32 tensor type of dims like "s0, 4".
func symTensor(t *testing.T, dims string) *ir.TensorType {
	t.Helper()
	var ds []sym.Expr
	for _, d := range strings.Split(dims, ",") {
		if d = strings.TrimSpace(d); d != "" {
			ds = append(ds, mustExpr(t, d))
		}
	}
	return graph.TensorWithDims(ds, ir.F32)
}

func TestTensorWithDims(t *testing.T) {
	for _, c := range []struct{ dims, want string }{
		{"s0, 4096", "tensor<?x4096xf32, #graph.dims<[s0, 4096]>>"},
		{"2, 3", "tensor<2x3xf32>"},
		{"s0*4 + 1", "tensor<?xf32, #graph.dims<[s0*4 + 1]>>"},
		{"", "tensor<f32>"},
	} {
		tt := symTensor(t, c.dims)
		if tt.String() != c.want {
			t.Errorf("TensorWithDims(%s) = %s, want %s", c.dims, tt, c.want)
		}
		back := graph.TensorWithDims(graph.DimsOf(tt), ir.F32)
		if back != tt {
			t.Errorf("DimsOf round trip: %s -> %s", tt, back)
		}
	}
	// A "?" without encoding stays "?", unknown.
	d := graph.DimsOf(ir.TensorOf([]int64{ir.Dynamic, 3}, ir.F32))
	if !graph.IsUnknown(d[0]) || graph.IsUnknown(d[1]) {
		t.Errorf("DimsOf(tensor<?x3xf32>) = %v", d)
	}
	if got := graph.TensorWithDims(d, ir.F32).String(); got != "tensor<?x3xf32>" {
		t.Errorf("unknown dims print as %s", got)
	}
	if _, err := graph.ParseDims("#graph.dims<[s0, max(s1, 2), ?]>"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"#graph.dims<[s0 +]>", "#graph.dims<[-5]>", "#graph.dims<[s0, 2 - 3]>", "#graph.dims<[floordiv(s0, 0)]>"} {
		if _, err := graph.ParseDims(bad); err == nil {
			t.Errorf("the bad encoding %s parsed", bad)
		}
	}
}

// TestSymbolicRules runs one op of each family on symbolic operands and
// checks the result type and the constraints recorded.
func TestSymbolicRules(t *testing.T) {
	for _, c := range []struct {
		name     string
		operands []string // dims of f32 operands (an "i:" prefix makes i64)
		attrs    string
		declared string // result type for ops that need one
		want     string
		cons     string
	}{
		{name: "add", operands: []string{"s0, 4", "4"}, want: "tensor<?x4xf32, #graph.dims<[s0, 4]>>"},
		{name: "add", operands: []string{"s0, 4", "1, 4"}, want: "tensor<?x4xf32, #graph.dims<[s0, 4]>>"},
		{name: "add", operands: []string{"s0, 4", "s1, 4"}, want: "tensor<?x4xf32, #graph.dims<[s0, 4]>>", cons: "s0 == s1"},
		{name: "add", operands: []string{"s0", "8"}, want: "tensor<8xf32>", cons: "s0 == 8"},
		{name: "exp", operands: []string{"s0, s1"}, want: "tensor<?x?xf32, #graph.dims<[s0, s1]>>"},
		{name: "matmul", operands: []string{"s0, s1", "s2, 16"}, want: "tensor<?x16xf32, #graph.dims<[s0, 16]>>", cons: "s1 == s2"},
		{name: "matmul", operands: []string{"s0, 8", "8, 16"}, want: "tensor<?x16xf32, #graph.dims<[s0, 16]>>"},
		{name: "reduce_sum", operands: []string{"s0, s1"}, attrs: "<{axes = [1], keepdims = true}>", want: "tensor<?x1xf32, #graph.dims<[s0, 1]>>"},
		{name: "reduce_sum", operands: []string{"s0, s1"}, attrs: "<{axes = [0], keepdims = false}>", want: "tensor<?xf32, #graph.dims<[s1]>>"},
		{name: "reshape", operands: []string{"s0, 4096"}, attrs: "<{shape = [-1]}>", want: "tensor<?xf32, #graph.dims<[s0*4096]>>"},
		{name: "reshape", operands: []string{"s0, 6"}, attrs: "<{shape = [-1, 4]}>", want: "tensor<?x4xf32, #graph.dims<[floordiv(s0*3, 2), 4]>>", cons: "mod(s0*2, 4) == 0"},
		{name: "reshape", operands: []string{"s0, 4"}, attrs: "<{shape = [8, 2]}>", want: "tensor<8x2xf32>", cons: "s0*4 == 16"},
		{name: "transpose", operands: []string{"s0, 3"}, attrs: "<{perm = [1, 0]}>", want: "tensor<3x?xf32, #graph.dims<[3, s0]>>"},
		{name: "concat", operands: []string{"s0, 3", "s1, 3"}, attrs: "<{axis = 0 : i64}>", want: "tensor<?x3xf32, #graph.dims<[s0 + s1, 3]>>"},
		{name: "concat", operands: []string{"3, s0", "3, s1"}, attrs: "<{axis = 0 : i64}>", want: "tensor<6x?xf32, #graph.dims<[6, s0]>>", cons: "s0 == s1"},
		{name: "pad", operands: []string{"s0"}, attrs: "<{high = [2], low = [1]}>", want: "tensor<?xf32, #graph.dims<[s0 + 3]>>"},
		{name: "slice", operands: []string{"s0"}, attrs: "<{limits = [4], starts = [1]}>", want: "tensor<3xf32>", cons: "s0 >= 4"},
		{name: "broadcast_to", operands: []string{"s0"}, attrs: "<{shape = [2, 8]}>", want: "tensor<2x8xf32>", cons: "s0 == 8"},
		{name: "softmax", operands: []string{"s0, 8"}, want: "tensor<?x8xf32, #graph.dims<[s0, 8]>>"},
		{name: "layer_norm", operands: []string{"s0, s1", "8", "8"}, want: "tensor<?x?xf32, #graph.dims<[s0, s1]>>", cons: "s1 == 8"},
		{name: "attention", operands: []string{"s0, 8", "s1, 8", "s2, 4"}, want: "tensor<?x4xf32, #graph.dims<[s0, 4]>>", cons: "s1 == s2"},
		{name: "conv2d", operands: []string{"s0, 3, s1, 8", "4, 3, 3, 3"}, want: "tensor<?x4x?x6xf32, #graph.dims<[s0, 4, s1 - 2, 6]>>", cons: "s1 - 2 >= 1"},
		{name: "cast", operands: []string{"s0"}, declared: "tensor<?xi32>", want: "tensor<?xi32, #graph.dims<[s0]>>"},
		{name: "argmax", operands: []string{"s0, 4"}, attrs: "<{axis = 0 : i64, keepdims = false}>", want: "tensor<4xi64>", cons: "s0 >= 1"},
	} {
		var ins []string
		for _, o := range c.operands {
			ins = append(ins, symTensor(t, o).String())
		}
		res := c.declared
		if res == "" {
			res = "tensor<1xf32>" // replaced by the inferred type
		}
		var args []string
		for i := range ins {
			args = append(args, "%a"+string(rune('0'+i)))
		}
		src := "func.func @f(" + joinArgs(args, ins) + ") {\n  %r = \"graph." + c.name + "\"(" + strings.Join(args, ", ") + ") " + c.attrs +
			" : (" + strings.Join(ins, ", ") + ") -> " + res + "\n  return\n}"
		mod, err := ir.Parse(symCtx(), src, ir.ParseOptions{Filename: "t.mlir"})
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, src)
		}
		op := findOp(mod, "graph."+c.name)
		ts, cons, err := graph.InferSymbolic(op)
		if err != nil {
			t.Errorf("%s%v: %v", c.name, c.operands, err)
			continue
		}
		var cstr []string
		for _, k := range cons {
			cstr = append(cstr, k.String())
		}
		if ts[0].String() != c.want || strings.Join(cstr, ", ") != c.cons {
			t.Errorf("%s%v %s = %s with [%s], want %s with [%s]", c.name, c.operands, c.attrs, ts[0], strings.Join(cstr, ", "), c.want, c.cons)
		}
	}
}

// Sizes that can never be equal are errors, symbolic or not.
func TestSymbolicRuleErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`%r = "graph.reshape"(%a0) <{shape = [-1, 4]}> : (tensor<?xf32, #graph.dims<[s0*4 + 2]>>) -> tensor<1xf32>`, "cannot reshape s0*4 + 2 elements"},
		{`%r = "graph.reshape"(%a0) <{shape = [3]}> : (tensor<?xf32, #graph.dims<[s0*2]>>) -> tensor<1xf32>`, "cannot reshape"},
		{`%r = "graph.add"(%a0, %a0) : (tensor<?xf32, #graph.dims<[s0]>>, tensor<?xf32, #graph.dims<[s0]>>) -> tensor<?xf32, #graph.dims<[s1]>>`, "but the operands and attributes give"},
	} {
		arg := c.src[strings.Index(c.src, ": (")+3:]
		arg = arg[:strings.Index(arg, ")")]
		if i := strings.Index(arg, ">>,"); i >= 0 {
			arg = arg[:i+2]
		}
		src := "func.func @f(%a0: " + arg + ") {\n  " + c.src + "\n  return\n}"
		mod, err := ir.Parse(symCtx(), src, ir.ParseOptions{Filename: "t.mlir"})
		if err == nil {
			err = ir.Verify(mod)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.src, err, c.want)
		}
	}
}

func joinArgs(names, types []string) string {
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = names[i] + ": " + types[i]
	}
	return strings.Join(parts, ", ")
}

func symCtx() *ir.Context { return ir.NewContext(builtin.Dialect, funcs.Dialect, graph.Dialect) }

func findOp(root *ir.Operation, name string) *ir.Operation {
	var found *ir.Operation
	root.Walk(func(op *ir.Operation) bool {
		if found == nil && op.Name() == name {
			found = op
		}
		return found == nil
	})
	return found
}

// TestCheckShapes binds symbols from the argument shapes and rejects shapes
// that give a symbol two values or miss a computed size.
func TestCheckShapes(t *testing.T) {
	types := []ir.Type{symTensor(t, "s0, 4"), symTensor(t, "s0*4"), ir.F32, symTensor(t, "s1, s0")}
	for _, tc := range []struct {
		shapes [][]int64
		want   string // error substring; "" for success
	}{
		{[][]int64{{3, 4}, {12}, nil, {7, 3}}, ""},
		{[][]int64{{3, 4}, {12}, nil, {7, 5}}, "argument 3 of type tensor<?x?xf32, #graph.dims<[s1, s0]>> has size 5 in dim 1, but s0 = 3 (argument 0, dim 0)"},
		{[][]int64{{3, 4}, {13}, nil, {7, 3}}, "argument 1 of type tensor<?xf32, #graph.dims<[s0*4]>> has size 13 in dim 0, but s0*4 = 12"},
		{[][]int64{{3, 4}, nil, nil, nil}, ""},
	} {
		env, err := graph.CheckShapes(types, tc.shapes)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.shapes, err)
		case tc.want == "" && env["s0"] != 3:
			t.Errorf("%v: s0 = %d, want 3", tc.shapes, env["s0"])
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%v: error %v, want %q", tc.shapes, err, tc.want)
		}
	}
}
