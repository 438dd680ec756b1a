package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// config holds the command line.
type config struct {
	mlirOpt, irc string
	jobs         int
	verbose      bool
	passing      bool
	// roundTrip selects the round-trip measurement instead of the
	// diagnostics one.
	roundTrip bool
	// foreign names the dialects mlir-opt registers and irc does not: a
	// chunk using an op of one of them is out of scope.
	foreign map[string]bool
}

// opNameRE finds op names: quoted (generic syntax) or at the start of a
// statement after its results (custom syntax).
var opNameRE = regexp.MustCompile(`"([A-Za-z_][\w$]*)\.[\w.$]+"\s*\(|^\s*(?:%[\w#:, %]*=\s*)?([A-Za-z_][\w$]*)\.[A-Za-z_][\w.$]*`)

// foreignDialect returns the first dialect of foreign whose op the chunk
// uses, or "". Ops in generic syntax do not count when unregistered ops
// are allowed: irc parses them as unregistered ops.
func foreignDialect(text string, foreign map[string]bool, allowUnregistered bool) string {
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		for _, m := range opNameRE.FindAllStringSubmatch(l, -1) {
			generic, custom := m[1], m[2]
			if foreign[custom] {
				return custom
			}
			if foreign[generic] && !allowUnregistered {
				return generic
			}
		}
	}
	return ""
}

// splitMarker starts a line that separates two chunks, as in mlir-opt's
// --split-input-file.
const splitMarker = "// -----"

// chunk is a piece of a test file checked on its own.
type chunk struct {
	// line is the 1-based line of the file the chunk starts on.
	line int
	text string
}

// splitChunks cuts text at the lines starting with the split marker (after
// blanks), which belong to no chunk.
func splitChunks(text string) []chunk {
	var chunks []chunk
	lines := strings.SplitAfter(text, "\n")
	start := 0
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), splitMarker) {
			chunks = append(chunks, chunk{line: start + 1, text: strings.Join(lines[start:i], "")})
			start = i + 1
		}
	}
	return append(chunks, chunk{line: start + 1, text: strings.Join(lines[start:], "")})
}

// expectsError reports whether a chunk holds an expected-error comment.
func expectsError(text string) bool {
	return strings.Contains(text, "expected-error")
}

// runFlags returns the flags the file's RUN lines give mlir-opt that
// matter to both tools.
func runFlags(text string) []string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "RUN:") && strings.Contains(l, "allow-unregistered-dialect") {
			return []string{"--allow-unregistered-dialect"}
		}
	}
	return nil
}

// inputFiles expands directories into the files below them whose names
// match, sorted; files are kept as given.
func inputFiles(args []string, match func(name string) bool) ([]string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && match(d.Name()) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// chunkResult is how both tools fared on one chunk.
type chunkResult struct {
	line      int
	foreign   string // a dialect irc lacks that the chunk uses, or ""
	reference bool   // mlir-opt passed
	irc       bool   // irc passed
	output    string // irc's output when it failed
}

// fileResult gathers a file's chunks.
type fileResult struct {
	name                               string
	chunks, reference, passed, outside int
	results                            []chunkResult
}

// report is the whole measurement.
type report struct{ files []fileResult }

func (r *report) sum(f func(fileResult) int) int {
	n := 0
	for _, fr := range r.files {
		n += f(fr)
	}
	return n
}

func (r *report) chunks() int    { return r.sum(func(f fileResult) int { return f.chunks }) }
func (r *report) reference() int { return r.sum(func(f fileResult) int { return f.reference }) }
func (r *report) passed() int    { return r.sum(func(f fileResult) int { return f.passed }) }
func (r *report) outside() int   { return r.sum(func(f fileResult) int { return f.outside }) }

// percent is irc's share of the chunks mlir-opt passes; 0 when there are
// none, so that a -min gate fails on a run that measured nothing.
func (r *report) percent() float64 {
	if r.reference() == 0 {
		return 0
	}
	return 100 * float64(r.passed()) / float64(r.reference())
}

// runner runs a tool on a file with flags and reports whether it exited 0,
// with its combined output.
type runner func(tool string, args []string) (ok bool, output string, err error)

// toolTimeout bounds one run of either tool on one chunk.
const toolTimeout = 20 * time.Second

// runTool is the runner that executes the tool.
func runTool(tool string, args []string) (bool, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return false, fmt.Sprintf("timed out after %v\n%s", toolTimeout, out.String()), nil
	}
	if _, exited := err.(*exec.ExitError); exited {
		return false, out.String(), nil
	}
	if err != nil {
		return false, "", fmt.Errorf("running %s: %w", tool, err)
	}
	return true, out.String(), nil
}

// mlirOptDialects asks mlir-opt for the dialects it registers.
func mlirOptDialects(mlirOpt string) ([]string, error) {
	out, err := exec.Command(mlirOpt, "--show-dialects").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --show-dialects: %w", mlirOpt, err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		// "Available Dialects: acc,affine,..." (one line in LLVM 19).
		if i := strings.Index(l, ":"); i >= 0 {
			l = l[i+1:]
		}
		for _, n := range strings.Split(l, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

// measure runs both tools on every expected-error chunk of the files.
func measure(cfg config, files []string, run runner) (*report, error) {
	dir, err := os.MkdirTemp("", "mlirparity")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	rep := &report{files: make([]fileResult, len(files))}
	jobs, err := writeChunks(files, rep, expectsError, func(i int, c chunk) string {
		return filepath.Join(dir, fmt.Sprintf("%d-%s-%d.mlir", i, filepath.Base(files[i]), c.line))
	})
	if err != nil {
		return nil, err
	}
	results, errs := runChunks(jobs, cfg.jobs, func(j chunkJob) (chunkResult, error) {
		args := append(append([]string{"--verify-diagnostics"}, j.flags...), j.path, "-o", os.DevNull)
		res := chunkResult{line: j.c.line, foreign: foreignDialect(j.c.text, cfg.foreign, len(j.flags) > 0)}
		var err error
		if res.reference, _, err = run(cfg.mlirOpt, args); err != nil {
			return chunkResult{}, err
		}
		if res.reference && res.foreign == "" {
			var out string
			if res.irc, out, err = run(cfg.irc, args); err != nil {
				return chunkResult{}, err
			}
			if !res.irc {
				res.output = strings.ReplaceAll(out, j.path, files[j.file])
			}
		}
		return res, nil
	})
	for k, j := range jobs {
		if errs[k] != nil {
			return nil, errs[k]
		}
		f := &rep.files[j.file]
		f.chunks++
		res := results[k]
		switch {
		case res.reference && res.foreign != "":
			f.outside++
		case res.reference:
			f.reference++
		}
		if res.reference && res.irc {
			f.passed++
		}
		f.results = append(f.results, res)
	}
	return rep, nil
}

// chunkJob is one chunk of one of the files, written to a file of its own.
type chunkJob struct {
	file  int // the index of the chunk's file
	c     chunk
	flags []string // the file's RUN-line flags
	path  string   // the file holding the chunk
}

// writeChunks reads files, names them in rep, and writes each of their
// chunks that keep accepts to the path that name gives it, after blank
// lines that keep the file's line numbers. It returns the chunks written,
// in order.
func writeChunks(files []string, rep *report, keep func(text string) bool, name func(file int, c chunk) string) ([]chunkJob, error) {
	var jobs []chunkJob
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		text := string(b)
		rep.files[i].name = f
		flags := runFlags(text)
		for _, c := range splitChunks(text) {
			if !keep(c.text) {
				continue
			}
			path := name(i, c)
			padded := strings.Repeat("\n", c.line-1) + c.text
			if err := os.WriteFile(path, []byte(padded), 0o644); err != nil {
				return nil, err
			}
			jobs = append(jobs, chunkJob{file: i, c: c, flags: flags, path: path})
		}
	}
	return jobs, nil
}

// runChunks runs check on every job, at most n at a time (at least one),
// and returns each job's result and error, in the jobs' order.
func runChunks(jobs []chunkJob, n int, check func(chunkJob) (chunkResult, error)) ([]chunkResult, []error) {
	results := make([]chunkResult, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(n, 1))
	for k, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[k], errs[k] = check(j)
		}()
	}
	wg.Wait()
	return results, errs
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return "(no output)"
}

// indent prefixes each line of s with four spaces.
func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// short names a file relative to the files' common directory.
func (r *report) short(name string) string {
	prefix := ""
	for i, f := range r.files {
		d := filepath.Dir(f.name) + string(filepath.Separator)
		if i == 0 {
			prefix = d
			continue
		}
		for !strings.HasPrefix(d, prefix) {
			prefix = filepath.Dir(strings.TrimSuffix(prefix, string(filepath.Separator))) + string(filepath.Separator)
			if prefix == "/" || prefix == "./" {
				break
			}
		}
	}
	return strings.TrimPrefix(name, prefix)
}
