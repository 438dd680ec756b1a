package ircmain

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseInterleaved parses args with fs, accepting flags both before and
// after positional arguments (Go's flag package stops at the first
// positional one), and returns the positional arguments in order. A "--"
// ends the flags: everything after it is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints no usage text by itself: parseFlags decides what to print.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with fs (see parseInterleaved). When it returns
// ok == false the command is over and status is its exit status: -h and
// --help print the usage and succeed, a bad flag is a usage error.
func (t *tool) parseFlags(fs *flag.FlagSet, synopsis string, args []string) (positional []string, status int, ok bool) {
	positional, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		if fs.Name() == t.name {
			t.writeUsage(t.stdout)
			fmt.Fprintf(t.stdout, "\nflags of %s [flags] [file|-]:\n", t.name)
		} else {
			fmt.Fprintf(t.stdout, "usage: %s\n\nflags:\n", synopsis)
		}
		fs.SetOutput(t.stdout)
		fs.PrintDefaults()
		return nil, ExitOK, false
	}
	if err != nil {
		return nil, t.usageErrorf("%v%s (run '%s --help' for the flags)", err, suggestFlag(fs, err), fs.Name()), false
	}
	return positional, ExitOK, true
}

// pipelineFlags are the flags that build and instrument a pass pipeline,
// shared by irc and irc run.
type pipelineFlags struct {
	pipeline          string
	allowUnregistered bool
	verifyEach        bool
	printBefore       bool
	printAfter        bool
	printAfterChange  bool
	printAfterFailure bool
	timing            bool
	trace             string
	statistics        bool
	reproducer        string
	debugRewrites     bool
	logs              string
	memoryPlan        bool
}

// register defines the flags on fs.
func (f *pipelineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.pipeline, "pass-pipeline", "", "run the textual `pipeline`, e.g. 'builtin.module(func.func(canonicalize,cse))'")
	fs.BoolVar(&f.allowUnregistered, "allow-unregistered-dialect", false, "accept ops of unregistered dialects")
	fs.BoolVar(&f.verifyEach, "verify-each", true, "verify the IR after each pass")
	fs.BoolVar(&f.printBefore, "print-ir-before-all", false, "print the IR before each pass (to stderr)")
	fs.BoolVar(&f.printAfter, "print-ir-after-all", false, "print the IR after each pass (to stderr)")
	fs.BoolVar(&f.printAfterChange, "print-ir-after-change", false, "print the IR after each pass that changed it (to stderr)")
	fs.BoolVar(&f.printAfterFailure, "print-ir-after-failure", false, "print the IR after a pass that failed (to stderr)")
	fs.BoolVar(&f.timing, "timing", false, "report the time spent in each pass (to stderr)")
	fs.StringVar(&f.trace, "trace", "", "write a Chrome trace-event JSON `file` of the passes run")
	fs.BoolVar(&f.statistics, "pass-statistics", false, "report the statistics of each pass (to stderr)")
	fs.StringVar(&f.reproducer, "reproducer", "", "when a pass fails, write its input IR and the pipeline to `file`")
	fs.BoolVar(&f.debugRewrites, "debug-rewrites", false, "log each rewrite pattern application (to stderr)")
	fs.StringVar(&f.logs, "logs", "", "enable the comma-separated log `topics` (to stderr), e.g. 'fusion'; as STRATA_LOGS")
	fs.BoolVar(&f.memoryPlan, "print-memory-plan", false, "print the memory plan loop-buffer-reuse makes for each function (to stderr)")
}

// singleInput returns the input file named by the positional arguments:
// "-" (standard input) when there are none.
func singleInput(positional []string) (string, error) {
	switch len(positional) {
	case 0:
		return "-", nil
	case 1:
		return positional[0], nil
	}
	return "", fmt.Errorf("expected one input file, got %d: %s", len(positional), strings.Join(positional, " "))
}
