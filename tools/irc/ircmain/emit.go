package ircmain

import (
	"bytes"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/exec"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// targetFlags are the flags of --emit=llvm and --emit=ptx.
type targetFlags struct {
	ptxBackend string
	ptxTarget  string
	ptxVersion string
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.ptxBackend, "ptx-backend", nvptx.DefaultBackend, "PTX `backend` of --emit=ptx: native (built in) or llc (runs LLVM's llc)")
	fs.StringVar(&f.ptxTarget, "ptx-target", nvptx.DefaultTarget, "PTX target `arch` of --emit=ptx: "+strings.Join(ptxTargets(), ", ")+" (sm_90a: Hopper-only code such as gpu.wgmma)")
	fs.StringVar(&f.ptxVersion, "ptx-version", "", "PTX ISA `version` written in .version (default "+nvptx.DefaultPTXVersion+", "+nvptx.WGMMAPTXVersion+" for sm_90a)")
}

// check validates the flags before any input is read.
func (f *targetFlags) check() error {
	if _, err := nvptx.New(f.ptxBackend); err != nil {
		return err
	}
	if slices.Contains(ptxTargets(), f.ptxTarget) {
		return nil
	}
	return fmt.Errorf("unknown --ptx-target %q (want %s)", f.ptxTarget, strings.Join(ptxTargets(), ", "))
}

// ptxTargets lists the values --ptx-target takes.
func ptxTargets() []string { return slices.Concat(nvptx.Targets, nvptx.ArchTargets) }

// emitTarget writes the LLVM IR or the PTX of the gpu.modules in mod, as one
// module, so the PTX is one file ptxas accepts.
func emitTarget(out *bytes.Buffer, mod *ir.Operation, kind string, f *targetFlags) error {
	mods := llvm.GPUModules(mod)
	if len(mods) == 0 {
		return ir.Errorf(mod.Loc(), "--emit=%s: the program has no kernels (no gpu.module after lower-to-gpu)", kind)
	}
	m, err := llvm.TranslateAll(mods)
	if err != nil {
		return err
	}
	if kind == "llvm" {
		out.WriteString(m.String())
		return nil
	}
	backend, err := nvptx.New(f.ptxBackend)
	if err != nil {
		return err
	}
	// The modules are one PTX file: one target for all, the
	// architecture-specific one that a module asks for (sm_90a for
	// gpu.wgmma) when --ptx-target allows it, as exec.Compile does.
	opts := nvptx.Options{Target: f.ptxTarget, PTXVersion: f.ptxVersion}
	for _, g := range mods {
		mo, err := exec.ModuleTarget(g, nvptx.Options{Target: f.ptxTarget, PTXVersion: f.ptxVersion})
		if err != nil {
			return err
		}
		if mo.Target != f.ptxTarget {
			opts = mo
		}
	}
	ptx, err := backend.Compile(m, opts)
	if err != nil {
		return ir.Errorf(mods[0].Loc(), "%s PTX backend: %v", backend.Name(), err)
	}
	out.WriteString(ptx)
	return nil
}
