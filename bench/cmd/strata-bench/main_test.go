package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	} {
		var out, errs strings.Builder
		if err := run(args, &out, &errs); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
