package llvm_test

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/targets/llvm"
	"github.com/strata-ir/strata/targets/nvptx"
)

// kernels is test/targets/kernels.mlir: a row reduction (loop.for,
// shuffles, workgroup memory, barrier, loop.if) and a pointwise kernel
// (f16, bf16 and i1 memrefs, every math sequence).
func kernels(t *testing.T) *ir.Operation {
	t.Helper()
	src, err := os.ReadFile("../../test/targets/kernels.mlir")
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, string(src))
}

func parse(t *testing.T, src string) *ir.Operation {
	t.Helper()
	m, err := ir.Parse(ir.NewContext(dialects.All()...), src, ir.ParseOptions{Filename: "in.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs an LLVM tool on text, skipping when it is missing (failing
// under CI=true).
func run(t *testing.T, text string, tool string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found", tool)
		}
		t.Skipf("%s not found", tool)
	}
	f := filepath.Join(t.TempDir(), "m.ll")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, append(args, f)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s rejected the module: %v\n%s\n%s", tool, err, out, text)
	}
	return string(out)
}

func TestTranslateIsValidLLVM(t *testing.T) {
	mods := llvm.GPUModules(kernels(t))
	if len(mods) != 1 {
		t.Fatalf("got %d gpu.modules, want 1", len(mods))
	}
	m, err := llvm.Translate(mods[0])
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for _, want := range []string{
		`target triple = "nvptx64-nvidia-cuda"`,
		`@row_sum_wg0 = addrspace(3) global [32 x float] undef`,
		`!"kernel", i32 1}`,
		`phi float`,
		`call float @llvm.nvvm.ex2.approx.f(`,
		`load half, half addrspace(1)*`,
		`store i8`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("module lacks %q", want)
		}
	}
	run(t, text, "opt-14", "-verify", "-o", os.DevNull)
	ptx := run(t, text, "llc-19", "-march=nvptx64", "-mcpu=sm_90", "-o", "-")
	if err := nvptx.CheckNoExtern(ptx); err != nil {
		t.Error(err)
	}
	if _, err := (nvptx.Native{}).Compile(m, nvptx.Options{}); err != nil {
		t.Errorf("native backend: %v", err)
	}
}

func TestTranslateErrors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"2-D memref", `gpu.func @k(%m: memref<4x4xf32>) kernel {
      gpu.return
    }`, "in.mlir:3:5: error: kernel @k, parameter 0: kernels take 1-D identity-layout memrefs"},
		{"unsupported op", `gpu.func @k(%m: memref<?xf32>) kernel {
      %c = arith.constant 0 : index
      %x = loop.load %m[%c] : memref<?xf32>
      %y = math.sinh %x : f32
      gpu.return
    }`, "in.mlir:6:12: error: 'math.sinh': op is not supported"},
		{"device function", `gpu.func @f() {
      gpu.return
    }`, "device functions are not supported"},
		{"too much shared memory", `gpu.func @k() workgroup(%b : memref<60000xf32, 3>) kernel {
      gpu.return
    }`, "kernel @k: 240000 bytes of workgroup memory, more than the 232448 a block may have"},
		{"f64 exp", `gpu.func @k(%m: memref<?xf64>) kernel {
      %c = arith.constant 0 : index
      %x = loop.load %m[%c] : memref<?xf64>
      %y = math.exp %x : f64
      gpu.return
    }`, "'math.exp': only f32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "module attributes {gpu.container_module} {\n  gpu.module @g {\n    " + c.body + "\n  }\n}\n"
			_, err := llvm.Translate(llvm.GPUModules(parse(t, src))[0])
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestApproxExp2: math.exp2 with fastmath<afn> may flush subnormal
// results, so it becomes the single-instruction ex2.approx.ftz; without
// the flag it keeps ex2.approx (exact on subnormal results).
func TestApproxExp2(t *testing.T) {
	for _, tc := range []struct{ flags, want, deny string }{
		{"fastmath<afn>", "@llvm.nvvm.ex2.approx.ftz.f(", "@llvm.nvvm.ex2.approx.f("},
		{"fastmath<fast>", "@llvm.nvvm.ex2.approx.ftz.f(", "@llvm.nvvm.ex2.approx.f("},
		{"fastmath<nnan>", "@llvm.nvvm.ex2.approx.f(", "ftz"},
		{"", "@llvm.nvvm.ex2.approx.f(", "ftz"},
	} {
		t.Run(tc.flags, func(t *testing.T) {
			m, err := llvm.Translate(parse(t, `gpu.module @m {
  gpu.func @k(%a: memref<16xf32>) kernel {
    %t = gpu.thread_id x
    %x = loop.load %a[%t] : memref<16xf32>
    %y = math.exp2 %x `+tc.flags+` : f32
    loop.store %y, %a[%t] : memref<16xf32>
    gpu.return
  }
}`).Region(0).Front().First())
			if err != nil {
				t.Fatal(err)
			}
			text := m.String()
			if !strings.Contains(text, tc.want) || strings.Contains(text, tc.deny) {
				t.Errorf("want %q and no %q in\n%s", tc.want, tc.deny, text)
			}
		})
	}
}

// TestLaunchBounds: a kernel's nvvm.maxntid and nvvm.minctasm become its
// "maxntidx" and "minctasm" annotations, which the native backend writes
// as .maxntid and .minnctapersm (and llc reads); bad values are errors.
func TestLaunchBounds(t *testing.T) {
	src := `module attributes {gpu.container_module} {
  gpu.module @g {
    gpu.func @k(%m: memref<?xf32>) kernel attributes {nvvm.maxntid = 128 : i64, nvvm.minctasm = 4 : i64} {
      gpu.return
    }
    gpu.func @plain(%m: memref<?xf32>) kernel {
      gpu.return
    }
  }
}
`
	m, err := llvm.Translate(llvm.GPUModules(parse(t, src))[0])
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for _, want := range []string{`@k, !"maxntidx", i32 128}`, `@k, !"minctasm", i32 4}`} {
		if !strings.Contains(text, want) {
			t.Errorf("module lacks %q\n%s", want, text)
		}
	}
	ptx, err := nvptx.Native{}.Compile(m, nvptx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, plain, _ := strings.Cut(ptx, ".entry plain(")
	if !strings.Contains(k, ")\n.maxntid 128, 1, 1\n.minnctapersm 4\n{") {
		t.Errorf("native PTX lacks the launch bounds of @k\n%s", ptx)
	}
	if strings.Contains(plain, ".maxntid") || strings.Contains(plain, ".minnctapersm") {
		t.Errorf("@plain got launch bounds\n%s", ptx)
	}
	if llc := run(t, text, "llc-19", "-march=nvptx64", "-mcpu=sm_90", "-o", "-"); !strings.Contains(llc, ".maxntid 128, 1, 1") || !strings.Contains(llc, ".minnctapersm 4") {
		t.Errorf("llc's PTX lacks the launch bounds\n%s", llc)
	}
	for _, bad := range [][2]string{{`nvvm.maxntid = 128 : i64`, `nvvm.maxntid = 0 : i64`}, {`nvvm.minctasm = 4 : i64`, `nvvm.minctasm = "4"`}} {
		src := strings.Replace(src, bad[0], bad[1], 1)
		if _, err := llvm.Translate(llvm.GPUModules(parse(t, src))[0]); err == nil || !strings.Contains(err.Error(), "want a positive integer") {
			t.Errorf("%s: got %v", bad[1], err)
		}
	}
}

// TestTanhSequence: f32 tanh's exp form takes |x|·(2·log2 e) in one
// product and 1 − 2r as one fma (both bit for bit the two-step forms, as
// doubling is exact): 5 products (4 of them the small-|x| series), one
// ex2, one rcp, one fma, no subtraction.
func TestTanhSequence(t *testing.T) {
	m, err := llvm.Translate(parse(t, `gpu.module @m {
  gpu.func @k(%a: memref<16xf32>) kernel {
    %t = gpu.thread_id x
    %x = loop.load %a[%t] : memref<16xf32>
    %y = math.tanh %x : f32
    loop.store %y, %a[%t] : memref<16xf32>
    gpu.return
  }
}`).Region(0).Front().First())
	if err != nil {
		t.Fatal(err)
	}
	text := m.String()
	for s, want := range map[string]int{" fmul ": 5, "call float @llvm.nvvm.ex2.approx.f(": 1, "call float @llvm.nvvm.rcp.approx.ftz.f(": 1, "call float @llvm.fma.f32(": 1, " fsub ": 0} {
		if got := strings.Count(text, s); got != want {
			t.Errorf("%d of %q, want %d in\n%s", got, s, want, text)
		}
	}
}

// TestTanhFoldsAreExact checks in float32 arithmetic that the folded
// forms of TestTanhSequence round as the two-step ones: |x|·2 then ·log2 e
// against |x|·(2·log2 e), and 1 − 2r against one rounding of 1 − 2r (an
// fma), over random and extreme values.
func TestTanhFoldsAreExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l2e := float32(math.Log2E)
	l2e2 := float32(2 * math.Log2E)
	for i := range 1 << 20 {
		a := math.Float32frombits(rng.Uint32() &^ (1 << 31)) // |x|: any non-negative f32
		if i < 4 {
			a = []float32{0, math.SmallestNonzeroFloat32, math.MaxFloat32, float32(math.Inf(1))}[i]
		}
		two := a * 2
		if x, y := two*l2e, a*l2e2; math.Float32bits(x) != math.Float32bits(y) && !(x != x && y != y) {
			t.Fatalf("|x| = %g: (|x|·2)·log2 e = %g, |x|·(2·log2 e) = %g", a, x, y)
		}
		r := rng.Float32() // rcp of e + 1 ≥ 1: in (0, 1]
		if i < 2 {
			r = []float32{1, math.SmallestNonzeroFloat32}[i]
		}
		twoR := 2 * r
		if x, y := 1-twoR, float32(math.FMA(-2, float64(r), 1)); x != y {
			t.Fatalf("r = %g: 1 − 2r = %g, fma = %g", r, x, y)
		}
	}
}
