package nvptx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
)

// asmModule is a kernel that loads two floats x and y, passes them to
// inline asm with the given text and constraints (x tied or not, per
// cons) and stores the results (and x again at p[2] with keepX).
func asmModule(text, cons string, outs int, keepX ...bool) *llir.Module {
	m := newModule()
	p := llir.NewParam("p", gF32)
	f := kernel(m, "k", p)
	b := f.NewBlock("entry")
	x := b.NewLoad(f32, p)
	q := b.NewGetElementPtr(f32, p, constant.NewInt(i64, 1))
	y := b.NewLoad(f32, q)
	ret := types.Type(types.Void)
	if outs == 1 {
		ret = f32
	} else if outs > 1 {
		ret = types.NewStruct(f32, f32)
	}
	ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(ret, f32, f32)), text, cons)
	ia.SideEffect = true
	r := b.NewCall(ia, x, y)
	switch outs {
	case 1:
		b.NewStore(r, p)
	case 2:
		b.NewStore(b.NewExtractValue(r, 0), p)
		b.NewStore(b.NewExtractValue(r, 1), q)
	}
	if len(keepX) > 0 && keepX[0] {
		b.NewStore(x, b.NewGetElementPtr(f32, p, constant.NewInt(i64, 2)))
	}
	b.NewRet(nil)
	return m
}

// TestInlineAsm selects inline PTX (targets/llvm writes gpu.wgmma so):
// operands substituted, a tied argument copied into its output first,
// "$$" a dollar sign, and the malformed ones refused. The PTX assembles.
func TestInlineAsm(t *testing.T) {
	// x used again: it is copied into its output before the text; y is
	// read where it is.
	ptx, err := Native{}.Compile(asmModule("add.rn.f32 $0, $0, $3; // $$ and $1", "=f,=f,0,f", 2, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(ptx, "\n")
	var at int
	for i, l := range lines {
		if strings.Contains(l, "add.rn.f32") {
			at = i
		}
	}
	if at == 0 || !strings.HasPrefix(strings.TrimSpace(lines[at-1]), "mov.f32 %f") || !strings.Contains(lines[at], "// $ and %f") {
		t.Errorf("inline asm not selected as expected:\n%s", ptx)
	}
	assemble(t, ptx)
	// x dies at the asm: its output takes x's register, no mov (tieInPlace).
	inPlace, err := Native{}.Compile(asmModule("add.rn.f32 $0, $0, $3;", "=f,=f,0,f", 2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(inPlace, "mov.f32") || !strings.Contains(inPlace, "add.rn.f32 %f0, %f0, %f1;") {
		t.Errorf("the dying tied argument was copied:\n%s", inPlace)
	}
	// A text that names no operand, outputs tied to the arguments in
	// order (gpu.wgmma_wait): the outputs are the arguments' registers.
	wait, err := Native{}.Compile(asmModule("wgmma.wait_group.sync.aligned 1;", "=f,=f,0,1", 2, true), Options{Target: "sm_90a"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(wait, "mov.f32") || !strings.Contains(wait, "\twgmma.wait_group.sync.aligned 1;\n") || !strings.Contains(wait, "st.global.f32 [%rd0+4], %f1;") {
		t.Errorf("wait asm not aliased:\n%s", wait)
	}
	assemble90a(t, wait)
	fence, err := Native{}.Compile(asmModule("fence.proxy.async.shared::cta;", "f,f", 0), Options{Target: "sm_90a"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fence, "\tfence.proxy.async.shared::cta;\n") || !strings.Contains(fence, ".target sm_90a\n") || !strings.Contains(fence, ".version "+WGMMAPTXVersion+"\n") {
		t.Errorf("fence or target missing:\n%s", fence)
	}
	for _, c := range []struct{ text, cons, want string }{
		{"mov.f32 $0, $5;", "=f,f,f", "bad operand reference"},
		{"mov.f32 $0, $1;", "=f,f", "2 constraints for 1 outputs and 2 arguments"},
		{"mov.f32 $0, $1;", "=f,3,f", "tied to output 3"},
		{"mov.f32 $0, $1;", "=f,m,f", `constraint "m" is not supported`},
	} {
		if _, err := (Native{}).Compile(asmModule(c.text, c.cons, 1), Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q with %q: error %v, want %q", c.text, c.cons, err, c.want)
		}
	}
	if _, err := (Native{}).Compile(asmModule("", "", 0), Options{Target: "sm_90a", PTXVersion: "7.8"}); err == nil || !strings.Contains(err.Error(), "too old for sm_90a") {
		t.Errorf("sm_90a at PTX 7.8: error %v", err)
	}
}

// assemble90a runs ptxas -arch=sm_90a on ptx.
func assemble90a(t *testing.T, ptx string) {
	t.Helper()
	ptxas := tool(t, "STRATA_PTXAS", "ptxas")
	f := filepath.Join(t.TempDir(), "k.ptx")
	if err := os.WriteFile(f, []byte(ptx), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(ptxas, "-arch=sm_90a", "-o", os.DevNull, f).CombinedOutput(); err != nil {
		t.Fatalf("ptxas rejected the PTX: %v\n%s\n%s", err, out, numbered(ptx))
	}
}

// TestInlineAsmLoopInPlace checks tieInPlace on a loop that carries a
// tied asm output (gpu.wgmma's accumulators kept in flight across
// iterations): the header's phis, read after the loop too, die at the asm
// in the body, so the asm updates their registers in place and the back
// edge copies nothing; the first phi's value is also read in the body
// after the asm (there it may not be updated in place), the second's is not.
func TestInlineAsmLoopInPlace(t *testing.T) {
	m := newModule()
	p := llir.NewParam("p", gF32)
	f := kernel(m, "k", p)
	entry, header, body, exit := f.NewBlock("entry"), f.NewBlock("header"), f.NewBlock("body"), f.NewBlock("exit")
	init := entry.NewLoad(f32, p)
	entry.NewBr(header)
	i := header.NewPhi(llir.NewIncoming(constant.NewInt(i64, 0), entry))
	x := header.NewPhi(llir.NewIncoming(init, entry))
	y := header.NewPhi(llir.NewIncoming(init, entry))
	header.NewCondBr(header.NewICmp(enum.IPredSLT, i, constant.NewInt(i64, 8)), body, exit)
	asm := func(v *llir.InstPhi) *llir.InstCall {
		ia := llir.NewInlineAsm(types.NewPointer(types.NewFunc(f32, f32)), "max.f32 $0, $0, $0;", "=f,0")
		ia.SideEffect = true
		return body.NewCall(ia, v)
	}
	nx, ny := asm(x), asm(y)
	body.NewStore(x, body.NewGetElementPtr(f32, p, constant.NewInt(i64, 1)))
	next := body.NewAdd(i, constant.NewInt(i64, 1))
	body.NewBr(header)
	i.Incs = append(i.Incs, llir.NewIncoming(next, body))
	x.Incs = append(x.Incs, llir.NewIncoming(nx, body))
	y.Incs = append(y.Incs, llir.NewIncoming(ny, body))
	exit.NewStore(exit.NewFAdd(x, y), p)
	exit.NewRet(nil)
	ptx, err := Native{}.Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var adds []string
	movs := 0
	inBody := false
	for _, l := range strings.Split(ptx, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "max.f32") {
			adds = append(adds, l)
			inBody = true
		}
		if inBody && strings.HasPrefix(l, "bra") {
			inBody = false
		}
		if inBody && strings.HasPrefix(l, "mov.f32") {
			movs++
		}
	}
	if len(adds) != 2 {
		t.Fatalf("%d asm texts, want 2:\n%s", len(adds), ptx)
	}
	// y's asm updates its phi's register: the same register on both sides
	// of the add, and no copy back on the edge; x's gets a register of its
	// own and its result one copy on the edge.
	same := func(l string) bool {
		f := strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == ',' || r == ';' })
		return len(f) == 4 && f[1] == f[2] && f[2] == f[3]
	}
	if !same(adds[1]) {
		t.Errorf("the dying phi's asm is not in place: %s\n%s", adds[1], ptx)
	}
	if movs != 2 { // x into its asm's output, and its result onto x's phi
		t.Errorf("%d movs after the asm in the loop body, want 2:\n%s", movs, ptx)
	}
	assemble(t, ptx)
}

// TestInlineAsmChainInPlace checks tieInPlace on a field of one asm's
// results tied to the next asm's output (a gpu.wgmma in flight
// accumulated into by the next): a field read by nothing else gives the
// output its register, no mov (ptxas serializes every wgmma of a kernel
// that moves an in-flight accumulator); a field also stored elsewhere is
// copied into the output first.
func TestInlineAsmChainInPlace(t *testing.T) {
	m := newModule()
	p := llir.NewParam("p", gF32)
	f := kernel(m, "k", p)
	b := f.NewBlock("entry")
	x := b.NewLoad(f32, p)
	pair := types.NewStruct(f32, f32)
	first := llir.NewInlineAsm(types.NewPointer(types.NewFunc(pair, f32)), "mov.f32 $0, $2;\nmov.f32 $1, $2;", "=f,=f,f")
	first.SideEffect = true
	r := b.NewCall(first, x)
	a0, a1 := b.NewExtractValue(r, 0), b.NewExtractValue(r, 1)
	second := llir.NewInlineAsm(types.NewPointer(types.NewFunc(pair, f32, f32)), "add.rn.f32 $0, $0, $0;\nadd.rn.f32 $1, $1, $1;", "=f,=f,0,1")
	second.SideEffect = true
	s := b.NewCall(second, a0, a1)
	b.NewStore(b.NewExtractValue(s, 0), p)
	b.NewStore(b.NewExtractValue(s, 1), b.NewGetElementPtr(f32, p, constant.NewInt(i64, 1)))
	b.NewStore(a1, b.NewGetElementPtr(f32, p, constant.NewInt(i64, 2)))
	b.NewRet(nil)
	ptx, err := Native{}.Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The first asm's text: two movs from the load; then the second's
	// adds, and between them the copy of the field read again.
	var movs [][]string
	var adds []string
	for _, l := range strings.Split(ptx, "\n") {
		f := strings.FieldsFunc(strings.TrimSpace(l), func(r rune) bool { return r == ' ' || r == ',' || r == ';' })
		switch {
		case len(f) == 3 && f[0] == "mov.f32":
			movs = append(movs, f[1:])
		case len(f) == 4 && f[0] == "add.rn.f32":
			adds = append(adds, f[1])
		}
	}
	if len(movs) < 2 || len(adds) != 2 {
		t.Fatalf("asm texts not found:\n%s", ptx)
	}
	out0, out1 := movs[0][0], movs[1][0]
	if adds[0] != out0 {
		t.Errorf("the dying field is not updated in place (%s, the first asm's %s):\n%s", adds[0], out0, ptx)
	}
	if len(movs) != 3 || movs[2][1] != out1 || movs[2][0] != adds[1] || adds[1] == out1 {
		t.Errorf("the field read again is not copied into the output (and only it):\n%s", ptx)
	}
	assemble(t, ptx)
}
