package nvptx

import (
	"regexp"
	"strings"
	"testing"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
)

// shrinkable holds what the native backend writes short: constant
// operands, a constant computed from constants, a gep with a constant
// offset used only by loads, lanes of a vector load, unused address
// arithmetic, and both forms of a NaN-propagating max.
func shrinkable() *llir.Module {
	m := newModule()
	a, out := llir.NewParam("a", gF32), llir.NewParam("out", gF32)
	f := kernel(m, "shrink", a, out)
	b := f.NewBlock("entry")
	tid := sreg(m, b, "tid.x")
	i := b.NewMul(tid, c64(4))
	b.NewAdd(i, c64(12345)) // unused
	v := b.NewLoad(types.NewVector(4, f32), b.NewBitCast(b.NewGetElementPtr(f32, a, i), gV4))
	x, y := b.NewExtractElement(v, c32(0)), b.NewExtractElement(v, c32(1))
	next := b.NewLoad(f32, b.NewGetElementPtr(f32, a, c64(5)))
	// select(x > y || x != x, x, y): reduce_max's form.
	mx := b.NewSelect(b.NewOr(b.NewFCmp(enum.FPredOGT, x, y), b.NewFCmp(enum.FPredUNO, x, x)), x, y)
	mn := b.NewCall(declare(m, "llvm.minimum.f32", f32, f32, f32), mx, next)
	// bf16 1.0 widened to f32: (zext 0x3F80) << 16, bitcast.
	one := b.NewBitCast(b.NewShl(b.NewZExt(constI16(0x3F80), i32), c32(16)), f32)
	b.NewStore(b.NewFAdd(mn, one), b.NewGetElementPtr(f32, out, tid))
	// An unrolled row: row + col, then row + (col + 8): one address.
	row := b.NewMul(sreg(m, b, "ctaid.x"), c64(64))
	b.NewStore(b.NewLoad(f32, b.NewGetElementPtr(f32, a, b.NewAdd(row, tid))), out)
	w := b.NewLoad(f32, b.NewGetElementPtr(f32, a, b.NewAdd(row, b.NewAdd(tid, c64(8)))))
	b.NewStore(b.NewLoad(f32, b.NewGetElementPtr(f32, a, b.NewAdd(tid, c64(3)))), b.NewGetElementPtr(f32, out, c64(1)))
	// A shuffle and an fma with constant operands, a vector built from
	// undef, a shared array at a constant offset.
	shfl := declare(m, "llvm.nvvm.shfl.sync.bfly.f32", f32, i32, f32, i32, i32)
	sh := b.NewCall(shfl, c32(-1), w, c32(16), c32(31))
	fma := b.NewCall(declare(m, "llvm.fma.f32", f32, f32, f32, f32), sh, cf(0.5), cf(2))
	vec := types.NewVector(4, f32)
	var v4 llirValue = constant.NewUndef(vec)
	for lane := int64(0); lane < 4; lane++ {
		v4 = b.NewInsertElement(v4, fma, c32(lane))
	}
	b.NewStore(v4, b.NewBitCast(b.NewGetElementPtr(f32, out, c64(4)), gV4))
	shared := m.NewGlobalDef("wg", constant.NewUndef(types.NewArray(8, f32)))
	shared.AddrSpace = 3
	shared.Typ = nil
	shared.Align = 16
	b.NewStore(fma, b.NewGetElementPtr(types.NewArray(8, f32), shared, c64(0), c64(2)))
	// The same product twice: one mul.
	b.NewStore(b.NewFAdd(b.NewFMul(w, w), b.NewFMul(w, w)), b.NewGetElementPtr(f32, out, c64(2)))
	b.NewRet(nil)
	return m
}

// TestShrink checks the short forms in the PTX and that ptxas takes it.
func TestShrink(t *testing.T) {
	ptx, err := Native{}.Compile(shrinkable(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"mul.lo.s64 %rd3, %rd2, 4;",                // an immediate operand
		"ld.global.f32 %f4, [%rd0+20];",            // the gep's offset in the address
		"max.NaN.f32 %f5, %f0, %f1;",               // the select, on the load's lanes
		"min.NaN.f32 %f6, %f5, %f4;",               // llvm.minimum
		"add.rn.f32 %f7, %f6, 0f3F800000;",         // the folded constant
		"ld.global.v4.f32 {%f0, %f1, %f2, %f3}, [", // lanes shared, no copies
	} {
		if !strings.Contains(ptx, want) {
			t.Errorf("PTX lacks %q\n%s", want, numbered(ptx))
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`12345`),                    // the unused add
		regexp.MustCompile(`mov\.f32 %f\d+, %f\d+`),    // a lane copied
		regexp.MustCompile(`setp|or\.pred|selp`),       // the select's parts
		regexp.MustCompile(`mov\.b\d+ %r[sd]?\d+, 0x`), // a constant in a register
	} {
		if loc := bad.FindString(ptx); loc != "" {
			t.Errorf("PTX holds %q\n%s", loc, numbered(ptx))
		}
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`ld\.global\.f32 %f\d+, \[(%rd\d+)\];[^$]*ld\.global\.f32 %f\d+, \[(%rd\d+)\+32\];`), // row + (col + 8)
		regexp.MustCompile(`ld\.global\.f32 %f\d+, \[%rd\d+\+12\];`),                                            // tid + 3
		regexp.MustCompile(`shfl\.sync\.bfly\.b32 %f\d+, %f\d+, 16, 31, -1;`),
		regexp.MustCompile(`fma\.rn\.f32 %f\d+, %f\d+, 0f3F000000, 0f40000000;`),
		regexp.MustCompile(`st\.global\.v4\.f32 \[%rd\d+\+16\], \{(%f\d+), %f\d+, %f\d+, %f\d+\};`),
		regexp.MustCompile(`st\.shared\.f32 \[wg\+8\], %f\d+;`),
	} {
		if !want.MatchString(ptx) {
			t.Errorf("PTX does not match %s\n%s", want, numbered(ptx))
		}
	}
	if m := regexp.MustCompile(`ld\.global\.f32 %f\d+, \[(%rd\d+)\];[^$]*ld\.global\.f32 %f\d+, \[(%rd\d+)\+32\];`).FindStringSubmatch(ptx); m != nil && m[1] != m[2] {
		t.Errorf("row + col and row + (col + 8) use two registers, %s and %s", m[1], m[2])
	}
	if n := strings.Count(ptx, "mul.rn.f32"); n != 1 {
		t.Errorf("PTX has %d mul.rn.f32, want 1 (a repeated product shares the first)\n%s", n, numbered(ptx))
	}
	assemble(t, ptx)
}

func constI16(v int64) *constant.Int { return constant.NewInt(types.I16, v) }

// bf16RoundTo writes targets/llvm's round of the f32 x to bf16 bits (the
// sequence bf16RoundOf recognizes).
func bf16RoundTo(b *llir.Block, x llirValue) llirValue {
	u := b.NewBitCast(x, i32)
	hi := b.NewLShr(u, c32(16))
	rounded := b.NewLShr(b.NewAdd(b.NewAdd(u, c32(0x7fff)), b.NewAnd(hi, c32(1))), c32(16))
	nan := b.NewLShr(b.NewOr(u, c32(0x400000)), c32(16))
	return b.NewTrunc(b.NewSelect(b.NewFCmp(enum.FPredUNO, x, x), nan, rounded), types.I16)
}

// TestPack16 checks that two i16 halves packed into an i32 are one
// mov.b32 from the pair, and two rounded bf16 halves one
// cvt.rn.bf16x2.f32 (whose first source is the upper half), in either
// operand order of the or; an or of other shapes stays an or. An f32
// rounded to bf16 and widened back is one cvt.rn.bf16x2.f32 with a zero
// lower half. Two f32s truncated to half and packed are one
// cvt.rn.f16x2.f32.
func TestPack16(t *testing.T) {
	m := newModule()
	gI32 := types.NewPointer(types.I32)
	gI32.AddrSpace = 1
	a, out := llir.NewParam("a", gF32), llir.NewParam("out", gI32)
	f := kernel(m, "pack", a, out)
	b := f.NewBlock("entry")
	tid := sreg(m, b, "tid.x")
	x := b.NewLoad(f32, b.NewGetElementPtr(f32, a, tid))
	y := b.NewLoad(f32, b.NewGetElementPtr(f32, a, b.NewAdd(tid, c64(1))))
	half := func(v llirValue) llirValue { return b.NewZExt(v, i32) }
	high := func(v llirValue) llirValue { return b.NewShl(half(v), c32(16)) }
	// The rounded pair, low half first and high half first.
	b.NewStore(b.NewOr(half(bf16RoundTo(b, x)), high(bf16RoundTo(b, y))), b.NewGetElementPtr(i32, out, c64(0)))
	b.NewStore(b.NewOr(high(bf16RoundTo(b, x)), half(bf16RoundTo(b, y))), b.NewGetElementPtr(i32, out, c64(1)))
	// Plain i16 halves (the f32 bits' top halves).
	top := func(v llirValue) llirValue { return b.NewTrunc(b.NewLShr(b.NewBitCast(v, i32), c32(16)), types.I16) }
	b.NewStore(b.NewOr(half(top(x)), high(top(y))), b.NewGetElementPtr(i32, out, c64(2)))
	// A shift by 8 is no pack.
	b.NewStore(b.NewOr(half(top(x)), b.NewShl(half(top(y)), c32(8))), b.NewGetElementPtr(i32, out, c64(3)))
	// y rounded to bf16 and widened: toF32's form.
	snap := b.NewBitCast(b.NewShl(b.NewZExt(bf16RoundTo(b, y), i32), c32(16)), f32)
	b.NewStore(b.NewBitCast(snap, i32), b.NewGetElementPtr(i32, out, c64(4)))
	// x and y truncated to half, their bits packed (x low).
	f16Bits := func(v llirValue) llirValue { return b.NewBitCast(b.NewFPTrunc(v, types.Half), types.I16) }
	b.NewStore(b.NewOr(half(f16Bits(x)), high(f16Bits(y))), b.NewGetElementPtr(i32, out, c64(5)))
	b.NewRet(nil)
	ptx, err := Native{}.Compile(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`ld\.global\.f32 (%f\d+), \[%rd\d+\];\s+ld\.global\.f32 (%f\d+), \[%rd\d+\+4\];`),
	} {
		if !want.MatchString(ptx) {
			t.Fatalf("PTX does not match %s\n%s", want, numbered(ptx))
		}
	}
	loads := regexp.MustCompile(`ld\.global\.f32 (%f\d+), \[%rd\d+\];\s+ld\.global\.f32 (%f\d+), \[%rd\d+\+4\];`).FindStringSubmatch(ptx)
	fx, fy := loads[1], loads[2]
	for _, want := range []string{
		"cvt.rn.bf16x2.f32 %r\\d+, " + fy + ", " + fx + ";", // x low, y high
		"cvt.rn.bf16x2.f32 %r\\d+, " + fx + ", " + fy + ";", // x high, y low
		`mov\.b32 %r\d+, \{%rs\d+, %rs\d+\};`,
		"cvt.rn.bf16x2.f32 %r\\d+, " + fy + ", %f\\d+;", // y, zero
		`shl\.b32 %r\d+, %r\d+, 8;`,
		"cvt.rn.f16x2.f32 %r\\d+, " + fy + ", " + fx + ";", // x low, y high
	} {
		if !regexp.MustCompile(want).MatchString(ptx) {
			t.Errorf("PTX does not match %s\n%s", want, numbered(ptx))
		}
	}
	for _, bad := range []string{"cvt.rn.bf16.f32", "32767", "cvt.f32.bf16", "cvt.rn.f16.f32"} {
		if strings.Contains(ptx, bad) {
			t.Errorf("PTX holds %q (a rounding left beside its pack)\n%s", bad, numbered(ptx))
		}
	}
	if n := strings.Count(ptx, "cvt.rn.bf16x2.f32"); n != 3 {
		t.Errorf("PTX has %d cvt.rn.bf16x2.f32, want 3\n%s", n, numbered(ptx))
	}
	if n := strings.Count(ptx, "shl.b32"); n != 1 {
		t.Errorf("PTX has %d shl.b32, want 1 (the non-pack)\n%s", n, numbered(ptx))
	}
	assemble(t, ptx)
}
