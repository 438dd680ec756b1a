package dynlib

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Symbol names a C entry point and points at the Go function variable
// (a *func(...)) that Open binds to it.
type Symbol struct {
	Name string
	Fn   any
}

// Open loads the library at path with local visibility and binds each of
// syms to its entry point, returning the library's handle for further
// look-ups. A library that does not load, or lacks one of the entry
// points, is an error, not a panic (purego.RegisterLibFunc would panic on
// a missing symbol); the error names the missing symbol and says the
// library is not what (e.g. "cuDNN 9"), and the library is closed again.
func Open(path string, syms []Symbol, what string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", path, err)
	}
	for _, s := range syms {
		addr, err := purego.Dlsym(h, s.Name)
		if err != nil || addr == 0 {
			purego.Dlclose(h)
			return 0, fmt.Errorf("%s has no %s (not %s)", path, s.Name, what)
		}
		purego.RegisterFunc(s.Fn, addr)
	}
	return h, nil
}

// GoString copies the NUL-terminated C string at p, owned by the library,
// into a Go string; a nil p is the empty string.
func GoString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
