// Package cache is Strata's content-addressed compile cache.
//
// An entry holds what compiling a program produced, the PTX of each
// gpu.module and the launch-plan module as text, under the SHA-256 of its
// Key: the canonical IR of the input (generic form, no locations), the
// pass pipeline, the target (PTX backend, architecture, ISA version) and
// the compiler's version. Entries live in files under Dir, written to a
// temporary file and renamed into place, so a reader never sees half an
// entry and concurrent writers of the same entry are harmless.
//
// Next to the entries an index maps a name (an input file, a function) to
// the Key it was last compiled with, so that a miss can be explained: which
// part of the key differs from the last compile of the same name.
package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/strata-ir/strata/ir"
)

// FormatVersion changes whenever the entry format or the meaning of a key
// part changes; it is part of every key.
const FormatVersion = "strata-cache-1"

// Key is what identifies a compile.
type Key struct {
	// Source is the SHA-256 (hex) of the input's canonical IR (SourceHash).
	Source string `json:"source"`
	// Pipeline is the pass pipeline that lowered it, as text.
	Pipeline string `json:"pipeline"`
	// Target is the code generator: PTX backend, architecture, version.
	Target string `json:"target"`
	// Compiler identifies the compiler build (CompilerVersion).
	Compiler string `json:"compiler"`
}

// Sum returns the hex SHA-256 naming the key's entry. Each part is
// length-prefixed, so no two keys share a sum by moving text across parts.
func (k Key) Sum() string {
	h := sha256.New()
	for _, part := range []string{FormatVersion, k.Source, k.Pipeline, k.Target, k.Compiler} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SourceHash returns the hex SHA-256 of op printed in generic form without
// locations: two inputs that differ only in names of values, formatting,
// comments or locations hash the same.
func SourceHash(op *ir.Operation) string {
	s := sha256.Sum256([]byte(ir.Sprint(op, ir.PrintOptions{Generic: true})))
	return hex.EncodeToString(s[:])
}

// CompilerVersion identifies this build of the compiler: the main
// module's version and VCS revision and the Go version. A build from a
// modified tree (or without VCS information) adds the executable's size
// and modification time, so rebuilding after an edit invalidates the
// cache instead of serving code from the old compiler.
func CompilerVersion() string {
	versionOnce.Do(func() { version = compilerVersion() })
	return version
}

var (
	versionOnce sync.Once
	version     string
)

func compilerVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown" + executableStamp()
	}
	v := bi.Main.Path + "@" + bi.Main.Version + " " + bi.GoVersion
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev
	}
	if rev == "" || modified == "true" {
		v += executableStamp()
	}
	return v
}

// executableStamp is the running executable's size and modification time.
func executableStamp() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" exe %d@%d", fi.Size(), fi.ModTime().UnixNano())
}

// Entry is a cached compile.
type Entry struct {
	// Key is the key the entry was stored under.
	Key Key `json:"key"`
	// PTX maps each gpu.module's symbol name to its PTX text.
	PTX map[string]string `json:"ptx"`
	// Plan is the compiled module (launch plans and kernels) in generic
	// form.
	Plan string `json:"plan"`
}

// Cache is a compile cache in a directory.
type Cache struct {
	dir string
}

// EnvDir is the environment variable that overrides the cache directory.
const EnvDir = "STRATA_CACHE_DIR"

// Dir returns the default cache directory: $STRATA_CACHE_DIR, else
// strata under the user cache directory (os.UserCacheDir).
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cache: no cache directory (set %s): %w", EnvDir, err)
	}
	return filepath.Join(d, "strata"), nil
}

// Open returns the cache in dir ("" means Dir()), creating the directory.
func Open(dir string) (*Cache, error) {
	if dir == "" {
		var err error
		if dir, err = Dir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "entries"), 0o755); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{dir: dir}, nil
}

// Path returns the cache's directory.
func (c *Cache) Path() string { return c.dir }

func (c *Cache) entryPath(k Key) string {
	return filepath.Join(c.dir, "entries", k.Sum()+".json")
}

func (c *Cache) indexPath() string { return filepath.Join(c.dir, "index.json") }

// Get returns the entry of k; ok is false on a miss. An unreadable or
// corrupt entry is a miss with an error saying why.
func (c *Cache) Get(k Key) (e *Entry, ok bool, err error) {
	data, err := os.ReadFile(c.entryPath(k))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	e = &Entry{}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, false, fmt.Errorf("cache: corrupt entry %s: %w", c.entryPath(k), err)
	}
	if e.Key != k {
		return nil, false, fmt.Errorf("cache: entry %s holds another key", c.entryPath(k))
	}
	return e, true, nil
}

// Put stores e under k and records k as the last key of name (see
// Explain; an empty name records nothing).
func (c *Cache) Put(name string, k Key, e *Entry) error {
	e.Key = k
	data, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if err := writeAtomic(c.entryPath(k), data); err != nil {
		return err
	}
	if name == "" {
		return nil
	}
	idx := c.readIndex()
	idx[name] = k
	data, err = json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return writeAtomic(c.indexPath(), data)
}

// readIndex reads the index; a missing or corrupt index is empty, as the
// index only serves explanations.
func (c *Cache) readIndex() map[string]Key {
	idx := map[string]Key{}
	if data, err := os.ReadFile(c.indexPath()); err == nil {
		if json.Unmarshal(data, &idx) != nil {
			idx = map[string]Key{}
		}
	}
	return idx
}

// writeAtomic writes data to path through a temporary file in the same
// directory and a rename.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Explain says why k missed, comparing it with the last key stored for
// name: each part that differs, or that there was no earlier compile of
// name, or that the earlier entry is gone.
func (c *Cache) Explain(name string, k Key) string {
	old, ok := c.readIndex()[name]
	if !ok {
		return fmt.Sprintf("cache miss for %s: it was never compiled with this cache (%s)", name, c.dir)
	}
	var diffs []string
	part := func(what, was, now string) {
		if was != now {
			diffs = append(diffs, fmt.Sprintf("%s changed (was %s, now %s)", what, short(was), short(now)))
		}
	}
	part("the source IR", old.Source, k.Source)
	part("the pipeline", old.Pipeline, k.Pipeline)
	part("the target", old.Target, k.Target)
	part("the compiler", old.Compiler, k.Compiler)
	if len(diffs) == 0 {
		return fmt.Sprintf("cache miss for %s: the key matches its last compile, but the entry is gone (removed from %s)", name, c.dir)
	}
	return fmt.Sprintf("cache miss for %s: %s", name, strings.Join(diffs, "; "))
}

// short abbreviates hashes and quotes other text.
func short(s string) string {
	if len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" {
		return s[:12]
	}
	return fmt.Sprintf("%q", s)
}
