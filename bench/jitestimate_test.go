package bench

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ir/strata/runtime/cuda"
	"github.com/strata-ir/strata/runtime/exec"
)

// jitRows names the model rows TestModelsJITEstimate assembles with
// ptxas (-jitrows a,b; the test is skipped without it).
var jitRows = flag.String("jitrows", "", "model rows whose first call's kernels TestModelsJITEstimate assembles with ptxas (skipped when empty)")

// jitTarget is the .target of a PTX text.
var jitTarget = regexp.MustCompile(`(?m)^\.target\s+(sm_[0-9]+[a-z]?)`)

// jitText is one distinct kernel text of a first call, as the default
// load policy compiles it (cuda.SplitPTX, then kernels that are the same
// code renamed to share a text).
type jitText struct {
	graph, text string
	final       bool // wgmma: compiled at the final level at once (exec.finalAtOnce)
	lines       int
	cpu         time.Duration // ptxas's CPU time
}

// TestModelsJITEstimate is a proxy for the driver's JIT on a row's first
// call, which cannot be measured without a device: each distinct kernel
// text of the call's graphs (PTXOnly, as BenchmarkModelsHostCompile) is
// assembled by the toolkit's ptxas ($STRATA_PTXAS) at the level the
// default load policy's first tier asks of the driver: -O0, and -O3 for
// the wgmma kernels, which skip the first tier. It logs the CPU time of
// each level, the largest kernels, and the wall time those CPU times give
// on 16 threads (the H200 host's cores) loaded longest first, as the
// runtime loads them. Run with -jitrows ROWS -v; it takes minutes.
func TestModelsJITEstimate(t *testing.T) {
	if *jitRows == "" {
		t.Skip("no -jitrows")
	}
	ptxas, ok := exec.FindPTXAS()
	if !ok {
		t.Skip("no ptxas: set " + exec.PTXASEnv)
	}
	rows := strings.Split(*jitRows, ",")
	for _, r := range hostFirstCalls {
		if !slices.Contains(rows, r.name) {
			continue
		}
		_, _, _, graphs := hostCompile(t, r, Full)
		var texts []*jitText
		seen := map[string]bool{}
		for _, g := range graphs {
			for _, ptx := range g.ptx {
				ks, ok, why := cuda.SplitPTX(ptx)
				if !ok {
					t.Fatalf("%s %s: SplitPTX: %s", r.name, g.fn, why)
				}
				for _, k := range ks {
					text := k.PTX
					if renamed, ok := cuda.RenameKernel(k.PTX, k.Name, "strata_kernel"); ok {
						text = renamed
					}
					if seen[text] {
						continue
					}
					seen[text] = true
					texts = append(texts, &jitText{graph: g.fn, text: text, final: strings.Contains(text, "wgmma.mma_async"), lines: strings.Count(text, "\n")})
				}
			}
		}
		dir := t.TempDir()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		errs := make([]error, len(texts))
		for i, jt := range texts {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				jt.cpu, errs[i] = assemble(ptxas, dir, i, jt)
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s kernel %d (%s): %v", r.name, i, texts[i].graph, err)
			}
		}
		var o0, o3 time.Duration
		var n0, n3 int
		for _, jt := range texts {
			if jt.final {
				o3, n3 = o3+jt.cpu, n3+1
			} else {
				o0, n0 = o0+jt.cpu, n0+1
			}
		}
		slices.SortFunc(texts, func(a, b *jitText) int { return int(b.cpu - a.cpu) })
		var top []string
		for _, jt := range texts[:min(5, len(texts))] {
			top = append(top, fmt.Sprintf("%s %d lines %s %.0f ms", jt.graph, jt.lines, map[bool]string{true: "O3 (wgmma)", false: "O0"}[jt.final], ms(jt.cpu)))
		}
		// The driver's JIT, fitted on the H200 (bench/NOTES.md, session 5,
		// H2): about 5 ms a module and 35 µs a PTX line.
		var lines int
		for _, jt := range texts {
			lines += jt.lines
		}
		driver := time.Duration(len(texts))*5*time.Millisecond + time.Duration(lines)*35*time.Microsecond
		t.Logf("%s: %d distinct kernel texts, %d PTX lines; ptxas CPU: %d at -O0 %.0f ms, %d wgmma at -O3 %.0f ms; on 16 threads longest first ≈ %.0f ms; the driver's fit (5 ms a module, 35 µs a line) %.0f ms of CPU; largest: %s",
			r.name, len(texts), lines, n0, ms(o0), n3, ms(o3), ms(lptMakespan(texts, 16)), ms(driver), strings.Join(top, "; "))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lptMakespan is the time the texts' CPU times take on n threads when
// started in the order given (longest first), each on the first free one.
func lptMakespan(texts []*jitText, n int) time.Duration {
	free := make([]time.Duration, n)
	for _, jt := range texts {
		i := slices.Index(free, slices.Min(free))
		free[i] += jt.cpu
	}
	return slices.Max(free)
}

// assemble runs ptxas on jt's text (-O0, or -O3 for a final one) through
// files numbered i in dir and returns its CPU time.
func assemble(ptxas, dir string, i int, jt *jitText) (time.Duration, error) {
	m := jitTarget.FindStringSubmatch(jt.text)
	if m == nil {
		return 0, fmt.Errorf("no .target")
	}
	in := filepath.Join(dir, fmt.Sprintf("k%d.ptx", i))
	if err := os.WriteFile(in, []byte(jt.text), 0o644); err != nil {
		return 0, err
	}
	level := "-O0"
	if jt.final {
		level = "-O3"
	}
	var stderr bytes.Buffer
	cmd := osexec.Command(ptxas, "-arch="+m[1], level, "-o", filepath.Join(dir, fmt.Sprintf("k%d.cubin", i)), in)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}
