package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
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
	if err := checkOptLevel(o); err != nil {
		return nil, err
	}
	image := cBytes(ptx)
	name := cBytes("strata.ptx")
	j := newJITArgs(o)
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
		if r := dev.drv.raw(l.create, uintptr(len(j.opts)), uintptr(unsafe.Pointer(&j.opts[0])),
			uintptr(unsafe.Pointer(&j.vals[0])), uintptr(unsafe.Pointer(&state))); r != Success {
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
	m.stats = LoadStats{At: start, Wall: time.Since(start), JIT: j.wallTime()}
	if m.stats.JIT == 0 {
		m.stats.JIT = compile // the driver did not report its time: the host's clock around the compile
	}
	runtime.KeepAlive(image)
	runtime.KeepAlive(name)
	defer j.keepAlive()
	if err != nil {
		var e *Error
		errors.As(err, &e)
		if e.Op == "cuLink" {
			e.Op = op // the step that failed, not the context switch before it
		}
		return nil, &JITError{Err: e, Log: logText(j.errorLog)}
	}
	m.infoLog = logText(j.infoLog)
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
// written costs a compile, never an error. It is bounded: every
// pruneEvery writes (the first one of a process included) start a Prune
// in the background: files unused for MaxAge are removed, then the least
// recently used ones until the rest fits in MaxBytes (a read marks a file
// used). Set the bounds before the first write.
type LinkCache struct {
	dir string
	// MaxBytes bounds the size of the cubins kept (DefaultLinkCacheBytes).
	MaxBytes int64
	// MaxAge removes cubins not used for that long (DefaultLinkCacheAge).
	MaxAge time.Duration

	puts atomic.Int64
	mu   sync.Mutex // one prune at a time
}

// The default bounds of a LinkCache: the examples' kernels are 4–10 KB of
// cubin each, the benchmark's largest ≈ 200 KB.
const (
	DefaultLinkCacheBytes = 256 << 20
	DefaultLinkCacheAge   = 30 * 24 * time.Hour
)

// pruneEvery is how many writes a LinkCache makes between prunes.
const pruneEvery = 64

// LinkCacheEnv names the directory of the default LinkCache; "off"
// disables it.
const LinkCacheEnv = "STRATA_LINK_CACHE"

// NewLinkCache returns a cache in dir (created on the first write) with
// the default bounds.
func NewLinkCache(dir string) *LinkCache {
	return &LinkCache{dir: dir, MaxBytes: DefaultLinkCacheBytes, MaxAge: DefaultLinkCacheAge}
}

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
	return NewLinkCache(dir)
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

// Has reports whether the cache holds the cubin of ptx compiled with o
// for dev (LoadModuleLinked then compiles nothing).
func (c *LinkCache) Has(dev *Device, ptx string, o JITOptions) bool {
	fi, err := os.Stat(c.path(c.key(dev, ptx, o)))
	return err == nil && fi.Size() > 0
}

// path is the file of key.
func (c *LinkCache) path(key string) string { return filepath.Join(c.dir, key+".cubin") }

// get reads the cubin filed under key and marks it used.
func (c *LinkCache) get(key string) ([]byte, bool) {
	b, err := os.ReadFile(c.path(key))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	now := time.Now()
	os.Chtimes(c.path(key), now, now) // best effort: the last use, for prune
	return b, true
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
		err = os.Rename(f.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	if c.puts.Add(1)%pruneEvery == 1 {
		// In the background: a large directory takes milliseconds to
		// read, and puts happen on first calls.
		go c.Prune()
	}
}

// Prune removes the cubins unused for MaxAge, then the least recently
// used ones until the others fit in MaxBytes (a bound ≤ 0 is no bound),
// and leftover temporary files older than an hour. Errors are ignored:
// the cache is best effort.
func (c *LinkCache) Prune() {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	now := time.Now()
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		p := filepath.Join(c.dir, e.Name())
		switch {
		case strings.Contains(e.Name(), ".tmp"):
			if now.Sub(info.ModTime()) > time.Hour { // a writer that died
				os.Remove(p)
			}
		case strings.HasSuffix(e.Name(), ".cubin"):
			if c.MaxAge > 0 && now.Sub(info.ModTime()) > c.MaxAge {
				os.Remove(p)
				continue
			}
			files = append(files, file{p, info.Size(), info.ModTime()})
			total += info.Size()
		}
	}
	if c.MaxBytes <= 0 || total <= c.MaxBytes {
		return
	}
	sort.Slice(files, func(i, j int) bool { return files[i].used.Before(files[j].used) })
	for _, f := range files {
		if total <= c.MaxBytes {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}
