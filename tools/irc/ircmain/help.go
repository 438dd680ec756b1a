package ircmain

import (
	"flag"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/strata-ir/strata/frontend"
	"github.com/strata-ir/strata/internal/spelling"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/exec"
)

// command is one subcommand of irc, as irc --help lists it.
type command struct {
	name, args, summary string
}

// commands are irc's subcommands; a first argument that is none of them
// is the default command's (irc [flags] [file|-]).
var commands = []command{
	{"run", "FILE [flags]", "execute a function of FILE on .npy inputs (backends: irc help backends)"},
	{"import", "MODEL.onnx|JAX.mlir [-o OUT.mlir]", "import an ONNX model or StableHLO as a graph-dialect module (docs/importers.md)"},
	{"npy", "make|show|compare ...", "make, print and compare .npy files, without NumPy"},
	{"devices", "", "list the GPUs, their memory, clocks and driver"},
	{"help", "[TOPIC]", "describe flags, passes, logs, backends, modes, options or a command"},
	{"version", "", "print the version"},
}

// helpTopic is one topic of irc help.
type helpTopic struct {
	name, summary string
	write         func(t *tool) int
}

// helpTopics lists the topics of irc help TOPIC; a command's name is a
// topic too (irc help run is irc run --help).
var helpTopics []helpTopic

func init() {
	helpTopics = []helpTopic{
		{"flags", "the flags of irc [flags] [file|-]", func(t *tool) int { return t.opt([]string{"--help"}) }},
		{"passes", "the registered passes and pipelines, with their options", (*tool).listPasses},
		{"logs", "the log topics of --logs and STRATA_LOGS", (*tool).helpLogs},
		{"backends", "the backends of irc run --backend and of frontend.Compile", (*tool).helpBackends},
		{"modes", "the compile modes of irc run --mode and frontend.Options.Mode", (*tool).helpModes},
		{"options", "the fields of frontend.Options", func(t *tool) int { return t.listFrontend("options") }},
	}
}

// helpTopicNames returns the names irc help accepts.
func helpTopicNames() []string {
	names := []string{"flags", "passes", "logs", "backends", "modes", "options"}
	for _, c := range commands {
		if c.name != "help" {
			names = append(names, c.name)
		}
	}
	return names
}

// writeUsage writes irc --help's text before the flags: the synopsis and
// the subcommands, one line each.
func (t *tool) writeUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s [flags] [file|-]    parse, verify, transform and print a .mlir file (as mlir-opt)\n", t.name)
	fmt.Fprintf(w, "       %s COMMAND [args]\n\ncommands:\n", t.name)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.args, c.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n'%s COMMAND --help' or '%s help COMMAND' describes a command.\n", t.name, t.name)
}

// help is irc help [TOPIC].
func (t *tool) help(args []string) int {
	if len(args) == 0 {
		return t.opt([]string{"--help"})
	}
	if len(args) > 1 {
		return t.usageErrorf("help takes one topic, got %d: %s", len(args), strings.Join(args, " "))
	}
	topic := strings.TrimPrefix(strings.TrimPrefix(args[0], "-"), "-")
	for _, h := range helpTopics {
		if h.name == topic {
			return h.write(t)
		}
	}
	for _, c := range commands {
		if c.name == topic && c.name != "help" {
			return t.dispatch([]string{c.name, "--help"})
		}
	}
	msg := fmt.Sprintf("help: unknown topic %q", args[0])
	if s := spelling.Likely(topic, helpTopicNames()); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return t.usageErrorf("%s; the topics are %s", msg, strings.Join(helpTopicNames(), ", "))
}

// helpLogs lists the log topics.
func (t *tool) helpLogs() int {
	fmt.Fprintf(t.stdout, "Log topics, enabled with --logs=a,b or %s=a,b (lines go to standard error):\n\n", logs.EnvVar)
	tw := tabwriter.NewWriter(t.stdout, 0, 8, 2, ' ', 0)
	for _, tp := range logs.Topics() {
		fmt.Fprintf(tw, "  %s\t%s\n", tp.Name, tp.Doc)
	}
	tw.Flush()
	return ExitOK
}

// backendDocs describes irc run's backends; a backend without an entry is
// listed with its name alone.
var backendDocs = map[string]string{
	"interp": "the reference interpreter (runtime/interp), at whatever level the file is in (the default)",
	"eager":  "the reference interpreter, as frontend.Compile's eager backend names it",
	"nvptx":  "lower-to-gpu, PTX, and the kernels run on GPU 0 through the CUDA driver (irc devices lists the GPUs)",
	"cpu":    "lower-to-loop, host LLVM IR compiled by LLVM's tools, the kernels run on every core (the interpreter where the tools are missing)",
}

// helpBackends lists irc run's backends, then the frontend's.
func (t *tool) helpBackends() int {
	fmt.Fprintf(t.stdout, "Backends of %s run --backend:\n\n", t.name)
	tw := tabwriter.NewWriter(t.stdout, 0, 8, 2, ' ', 0)
	for _, name := range slices.Sorted(mapKeys(backends)) {
		doc := backendDocs[name]
		if !backends[name] {
			doc = "(not in this build) " + doc
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, doc)
	}
	tw.Flush()
	fmt.Fprintf(t.stdout, "\nBackends of frontend.Compile (frontend.Options.Backend):\n\n")
	tw = tabwriter.NewWriter(t.stdout, 0, 8, 2, ' ', 0)
	for _, b := range frontend.ListBackends() {
		fmt.Fprintf(tw, "  %s\t%s\n", b.Name, b.Doc)
	}
	tw.Flush()
	return ExitOK
}

// helpModes lists the compile modes.
func (t *tool) helpModes() int {
	fmt.Fprintf(t.stdout, "Compile modes, for %s run --mode (with --backend nvptx) and frontend.Options.Mode:\n\n", t.name)
	tw := tabwriter.NewWriter(t.stdout, 0, 8, 2, ' ', 0)
	for _, m := range frontend.ListModes() {
		if _, err := exec.ParseMode(string(m.Name)); err != nil {
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\n", m.Name, m.Doc)
	}
	tw.Flush()
	return ExitOK
}

// mapKeys returns an iterator over m's keys.
func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// undefinedFlag matches the flag package's error for an unknown flag.
var undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)

// suggestFlag returns " (did you mean --x?)" when err is about an
// unknown flag close to one fs defines, else "".
func suggestFlag(fs *flag.FlagSet, err error) string {
	m := undefinedFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if s := spelling.Likely(m[1], names); s != "" {
		return fmt.Sprintf("; did you mean --%s?", s)
	}
	// A prefix of a longer flag (--pass for --pass-pipeline) is likely too.
	for _, n := range names {
		if len(m[1]) >= 4 && strings.HasPrefix(n, m[1]) {
			return fmt.Sprintf("; did you mean --%s?", n)
		}
	}
	return ""
}

// writeOptions prints the fields of frontend.Options, each with its type
// and default on one line and what it does on the next.
func writeOptions(w io.Writer) error {
	typeRE := regexp.MustCompile(`^([A-Z]\w*) \((.*)\)$`)
	opts := frontend.ListOptions()
	width := 0
	for _, o := range opts {
		width = max(width, len(o.Name))
	}
	for _, o := range opts {
		typ, def := o.Type, o.Default
		stringLike := typ == "string"
		if m := typeRE.FindStringSubmatch(typ); m != nil {
			// "Mode (string)": a named type and what it holds.
			values := m[2]
			switch {
			case values == "string":
				values, stringLike = "a string", true
			case strings.Contains(values, "|"):
				values = "one of " + strings.ReplaceAll(values, "|", ", ")
			}
			typ = "frontend." + m[1] + ", " + values
		}
		if stringLike && !strings.HasPrefix(def, `"`) {
			def = fmt.Sprintf("%q", def)
		}
		if _, err := fmt.Fprintf(w, "%-*s  %s; default %s\n%*s  %s\n", width, o.Name, typ, def, width, "", o.Doc); err != nil {
			return err
		}
	}
	return nil
}
