package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/runtime/cuda"
)

func TestPrepareSmallOnInterp(t *testing.T) {
	dir := t.TempDir()
	var out, errs strings.Builder
	err := run([]string{"prepare", "--out", dir, "--engine", "interp", "--size", "small", "--only", "rowsum,tiny_chain",
		"--warmup-ms", "0.1", "--rep-ms", "0.5"}, &out, &errs)
	if err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	if !strings.Contains(out.String(), "tiny_chain") || strings.Contains(out.String(), "softmax") {
		t.Errorf("log:\n%s", out.String())
	}
	for _, f := range []string{"prepare.json", "rowsum.in.x.npy", "rowsum.strata.y.npy", "tiny_chain.mlir"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Without PyTorch's side there is nothing to report.
	if err := run([]string{"report", "--results", filepath.Join(dir, "r"), dir}, &out, &errs); err == nil || !strings.Contains(err.Error(), "torch.json") {
		t.Errorf("report without torch.json: %v", err)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"frobnicate"},
		{"prepare"},
		{"prepare", "--out", "x", "--size", "huge"},
		{"prepare", "--out", "x", "--only", "nope", "--engine", "interp"},
		{"prepare", "--out", "x", "--engine", "nope"},
		{"report"},
		{"warmup", "extra"},
		{"load-ptx"},
		{"load-ptx", "--rounds", "0", "x.ptx"},
		{"load-ptx", "no-such-file.ptx"},
	} {
		var out, errs strings.Builder
		if err := run(args, &out, &errs); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestLoadPTXNamesAMissingFile checks that load-ptx reads every file
// before it opens the device, and says which one it could not.
func TestLoadPTXNamesAMissingFile(t *testing.T) {
	good := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(good, []byte(tinyPTX), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	err := run([]string{"load-ptx", good, "missing.ptx"}, &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "missing.ptx") {
		t.Errorf("err = %v, want the missing file named", err)
	}
}

// TestGPUWarmupAndLoadPTX runs both commands on the device (skipped
// without one).
func TestGPUWarmupAndLoadPTX(t *testing.T) {
	dev, err := cuda.Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	dev.Close()
	var out, errs strings.Builder
	if err := run([]string{"warmup"}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(f, []byte(tinyPTX), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"load-ptx", "--rounds", "2", f}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "warmup: device open") || !strings.Contains(out.String(), "k.ptx: median wall") {
		t.Errorf("output:\n%s", out.String())
	}
}
