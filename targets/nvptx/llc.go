package nvptx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	llir "github.com/llir/llvm/ir"
)

// LLC compiles with LLVM's llc (LLVM 19 knows sm_90). The module's text,
// as llir prints it, goes to llc through a temporary file.
type LLC struct {
	// Path is the llc binary; empty means FindLLC's answer.
	Path string
}

// Name implements Backend.
func (LLC) Name() string { return "llc" }

// FindLLC returns the llc to run: $STRATA_LLVM_BIN/llc, then
// /usr/lib/llvm-19/bin/llc, then llc-19 and llc on PATH.
func FindLLC() (string, error) {
	var candidates []string
	if dir := os.Getenv("STRATA_LLVM_BIN"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "llc"))
	}
	candidates = append(candidates, "/usr/lib/llvm-19/bin/llc")
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	for _, name := range []string{"llc-19", "llc"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("llc not found (set STRATA_LLVM_BIN, install LLVM 19, or use --ptx-backend=native)")
}

var llcVersionRE = regexp.MustCompile(`(?m)^\.version [0-9]+\.[0-9]+$`)

// Compile implements Backend.
func (l LLC) Compile(m *llir.Module, opts Options) (string, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return "", err
	}
	path := l.Path
	if path == "" {
		if path, err = FindLLC(); err != nil {
			return "", err
		}
	}
	f, err := os.CreateTemp("", "strata-*.ll")
	if err != nil {
		return "", fmt.Errorf("llc: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := m.WriteTo(f); err != nil {
		f.Close()
		return "", fmt.Errorf("llc: writing the module: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("llc: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(context.Background(), path, "-march=nvptx64", "-mcpu="+opts.Target, "-O2", f.Name(), "-o", "-")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s failed: %w\n%s", path, err, strings.TrimSpace(stderr.String()))
	}
	ptx := stdout.String()
	if err := CheckNoExtern(ptx); err != nil {
		return "", fmt.Errorf("llc: %w", err)
	}
	// llc writes the lowest ISA the target allows (7.0 for sm_80); the
	// requested version is at least that for our targets, and PTX of a
	// lower ISA is valid under a higher one.
	if !llcVersionRE.MatchString(ptx) {
		return "", errors.New("llc: output has no .version line")
	}
	ptx, err = withClusterDirectives(m, ptx)
	if err != nil {
		return "", fmt.Errorf("llc: %w", err)
	}
	return llcVersionRE.ReplaceAllLiteralString(ptx, ".version "+opts.PTXVersion), nil
}

// withClusterDirectives adds to llc's PTX the cluster sizes of m's
// kernels, which LLVM 19 does not write: each one's directive goes right
// after its parameter list, with the other performance directives.
func withClusterDirectives(m *llir.Module, ptx string) (string, error) {
	for _, f := range m.Funcs {
		d := clusterDirective(annotations(m, f))
		if d == "" {
			continue
		}
		head := ".entry " + f.Name() + "("
		at := strings.Index(ptx, head)
		if at < 0 {
			return "", fmt.Errorf("kernel %s of a cluster size is not in the output", f.Name())
		}
		end := strings.Index(ptx[at:], "\n)\n")
		if end < 0 {
			return "", fmt.Errorf("kernel %s: no end of its parameter list", f.Name())
		}
		end += at + len("\n)\n")
		ptx = ptx[:end] + d + ptx[end:]
	}
	return ptx, nil
}
