package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	rep := &report{files: make([]fileResult, len(files))}
	keep := func(text string) bool { return !expectsError(text) && strings.TrimSpace(stripComments(text)) != "" }
	jobs, err := writeChunks(files, rep, keep, func(i int, c chunk) string {
		return filepath.Join(dir, fmt.Sprintf("%d-%d.mlir", i, c.line))
	})
	if err != nil {
		return nil, err
	}
	results, errs := runChunks(jobs, cfg.jobs, func(j chunkJob) (chunkResult, error) {
		base := strings.TrimSuffix(j.path, ".mlir") // the prefix of the chunk's files
		res := chunkResult{line: j.c.line, foreign: foreignDialect(j.c.text, cfg.foreign, len(j.flags) > 0)}
		var err error
		res.reference, res.irc, res.output, err = roundTrip(cfg, run, j.flags, base, res.foreign != "")
		res.output = strings.ReplaceAll(res.output, j.path, files[j.file])
		return res, err
	})
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
