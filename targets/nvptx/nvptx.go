// Package nvptx turns the LLVM IR modules built by targets/llvm into PTX
// assembly for NVIDIA GPUs.
//
// Two backends sit behind one interface: Native, an instruction selector
// written in Go over the subset of LLVM IR that Strata's lowering produces
// (no external tool needed), and LLC, which runs LLVM's llc. Both take the
// module in memory as a github.com/llir/llvm module; neither parses LLVM
// text. Anything outside the native subset is reported as an error naming
// the instruction, and no backend returns PTX holding an `.extern`
// declaration (an unresolved call that only ptxas or the driver would
// reject) but that of the dynamic shared memory array.
package nvptx

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	llir "github.com/llir/llvm/ir"
)

// Options select the PTX that a backend emits.
type Options struct {
	// Target is the PTX target architecture: "sm_80", "sm_90" or
	// "sm_90a" (Hopper's architecture-specific features: the kernels of
	// gpu.wgmma need it). Empty means DefaultTarget.
	Target string
	// PTXVersion is the ISA version written in `.version`, such as "7.8".
	// Empty means DefaultPTXVersion (WGMMAPTXVersion for sm_90a).
	PTXVersion string
	// Jobs bounds the kernels the native backend generates at once, each
	// on its own goroutine; 0 means GOMAXPROCS. The text does not depend
	// on it.
	Jobs int
}

// DefaultTarget is the target used when Options.Target is empty.
const DefaultTarget = "sm_90"

// DefaultPTXVersion is the `.version` used when Options.PTXVersion is
// empty: ISA 7.8 (CUDA 11.8) knows sm_90 and every instruction the portable
// kernels use, so their PTX loads on drivers back to CUDA 11.8; the
// architecture-specific sm_90a needs WGMMAPTXVersion.
const DefaultPTXVersion = "7.8"

// WGMMAPTXVersion is the `.version` used for sm_90a when
// Options.PTXVersion is empty: ISA 8.0 is the first with sm_90a and
// wgmma, 8.1 (CUDA 12.1's ptxas; the driver of CUDA 13 JITs it) the first
// with red's vector forms (gpu.atomic_add of two values).
const WGMMAPTXVersion = "8.1"

// Targets lists the portable values of Options.Target.
var Targets = []string{"sm_80", "sm_90"}

// ArchTargets lists the architecture-specific values of Options.Target,
// whose PTX runs only on that architecture: sm_90a for gpu.wgmma.
var ArchTargets = []string{"sm_90a"}

// minVersion is the oldest PTX ISA (times ten) that knows each target.
var minVersion = map[string]int{"sm_80": 70, "sm_90": 78, "sm_90a": 80}

var versionRE = regexp.MustCompile(`^[1-9][0-9]?\.[0-9]$`)

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Target == "" {
		o.Target = DefaultTarget
	}
	if o.PTXVersion == "" {
		o.PTXVersion = DefaultPTXVersion
		if o.Target == "sm_90a" {
			o.PTXVersion = WGMMAPTXVersion
		}
	}
	known := false
	all := append(append([]string{}, Targets...), ArchTargets...)
	for _, t := range all {
		known = known || t == o.Target
	}
	if !known {
		return o, fmt.Errorf("unknown PTX target %q (want %s)", o.Target, strings.Join(all, ", "))
	}
	if !versionRE.MatchString(o.PTXVersion) {
		return o, fmt.Errorf("malformed PTX version %q (want MAJOR.MINOR, such as %s)", o.PTXVersion, DefaultPTXVersion)
	}
	var major, minor int
	fmt.Sscanf(o.PTXVersion, "%d.%d", &major, &minor)
	if min := minVersion[o.Target]; major*10+minor < min {
		return o, fmt.Errorf("PTX version %s is too old for %s (need %d.%d or later)", o.PTXVersion, o.Target, min/10, min%10)
	}
	return o, nil
}

// Backend compiles an LLVM IR module to PTX text.
type Backend interface {
	// Name is the backend's --ptx-backend value.
	Name() string
	// Compile returns the PTX of m's kernels.
	Compile(m *llir.Module, opts Options) (string, error)
}

// backends maps --ptx-backend values to constructors.
var backends = map[string]func() Backend{
	"native": func() Backend { return Native{} },
	"llc":    func() Backend { return LLC{} },
}

// DefaultBackend is the backend used when none is named.
const DefaultBackend = "native"

// BackendNames returns the names New accepts, sorted.
func BackendNames() []string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New returns the backend with the given name ("" means DefaultBackend).
func New(name string) (Backend, error) {
	if name == "" {
		name = DefaultBackend
	}
	mk, ok := backends[name]
	if !ok {
		return nil, fmt.Errorf("unknown PTX backend %q (want %s)", name, strings.Join(BackendNames(), " or "))
	}
	return mk(), nil
}

// ErrExtern reports PTX that declares an external symbol.
var ErrExtern = errors.New("PTX declares an unresolved .extern symbol")

var (
	externRE = regexp.MustCompile(`(?m)^\s*\.extern\b.*$`)
	// dynamicSharedRE is the one external declaration that is resolved:
	// the dynamic shared memory array, sized by the launch.
	dynamicSharedRE = regexp.MustCompile(`^\s*\.extern\s+\.shared\s+\.align\s+\d+\s+\.b8\s+[A-Za-z_$%][A-Za-z0-9_$]*\[\];\s*$`)
)

// CheckNoExtern returns an error wrapping ErrExtern, quoting the first
// offending line, when ptx holds an `.extern` declaration other than a
// zero-length `.shared` byte array (dynamic shared memory). Such a symbol
// is usually a misspelt or unsupported intrinsic that llc turned into a
// call.
func CheckNoExtern(ptx string) error {
	for _, line := range externRE.FindAllString(ptx, -1) {
		if !dynamicSharedRE.MatchString(line) {
			return fmt.Errorf("%w: %s", ErrExtern, strings.TrimSpace(line))
		}
	}
	return nil
}
