package exec

import (
	"fmt"
	"strings"
)

// Mode is how a program is run, after torch.compile's modes (DESIGN §9).
type Mode string

// The modes.
const (
	// ModeDefault launches the plan's kernels one by one on each call.
	ModeDefault Mode = "default"
	// ModeReduceOverhead captures each input shape's launches into a CUDA
	// graph once and replays it: one driver call per call.
	ModeReduceOverhead Mode = "reduce-overhead"
	// ModeMaxAutotune autotunes the kernels' launch parameters, then runs
	// as ModeReduceOverhead.
	ModeMaxAutotune Mode = "max-autotune"
	// ModeMaxAutotuneNoCUDAGraphs autotunes and launches kernel by kernel.
	ModeMaxAutotuneNoCUDAGraphs Mode = "max-autotune-no-cudagraphs"
)

// Modes lists the modes in the order help texts print them.
var Modes = []Mode{ModeDefault, ModeReduceOverhead, ModeMaxAutotune, ModeMaxAutotuneNoCUDAGraphs}

// ParseMode returns the mode called s; "" is ModeDefault.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeDefault, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown mode %q (want %s)", s, strings.Join(names, ", "))
}

// CUDAGraphs reports whether the mode replays CUDA graphs.
func (m Mode) CUDAGraphs() bool { return m == ModeReduceOverhead || m == ModeMaxAutotune }

// Autotunes reports whether the mode autotunes launch parameters.
func (m Mode) Autotunes() bool { return m == ModeMaxAutotune || m == ModeMaxAutotuneNoCUDAGraphs }
