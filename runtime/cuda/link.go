package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// jitInputPTX is CU_JIT_INPUT_PTX, the kind of data cuLinkAddData gets.
const jitInputPTX = 1

// linker holds the driver's linker entry points (cuLinkCreate_v2,
// cuLinkAddData_v2, cuLinkComplete, cuLinkDestroy), called through their
// raw addresses; zero when the driver lacks them.
type linker struct {
	create, addData, complete, destroy uintptr
}

// bindLinker looks the linker's entry points up in the library h.
func (d *driver) bindLinker(h uintptr) {
	sym := func(name string) uintptr {
		a, err := purego.Dlsym(h, name)
		if err != nil {
			return 0
		}
		return a
	}
	l := linker{sym("cuLinkCreate_v2"), sym("cuLinkAddData_v2"), sym("cuLinkComplete"), sym("cuLinkDestroy")}
	if l.create != 0 && l.addData != 0 && l.complete != 0 && l.destroy != 0 {
		d.link = l
	}
}

// CanLink reports whether the driver has the linker API LoadModuleLinked
// needs.
func (dev *Device) CanLink() bool { return dev.drv.link.create != 0 }

// ErrNoLinker is wrapped by LoadModuleLinked's error on a driver without
// the linker API.
var ErrNoLinker = errors.New("the driver has no cuLink API")

// LoadModuleLinked compiles ptx to a cubin with the driver's linker
// (cuLinkCreate, cuLinkAddData, cuLinkComplete) and loads the cubin, which
// needs no JIT. It gives the module LoadModuleJIT gives, but the compile
// does not hold the driver's module-load lock: several goroutines calling
// LoadModuleLinked compile at once, one OS thread each, where
// LoadModuleJIT's compiles run one after another (on the H200 with driver
// 580, the 8 distinct kernels of the transformer example's graph compile
// in 46–58 ms this way against 217–228 ms one by one; bench/NOTES.md,
// session 4, H3). The module's LoadStats count the linker's compile as
// JIT. A compile error is a *JITError with the linker's log.
func (dev *Device) LoadModuleLinked(ptx string, o JITOptions) (*Module, error) {
	l := dev.drv.link
	if l.create == 0 {
		return nil, ErrNoLinker
	}
	if o.OptLevel < 0 || o.OptLevel > 5 {
		return nil, fmt.Errorf("cuda: JIT optimization level %d out of range (0: default, 1-5: levels 0-4)", o.OptLevel)
	}
	image := cBytes(ptx)
	name := cBytes("strata.ptx")
	infoLog := make([]byte, jitLogSize)
	errorLog := make([]byte, jitLogSize)
	opts := []int32{
		jitInfoLogBuffer, jitInfoLogBufferSizeBytes,
		jitErrorLogBuffer, jitErrorLogBufferSizeBytes,
		jitLogVerbose, jitWallTime,
	}
	// As in LoadModuleJIT: pointer-sized values, the buffers kept alive
	// (the linker writes its logs until cuLinkDestroy), the wall time
	// written back as a float.
	vals := []uintptr{
		uintptr(unsafe.Pointer(&infoLog[0])), jitLogSize,
		uintptr(unsafe.Pointer(&errorLog[0])), jitLogSize,
		1, 0,
	}
	wall := len(vals) - 1
	if o.OptLevel > 0 {
		opts = append(opts, jitOptimizationLevel)
		vals = append(vals, uintptr(o.OptLevel-1))
	}
	m := &Module{dev: dev}
	start := time.Now()
	var key string
	if o.Cache != nil {
		key = o.Cache.key(dev, ptx, o)
		if cubin, ok := o.Cache.get(key); ok {
			err := dev.call("cuModuleLoadData", func() Result {
				return dev.drv.cuModuleLoadDataEx(&m.mod, unsafe.Pointer(&cubin[0]), 0, nil, nil)
			})
			runtime.KeepAlive(cubin)
			if err == nil {
				m.stats = LoadStats{At: start, Wall: time.Since(start)}
				return m, nil
			}
			// A cubin the driver refuses (a damaged file) is compiled again
			// and replaced.
		}
	}
	op := "cuLinkCreate_v2"
	var compile time.Duration
	var out []byte // a copy of the cubin, for the cache
	err := dev.call("cuLink", func() Result {
		var state uintptr
		if r := dev.drv.raw(l.create, uintptr(len(opts)), uintptr(unsafe.Pointer(&opts[0])),
			uintptr(unsafe.Pointer(&vals[0])), uintptr(unsafe.Pointer(&state))); r != Success {
			return r
		}
		defer dev.drv.raw(l.destroy, state)
		op = "cuLinkAddData_v2"
		t := time.Now()
		if r := dev.drv.raw(l.addData, state, jitInputPTX, uintptr(unsafe.Pointer(&image[0])), uintptr(len(image)),
			uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); r != Success {
			return r
		}
		op = "cuLinkComplete"
		var cubin unsafe.Pointer
		var size uintptr
		if r := dev.drv.raw(l.complete, state, uintptr(unsafe.Pointer(&cubin)), uintptr(unsafe.Pointer(&size))); r != Success {
			return r
		}
		compile = time.Since(t)
		// The cubin belongs to the link state: copy it for the cache and
		// load it before the deferred cuLinkDestroy. A cubin load does no
		// JIT.
		if o.Cache != nil {
			out = append([]byte(nil), unsafe.Slice((*byte)(cubin), size)...)
		}
		op = "cuModuleLoadData"
		return dev.drv.cuModuleLoadDataEx(&m.mod, cubin, 0, nil, nil)
	})
	m.stats = LoadStats{At: start, Wall: time.Since(start), JIT: jitMillis(vals[wall])}
	if m.stats.JIT == 0 {
		m.stats.JIT = compile // the driver did not report its time: the host's clock around the compile
	}
	runtime.KeepAlive(infoLog)
	runtime.KeepAlive(errorLog)
	runtime.KeepAlive(image)
	runtime.KeepAlive(name)
	runtime.KeepAlive(opts)
	runtime.KeepAlive(vals)
	if err != nil {
		var e *Error
		errors.As(err, &e)
		if e.Op == "cuLink" {
			e.Op = op // the step that failed, not the context switch before it
		}
		return nil, &JITError{Err: e, Log: logText(errorLog)}
	}
	m.infoLog = logText(infoLog)
	if o.Cache != nil {
		o.Cache.put(key, out)
	}
	return m, nil
}

// LinkCache keeps the cubins LoadModuleLinked compiles in a directory, so
// that a later process loads them without compiling: the driver's own
// ComputeCache serves LoadModule's PTX, not the linker's. A cubin is
// filed under the SHA-256 of the device, the driver, the JIT options and
// the PTX. The cache is best effort: a file that cannot be read or
// written costs a compile, never an error.
type LinkCache struct {
	dir string
}

// LinkCacheEnv names the directory of the default LinkCache; "off"
// disables it.
const LinkCacheEnv = "STRATA_LINK_CACHE"

// NewLinkCache returns a cache in dir (created on the first write).
func NewLinkCache(dir string) *LinkCache { return &LinkCache{dir: dir} }

// DefaultLinkCache returns the cache of LinkCacheEnv's directory; without
// it, "strata-link" under CUDA_CACHE_PATH where that is set (so that a
// fresh CUDA_CACHE_PATH, as the benchmarks use for first calls, is a
// fresh cache here too), else under the user's cache directory. It
// returns nil, no cache, when LinkCacheEnv is "off" or
// CUDA_CACHE_DISABLE=1 (as the driver's cache is then off).
func DefaultLinkCache() *LinkCache {
	dir := os.Getenv(LinkCacheEnv)
	switch {
	case dir == "off" || os.Getenv("CUDA_CACHE_DISABLE") == "1":
		return nil
	case dir != "":
	case os.Getenv("CUDA_CACHE_PATH") != "":
		dir = filepath.Join(os.Getenv("CUDA_CACHE_PATH"), "strata-link")
	default:
		user, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(user, "strata", "link")
	}
	return &LinkCache{dir: dir}
}

// Dir returns the cache's directory.
func (c *LinkCache) Dir() string { return c.dir }

// linkCacheFormat changes when what a cache file holds changes.
const linkCacheFormat = "strata-link-1"

// key names the cubin of ptx compiled with o for dev.
func (c *LinkCache) key(dev *Device, ptx string, o JITOptions) string {
	v, _ := DriverVersion()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00sm_%d%d\x00%d\x00O%d\x00", linkCacheFormat, dev.name, dev.ccMajor, dev.ccMinor, v, o.OptLevel)
	h.Write([]byte(ptx))
	return hex.EncodeToString(h.Sum(nil))
}

// get reads the cubin filed under key.
func (c *LinkCache) get(key string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(c.dir, key+".cubin"))
	return b, err == nil && len(b) > 0
}

// put files cubin under key: written to a temporary file and renamed, so
// that a reader never sees half a file.
func (c *LinkCache) put(key string, cubin []byte) {
	if len(cubin) == 0 || os.MkdirAll(c.dir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(c.dir, key+".tmp*")
	if err != nil {
		return
	}
	_, err = f.Write(cubin)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(c.dir, key+".cubin"))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}
