package frontend

import (
	"errors"
	"strings"
	"testing"
)

// TestNVPTXRunsFlashAttention checks that the nvptx backend's lowering
// runs a bf16 causal attention as one flash kernel, as the bench's engine
// does, and leaves an f32 one (which the kernel does not take) to the
// decomposition: no flash kernel, the scores as a matmul.
func TestNVPTXRunsFlashAttention(t *testing.T) {
	name, got := captureBackend(t)
	attn := func(dt DType) func(q, k, v *Tensor) *Tensor {
		return func(q, k, v *Tensor) *Tensor {
			return Attention(q.Cast(dt), k.Cast(dt), v.Cast(dt), AttentionOptions{Causal: true}).Cast(Float32)
		}
	}
	for _, tc := range []struct {
		dt    DType
		flash bool
	}{{BFloat16, true}, {Float32, false}} {
		*got = nil
		c, err := Compile(attn(tc.dt), Options{Backend: name, Fullgraph: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(Rand(1, 2, 2, 64, 64), Rand(2, 2, 2, 64, 64), Rand(3, 2, 2, 64, 64)); !errors.Is(err, errGenerated) {
			t.Fatalf("%v: want the capturing backend's stop, got %v", tc.dt, err)
		}
		if len(*got) != 1 {
			t.Fatalf("%v: %d graphs generated, want 1", tc.dt, len(*got))
		}
		flash := false
		for _, ptx := range (*got)[0].ptx {
			flash = flash || strings.Contains(ptx, ".entry flash_")
		}
		if flash != tc.flash {
			t.Errorf("%v attention: flash kernel %v, want %v", tc.dt, flash, tc.flash)
		}
	}
}
