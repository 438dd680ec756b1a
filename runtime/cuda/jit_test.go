package cuda

import (
	"testing"
	"time"
)

// warmPTX must assemble everywhere: a typo would make every warm-up fail
// silently on the device.
func TestWarmPTXAssembles(t *testing.T) {
	if out, err := ptxas(t, warmPTX); err != nil {
		t.Fatalf("ptxas rejects warmPTX: %v\n%s", err, out)
	}
}

func TestGPUWarmJIT(t *testing.T) {
	dev := openGPU(t)
	start := time.Now()
	if err := <-dev.WarmJIT(); err != nil {
		t.Fatalf("WarmJIT: %v", err)
	}
	warm := time.Since(start)
	start = time.Now()
	m, err := dev.LoadModule(vaddPTX)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("warm-up %v, then vadd's load %v", warm, time.Since(start))
	if err := m.Unload(); err != nil {
		t.Fatal(err)
	}
}

// Close must wait for a warm-up still compiling: releasing the context
// under it would make the driver fail or crash.
func TestGPUCloseWaitsForWarmJIT(t *testing.T) {
	dev, err := Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	done := dev.WarmJIT()
	if err := dev.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("warm-up under Close: %v", err)
		}
	default:
		t.Fatal("Close returned before the warm-up finished")
	}
}
