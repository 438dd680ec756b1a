package arith_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects/arith"
	"github.com/strata-ir/strata/dialects/builtin"
	funcs "github.com/strata-ir/strata/dialects/func"
	"github.com/strata-ir/strata/ir"
)

func newContext() *ir.Context {
	return ir.NewContext(builtin.Dialect, funcs.Dialect, arith.Dialect)
}

// parse parses src, failing the test on error.
func parse(t *testing.T, ctx *ir.Context, src string) *ir.Operation {
	t.Helper()
	m, err := ir.ParseString(ctx, src)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return m
}

// mlirOpt runs mlir-opt-19 with args on src. It skips the test when the tool
// is missing, unless CI=true, where the oracle is required.
func mlirOpt(t *testing.T, src string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("mlir-opt-19")
	if err != nil {
		path, err = exec.LookPath("mlir-opt")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("mlir-opt is required when CI=true")
		}
		t.Skip("mlir-opt not found")
	}
	cmd := exec.Command(path, append(args, "-")...)
	cmd.Stdin = strings.NewReader(src)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mlir-opt %v: %v\n%s\ninput:\n%s", args, err, errb.String(), src)
	}
	// mlir-opt ends its output with a blank line; Strata does not.
	return strings.TrimSuffix(out.String(), "\n")
}

// canonicalize runs the greedy driver with every canonicalization pattern
// and folder, as the canonicalize pass does.
func canonicalize(t *testing.T, ctx *ir.Context, m *ir.Operation) {
	t.Helper()
	cfg := ir.DefaultGreedyConfig()
	cfg.Context = ctx
	if _, err := ir.ApplyPatternsGreedily(m, ctx.CanonicalizationPatterns(), cfg); err != nil {
		t.Fatalf("canonicalize: %v", err)
	}
}

// results renders, for each function of m, the values it returns as
// expression trees over its arguments and constants. Two modules compute
// the same way when their renderings agree, whatever the order of their ops
// and the names of their values.
func results(m *ir.Operation) map[string]string {
	out := map[string]string{}
	m.Walk(func(op *ir.Operation) bool {
		if op.Name() != funcs.ReturnOp {
			return true
		}
		fn := op.ParentOp()
		name, _ := fn.Attr(ir.SymNameAttr).(ir.StringAttr)
		var parts []string
		for _, v := range op.Operands() {
			parts = append(parts, render(v))
		}
		out[name.Value] = strings.Join(parts, "; ")
		return true
	})
	return out
}

func render(v *ir.Value) string {
	if v.IsBlockArgument() {
		return "arg" + string(rune('0'+v.Index()))
	}
	op := v.DefiningOp()
	if op.Name() == "arith.constant" {
		return op.Attr("value").String()
	}
	var args []string
	for _, o := range op.Operands() {
		args = append(args, render(o))
	}
	return op.Name() + op.Properties().String() + "(" + strings.Join(args, ", ") + ")"
}
