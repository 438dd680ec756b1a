package autotune

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cublaslt"
)

// TestWithLibrary checks the cuBLASLt candidate: second, right after the
// default, for a program with an mma kernel when the library loads;
// absent without mma kernels; and, when the library does not load,
// absent with a log line rather than an error.
func TestWithLibrary(t *testing.T) {
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	mma := []Kernel{{Mapping: togpu.MappingMMA}, {Mapping: togpu.MappingPointwise, Vector: 4}}
	cands := Candidates(mma)

	loadCuBLASLt = func() error { return nil }
	got := withLibrary("@main", cands, mma)
	if len(got) != len(cands)+1 || got[0] != togpu.DefaultConfig || !got[1].CuBLASLt || got[1].MMATile != togpu.DefaultConfig.MMATile {
		t.Errorf("with cuBLASLt: %d candidates, first two %+v", len(got), got[:2])
	}
	if cands[1].CuBLASLt {
		t.Error("withLibrary changed its argument")
	}
	pointwise := []Kernel{{Mapping: togpu.MappingPointwise, Vector: 4}}
	if got := withLibrary("@main", Candidates(pointwise), pointwise); len(got) != len(Candidates(pointwise)) {
		t.Errorf("no mma kernel: %d candidates, want %d", len(got), len(Candidates(pointwise)))
	}

	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(Topic)
	defer logs.Disable()
	loadCuBLASLt = func() error { return errors.Join(cublaslt.ErrNotFound, errors.New("tried 2 paths")) }
	if got := withLibrary("@main", cands, mma); len(got) != len(cands) {
		t.Errorf("without cuBLASLt: %d candidates, want %d", len(got), len(cands))
	}
	if out := buf.String(); !strings.Contains(out, "autotune: @main: no cuBLASLt candidate: cuBLASLt not found") {
		t.Errorf("log %q", out)
	}
}

// TestConfigRoundTripLibrary checks that the cuBLASLt configuration is
// recorded and read back, and that the default one reads as before.
func TestConfigRoundTripLibrary(t *testing.T) {
	c := togpu.DefaultConfig
	c.CuBLASLt = true
	s := ConfigString(c)
	if !strings.HasSuffix(s, " matmul=cublaslt") || strings.Contains(ConfigString(togpu.DefaultConfig), "matmul") {
		t.Errorf("ConfigString: %q, default %q", s, ConfigString(togpu.DefaultConfig))
	}
	if got, err := ParseConfig(s); err != nil || got != c {
		t.Errorf("round trip of %q: %+v, %v", s, got, err)
	}
	if _, err := ParseConfig("block=256 vector=4 rows-per-block=0 max-blocks=65536 matmul=blas"); err == nil {
		t.Error("ParseConfig accepted matmul=blas")
	}
	if _, err := passes.Parse("builtin.module(" + GPUPipeline(c) + ")"); err != nil {
		t.Errorf("the candidate's pipeline: %v", err)
	}
}
