package bench

import (
	"bytes"
	"fmt"
	"image/png"
	"strings"
	"testing"
)

func sampleResults(t *testing.T) *Results {
	t.Helper()
	r, err := ReadResults("testdata/sample-results.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTable(t *testing.T) {
	var b strings.Builder
	Table(&b, sampleResults(t))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want header, rule and 3 rows:\n%s", len(lines), b.String())
	}
	for _, want := range []struct {
		line  int
		cells []string
	}{
		{2, []string{"`softmax`", "0.14 ms", "0.152 ms", "0.133 ms", "0.92×", "1.05×", "3.83e+03 GB/s (90%)", "31 ms / 927 ms", "1.5e-07"}},
		{3, []string{"`mm_bias_gelu`", "not supported yet", "0.447 ms"}},
		{4, []string{"`softmax_dynamic`", "45 ms total", "528 ms total", "0.09×"}},
	} {
		for _, c := range want.cells {
			if !strings.Contains(lines[want.line], "| "+c+" |") {
				t.Errorf("row %d lacks cell %q:\n%s", want.line, c, lines[want.line])
			}
		}
	}
	for i, l := range lines {
		if n := strings.Count(l, "|"); n != 14 {
			t.Errorf("line %d has %d bars, want 14: %s", i, n, l)
		}
	}
}

func TestUpdateDoc(t *testing.T) {
	r := sampleResults(t)
	doc := "# Performance\n\n## Parser\n\nkept\n"
	sec := Section(r, "performance-h200.png")
	once, err := UpdateDoc(doc, sec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(once, doc[:len(doc)-1]) || !strings.Contains(once, "![Strata and torch.compile per workload](performance-h200.png)") {
		t.Errorf("section not appended after the kept text:\n%s", once)
	}
	// Regenerating replaces the section and keeps text on both sides.
	edited := once + "\n## After\n\nalso kept\n"
	r.Date = "2026-12-01"
	twice, err := UpdateDoc(edited, Section(r, "performance-h200.png"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(twice, DocBegin) != 1 || !strings.Contains(twice, "2026-12-01") || strings.Contains(twice, "2026-11-30") ||
		!strings.Contains(twice, "also kept") || !strings.Contains(twice, "## Parser") {
		t.Errorf("regenerated doc:\n%s", twice)
	}
	if _, err := UpdateDoc(DocEnd+"\n"+DocBegin, sec); err == nil {
		t.Error("markers out of order: no error")
	}
}

func TestPlot(t *testing.T) {
	var buf bytes.Buffer
	if err := Plot(sampleResults(t), &buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
		t.Errorf("plot is %v", b)
	}
	if err := Plot(&Results{Workloads: []WorkloadResult{{Name: "x"}}}, &buf); err == nil {
		t.Error("plot without times: no error")
	}
}

func TestWallTable(t *testing.T) {
	r := sampleResults(t)
	var b strings.Builder
	WallTable(&b, r)
	if got := strings.Count(b.String(), "\n"); got != 2 {
		t.Fatalf("sample results have no wall times, want only the header:\n%s", b.String())
	}
	sd := r.Workloads[0].Strata["default"]
	sd.WallMs = 0.009
	r.Workloads[0].Torch["default"].WallMs = 0.012
	b.Reset()
	WallTable(&b, r)
	row := fmt.Sprintf("| `%s` | 0.009 ms | 0.012 ms | 0.75× |", r.Workloads[0].Name)
	if !strings.Contains(b.String(), row) {
		t.Errorf("want row %q in:\n%s", row, b.String())
	}
}

// TestFirstCallTable checks the split of a first call: trace + lower
// (which holds llvm and ptx), the load with its JIT, the rest as first call − compile − load, and
// that workloads without phases are left out.
func TestFirstCallTable(t *testing.T) {
	r := sampleResults(t)
	p := r.Workloads[0].Strata["default"].PhasesS
	p["load"], p["jit"] = 0.012, 0.011
	var b strings.Builder
	FirstCallTable(&b, r)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want header, rule and softmax's row:\n%s", len(lines), b.String())
	}
	for _, c := range []string{"`softmax`", "31 ms", "11 ms", "12 ms", "11 ms", "8 ms", "927 ms"} {
		if !strings.Contains(lines[2], "| "+c+" |") {
			t.Errorf("softmax's row lacks %q: %s", c, lines[2])
		}
	}
	if !strings.Contains(Section(r, ""), "of which driver JIT") {
		t.Error("Section has no first-call table")
	}
}
