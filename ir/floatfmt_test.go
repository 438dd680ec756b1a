package ir_test

import (
	"math"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// TestFormatFloat checks FormatFloat against what mlir-opt 19 prints for
// the same attribute values (see testdata/compat/attributes.mlir).
func TestFormatFloat(t *testing.T) {
	tests := []struct {
		v    float64
		t    *ir.FloatType
		want string
	}{
		{1.5, ir.F32, "1.500000e+00"},
		{0.1, ir.F64, "1.000000e-01"},
		{1e-10, ir.F64, "1.000000e-10"},
		{1e20, ir.F64, "1.000000e+20"},
		{0.333333343, ir.F32, "0.333333343"},
		{1.2345678901234567, ir.F64, "1.2345678901234567"},
		{123456789.0, ir.F64, "0x419D6F3454000000"},
		{3.14159, ir.F32, "3.141590e+00"},
		{math.Copysign(0, -1), ir.F32, "-0.000000e+00"},
		{math.Inf(1), ir.F32, "0x7F800000"},
		{math.Inf(-1), ir.F32, "0xFF800000"},
		{math.NaN(), ir.F32, "0x7FC00000"},
		{ir.FloatFromBits(0x7FF8000000000000, ir.F64), ir.F64, "0x7FF8000000000000"},
		{1e-45, ir.F32, "1.401300e-45"},
		{4.9406564584124654e-324, ir.F64, "4.940660e-324"},
		{65504, ir.F16, "6.550400e+04"},
		{6.0e-8, ir.F16, "5.960460e-08"},
		{0.1, ir.F16, "9.997550e-02"},
		{1e-3, ir.F16, "1.000400e-03"},
		{0.1, ir.BF16, "1.000980e-01"},
		{3.38e38, ir.BF16, "3.376240e+38"},
	}
	for _, tt := range tests {
		bits := ir.FloatToBits(tt.v, tt.t)
		if got := ir.FormatFloat(bits, tt.t); got != tt.want {
			t.Errorf("FormatFloat(%v : %s) = %s, want %s", tt.v, tt.t, got, tt.want)
		}
	}
}
