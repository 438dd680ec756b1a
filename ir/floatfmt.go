package ir

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// FormatFloat prints a float of type t (given as its bits) exactly as MLIR's
// printer does: six significant digits in exponent form when that reads back
// to the same value, otherwise the shortest faithful decimal when it has a
// '.', otherwise (infinities, NaNs, large integers) the bits in hex.
func FormatFloat(bits uint64, t *FloatType) string {
	v := FloatFromBits(bits, t)
	if !math.IsInf(v, 0) && !math.IsNaN(v) {
		s := apFloatString(v, t, 6, 0, false)
		if back, err := strconv.ParseFloat(s, 64); err == nil && FloatToBits(back, t) == bits {
			return s
		}
		if s := apFloatString(v, t, 0, 3, true); strings.Contains(s, ".") {
			return s
		}
	}
	if s, ok := wideSpecialHex(v, t); ok {
		return s
	}
	if s, ok := narrowSpecialHex(v, t); ok {
		return s
	}
	return "0x" + strings.ToUpper(strconv.FormatUint(bits, 16))
}

// apFloatString follows LLVM's APFloat::toString, which MLIR's output is made of.
func apFloatString(v float64, t *FloatType, precision, maxPadding int, truncateZero bool) string {
	var out strings.Builder
	if math.Signbit(v) {
		out.WriteByte('-')
		v = -v
	}
	if v == 0 {
		switch {
		case maxPadding != 0:
			out.WriteString("0.0")
		case truncateZero:
			out.WriteString("0.0E+0")
		default:
			out.WriteString("0." + strings.Repeat("0", precision) + "e+00")
		}
		return out.String()
	}
	if precision == 0 {
		precision = 2 + t.Mantissa*59/196
	}
	// v = mant * 2^exp with an integer mant; the exact decimal is mant*5^-exp * 10^exp.
	frac, e2 := math.Frexp(v)
	mant := uint64(math.Ldexp(frac, 53))
	exp := e2 - 53
	for mant&1 == 0 {
		mant >>= 1
		exp++
	}
	sig := new(big.Int).SetUint64(mant)
	if exp > 0 {
		sig.Lsh(sig, uint(exp))
		exp = 0
	} else if exp < 0 {
		sig.Mul(sig, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(-exp)), nil))
	}
	// Like APFloat, first drop the decimal digits that surely lie beyond the
	// precision by truncating division, then round what is left. (This is
	// why f16 0.1, exactly 0.0999755859375, prints as 9.997550e-02.)
	bitsRequired := (precision*196 + 58) / 59
	if bits := sig.BitLen(); bits > bitsRequired {
		if tens := (bits - bitsRequired) * 59 / 196; tens > 0 {
			sig.Quo(sig, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(tens)), nil))
			exp += tens
		}
	}
	digits := []byte(sig.String()) // most significant first
	// Drop trailing zeros into the exponent.
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
		exp++
	}
	// Round half up to the requested number of significant digits.
	if n := len(digits); n > precision {
		drop := n - precision
		exp += drop
		roundUp := digits[precision] >= '5'
		digits = digits[:precision]
		if roundUp {
			i := len(digits) - 1
			for i >= 0 && digits[i] == '9' {
				i--
			}
			if i < 0 {
				exp += len(digits)
				digits = []byte{'1'}
			} else {
				digits[i]++
				exp += len(digits) - 1 - i
				digits = digits[:i+1]
			}
		}
		for len(digits) > 1 && digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
			exp++
		}
	}
	n := len(digits)
	scientific := maxPadding == 0
	if !scientific {
		if exp >= 0 {
			scientific = exp > maxPadding || n+exp > precision
		} else if msd := exp + n - 1; msd < 0 {
			scientific = -msd > maxPadding
		}
	}
	if scientific {
		exp += n - 1
		out.WriteByte(digits[0])
		out.WriteByte('.')
		if n == 1 && truncateZero {
			out.WriteByte('0')
		} else {
			out.Write(digits[1:])
		}
		if !truncateZero && precision > n-1 {
			out.WriteString(strings.Repeat("0", precision-n+1))
		}
		if truncateZero {
			out.WriteByte('E')
		} else {
			out.WriteByte('e')
		}
		if exp >= 0 {
			out.WriteByte('+')
		} else {
			out.WriteByte('-')
			exp = -exp
		}
		es := strconv.Itoa(exp)
		if !truncateZero && len(es) < 2 {
			es = "0" + es
		}
		out.WriteString(es)
		return out.String()
	}
	if exp >= 0 {
		out.Write(digits)
		out.WriteString(strings.Repeat("0", exp))
		return out.String()
	}
	whole := exp + n
	if whole > 0 {
		out.Write(digits[:whole])
		out.WriteByte('.')
		out.Write(digits[whole:])
	} else {
		out.WriteString("0.")
		out.WriteString(strings.Repeat("0", -whole))
		out.Write(digits)
	}
	return out.String()
}
