package exec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestGPUTieredLoad runs each testdata program on the GPU under the
// default policy with no link cache: the first launches run the code of
// the first tier (JIT level 0), then, once the final tier is swapped in
// (Bound.settle), the same Bound runs it. Both match the interpreter and
// each other bit for bit: the PTX fixes every rounding, so the JIT level
// changes speed, not values.
func TestGPUTieredLoad(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rt := openGPU(t)
	rt.linkCache = nil // compile every kernel, in two tiers
	rt.SetLoadPolicy(TieredLoadPolicy)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := compileFile(t, c.file)
			args := c.args(t, rand.New(rand.NewPCG(seed, 5)))
			b, err := p.Prepare(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Free()
			tiers := 0
			for _, k := range b.kernels {
				if _, ok := k.(*tieredKernel); ok {
					tiers++
				}
			}
			if tiers != len(b.kernels) {
				t.Fatalf("%d of %d kernels loaded in tiers, want all", tiers, len(b.kernels))
			}
			run := func() [][]float64 {
				t.Helper()
				if err := b.Launch(); err != nil {
					t.Fatal(err)
				}
				got, err := b.Results()
				if err != nil {
					t.Fatal(err)
				}
				compare(t, p, args, got, c.rel)
				var out [][]float64
				for _, g := range got {
					out = append(out, tensor(t, g).Float64s())
				}
				return out
			}
			first := run()
			b.settle()
			for _, k := range b.kernels {
				if !k.(*tieredKernel).mod.upgraded() {
					t.Errorf("kernel %s still runs its first tier after settle", k.Name())
				}
			}
			final := run()
			for i := range first {
				for j := range first[i] {
					if math.Float64bits(first[i][j]) != math.Float64bits(final[i][j]) {
						t.Fatalf("result %d[%d]: first tier %g, final %g", i, j, first[i][j], final[i][j])
					}
				}
			}
		})
	}
	if err := rt.Settle(); err != nil {
		t.Errorf("Settle: %v", err)
	}
}

// TestGPUPrecompile compiles the testdata programs with the toolkit's
// ptxas (FindPTXAS when the tests started; skipped without one) and runs them on the GPU: the
// driver loads the cubins without compiling (no module is tiered), and
// the results match the interpreter.
func TestGPUPrecompile(t *testing.T) {
	path := testPTXAS
	if path == "" {
		t.Skip("no ptxas (STRATA_PTXAS, PATH, CUDA_HOME, /usr/local/cuda)")
	}
	t.Logf("ptxas: %s", path)
	seed := uint64(time.Now().UnixNano())
	rt := openGPU(t)
	rt.linkCache = nil
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := compileFile(t, c.file)
			if err := p.Precompile("main", path); err != nil {
				t.Fatal(err)
			}
			args := c.args(t, rand.New(rand.NewPCG(seed, 7)))
			start := time.Now()
			if err := p.Load(rt, "main"); err != nil {
				t.Fatal(err)
			}
			t.Logf("precompile + load: %v", time.Since(start))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, c.rel)
			p.waitPrecompiles()
			for text := range p.pre {
				if _, ok := p.cubinFor(text); !ok {
					t.Errorf("ptxas failed: %v", p.pre[text].err)
				}
			}
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, m := range rt.modules {
		if _, tiered := m.(*tieredModule); tiered {
			t.Error("a module was compiled by the driver in tiers, not loaded from ptxas's cubin")
		}
	}
}

// TestGPULoadPolicyPTXAS runs the testdata programs on the GPU under the
// default policy with the toolkit's ptxas (LoadPolicy.PTXAS; skipped
// without one): every kernel loads from ptxas's cubin, none is compiled
// by the driver in tiers, and the results match the interpreter.
func TestGPULoadPolicyPTXAS(t *testing.T) {
	if testPTXAS == "" {
		t.Skip("no ptxas (STRATA_PTXAS, PATH, CUDA_HOME, /usr/local/cuda)")
	}
	t.Setenv(PTXASEnv, testPTXAS)
	runPTXASPolicy(t, DefaultLoadPolicy)
}

// TestGPULoadPolicyPTXASBins runs the testdata programs on the GPU under
// the ptxas policy with one slot, so that each program's kernels share
// one ptxas process and one cubin (ptxasBins; skipped without a ptxas):
// every module is ptxas's, some a bin's, and the results match the
// interpreter.
func TestGPULoadPolicyPTXASBins(t *testing.T) {
	if testPTXAS == "" {
		t.Skip("no ptxas (STRATA_PTXAS, PATH, CUDA_HOME, /usr/local/cuda)")
	}
	t.Setenv(PTXASEnv, testPTXAS)
	policy := DefaultLoadPolicy
	policy.PTXAS, policy.Parallel = true, 1
	if bins := runPTXASPolicy(t, policy); bins == 0 {
		t.Error("no kernel loaded from a bin of ptxas's")
	}
}

// runPTXASPolicy runs the testdata programs on the GPU under policy,
// checks their results and that every module was loaded from ptxas's
// cubins, and returns how many came from bins.
func runPTXASPolicy(t *testing.T, policy LoadPolicy) (bins int) {
	t.Logf("ptxas: %s", testPTXAS)
	seed := uint64(time.Now().UnixNano())
	rt := openGPU(t)
	rt.linkCache = nil
	rt.SetLoadPolicy(policy)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := compileFile(t, c.file)
			args := c.args(t, rand.New(rand.NewPCG(seed, 8)))
			got, err := p.Run(rt, "main", args)
			if err != nil {
				t.Fatal(err)
			}
			compare(t, p, args, got, c.rel)
		})
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, m := range rt.modules {
		switch m.(type) {
		case binModule:
			bins++
		case ptxasModule:
		default:
			t.Errorf("a module (%T) was not loaded from ptxas's cubin", m)
		}
	}
	return bins
}
