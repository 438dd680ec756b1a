package cnn

import (
	"io"
	"testing"

	"github.com/strata-ir/strata/frontend"
)

// TestTrainLossFalls trains the tiny CNN on the interpreter: the loss
// falls to a third of where it started, and the trained model (batch
// norm in evaluation mode, with the running statistics it learned)
// classifies most of the batch.
func TestTrainLossFalls(t *testing.T) {
	m, losses, err := Train(io.Discard, Tiny, 12, 0.05, frontend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, last := losses[0], losses[len(losses)-1]
	t.Logf("loss %.4f -> %.4f", first, last)
	if !(last < first/3) {
		t.Fatalf("loss %v: did not fall below a third of %g", losses, first)
	}
	x, y := Data(Tiny)
	acc, err := Accuracy(m, x, y)
	if err != nil {
		t.Fatal(err)
	}
	if acc < 0.75 {
		t.Errorf("accuracy %.2f after training, want ≥ 0.75", acc)
	}
	// Batch norm's running statistics moved from their initial values.
	if rm := m.BN1.RunningMean.Float32s(); rm[0] == 0 {
		t.Errorf("running mean not updated: %v", rm)
	}
}
