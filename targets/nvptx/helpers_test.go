package nvptx

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// Types the tests build with.
var (
	f32   = types.Float
	i32   = types.I32
	i64   = types.I64
	gF32  = types.NewPointer(types.Float)
	gHalf = types.NewPointer(types.Half)
	gI16  = types.NewPointer(types.I16)
	gI8   = types.NewPointer(types.I8)
	gV4   = types.NewPointer(types.NewVector(4, types.Float))
)

func init() {
	for _, t := range []*types.PointerType{gF32, gHalf, gI16, gI8, gV4} {
		t.AddrSpace = 1
	}
}

// newModule returns a module with the NVPTX triple and data layout.
func newModule() *llir.Module {
	m := llir.NewModule()
	m.DataLayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
	m.TargetTriple = "nvptx64-nvidia-cuda"
	return m
}

// kernel adds a kernel marked by the ptx_kernel calling convention.
func kernel(m *llir.Module, name string, params ...*llir.Param) *llir.Func {
	f := m.NewFunc(name, types.Void, params...)
	f.CallingConv = enum.CallingConvPTXKernel
	return f
}

// annotate marks f as a kernel with !nvvm.annotations instead.
func annotate(m *llir.Module, f *llir.Func) {
	def := &metadata.NamedDef{Name: "nvvm.annotations"}
	def.Nodes = append(def.Nodes, &metadata.Tuple{MetadataID: -1, Fields: []metadata.Field{f, &metadata.String{Value: "kernel"}, constant.NewInt(types.I32, 1)}})
	m.NamedMetadataDefs["nvvm.annotations"] = def
	m.MetadataDefs = append(m.MetadataDefs, def.Nodes[0].(metadata.Definition))
}

// declare returns the declaration of an intrinsic, adding it once.
func declare(m *llir.Module, name string, ret types.Type, params ...types.Type) *llir.Func {
	for _, f := range m.Funcs {
		if f.Name() == name {
			return f
		}
	}
	ps := make([]*llir.Param, len(params))
	for i, p := range params {
		ps[i] = llir.NewParam("", p)
	}
	return m.NewFunc(name, ret, ps...)
}

// sreg reads a special register as i64.
func sreg(m *llir.Module, b *llir.Block, name string) value.Value {
	r := b.NewCall(declare(m, "llvm.nvvm.read.ptx.sreg."+name, i32))
	return b.NewZExt(r, i64)
}

func c32(v int64) *constant.Int    { return constant.NewInt(i32, v) }
func c64(v int64) *constant.Int    { return constant.NewInt(i64, v) }
func cf(v float64) *constant.Float { return constant.NewFloat(f32, v) }

// tool finds an external tool or skips (fails under CI=true).
func tool(t *testing.T, envVar string, names ...string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		if p2 := filepath.Join(p, names[0]); fileExists(p2) {
			return p2
		}
	}
	_, file, _, _ := runtime.Caller(0)
	repo := filepath.Join(filepath.Dir(file), "..", "..")
	for _, n := range names {
		for _, dir := range []string{filepath.Join(repo, ".cache/tools/bin"), "/usr/lib/llvm-19/bin"} {
			if p := filepath.Join(dir, n); fileExists(p) {
				return p
			}
		}
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found (run scripts/setup-tools.sh)", names[0])
	}
	t.Skipf("%s not found (run scripts/setup-tools.sh)", names[0])
	return ""
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// assemble runs the offline ptxas on ptx for sm_90.
func assemble(t *testing.T, ptx string) {
	t.Helper()
	ptxas := tool(t, "STRATA_PTXAS", "ptxas")
	f := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(f, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ptxas, "-arch=sm_90", "-o", os.DevNull, f).CombinedOutput()
	if err != nil {
		t.Fatalf("ptxas rejected the PTX: %v\n%s\n%s", err, out, numbered(ptx))
	}
}

// numbered returns text with line numbers, for failure messages.
func numbered(s string) string {
	var b strings.Builder
	for i, l := range strings.Split(s, "\n") {
		fmt.Fprintf(&b, "%4d: %s\n", i+1, l)
	}
	return b.String()
}

var entryRE = regexp.MustCompile(`(?s)\.entry\s+(\S+)\s*\((.*?)\)`)

// signatures returns each kernel's name and .param list, normalized.
func signatures(ptx string) map[string][]string {
	sigs := map[string][]string{}
	for _, m := range entryRE.FindAllStringSubmatch(ptx, -1) {
		var ps []string
		for _, p := range strings.Split(m[2], ",") {
			if p = strings.Join(strings.Fields(p), " "); p != "" {
				ps = append(ps, p)
			}
		}
		sigs[m[1]] = ps
	}
	return sigs
}

// llirValue shortens value.Value in the test builders.
type llirValue = value.Value
