package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// openGPU opens device 0 or skips the test, saying why.
func openGPU(t *testing.T) *Device {
	t.Helper()
	dev, err := Open(0)
	if err != nil {
		t.Skipf("no GPU: %v", err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

func f32Bytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs
}

func TestGPUDeviceInfo(t *testing.T) {
	dev := openGPU(t)
	major, minor := dev.ComputeCapability()
	free, total, err := dev.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: sm_%d%d, %d SMs, %s total, %s free", dev.Name(), major, minor,
		dev.Multiprocessors(), formatBytes(total), formatBytes(free))
	if dev.Name() == "" || major < 1 || dev.Multiprocessors() < 1 {
		t.Errorf("implausible device: name %q, cc %d.%d, %d SMs", dev.Name(), major, minor, dev.Multiprocessors())
	}
	if total != dev.TotalMem() || free == 0 || free > total {
		t.Errorf("MemInfo free %d total %d, TotalMem %d", free, total, dev.TotalMem())
	}
	if v, err := DriverVersion(); err != nil || v < 11000 {
		t.Errorf("DriverVersion = %d, %v", v, err)
	}
}

func TestGPUCopyRoundTrip(t *testing.T) {
	dev := openGPU(t)
	src := make([]byte, 1<<20+3) // odd size: no alignment luck
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	p, err := dev.Alloc(uint64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(p)
	if err := dev.CopyHtoD(p, src); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := dev.CopyDtoH(got, p); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(src) {
		t.Fatal("HtoD then DtoH changed the data")
	}
	if err := dev.Memset(p+16, 0xab, 8); err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyDtoH(got[:32], p); err != nil {
		t.Fatal(err)
	}
	for i := range 32 {
		want := src[i]
		if i >= 16 && i < 24 {
			want = 0xab
		}
		if got[i] != want {
			t.Fatalf("after Memset, byte %d = %#x, want %#x", i, got[i], want)
		}
	}
}

func TestGPUPinnedAsyncCopy(t *testing.T) {
	dev := openGPU(t)
	const n = 4 << 20
	in, err := dev.AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free()
	out, err := dev.AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	for i, b := 0, in.Bytes(); i < n; i++ {
		b[i] = byte(i ^ i>>8)
	}
	p, err := dev.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(p)
	s, err := dev.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	if err := s.CopyHtoD(p, in); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyDtoH(out.Sub(0, n/2), p); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if string(out.Bytes()[:n/2]) != string(in.Bytes()[:n/2]) {
		t.Fatal("pinned async round trip changed the data")
	}
}

// TestGPUVectorAdd runs vaddPTX over 1M random floats and checks every
// result.
func TestGPUVectorAdd(t *testing.T) {
	dev := openGPU(t)
	for name, load := range loaders(dev) {
		t.Run(name, func(t *testing.T) {
			mod, err := load(vaddPTX)
			if err != nil {
				t.Fatal(err)
			}
			defer mod.Unload()
			t.Logf("JIT info log:\n%s", mod.InfoLog())
			checkVectorAdd(t, dev, mod, 1<<20)
		})
	}
}

// loaders are the ways a Device loads PTX: through the module-load JIT
// and, where the driver has it, through the linker.
func loaders(dev *Device) map[string]func(string) (*Module, error) {
	m := map[string]func(string) (*Module, error){"load": dev.LoadModule}
	if dev.CanLink() {
		m["linked"] = func(ptx string) (*Module, error) { return dev.LoadModuleLinked(ptx, JITOptions{}) }
	}
	return m
}

// checkVectorAdd runs vaddPTX's kernel of mod on n random elements and
// checks every result.
func checkVectorAdd(t *testing.T, dev *Device, mod *Module, n int) {
	t.Helper()
	fn, err := mod.Function("vadd")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = rng.Float32()*2-1, rng.Float32()*2-1
	}
	const scale = float32(0.5)
	var ptrs [3]DevicePtr
	for i := range ptrs {
		if ptrs[i], err = dev.Alloc(uint64(4 * n)); err != nil {
			t.Fatal(err)
		}
		defer dev.Free(ptrs[i])
	}
	if err := dev.CopyHtoD(ptrs[0], f32Bytes(a)); err != nil {
		t.Fatal(err)
	}
	if err := dev.CopyHtoD(ptrs[1], f32Bytes(b)); err != nil {
		t.Fatal(err)
	}
	const block = 256
	grid := uint32((n + block - 1) / block)
	if err := dev.Launch(fn, [3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, nil,
		ptrs[0], ptrs[1], ptrs[2], scale, int64(n)); err != nil {
		t.Fatal(err)
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*n)
	if err := dev.CopyDtoH(out, ptrs[2]); err != nil {
		t.Fatal(err)
	}
	for i, got := range bytesF32(out) {
		// fma rounds once; float64 then float32 rounding is the same value.
		want := float32(float64(scale)*float64(b[i]) + float64(a[i]))
		if got != want {
			t.Fatalf("c[%d] = %v, want %v", i, got, want)
		}
	}
}

func TestGPUMissingKernel(t *testing.T) {
	dev := openGPU(t)
	mod, err := dev.LoadModule(vaddPTX)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Unload()
	if _, err := mod.Function("nope"); !IsCode(err, ErrorNotFound) {
		t.Errorf("Function(nope) = %v, want CUDA_ERROR_NOT_FOUND", err)
	}
}

func TestGPUJITErrorLog(t *testing.T) {
	dev := openGPU(t)
	for name, load := range loaders(dev) {
		t.Run(name, func(t *testing.T) { checkJITErrorLog(t, load) })
	}
}

func checkJITErrorLog(t *testing.T, load func(string) (*Module, error)) {
	_, err := load(badPTX)
	var jit *JITError
	if !errors.As(err, &jit) {
		t.Fatalf("loading bad PTX = %v, want a *JITError", err)
	}
	t.Logf("%v", err)
	if !strings.Contains(jit.Log, "line 8; error") || !strings.Contains(jit.Log, "%f7") {
		t.Errorf("JIT log does not point at line 8 and %%f7:\n%s", jit.Log)
	}
	if !IsCode(err, ErrorInvalidPTX) {
		t.Errorf("code %v, want CUDA_ERROR_INVALID_PTX", jit.Err)
	}
}

func TestGPUEventsTiming(t *testing.T) {
	dev := openGPU(t)
	start, err := dev.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Destroy()
	end, err := dev.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer end.Destroy()
	const n = 256 << 20
	p, err := dev.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(p)
	if err := start.Record(nil); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := dev.Memset(p, 1, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(nil); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	ms, err := Elapsed(start, end)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10 memsets of 256 MiB: %.3f ms (%.0f GB/s)", ms, 10*n/(float64(ms)*1e6))
	if ms <= 0 || ms > 10_000 {
		t.Errorf("elapsed %v ms is implausible", ms)
	}
}

func TestGPUOutOfMemory(t *testing.T) {
	dev := openGPU(t)
	const huge = 1 << 50 // 1 PiB
	_, err := dev.Alloc(huge)
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("Alloc(1 PiB) = %v, want an *OutOfMemoryError", err)
	}
	t.Logf("%v", err)
	if oom.Requested != huge || oom.Free == 0 || oom.Free > oom.Total {
		t.Errorf("OOM fields %+v", oom)
	}
	if !strings.Contains(err.Error(), "1.0 PiB") || !strings.Contains(err.Error(), "free") {
		t.Errorf("message %q does not give the bytes asked and free", err)
	}
}

// The context must follow the Device onto whatever OS thread calls it
// (GPU.md: otherwise module loads fail with CUDA_ERROR_INVALID_CONTEXT).
func TestGPUFromManyThreads(t *testing.T) {
	dev := openGPU(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			// Pin this goroutine to a thread of its own for the whole
			// test, one the context was never made current on by us.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			mod, err := dev.LoadModule(vaddPTX)
			if err != nil {
				errs <- err
				return
			}
			defer mod.Unload()
			if _, err := mod.Function("vadd"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGPUAllocator(t *testing.T) {
	dev := openGPU(t)
	a := NewAllocator(dev)
	p, err := a.Alloc(3000)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Memset(p, 7, 3000); err != nil {
		t.Fatal(err)
	}
	a.Free(p)
	q, err := a.Alloc(4000)
	if err != nil {
		t.Fatal(err)
	}
	if q != p {
		t.Errorf("cached block not reused: %#x then %#x", p, q)
	}
	a.Free(q)
	if err := a.EmptyCache(); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.Hits != 1 || s.Misses != 1 || s.Reserved() != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestGPULinkedConcurrent compiles eight distinct texts of the vadd
// kernel through the linker from eight goroutines at once; every module
// computes the right sums, and a bad text among them fails alone with its
// log.
func TestGPULinkedConcurrent(t *testing.T) {
	dev := openGPU(t)
	if !dev.CanLink() {
		t.Skip("the driver has no cuLink API")
	}
	const n = 8
	mods := make([]*Module, n+1)
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n + 1 {
		text := vaddPTX + fmt.Sprintf("// copy %d\n", i) // distinct texts: no cache shared between them
		if i == n {
			text = badPTX
		}
		wg.Go(func() { mods[i], errs[i] = dev.LoadModuleLinked(text, JITOptions{}) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("copy %d: %v", i, errs[i])
		}
		checkVectorAdd(t, dev, mods[i], 1000+i)
		if s := mods[i].LoadStats(); s.JIT <= 0 || s.Wall < s.JIT {
			t.Errorf("copy %d: load stats %+v: want a positive compile time within the wall time", i, s)
		}
		mods[i].Unload()
	}
	var jit *JITError
	if !errors.As(errs[n], &jit) || !strings.Contains(jit.Log, "line 8; error") {
		t.Errorf("bad text: %v, want a *JITError pointing at line 8", errs[n])
	}
	if _, err := dev.LoadModuleLinked(vaddPTX, JITOptions{OptLevel: 9}); err == nil {
		t.Error("optimization level 9: no error")
	}
}

// TestGPULinkCache compiles through the linker into a cubin cache: the
// second load is served from it (no compile) and runs right; a damaged
// file is compiled again and replaced.
func TestGPULinkCache(t *testing.T) {
	dev := openGPU(t)
	if !dev.CanLink() {
		t.Skip("the driver has no cuLink API")
	}
	cache := NewLinkCache(t.TempDir())
	o := JITOptions{Cache: cache}
	load := func(what string, wantCompile bool) {
		t.Helper()
		m, err := dev.LoadModuleLinked(vaddPTX, o)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer m.Unload()
		if compiled := m.LoadStats().JIT > 0; compiled != wantCompile {
			t.Errorf("%s: compiled %v, want %v (stats %+v)", what, compiled, wantCompile, m.LoadStats())
		}
		checkVectorAdd(t, dev, m, 4097)
	}
	load("first load", true)
	files, _ := filepath.Glob(filepath.Join(cache.Dir(), "*.cubin"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	load("second load", false)
	if err := os.WriteFile(files[0], []byte("not a cubin"), 0o644); err != nil {
		t.Fatal(err)
	}
	load("damaged file", true)
	load("after the damage", false)
}

// sm90aPTX needs the architecture-specific target sm_90a (wgmma).
const sm90aPTX = `.version 8.0
.target sm_90a
.address_size 64

.visible .entry fence()
{
	wgmma.fence.sync.aligned;
	ret;
}
`

// TestGPULinkedArchTarget loads a kernel of the sm_90a target through the
// linker and through the module-load JIT. The module-load JIT must take
// it on an sm_90 device; the linker may refuse it (it compiles for the
// device's plain architecture), and then only with a *JITError, which is
// what exec's fallback to the module-load JIT relies on.
func TestGPULinkedArchTarget(t *testing.T) {
	dev := openGPU(t)
	if major, _ := dev.ComputeCapability(); major != 9 || !dev.CanLink() {
		t.Skip("needs an sm_90 device and the linker")
	}
	m, err := dev.LoadModule(sm90aPTX)
	if err != nil {
		t.Fatalf("module-load JIT: %v", err)
	}
	m.Unload()
	m, err = dev.LoadModuleLinked(sm90aPTX, JITOptions{})
	var je *JITError
	switch {
	case err == nil:
		t.Log("the linker takes sm_90a")
		m.Unload()
	case errors.As(err, &je):
		t.Logf("the linker refuses sm_90a: %v", err)
	default:
		t.Errorf("the linker fails on sm_90a with %v, not a *JITError", err)
	}
}
