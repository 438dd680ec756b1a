package ircmain

import (
	"bytes"
	"flag"
	"fmt"

	"github.com/strata-ir/strata/ir"
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
	fs.StringVar(&f.ptxTarget, "ptx-target", nvptx.DefaultTarget, "PTX target `arch` of --emit=ptx: sm_80 or sm_90")
	fs.StringVar(&f.ptxVersion, "ptx-version", nvptx.DefaultPTXVersion, "PTX ISA `version` written in .version")
}

// check validates the flags before any input is read.
func (f *targetFlags) check() error {
	if _, err := nvptx.New(f.ptxBackend); err != nil {
		return err
	}
	for _, t := range nvptx.Targets {
		if t == f.ptxTarget {
			return nil
		}
	}
	return fmt.Errorf("unknown --ptx-target %q (want sm_80 or sm_90)", f.ptxTarget)
}

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
	ptx, err := backend.Compile(m, nvptx.Options{Target: f.ptxTarget, PTXVersion: f.ptxVersion})
	if err != nil {
		return ir.Errorf(mods[0].Loc(), "%s PTX backend: %v", backend.Name(), err)
	}
	out.WriteString(ptx)
	return nil
}
