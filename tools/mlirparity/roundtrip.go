package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// isRoundTripFile reports whether a file named name is measured by the
// round-trip mode: every .mlir file but the invalid*.mlir ones, which hold
// diagnostics tests.
func isRoundTripFile(name string) bool {
	return strings.HasSuffix(name, ".mlir") && !strings.HasPrefix(name, "invalid")
}

// isDiagnosticsFile reports whether a file named name is measured by the
// diagnostics mode.
func isDiagnosticsFile(name string) bool {
	return strings.HasSuffix(name, ".mlir") && strings.HasPrefix(name, "invalid")
}

// roundTripStep names the steps of one chunk's round trip; a failing
// chunk's output starts with the step that failed.
const (
	stepIRC     = "irc rejects the chunk"
	stepReparse = "mlir-opt rejects irc's output"
	stepDiffers = "irc changes the IR"
)

// measureRoundTrip checks every chunk of the files that mlir-opt accepts
// and that uses no dialect irc lacks: irc must accept it, and mlir-opt's
// generic print of irc's generic output must equal mlir-opt's generic print
// of the chunk. Chunks holding expected-error comments are diagnostics tests
// and are skipped. The RUN lines' passes are ignored: only parsing and
// printing are measured.
func measureRoundTrip(cfg config, files []string, run runner) (*report, error) {
	dir, err := os.MkdirTemp("", "mlirparity-rt")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	type job struct {
		file  int
		c     chunk
		flags []string
		base  string // path prefix of the job's files
	}
	rep := &report{files: make([]fileResult, len(files))}
	var jobs []job
	for i, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		text := string(b)
		rep.files[i].name = name
		flags := runFlags(text)
		for _, c := range splitChunks(text) {
			if expectsError(c.text) || strings.TrimSpace(stripComments(c.text)) == "" {
				continue
			}
			base := filepath.Join(dir, fmt.Sprintf("%d-%d", i, c.line))
			// Blank lines in front keep the file's line numbers.
			padded := strings.Repeat("\n", c.line-1) + c.text
			if err := os.WriteFile(base+".mlir", []byte(padded), 0o644); err != nil {
				return nil, err
			}
			jobs = append(jobs, job{file: i, c: c, flags: flags, base: base})
		}
	}
	results := make([]chunkResult, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(cfg.jobs, 1))
	for k, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res := chunkResult{line: j.c.line, foreign: foreignDialect(j.c.text, cfg.foreign, len(j.flags) > 0)}
			res.reference, res.irc, res.output, errs[k] = roundTrip(cfg, run, j.flags, j.base, res.foreign != "")
			res.output = strings.ReplaceAll(res.output, j.base+".mlir", files[j.file])
			results[k] = res
		}()
	}
	wg.Wait()
	for k, j := range jobs {
		if errs[k] != nil {
			return nil, fmt.Errorf("%s:%d: %w", files[j.file], j.c.line, errs[k])
		}
		f := &rep.files[j.file]
		f.chunks++
		res := results[k]
		switch {
		case res.reference && res.foreign != "":
			f.outside++
		case res.reference:
			f.reference++
			if res.irc {
				f.passed++
			}
		}
		f.results = append(f.results, res)
	}
	return rep, nil
}

// roundTrip runs the steps on the chunk in base+".mlir": accepted is
// whether mlir-opt accepts it, same whether it round-trips through irc (not
// tried when skipIRC), and why describes the failing step.
func roundTrip(cfg config, run runner, flags []string, base string, skipIRC bool) (accepted, same bool, why string, err error) {
	src, want, ours, back := base+".mlir", base+".want", base+".ours", base+".back"
	withFlags := func(args ...string) []string { return append(append([]string(nil), flags...), args...) }
	accepted, _, err = run(cfg.mlirOpt, withFlags("--mlir-print-op-generic", src, "-o", want))
	if err != nil || !accepted || skipIRC {
		return accepted, false, "", err
	}
	ok, out, err := run(cfg.irc, withFlags("--print-op-generic", src, "-o", ours))
	if err != nil || !ok {
		return true, false, stepIRC + ": " + firstLine(out), err
	}
	ok, out, err = run(cfg.mlirOpt, withFlags("--mlir-print-op-generic", ours, "-o", back))
	if err != nil || !ok {
		return true, false, stepReparse + ": " + strings.ReplaceAll(firstLine(out), ours, "(irc's output)"), err
	}
	w, err := os.ReadFile(want)
	if err != nil {
		return true, false, "", err
	}
	b, err := os.ReadFile(back)
	if err != nil {
		return true, false, "", err
	}
	if d := firstDifference(string(w), string(b)); d != "" {
		return true, false, stepDiffers + ": " + d, nil
	}
	return true, true, "", nil
}

// firstDifference describes the first line where got differs from want,
// or returns "" when the texts are equal but for trailing blanks.
func firstDifference(want, got string) string {
	wl := strings.Split(strings.TrimRight(want, " \n"), "\n")
	gl := strings.Split(strings.TrimRight(got, " \n"), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d of the generic print is %q from the chunk, %q from irc's output", i+1, strings.TrimSpace(w), strings.TrimSpace(g))
		}
	}
	return ""
}

// stripComments drops the "//" comments of text, so that a chunk of only
// comments (a file's header) is not measured.
func stripComments(text string) string {
	var b strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, "//"); i >= 0 {
			l = l[:i]
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}
