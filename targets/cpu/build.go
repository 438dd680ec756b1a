package cpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	xcpu "golang.org/x/sys/cpu"
)

// ErrNoTools is wrapped by the errors of FindTools: LLVM's opt and llc or
// a linker are missing, so the cpu target cannot compile.
var ErrNoTools = errors.New("cpu target: compiler tools missing")

// Tools are the external programs that turn LLVM IR into a shared
// library: opt (the optimisation pipeline: vectorizer, unroller), llc
// (code generation to an object file) and a linker driver (gcc or cc,
// whose -shared links the C library's math functions), or ld.lld.
type Tools struct {
	Opt, LLC, Linker string
}

// FindTools locates the tools: opt and llc in $STRATA_LLVM_BIN when it is
// set (and only there), else in /usr/lib/llvm-19/bin, else opt-19/llc-19
// and opt/llc on PATH; the linker is $CC, else gcc, cc, ld.lld-19 or
// ld.lld on PATH. The error, wrapping ErrNoTools, names what is missing
// and how to install it.
func FindTools() (Tools, error) {
	var t Tools
	var missing []string
	llvm := func(name string) string {
		if dir := os.Getenv("STRATA_LLVM_BIN"); dir != "" {
			p := filepath.Join(dir, name)
			if isExec(p) {
				return p
			}
			return ""
		}
		if p := "/usr/lib/llvm-19/bin/" + name; isExec(p) {
			return p
		}
		for _, n := range []string{name + "-19", name} {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
		}
		return ""
	}
	if t.Opt = llvm("opt"); t.Opt == "" {
		missing = append(missing, "opt")
	}
	if t.LLC = llvm("llc"); t.LLC == "" {
		missing = append(missing, "llc")
	}
	names := []string{"gcc", "cc", "ld.lld-19", "ld.lld"}
	if cc := os.Getenv("CC"); cc != "" {
		names = append([]string{cc}, names...)
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			t.Linker = p
			break
		}
	}
	if t.Linker == "" {
		missing = append(missing, "a linker (gcc, cc or ld.lld)")
	}
	if len(missing) > 0 {
		where := "/usr/lib/llvm-19/bin or PATH"
		if dir := os.Getenv("STRATA_LLVM_BIN"); dir != "" {
			where = "STRATA_LLVM_BIN=" + dir
		}
		return t, fmt.Errorf("%w: %s not found in %s (scripts/setup-tools.sh installs LLVM 19; Debian packages llvm-19 and gcc)",
			ErrNoTools, strings.Join(missing, ", "), where)
	}
	return t, nil
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// HostCPU returns the -mcpu the host's features call for: skylake-avx512
// with AVX-512 (F, BW, DQ, VL), haswell with AVX2 and FMA, x86-64
// otherwise. $STRATA_CPU_MCPU overrides it.
func HostCPU() string {
	if s := os.Getenv("STRATA_CPU_MCPU"); s != "" {
		return s
	}
	x := xcpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL:
		return "skylake-avx512"
	case x.HasAVX2 && x.HasFMA:
		return "haswell"
	}
	return "x86-64"
}

// VectorBytes returns the width of the vector registers -mcpu=cpu has.
func VectorBytes(cpu string) int {
	switch cpu {
	case "skylake-avx512", "icelake-server", "sapphirerapids", "cascadelake", "znver4":
		return 64
	case "haswell", "skylake", "znver2", "znver3", "x86-64-v3":
		return 32
	}
	return 16
}

// Build compiles LLVM IR text into the shared library out, for -mcpu=cpu:
// opt -O3 (with the C library's vector math, libmvec; full-width vectors
// on AVX-512), llc -O3 into a
// position-independent object, and the linker. Work files go to a
// temporary directory next to out; out appears complete or not at all.
func Build(t Tools, llvmIR, cpu, out string) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".build-")
	if err != nil {
		return fmt.Errorf("cpu target: %w", err)
	}
	defer os.RemoveAll(dir)
	ll := filepath.Join(dir, "k.ll")
	bc := filepath.Join(dir, "k.bc")
	obj := filepath.Join(dir, "k.o")
	so := filepath.Join(dir, "k.so")
	if err := os.WriteFile(ll, []byte(llvmIR), 0o644); err != nil {
		return fmt.Errorf("cpu target: %w", err)
	}
	target := []string{"-O3", "-mtriple=" + Triple, "-mcpu=" + cpu}
	if VectorBytes(cpu) == 64 {
		// LLVM vectorizes for 256-bit registers on AVX-512 CPUs unless
		// told otherwise; the kernels want the full width.
		target = append(target, "-mattr=-prefer-256-bit")
	}
	if err := run(t.Opt, append(target, "-vector-library=LIBMVEC-X86", ll, "-o", bc)...); err != nil {
		return err
	}
	if err := run(t.LLC, append(target, "-relocation-model=pic", "-filetype=obj", bc, "-o", obj)...); err != nil {
		return err
	}
	var link []string
	if strings.Contains(filepath.Base(t.Linker), "ld.lld") {
		link = []string{"-shared", "-o", so, obj, "-L/usr/lib/x86_64-linux-gnu", "-L/lib/x86_64-linux-gnu", "-lmvec", "-lm", "-lc"}
	} else {
		link = []string{"-shared", "-o", so, obj, "-lmvec", "-lm"}
	}
	if err := run(t.Linker, link...); err != nil {
		return err
	}
	if err := os.Rename(so, out); err != nil {
		return fmt.Errorf("cpu target: %w", err)
	}
	return nil
}

func run(tool string, args ...string) error {
	cmd := exec.Command(tool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return fmt.Errorf("cpu target: %s: %v: %s", filepath.Base(tool), err, msg)
	}
	return nil
}
