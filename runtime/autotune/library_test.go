package autotune

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/dialects/gpu"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cublaslt"
	"github.com/strata-ir/strata/runtime/exec"
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

// TestModeConfig checks the matmul policy of the modes that do not
// search: with cuBLASLt loading, a bf16 matmul + bias + relu lowers to a
// gpu.library_matmul and a pointwise epilogue kernel in every mode, and
// the choice is logged; without it, the pipeline is lower-to-gpu and the
// product runs on an mma kernel; a program without bf16/f16 matmuls does
// not load the library at all. lower-to-gpu itself keeps Strata's kernels
// whatever the process can load.
func TestModeConfig(t *testing.T) {
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	src := `func.func @main(%x: tensor<64x32xbf16>, %w: tensor<32x48xbf16>, %b: tensor<48xbf16>) -> tensor<64x48xbf16> {
  %0 = "graph.matmul"(%x, %w) : (tensor<64x32xbf16>, tensor<32x48xbf16>) -> tensor<64x48xbf16>
  %1 = "graph.add"(%0, %b) : (tensor<64x48xbf16>, tensor<48xbf16>) -> tensor<64x48xbf16>
  %r = "graph.relu"(%1) : (tensor<64x48xbf16>) -> tensor<64x48xbf16>
  return %r : tensor<64x48xbf16>
}`
	parse := func(src string) (*ir.Context, *ir.Operation) {
		t.Helper()
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "policy.mlir"})
		if err != nil {
			t.Fatal(err)
		}
		return ctx, m
	}
	// lower runs pipeline (nil: the policy's for mode) on a fresh parse of src.
	lower := func(mode exec.Mode, pipeline string) (string, int, []string) {
		t.Helper()
		ctx, m := parse(src)
		if pipeline == "" {
			pipeline = LowerPipeline(mode, m)
		}
		pm, err := passes.Parse("builtin.module(" + pipeline + ")")
		if err != nil {
			t.Fatalf("%s: %v", pipeline, err)
		}
		if err := pm.Run(ctx, m); err != nil {
			t.Fatalf("%s: %v", pipeline, err)
		}
		libs := 0
		m.Walk(func(op *ir.Operation) bool {
			if op.Name() == gpu.LibraryMatmulOp {
				libs++
			}
			return true
		})
		var mappings []string
		for _, k := range Kernels(m) {
			mappings = append(mappings, k.Mapping)
		}
		return pipeline, libs, mappings
	}
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(Topic)
	defer logs.Disable()

	loads := 0
	loadCuBLASLt = func() error { loads++; return nil }
	for _, mode := range exec.Modes {
		_, m := parse(src)
		cfg := ModeConfig(mode, m)
		if !cfg.CuBLASLt || cfg.MMATile != togpu.DefaultConfig.MMATile || !cfg.TensorCores {
			t.Errorf("%s with cuBLASLt: %+v", mode, cfg)
		}
		if p, libs, maps := lower(mode, ""); libs != 1 || !slices.Equal(maps, []string{togpu.MappingPointwise}) {
			t.Errorf("%s: %q made %d library products and kernels %v, want 1 and [pointwise]", mode, p, libs, maps)
		}
	}
	if out := buf.String(); !strings.Contains(out, "autotune: default mode: bf16/f16 matmuls of static shape on cuBLASLt") {
		t.Errorf("log %q", out)
	}
	loads = 0
	_, pointwise := parse(`func.func @main(%x: tensor<64x32xbf16>) -> tensor<64x32xbf16> {
  %r = "graph.relu"(%x) : (tensor<64x32xbf16>) -> tensor<64x32xbf16>
  return %r : tensor<64x32xbf16>
}`)
	if p := LowerPipeline(exec.ModeDefault, pointwise); p != "lower-to-gpu" || loads != 0 {
		t.Errorf("no matmul: pipeline %q after %d library loads, want lower-to-gpu and none", p, loads)
	}
	if cfg := ModeConfig(exec.ModeDefault, nil); !cfg.CuBLASLt || loads != 1 {
		t.Errorf("nil module: %+v after %d loads, want the library after one", cfg, loads)
	}

	buf.Reset()
	loadCuBLASLt = func() error { return errors.Join(cublaslt.ErrNotFound, errors.New("tried 2 paths")) }
	_, m := parse(src)
	if cfg := ModeConfig(exec.ModeReduceOverhead, m); cfg != togpu.DefaultConfig {
		t.Errorf("without cuBLASLt: %+v, want the default", cfg)
	}
	if p := LowerPipeline(exec.ModeDefault, m); p != "lower-to-gpu" {
		t.Errorf("without cuBLASLt: pipeline %q, want lower-to-gpu", p)
	}
	if out := buf.String(); !strings.Contains(out, "autotune: reduce-overhead mode: matmuls on Strata's kernels: cuBLASLt not found") {
		t.Errorf("log %q", out)
	}
	loadCuBLASLt = func() error { return nil }
	if _, libs, maps := lower(exec.ModeDefault, "lower-to-gpu"); libs != 0 || !slices.Equal(maps, []string{togpu.MappingMMA}) {
		t.Errorf("lower-to-gpu with cuBLASLt loadable: %d library products, kernels %v, want 0 and [mma]", libs, maps)
	}
}

// TestConvPolicy checks ModeConfig's convolution policy: a bf16
// convolution + ReLU lowers to a gpu.library_conv2d and a pointwise
// epilogue kernel when cuDNN loads; without it, to Strata's mma kernel,
// with one log line a process however often it is asked; a program
// without convolutions does not load the library. The configuration
// round-trips through ConfigString.
func TestConvPolicy(t *testing.T) {
	defer func(f func() error) { loadCuDNN = f }(loadCuDNN)
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	loadCuBLASLt = func() error { return nil }
	const conv = `func.func @main(%x: tensor<2x8x6x6xbf16>, %w: tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16> {
  %y = "graph.conv2d"(%x, %w) <{padding = [1, 1]}> : (tensor<2x8x6x6xbf16>, tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16>
  %r = "graph.relu"(%y) : (tensor<2x16x6x6xbf16>) -> tensor<2x16x6x6xbf16>
  return %r : tensor<2x16x6x6xbf16>
}`
	const plain = `func.func @main(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %r = "graph.relu"(%x) : (tensor<8xbf16>) -> tensor<8xbf16>
  return %r : tensor<8xbf16>
}`
	lower := func(src string) (togpu.Config, int, []string) {
		t.Helper()
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := ModeConfig(exec.ModeDefault, m)
		pm, err := passes.Parse("builtin.module(" + LowerPipelineFor(cfg) + ")")
		if err != nil {
			t.Fatal(err)
		}
		if err := pm.Run(ctx, m); err != nil {
			t.Fatal(err)
		}
		libs := 0
		m.Walk(func(op *ir.Operation) bool {
			if op.Name() == gpu.LibraryConv2DOp {
				libs++
			}
			return true
		})
		var mappings []string
		for _, k := range Kernels(m) {
			mappings = append(mappings, k.Mapping)
		}
		return cfg, libs, mappings
	}
	var buf bytes.Buffer
	defer logs.SetOutput(logs.SetOutput(&buf))
	logs.Enable(Topic)
	defer logs.Disable()

	loads := 0
	loadCuDNN = func() error { loads++; return nil }
	if cfg, libs, maps := lower(conv); !cfg.CuDNN || libs != 1 || !slices.Equal(maps, []string{togpu.MappingPointwise}) {
		t.Errorf("with cuDNN: conv=cudnn %v, %d library convolutions, kernels %v; want true, 1, [pointwise]", cfg.CuDNN, libs, maps)
	}
	if !strings.Contains(buf.String(), "default mode: bf16/f16 convolutions on cuDNN") {
		t.Errorf("log %q", buf.String())
	}
	c := togpu.DefaultConfig
	c.CuDNN = true
	if got, err := ParseConfig(ConfigString(c)); err != nil || got != c || !strings.HasSuffix(ConfigString(c), " conv=cudnn") {
		t.Errorf("round trip of %q: %+v, %v", ConfigString(c), got, err)
	}
	if loads = 0; func() bool { cfg, _, _ := lower(plain); return cfg.CuDNN }() || loads != 0 {
		t.Errorf("a program without convolutions: conv=cudnn or %d loads", loads)
	}

	buf.Reset()
	noCuDNN = sync.Once{} // another test may have logged it
	loadCuDNN = func() error { return errors.New("cuDNN not found: tried 3 paths") }
	for range 2 {
		if cfg, libs, maps := lower(conv); cfg.CuDNN || libs != 0 || !slices.Equal(maps, []string{togpu.MappingMMA}) {
			t.Errorf("without cuDNN: conv=cudnn %v, %d library convolutions, kernels %v; want false, 0, [mma]", cfg.CuDNN, libs, maps)
		}
	}
	if out := buf.String(); strings.Count(out, "convolutions on Strata's kernels (cuDNN or cuBLASLt does not load): cuDNN not found") != 1 {
		t.Errorf("want one log line saying why, got %q", out)
	}
}

// TestAssumedConfig checks that AssumedConfig decides as ModeConfig does
// with the libraries loading or not, without trying to load them: a bf16
// product goes to cuBLASLt and a bf16 convolution to cuDNN only when the
// libraries are taken to load, and a program with neither gets the
// default whatever is assumed.
func TestAssumedConfig(t *testing.T) {
	defer func(f func() error) { loadCuDNN = f }(loadCuDNN)
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	tried := 0
	loadCuBLASLt = func() error { tried++; return nil }
	loadCuDNN = loadCuBLASLt
	for _, c := range []struct {
		name, src     string
		blasLt, cuDNN bool // with the libraries
	}{
		{"matmul", `func.func @main(%x: tensor<64x32xbf16>, %w: tensor<32x48xbf16>) -> tensor<64x48xbf16> {
  %r = "graph.matmul"(%x, %w) : (tensor<64x32xbf16>, tensor<32x48xbf16>) -> tensor<64x48xbf16>
  return %r : tensor<64x48xbf16>
}`, true, false},
		{"conv", `func.func @main(%x: tensor<2x8x6x6xbf16>, %w: tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16> {
  %r = "graph.conv2d"(%x, %w) <{padding = [1, 1]}> : (tensor<2x8x6x6xbf16>, tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16>
  return %r : tensor<2x16x6x6xbf16>
}`, false, true},
		{"f32 matmul", `func.func @main(%x: tensor<64x32xf32>, %w: tensor<32x48xf32>) -> tensor<64x48xf32> {
  %r = "graph.matmul"(%x, %w) : (tensor<64x32xf32>, tensor<32x48xf32>) -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}`, false, false},
	} {
		m, err := ir.Parse(dialects.NewContext(), c.src, ir.ParseOptions{Filename: c.name + ".mlir"})
		if err != nil {
			t.Fatal(err)
		}
		for _, libraries := range []bool{true, false} {
			cfg := AssumedConfig(exec.ModeDefault, m, libraries)
			if cfg.CuBLASLt != (c.blasLt && libraries) || cfg.CuDNN != (c.cuDNN && libraries) {
				t.Errorf("%s, libraries %v: cuBLASLt %v, cuDNN %v; want %v, %v", c.name, libraries, cfg.CuBLASLt, cfg.CuDNN, c.blasLt && libraries, c.cuDNN && libraries)
			}
		}
	}
	if tried != 0 {
		t.Errorf("AssumedConfig tried to load a library %d times", tried)
	}
}

// TestLibrariesLoadAtOnce checks that a program with convolutions loads
// cuBLASLt while cuDNN loads, not after it: the fake cuDNN load returns
// only once the cuBLASLt load has started.
func TestLibrariesLoadAtOnce(t *testing.T) {
	defer func(f func() error) { loadCuDNN = f }(loadCuDNN)
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	started := make(chan struct{})
	loadCuBLASLt = func() error { close(started); return nil }
	loadCuDNN = func() error {
		select {
		case <-started:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("cuBLASLt's load did not start while cuDNN loaded")
		}
	}
	ctx := dialects.NewContext()
	m, err := ir.Parse(ctx, `func.func @main(%x: tensor<2x8x6x6xbf16>, %w: tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16> {
  %y = "graph.conv2d"(%x, %w) <{padding = [1, 1]}> : (tensor<2x8x6x6xbf16>, tensor<16x8x3x3xbf16>) -> tensor<2x16x6x6xbf16>
  return %y : tensor<2x16x6x6xbf16>
}`, ir.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := ModeConfig(exec.ModeDefault, m); !cfg.CuDNN {
		t.Errorf("ModeConfig = %+v, want conv=cudnn", cfg)
	}
}

// TestLowerPipelineChannelsLast checks that the pipeline of a
// configuration with the convolutions on cuDNN stores them channels last
// (graph-channels-last), that STRATA_CHANNELS_LAST=off leaves it out and
// that another value is its option text, and that a configuration
// without cuDNN does not run it.
func TestLowerPipelineChannelsLast(t *testing.T) {
	cudnn := togpu.DefaultConfig
	cudnn.CuDNN, cudnn.CuBLASLt = true, true
	for _, c := range []struct {
		env  string
		cfg  togpu.Config
		want string // "" for none
	}{
		{"", cudnn, "graph-channels-last,"},
		{"off", cudnn, ""},
		{"pad-channels=8", cudnn, "graph-channels-last{pad-channels=8},"},
		{"", togpu.DefaultConfig, ""},
	} {
		t.Setenv(EnvChannelsLast, c.env)
		p := LowerPipelineFor(c.cfg)
		if got := strings.Contains(p, "graph-channels-last"); got != (c.want != "") || c.want != "" && !strings.Contains(p, c.want) {
			t.Errorf("%s=%q: pipeline %s, want %q in it", EnvChannelsLast, c.env, p, c.want)
		}
		if _, err := passes.Parse("builtin.module(" + p + ")"); err != nil {
			t.Errorf("%s=%q: %v", EnvChannelsLast, c.env, err)
		}
	}
}

// TestLoadLibraries checks that LoadLibraries returns before the loads
// end and loads both libraries, each on its own goroutine: the fake
// loads return only once both have started.
func TestLoadLibraries(t *testing.T) {
	defer func(f func() error) { loadCuDNN = f }(loadCuDNN)
	defer func(f func() error) { loadCuBLASLt = f }(loadCuBLASLt)
	var started sync.WaitGroup
	started.Add(2)
	ended := make(chan string, 2)
	fake := func(name string) func() error {
		return func() error {
			started.Done()
			started.Wait()
			ended <- name
			return nil
		}
	}
	loadCuBLASLt, loadCuDNN = fake("cuBLASLt"), fake("cuDNN")
	LoadLibraries()
	got := map[string]bool{}
	for range 2 {
		select {
		case name := <-ended:
			got[name] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("loads ended: %v; want both, at once", got)
		}
	}
}
