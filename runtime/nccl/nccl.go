// Package nccl runs collectives among processes with NVIDIA's NCCL,
// loaded at run time with purego as runtime/cuda loads the driver: a
// Strata binary builds without cgo, and a machine without the library
// reports ErrNotFound instead of failing to start.
//
// One process drives one GPU (one rank). The ranks of a job agree on a
// communicator through a unique id that rank 0 makes and shares (Share:
// through a file or a localhost TCP socket); FromEnv reads STRATA_RANK,
// STRATA_WORLD_SIZE and the bootstrap from the environment. Every
// collective is queued on the stream it is given and returns at once
// (stream-ordered), so a plan holding them can be captured into a CUDA
// graph.
//
// The library is searched in order: the file named by $STRATA_NCCL,
// libnccl.so.2 through the dynamic loader's path, and the NVIDIA wheels of
// a Python installation (PyTorch's nvidia/nccl/lib).
package nccl

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ebitengine/purego"
	"github.com/strata-ir/strata/internal/dynlib"
)

// ErrNotFound is wrapped by the error of Load when no usable NCCL library
// is found.
var ErrNotFound = errors.New("NCCL not found")

// EnvPath names the environment variable that points at the library file,
// searched first.
const EnvPath = "STRATA_NCCL"

const soname = "libnccl.so.2"

// searchGlobs are the places outside the loader's path where toolkits and
// Python wheels install the library.
var searchGlobs = []string{
	"/usr/local/cuda/lib64/libnccl.so.2",
	"/usr/lib/x86_64-linux-gnu/libnccl.so.2",
	"/usr/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
	"/usr/local/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so.2",
	"/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
	"/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
}

// Result is an ncclResult_t.
type Result int32

// The results NCCL returns.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

// DataType is an ncclDataType_t.
type DataType int32

// The element types NCCL reduces.
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	BFloat16 DataType = 9
)

// RedOp is an ncclRedOp_t.
type RedOp int32

// The reductions.
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4
)

// UniqueIDBytes is the size of an ncclUniqueId.
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId: what rank 0 makes and every rank passes to
// InitRank to join one communicator.
type UniqueID struct{ Internal [UniqueIDBytes]byte }

// Error is a failed NCCL call.
type Error struct {
	Op     string
	Code   Result
	Detail string // ncclGetErrorString, and ncclGetLastError when it says more
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s (ncclResult %d)", e.Op, e.Detail, e.Code) }

// lib holds the bound entry points of one loaded libnccl.
type lib struct {
	path string

	ncclGetVersion     func(v *int32) Result
	ncclGetErrorString func(r Result) *byte
	ncclGetLastError   func(comm uintptr) *byte
	ncclGetUniqueId    func(id *UniqueID) Result
	ncclCommInitRank   func(comm *uintptr, nranks int32, id UniqueID, rank int32) Result
	ncclCommDestroy    func(comm uintptr) Result
	ncclCommCount      func(comm uintptr, n *int32) Result
	ncclCommUserRank   func(comm uintptr, r *int32) Result
	ncclGroupStart     func() Result
	ncclGroupEnd       func() Result

	// The collectives, called through purego.SyscallN on their addresses
	// (no reflection on the hot path).
	allReduce, broadcast, reduce, allGather, reduceScatter uintptr
}

func (l *lib) symbols() []dynlib.Symbol {
	return []dynlib.Symbol{
		{Name: "ncclGetVersion", Fn: &l.ncclGetVersion},
		{Name: "ncclGetErrorString", Fn: &l.ncclGetErrorString},
		{Name: "ncclGetLastError", Fn: &l.ncclGetLastError},
		{Name: "ncclGetUniqueId", Fn: &l.ncclGetUniqueId},
		{Name: "ncclCommInitRank", Fn: &l.ncclCommInitRank},
		{Name: "ncclCommDestroy", Fn: &l.ncclCommDestroy},
		{Name: "ncclCommCount", Fn: &l.ncclCommCount},
		{Name: "ncclCommUserRank", Fn: &l.ncclCommUserRank},
		{Name: "ncclGroupStart", Fn: &l.ncclGroupStart},
		{Name: "ncclGroupEnd", Fn: &l.ncclGroupEnd},
	}
}

// openLib loads the library at path and binds every entry point; a file
// that is missing or lacks one of them is an error, not a panic.
func openLib(path string) (*lib, error) {
	l := &lib{path: path}
	h, err := dynlib.Open(path, l.symbols(), "NCCL 2.19 or later")
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		name string
		addr *uintptr
	}{{"ncclAllReduce", &l.allReduce}, {"ncclBroadcast", &l.broadcast}, {"ncclReduce", &l.reduce},
		{"ncclAllGather", &l.allGather}, {"ncclReduceScatter", &l.reduceScatter}} {
		addr, err := purego.Dlsym(h, s.name)
		if err != nil || addr == 0 {
			purego.Dlclose(h)
			return nil, fmt.Errorf("%s has no %s", path, s.name)
		}
		*s.addr = addr
	}
	return l, nil
}

// candidates returns the paths Load tries, in order.
func candidates() []string { return dynlib.Candidates(EnvPath, []string{soname}, searchGlobs) }

// load returns the process-wide library, searching for it on first use.
var load = sync.OnceValues(func() (*lib, error) { return search(candidates()) })

// search opens the first path of paths that is an NCCL library.
func search(paths []string) (*lib, error) {
	return dynlib.Search(paths, openLib, ErrNotFound, EnvPath)
}

// Load finds and loads NCCL without touching a device; the error wraps
// ErrNotFound when no library is found.
func Load() error {
	_, err := load()
	return err
}

// Info returns the loaded library's path and version (ncclGetVersion:
// 10000·major + 100·minor + patch).
func Info() (path string, version int, err error) {
	l, err := load()
	if err != nil {
		return "", 0, err
	}
	var v int32
	if r := l.ncclGetVersion(&v); r != Success {
		return "", 0, l.errorFor("ncclGetVersion", r, 0)
	}
	return l.path, int(v), nil
}

func (l *lib) errorFor(op string, r Result, comm uintptr) error {
	detail := dynlib.GoString(l.ncclGetErrorString(r))
	if last := dynlib.GoString(l.ncclGetLastError(comm)); last != "" && last != detail {
		detail += ": " + last
	}
	return &Error{Op: op, Code: r, Detail: detail}
}

// NewUniqueID makes the id of a new communicator (rank 0 calls it).
func NewUniqueID() (UniqueID, error) {
	l, err := load()
	if err != nil {
		return UniqueID{}, err
	}
	var id UniqueID
	if r := l.ncclGetUniqueId(&id); r != Success {
		return UniqueID{}, l.errorFor("ncclGetUniqueId", r, 0)
	}
	return id, nil
}

// GroupStart and GroupEnd bracket collectives that NCCL issues as one
// (a bucket of several buffers, say).
func GroupStart() error {
	l, err := load()
	if err != nil {
		return err
	}
	if r := l.ncclGroupStart(); r != Success {
		return l.errorFor("ncclGroupStart", r, 0)
	}
	return nil
}

// GroupEnd ends the group GroupStart began and issues its collectives.
func GroupEnd() error {
	l, err := load()
	if err != nil {
		return err
	}
	if r := l.ncclGroupEnd(); r != Success {
		return l.errorFor("ncclGroupEnd", r, 0)
	}
	return nil
}
