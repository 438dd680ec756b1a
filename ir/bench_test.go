package ir_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/strata-ir/strata/ir"
)

// benchSizes are the op counts the benchmarks run at; comparing ns/op/op
// between them shows whether parsing scales linearly.
var benchSizes = []int{100_000, 1_000_000}

var (
	benchMu    sync.Mutex
	benchFiles = map[int]string{}
)

// benchSource returns a generic-form module of about nOps ops: functions of
// 1000 ops each, a realistic mix of arith-like elementwise ops on dynamic
// tensors, constants with dense attributes, matmuls with attributes, and
// scalar index arithmetic.
func benchSource(nOps int) string {
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchFiles[nOps]; ok {
		return s
	}
	const perFunc = 1000
	const tt = "tensor<?x128xf32>"
	var b strings.Builder
	b.WriteString("\"builtin.module\"() ({\n")
	// The funcs are unregistered ops, not isolated from above, so value
	// numbers run on across them exactly as the printer numbers them.
	id := 0
	for f := 0; f*perFunc < nOps; f++ {
		fmt.Fprintf(&b, "  \"func.func\"() <{function_type = (%s, %s, index) -> %s, sym_name = \"f%d\"}> ({\n", tt, tt, tt, f)
		a0, a1, a2 := fmt.Sprintf("%%arg%d", 3*f), fmt.Sprintf("%%arg%d", 3*f+1), fmt.Sprintf("%%arg%d", 3*f+2)
		fmt.Fprintf(&b, "  ^bb0(%s: %s, %s: %s, %s: index):\n", a0, tt, a1, tt, a2)
		last, lastIdx := a0, a2
		for i := 0; i < perFunc-1; i++ {
			res := fmt.Sprintf("%%%d", id)
			id++
			switch i % 8 {
			case 0:
				fmt.Fprintf(&b, "    %s = \"arith.constant\"() <{value = dense<%.6e> : tensor<128xf32>}> : () -> tensor<128xf32>\n", res, float64(i%17)+0.5)
			case 1, 4:
				fmt.Fprintf(&b, "    %s = \"arith.addf\"(%s, %s) <{fastmath = #arith.fastmath<none>}> : (%s, %s) -> %s\n", res, last, a1, tt, tt, tt)
				last = res
			case 2:
				fmt.Fprintf(&b, "    %s = \"arith.mulf\"(%s, %s) <{fastmath = #arith.fastmath<fast>}> {tag = \"mul\"} : (%s, %s) -> %s\n", res, last, last, tt, tt, tt)
				last = res
			case 3:
				fmt.Fprintf(&b, "    %s = \"arith.addi\"(%s, %s) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index\n", res, lastIdx, a2)
				lastIdx = res
			case 5:
				fmt.Fprintf(&b, "    %s = \"graph.matmul\"(%s, %s) {precision = [1, 2], scale = 1.250000e-01 : f32, transpose_b = true} : (%s, %s) -> %s\n", res, last, a1, tt, tt, tt)
				last = res
			case 6:
				fmt.Fprintf(&b, "    %s = \"arith.cmpi\"(%s, %s) <{predicate = 2 : i64}> : (index, index) -> i1\n", res, lastIdx, a2)
			case 7:
				fmt.Fprintf(&b, "    %s = \"math.tanh\"(%s) <{fastmath = #arith.fastmath<none>}> : (%s) -> %s\n", res, last, tt, tt)
				last = res
			}
		}
		fmt.Fprintf(&b, "    \"func.return\"(%s) : (%s) -> ()\n", last, tt)
		b.WriteString("  }) : () -> ()\n")
	}
	b.WriteString("}) : () -> ()\n")
	benchFiles[nOps] = b.String()
	return benchFiles[nOps]
}

func parseBench(b *testing.B, src string) *ir.Operation {
	m, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{Filename: "bench.mlir"})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// reportPerOp adds the time per parsed op, the number that should stay flat
// from 100k to 1M ops.
func reportPerOp(b *testing.B, nOps int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nOps), "ns/irop")
}

// BenchmarkParse reports, besides the time and the allocations (all of
// them, garbage included), live-B/irop: the bytes of heap an op of the
// parsed module keeps once the text is gone, which is what a large input
// costs in memory (see TestParsedIRSize).
func BenchmarkParse(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			src := benchSource(n)
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			b.ResetTimer()
			var m *ir.Operation
			for range b.N {
				m = parseBench(b, src)
			}
			b.StopTimer()
			reportPerOp(b, n)
			withIR := liveHeap()
			runtime.KeepAlive(m)
			m = nil
			b.ReportMetric(float64(withIR-liveHeap())/float64(n), "live-B/irop")
		})
	}
}

func BenchmarkPrint(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			m := parseBench(b, benchSource(n))
			b.ResetTimer()
			for range b.N {
				ir.Sprint(m, ir.PrintOptions{Generic: true})
			}
			reportPerOp(b, n)
		})
	}
}

func BenchmarkParseVerifyPrint(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			src := benchSource(n)
			b.SetBytes(int64(len(src)))
			b.ResetTimer()
			for range b.N {
				m := parseBench(b, src)
				if err := ir.Verify(m); err != nil {
					b.Fatal(err)
				}
				ir.Sprint(m, ir.PrintOptions{Generic: true})
			}
			reportPerOp(b, n)
		})
	}
}

// TestWriteBenchFile writes the benchmark module to $STRATA_BENCH_FILE
// (with $STRATA_BENCH_OPS ops, default 1M) for timing external tools such
// as mlir-opt on the same input. It does nothing without the variable.
func TestWriteBenchFile(t *testing.T) {
	path := os.Getenv("STRATA_BENCH_FILE")
	if path == "" {
		t.Skip("set STRATA_BENCH_FILE to write the benchmark module")
	}
	n := 1_000_000
	if s := os.Getenv("STRATA_BENCH_OPS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			t.Fatalf("STRATA_BENCH_OPS: %v", err)
		}
	}
	if err := os.WriteFile(path, []byte(benchSource(n)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBenchSourceParses keeps the benchmark input honest: it parses,
// verifies and round-trips through the printer unchanged.
func TestBenchSourceParses(t *testing.T) {
	src := benchSource(2000)
	m, err := ir.Parse(newUnregisteredContext(), src, ir.ParseOptions{Filename: "bench.mlir"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(m); err != nil {
		t.Fatal(err)
	}
	if got := ir.Sprint(m, ir.PrintOptions{Generic: true}); got != src {
		t.Errorf("bench module does not print back verbatim:\n%s", lineDiff(src, got))
	}
}

// BenchmarkPrintManyBlocks prints a region of 20 000 blocks, each branching
// to the next: the block headers' predecessor comments must come from one
// pass over the region (printing took 9 s at 40 000 blocks when each header
// scanned the whole region).
func BenchmarkPrintManyBlocks(b *testing.B) {
	const n = 20_000
	var src strings.Builder
	src.WriteString("\"t.f\"() ({\n^bb0(%a: i32):\n  \"t.br\"()[^bb1] : () -> ()\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&src, "^bb%d:\n  %%v%d = \"t.op\"(%%a) : (i32) -> i32\n  \"t.br\"()[^bb%d] : () -> ()\n", i, i, i+1)
	}
	fmt.Fprintf(&src, "^bb%d:\n  \"t.ret\"(%%a) : (i32) -> ()\n}) : () -> ()\n", n)
	ctx := ir.NewContext()
	ctx.AllowUnregistered = true
	m, err := ir.Parse(ctx, src.String(), ir.ParseOptions{Filename: "blocks.mlir"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		ir.Sprint(m, ir.PrintOptions{})
	}
}
