package bench

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/npy"
)

// quietEngine is an engine that records when it was quiesced and whose
// programs report module loads: one loaded before the first call began
// (another program's) and one during it.
type quietEngine struct {
	quiesced   *time.Time
	quiesceErr error
}

func (e quietEngine) Name() string    { return "fake" }
func (e quietEngine) Modes() []string { return []string{"default"} }
func (e quietEngine) Quiesce() error {
	*e.quiesced = time.Now()
	return e.quiesceErr
}
func (e quietEngine) Compile(*ir.Context, *ir.Operation, string, string) (Program, error) {
	return &loadingProgram{created: time.Now()}, nil
}

type loadingProgram struct {
	created time.Time
	loaded  time.Time
}

func (p *loadingProgram) Run([]*npy.Array) ([]*npy.Array, error) {
	p.loaded = time.Now()
	return nil, nil
}
func (p *loadingProgram) Time([]*npy.Array, int, int) (float64, error) { return 1, nil }
func (p *loadingProgram) Phases() map[string]float64                   { return nil }
func (p *loadingProgram) Kernels() int                                 { return 1 }

// LoadsSince counts a 7 ms JIT loaded at Run and a 100 ms one loaded an
// hour before the program was made.
func (p *loadingProgram) LoadsSince(t time.Time) (LoadReport, error) {
	var r LoadReport
	for _, l := range []struct {
		at  time.Time
		jit time.Duration
	}{{p.created.Add(-time.Hour), 100 * time.Millisecond}, {p.loaded, 7 * time.Millisecond}} {
		if !l.at.Before(t) {
			r.Modules++
			r.JIT += l.jit
			r.Wall += l.jit
		}
	}
	return r, nil
}

// TestFirstCallQuiescesAndReportsJIT checks that the runner waits for the
// engine's earlier work before the first call's clock starts and records
// the JIT time of the modules loaded during the call only.
func TestFirstCallQuiescesAndReportsJIT(t *testing.T) {
	inst, err := Lookup("softmax").Build(Small)
	if err != nil {
		t.Fatal(err)
	}
	var quiesced time.Time
	before := time.Now()
	sm, _, err := runMode(Options{Engine: quietEngine{quiesced: &quiesced}, RepMs: 1}, inst, "default", [][]*npy.Array{nil})
	if err != nil {
		t.Fatal(err)
	}
	if quiesced.Before(before) {
		t.Error("the engine was not quiesced before the first call")
	}
	if got, wall := sm.PhasesS["jit"], sm.PhasesS["driver_load"]; got != 0.007 || wall != 0.007 {
		t.Errorf("jit, driver_load phases = %v, %v s, want 0.007 (the load during the call only)", got, wall)
	}
	if sm.GCCycles < 0 {
		t.Errorf("GCCycles = %d", sm.GCCycles)
	}

	_, _, err = runMode(Options{Engine: quietEngine{quiesced: &quiesced, quiesceErr: errors.New("device lost")}, RepMs: 1},
		inst, "default", [][]*npy.Array{nil})
	if err == nil || !strings.Contains(err.Error(), "device lost") {
		t.Errorf("a failing quiesce: err = %v, want it reported", err)
	}
}
