package ircmain

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMode checks --mode: unknown modes are usage errors, and modes
// other than default are ignored with a note outside --backend nvptx.
func TestRunMode(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f.mlir")
	src := "func.func @main() -> f32 {\n  %c = arith.constant 1.5 : f32\n  return %c : f32\n}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if status := Main([]string{"run", "--mode", "fast", f}, nil, &out, &errOut); status != ExitUsage ||
		!strings.Contains(errOut.String(), `unknown mode "fast"`) {
		t.Errorf("--mode fast: status %d, stderr %q", status, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if status := Main([]string{"run", "--mode", "reduce-overhead", f}, nil, &out, &errOut); status != ExitOK ||
		!strings.Contains(errOut.String(), "--mode reduce-overhead applies to --backend nvptx; ignored with --backend interp") ||
		!strings.Contains(out.String(), "1.5") {
		t.Errorf("--mode reduce-overhead with interp: status %d, stdout %q, stderr %q", status, out.String(), errOut.String())
	}
}
