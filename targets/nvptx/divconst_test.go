package nvptx

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	llir "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
)

// divisors are the constants the division tests divide by at width w:
// ResNet-50's and GPT-2's extents, small ones, powers of two, the largest
// that take a multiplication, and random ones.
func divisors(rng *rand.Rand, w int) []uint64 {
	ds := []uint64{1, 2, 3, 5, 6, 7, 9, 10, 12, 25, 49, 56, 64, 112, 114, 196, 1000, 3136, 50257, 1 << 20, 3 << 20, 1<<(w-1) - 1, 1 << (w - 1), 1<<(w-1) + 1}
	for range 200 {
		if w == 32 {
			ds = append(ds, uint64(rng.Uint32()>>rng.IntN(31)))
		} else {
			ds = append(ds, rng.Uint64()>>rng.IntN(63))
		}
	}
	return ds
}

// dividends are x values to divide by d: the edges around multiples of d
// and of the width, and random ones.
func dividends(rng *rand.Rand, d uint64, w int) []uint64 {
	top := uint64(math.MaxUint32)
	if w == 64 {
		top = math.MaxUint64
	}
	xs := []uint64{0, 1, d - 1, d, d + 1, 2*d - 1, 2 * d, top, top - 1, top - d, top / d * d, top/d*d - 1, 1 << (w - 1), 1<<(w-1) - 1}
	for range 300 {
		x := rng.Uint64() & top
		xs = append(xs, x, x>>rng.IntN(w))
	}
	return xs
}

// run evaluates the instructions divByConstant emitted, with the
// dividend in %x, and returns the value of dst.
func run(t *testing.T, text string, x uint64, w int, dst string) uint64 {
	t.Helper()
	mask := uint64(math.MaxUint32)
	if w == 64 {
		mask = math.MaxUint64
	}
	regs := map[string]uint64{"%x": x}
	val := func(s string) uint64 {
		if v, ok := regs[s]; ok {
			return v
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("operand %q is neither a register written before nor an immediate:\n%s", s, text)
		}
		return uint64(n) & mask
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(strings.NewReplacer(",", " ", ";", "").Replace(line))
		op, d, a, b := f[0], f[1], val(f[2]), val(f[3])
		if !strings.HasSuffix(op, strconv.Itoa(w)) {
			t.Fatalf("%q is not a %d-bit instruction", line, w)
		}
		var r uint64
		switch strings.TrimSuffix(strings.TrimSuffix(op, strconv.Itoa(w)), ".") {
		case "mul.hi.u":
			if w == 32 {
				r = a * b >> 32
			} else {
				r, _ = bits.Mul64(a, b)
			}
		case "mul.lo.u":
			r = a * b
		case "sub.u":
			r = a - b
		case "add.u":
			r = a + b
		case "shr.u":
			r = a >> b
		case "and.b":
			r = a & b
		default:
			t.Fatalf("unexpected instruction %q", line)
		}
		regs[d] = r & mask
	}
	return regs[dst]
}

// TestDivByConstant checks the instructions the native backend emits for
// an unsigned division and remainder by a constant, by running them on
// the edges and random dividends of many divisors at both widths: the
// quotient and remainder of every one, with a multiplication (no div or
// rem) wherever divMagic gives one, a shift or mask for powers of two.
func TestDivByConstant(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 9))
	for _, w := range []int{32, 64} {
		k := scalarKind{class: classB32, bits: 32}
		if w == 64 {
			k = scalarKind{class: classB64, bits: 64}
		}
		for _, d := range divisors(rng, w) {
			for _, rem := range []bool{false, true} {
				e := &emitter{}
				dst := e.newReg(k.class)
				if !e.divByConstant(k, dst, "%x", d, rem) {
					if _, _, ok := divMagic(d, w); ok || (d >= 2 && d&(d-1) == 0 && d <= 1<<(w-1)) {
						t.Fatalf("w %d, d %d: no sequence though one exists", w, d)
					}
					if d >= 2 && d <= 1<<(w-1) {
						t.Fatalf("w %d, d %d: divisor left to div", w, d)
					}
					continue
				}
				text := e.body.String()
				if strings.Contains(text, "div") || strings.Contains(text, "rem") {
					t.Fatalf("w %d, d %d: a division is left:\n%s", w, d, text)
				}
				for _, x := range dividends(rng, d, w) {
					want := x / d
					if rem {
						want = x % d
					}
					if got := run(t, text, x, w, dst.String()); got != want {
						t.Fatalf("w %d: %d %s %d = %d, want %d:\n%s", w, x, map[bool]string{false: "/", true: "%"}[rem], d, got, want, text)
					}
				}
			}
		}
	}
}

// divKernel divides an i32 and an i64 argument by constants (udiv and
// urem) and stores the results.
func divKernel() *llir.Module {
	m := newModule()
	x, y, out := llir.NewParam("x", i32), llir.NewParam("y", i64), llir.NewParam("out", types.NewPointer(i64))
	out.Typ.(*types.PointerType).AddrSpace = 1
	f := kernel(m, "divs", x, y, out)
	b := f.NewBlock("entry")
	q := b.NewZExt(b.NewUDiv(x, constant.NewInt(i32, 56)), i64)
	r := b.NewZExt(b.NewURem(x, constant.NewInt(i32, 114)), i64)
	s := b.NewAdd(b.NewUDiv(y, constant.NewInt(i64, 3136)), b.NewURem(y, constant.NewInt(i64, 49)))
	b.NewStore(b.NewAdd(b.NewAdd(q, r), s), out)
	b.NewRet(nil)
	return m
}

// TestDivByConstantPTX checks that the native backend's PTX for a kernel
// dividing by constants multiplies instead (no div or rem instruction)
// and that ptxas assembles it where the offline ptxas is installed.
func TestDivByConstantPTX(t *testing.T) {
	ptx, err := Native{}.Compile(divKernel(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"div.u", "rem.u"} {
		if strings.Contains(ptx, bad) {
			t.Errorf("PTX still has %s:\n%s", bad, numbered(ptx))
		}
	}
	for _, want := range []string{"mul.hi.u32", "mul.hi.u64"} {
		if !strings.Contains(ptx, want) {
			t.Errorf("PTX lacks %s:\n%s", want, numbered(ptx))
		}
	}
	assemble(t, ptx)
}
