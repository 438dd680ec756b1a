package ircmain

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/strata-ir/strata/internal/atomicfile"
	"io"
	"os"
	"runtime/debug"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/passes"
)

// optFlags are the flags of the default command, irc [flags] [file|-].
type optFlags struct {
	pipelineFlags
	output            string
	generic           bool
	debugInfo         bool
	splitInput        bool
	verifyDiagnostics bool
	listPasses        bool
	listFrontend      string // "backends", "modes" or "options"
	runReproducer     bool
	emit              string
	target            string // --target: nvptx64 or x86_64
	targetFlags
	version bool
}

// emitKinds lists the --emit values and whether each is built.
var emitKinds = map[string]bool{"mlir": true, "llvm": true, "ptx": true}

// opt is the mlir-opt-like default command: read a file, verify it, run
// the pipeline over it and print the result.
func (t *tool) opt(args []string) (status int) {
	var f optFlags
	fs := newFlagSet(t.name)
	f.pipelineFlags.register(fs)
	fs.StringVar(&f.output, "o", "-", "write the output to `file` ('-': standard output)")
	fs.BoolVar(&f.generic, "print-op-generic", false, "print every op in the generic form")
	fs.BoolVar(&f.debugInfo, "print-debuginfo", false, "print the location of every op")
	fs.BoolVar(&f.splitInput, "split-input-file", false, "split the input at '// -----' lines and process each chunk on its own")
	fs.BoolVar(&f.verifyDiagnostics, "verify-diagnostics", false, "check the diagnostics against the expected-* comments of the input")
	fs.BoolVar(&f.listPasses, "list-passes", false, "list the registered passes and pipelines, with their options")
	for _, what := range []string{"backends", "modes", "options"} {
		fs.BoolFunc("list-"+what, "list the frontend's compile "+what, func(string) error { f.listFrontend = what; return nil })
	}
	fs.BoolVar(&f.runReproducer, "run-reproducer", false, "read the pipeline from the input, a reproducer written by --reproducer")
	fs.StringVar(&f.emit, "emit", "mlir", "output `kind`: mlir, llvm or ptx")
	fs.StringVar(&f.target, "target", "nvptx64", "the `target` of --emit=llvm: nvptx64 (the gpu.modules' kernels) or x86_64 (the host CPU's kernels of the loop level, docs/cpu-backend.md)")
	f.targetFlags.register(fs)
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	positional, status, ok := t.parseFlags(fs, t.name+" [flags] [file|-]\n       "+t.name+" run FILE [flags]\n       "+t.name+" version", args)
	if !ok {
		return status
	}
	switch {
	case f.version:
		t.printVersion()
		return ExitOK
	case f.listPasses:
		return t.listPasses()
	case f.listFrontend != "":
		return t.listFrontend(f.listFrontend)
	}
	if err := checkLogs(&f.pipelineFlags); err != nil {
		return t.usageErrorf("%v", err)
	}
	if built, known := emitKinds[f.emit]; !known {
		return t.usageErrorf("unknown --emit kind %q (want mlir, llvm or ptx)", f.emit)
	} else if !built {
		return t.usageErrorf("--emit=%s is not available yet in this build (only --emit=mlir is)", f.emit)
	}
	if err := f.targetFlags.check(); err != nil {
		return t.usageErrorf("%v", err)
	}
	switch {
	case f.target != "nvptx64" && f.target != "x86_64":
		return t.usageErrorf("unknown --target %q (want nvptx64 or x86_64)", f.target)
	case f.target == "x86_64" && f.emit == "ptx":
		return t.usageErrorf("--emit=ptx is for --target=nvptx64; --target=x86_64 emits llvm")
	}
	input, err := singleInput(positional)
	if err != nil {
		return t.usageErrorf("%v", err)
	}
	name, text, mapped, err := t.readOptInput(input)
	if err != nil {
		return t.usageErrorf("%v", err)
	}
	if mapped != nil {
		// A file that shrinks while mapped faults when its lost pages
		// are read: a located error, not a crash.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				if !mapped.faulted(r) {
					panic(r)
				}
				status = t.errorf("%s: the file changed while it was read", name)
			}
		}()
	}
	if limit := memoryLimitFor(len(text), mapped != nil); limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		defer tuneMemoryLimit(limit)()
	}
	var pm *passes.PassManager
	if !f.runReproducer {
		if pm, err = t.newPassManager(&f.pipelineFlags); err != nil {
			return t.usageErrorf("%v", err)
		}
	} else if f.pipeline != "" {
		return t.usageErrorf("--run-reproducer reads the pipeline from the input; drop --pass-pipeline")
	}

	src := newSource(name, text)
	if input != "-" {
		src = newFileSource(name, input)
	}
	var out output
	failed := false
	// Each chunk's text is dropped once it is parsed: the IR of a large
	// input should not share the memory with its text (see keep in ir).
	chunks := splitInput(text, f.splitInput)
	text = ""
	for i := range chunks {
		c := chunks[i]
		chunks[i].text = ""
		if i > 0 {
			out.WriteString(splitMarker + "\n")
		}
		var report func(*ir.Diagnostic)
		var verifier *diagVerifier
		if f.verifyDiagnostics {
			verifier = newDiagVerifier(src, c, t.stderr)
			report = verifier.handle
		} else {
			report = func(d *ir.Diagnostic) { src.write(t.stderr, d) }
		}
		mod, err := t.process(c, name, &f, pm, mapped)
		var usage usageError
		if errors.As(err, &usage) {
			return t.usageErrorf("%s: %v", name, usage.err)
		}
		for _, d := range diagnostics(err) {
			report(d)
		}
		if err == nil && f.emit != "mlir" {
			if f.target == "x86_64" {
				err = emitCPU(&out.Buffer, mod)
			} else {
				err = emitTarget(&out.Buffer, mod, f.emit, &f.targetFlags)
			}
			if err != nil {
				for _, d := range diagnostics(err) {
					report(d)
				}
			}
		} else if err == nil {
			out.module(mod, ir.PrintOptions{Generic: f.generic, DebugInfo: f.debugInfo})
			out.WriteByte('\n') // mlir-opt ends each output with a blank line
		}
		ok := err == nil
		if verifier != nil {
			ok = verifier.finish()
		}
		failed = failed || !ok
	}
	// Like mlir-opt, a failed run still prints the chunks that succeeded
	// but leaves no output file behind.
	if !failed || f.output == "-" {
		if err := t.writeOutput(f.output, &out); err != nil {
			return t.errorf("%v", err)
		}
	}
	if failed {
		return ExitDiagnostics
	}
	return ExitOK
}

// Large inputs get a soft memory limit (runtime/debug.SetMemoryLimit) in
// proportion to their size: the collector then runs when the heap nears
// what the IR needs, instead of letting it grow to twice its live size
// (GOGC's default). The IR takes a little over 2 bytes per byte of text
// (ir's op storage); a text read into the heap is live while it is parsed,
// one mapped is not (see mappedText). The limit leaves about 0.8 bytes per
// byte of input and 64 MiB for the parser's garbage. Below 16 MiB the
// default pacing costs little memory and no limit is set. The limit is
// soft, and raised when the live heap outgrows it (tuneMemoryLimit).
// GOMEMLIMIT overrides it.
const (
	memoryLimitFrom    = 16 << 20
	memoryLimitPerByte = 3.0
	memoryLimitBase    = 64 << 20
)

// memoryLimitFor returns the soft memory limit for an input of n bytes,
// mapped or read into the heap, 0 for none.
func memoryLimitFor(n int, mapped bool) int64 {
	if n < memoryLimitFrom {
		return 0
	}
	perByte := memoryLimitPerByte
	if !mapped {
		perByte++
	}
	return int64(perByte*float64(n)) + memoryLimitBase
}

// process parses, verifies and transforms one chunk. A module that failed
// is never returned, so half-rewritten IR is not printed as if it were
// fine. pm is nil under --run-reproducer: the module brings its own.
//
// A chunk of a mapped input releases the pages the parser has left behind
// (see ir.ParseOptions.Progress), and all of its pages once parsed.
func (t *tool) process(c chunk, filename string, f *optFlags, pm *passes.PassManager, mapped *mappedText) (*ir.Operation, error) {
	ctx := t.newContext(f.allowUnregistered)
	opts := ir.ParseOptions{Filename: filename, LineOffset: c.lineOffset}
	if mapped != nil {
		opts.Progress = func(offset int) { mapped.release(c.offset + offset - releaseLag) }
	}
	mod, err := ir.Parse(ctx, c.text, opts)
	if mapped != nil {
		mapped.release(c.offset + len(c.text))
	}
	if err != nil {
		return nil, err
	}
	if pm == nil {
		if pm, err = t.reproducerPassManager(mod, &f.pipelineFlags); err != nil {
			return nil, err
		}
	}
	if err := ir.Verify(mod); err != nil {
		return nil, err
	}
	if err := pm.Run(ctx, mod); err != nil {
		if pe := (*passes.PipelineError)(nil); errors.As(err, &pe) {
			// An anchor that matches nothing: the pipeline's fault.
			return nil, usageError{fmt.Errorf("--pass-pipeline: %w", err)}
		}
		return nil, err
	}
	if f.emit != "mlir" {
		// --emit=llvm|ptx of a program above the gpu level lowers it first
		// (to the loop level for --target=x86_64).
		lower := lowerToGPUIfNeeded
		if f.target == "x86_64" {
			lower = lowerToLoopIfNeeded
		}
		if err := lower(ctx, mod, pm.Instr); err != nil {
			return nil, err
		}
	}
	return mod, nil
}

// newContext returns a context with every dialect the tool knows.
func (t *tool) newContext(allowUnregistered bool) *ir.Context {
	ctx := ir.NewContext(append(dialects.All(), t.dialects...)...)
	ctx.AllowUnregistered = allowUnregistered
	return ctx
}

// releaseLag is how far behind the parser a mapped input's pages are
// released: the parser looks back a little now and then (the start of the
// current line, for a column).
const releaseLag = 1 << 20

// readOptInput is readInput for the default command, which maps a large
// input file (mapped non-nil) rather than reading it into the heap.
func (t *tool) readOptInput(input string) (name, text string, mapped *mappedText, err error) {
	if input == "-" {
		name, text, err = t.readInput(input)
		return name, text, nil, err
	}
	text, mapped, err = openInputFile(input, true)
	if err != nil {
		return "", "", nil, fmt.Errorf("cannot read input file %s: %w", input, err)
	}
	return input, text, mapped, nil
}

// readInput reads the named file, or standard input for "-", returning the
// name diagnostics use for it.
func (t *tool) readInput(input string) (name, text string, err error) {
	if input == "-" {
		b, err := readBounded(t.stdin, -1)
		if err != nil {
			return "", "", fmt.Errorf("standard input: %w", err)
		}
		return "<stdin>", b, nil
	}
	b, err := readInputFile(input)
	if err != nil {
		return "", "", fmt.Errorf("cannot read input file %s: %w", input, err)
	}
	return input, b, nil
}

// writeOutput writes out to the named file (atomically: see atomicfile.WriteAll),
// or standard output for "-".
func (t *tool) writeOutput(output string, out *output) error {
	if output == "-" {
		return out.writeTo(t.stdout)
	}
	return atomicfile.Write(output, out.writeTo)
}

// output is what irc prints: text, and modules printed straight to the
// output file when it is written (ir.Print streams), so that the text of
// a large module is never held whole.
type output struct {
	bytes.Buffer // text since the last module
	parts        []func(io.Writer) error
}

// module appends mod, printed with opts.
func (o *output) module(mod *ir.Operation, opts ir.PrintOptions) {
	o.seal()
	o.parts = append(o.parts, func(w io.Writer) error { return ir.Print(w, mod, opts) })
}

// seal makes the text gathered so far a part.
func (o *output) seal() {
	if o.Len() == 0 {
		return
	}
	text := bytes.Clone(o.Bytes())
	o.Reset()
	o.parts = append(o.parts, func(w io.Writer) error { _, err := w.Write(text); return err })
}

// writeTo writes every part to w.
func (o *output) writeTo(w io.Writer) error {
	o.seal()
	for _, part := range o.parts {
		if err := part(w); err != nil {
			return err
		}
	}
	return nil
}

// listFrontend prints the frontend's backends, modes or options.
func (t *tool) listFrontend(what string) int {
	write := map[string]func(io.Writer) error{
		"backends": frontend.WriteBackends, "modes": frontend.WriteModes, "options": writeOptions,
	}[what]
	if err := write(t.stdout); err != nil {
		return t.errorf("%v", err)
	}
	return ExitOK
}
