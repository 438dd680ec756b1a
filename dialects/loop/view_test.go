package loop_test

import (
	"strings"
	"testing"

	"github.com/strata-ir/strata/dialects"
	"github.com/strata-ir/strata/ir"
)

func TestViewVerify(t *testing.T) {
	tests := []struct {
		from, to, err string
	}{
		{"memref<4x?xf32>", "memref<?xf32>", ""},
		{"memref<4x8xf32>", "memref<32xf32>", ""},
		{"memref<4x8xf32>", "memref<2x?xf32>", ""},
		{"memref<4x8xf32>", "memref<31xf32>", "element counts differ"},
		{"memref<4x8xf32>", "memref<?x?xf32>", "more than one dynamic dimension"},
		{"memref<4x8xf32>", "memref<32xf16>", "element types"},
		{"memref<4x8xf32>", "memref<32xf32, 3>", "memory spaces"},
	}
	for _, tc := range tests {
		src := "func.func @f(%m: " + tc.from + ") {\n  %v = \"loop.view\"(%m) : (" + tc.from + ") -> " + tc.to + "\n  return\n}\n"
		ctx := dialects.NewContext()
		m, err := ir.Parse(ctx, src, ir.ParseOptions{Filename: "view.mlir"})
		if err == nil {
			err = ir.Verify(m)
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s -> %s: %v", tc.from, tc.to, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s -> %s: got %v, want an error containing %q", tc.from, tc.to, err, tc.err)
		}
	}
}
