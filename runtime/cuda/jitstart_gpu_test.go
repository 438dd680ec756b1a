package cuda

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// jitStartEnv names the folder of PTX files TestGPUJITStartup compiles
// (one kernel a file, named strata_kernel); the test is skipped when it
// is unset. It measures what a process's first compiles cost, so run it
// once per process (-test.run 'TestGPUJITStartup$' -test.count=1) with
// CUDA_CACHE_DISABLE=1 or a fresh CUDA_CACHE_PATH.
const jitStartEnv = "STRATA_JIT_STARTUP"

// jitStartVariantEnv selects what TestGPUJITStartup does before opening
// the device: "" nothing (not even load's own preload of jitLibName);
// "preload" opens the JIT compiler's library on another goroutine while
// cuInit and the context are made; "driver-preload" lets load do that
// (the default outside this test); "noctx" asks the linker to compile
// before any context exists (CU_JIT_TARGET set), in parallel with the
// context's creation (the driver refuses: CUDA_ERROR_INVALID_CONTEXT).
const jitStartVariantEnv = "STRATA_JIT_STARTUP_VARIANT"

// jitStartQuickEnv, when set, stops TestGPUJITStartup after the empty
// kernels (the start-up alone).
const jitStartQuickEnv = "STRATA_JIT_STARTUP_QUICK"

// mappedLibs returns the shared objects mapped into the process.
func mappedLibs() map[string]bool {
	libs := map[string]bool{}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return libs
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 6 && strings.Contains(fields[5], ".so") {
			libs[filepath.Base(fields[5])] = true
		}
	}
	return libs
}

// newLibs returns the libraries in after that are not in before.
func newLibs(before, after map[string]bool) string {
	var out []string
	for l := range after {
		if !before[l] {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// linkRaw compiles ptx with the linker on the calling thread, with
// whatever context is current there (none before Open), for the compute
// capability target (90 for sm_90) when it is not zero, at JIT level
// level (-1: the default). It returns the cubin's size, the driver's
// result and the host's time.
func linkRaw(d *driver, ptx string, target, level int) (int, Result, time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l := d.link
	image := cBytes(ptx)
	name := cBytes("strata.ptx")
	var opts []int32
	var vals []uintptr
	if target != 0 {
		opts, vals = append(opts, 9 /* CU_JIT_TARGET */), append(vals, uintptr(target))
	}
	if level >= 0 {
		opts, vals = append(opts, jitOptimizationLevel), append(vals, uintptr(level))
	}
	opts, vals = append(opts, 0), append(vals, 0) // never an empty array
	start := time.Now()
	var state uintptr
	r := d.raw(l.create, uintptr(len(opts)-1), uintptr(unsafe.Pointer(&opts[0])), uintptr(unsafe.Pointer(&vals[0])), uintptr(unsafe.Pointer(&state)))
	size := 0
	if r == Success {
		r = d.raw(l.addData, state, jitInputPTX, uintptr(unsafe.Pointer(&image[0])), uintptr(len(image)), uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
		if r == Success {
			var cubin unsafe.Pointer
			var n uintptr
			r = d.raw(l.complete, state, uintptr(unsafe.Pointer(&cubin)), uintptr(unsafe.Pointer(&n)))
			size = int(n)
		}
		d.raw(l.destroy, state)
	}
	runtime.KeepAlive(image)
	runtime.KeepAlive(name)
	runtime.KeepAlive(opts)
	runtime.KeepAlive(vals)
	return size, r, time.Since(start)
}

// emptyKernel returns a kernel that does nothing, distinct for each i (so
// that no cache serves it).
func emptyKernel(i int) string {
	return fmt.Sprintf(".version 7.8\n.target sm_90\n.address_size 64\n\n.visible .entry strata_kernel_%d()\n{\n\tret;\n}\n", i)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1e3) }

// TestGPUJITStartup measures, in a fresh process, what the device's
// opening and the first compiles cost: cuInit, the primary context, the
// first linked compile of an empty kernel against the second and third
// (a one-time cost of the JIT?), which libraries the first compile maps,
// then each kernel of the jitStartEnv folder at JIT levels 0, 1 and the
// default, one at a time and all at once. Numbers go to the log
// (bench/NOTES.md, session 5, H2).
func TestGPUJITStartup(t *testing.T) {
	dir := os.Getenv(jitStartEnv)
	if dir == "" {
		t.Skip(jitStartEnv + " not set")
	}
	variant := os.Getenv(jitStartVariantEnv)
	preloadJIT = variant == "driver-preload" // load's own preload; "preload" is the test's
	t0 := time.Now()
	libs0 := mappedLibs()
	var preload sync.WaitGroup
	if variant == "preload" {
		preload.Go(func() {
			s := time.Now()
			_, err := purego.Dlopen(jitLibName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			t.Logf("preload %s: %s ms (err %v), done at %s ms", jitLibName, ms(time.Since(s)), err, ms(time.Since(t0)))
		})
	}
	if err := Load(); err != nil {
		t.Skipf("no GPU: %v", err)
	}
	d := theDriver
	tInit := time.Since(t0)
	var noctx sync.WaitGroup
	if variant == "noctx" {
		files, _ := filepath.Glob(filepath.Join(dir, "transformer_graph0*.ptx"))
		noctx.Go(func() {
			s := time.Now()
			n, r, el := linkRaw(d, emptyKernel(1000), 90, -1)
			t.Logf("noctx: empty kernel before any context: %d bytes, %v, %s ms (at %s ms)", n, r, ms(el), ms(time.Since(t0)))
			var wg sync.WaitGroup
			for _, f := range files {
				b, _ := os.ReadFile(f)
				wg.Go(func() {
					n, r, el := linkRaw(d, string(b), 90, -1)
					t.Logf("noctx: %s %d bytes, %v, %s ms", filepath.Base(f), n, r, ms(el))
				})
			}
			wg.Wait()
			t.Logf("noctx: empty + %d kernels at once done in %s ms, at %s ms", len(files), ms(time.Since(s)), ms(time.Since(t0)))
		})
	}
	s := time.Now()
	dev, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	tOpen := time.Since(s)
	noctx.Wait()
	preload.Wait()
	t.Logf("cuInit (with dlopen of libcuda) %s ms; Open (context) %s ms; at %s ms", ms(tInit), ms(tOpen), ms(time.Since(t0)))
	libs1 := mappedLibs()
	t.Logf("libraries mapped by cuInit and Open: %s", newLibs(libs0, libs1))
	ctxLink := func(ptx string, level int) (int, Result, time.Duration) {
		var n int
		var r Result
		var el time.Duration
		dev.call("link", func() Result { n, r, el = linkRaw(d, ptx, 0, level); return Success })
		return n, r, el
	}
	for i := range 3 {
		n, r, el := ctxLink(emptyKernel(i), -1)
		if r != Success {
			t.Fatalf("empty kernel %d: %v", i, r)
		}
		t.Logf("linked compile %d of an empty kernel: %s ms (%d bytes)", i, ms(el), n)
		if i == 0 {
			t.Logf("libraries mapped by the first compile: %s", newLibs(libs1, mappedLibs()))
		}
	}
	for i := range 2 {
		m, err := dev.LoadModuleJIT(emptyKernel(10+i), JITOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("module-load JIT %d of an empty kernel: wall %s ms, JIT %s ms", i, ms(m.LoadStats().Wall), ms(m.LoadStats().JIT))
		m.Unload()
	}
	if os.Getenv(jitStartQuickEnv) != "" {
		return
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Base(f)] = string(b)
	}
	levels := []int{-1, 1, 0, 2}
	for _, f := range files {
		name := filepath.Base(f)
		var line []string
		for round := range 2 {
			for _, level := range levels {
				// A comment makes the text new for the driver's cache.
				_, r, el := ctxLink(texts[name]+fmt.Sprintf("// %d %d\n", round, level), level)
				if r != Success {
					t.Fatalf("%s O%d: %v", name, level, r)
				}
				line = append(line, fmt.Sprintf("O%d %s", level, ms(el)))
			}
		}
		t.Logf("kernel %s (%d bytes), ms (O-1 = default): %s", name, len(texts[name]), strings.Join(line, ", "))
	}
	for _, prefix := range []string{"transformer_graph0", "mlp_graph0"} {
		for round := range 2 {
			for _, level := range []int{-1, 1, 0} {
				s := time.Now()
				var wg sync.WaitGroup
				var mu sync.Mutex
				var each []string
				for _, f := range files {
					name := filepath.Base(f)
					if !strings.HasPrefix(name, prefix) {
						continue
					}
					wg.Go(func() {
						_, r, el := ctxLink(texts[name]+fmt.Sprintf("// at once %d %d\n", round, level), level)
						mu.Lock()
						each = append(each, fmt.Sprintf("%s%s", ms(el), map[bool]string{true: "", false: "!" + r.String()}[r == Success]))
						mu.Unlock()
					})
				}
				wg.Wait()
				t.Logf("%s all at once O%d round %d: %s ms (each %s)", prefix, level, round, ms(time.Since(s)), strings.Join(each, " "))
			}
		}
	}
}
