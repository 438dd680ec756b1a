package exec

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ir/strata/ir"
	"github.com/strata-ir/strata/runtime/interp"
	"github.com/strata-ir/strata/targets/nvptx"
)

// openGPU opens GPU 0 or skips the test, saying why.
func openGPU(t *testing.T) *Runtime {
	t.Helper()
	rt, err := Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	return rt
}

// TestGPUMatchesInterpreter runs the testdata programs on the GPU with
// both PTX backends (llc where it is installed) on fresh random data and
// compares with the interpreter.
func TestGPUMatchesInterpreter(t *testing.T) {
	rt := openGPU(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	backends := []string{"native"}
	if _, err := nvptx.FindLLC(); err == nil {
		backends = append(backends, "llc")
	}
	for _, backend := range backends {
		for _, c := range cases {
			t.Run(backend+"/"+c.file, func(t *testing.T) {
				p := compileFile(t, c.file)
				if backend != "native" {
					var err error
					if p, err = Compile(p.Module(), Options{PTXBackend: backend}); err != nil {
						t.Fatal(err)
					}
				}
				args := c.args(t, rand.New(rand.NewPCG(seed, 1)))
				got, err := p.Run(rt, "main", args)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, p, args, got, c.rel)
			})
		}
	}
	if s := rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes still allocated", s.Allocated)
	}
}

// TestGPUTime times vadd.mlir (two kernels, one temporary) on 16M
// elements with events and reports the bandwidth.
func TestGPUTime(t *testing.T) {
	rt := openGPU(t)
	p := compileFile(t, "vadd.mlir")
	const n = 16 << 20
	x, err := interp.NewBuffer(ir.F32, []int64{n})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := p.RunTimed(rt, "main", []interp.Value{x, x}, 3, 20)
	if err != nil {
		t.Fatal(err)
	}
	if ms <= 0 {
		t.Fatalf("median %v ms", ms)
	}
	bytes := 2 * 3 * 4 * float64(n) // two launches, each reads two and writes one f32 per element
	t.Logf("vadd x2 on %d floats: %.3f ms median, %.0f GB/s (compile %v)", n, ms, bytes/ms/1e6, p.Times())
}

// TestGPUWarmStart measures NewProgram from PTX text plus the first run,
// as a compile-cache hit does, on a fresh Runtime.
func TestGPUWarmStart(t *testing.T) {
	cold := compileFile(t, "softmax.mlir")
	rt := openGPU(t)
	args := matrix(64, 1024)(t, rand.New(rand.NewPCG(5, 6)))
	start := time.Now()
	p, err := NewProgram(cold.Module(), cold.PTX())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(rt, "main", args); err != nil {
		t.Fatal(err)
	}
	t.Logf("warm start (module load + first run of softmax 64x1024): %v; cold compile %v", time.Since(start), cold.Times())
}

// TestGPUGraphReplay captures each testdata program into a CUDA graph,
// replays it on new inputs of the same shape and compares every replay
// with the interpreter; it also times plain launches against replays.
func TestGPUGraphReplay(t *testing.T) {
	rt := openGPU(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			p := compileFile(t, c.file)
			r := NewRunner(p, rt, "main", true)
			defer r.Close()
			rng := rand.New(rand.NewPCG(seed, 2))
			for i := range 3 {
				args := c.args(t, rng)
				got, err := r.Run(args)
				if err != nil {
					t.Fatal(err)
				}
				compare(t, p, args, got, c.rel)
				info, err := r.Graph(args)
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if info.Kernels == 0 || info.Kernels != len(p.plans["main"].plan.launches) {
					t.Errorf("graph of %d kernels", info.Kernels)
				}
				if i == 2 {
					args := c.args(t, rng)
					graphMS, err := r.Time(args, 3, 20)
					if err != nil {
						t.Fatal(err)
					}
					plainMS, err := p.RunTimed(rt, "main", args, 3, 20)
					if err != nil {
						t.Fatal(err)
					}
					// do_bench's estimate: a 256 MiB clear (tens of
					// microseconds on any GPU) and a replay, per launch.
					estMS, err := r.Estimate(args, 5)
					if err != nil {
						t.Fatal(err)
					}
					if estMS <= graphMS {
						t.Errorf("estimate %.4f ms a clear and replay, not above the replay's %.4f", estMS, graphMS)
					}
					if _, err := r.Estimate(args, 0); err == nil {
						t.Error("an estimate of no launches: no error")
					}
					t.Logf("%v; replay %.4f ms, plain launches %.4f ms, estimate %.4f ms", info, graphMS, plainMS, estMS)
				}
			}
		})
	}
	if s := rt.Allocator().Stats(); s.Allocated != 0 {
		t.Errorf("%d bytes still allocated", s.Allocated)
	}
}

// TestGPULoadPolicies runs the testdata programs under every load policy
// on the GPU (whole modules through the module-load JIT, a module per
// kernel, a module per kernel through the linker at once) against the
// interpreter, and checks that Loads reports each gpu.module once.
func TestGPULoadPolicies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, policy := range []string{"whole", "split", "link", "link:1,O1"} {
		p, err := ParseLoadPolicy(policy)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(policy, func(t *testing.T) {
			rt := openGPU(t)
			rt.SetLoadPolicy(p)
			for _, c := range cases {
				prog := compileFile(t, c.file)
				args := c.args(t, rand.New(rand.NewPCG(seed, 3)))
				got, err := prog.Run(rt, "main", args)
				if err != nil {
					t.Fatalf("%s: %v", c.file, err)
				}
				compare(t, prog, args, got, c.rel)
				loads, err := prog.Loads(rt, "main")
				if err != nil || len(loads) != 1 || loads[0].Parts < 1 {
					t.Errorf("%s: Loads = %+v, %v", c.file, loads, err)
				}
			}
		})
	}
}
