package nvptx

import (
	"errors"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// vectorAdd: c[i] = a[i] + b[i] for i = ctaid.x*ntid.x + tid.x < n.
func vectorAdd() *llir.Module {
	m := newModule()
	a, b, c, n := llir.NewParam("a", gF32), llir.NewParam("b", gF32), llir.NewParam("c", gF32), llir.NewParam("n", i64)
	f := kernel(m, "vector_add", a, b, c, n)
	entry, body, exit := f.NewBlock("entry"), f.NewBlock("body"), f.NewBlock("exit")
	i := entry.NewAdd(entry.NewMul(sreg(m, entry, "ctaid.x"), sreg(m, entry, "ntid.x")), sreg(m, entry, "tid.x"))
	entry.NewCondBr(entry.NewICmp(enum.IPredSLT, i, n), body, exit)
	x := body.NewLoad(f32, body.NewGetElementPtr(f32, a, i))
	y := body.NewLoad(f32, body.NewGetElementPtr(f32, b, i))
	body.NewStore(body.NewFAdd(x, y), body.NewGetElementPtr(f32, c, i))
	body.NewBr(exit)
	exit.NewRet(nil)
	return m
}

// loopSum sums a[0:n] with a loop whose phis include a swap (a parallel
// copy) and whose exit reads the header's phi (a critical edge): out[0] =
// the sum, out[1] = 1 or 2 by the parity of n, out[2] = the counter seen
// at exit.
func loopSum() *llir.Module {
	m := newModule()
	a, out, n := llir.NewParam("a", gF32), llir.NewParam("out", gF32), llir.NewParam("n", i64)
	f := kernel(m, "loop_sum", a, out, n)
	entry, head, body, exit := f.NewBlock("entry"), f.NewBlock("head"), f.NewBlock("body"), f.NewBlock("exit")
	entry.NewBr(head)
	iv := head.NewPhi(llir.NewIncoming(c64(0), entry))
	acc := head.NewPhi(llir.NewIncoming(cf(0), entry))
	p := head.NewPhi(llir.NewIncoming(cf(1), entry))
	q := head.NewPhi(llir.NewIncoming(cf(2), entry))
	head.NewCondBr(head.NewICmp(enum.IPredSLT, iv, n), body, exit)
	x := body.NewLoad(f32, body.NewGetElementPtr(f32, a, iv))
	next := body.NewAdd(iv, c64(1))
	iv.Incs = append(iv.Incs, llir.NewIncoming(next, body))
	acc.Incs = append(acc.Incs, llir.NewIncoming(body.NewFAdd(acc, x), body))
	p.Incs = append(p.Incs, llir.NewIncoming(q, body)) // p, q = q, p: a swap
	q.Incs = append(q.Incs, llir.NewIncoming(p, body))
	body.NewBr(head)
	exit.NewStore(acc, out)
	exit.NewStore(q, exit.NewGetElementPtr(f32, out, c64(1)))
	exit.NewStore(exit.NewSIToFP(iv, f32), exit.NewGetElementPtr(f32, out, c64(2)))
	exit.NewRet(nil)
	return m
}

// blockReduce sums 256 values per block through shared memory, a barrier
// and warp shuffles; it is marked with !nvvm.annotations.
func blockReduce() *llir.Module {
	m := newModule()
	shared := m.NewGlobalDef("partial", constant.NewUndef(types.NewArray(8, f32)))
	shared.AddrSpace = 3
	shared.Typ = nil // recomputed with the address space
	shared.Align = 4
	a, out := llir.NewParam("a", gF32), llir.NewParam("out", gF32)
	f := m.NewFunc("block_reduce", types.Void, a, out)
	annotate(m, f)
	entry, warp0, done := f.NewBlock("entry"), f.NewBlock("warp0"), f.NewBlock("done")
	shfl := declare(m, "llvm.nvvm.shfl.sync.bfly.f32", f32, i32, f32, i32, i32)
	tid := sreg(m, entry, "tid.x")
	g := entry.NewAdd(entry.NewMul(sreg(m, entry, "ctaid.x"), c64(256)), tid)
	var v llirValue = entry.NewLoad(f32, entry.NewGetElementPtr(f32, a, g))
	for off := int64(16); off >= 1; off /= 2 {
		v = entry.NewFAdd(v, entry.NewCall(shfl, c32(-1), v, c32(off), c32(31)))
	}
	warp := entry.NewLShr(tid, c64(5))
	slot := entry.NewGetElementPtr(types.NewArray(8, f32), shared, c64(0), warp)
	entry.NewStore(v, slot)
	entry.NewCall(declare(m, "llvm.nvvm.barrier0", types.Void))
	entry.NewCondBr(entry.NewICmp(enum.IPredEQ, tid, c64(0)), warp0, done)
	var s llirValue = cf(0)
	for w := int64(0); w < 8; w++ {
		s = warp0.NewFAdd(s, warp0.NewLoad(f32, warp0.NewGetElementPtr(types.NewArray(8, f32), shared, c64(0), c64(w))))
	}
	warp0.NewStore(s, warp0.NewGetElementPtr(f32, out, sreg(m, warp0, "ctaid.x")))
	warp0.NewBr(done)
	done.NewRet(nil)
	return m
}

// halves converts f16 and bf16 (as i16 bits) to f32 and back, and moves
// bools stored as bytes.
func halves() *llir.Module {
	m := newModule()
	h, bf, bs := llir.NewParam("h", gHalf), llir.NewParam("bf", gI16), llir.NewParam("bs", gI8)
	flag := llir.NewParam("flag", types.I1)
	f := kernel(m, "halves", h, bf, bs, flag)
	b := f.NewBlock("entry")
	x := b.NewFPExt(b.NewLoad(types.Half, h), f32)
	b.NewStore(b.NewFPTrunc(b.NewFMul(x, cf(2)), types.Half), h)
	bits := b.NewShl(b.NewZExt(b.NewLoad(types.I16, bf), i32), c32(16))
	y := b.NewFAdd(b.NewBitCast(bits, f32), cf(1))
	yb := b.NewBitCast(y, i32) // round to nearest even: (u + 0x7fff + ((u >> 16) & 1)) >> 16
	r := b.NewLShr(b.NewAdd(b.NewAdd(yb, c32(0x7fff)), b.NewAnd(b.NewLShr(yb, c32(16)), c32(1))), c32(16))
	b.NewStore(b.NewTrunc(r, types.I16), bf)
	by := b.NewLoad(types.I8, bs)
	t := b.NewTrunc(by, types.I1)
	b.NewStore(b.NewZExt(b.NewXor(t, flag), types.I8), b.NewGetElementPtr(types.I8, bs, c64(1)))
	b.NewStore(b.NewUDiv(by, constant.NewInt(types.I8, 3)), b.NewGetElementPtr(types.I8, bs, c64(2)))
	b.NewStore(b.NewTrunc(b.NewAShr(b.NewSExt(by, i32), c32(1)), types.I8), b.NewGetElementPtr(types.I8, bs, c64(3)))
	b.NewStore(b.NewAShr(by, constant.NewInt(types.I8, 2)), b.NewGetElementPtr(types.I8, bs, c64(4)))
	b.NewRet(nil)
	return m
}

// compares stores select(fcmp pred x y, x, y) for every predicate, and
// the casts between floats and integers.
func compares() *llir.Module {
	m := newModule()
	a, out := llir.NewParam("a", gF32), llir.NewParam("out", gF32)
	f := kernel(m, "compares", a, out)
	b := f.NewBlock("entry")
	x := b.NewLoad(f32, a)
	y := b.NewLoad(f32, b.NewGetElementPtr(f32, a, c64(1)))
	for i, pred := range []enum.FPred{enum.FPredOEQ, enum.FPredONE, enum.FPredOLT, enum.FPredOLE, enum.FPredOGT, enum.FPredOGE,
		enum.FPredORD, enum.FPredUNO, enum.FPredUEQ, enum.FPredUNE, enum.FPredULT, enum.FPredULE, enum.FPredUGT, enum.FPredUGE,
		enum.FPredTrue, enum.FPredFalse} {
		b.NewStore(b.NewSelect(b.NewFCmp(pred, x, y), x, b.NewFNeg(y)), b.NewGetElementPtr(f32, out, c64(int64(i))))
	}
	si := b.NewFPToSI(x, i32)
	ui := b.NewFPToUI(y, i64)
	back := b.NewFAdd(b.NewSIToFP(si, f32), b.NewUIToFP(ui, f32))
	d := b.NewFDiv(b.NewFPExt(back, types.Double), constant.NewFloat(types.Double, 3))
	b.NewStore(b.NewFPTrunc(d, f32), b.NewGetElementPtr(f32, out, c64(16)))
	isel := b.NewSelect(b.NewICmp(enum.IPredULT, si, c32(7)), b.NewSDiv(si, c32(2)), b.NewSRem(si, c32(5)))
	b.NewStore(b.NewBitCast(b.NewAShr(isel, c32(1)), f32), b.NewGetElementPtr(f32, out, c64(17)))
	// Vector loads and stores, 16 bytes per thread.
	va := b.NewBitCast(a, gV4)
	v := b.NewLoad(types.NewVector(4, f32), va)
	w := b.NewInsertElement(v, b.NewFMul(b.NewExtractElement(v, c32(0)), cf(3)), c32(3))
	b.NewStore(b.NewFAdd(w, v), b.NewBitCast(b.NewGetElementPtr(f32, out, c64(20)), gV4))
	b.NewRet(nil)
	return m
}

// allIntrinsics calls every intrinsic of the native table once.
func allIntrinsics() *llir.Module {
	m := newModule()
	out := llir.NewParam("out", gF32)
	f := kernel(m, "intrinsics", out)
	b := f.NewBlock("entry")
	x := b.NewLoad(f32, out)
	xd := b.NewFPExt(x, types.Double)
	slot := int64(0)
	for _, name := range Intrinsics() {
		in := intrinsics[name]
		if isTensorCore(name) {
			continue // fragments and shared pointers: test/targets/mma.mlir covers them
		}
		var ret types.Type = f32
		var arg llirValue = x
		switch {
		case strings.HasPrefix(name, "llvm.nvvm.read.ptx.sreg"):
			ret = i32
		case strings.HasPrefix(name, "llvm.nvvm.shfl") && strings.HasSuffix(name, "i32"):
			ret, arg = i32, b.NewFPToSI(x, i32)
		case strings.HasSuffix(name, ".f64") || strings.HasSuffix(name, ".d"):
			ret, arg = types.Double, xd
		case in.args == 0:
			ret = types.Void
		}
		params := make([]types.Type, in.args)
		args := make([]llirValue, in.args)
		for i := range params {
			params[i], args[i] = ret, arg
		}
		if strings.HasPrefix(name, "llvm.nvvm.shfl") {
			params = []types.Type{i32, ret, i32, i32}
			args = []llirValue{c32(-1), arg, c32(1), c32(31)}
		}
		r := b.NewCall(declare(m, name, ret, params...), args...)
		var res llirValue = r
		switch ret {
		case types.Void:
			continue
		case i32:
			res = b.NewSIToFP(r, f32)
		case types.Double:
			res = b.NewFPTrunc(r, f32)
		}
		slot++
		b.NewStore(res, b.NewGetElementPtr(f32, out, c64(slot)))
	}
	b.NewRet(nil)
	return m
}

// isTensorCore reports whether an intrinsic is a tensor-core one (mma,
// ldmatrix, cp.async), whose operands are not the scalars allIntrinsics
// passes.
func isTensorCore(name string) bool {
	for _, p := range []string{"llvm.nvvm.mma.", "llvm.nvvm.ldmatrix.", "llvm.nvvm.cp.async."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// wideHalves reverses eight 16-bit lanes (bf16 bits) of a 16-byte vector:
// PTX has no v8 access, so they travel as four 32-bit words.
func wideHalves() *llir.Module {
	m := newModule()
	v8 := types.NewVector(8, types.I16)
	g := types.NewPointer(v8)
	g.AddrSpace = 1
	src, dst := llir.NewParam("src", g), llir.NewParam("dst", g)
	f := kernel(m, "wide_halves", src, dst)
	b := f.NewBlock("entry")
	x := b.NewLoad(v8, src)
	x.Align = 16
	var y value.Value = constant.NewUndef(v8)
	for i := range 8 {
		y = b.NewInsertElement(y, b.NewExtractElement(x, c32(int64(i))), c32(int64(7-i)))
	}
	st := b.NewStore(y, dst)
	st.Align = 16
	b.NewRet(nil)
	return m
}

var testModules = map[string]func() *llir.Module{
	"wide_halves":  wideHalves,
	"vector_add":   vectorAdd,
	"loop_sum":     loopSum,
	"block_reduce": blockReduce,
	"halves":       halves,
	"compares":     compares,
	"intrinsics":   allIntrinsics,
}

// TestBackends compiles every test module with both backends for both
// targets, assembles the PTX with ptxas and compares the kernel
// signatures of the two backends.
func TestBackends(t *testing.T) {
	for name, build := range testModules {
		for _, target := range Targets {
			t.Run(name+"/"+target, func(t *testing.T) {
				opts := Options{Target: target}
				native, err := Native{}.Compile(build(), opts)
				if err != nil {
					t.Fatalf("native: %v", err)
				}
				for _, want := range []string{".version 7.8\n", ".target " + target + "\n", ".address_size 64\n", ".visible .entry "} {
					if !strings.Contains(native, want) {
						t.Errorf("native PTX lacks %q", want)
					}
				}
				if err := CheckNoExtern(native); err != nil {
					t.Error(err)
				}
				assemble(t, native)
				tool(t, "STRATA_LLVM_BIN", "llc", "llc-19")
				viaLLC, err := LLC{}.Compile(build(), opts)
				if err != nil {
					t.Fatalf("llc: %v", err)
				}
				if !strings.Contains(viaLLC, ".version 7.8\n") {
					t.Errorf("llc PTX does not carry .version 7.8")
				}
				assemble(t, viaLLC)
				if n, l := signatures(native), signatures(viaLLC); !reflect.DeepEqual(n, l) || len(n) == 0 {
					t.Errorf("kernel signatures differ:\nnative: %q\nllc:    %q", n, l)
				}
			})
		}
	}
}

// TestNativeSelection checks instruction choices the tests above cannot
// see through ptxas: the ones that decide results.
func TestNativeSelection(t *testing.T) {
	compile := func(m *llir.Module) string {
		ptx, err := Native{}.Compile(m, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return ptx
	}
	cases := []struct {
		module string
		want   []string
	}{
		{"vector_add", []string{"mov.u32 %r0, %ctaid.x;", "cvta.to.global.u64", "add.rn.f32", "ld.global.f32", "st.global.f32", "setp.lt.s64"}},
		{"compares", []string{"setp.equ.f32", "setp.nan.f32", "setp.num.f32", "setp.neu.f32", "cvt.rzi.s32.f32", "cvt.rzi.u64.f32",
			"cvt.rn.f32.s32", "cvt.rn.f32.u64", "div.rn.f64", "cvt.rn.f32.f64", "cvt.f64.f32", "ld.global.v4.f32", "st.global.v4.f32",
			"div.s32", "rem.s32", "shr.s32", "selp.b32", "setp.lt.u32"}},
		{"halves", []string{"ld.global.b16", "cvt.f32.f16", "cvt.rn.f16.f32", "st.global.b16", "ld.global.u8", "cvt.u16.u8", "div.u16",
			"cvt.s16.s8", "ld.param.u8", ".param .u8 halves_param_3"}},
		{"wide_halves", []string{"ld.global.v4.b32 {%r0, %r1, %r2, %r3}", "mov.b32 {%rs0, %rs1}, %r0;", "mov.b32 {%rs6, %rs7}, %r3;",
			"st.global.v4.b32", "mov.b32 %r4, {%rs7, %rs6};"}},
		{"block_reduce", []string{".shared .align 4 .b8 partial[32];", "ld.shared.f32", "st.shared.f32", "bar.sync 0;",
			"shfl.sync.bfly.b32", "mov.u64 %rd"}},
	}
	for _, c := range cases {
		ptx := compile(testModules[c.module]())
		for _, w := range c.want {
			if !strings.Contains(ptx, w) {
				t.Errorf("%s: PTX lacks %q\n%s", c.module, w, numbered(ptx))
			}
		}
	}
}

// TestParallelCopies checks the phi copies of the loop: on the back edge
// (p, q = q, p) no copy may read a phi register that an earlier copy of
// the same edge wrote, and the header must not write phis before
// its exit test (the exit still reads the old counter).
func TestParallelCopies(t *testing.T) {
	ptx, err := Native{}.Compile(loopSum(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := ptx[strings.Index(ptx, "$L__BB2:"):strings.Index(ptx, "$L__BB3:")]
	lines := strings.Split(strings.TrimSpace(body), "\n")
	end := len(lines) - 1 // the bra.uni back to the header
	start := end
	for start > 0 && strings.HasPrefix(strings.TrimSpace(lines[start-1]), "mov.") {
		start--
	}
	if end-start != 8 {
		t.Fatalf("want 4 temporaries and 4 phi writes on the back edge, got %d moves:\n%s", end-start, body)
	}
	// The phi registers are the copies' destinations seen elsewhere in
	// the kernel; the edge's temporaries appear only in its copies.
	seq := strings.Join(lines[start:end], "\n")
	rest := strings.Replace(ptx, seq, "", 1)
	written := map[string]bool{}
	for _, l := range lines[start:end] {
		f := strings.Fields(strings.NewReplacer(",", " ", ";", " ").Replace(l))
		if written[f[2]] {
			t.Errorf("copy %q reads a phi register written earlier on the same edge:\n%s", strings.TrimSpace(l), body)
		}
		if regexp.MustCompile(regexp.QuoteMeta(f[1]) + `\b`).MatchString(rest) {
			written[f[1]] = true
		}
	}
	head := ptx[strings.Index(ptx, "$L__BB1:"):strings.Index(ptx, "$L__BB2:")]
	if strings.Contains(head, "mov.") {
		t.Errorf("loop header writes phi copies before its exit test:\n%s", head)
	}
}

// TestUnsupported checks that IR outside the subset is an error naming
// the instruction.
func TestUnsupported(t *testing.T) {
	cases := []struct {
		name  string
		build func(m *llir.Module, b *llir.Block, p *llir.Param)
		want  string
	}{
		{"frem", func(m *llir.Module, b *llir.Block, p *llir.Param) {
			x := b.NewLoad(f32, p)
			b.NewStore(b.NewFRem(x, x), p)
		}, "frem float"},
		// Results are stored: unused ones are dropped before selection.
		{"alloca", func(m *llir.Module, b *llir.Block, p *llir.Param) { b.NewStore(cf(1), b.NewAlloca(f32)) }, "alloca float"},
		{"exp", func(m *llir.Module, b *llir.Block, p *llir.Param) {
			b.NewStore(b.NewCall(declare(m, "llvm.exp.f32", f32, f32), b.NewLoad(f32, p)), p)
		}, "@llvm.exp.f32 is not a supported intrinsic"},
		{"dynamic lane", func(m *llir.Module, b *llir.Block, p *llir.Param) {
			v := b.NewLoad(types.NewVector(4, f32), b.NewBitCast(p, gV4))
			b.NewStore(b.NewExtractElement(v, b.NewFPToSI(b.NewLoad(f32, p), i32)), p)
		}, "must be a constant lane number"},
		{"half arithmetic", func(m *llir.Module, b *llir.Block, p *llir.Param) {
			h := b.NewFPTrunc(b.NewLoad(f32, p), types.Half)
			b.NewStore(b.NewFAdd(h, h), b.NewBitCast(p, gHalf))
		}, "fadd half"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newModule()
			p := llir.NewParam("p", gF32)
			b := kernel(m, "k", p).NewBlock("entry")
			c.build(m, b, p)
			b.NewRet(nil)
			_, err := Native{}.Compile(m, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "kernel @k") && c.name != "exp" {
				t.Errorf("got error %v, want one naming %q", err, c.want)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{Target: "sm_70"}, {PTXVersion: "7"}, {Target: "sm_90", PTXVersion: "7.0"}} {
		if _, err := (Native{}).Compile(vectorAdd(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	ptx, err := Native{}.Compile(vectorAdd(), Options{Target: "sm_80", PTXVersion: "8.0"})
	if err != nil || !strings.Contains(ptx, ".version 8.0\n.target sm_80\n") {
		t.Errorf("got %v\n%s", err, ptx)
	}
	if _, err := New("nvcc"); err == nil {
		t.Error("New(nvcc): no error")
	}
	if b, err := New(""); err != nil || b.Name() != "native" {
		t.Errorf("New(\"\") = %v, %v", b, err)
	}
}

func TestCheckNoExtern(t *testing.T) {
	err := CheckNoExtern(".version 7.8\n.extern .func (.param .b32 r) llvm.exp.f32\n")
	if !errors.Is(err, ErrExtern) || !strings.Contains(err.Error(), "llvm.exp.f32") {
		t.Errorf("got %v", err)
	}
	if err := CheckNoExtern(".version 7.8\n// .extern in a comment\n"); err != nil {
		t.Errorf("comment flagged: %v", err)
	}
	// The dynamic shared memory array is the one resolved extern; a
	// function after it is still caught.
	dyn := ".version 7.8\n.extern .shared .align 16 .b8 strata_dynamic_shared[];\n"
	if err := CheckNoExtern(dyn); err != nil {
		t.Errorf("dynamic shared memory flagged: %v", err)
	}
	for _, bad := range []string{
		dyn + ".extern .func (.param .b32 r) llvm.exp.f32\n",
		".extern .shared .align 16 .b8 fixed[64];\n",
		".extern .global .align 16 .b8 g[];\n",
	} {
		if err := CheckNoExtern(bad); !errors.Is(err, ErrExtern) {
			t.Errorf("%q: got %v, want ErrExtern", bad, err)
		}
	}
}

// TestDynamicSharedGlobal checks the native backend's declarations of
// external shared globals: a zero-length byte array is the dynamic shared
// memory, which both backends declare alike and ptxas accepts; any other
// external global is an error.
func TestDynamicSharedGlobal(t *testing.T) {
	build := func(content types.Type) *llir.Module {
		m := newModule()
		g := llir.NewGlobal("dyn", content)
		g.Linkage = enum.LinkageExternal
		g.AddrSpace = 3
		g.Typ = nil
		g.Align = 16
		m.Globals = append(m.Globals, g)
		s3 := types.NewPointer(types.Float)
		s3.AddrSpace = 3
		f := kernel(m, "k", llir.NewParam("out", gF32))
		b := f.NewBlock("entry")
		at := constant.NewGetElementPtr(g.ContentType, g, constant.NewInt(i64, 0), constant.NewInt(i64, 64))
		p := constant.NewBitCast(at, s3)
		b.NewStore(constant.NewFloat(f32, 1), p)
		b.NewStore(b.NewLoad(f32, p), f.Params[0])
		b.NewRet(nil)
		return m
	}
	ptx, err := Native{}.Compile(build(types.NewArray(0, types.I8)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ptx, ".extern .shared .align 16 .b8 dyn[];") || CheckNoExtern(ptx) != nil {
		t.Errorf("no dynamic shared declaration, or a rejected one:\n%s", ptx)
	}
	assemble(t, ptx)
	if llc, err := (LLC{}).Compile(build(types.NewArray(0, types.I8)), Options{}); err == nil {
		if !strings.Contains(llc, ".extern .shared .align 16 .b8 dyn[];") {
			t.Errorf("llc declares it otherwise:\n%s", llc)
		}
	} else if !strings.Contains(err.Error(), "llc") {
		t.Errorf("llc backend: %v", err)
	}
	if _, err := (Native{}).Compile(build(types.NewArray(4, types.I8)), Options{}); err == nil || !strings.Contains(err.Error(), "zero-length array") {
		t.Errorf("external [4 x i8]: got %v, want an error", err)
	}
}

// TestPackedHalves checks the bitcasts between an i32 and <2 x half>
// (how targets/llvm passes f16 fragments to mma.sync): one vector move
// each way, and an f16 mma.sync whose <2 x half> operands are packed
// back into .b32 registers, which ptxas accepts.
func TestPackedHalves(t *testing.T) {
	m := newModule()
	gI32 := types.NewPointer(types.I32)
	gI32.AddrSpace = 1
	in, out := llir.NewParam("in", gI32), llir.NewParam("out", gF32)
	f := kernel(m, "packed", in, out)
	b := f.NewBlock("")
	v2h := types.NewVector(2, types.Half)
	var halves []value.Value
	for i := range int64(6) {
		w := b.NewLoad(i32, b.NewGetElementPtr(i32, in, c64(i)))
		halves = append(halves, b.NewBitCast(w, v2h))
	}
	mma := declare(m, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", types.NewStruct(f32, f32, f32, f32),
		v2h, v2h, v2h, v2h, v2h, v2h, f32, f32, f32, f32)
	args := append(halves, cf(0), cf(0), cf(0), cf(0))
	d := b.NewCall(mma, args...)
	b.NewStore(b.NewExtractValue(d, 0), out)
	back := b.NewBitCast(halves[0], i32)
	b.NewStore(back, b.NewBitCast(out, gI32))
	b.NewRet(nil)
	ptx, err := Native{}.Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`mov\.b32 \{%rs\d+, %rs\d+\}, %r\d+;`, // i32 -> <2 x half>
		`mov\.b32 %r\d+, \{%rs\d+, %rs\d+\};`, // and back
		`mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32 \{%f\d+, %f\d+, %f\d+, %f\d+\}, \{%r\d+, %r\d+, %r\d+, %r\d+\}, \{%r\d+, %r\d+\}`,
	} {
		if !regexp.MustCompile(re).MatchString(ptx) {
			t.Errorf("PTX lacks %s\n%s", re, numbered(ptx))
		}
	}
	assemble(t, ptx)
}

// mergedModule returns one module holding the kernels of every test
// module, in name order, and each kernel's name.
func mergedModule() (*llir.Module, []string) {
	m := newModule()
	var names, kernels []string
	for name := range testModules {
		names = append(names, name)
	}
	sort.Strings(names)
	declared := map[string]bool{}
	for _, name := range names {
		part := testModules[name]()
		m.Globals = append(m.Globals, part.Globals...)
		for _, f := range part.Funcs {
			if f.Blocks == nil {
				if declared[f.Name()] {
					continue
				}
				declared[f.Name()] = true
			} else {
				kernels = append(kernels, f.Name())
			}
			m.Funcs = append(m.Funcs, f)
		}
		if def, ok := part.NamedMetadataDefs["nvvm.annotations"]; ok {
			mine, ok := m.NamedMetadataDefs["nvvm.annotations"]
			if !ok {
				mine = &metadata.NamedDef{Name: "nvvm.annotations"}
				m.NamedMetadataDefs["nvvm.annotations"] = mine
			}
			mine.Nodes = append(mine.Nodes, def.Nodes...)
			m.MetadataDefs = append(m.MetadataDefs, part.MetadataDefs...)
		}
	}
	return m, kernels
}

// TestParallelKernels checks that the native backend writes the same text
// whether it generates a module's kernels one at a time or at once, in the
// module's order, and that an error names the first failing kernel.
func TestParallelKernels(t *testing.T) {
	m, kernels := mergedModule()
	if len(kernels) < 4 {
		t.Fatalf("merged module has %d kernels", len(kernels))
	}
	one, err := Native{}.Compile(m, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for _, k := range kernels {
		at := strings.Index(one, ".entry "+k+"(")
		if at < last {
			t.Errorf("kernel %s is not in the module's order", k)
		}
		last = at
	}
	for _, jobs := range []int{0, 2, 3, 16} {
		got, err := Native{}.Compile(m, Options{Jobs: jobs})
		if err != nil {
			t.Fatalf("jobs %d: %v", jobs, err)
		}
		if got != one {
			t.Errorf("jobs %d: the PTX differs from one job's", jobs)
		}
	}
	assemble(t, one)

	// Two kernels the backend refuses: the error names the first.
	for _, name := range []string{"bad1", "bad2"} {
		p := llir.NewParam("p", gF32)
		b := kernel(m, name, p).NewBlock("entry")
		x := b.NewLoad(f32, p)
		b.NewStore(b.NewFRem(x, x), p)
		b.NewRet(nil)
	}
	for _, jobs := range []int{1, 4} {
		_, err := Native{}.Compile(m, Options{Jobs: jobs})
		if err == nil || !strings.Contains(err.Error(), "@bad1") {
			t.Errorf("jobs %d: error %v, want one naming @bad1", jobs, err)
		}
	}
}
