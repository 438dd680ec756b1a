package exec

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-ir/strata/runtime/interp"
)

// TestTimingNeedsDevice checks that every timing refuses a runtime without
// a CUDA device with an error that says so, and an estimate of no
// launches with an error of its own.
func TestTimingNeedsDevice(t *testing.T) {
	p := compileFile(t, "vadd.mlir")
	rt := newRuntime(newFake())
	r := NewRunner(p, rt, "main", false)
	defer r.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	args := []interp.Value{randomF32(t, rng, 300, 1), randomF32(t, rng, 300, 1)}
	for name, timing := range map[string]func() (float64, error){
		"Time":     func() (float64, error) { return r.Time(args, 1, 3) },
		"Estimate": func() (float64, error) { return r.Estimate(args, 5) },
	} {
		if _, err := timing(); err == nil || !strings.Contains(err.Error(), "CUDA device") {
			t.Errorf("%s on a runtime without a CUDA device: %v, want an error naming the device", name, err)
		}
	}
	b, err := p.Prepare(rt, "main", args)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	for _, n := range []int{0, -1} {
		if _, err := b.Estimate(n); err == nil || !strings.Contains(err.Error(), "at least one launch") {
			t.Errorf("Estimate(%d): %v, want an error asking for a launch", n, err)
		}
	}
}
