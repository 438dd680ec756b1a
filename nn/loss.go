package nn

import (
	"math"

	"github.com/strata-ir/strata/frontend"
)

// CrossEntropy returns the mean over N of the cross-entropy of logits
// [N, C] with int64 class labels [N], with label smoothing ε as PyTorch
// defines it: (1-ε)·(-log p[label]) + ε·mean_c(-log p[c]). With
// w = (1-ε)·onehot(label) + ε/C, a row's loss is lse·Σw - Σ w·x, lse the
// row's logsumexp: the log-probabilities are never formed, so the backward
// pass is softmax·Σw - w (times the cotangent), one elementwise pass over
// the logits and lse. The label's class is picked with a one-hot mask
// (labels == class). Labels the host holds (frontend.Tensor.KnownInt64s:
// made on the host or uploaded from it, as a step's inputs are) are
// checked before anything is recorded: one outside [0, C) fails the loss
// with an error located at the caller's line, so a compiled step runs
// nothing. Labels computed on the device (a reshape of the inputs inside
// the step, a GPU-only tensor) are not checked there, and a label outside
// [0, C) picks nothing; CheckLabels checks those before a step. f16 and bf16 logits
// are computed in float32 (as PyTorch's autocast does) and the loss
// rounded back to their type.
func CrossEntropy(logits, labels *frontend.Tensor, smoothing float64) *frontend.Tensor {
	if f := firstErr(logits, labels); f != nil {
		return f
	}
	if logits.Rank() != 2 {
		return errorf("CrossEntropy: logits of shape %v, want [N, C]", logits.Shape())
	}
	if labels.DType() != frontend.Int64 {
		return errorf("CrossEntropy: labels are %v, want int64", labels.DType())
	}
	ls := logits.Shape()
	if labels.Rank() != 1 || labels.Shape()[0] != ls[0] {
		return errorf("CrossEntropy: labels of shape %v, want [%d]", labels.Shape(), ls[0])
	}
	if smoothing < 0 || smoothing > 1 {
		return errorf("CrossEntropy: label smoothing %g, want it in [0, 1]", smoothing)
	}
	n, c := ls[0], ls[1]
	if vals, ok := labels.KnownInt64s(); ok {
		for i, l := range vals {
			if l < 0 || l >= int64(c) {
				return errorf("CrossEntropy: label %d at position %d is out of range [0, %d)", l, i, c)
			}
		}
	}
	dt := logits.DType()
	x := logits
	if dt == frontend.BFloat16 || dt == frontend.Float16 {
		x = logits.Cast(frontend.Float32)
	}
	hot := oneHot(labels, n, c).Cast(x.DType())
	// Σ_c w_c: 1-ε where the label is a class, 0 where it picks nothing,
	// plus ε.
	in := labels.Cmp("ge", index(0)).Cast(x.DType()).
		Mul(labels.Cmp("lt", index(int64(c))).Cast(x.DType()))
	w, total := hot, in
	if smoothing > 0 {
		w = hot.Mul(full(x, 1-smoothing)).Add(full(x, smoothing/float64(c)))
		total = in.Mul(full(x, 1-smoothing)).Add(full(x, smoothing))
	}
	rows := x.LogSumExp(1, false).Mul(total).Sub(x.Mul(w).Sum([]int{1}, false))
	loss := rows.Sum(nil, false).Mul(full(x, 1/float64(n)))
	if loss.DType() != dt {
		loss = loss.Cast(dt)
	}
	return loss
}

// oneHot is labels [N] == class [C], [N, C] booleans. The comparison runs
// in int32 where C allows: the mask's kernels (the loss's row kernel and
// its gradient) read the class table once per logit, 4 bytes rather than 8
// (GPT-2: 3.3 GB of cache reads a pass in int64, against 0.8 GB of bf16
// logits). A label outside [0, C) becomes -1 first, which no class
// matches, as it matched none in int64.
func oneHot(labels *frontend.Tensor, n, c int) *frontend.Tensor {
	if c > math.MaxInt32 {
		return labels.Reshape(n, 1).Cmp("eq", classes(c))
	}
	none := index(-1)
	in := frontend.Where(labels.Cmp("ge", index(0)), frontend.Where(labels.Cmp("lt", index(int64(c))), labels, none), none)
	return in.Cast(frontend.Int32).Reshape(n, 1).Cmp("eq", classes32(c))
}

// CheckLabels returns an error naming the first label of labels (a
// concrete int64 tensor) outside [0, classes), located at the caller's
// line.
func CheckLabels(labels *frontend.Tensor, numClasses int) error {
	if err := labels.Err(); err != nil {
		return err
	}
	if labels.DType() != frontend.Int64 {
		return located("labels are %v, want int64", labels.DType())
	}
	for i, l := range labels.Int64s() {
		if l < 0 || l >= int64(numClasses) {
			return located("label %d at position %d is out of range [0, %d)", l, i, numClasses)
		}
	}
	return nil
}
