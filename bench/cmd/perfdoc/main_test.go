package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One command turns the sample results into the doc section and the plot,
// keeping the rest of the document.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "performance.md")
	png := filepath.Join(dir, "img", "performance-h200.png")
	if err := os.Mkdir(filepath.Dir(png), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, []byte("# Performance\n\nthroughput section\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run("../../testdata/sample-results.json", doc, png); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(doc)
	for _, want := range []string{"throughput section", "| `softmax` |", "](img/performance-h200.png)"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("doc lacks %q:\n%s", want, text)
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Errorf("plot: %v %v", st, err)
	}
	if err := run(filepath.Join(dir, "missing.json"), doc, png); err == nil {
		t.Error("missing results: no error")
	}
}
