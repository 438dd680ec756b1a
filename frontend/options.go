package frontend

import (
	"fmt"
	"io"
	"strings"
)

// ModeInfo describes a compile mode.
type ModeInfo struct {
	Name Mode
	Doc  string
}

// modes lists the modes, in the order ListModes prints them, with what
// each does on each built-in backend.
var modes = []ModeInfo{
	{ModeDefault, "balance compile time and speed (the default). eager, aot_eager, interp: the graph runs in the reference interpreter (interp after " + DefaultPipeline + "). nvptx: kernels launched one by one; the driver's JIT compiles quick code first and the final code in the background (tiered); bf16/f16 matmuls on cuBLASLt when it loads"},
	{ModeReduceOverhead, "cut per-call launch overhead. eager, aot_eager, interp: as default. nvptx: as default, but the final code is JIT-compiled at Compile and each call replays a CUDA graph captured per input signature (a launch plan that cannot be captured runs launch by launch; STRATA_LOGS=cudagraphs says why)"},
	{ModeMaxAutotune, "eager, aot_eager, interp: as default. nvptx in the frontend: as reduce-overhead; kernel configurations are not autotuned by Compile (irc run --backend nvptx --mode max-autotune autotunes them, package runtime/autotune)"},
	{ModeMaxAutotuneNoCUDAGraphs, "eager, aot_eager, interp: as default. nvptx in the frontend: as default (no CUDA graphs); kernel configurations are not autotuned by Compile (irc run --mode max-autotune-no-cudagraphs autotunes them)"},
}

// ListModes returns the compile modes.
func ListModes() []ModeInfo { return modes }

func modeNames() string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m.Name)
	}
	return strings.Join(names, ", ")
}

// OptionInfo describes one field of Options.
type OptionInfo struct {
	Name, Type, Default, Doc string
}

// ListOptions returns every field of Options with its type, default and
// meaning.
func ListOptions() []OptionInfo {
	return []OptionInfo{
		{"Mode", "Mode (string)", string(ModeDefault), "compile mode: " + modeNames()},
		{"Dynamic", "Dynamic (auto|true|false)", DynamicAuto.String(),
			"dynamic shapes: auto compiles static sizes first and marks a dim dynamic after its size changes; true makes every dim of size ≥ 2 dynamic; false keeps all static"},
		{"Fullgraph", "bool", "false", "make the first graph break an error naming its reason and file:line"},
		{"Backend", "string", `"" (nvptx with a GPU, else interp)`, "the backend that compiles graphs (see ListBackends); empty picks nvptx where the CUDA driver loads, falling back to interp with one warning when it finds no GPU"},
		{"BackendOptions", "map[string]any", "nil", "options passed to the backend (interp, eager: pipeline, a pass pipeline string)"},
		{"RecompileLimit", "int", "8", "graphs compiled per position in the function; past it, graphs not compiled yet run eagerly (those compiled keep serving the calls that record them)"},
	}
}

// WriteBackends writes ListBackends, one "name: doc" line each.
func WriteBackends(w io.Writer) error {
	for _, b := range ListBackends() {
		if _, err := fmt.Fprintf(w, "%s: %s\n", b.Name, b.Doc); err != nil {
			return err
		}
	}
	return nil
}

// WriteModes writes ListModes, one "name: doc" line each.
func WriteModes(w io.Writer) error {
	for _, m := range ListModes() {
		if _, err := fmt.Fprintf(w, "%s: %s\n", m.Name, m.Doc); err != nil {
			return err
		}
	}
	return nil
}

// WriteOptions writes ListOptions, one "name (type, default d): doc" line
// each.
func WriteOptions(w io.Writer) error {
	for _, o := range ListOptions() {
		if _, err := fmt.Fprintf(w, "%s (%s, default %s): %s\n", o.Name, o.Type, o.Default, o.Doc); err != nil {
			return err
		}
	}
	return nil
}
