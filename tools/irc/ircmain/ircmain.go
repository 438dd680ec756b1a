// Package ircmain implements the irc command line, Strata's counterpart of
// mlir-opt, as a library.
//
// The irc binary is a one-line main around Main. A project that defines its
// own dialects or passes builds its own irc the way MLIR projects build their
// own mlir-opt: register the passes (the passes package's registry), then
// call Main with the extra dialects:
//
//	func main() {
//		mypasses.Register()
//		os.Exit(ircmain.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr,
//			ircmain.WithDialects(mydialect.Dialect)))
//	}
//
// Flags follow mlir-opt's without the "mlir-" prefix and may come before or
// after the file name. The input is parsed, verified, run through
// --pass-pipeline (verifying after each pass unless --verify-each=false)
// and printed like mlir-opt prints it: custom syntax where an op has one,
// a blank line at the end. --split-input-file processes each "// -----"
// chunk on its own, with diagnostics naming lines of the whole file;
// --verify-diagnostics checks them against expected-error, -warning,
// -note and -remark comments (with @+N, @-N, @above, @below, @unknown and
// the -re form), with MLIR's messages.
//
// irc run executes a function with the reference interpreter
// (runtime/interp): --backend=interp and --backend=eager both mean it for
// now, nvptx is not built yet. Arguments come from .npy files (--input,
// in order; scalars are 0-d arrays) or are made up from --random-inputs
// SEED; results go to .npy files (--output) or are summarised on standard
// output with their shape, dtype, sum and an FNV-1a hash of their data.
//
// Main never panics and never calls os.Exit: it returns the process exit
// status, one of ExitOK, ExitDiagnostics, ExitUsage and ExitInternal.
package ircmain

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	_ "github.com/strata-ir/strata/autodiff"            // registers graph-autodiff
	_ "github.com/strata-ir/strata/importers/stablehlo" // registers convert-stablehlo-to-graph
	"github.com/strata-ir/strata/ir"
	_ "github.com/strata-ir/strata/passes/dataparallel" // registers graph-data-parallel
	_ "github.com/strata-ir/strata/passes/decompose"    // registers graph-decompose
	_ "github.com/strata-ir/strata/passes/fusion"       // registers graph-fuse
	_ "github.com/strata-ir/strata/passes/layout"       // registers graph-channels-last
	_ "github.com/strata-ir/strata/passes/lower"        // registers convert-graph-to-loop, loop-buffer-reuse, lower-to-loop
	_ "github.com/strata-ir/strata/passes/symbolize"    // registers graph-symbolize-shapes
	_ "github.com/strata-ir/strata/passes/togpu"        // registers convert-loop-to-gpu, lower-to-gpu
)

// Exit statuses returned by Main.
const (
	// ExitOK means success (and, under --verify-diagnostics, that every
	// diagnostic was expected and every expected one produced).
	ExitOK = 0
	// ExitDiagnostics means the input was rejected: a parse, verifier or pass
	// error, a failed run, or a --verify-diagnostics mismatch.
	ExitDiagnostics = 1
	// ExitUsage means the command line was wrong: an unknown flag, a bad
	// pipeline, a missing file.
	ExitUsage = 2
	// ExitInternal means irc itself failed (a bug): it recovered from a panic.
	ExitInternal = 3
)

// Option customises Main for a tool built on it.
type Option func(*config)

// WithDialects makes Main load dialects into every context it creates, in
// addition to Strata's own.
func WithDialects(ds ...*ir.Dialect) Option {
	return func(c *config) { c.dialects = append(c.dialects, ds...) }
}

// WithName sets the tool name used in usage and version messages
// (default "irc").
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithVersion sets the version string printed by --version (default: the
// main module's version from the build information).
func WithVersion(v string) Option {
	return func(c *config) { c.version = v }
}

// config is what the Options set.
type config struct {
	name     string
	version  string
	dialects []*ir.Dialect
}

// tool is one invocation of Main.
type tool struct {
	config
	stdin          io.Reader
	stdout, stderr io.Writer
}

// Main runs irc with the command-line arguments args (without the program
// name) and returns the exit status.
//
// Usage:
//
//	irc [flags] [file|-]        parse, verify, transform and print a .mlir file
//	irc run FILE [flags]        execute a function of FILE
//	irc npy make|show|compare   make, print and compare .npy files
//	irc import MODEL.onnx       import a model as a graph-dialect module
//	irc devices                 list the GPUs, their memory, clocks and driver
//	irc help [TOPIC]            flags, passes, logs, backends, modes, options
//	irc version                 print the version
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, opts ...Option) (status int) {
	t := &tool{
		config: config{name: "irc"},
		stdin:  stdin, stdout: stdout, stderr: stderr,
	}
	for _, o := range opts {
		o(&t.config)
	}
	defer func() {
		if r := recover(); r != nil {
			// A panic is a bug in Strata, never the user's fault: say so
			// plainly instead of dumping a goroutine trace on them.
			fmt.Fprintf(stderr, "%s: internal error: %v\n", t.name, r)
			fmt.Fprintf(stderr, "This is a bug in %s; please report it with the input that caused it.\n", t.name)
			status = ExitInternal
		}
	}()
	return t.dispatch(args)
}

// dispatch runs the subcommand args[0] names, or the default command.
func (t *tool) dispatch(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return t.run(args[1:])
		case "npy":
			return t.npy(args[1:])
		case "import":
			return t.importCmd(args[1:])
		case "devices":
			return t.devices(args[1:])
		case "help":
			return t.help(args[1:])
		case "version":
			if len(args) > 1 && !isHelp(args[1]) {
				return t.usageErrorf("version takes no arguments, got %q", args[1])
			}
			if len(args) > 1 {
				fmt.Fprintf(t.stdout, "usage: %s version\n\nprints the version of %s and of the Go it was built with\n", t.name, t.name)
				return ExitOK
			}
			t.printVersion()
			return ExitOK
		}
	}
	return t.opt(args)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// printVersion writes the version line.
func (t *tool) printVersion() {
	v := t.version
	goVersion := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	if v == "" {
		v = "(devel)"
	}
	fmt.Fprintf(t.stdout, "%s version %s", t.name, v)
	if goVersion != "" {
		fmt.Fprintf(t.stdout, " %s", goVersion)
	}
	fmt.Fprintln(t.stdout)
}

// usageErrorf reports a command-line error and returns ExitUsage.
func (t *tool) usageErrorf(format string, args ...any) int {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(t.stderr, "%s: %s\n", t.name, strings.TrimSuffix(msg, "\n"))
	return ExitUsage
}

// errorf reports a failure that is not a usage error and returns
// ExitDiagnostics.
func (t *tool) errorf(format string, args ...any) int {
	fmt.Fprintf(t.stderr, "%s: %s\n", t.name, fmt.Sprintf(format, args...))
	return ExitDiagnostics
}
