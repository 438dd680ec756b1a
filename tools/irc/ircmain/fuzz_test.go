package ircmain

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/strata-ir/strata/internal/fuzzwatch"
	"github.com/strata-ir/strata/passes"
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
