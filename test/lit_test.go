// Package test runs Strata's end-to-end tests, written in the style of
// LLVM's lit.
//
// Every *.mlir file below this directory is a test, except those in
// directories named Inputs or testdata (put auxiliary inputs there). A test
// holds directives in // comments:
//
//	// RUN: irc %s | FileCheck %s
//	// RUN: irc %s -o %t.ptx && ptxas %t.ptx -o %t.cubin \
//	// RUN:   --gpu-name sm_80
//	// REQUIRES: ptxas
//
// Each RUN line, joined with the next one when it ends in a backslash, runs
// in order under `bash -o pipefail -c`, in the test file's directory, and
// must exit with status 0. In RUN lines:
//
//	%s  is the absolute path of the test file
//	%S  is the directory of the test file
//	%t  is a temporary path unique to the test file (its directory exists)
//	%T  is the directory of %t
//	%%  is a literal %
//
// The tools irc (built once per run from ./tools/irc), FileCheck, not,
// count, mlir-opt, llc, opt and ptxas are found through PATH, which starts
// with a directory of links to them. LLVM tools come from $STRATA_LLVM_BIN,
// /usr/lib/llvm-19/bin or PATH; ptxas from $STRATA_PTXAS,
// .cache/tools/bin/ptxas (made by scripts/setup-tools.sh) or PATH.
//
// REQUIRES: lists tools (ptxas, mlir-opt, llc, opt, ...) the test needs
// beyond those its RUN lines name. A test that needs a missing tool is
// skipped, or fails when CI=true. Tests that use irc are skipped while
// ./tools/irc does not exist.
package test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// runTimeout bounds the time one RUN line may take.
const runTimeout = 2 * time.Minute

// ircPackage is the import path of the irc command.
const ircPackage = "github.com/strata-ir/strata/tools/irc"

// tools are the programs RUN lines may call by name and REQUIRES may list.
var tools = []string{"irc", "FileCheck", "not", "count", "mlir-opt", "llc", "opt", "ptxas"}

// toolRefs match a tool name standing as a word in a shell command line.
var toolRefs = func() map[string]*regexp.Regexp {
	m := make(map[string]*regexp.Regexp)
	for _, name := range tools {
		m[name] = regexp.MustCompile(`(?:^|[\s|;&(!])` + regexp.QuoteMeta(name) + `(?:$|[\s|;&)])`)
	}
	return m
}()

// errNoIRC means ./tools/irc does not exist (yet).
var errNoIRC = errors.New("irc is not available: ./tools/irc does not exist yet")

func TestLit(t *testing.T) {
	files, err := findTests(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no lit tests found")
	}
	s, err := newSuite(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.ToSlash(f), func(t *testing.T) {
			t.Parallel()
			s.run(t, f)
		})
	}
}

// findTests returns the paths, relative to dir, of the test files below dir.
func findTests(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "Inputs" || name == "testdata" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".mlir") {
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// suite holds what the tests of one run share.
type suite struct {
	root   string           // module root
	binDir string           // links to the tools; first on PATH
	env    []string         // environment for RUN lines
	ci     bool             // CI=true: missing tools fail tests
	found  map[string]error // tool name -> nil if in binDir, else why not
	irc    func() error     // builds irc into binDir, once
}

func newSuite(tmp string) (*suite, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return nil, fmt.Errorf("module root not found above %s: %v", wd, err)
	}
	s := &suite{
		root:   root,
		binDir: filepath.Join(tmp, "bin"),
		ci:     os.Getenv("CI") == "true",
		found:  make(map[string]error),
	}
	if err := os.Mkdir(s.binDir, 0o755); err != nil {
		return nil, err
	}
	for _, name := range tools {
		if name == "irc" {
			continue
		}
		path, err := s.resolve(name)
		if err == nil {
			err = os.Symlink(path, filepath.Join(s.binDir, name))
		}
		s.found[name] = err
	}
	s.irc = sync.OnceValue(s.buildIRC)
	s.env = append(os.Environ(), "PATH="+s.binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := trackSources(root); err != nil {
		return nil, err
	}
	return s, nil
}

// resolve finds the external tool name.
func (s *suite) resolve(name string) (string, error) {
	var candidates []string
	if name == "ptxas" {
		if p := os.Getenv("STRATA_PTXAS"); p != "" {
			if !isExecutable(p) {
				return "", fmt.Errorf("ptxas: STRATA_PTXAS=%s is not an executable file", p)
			}
			return p, nil
		}
		candidates = append(candidates, filepath.Join(s.root, ".cache", "tools", "bin", "ptxas"))
	} else {
		if dir := os.Getenv("STRATA_LLVM_BIN"); dir != "" {
			candidates = append(candidates, filepath.Join(dir, name))
		}
		candidates = append(candidates, filepath.Join("/usr/lib/llvm-19/bin", name))
	}
	for _, p := range candidates {
		if isExecutable(p) {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("%s not found in %s or PATH (run `make tools`)", name, strings.Join(candidates, ", "))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// buildIRC builds the irc command into binDir.
func (s *suite) buildIRC() error {
	dir := filepath.Join(s.root, "tools", "irc")
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.go")); len(matches) == 0 {
		return errNoIRC
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building irc: %v", err)
	}
	out := filepath.Join(s.binDir, "irc")
	cmd := exec.Command(goCmd, "build", "-o", out, ircPackage)
	cmd.Dir = s.root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", ircPackage, err, b)
	}
	return nil
}

// require makes sure the named tool is in binDir, or ends the test: with a
// skip while irc does not exist yet, and otherwise with a skip, or a
// failure under CI, if the tool is missing.
func (s *suite) require(t *testing.T, name string) {
	t.Helper()
	var err error
	if name == "irc" {
		err = s.irc()
		if errors.Is(err, errNoIRC) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err = s.found[name]; err == nil {
		return
	}
	if s.ci {
		t.Fatalf("%v (a missing tool is a failure under CI=true)", err)
	}
	t.Skip(err)
}

// run runs the test in file, a path relative to the working directory.
func (s *suite) run(t *testing.T, file string) {
	path, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := parseScript(string(src))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, name := range sc.needs() {
		s.require(t, name)
	}
	tmp := filepath.Join(t.TempDir(), filepath.Base(path)+".tmp")
	for _, r := range sc.runs {
		command := substitute(r.command, path, tmp)
		ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", command)
		cmd.Dir = filepath.Dir(path)
		cmd.Env = s.env
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s:%d: RUN line failed: %v\ncommand: %s\noutput:\n%s",
				file, r.line, err, command, out)
		}
	}
}

// script holds the directives of a test file.
type script struct {
	runs     []runLine
	requires []string
}

// runLine is one RUN command, continuation lines joined.
type runLine struct {
	line    int // 1-based line number of its first RUN:
	command string
}

// parseScript extracts the RUN and REQUIRES directives from a test file.
func parseScript(src string) (*script, error) {
	sc := new(script)
	continued := false
	for i, line := range strings.Split(src, "\n") {
		body, ok := strings.CutPrefix(strings.TrimSpace(line), "//")
		if !ok {
			if continued {
				return nil, fmt.Errorf("line %d: RUN line continues (\\) into a non-RUN line", i+1)
			}
			continue
		}
		body = strings.TrimSpace(body)
		if cmd, ok := strings.CutPrefix(body, "RUN:"); ok {
			cmd = strings.TrimSpace(cmd)
			more := strings.HasSuffix(cmd, `\`)
			cmd = strings.TrimSpace(strings.TrimSuffix(cmd, `\`))
			if continued {
				last := &sc.runs[len(sc.runs)-1]
				last.command += " " + cmd
			} else {
				sc.runs = append(sc.runs, runLine{line: i + 1, command: cmd})
			}
			continued = more
			continue
		}
		if continued {
			return nil, fmt.Errorf("line %d: RUN line continues (\\) into a non-RUN line", i+1)
		}
		if list, ok := strings.CutPrefix(body, "REQUIRES:"); ok {
			for f := range strings.SplitSeq(list, ",") {
				f = strings.TrimSpace(f)
				if !slices.Contains(tools, f) {
					return nil, fmt.Errorf("line %d: unknown REQUIRES feature %q (known: %s)",
						i+1, f, strings.Join(tools, ", "))
				}
				sc.requires = append(sc.requires, f)
			}
		}
	}
	if continued {
		return nil, errors.New("last RUN line ends in a continuation (\\)")
	}
	if len(sc.runs) == 0 {
		return nil, errors.New("no RUN lines (move auxiliary files into an Inputs directory)")
	}
	return sc, nil
}

// needs returns the tools the script requires or calls by name.
func (sc *script) needs() []string {
	var names []string
	for _, name := range tools {
		used := slices.Contains(sc.requires, name) ||
			slices.ContainsFunc(sc.runs, func(r runLine) bool { return toolRefs[name].MatchString(r.command) })
		if used {
			names = append(names, name)
		}
	}
	return names
}

// substitute expands %s, %S, %t, %T and %% in a RUN command for the test
// file at path with temporary path tmp. Other % sequences stay as they are.
func substitute(command, path, tmp string) string {
	var b strings.Builder
	for i := 0; i < len(command); i++ {
		if command[i] != '%' || i+1 == len(command) {
			b.WriteByte(command[i])
			continue
		}
		var repl string
		switch command[i+1] {
		case 's':
			repl = shellQuote(path)
		case 'S':
			repl = shellQuote(filepath.Dir(path))
		case 't':
			repl = shellQuote(tmp)
		case 'T':
			repl = shellQuote(filepath.Dir(tmp))
		case '%':
			repl = "%"
		default:
			b.WriteByte('%')
			continue
		}
		b.WriteString(repl)
		i++
	}
	return b.String()
}

// shellQuote quotes s for bash when it holds characters that need it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// trackSources stats every file of the module outside hidden directories
// and bin/, so that `go test` caches TestLit's result only until one of
// them (irc's sources in particular, which this package does not import)
// changes.
func trackSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || path == filepath.Join(root, "bin")) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			_, err = os.Stat(path)
		}
		return err
	})
}

func TestParseScript(t *testing.T) {
	src := `// RUN: irc %s \
//RUN:   | FileCheck %s
  // RUN: not mlir-opt %s 2>&1 | grep -c -opt
// REQUIRES: ptxas, llc
// CHECK: RUN: is not a directive here
func.func @f()
`
	sc, err := parseScript(src)
	if err != nil {
		t.Fatal(err)
	}
	want := []runLine{
		{1, `irc %s | FileCheck %s`},
		{3, `not mlir-opt %s 2>&1 | grep -c -opt`},
	}
	if !slices.Equal(sc.runs, want) {
		t.Errorf("runs = %+v, want %+v", sc.runs, want)
	}
	if got, want := sc.needs(), []string{"irc", "FileCheck", "not", "mlir-opt", "llc", "ptxas"}; !slices.Equal(got, want) {
		t.Errorf("needs = %q, want %q", got, want)
	}

	for _, bad := range []string{
		"func.func @f()\n",
		"// RUN: echo \\\nfunc.func @f()\n",
		"// RUN: echo \\\n",
		"// RUN: echo\n// REQUIRES: cuda\n",
	} {
		if _, err := parseScript(bad); err == nil {
			t.Errorf("parseScript(%q) succeeded, want an error", bad)
		}
	}
}

func TestSubstitute(t *testing.T) {
	got := substitute("irc %s -o %t.o -I %S %T 100%% %d %", "/a/b.mlir", "/tmp/x/b.mlir.tmp")
	want := "irc /a/b.mlir -o /tmp/x/b.mlir.tmp.o -I /a /tmp/x 100% %d %"
	if got != want {
		t.Errorf("substitute = %q, want %q", got, want)
	}
	if got, want := shellQuote("/a b/it's"), `'/a b/it'\''s'`; got != want {
		t.Errorf("shellQuote = %q, want %q", got, want)
	}
}
