package cuda

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// emptyPTX is a kernel that does nothing with four pointer parameters:
// what a launch costs the host, and the device, without any work.
const emptyPTX = `.version 7.8
.target sm_90
.address_size 64

.visible .entry empty(
	.param .u64 empty_param_0,
	.param .u64 empty_param_1,
	.param .u64 empty_param_2,
	.param .u64 empty_param_3
)
{
	ret;
}
`

// launchReflect is the launch path before the raw entry points: the
// closure through call and the RegisterFunc-bound cuLaunchKernel and
// cuCtxSetCurrent (reflection), kept for TestGPULaunchCost's comparison.
func (dev *Device) launchReflect(fn *Function, grid, block [3]uint32, stream *Stream, args ...any) error {
	params, err := packParams(args)
	if err != nil {
		return err
	}
	defer params.release()
	var s uintptr
	if stream != nil {
		s = stream.s
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := dev.drv.cuCtxSetCurrent(dev.ctx); r != Success {
		return dev.drv.errorFor("cuCtxSetCurrent", r)
	}
	if r := dev.drv.cuLaunchKernel(fn.fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, s,
		(*unsafe.Pointer)(params.array()), nil); r != Success {
		return dev.drv.errorFor("cuLaunchKernel", r)
	}
	return nil
}

// TestGPULaunchCost times the host's cost of one launch of an empty
// kernel (median over batches of back-to-back launches, the device waited
// for between batches) through the raw entry points and through the
// reflection-bound ones, on the default stream with no other stream, with
// an idle blocking stream and with an idle non-blocking stream. It checks
// that every path launches; the numbers are logged (-test.v) for
// bench/NOTES.md.
func TestGPULaunchCost(t *testing.T) {
	dev := openGPU(t)
	mod, err := dev.LoadModule(emptyPTX)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("empty")
	if err != nil {
		t.Fatal(err)
	}
	p := DevicePtr(0)
	grid, block := [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}
	paths := map[string]func() error{
		"raw":     func() error { return dev.Launch(fn, grid, block, 0, nil, p, p, p, p) },
		"reflect": func() error { return dev.launchReflect(fn, grid, block, nil, p, p, p, p) },
		"ctx only": func() error {
			return dev.call("cuCtxSetCurrent", func() Result { return Success })
		},
	}
	batches, per := 15, 400
	if testing.Short() {
		batches, per = 3, 50
	}
	measure := func(launch func() error) (float64, error) {
		var times []float64
		for range batches {
			if err := dev.Synchronize(); err != nil {
				return 0, err
			}
			start := time.Now()
			for range per {
				if err := launch(); err != nil {
					return 0, err
				}
			}
			times = append(times, float64(time.Since(start).Nanoseconds())/1e3/float64(per))
		}
		if err := dev.Synchronize(); err != nil {
			return 0, err
		}
		slices.Sort(times)
		return times[len(times)/2], nil
	}
	report := func(setting string) {
		names := make([]string, 0, len(paths))
		for n := range paths {
			names = append(names, n)
		}
		sort.Strings(names)
		var parts []string
		for _, n := range names {
			us, err := measure(paths[n])
			if err != nil {
				t.Fatalf("%s, %s: %v", setting, n, err)
			}
			parts = append(parts, fmt.Sprintf("%s %.2f µs", n, us))
		}
		t.Logf("launch cost, %s: %s", setting, strings.Join(parts, ", "))
	}
	report("default stream only")
	blocking, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	report("with an idle blocking stream")
	if err := blocking.Destroy(); err != nil {
		t.Fatal(err)
	}
	report("blocking stream destroyed")
	nb := &Stream{dev: dev}
	if err := dev.call("cuStreamCreate", func() Result { return dev.drv.cuStreamCreate(&nb.s, 1) }); err != nil {
		t.Fatal(err)
	}
	report("with an idle non-blocking stream")
	if err := nb.Destroy(); err != nil {
		t.Fatal(err)
	}
}

// TestGPULoadSweep times the driver's JIT of the PTX files in the
// directory STRATA_LOAD_SWEEP (skipped when unset), each loaded whole, cut
// into a module per kernel (SplitPTX, equal kernels loaded once) one after
// another and all at once, and whole at lower JIT optimization levels.
// Run it with CUDA_CACHE_DISABLE=1, or every load after the first is a
// cache hit. The variants interleave round by round, so that the host's
// drift (NOTES: the JIT's time follows how idle the CPU was) spreads over
// all of them.
func TestGPULoadSweep(t *testing.T) {
	dir := os.Getenv("STRATA_LOAD_SWEEP")
	if dir == "" {
		t.Skip("STRATA_LOAD_SWEEP not set")
	}
	dev := openGPU(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.ptx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .ptx files in %s (%v)", dir, err)
	}
	if _, err := dev.LoadModule(emptyPTX); err != nil { // the process's first load
		t.Fatal(err)
	}
	type variant struct {
		name string
		load func(whole string, parts []string) (time.Duration, time.Duration, error)
	}
	loadSet := func(texts []string, parallel bool, o JITOptions) (time.Duration, time.Duration, error) {
		start := time.Now()
		mods := make([]*Module, len(texts))
		errs := make([]error, len(texts))
		if parallel {
			var wg sync.WaitGroup
			for i, s := range texts {
				wg.Go(func() { mods[i], errs[i] = dev.LoadModuleJIT(s, o) })
			}
			wg.Wait()
		} else {
			for i, s := range texts {
				mods[i], errs[i] = dev.LoadModuleJIT(s, o)
			}
		}
		wall := time.Since(start)
		var jit time.Duration
		var each []string
		for i, m := range mods {
			if errs[i] != nil {
				return 0, 0, errs[i]
			}
			jit += m.LoadStats().JIT
			each = append(each, fmt.Sprintf("%.1f", float64(m.LoadStats().JIT.Microseconds())/1e3))
			m.Unload()
		}
		if len(texts) > 1 {
			t.Logf("  %d modules, parallel %v: JIT ms each %s", len(texts), parallel, strings.Join(each, " "))
		}
		return wall, jit, nil
	}
	variants := []variant{
		{"whole", func(w string, _ []string) (time.Duration, time.Duration, error) {
			return loadSet([]string{w}, false, JITOptions{})
		}},
		{"whole dedup", func(w string, _ []string) (time.Duration, time.Duration, error) {
			d, _, _ := DedupPTX(w)
			return loadSet([]string{d}, false, JITOptions{})
		}},
		{"split serial", func(_ string, p []string) (time.Duration, time.Duration, error) {
			return loadSet(p, false, JITOptions{})
		}},
		{"split parallel", func(_ string, p []string) (time.Duration, time.Duration, error) {
			return loadSet(p, true, JITOptions{})
		}},
	}
	for level := range 4 { // the driver's default is level 4
		variants = append(variants, variant{fmt.Sprintf("whole O%d", level), func(w string, _ []string) (time.Duration, time.Duration, error) {
			return loadSet([]string{w}, false, JITOptions{OptLevel: level + 1})
		}})
	}
	rounds := 3
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		whole := string(b)
		ks, ok, why := SplitPTX(whole)
		if !ok {
			t.Logf("%s: not split (%s)", filepath.Base(f), why)
			continue
		}
		var parts []string
		seen := map[[32]byte]bool{}
		for _, k := range ks {
			text, _ := RenameKernel(k.PTX, k.Name, "strata_kernel")
			if key := sha256.Sum256([]byte(text)); !seen[key] {
				seen[key] = true
				parts = append(parts, text)
			}
		}
		walls := make([][]float64, len(variants))
		jits := make([][]float64, len(variants))
		for range rounds {
			for i, v := range variants {
				w, j, err := v.load(whole, parts)
				if err != nil {
					t.Fatalf("%s %s: %v", filepath.Base(f), v.name, err)
				}
				walls[i] = append(walls[i], float64(w.Microseconds())/1e3)
				jits[i] = append(jits[i], float64(j.Microseconds())/1e3)
			}
		}
		var out []string
		for i, v := range variants {
			out = append(out, fmt.Sprintf("%s wall %v jit %v", v.name, fmtMs(walls[i]), fmtMs(jits[i])))
		}
		t.Logf("load sweep %s (%d kernels, %d distinct), ms per round: %s", filepath.Base(f), len(ks), len(parts), strings.Join(out, "; "))
	}
}

func fmtMs(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.1f", x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// linkCompile compiles ptx to a cubin with the driver's linker API
// (cuLinkCreate, cuLinkAddData, cuLinkComplete) on the calling goroutine's
// thread, with the device's context current, and returns a copy of it.
func linkCompile(dev *Device, h uintptr, ptx string) ([]byte, error) {
	sym := func(name string) uintptr {
		a, err := purego.Dlsym(h, name)
		if err != nil {
			return 0
		}
		return a
	}
	create, add, complete, destroy := sym("cuLinkCreate_v2"), sym("cuLinkAddData_v2"), sym("cuLinkComplete"), sym("cuLinkDestroy")
	if create == 0 || add == 0 || complete == 0 || destroy == 0 {
		return nil, errors.New("no cuLink entry points")
	}
	image := cBytes(ptx)
	name := cBytes("kernels")
	var out []byte
	err := dev.call("cuLink", func() Result {
		var state uintptr
		if r := dev.drv.raw(create, 0, 0, 0, uintptr(unsafe.Pointer(&state))); r != Success {
			return r
		}
		defer dev.drv.raw(destroy, state)
		if r := dev.drv.raw(add, state, 1 /* CU_JIT_INPUT_PTX */, uintptr(unsafe.Pointer(&image[0])), uintptr(len(image)),
			uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); r != Success {
			return r
		}
		var cubin unsafe.Pointer
		var size uintptr
		if r := dev.drv.raw(complete, state, uintptr(unsafe.Pointer(&cubin)), uintptr(unsafe.Pointer(&size))); r != Success {
			return r
		}
		out = append([]byte(nil), unsafe.Slice((*byte)(cubin), size)...)
		return Success
	})
	return out, err
}

// TestGPULinkSweep asks whether the driver's linker API compiles PTX on
// several threads at once where cuModuleLoadDataEx does not (TestGPULoadSweep):
// the distinct kernels of each file in STRATA_LOAD_SWEEP are compiled to
// cubins one after another and all at once, then loaded (a cubin load
// does no JIT). Skipped when STRATA_LOAD_SWEEP is unset.
func TestGPULinkSweep(t *testing.T) {
	dir := os.Getenv("STRATA_LOAD_SWEEP")
	if dir == "" {
		t.Skip("STRATA_LOAD_SWEEP not set")
	}
	dev := openGPU(t)
	h, err := purego.Dlopen(libName, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ks, ok, why := SplitPTX(string(b))
		if !ok {
			t.Fatalf("%s: %s", f, why)
		}
		var parts []string
		seen := map[string]bool{}
		for _, k := range ks {
			text, _ := RenameKernel(k.PTX, k.Name, "strata_kernel")
			if !seen[text] {
				seen[text] = true
				parts = append(parts, text)
			}
		}
		var lines []string
		for round := range 3 {
			for _, parallel := range []bool{false, true} {
				start := time.Now()
				cubins := make([][]byte, len(parts))
				errs := make([]error, len(parts))
				if parallel {
					var wg sync.WaitGroup
					for i, p := range parts {
						wg.Go(func() { cubins[i], errs[i] = linkCompile(dev, h, p) })
					}
					wg.Wait()
				} else {
					for i, p := range parts {
						cubins[i], errs[i] = linkCompile(dev, h, p)
					}
				}
				compiled := time.Since(start)
				for i, c := range cubins {
					if errs[i] != nil {
						t.Fatalf("%s part %d: %v", filepath.Base(f), i, errs[i])
					}
					m, err := dev.LoadModuleJIT(string(c), JITOptions{})
					if err != nil {
						t.Fatalf("%s part %d: loading the cubin: %v", filepath.Base(f), i, err)
					}
					if _, err := m.Function("strata_kernel"); err != nil {
						t.Fatal(err)
					}
					m.Unload()
				}
				lines = append(lines, fmt.Sprintf("r%d parallel=%v compile %.1f ms + load %.1f ms", round, parallel,
					float64(compiled.Microseconds())/1e3, float64((time.Since(start)-compiled).Microseconds())/1e3))
			}
		}
		t.Logf("link sweep %s (%d distinct kernels): %s", filepath.Base(f), len(parts), strings.Join(lines, "; "))
	}
}
