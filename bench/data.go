package bench

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/strata-ir/strata/runtime/npy"
)

// MakeInput returns the input t of a workload as float32 values: normal with
// standard deviation t.Std from a stream keyed by seed and key (so every
// input of every workload has its own reproducible data), or t.Fill. bf16
// inputs are rounded to bf16, so that the float32 .npy both sides read holds
// exactly the values each side computes on.
func MakeInput(t TensorSpec, seed uint64, key string) []float32 {
	n := t.Elems()
	vs := make([]float32, n)
	if t.Fill != nil {
		for i := range vs {
			vs[i] = float32(*t.Fill)
		}
	} else {
		h := fnv.New64a()
		h.Write([]byte(key))
		r := rand.New(rand.NewPCG(seed, h.Sum64()))
		for i := range vs {
			vs[i] = float32(r.NormFloat64() * t.Std)
		}
	}
	if t.DType == BF16 {
		for i, v := range vs {
			vs[i] = RoundBF16(v)
		}
	}
	return vs
}

// RoundBF16 rounds v to the nearest bf16 value (ties to even), keeping NaN.
func RoundBF16(v float32) float32 {
	b := math.Float32bits(v)
	if v != v {
		return v
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// ToNPY wraps float32 values of spec t as a .npy array (bf16 as float32).
func ToNPY(t TensorSpec, vs []float32) (*npy.Array, error) {
	return npy.FromSlice(t.Shape, vs)
}

// FromNPY returns the values of a .npy array as float64, checking its shape
// against t. float32, float64 and float16 arrays are accepted.
func FromNPY(t TensorSpec, a *npy.Array) ([]float64, error) {
	if !sameShape(a.Shape, t.Shape) {
		return nil, fmt.Errorf("%s: shape %v, want %v", t.Name, a.Shape, t.Shape)
	}
	switch a.DType {
	case npy.Float32:
		vs, err := npy.ToSlice[float32](a)
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(vs))
		for i, v := range vs {
			out[i] = float64(v)
		}
		return out, nil
	case npy.Float64:
		return npy.ToSlice[float64](a)
	default:
		return nil, fmt.Errorf("%s: dtype %v, want float32 or float64", t.Name, a.DType)
	}
}

func sameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Check is the comparison of one result with its reference.
type Check struct {
	// MaxAbs is max |got − want|.
	MaxAbs float64 `json:"max_abs"`
	// MaxRel is max |got − want| / |want| over elements with |want| at least
	// the reference's RMS (elsewhere relative error says little).
	MaxRel float64 `json:"max_rel"`
	// NormRel is ‖got − want‖₂ / ‖want‖₂.
	NormRel float64 `json:"norm_rel"`
	// MaxScaled is max |got − want| / (|want| + rms(want)): the figure held
	// against Tol. It is relative for large elements and absolute, at the
	// reference's scale, near zero, where cancellation makes relative error
	// meaningless.
	MaxScaled float64 `json:"max_scaled"`
	Tol       float64 `json:"tol"`
	// Mismatched counts NaNs or infinities on one side only, or elements over
	// the tolerance.
	Mismatched int64 `json:"mismatched"`
	// NonFinite counts the NaNs and infinities on one side only (included
	// in Mismatched; the other figures leave them out).
	NonFinite int64 `json:"non_finite,omitempty"`
	OK        bool  `json:"ok"`
}

// Compare checks got against want with tolerance tol (see Check.MaxScaled).
// A NaN on either side where the other has none never passes.
func Compare(got, want []float64, tol float64) (Check, error) {
	c, _, err := compareAt(got, want, tol)
	return c, err
}

// compareAt is Compare, also returning the flat index of the element that
// decides the check: the first NaN or infinity on one side only, else
// the element of MaxScaled; -1 when the two agree exactly.
func compareAt(got, want []float64, tol float64) (Check, int, error) {
	c, worst := Check{Tol: tol}, -1
	if len(got) != len(want) {
		return c, worst, fmt.Errorf("compare: %d elements, want %d", len(got), len(want))
	}
	var sumSq, diffSq float64
	finite := 0
	nonFinite := false // worst is a NaN or infinity on one side only
	for _, w := range want {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			sumSq += w * w
			finite++
		}
	}
	rms := 0.0
	if finite > 0 {
		rms = math.Sqrt(sumSq / float64(finite))
	}
	for i, g := range got {
		w := want[i]
		if math.IsNaN(g) || math.IsNaN(w) || math.IsInf(g, 0) || math.IsInf(w, 0) {
			if !(math.IsNaN(g) && math.IsNaN(w)) && g != w {
				if !nonFinite {
					worst, nonFinite = i, true
				}
				c.Mismatched++
				c.NonFinite++
			}
			continue
		}
		d := math.Abs(g - w)
		diffSq += d * d
		c.MaxAbs = max(c.MaxAbs, d)
		if math.Abs(w) >= rms && w != 0 {
			c.MaxRel = max(c.MaxRel, d/math.Abs(w))
		}
		den := math.Abs(w) + rms
		var s float64
		switch {
		case den > 0:
			s = d / den
		case d > 0:
			s = math.MaxFloat64 // JSON has no infinity
		}
		if s > c.MaxScaled && !nonFinite {
			worst = i
		}
		c.MaxScaled = max(c.MaxScaled, s)
		if s > tol {
			c.Mismatched++
		}
	}
	if sumSq > 0 {
		c.NormRel = math.Sqrt(diffSq / sumSq)
	} else if diffSq > 0 {
		c.NormRel = math.MaxFloat64
	}
	c.OK = c.Mismatched == 0
	return c, worst, nil
}

// Merge folds c into a running check over several outputs: the worst of
// each figure.
func (c Check) Merge(o Check) Check {
	return Check{
		MaxAbs:     max(c.MaxAbs, o.MaxAbs),
		MaxRel:     max(c.MaxRel, o.MaxRel),
		NormRel:    max(c.NormRel, o.NormRel),
		MaxScaled:  max(c.MaxScaled, o.MaxScaled),
		Tol:        max(c.Tol, o.Tol),
		Mismatched: c.Mismatched + o.Mismatched,
		NonFinite:  c.NonFinite + o.NonFinite,
		OK:         c.OK && o.OK,
	}
}
