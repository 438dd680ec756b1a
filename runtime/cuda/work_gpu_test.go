package cuda

import (
	"testing"
	"time"
)

// TestGPUProgramWork checks the program-work marks the libraries' timings
// wait for: WaitQuiet waits while a run is being queued and returns once
// it ended; Perturbed reports a run begun since, and only then.
func TestGPUProgramWork(t *testing.T) {
	dev := openGPU(t)
	gen, err := dev.WaitQuiet() // nothing queued yet
	if err != nil {
		t.Fatal(err)
	}
	if dev.Perturbed(gen) {
		t.Fatal("perturbed with no run begun")
	}
	dev.BeginWork()
	if !dev.Perturbed(gen) {
		t.Fatal("a run begun: not perturbed")
	}
	quiet := make(chan uint64, 1)
	go func() {
		g, err := dev.WaitQuiet()
		if err != nil {
			t.Error(err)
		}
		quiet <- g
	}()
	select {
	case <-quiet:
		t.Fatal("WaitQuiet returned while a run was being queued")
	case <-time.After(50 * time.Millisecond):
	}
	if err := dev.EndWork(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-quiet:
		if g == gen {
			t.Errorf("the run's generation %d is the one before it", g)
		}
		if dev.Perturbed(g) {
			t.Error("perturbed with no run begun since WaitQuiet")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitQuiet did not return after the run ended")
	}
}
