package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vaddPTX computes c[i] = a[i] + s*b[i] for i < n. Written by hand so the
// GPU tests depend on no code generator; its parameters exercise the
// kernel ABI's pointer, f32 and index kinds.
const vaddPTX = `.version 7.8
.target sm_90
.address_size 64

.visible .entry vadd(
	.param .u64 vadd_a,
	.param .u64 vadd_b,
	.param .u64 vadd_c,
	.param .f32 vadd_s,
	.param .u64 vadd_n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .f32 %f<5>;
	.reg .b64 %rd<14>;

	ld.param.u64 %rd1, [vadd_a];
	ld.param.u64 %rd2, [vadd_b];
	ld.param.u64 %rd3, [vadd_c];
	ld.param.f32 %f1, [vadd_s];
	ld.param.u64 %rd4, [vadd_n];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mul.wide.u32 %rd5, %r1, %r2;
	cvt.u64.u32 %rd6, %r3;
	add.u64 %rd7, %rd5, %rd6;
	setp.ge.u64 %p1, %rd7, %rd4;
	@%p1 bra DONE;
	shl.b64 %rd8, %rd7, 2;
	cvta.to.global.u64 %rd9, %rd1;
	add.u64 %rd10, %rd9, %rd8;
	cvta.to.global.u64 %rd11, %rd2;
	add.u64 %rd12, %rd11, %rd8;
	ld.global.f32 %f2, [%rd10];
	ld.global.f32 %f3, [%rd12];
	fma.rn.f32 %f4, %f1, %f3, %f2;
	cvta.to.global.u64 %rd13, %rd3;
	add.u64 %rd13, %rd13, %rd8;
	st.global.f32 [%rd13], %f4;
DONE:
	ret;
}
`

// badPTX uses a register it never declares: the JIT must reject it with a
// ptxas-style message naming the line.
const badPTX = `.version 7.8
.target sm_90
.address_size 64

.visible .entry broken()
{
	.reg .f32 %f<2>;
	add.f32 %f1, %f1, %f7;
	ret;
}
`

// findPTXAS returns the offline ptxas that make test installs, or "" when
// there is none.
func findPTXAS() string {
	if p := os.Getenv("STRATA_PTXAS"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../.cache/tools/bin/ptxas"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("ptxas"); err == nil {
		return p
	}
	return ""
}

// ptxas assembles src for sm_90 and returns its combined output.
func ptxas(t *testing.T, src string) (string, error) {
	t.Helper()
	bin := findPTXAS()
	if bin == "" {
		t.Skip("no ptxas: run scripts/setup-tools.sh or set STRATA_PTXAS")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "k.ptx")
	if err := os.WriteFile(in, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-arch=sm_90", "-o", filepath.Join(dir, "k.cubin"), in).CombinedOutput()
	return string(out), err
}

// The GPU tests' PTX is checked here with the offline assembler, so a typo
// in it shows up on machines without a GPU too.
func TestTestPTXAssembles(t *testing.T) {
	if out, err := ptxas(t, vaddPTX); err != nil {
		t.Fatalf("ptxas rejects vaddPTX: %v\n%s", err, out)
	}
	out, err := ptxas(t, badPTX)
	if err == nil || !strings.Contains(out, "error") {
		t.Fatalf("ptxas accepted badPTX (%v):\n%s", err, out)
	}
}
