package exec

import (
	"testing"
)

// TestLoads checks that Loads lists the modules of a host function once
// each, only after they are loaded, and that a second program with the
// same PTX text sees the first one's load.
func TestLoads(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	rt := newRuntime(newFake())
	got, err := p.Loads(rt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("before loading: Loads = %+v, want none", got)
	}
	if err := p.Load(rt, "main"); err != nil {
		t.Fatal(err)
	}
	got, err = p.Loads(rt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Module != "k" {
		t.Fatalf("after Load: Loads = %+v, want module k once", got)
	}
	q := compileFile(t, "vadd.mlir")
	if got, err := q.Loads(rt, "main"); err != nil || len(got) != 1 {
		t.Errorf("same PTX, other program: Loads = %+v, %v; want the loaded module", got, err)
	}
	if _, err := p.Loads(rt, "nope"); err == nil {
		t.Error("Loads of a missing host function: no error")
	}
}
