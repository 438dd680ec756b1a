package frontend

import (
	"math/bits"
	"runtime"
	"sync"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
)

// This file is the frontend's random number generator: Philox4x32-10, a
// counter-based generator (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011). Block i of a stream is a pure function of
// (seed, i), so any device can compute any part of the stream without
// the parts before it; the global state is a seed and an offset, the
// number of 128-bit blocks drawn so far.
//
// The random bits are drawn on the host, by the Go code of the function,
// when it calls RandUniform, Bernoulli, RandLike or Dropout: inside a
// compiled function they are a concrete tensor, an input of the graph,
// drawn again on every call (the function runs on every call: see
// docs/frontend-state.md). So compiled and eager calls draw the same
// numbers for the same seed, and the offset advances per call: masks
// never repeat across calls.

// philox4x32 returns block ctr of the stream of key: ten rounds of
// Philox4x32.
func philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	const (
		m0, m1 = 0xD2511F53, 0xCD9E8D57
		w0, w1 = 0x9E3779B9, 0xBB67AE85
	)
	for r := range 10 {
		if r > 0 {
			key[0] += w0
			key[1] += w1
		}
		hi0, lo0 := bits.Mul32(m0, ctr[0])
		hi1, lo1 := bits.Mul32(m1, ctr[2])
		ctr = [4]uint32{hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0}
	}
	return ctr
}

// generator is the global random state.
var generator struct {
	sync.Mutex
	seed, offset uint64
}

// Seed resets the global generator to seed, at offset 0 (the state at
// start-up is seed 0). The same seed gives the same numbers eagerly and
// in compiled functions, on every backend.
func Seed(seed uint64) {
	generator.Lock()
	defer generator.Unlock()
	generator.seed, generator.offset = seed, 0
}

// RandState returns the generator's seed and offset (the number of
// 128-bit blocks drawn since Seed), for checkpoints.
func RandState() (seed, offset uint64) {
	generator.Lock()
	defer generator.Unlock()
	return generator.seed, generator.offset
}

// SetRandState restores a state RandState returned.
func SetRandState(seed, offset uint64) {
	generator.Lock()
	defer generator.Unlock()
	generator.seed, generator.offset = seed, offset
}

// randomBits draws n 32-bit words from the global stream.
func randomBits(n int) []uint32 {
	blocks := uint64((n + 3) / 4)
	generator.Lock()
	seed, off := generator.seed, generator.offset
	generator.offset += blocks
	generator.Unlock()
	key := [2]uint32{uint32(seed), uint32(seed >> 32)}
	out := make([]uint32, blocks*4)
	fill := func(lo, hi uint64) {
		for b := lo; b < hi; b++ {
			i := off + b
			r := philox4x32([4]uint32{uint32(i), uint32(i >> 32), 0, 0}, key)
			copy(out[b*4:], r[:])
		}
	}
	// Blocks are independent: large draws are split across the cores.
	workers := uint64(runtime.GOMAXPROCS(0))
	if blocks < 1<<14 || workers < 2 {
		fill(0, blocks)
		return out[:n]
	}
	var wg sync.WaitGroup
	per := (blocks + workers - 1) / workers
	for lo := uint64(0); lo < blocks; lo += per {
		wg.Go(func() { fill(lo, min(lo+per, blocks)) })
	}
	wg.Wait()
	return out[:n]
}

// uniform01 maps a word to [0, 1) with 24 bits (a float32 mantissa).
func uniform01(w uint32) float64 { return float64(w>>8) * (1.0 / (1 << 24)) }

// randSize checks a shape and returns its element count.
func randSize(what string, shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, located(callerLoc(), "%s: negative size in shape %v", what, shape)
		}
		n *= d
	}
	return n, nil
}

// fromFloats makes a tensor of dtype dt (a float type) from fs.
func fromFloats(what string, dt DType, shape []int, fs []float64) *Tensor {
	if !dt.IsFloat() {
		return failed(located(callerLoc(), "%s: dtype %v is not a floating-point type", what, dt))
	}
	var v *interp.Tensor
	var err error
	if dt == Float32 {
		f32s := make([]float32, len(fs))
		for i, f := range fs {
			f32s[i] = float32(f)
		}
		v, err = interp.FromData(ir.F32, toInt64s(shape), f32s)
	} else {
		v, err = interp.FromFloat64s(dt.Elem(), toInt64s(shape), fs)
	}
	if err != nil {
		return failed(located(callerLoc(), "%s: %v", what, err))
	}
	return fromInterp(v)
}

// RandUniform returns a tensor of dtype dt (a floating-point type) with
// elements drawn uniformly from [0, 1) by the global generator (24 random
// bits each), which advances past them.
func RandUniform(dt DType, shape ...int) *Tensor {
	n, err := randSize("RandUniform", shape)
	if err != nil {
		return failed(err)
	}
	ws := randomBits(n)
	fs := make([]float64, n)
	for i, w := range ws {
		fs[i] = uniform01(w)
	}
	return fromFloats("RandUniform", dt, shape, fs)
}

// RandLike returns RandUniform of t's dtype and shape. It reads t's
// sizes without specializing a dynamic graph; the random tensor itself
// has static sizes.
func RandLike(t *Tensor) *Tensor {
	if t.err != nil {
		return failed(t.err)
	}
	return RandUniform(t.dtype, int64sToInts(t.shape)...)
}

// Bernoulli returns a Float32 tensor whose elements are 1 with
// probability p and 0 otherwise, drawn by the global generator.
func Bernoulli(p float64, shape ...int) *Tensor {
	if p < 0 || p > 1 || p != p {
		return failed(located(callerLoc(), "Bernoulli: probability %v is not in [0, 1]", p))
	}
	n, err := randSize("Bernoulli", shape)
	if err != nil {
		return failed(err)
	}
	fs := make([]float64, n)
	for i, w := range randomBits(n) {
		if uniform01(w) < p {
			fs[i] = 1
		}
	}
	return fromFloats("Bernoulli", Float32, shape, fs)
}

// Dropout returns x with each element zeroed with probability p and the
// others scaled by 1/(1-p) when training is true, and x itself when it
// is false (or p is 0). The mask is drawn by the global generator on
// every call, compiled or not.
func Dropout(x *Tensor, p float64, training bool) *Tensor {
	if x == nil {
		return failed(located(callerLoc(), "Dropout: nil tensor"))
	}
	if p < 0 || p > 1 || p != p {
		return failed(located(callerLoc(), "Dropout: probability %v is not in [0, 1]", p))
	}
	if x.err != nil || !training || p == 0 {
		return x
	}
	if !x.dtype.IsFloat() {
		return failed(located(callerLoc(), "Dropout: dtype %v is not a floating-point type", x.dtype))
	}
	shape := int64sToInts(x.shape)
	n, _ := randSize("Dropout", shape)
	fs := make([]float64, n)
	if p < 1 {
		scale := 1 / (1 - p)
		for i, w := range randomBits(n) {
			if uniform01(w) >= p {
				fs[i] = scale
			}
		}
	}
	return x.Mul(fromFloats("Dropout", x.dtype, shape, fs))
}

func int64sToInts(xs []int64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x)
	}
	return out
}
