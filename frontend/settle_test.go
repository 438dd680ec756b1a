package frontend_test

import (
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestSettleWithoutDevice: with no GPU opened there is nothing to wait
// for, and Settle says so without an error.
func TestSettleWithoutDevice(t *testing.T) {
	if frontend.DefaultBackend() == frontend.NVPTXBackend {
		t.Skip("a GPU may be open")
	}
	if err := frontend.Settle(); err != nil {
		t.Fatal(err)
	}
}
