package ircmain

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/internal/fuzzwatch"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/runtime/interp"
)

// pipelineSeeds are pipelines that exercise every registered pass and
// each of its options, with values at and beyond their limits.
var pipelineSeeds = []string{
	"builtin.module(lower-to-gpu)",
	"builtin.module(func.func(canonicalize{max-iterations=1 max-num-rewrites=0 top-down=false region-simplify=aggressive test-convergence=true disable-patterns=a,b enable-patterns=c}))",
	"builtin.module(lower-to-loop,convert-loop-to-gpu{block=32 vector=1 rows-per-block=32 max-blocks=1 tensor-cores=false row-welford=false row-reread=true row-shuffle-merge=false row-evict-last=false mma-tile=128x64x64s2 matmul=cublaslt index-bits=64 unroll-inner=true})",
	"builtin.module(func.func(graph-decompose,graph-fuse{row-limit=0 horizontal=false epilogue=false max-group-ops=1}),convert-graph-to-loop,func.func(loop-buffer-reuse{print-plan=false}))",
	"builtin.module(graph-autodiff{wrt=0,1 func=main joint=true},graph-partition{func=main_joint keep-joint=true})",
	"builtin.module(graph-symbolize-shapes{dims=0:0,1:0 specialize=none},inline{default-pipeline=cse max-iterations=1},symbol-dce)",
	"builtin.module(graph-attention-to-flash{wgmma=true},lower-to-gpu,gpu.module(gpu.func(expand-math)))",
	"func.func(cse,dce)", "any(cse)", "canonicalize{max-iterations=9223372036854775807}",
	"builtin.module(inline{default-pipeline='func.func(cse)'})",
}

// FuzzPipeline parses arbitrary --pass-pipeline text. An error must be a
// *passes.PipelineError pointing inside the text; a pipeline that parses
// must print as text that parses to the same pipeline.
func FuzzPipeline(f *testing.F) {
	for _, s := range pipelineSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		defer fuzzwatch.Start(text)()
		pm, err := passes.Parse(text)
		if err != nil {
			var pe *passes.PipelineError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error is not a PipelineError: %v", text, err)
			}
			if pe.Offset < 0 || pe.Offset > len(pe.Pipeline) {
				t.Fatalf("%q: error offset %d outside the pipeline %q", text, pe.Offset, pe.Pipeline)
			}
			return
		}
		printed := pm.String()
		back, err := passes.Parse(printed)
		if err != nil {
			t.Fatalf("%q prints as %q, which does not parse: %v", text, printed, err)
		}
		if again := back.String(); again != printed {
			t.Fatalf("%q prints as %q, which prints as %q", text, printed, again)
		}
	})
}

var (
	runPipeline = regexp.MustCompile(`-pass-pipeline[= ]'([^']*)'`)
	runEmit     = regexp.MustCompile(`--emit[= ](llvm|ptx)`)
)

// FuzzIrc runs irc in-process on arbitrary input text, a pipeline and an
// output kind (mlir, llvm or ptx by emit%3). Whatever the input, irc must
// end with ExitOK, with ExitDiagnostics and a located "error:" diagnostic,
// or with ExitUsage: never with ExitInternal, the status of a recovered
// panic. The seeds are the .mlir files under test/ with the pipeline and
// output kind of their RUN lines.
func FuzzIrc(f *testing.F) {
	err := filepath.WalkDir("../../../test", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".mlir") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pipeline := ""
		if m := runPipeline.FindSubmatch(src); m != nil {
			pipeline = string(m[1])
		}
		emit := uint8(0)
		if m := runEmit.FindSubmatch(src); m != nil {
			emit = map[string]uint8{"llvm": 1, "ptx": 2}[string(m[1])]
		}
		for _, chunk := range strings.Split(string(src), "\n// -----\n") {
			f.Add(chunk, pipeline, emit)
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src, pipeline string, emit uint8) {
		defer fuzzwatch.Start(src, pipeline, emit)()
		args := []string{"--emit=" + [...]string{"mlir", "llvm", "ptx"}[emit%3]}
		if pipeline != "" {
			args = append(args, "--pass-pipeline="+pipeline)
		}
		var out, errOut bytes.Buffer
		status := Main(args, strings.NewReader(src), &out, &errOut)
		switch status {
		case ExitOK, ExitUsage:
		case ExitDiagnostics:
			if !strings.Contains(errOut.String(), "error: ") {
				t.Fatalf("irc %q: status %d without an error diagnostic:\n%s", args, status, errOut.String())
			}
		default:
			t.Fatalf("irc %q: status %d:\n%s", args, status, errOut.String())
		}
	})
}

// runPipelines are the pipelines FuzzRun runs before the interpreter.
var runPipelines = []string{"", "builtin.module(canonicalize,cse)", "builtin.module(lower-to-loop)"}

// FuzzRun runs `irc run` on mutated programs with random inputs of fuzzed
// sizes, after one of runPipelines. Whatever the program and the sizes,
// irc must end with ExitOK, with ExitDiagnostics and an "error:"
// diagnostic, or with ExitUsage, within fuzzwatch's deadline: never with
// ExitInternal nor by running out of memory (sizes beyond the machine's
// memory must be refused before anything is allocated). The interpreter
// stops after 200 000 ops, and modules with static shapes of more than
// 4096 elements are skipped unless they are too large for any machine
// (2^34 elements and up), so that each run is quick.
func FuzzRun(f *testing.F) {
	for _, root := range []string{"../../../test", "../../../examples"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".mlir") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, chunk := range strings.Split(string(src), "\n// -----\n") {
				if strings.Contains(chunk, "func.func") && !strings.Contains(chunk, "expected-error") {
					f.Add(chunk, uint8(i), []byte{4, 3, 8, 15}, uint8(i%3))
				}
			}
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	ctx := dialects.NewContext()
	f.Fuzz(func(t *testing.T, src string, seed uint8, dims []byte, pipeline uint8) {
		defer fuzzwatch.Start(src, seed, dims, pipeline)()
		args := []string{"run", "-", "--max-ops=200000", "--random-inputs", strconv.Itoa(int(seed))}
		if m, err := ir.Parse(ctx, src, ir.ParseOptions{}); err == nil {
			if !quickToRun(m) {
				return
			}
			if fn, err := pickFunc(m, ""); err == nil {
				args = append(args, fuzzedShapes(fn, dims)...)
			}
		}
		if p := runPipelines[int(pipeline)%len(runPipelines)]; p != "" {
			args = append(args, "--pass-pipeline="+p)
		}
		var out, errOut bytes.Buffer
		status := Main(args, strings.NewReader(src), &out, &errOut)
		switch status {
		case ExitOK, ExitUsage:
		case ExitDiagnostics:
			if !strings.Contains(errOut.String(), "error: ") {
				t.Fatalf("irc %q: status %d without an error diagnostic:\n%s", args, status, errOut.String())
			}
		default:
			t.Fatalf("irc %q: status %d:\n%s", args, status, errOut.String())
		}
	})
}

// quickToRun reports whether every static shape in m is small (at most
// 4096 elements) or hopelessly large (2^34 elements and up, refused before
// anything is allocated).
func quickToRun(m *ir.Operation) bool {
	ok := true
	check := func(t ir.Type) {
		st, isShaped := t.(ir.ShapedType)
		if !isShaped || !st.Ranked() {
			return
		}
		n := 1.0
		for _, d := range st.Shape() {
			if d != ir.Dynamic {
				n *= float64(d)
			}
		}
		if n > 4096 && n < 1<<34 {
			ok = false
		}
	}
	m.Walk(func(op *ir.Operation) bool {
		for _, r := range op.Results() {
			check(r.Type())
		}
		if ft, err := interp.FuncType(op); err == nil {
			for _, t := range ft.Inputs {
				check(t)
			}
		}
		return ok
	})
	return ok
}

// fuzzedShapes returns --shape flags for fn's arguments of dynamic shape,
// each size drawn from dims: mostly small, at times 2^34.
func fuzzedShapes(fn *ir.Operation, dims []byte) []string {
	ft, err := interp.FuncType(fn)
	if err != nil {
		return nil
	}
	var flags []string
	k := 0
	for i, t := range ft.Inputs {
		st, ok := t.(ir.ShapedType)
		if !ok || !st.Ranked() || !slices.Contains(st.Shape(), ir.Dynamic) {
			continue
		}
		sizes := make([]string, len(st.Shape()))
		for d, s := range st.Shape() {
			if s == ir.Dynamic {
				b := byte(3)
				if k < len(dims) {
					b = dims[k]
				}
				k++
				s = int64(b % 65)
				if b%16 == 15 {
					s = 1 << 34
				}
			}
			sizes[d] = strconv.FormatInt(s, 10)
		}
		flags = append(flags, fmt.Sprintf("--shape=arg%d=%s", i, strings.Join(sizes, "x")))
	}
	return flags
}
