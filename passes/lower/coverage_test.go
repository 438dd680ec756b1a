package lower_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/graph"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/passtest"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"

	// lower-to-gpu.
	_ "github.com/strata-ir/strata/passes/togpu"
)

// notRunAlone are the graph ops that the coverage test does not instantiate
// on their own, with the reason. Every other op of the registry must lower
// with lower-to-gpu, compile to PTX and match the interpreter in every
// element type its verifier accepts.
var notRunAlone = map[string]string{
	"graph.fusion": "structural: made by graph-fuse around the other ops, which run here",
	"graph.yield":  "structural: the terminator of graph.fusion",
	// TestCollectivesLower (collective_test.go) runs them over simulated ranks.
	"graph.all_gather":     "its example is for two ranks; TestCollectivesLower runs it on two and three",
	"graph.reduce_scatter": "its example is for two ranks; TestCollectivesLower runs it on two and three",
}

// knownGaps are the instances (op and element type) that do not run on
// the GPU yet, with the reason; docs/lowering.md lists them as limits. An
// instance listed here that passes fails the test, so the list stays true.
var knownGaps = map[string]string{}

// extraInstances are programs beyond each op's docs example in every
// element type: other attributes and operand types the example does not
// reach. Each is the body line of @main, as in the docs examples.
var extraInstances = map[string][]string{
	"graph.gather": {
		`%2 = "graph.gather"(%0, %1) <{axis = 1 : i64}> : (tensor<4x10xf32>, tensor<2x3xi32>) -> tensor<4x2x3xf32>`,
	},
	"graph.scatter_add": {
		`%2 = "graph.scatter_add"(%0, %1) <{axis = -1 : i64, size = 8 : i64}> : (tensor<3x2x3xf32>, tensor<2x3xi32>) -> tensor<3x8xf32>`,
		`%2 = "graph.scatter_add"(%0, %1) <{axis = 1 : i64, size = 9 : i64}> : (tensor<2x5x3xf32>, tensor<5xi64>) -> tensor<2x9x3xf32>`,
		`%2 = "graph.scatter_add"(%0, %1) <{axis = 0 : i64, size = 8 : i64}> : (tensor<f32>, tensor<i64>) -> tensor<8xf32>`,
	},
	"graph.pad": {
		`%1 = "graph.pad"(%0) <{high = [1, 0], low = [0, 2], value = -1 : i32}> : (tensor<2x3xi32>) -> tensor<3x5xi32>`,
	},
	"graph.conv2d": {
		`%3 = "graph.conv2d"(%0, %1, %2) <{padding = [1, 0, 2, 1], strides = [2, 1], dilations = [1, 2], groups = 2 : i64}> : (tensor<2x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<2x6x4x5xf32>`,
		`%2 = "graph.conv2d"(%0, %1) : (tensor<1x2x5x5xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x5x5xf32>`,
	},
	"graph.matmul": {
		`%2 = "graph.matmul"(%0, %1) : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>`,
		`%3 = "graph.matmul"(%0, %1, %2) : (tensor<2x4x3xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<2x4x5xf32>`,
	},
	"graph.argmax": {
		`%1 = "graph.argmax"(%0) <{axis = 0 : i64, keepdims = true}> : (tensor<4x3xf32>) -> tensor<1x3xi64>`,
	},
	"graph.gelu": {
		`%1 = "graph.gelu"(%0) : (tensor<4xf32>) -> tensor<4xf32>`,
	},
}

// writtenInstances are programs taken only in the element type they are
// written in (integer literals do not retype to floats).
var writtenInstances = map[string][]string{
	"graph.constant": {
		`%0 = "graph.constant"() <{value = dense<[1, -2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>`,
		`%0 = "graph.constant"() <{value = dense<[7, 9]> : tensor<2xi64>}> : () -> tensor<2xi64>`,
		`%0 = "graph.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>`,
	},
}

// An instance is one program of the coverage test: @main computing one op.
type instance struct {
	op, elem string // the op, and the element type it is drawn in
	src      string
	// written: the line as written (not retyped), which must verify.
	written bool
}

var (
	signatureRE = regexp.MustCompile(`^%\S+ = "(graph\.\w+)"\((.*?)\)(.*) : \((.*)\) -> (.*)$`)
	elemRE      = regexp.MustCompile(`([<x])(f64|f32|f16|bf16|i64|i32|i1)>`)
	floatLitRE  = regexp.MustCompile(`\b(\d+)\.0\b`)
	denseRE     = regexp.MustCompile(`dense<[^>]*>`)
	scalarRE    = regexp.MustCompile(`((?:fill|value) = )([-+0-9.eE]+)( : )(\w+)`)
)

// instanceOf wraps the op line in a function taking its operands as
// arguments and returning its result.
func instanceOf(line, elem string) (instance, error) {
	m := signatureRE.FindStringSubmatch(line)
	if m == nil {
		return instance{}, fmt.Errorf("the example %q is not one op with operands and one result", line)
	}
	var args []string
	if m[2] != "" {
		names := strings.Split(m[2], ", ")
		types := strings.Split(m[4], ", ")
		if len(names) != len(types) {
			return instance{}, fmt.Errorf("the example %q has %d operands and %d operand types", line, len(names), len(types))
		}
		for i, n := range names {
			args = append(args, n+": "+types[i])
		}
	}
	res, types := strings.Fields(line)[0], m[5]
	if name, n, ok := strings.Cut(res, ":"); ok {
		// Several results: %r:n returns %r#0 … %r#(n-1).
		count, err := strconv.Atoi(n)
		if err != nil {
			return instance{}, fmt.Errorf("the example %q has a bad result count %q", line, n)
		}
		var rs []string
		for i := range count {
			rs = append(rs, fmt.Sprintf("%s#%d", name, i))
		}
		res, types = strings.Join(rs, ", "), strings.TrimSuffix(strings.TrimPrefix(types, "("), ")")
	}
	src := fmt.Sprintf("func.func @main(%s) -> %s {\n  %s\n  return %s : %s\n}\n", strings.Join(args, ", "), m[5], line, res, types)
	return instance{op: m[1], elem: elem, src: src}, nil
}

// retype rewrites the op line into element type to: the element type of
// its first operand (or of its result) becomes to everywhere, attribute
// types included, and for integers float literals such as 1.0 become 1.
func retype(line, to string) string {
	m := signatureRE.FindStringSubmatch(line)
	if m == nil {
		return line
	}
	// The main element type: the result's when an operand has it (select's
	// values), else the first operand's (cmp, argmax), else the result's.
	from := ""
	if rm := elemRE.FindStringSubmatch(m[5]); rm != nil {
		from = rm[2]
	}
	if ops := elemRE.FindAllStringSubmatch(m[4], -1); len(ops) > 0 && !slices.ContainsFunc(ops, func(o []string) bool { return o[2] == from }) {
		from = ops[0][2]
	}
	if from == "" {
		return line
	}
	out := elemRE.ReplaceAllStringFunc(line, func(s string) string {
		sm := elemRE.FindStringSubmatch(s)
		if sm[2] == from {
			return sm[1] + to + ">"
		}
		return s
	})
	// The scalar attributes of the element type (full's fill, pad's value).
	out = scalarRE.ReplaceAllStringFunc(out, func(s string) string {
		if sm := scalarRE.FindStringSubmatch(s); sm[4] == from {
			lit := sm[2]
			if isFloat(to) && !strings.ContainsAny(lit, ".eE") {
				lit += ".0" // MLIR reads -1 : f32 as an error, not as -1.0
			}
			return sm[1] + lit + sm[3] + to
		}
		return s
	})
	if to == "i1" {
		// Dense i1 elements are written true and false.
		out = denseRE.ReplaceAllStringFunc(out, func(d string) string {
			return floatLitRE.ReplaceAllStringFunc(d, func(s string) string { return strconv.FormatBool(s != "0.0") })
		})
	}
	if !isFloat(to) {
		out = floatLitRE.ReplaceAllString(out, "$1")
	}
	return out
}

// isFloat reports whether the element type named elem is a float type.
func isFloat(elem string) bool {
	return strings.HasPrefix(elem, "f") || strings.HasPrefix(elem, "bf")
}

// coverageInstances returns the programs of the coverage test for op: its
// docs example and its extra instances in every graph element type (the
// verifier later drops the types the op does not accept), and for cast
// every pair of types.
func coverageInstances(def *ir.OpDef) ([]instance, error) {
	lines := append([]string{def.Example}, extraInstances[def.Name]...)
	var out []instance
	for _, line := range writtenInstances[def.Name] {
		in, err := instanceOf(line, "as written")
		if err != nil {
			return nil, err
		}
		in.written = true
		out = append(out, in)
	}
	for _, line := range lines {
		for _, e := range graph.ElementTypes {
			l := retype(line, e.String())
			if def.Name == "graph.cast" {
				// Every conversion: from e to each element type.
				for _, to := range graph.ElementTypes {
					in, err := instanceOf(fmt.Sprintf(`%%1 = "graph.cast"(%%0) : (tensor<4x%s>) -> tensor<4x%s>`, e, to), e.String()+"->"+to.String())
					if err != nil {
						return nil, err
					}
					in.written = true // graph.cast accepts every pair
					out = append(out, in)
				}
				continue
			}
			in, err := instanceOf(l, e.String())
			if err != nil {
				return nil, err
			}
			in.written = l == line
			out = append(out, in)
		}
	}
	return out, nil
}

// TestEveryGraphOpRunsOnTheGPU takes every op of the graph registry (but
// notRunAlone) in every element type its verifier accepts through
// lower-to-gpu, translates the kernels to PTX with the native backend (and
// assembles them with ptxas when it is installed), and runs the launch plan
// in the interpreter's GPU simulation against the op itself. An op added
// without a lowering fails here.
func TestEveryGraphOpRunsOnTheGPU(t *testing.T) {
	ptxas := findPTXAS()
	for name := range notRunAlone {
		if !slices.ContainsFunc(graph.Dialect.Ops, func(d *ir.OpDef) bool { return d.Name == name }) {
			t.Errorf("notRunAlone names %s, which the graph dialect does not have", name)
		}
	}
	for _, def := range graph.Dialect.Ops {
		if _, ok := notRunAlone[def.Name]; ok {
			continue
		}
		instances, err := coverageInstances(def)
		if err != nil {
			t.Errorf("%s: %v", def.Name, err)
			continue
		}
		t.Run(strings.TrimPrefix(def.Name, "graph."), func(t *testing.T) {
			t.Parallel()
			var accepted []string
			for _, in := range instances {
				ctx := dialects.NewContext()
				m, err := ir.Parse(ctx, in.src, ir.ParseOptions{Filename: "instance.mlir"})
				if err == nil {
					err = ir.Verify(m)
				}
				if err != nil {
					switch {
					case in.written:
						t.Errorf("an instance as written does not verify: %v\n%s", err, in.src)
					case !strings.Contains(err.Error(), "must be a ranked tensor of"):
						// Only the verifier's element-type check may drop a
						// retyped instance; anything else is a bad retyping.
						t.Errorf("retyped to %s, an instance is invalid for another reason: %v\n%s", in.elem, err, in.src)
					}
					continue // an element type the op does not accept
				}
				accepted = append(accepted, in.elem)
				err = runsOnGPU(in, ptxas)
				gap, known := knownGaps[in.op+"/"+in.elem]
				switch {
				case err != nil && !known:
					t.Errorf("%s in %s: %v", in.op, in.elem, err)
				case err == nil && known:
					t.Errorf("%s in %s runs on the GPU now: remove it from knownGaps (and docs/lowering.md's limits)", in.op, in.elem)
				case err != nil:
					t.Logf("known gap, %s in %s: %s", in.op, in.elem, gap)
				}
			}
			if len(accepted) == 0 {
				t.Errorf("no instance of %s verifies", def.Name)
			}
			t.Logf("%s: %s", def.Name, strings.Join(slices.Compact(accepted), " "))
		})
	}
}

// runsOnGPU lowers the instance with lower-to-gpu, compiles its kernels to
// PTX and compares the simulated launch plan with the interpreter's graph
// result on random inputs.
func runsOnGPU(in instance, ptxas string) error {
	p := &passtest.Program{Source: in.src, Func: "main"}
	ctx := dialects.NewContext()
	m, err := p.Parse(ctx)
	if err != nil {
		return err
	}
	pm, err := passes.Parse("builtin.module(lower-to-gpu)")
	if err != nil {
		return err
	}
	if err := pm.Run(ctx, m); err != nil {
		return fmt.Errorf("lower-to-gpu: %w", err)
	}
	if err := ir.Verify(m); err != nil {
		return fmt.Errorf("after lower-to-gpu: %w", err)
	}
	if mods := llvm.GPUModules(m); len(mods) > 0 {
		lm, err := llvm.TranslateAll(mods)
		if err != nil {
			return fmt.Errorf("LLVM IR: %w\n%s", err, m)
		}
		ptx, err := nvptx.Native{}.Compile(lm, nvptx.Options{})
		if err != nil {
			return fmt.Errorf("native PTX: %w\n%s", err, m)
		}
		if ptxas != "" {
			if err := assemble(ptxas, ptx); err != nil {
				return err
			}
		}
	}
	want, err := callRandom(p, nil)
	if err != nil {
		return fmt.Errorf("the interpreter rejects the random inputs: %w", err)
	}
	got, err := callRandom(p, m)
	if err != nil {
		return fmt.Errorf("running the launch plan: %w\n%s", err, m)
	}
	for i := range want {
		if err := passtest.Compare(got[i], want[i]); err != nil {
			return fmt.Errorf("result %d: %w\n%s", i, err, m)
		}
	}
	return nil
}

// callRandom runs @main of lowered (or of p itself when lowered is nil) on
// the random inputs of seed 1.
func callRandom(p *passtest.Program, lowered *ir.Operation) ([]interp.Value, error) {
	m := lowered
	if m == nil {
		var err error
		if m, err = p.Parse(dialects.NewContext()); err != nil {
			return nil, err
		}
	}
	in := interp.New(m)
	ft, err := interp.FuncType(in.Func("main"))
	if err != nil {
		return nil, err
	}
	args, err := interp.RandomInputs(ft, 1)
	if err != nil {
		return nil, err
	}
	return in.Call("main", args...)
}

// findPTXAS returns the offline ptxas of scripts/setup-tools.sh, or "".
func findPTXAS() string {
	if p := os.Getenv("STRATA_PTXAS"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../.cache/tools/cuda/usr/bin/ptxas"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// assemble runs ptxas on ptx for sm_90.
func assemble(ptxas, ptx string) error {
	dir, err := os.MkdirTemp("", "coverage-ptx")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "k.ptx")
	if err := os.WriteFile(in, []byte(ptx), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(ptxas, "-arch=sm_90", "-o", filepath.Join(dir, "k.cubin"), in).CombinedOutput(); err != nil {
		return fmt.Errorf("ptxas: %v: %s", err, out)
	}
	return nil
}

// dynamicCases are programs with dynamic sizes: the op line of @main, its
// arguments, its result type, and the run-time sizes of the arguments'
// dynamic dims, in order.
var dynamicCases = []struct {
	line, args, result string
	sizes              []int64
}{
	{`%r = "graph.matmul"(%a, %b) : (tensor<?x3xf32>, tensor<3x5xf32>) -> tensor<?x5xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<3x5xf32>", "tensor<?x5xf32>", []int64{7}},
	{`%r = "graph.matmul"(%a, %b) : (tensor<?x2x3xf32>, tensor<?x3x4xf32>) -> tensor<?x2x4xf32>`,
		"%a: tensor<?x2x3xf32>, %b: tensor<?x3x4xf32>", "tensor<?x2x4xf32>", []int64{1, 3}},
	{`%r = "graph.add"(%a, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<?x3xf32>", "tensor<?x3xf32>", []int64{1, 4}},
	{`%r = "graph.transpose"(%a) <{perm = [1, 0]}> : (tensor<?x3xf32>) -> tensor<3x?xf32>`,
		"%a: tensor<?x3xf32>", "tensor<3x?xf32>", []int64{5}},
	{`%r = "graph.concat"(%a, %b) <{axis = 0 : i64}> : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<?x3xf32>", "tensor<?x3xf32>", []int64{2, 3}},
	{`%r = "graph.concat"(%a, %b) <{axis = 1 : i64}> : (tensor<?x3xf32>, tensor<?x2xf32>) -> tensor<?x5xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<?x2xf32>", "tensor<?x5xf32>", []int64{4, 4}},
	{`%r = "graph.pad"(%a) <{high = [2, 2], low = [1, 1], value = 0.5 : f32}> : (tensor<?x3xf32>) -> tensor<?x6xf32>`,
		"%a: tensor<?x3xf32>", "tensor<?x6xf32>", []int64{3}},
	{`%r = "graph.gather"(%a, %i) <{axis = 0 : i64}> : (tensor<10x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>`,
		"%a: tensor<10x4xf32>, %i: tensor<?xi64>", "tensor<?x4xf32>", []int64{6}},
	{`%r = "graph.scatter_add"(%u, %i) <{axis = 0 : i64, size = 10 : i64}> : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<10x4xf32>`,
		"%u: tensor<?x4xf32>, %i: tensor<?xi64>", "tensor<10x4xf32>", []int64{6, 6}},
	{`%r = "graph.scatter_add"(%u, %i) <{axis = 1 : i64, size = 9 : i64}> : (tensor<?x5xf64>, tensor<5xi32>) -> tensor<?x9xf64>`,
		"%u: tensor<?x5xf64>, %i: tensor<5xi32>", "tensor<?x9xf64>", []int64{3}},
	{`%r = "graph.reshape"(%a) <{shape = [-1, 6]}> : (tensor<?x2x3xf32>) -> tensor<?x6xf32>`,
		"%a: tensor<?x2x3xf32>", "tensor<?x6xf32>", []int64{5}},
	{`%r = "graph.reshape"(%a) <{shape = [-1]}> : (tensor<?x3xf32>) -> tensor<?xf32>`,
		"%a: tensor<?x3xf32>", "tensor<?xf32>", []int64{4}},
	{`%r = "graph.conv2d"(%a, %b) <{groups = 2 : i64, padding = [0, 1, 1, 0]}> : (tensor<?x4x5x5xf32>, tensor<?x2x3x3xf32>) -> tensor<?x?x4x4xf32>`,
		"%a: tensor<?x4x5x5xf32>, %b: tensor<?x2x3x3xf32>", "tensor<?x?x4x4xf32>", []int64{2, 6}},
	{`%r = "graph.conv2d"(%a, %b) <{padding = [1, 1], strides = [2, 1]}> : (tensor<1x4x?x?xf32>, tensor<3x4x3x3xf32>) -> tensor<1x3x?x?xf32>`,
		"%a: tensor<1x4x?x?xf32>, %b: tensor<3x4x3x3xf32>", "tensor<1x3x?x?xf32>", []int64{6, 5}},
	{`%r = "graph.attention"(%q, %k, %v) : (tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>) -> tensor<?x16x8xf32>`,
		"%q: tensor<?x16x8xf32>, %k: tensor<?x16x8xf32>, %v: tensor<?x16x8xf32>", "tensor<?x16x8xf32>", []int64{2, 2, 2}},
	// Sizes of 0 at run time: empty results, a pad of an empty tensor,
	// a matmul with K = 0 (zeros), reductions over an empty axis (their
	// identity).
	{`%r = "graph.matmul"(%a, %b) : (tensor<?x3xf32>, tensor<3x5xf32>) -> tensor<?x5xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<3x5xf32>", "tensor<?x5xf32>", []int64{0}},
	{`%r = "graph.matmul"(%a, %b) : (tensor<?x32xbf16>, tensor<32x16xbf16>) -> tensor<?x16xbf16>`,
		"%a: tensor<?x32xbf16>, %b: tensor<32x16xbf16>", "tensor<?x16xbf16>", []int64{0}},
	{`%r = "graph.matmul"(%a, %b) : (tensor<?x32xbf16>, tensor<32x16xbf16>) -> tensor<?x16xbf16>`,
		"%a: tensor<?x32xbf16>, %b: tensor<32x16xbf16>", "tensor<?x16xbf16>", []int64{3}},
	{`%r = "graph.matmul"(%a, %b) : (tensor<4x?xf32>, tensor<?x5xf32>) -> tensor<4x5xf32>`,
		"%a: tensor<4x?xf32>, %b: tensor<?x5xf32>", "tensor<4x5xf32>", []int64{0, 0}},
	{`%r = "graph.add"(%a, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<?x3xf32>", "tensor<?x3xf32>", []int64{0, 0}},
	{`%r = "graph.add"(%a, %b) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<?x3xf32>", "tensor<?x3xf32>", []int64{1, 0}},
	{`%r = "graph.matmul"(%a, %b) : (tensor<?x2x3xf32>, tensor<?x3x4xf32>) -> tensor<?x2x4xf32>`,
		"%a: tensor<?x2x3xf32>, %b: tensor<?x3x4xf32>", "tensor<?x2x4xf32>", []int64{1, 0}},
	{`%r = "graph.concat"(%a, %b) <{axis = 0 : i64}> : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>`,
		"%a: tensor<?x3xf32>, %b: tensor<?x3xf32>", "tensor<?x3xf32>", []int64{0, 3}},
	{`%r = "graph.pad"(%a) <{high = [2, 2], low = [1, 1], value = 0.5 : f32}> : (tensor<?x3xf32>) -> tensor<?x6xf32>`,
		"%a: tensor<?x3xf32>", "tensor<?x6xf32>", []int64{0}},
	{`%r = "graph.gather"(%a, %i) <{axis = 0 : i64}> : (tensor<10x4xf32>, tensor<?xi64>) -> tensor<?x4xf32>`,
		"%a: tensor<10x4xf32>, %i: tensor<?xi64>", "tensor<?x4xf32>", []int64{0}},
	{`%r = "graph.scatter_add"(%u, %i) <{axis = 0 : i64, size = 10 : i64}> : (tensor<?x4xf32>, tensor<?xi64>) -> tensor<10x4xf32>`,
		"%u: tensor<?x4xf32>, %i: tensor<?xi64>", "tensor<10x4xf32>", []int64{0, 0}},
	{`%r = "graph.reshape"(%a) <{shape = [-1, 6]}> : (tensor<?x2x3xf32>) -> tensor<?x6xf32>`,
		"%a: tensor<?x2x3xf32>", "tensor<?x6xf32>", []int64{0}},
	{`%r = "graph.reduce_sum"(%a) <{axes = [1], keepdims = false}> : (tensor<3x?xf32>) -> tensor<3xf32>`,
		"%a: tensor<3x?xf32>", "tensor<3xf32>", []int64{0}},
	{`%r = "graph.logsumexp"(%a) <{axis = -1 : i64, keepdims = false}> : (tensor<3x?xf32>) -> tensor<3xf32>`,
		"%a: tensor<3x?xf32>", "tensor<3xf32>", []int64{0}},
	{`%r = "graph.softmax"(%a) <{axis = -1 : i64}> : (tensor<?x?xf32>) -> tensor<?x?xf32>`,
		"%a: tensor<?x?xf32>", "tensor<?x?xf32>", []int64{3, 0}},
	{`%r = "graph.conv2d"(%a, %b) <{groups = 2 : i64, padding = [0, 1, 1, 0]}> : (tensor<?x4x5x5xf32>, tensor<?x2x3x3xf32>) -> tensor<?x?x4x4xf32>`,
		"%a: tensor<?x4x5x5xf32>, %b: tensor<?x2x3x3xf32>", "tensor<?x?x4x4xf32>", []int64{0, 6}},
	{`%r = "graph.attention"(%q, %k, %v) : (tensor<?x16x8xf32>, tensor<?x16x8xf32>, tensor<?x16x8xf32>) -> tensor<?x16x8xf32>`,
		"%q: tensor<?x16x8xf32>, %k: tensor<?x16x8xf32>, %v: tensor<?x16x8xf32>", "tensor<?x16x8xf32>", []int64{0, 0, 0}},
}

// TestDynamicShapesRunOnTheGPU takes the shape-changing ops with dynamic
// sizes through lower-to-gpu and the native PTX backend, and compares the
// simulated launch plan with the interpreter at the given sizes.
func TestDynamicShapesRunOnTheGPU(t *testing.T) {
	for _, tc := range dynamicCases {
		src := fmt.Sprintf("func.func @main(%s) -> %s {\n  %s\n  return %%r : %s\n}\n", tc.args, tc.result, tc.line, tc.result)
		t.Run(strings.Fields(tc.line)[2], func(t *testing.T) {
			graphM := passtest.Run(t, src, "")
			ft, err := interp.FuncType(interp.New(graphM).Func("main"))
			if err != nil {
				t.Fatal(err)
			}
			sizes := slices.Clone(tc.sizes)
			static := make([]ir.Type, len(ft.Inputs))
			for i, in := range ft.Inputs {
				shape := slices.Clone(in.(*ir.TensorType).Shape())
				for d := range shape {
					if shape[d] == ir.Dynamic {
						shape[d], sizes = sizes[0], sizes[1:]
					}
				}
				static[i] = ir.TensorOf(shape, in.(*ir.TensorType).ElementType())
			}
			args, err := interp.RandomInputs(ir.FunctionOf(static, nil), 3)
			if err != nil {
				t.Fatal(err)
			}
			want := runConv(t, graphM, args, false)[0]
			gpuM := passtest.Run(t, src, "builtin.module(lower-to-gpu)")
			lm, err := llvm.TranslateAll(llvm.GPUModules(gpuM))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (nvptx.Native{}).Compile(lm, nvptx.Options{}); err != nil {
				t.Fatal(err)
			}
			if err := passtest.Compare(runConv(t, gpuM, args, true)[0], want); err != nil {
				t.Errorf("%v\n%s", err, gpuM)
			}
		})
	}
}
