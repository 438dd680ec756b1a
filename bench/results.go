package bench

import (
	"encoding/json"
	"fmt"
	"os"
)

// File names inside a benchmark directory.
const (
	ManifestFile = "prepare.json" // written by Prepare
	TorchFile    = "torch.json"   // written by torch_side.py
)

// Manifest is what Prepare leaves for the PyTorch side and for Report: the
// workloads with their input and output files and Strata's measurements.
type Manifest struct {
	Date   string   `json:"date"`
	Size   string   `json:"size"`
	Seed   uint64   `json:"seed"`
	Engine string   `json:"engine"`
	Modes  []string `json:"modes"`
	// Commit is the Strata commit the runner was built from, when known.
	Commit string `json:"commit,omitempty"`
	// WarmupMs and RepMs are the warm-up and measuring times of this run
	// (Options): torch_side.py hands them to do_bench, so both sides of a
	// row time alike.
	WarmupMs  float64            `json:"warmup_ms"`
	RepMs     float64            `json:"rep_ms"`
	Workloads []PreparedWorkload `json:"workloads"`
}

// PreparedWorkload is one workload in a Manifest.
type PreparedWorkload struct {
	Name    string  `json:"name"`
	Summary string  `json:"summary"`
	Shape   string  `json:"shape"`
	Tol     float64 `json:"tol"`
	// TorchTol, when not 0, replaces Tol against PyTorch's result
	// (Workload.TorchTol).
	TorchTol float64 `json:"torch_tol,omitempty"`
	// TorchModes are the torch.compile modes the PyTorch side times.
	TorchModes []string `json:"torch_modes"`
	// Dynamic marks a workload of several variants compiled once; both sides
	// report the total seconds of compiling and calling each variant once.
	Dynamic  bool                   `json:"dynamic"`
	Bytes    int64                  `json:"bytes"`
	Flops    int64                  `json:"flops"`
	Variants []PreparedVariant      `json:"variants"`
	Strata   map[string]*StrataMode `json:"strata"`
	// Unsupported says why Strata cannot run the workload yet ("" if it can).
	Unsupported string `json:"unsupported,omitempty"`
}

// PreparedVariant lists the files of one variant, relative to the directory.
type PreparedVariant struct {
	Label   string     `json:"label"`
	Inputs  []FileSpec `json:"inputs"`
	Outputs []FileSpec `json:"outputs"`
}

// FileSpec is a tensor with its files.
type FileSpec struct {
	TensorSpec
	// File holds an input's data.
	File string `json:"file,omitempty"`
	// StrataOnly marks inputs PyTorch does not take (a cotangent seed).
	StrataOnly bool `json:"strata_only,omitempty"`
	// StrataFile and TorchFile hold an output as each side computed it.
	StrataFile string `json:"strata_file,omitempty"`
	TorchFile  string `json:"torch_file,omitempty"`
}

// StrataMode is Strata's measurement of a workload in one mode.
type StrataMode struct {
	// Ms is the median milliseconds per call.
	Ms float64 `json:"ms,omitempty"`
	// MinMs and MaxMs are the fastest and slowest timed call (the model
	// rows): their spread around Ms is the host's noise.
	MinMs float64 `json:"min_ms,omitempty"`
	MaxMs float64 `json:"max_ms,omitempty"`
	// FirstCallS is trace + compile + module load + first launch and wait,
	// in seconds, with the inputs already on the device (as torch.compile's
	// first call): the conversions and copies are PhasesS["transfer"].
	FirstCallS float64 `json:"first_call_s,omitempty"`
	// PhasesS splits the first call, as far as known: "trace", "lower"
	// (lowering and code generation, of which "llvm" and "ptx" are the
	// LLVM IR and the PTX), "load" (loading the modules: the launch
	// plan and the driver calls, host clock), "driver_load" (the
	// cuModuleLoadDataEx calls within it), "jit" (the part of those the
	// driver reports as its PTX compiler; both are sums over the modules,
	// which the default load policy compiles concurrently, so they can
	// exceed "load"),
	// "first_run" (load, launch and wait), "autotune", and "transfer"
	// (conversions and copies, not part of FirstCallS).
	PhasesS map[string]float64 `json:"phases_s,omitempty"`
	// GCCycles is the number of Go garbage collections that ended during
	// the first call (transfers included); the runner collects before it.
	GCCycles int `json:"gc_cycles,omitempty"`
	// TotalS is, for a dynamic workload, the seconds to compile once and call
	// every variant once.
	TotalS float64 `json:"total_s,omitempty"`
	// KernelMs is the GPU time of one call (frontend.Compiled.KernelTime:
	// CUDA events around the launches, the L2 cache cleared before), where
	// a row measures it apart from Ms.
	KernelMs float64 `json:"kernel_ms,omitempty"`
	// WallMs is the host clock's milliseconds per call over back-to-back
	// calls (see WallTimer): the launch cost of a launch-bound program.
	WallMs float64 `json:"wall_ms,omitempty"`
	// Compiles is, for a dynamic workload, the number of graphs compiled
	// over all its variants (the target is one).
	Compiles int `json:"compiles,omitempty"`
	// Kernels is the number of kernels one call launches (0: unknown).
	Kernels int `json:"kernels,omitempty"`
	// VsDefault compares this mode's results with the default mode's.
	VsDefault *Check `json:"vs_default,omitempty"`
	// Error says why the mode has no numbers ("n/a" for a mode the engine
	// does not offer).
	Error string `json:"error,omitempty"`
}

// TorchMode is PyTorch's measurement of a workload in one mode (eager,
// default, reduce-overhead, max-autotune-no-cudagraphs).
type TorchMode struct {
	Ms float64 `json:"ms,omitempty"`
	// MinMs and MaxMs are the fastest and slowest timed call (the model
	// rows), as StrataMode's.
	MinMs      float64 `json:"min_ms,omitempty"`
	MaxMs      float64 `json:"max_ms,omitempty"`
	FirstCallS float64 `json:"first_call_s,omitempty"`
	TotalS     float64 `json:"total_s,omitempty"`
	// WallMs is StrataMode.WallMs measured the same way.
	WallMs float64 `json:"wall_ms,omitempty"`
	// Compiles is StrataMode.Compiles: the graphs Dynamo compiled.
	Compiles int    `json:"compiles,omitempty"`
	Error    string `json:"error,omitempty"`
}

// TorchSide is the JSON torch_side.py writes.
type TorchSide struct {
	Torch     string                   `json:"torch"`
	Triton    string                   `json:"triton"`
	GPU       string                   `json:"gpu"`
	CUDA      string                   `json:"cuda"`
	Ceilings  Ceilings                 `json:"ceilings"`
	Workloads map[string]TorchWorkload `json:"workloads"`
}

// TorchWorkload holds PyTorch's modes for one workload.
type TorchWorkload struct {
	Modes map[string]*TorchMode `json:"modes"`
	Error string                `json:"error,omitempty"`
}

// Ceilings are the rates measured on the device in the same run.
type Ceilings struct {
	// CopyGBps is a large device-to-device copy, bytes read plus written.
	CopyGBps float64 `json:"copy_GBps"`
	// BF16TFLOPs and FP32TFLOPs are 8192³ matrix products (fp32 without tf32).
	BF16TFLOPs float64 `json:"bf16_mm_TFLOPs"`
	FP32TFLOPs float64 `json:"fp32_mm_TFLOPs"`
}

// Results is the file bench/results/<date>-h200.json.
type Results struct {
	Date    string   `json:"date"`
	GPU     string   `json:"gpu"`
	CUDA    string   `json:"cuda"`
	Torch   string   `json:"torch"`
	Triton  string   `json:"triton"`
	Engine  string   `json:"engine"`
	Size    string   `json:"size"`
	Commit  string   `json:"commit,omitempty"`
	Ceiling Ceilings `json:"ceilings"`
	// Modes are Strata's modes, in table order.
	Modes     []string         `json:"strata_modes"`
	Workloads []WorkloadResult `json:"workloads"`
}

// WorkloadResult is one workload's row of the results.
type WorkloadResult struct {
	Name        string                 `json:"name"`
	Summary     string                 `json:"summary"`
	Shape       string                 `json:"shape"`
	Bytes       int64                  `json:"bytes,omitempty"`
	Flops       int64                  `json:"flops,omitempty"`
	Unsupported string                 `json:"unsupported,omitempty"`
	Strata      map[string]*StrataMode `json:"strata"`
	Torch       map[string]*TorchMode  `json:"torch"`
	// Correctness compares Strata's default-mode results with PyTorch's
	// eager results on the same inputs (the worst over all outputs). For a
	// model row, OK says every output passed (TensorCheck.Pass: within Tol
	// of PyTorch, or by PyTorch's accuracy criterion against its float32
	// run; bench/modelcheck.go).
	Correctness *Check `json:"correctness,omitempty"`
	// Reference, for the rows PyTorch also runs in float32 (models_torch.py
	// writes NAME.f32.safetensors), holds Strata's and PyTorch's errors
	// against that float32 result (each side's worst output).
	Reference *ReferenceCheck `json:"reference,omitempty"`
	// Tensors, for a model row, compares each output apart (Correctness
	// and Reference hold the worst of them): which outputs are off, and
	// where.
	Tensors []TensorCheck `json:"tensors,omitempty"`
	// Ratios are Strata time over PyTorch time (below 1: Strata is faster):
	// "default" (Strata default ÷ torch.compile default), "best" (fastest
	// Strata mode ÷ fastest torch.compile mode), "eager" (Strata default ÷
	// eager), "first_call" and, for dynamic workloads, "total".
	Ratios map[string]float64 `json:"ratios,omitempty"`
	// Rate is Strata default's GB/s (memory-bound workloads), TFLOP/s or,
	// for a decoding row, tokens/s (TorchRate torch.compile's), and
	// CeilingFraction that rate over the measured copy bandwidth or bf16
	// matrix rate.
	Rate            float64 `json:"rate,omitempty"`
	RateUnit        string  `json:"rate_unit,omitempty"`
	TorchRate       float64 `json:"torch_rate,omitempty"`
	CeilingFraction float64 `json:"ceiling_fraction,omitempty"`
}

// readJSON decodes the JSON file at path into v.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeJSON encodes v, indented, to path.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadResults reads a results file.
func ReadResults(path string) (*Results, error) {
	var r Results
	if err := readJSON(path, &r); err != nil {
		return nil, err
	}
	if len(r.Workloads) == 0 {
		return nil, fmt.Errorf("%s: no workloads", path)
	}
	return &r, nil
}

// ReferenceCheck compares Strata's and PyTorch's results with a float32
// PyTorch run of the same model and inputs.
type ReferenceCheck struct {
	Strata Check `json:"strata"`
	Torch  Check `json:"torch"`
	// AsAccurate: on every output, Strata's max_scaled and norm_rel are
	// at most PyTorch's.
	AsAccurate bool `json:"as_accurate"`
}
