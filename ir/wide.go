package ir

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// WideAttr is a typed literal kept as its text because its value does not
// fit the in-memory forms of IntegerAttr, FloatAttr and DenseAttr (64 bits
// per element): an integer of a type wider than 64 bits ("2 : i128"),
// dense elements of such a type, or an f80/f128 value that float64 cannot
// hold exactly (a NaN payload, 1.0e4000). The parser checks the literal
// and normalizes it as upstream prints it; passes and the interpreter do
// not compute with it, and it prints back unchanged.
type WideAttr struct {
	Value string // "-5", "dense<[1, 2]>", "0x7FFFC000000000000001"
	Type  Type
}

func (WideAttr) isAttr() {}

// String implements Attribute.
func (a WideAttr) String() string { return a.Value + " : " + a.Type.String() }

// wrapWide wraps n, already checked against typ's range, to the value
// upstream prints: signless integers read as signed, so 2^66 : i67 is
// -2^66.
func wrapWide(n *big.Int, typ Type) *big.Int {
	width := IntWidth(typ)
	if it, ok := typ.(*IntegerType); ok && it.Signedness == Unsigned || width == 0 {
		return n
	}
	half := new(big.Int).Lsh(big.NewInt(1), uint(width-1))
	if n.Cmp(half) >= 0 {
		return new(big.Int).Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(width)))
	}
	return n
}

// wideIntAttr reads an integer literal of a type wider than 64 bits.
func wideIntAttr(text string, neg bool, typ Type) (Attribute, error) {
	n, err := wideIntLiteral(text, neg, typ)
	if err != nil {
		return nil, err
	}
	return WideAttr{Value: wrapWide(n, typ).String(), Type: typ}, nil
}

// wideDense reads the elements of dense<...> of an integer type wider than
// 64 bits: each is checked against the type, and the text is normalized
// as upstream prints it (one value when all are equal). An error is
// reported at the element at fault, whose index comes with it.
func wideDense(elems []denseLit, st ShapedType) (Attribute, int, error) {
	elemT := st.ElementType()
	vals := make([]string, len(elems))
	for i, e := range elems {
		switch {
		case e.isStr || e.boolean != 0 || e.complex != nil || e.tok.kind != tokInteger:
			return nil, i, fmt.Errorf("expected integer elements of type %s", elemT)
		}
		n, err := wideIntLiteral(e.tok.text, e.neg, elemT)
		if err != nil {
			return nil, i, err
		}
		vals[i] = wrapWide(n, elemT).String()
	}
	splat := true
	for _, v := range vals {
		splat = splat && v == vals[0]
	}
	if splat {
		return WideAttr{Value: "dense<" + vals[0] + ">", Type: st}, 0, nil
	}
	var b strings.Builder
	b.WriteString("dense<")
	writeNested(&b, st.Shape(), func(i int64) { b.WriteString(vals[i]) })
	b.WriteString(">")
	return WideAttr{Value: b.String(), Type: st}, 0, nil
}

// wideFloatLayout is the encoding of an 80- or 128-bit float: the
// exponent's width and bias, the stored mantissa bits, and whether the
// integer bit is explicit (x87's f80) rather than implied (f128).
type wideFloatLayout struct {
	expBits, mantBits int
	explicitOne       bool
}

var wideFloats = map[*FloatType]wideFloatLayout{
	F80:  {expBits: 15, mantBits: 64, explicitOne: true},
	F128: {expBits: 15, mantBits: 112},
}

// wideHexFloat reads a hexadecimal bit pattern of an f80 or f128 value: a
// FloatAttr when float64 holds the value exactly (infinities and the
// canonical quiet NaN included), else a WideAttr of the pattern.
func wideHexFloat(text string, t *FloatType) (Attribute, error) {
	lay := wideFloats[t]
	bits, ok := new(big.Int).SetString(text[2:], 16)
	if !ok || bits.BitLen() > t.Width {
		return nil, fmt.Errorf("hexadecimal float constant out of range for type %s", t)
	}
	verbatim := WideAttr{Value: wideHex(bits, t), Type: t}
	mant := new(big.Int).And(bits, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(lay.mantBits)), big.NewInt(1)))
	exp := int(new(big.Int).Rsh(bits, uint(lay.mantBits)).Int64() & (1<<lay.expBits - 1))
	neg := bits.Bit(t.Width-1) == 1
	sign := 1.0
	if neg {
		sign = -1
	}
	frac := new(big.Int).Set(mant) // the fraction without the integer bit
	one := 0
	if lay.explicitOne {
		one = int(mant.Bit(lay.mantBits - 1))
		frac.SetBit(frac, lay.mantBits-1, 0)
	}
	fracBits := lay.mantBits
	if lay.explicitOne {
		fracBits--
	}
	if exp == 1<<lay.expBits-1 {
		switch {
		case frac.Sign() == 0 && (!lay.explicitOne || one == 1):
			return Float(math.Inf(int(sign)), t), nil
		case frac.Cmp(new(big.Int).Lsh(big.NewInt(1), uint(fracBits-1))) == 0 && (!lay.explicitOne || one == 1):
			return FloatAttr{Bits: math.Float64bits(math.Copysign(math.NaN(), sign)), Type: t}, nil
		}
		return verbatim, nil
	}
	// value = significand * 2^(e - bias - fracBits)
	bias := 1<<(lay.expBits-1) - 1
	sig := new(big.Int).Set(frac)
	e := exp
	if exp == 0 {
		e = 1
		if lay.explicitOne && one == 1 {
			return verbatim, nil // a pseudo-denormal
		}
	} else if !lay.explicitOne || one == 1 {
		sig.SetBit(sig, fracBits, 1)
	} else {
		return verbatim, nil // an unnormal: x87 refuses it
	}
	v := new(big.Float).SetPrec(uint(fracBits + 1)).SetInt(sig)
	v.SetMantExp(v, e-bias-fracBits)
	f, acc := v.Float64()
	if acc != big.Exact || math.IsInf(f, 0) {
		return verbatim, nil
	}
	return Float(sign*f, t), nil
}

// wideHex prints a bit pattern as upstream does: 0x, upper case, every
// digit of the type's width.
func wideHex(bits *big.Int, t *FloatType) string {
	s := strings.ToUpper(bits.Text(16))
	return "0x" + strings.Repeat("0", max(0, (t.Width+3)/4-len(s))) + s
}

// wideSpecialHex is the bit pattern of an infinity or NaN of f80 or f128
// (a NaN is the canonical quiet one), for FormatFloat.
func wideSpecialHex(v float64, t *FloatType) (string, bool) {
	lay, ok := wideFloats[t]
	if !ok {
		return "", false
	}
	bits := new(big.Int)
	if math.Signbit(v) {
		bits.SetBit(bits, t.Width-1, 1)
	}
	for i := range lay.expBits {
		bits.SetBit(bits, lay.mantBits+i, 1)
	}
	top := lay.mantBits - 1 // x87's integer bit, or f128's quiet bit
	if lay.explicitOne {
		bits.SetBit(bits, top, 1)
		top--
	}
	if math.IsNaN(v) {
		bits.SetBit(bits, top, 1)
	}
	return wideHex(bits, t), true
}
