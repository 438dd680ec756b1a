package cublaslt

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/strata-ir/strata/internal/dynlib"
	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/runtime/cuda"
)

// Status is a cublasStatus_t.
type Status int32

// statusNames name the cublasStatus_t codes, for when the library cannot
// be asked (cublasLtGetStatusName).
var statusNames = map[Status]string{
	0:  "CUBLAS_STATUS_SUCCESS",
	1:  "CUBLAS_STATUS_NOT_INITIALIZED",
	3:  "CUBLAS_STATUS_ALLOC_FAILED",
	7:  "CUBLAS_STATUS_INVALID_VALUE",
	8:  "CUBLAS_STATUS_ARCH_MISMATCH",
	11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED",
	14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED",
	16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// String returns the status's CUBLAS_STATUS_* name.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("cublasStatus_t(%d)", int32(s))
}

// Error is a failed cuBLASLt call.
type Error struct {
	Op     string // the entry point
	Status Status
	Name   string // the library's name of Status
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("cuBLASLt: %s failed: %s", e.Op, e.Name) }

// check turns a status into an *Error naming op, or nil on success.
func (l *lib) check(op string, s Status) error {
	if s == 0 {
		return nil
	}
	name := s.String()
	if p := l.cublasLtGetStatusName(s); p != nil {
		name = dynlib.GoString(p)
	}
	return &Error{Op: op, Status: s, Name: name}
}

// DataType is a cudaDataType: the element type of a matrix.
type DataType int32

// The element types Matmul takes.
const (
	F32  DataType = 0  // CUDA_R_32F
	F16  DataType = 2  // CUDA_R_16F
	BF16 DataType = 14 // CUDA_R_16BF
)

// String returns the type's name as Strata's IR spells it.
func (t DataType) String() string {
	switch t {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	}
	return fmt.Sprintf("cudaDataType(%d)", int32(t))
}

// The cuBLASLt constants Matmul sets (cublasLt.h, cublas_api.h).
const (
	compute32F             = 68 // CUBLAS_COMPUTE_32F
	descTransA             = 3  // CUBLASLT_MATMUL_DESC_TRANSA
	descTransB             = 4  // CUBLASLT_MATMUL_DESC_TRANSB
	descEpilogue           = 7  // CUBLASLT_MATMUL_DESC_EPILOGUE (uint32)
	descBiasPointer        = 8  // CUBLASLT_MATMUL_DESC_BIAS_POINTER (const void *)
	epilogueBias           = 4  // CUBLASLT_EPILOGUE_BIAS
	layoutBatchCount       = 5  // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT (int32)
	layoutBatchStride      = 6  // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET (int64)
	prefMaxWorkspaceBytes  = 1  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64)
	opN                    = 0  // CUBLAS_OP_N
	opT                    = 1  // CUBLAS_OP_T
	heuristicAlgoDataWords = 8  // cublasLtMatmulAlgo_t: uint64_t data[8]
)

// heuristicResult is cublasLtMatmulHeuristicResult_t.
type heuristicResult struct {
	algo          [heuristicAlgoDataWords]uint64
	workspaceSize uint64
	state         Status
	wavesCount    float32
	reserved      [4]int32
}

// WorkspaceBytes is the workspace a Handle gives cuBLASLt, what PyTorch
// gives it on Hopper (32 MiB): some of the fastest kernels split K and
// need it.
const WorkspaceBytes = 32 << 20

// Matmul is one (batched) product in Strata's row-major terms: for each
// of Batch matrices, D[M,N] = A[M,K]·B[K,N] with f32 accumulation (the
// compute type CUBLAS_COMPUTE_32F), rounded once to DType. With TransA, A
// is stored [K, M]; with TransB, B is stored [N, K]. The matrices of a
// batch follow one another without gaps; with SharedA, A is one matrix
// that every batch multiplies. With Bias, D[i, j] is rounded once from
// the f32 sum plus bias[j], a vector of N elements of DType (cuBLASLt's
// BIAS epilogue; the same vector for every batch): run it with RunBias.
type Matmul struct {
	AType, DType   DataType // B has AType
	M, N, K, Batch int64
	TransA, TransB bool
	SharedA        bool
	Bias           bool
}

// check reports a product cuBLASLt is not asked to do.
func (m Matmul) check() error {
	switch {
	case m.AType != BF16 && m.AType != F16:
		return fmt.Errorf("cuBLASLt matmul of %s: operands must be bf16 or f16", m.AType)
	case m.DType != m.AType && m.DType != F32:
		return fmt.Errorf("cuBLASLt matmul of %s into %s: the result must be %s or f32", m.AType, m.DType, m.AType)
	case m.M < 1 || m.N < 1 || m.K < 1 || m.Batch < 1:
		return fmt.Errorf("cuBLASLt matmul of sizes M=%d N=%d K=%d batch=%d: every size must be positive", m.M, m.N, m.K, m.Batch)
	case m.M > 1<<31-1 || m.N > 1<<31-1 || m.K > 1<<31-1 || m.Batch > 1<<31-1:
		return fmt.Errorf("cuBLASLt matmul of sizes M=%d N=%d K=%d batch=%d: sizes must fit in 32 bits", m.M, m.N, m.K, m.Batch)
	case m.Bias && m.DType != m.AType:
		return fmt.Errorf("cuBLASLt matmul of %s into %s with a bias: the result must be %s", m.AType, m.DType, m.AType)
	}
	return nil
}

// planKey is what a plan is made for: the product and, with a bias, the
// bias pointer's alignment (cuBLASLt's heuristic picks kernels for the
// alignment of the pointer it is shown).
type planKey struct {
	Matmul
	biasAlign uint64
}

// alignment returns the largest power of two up to 256 dividing p.
func alignment(p cuda.DevicePtr) uint64 {
	a := uint64(256)
	for a > 1 && uint64(p)%a != 0 {
		a /= 2
	}
	return a
}

// plan is a product's descriptors and chosen algorithm, made once per
// distinct Matmul.
type plan struct {
	desc, a, b, d uintptr
	algo          heuristicResult
}

// Handle is a cuBLASLt handle on one device with its workspace and the
// plans of the products it has run. It is safe for concurrent use.
type Handle struct {
	lib       *lib
	dev       *cuda.Device
	alloc     *cuda.Allocator
	h         uintptr
	workspace cuda.DevicePtr

	mu    sync.Mutex
	plans map[planKey]*plan
	// alpha and beta are the host scalars of every call (D = 1·A·B + 0·D),
	// read when a call is queued, also while a stream is captured.
	alpha, beta float32

	// tuneMu serialises the Tunes, which run on tuneWorkspace (fresh
	// memory, taken by the first Tune): the calls of Run use workspace
	// meanwhile, on other streams.
	tuneMu        sync.Mutex
	tuneWorkspace cuda.DevicePtr
}

// New loads cuBLASLt (an error wrapping ErrNotFound when absent), creates
// a handle on dev and takes its workspace of WorkspaceBytes from alloc.
func New(dev *cuda.Device, alloc *cuda.Allocator) (*Handle, error) {
	l, err := load()
	if err != nil {
		return nil, err
	}
	hd := &Handle{lib: l, dev: dev, alloc: alloc, plans: map[planKey]*plan{}, alpha: 1}
	if err := dev.WithContext(func() error { return l.check("cublasLtCreate", l.cublasLtCreate(&hd.h)) }); err != nil {
		return nil, err
	}
	if hd.workspace, err = alloc.Alloc(WorkspaceBytes); err != nil {
		_ = dev.WithContext(func() error { return l.check("cublasLtDestroy", l.cublasLtDestroy(hd.h)) })
		return nil, fmt.Errorf("cuBLASLt workspace: %w", err)
	}
	return hd, nil
}

// Path returns the file the library was loaded from.
func (hd *Handle) Path() string { return hd.lib.path }

// Close destroys the plans and the handle and returns the workspace.
func (hd *Handle) Close() error {
	hd.tuneMu.Lock()
	defer hd.tuneMu.Unlock()
	hd.mu.Lock()
	defer hd.mu.Unlock()
	l := hd.lib
	errs := []error{hd.dev.WithContext(func() error {
		var errs []error
		for _, p := range hd.plans {
			errs = append(errs, p.destroy(l))
		}
		errs = append(errs, l.check("cublasLtDestroy", l.cublasLtDestroy(hd.h)))
		return errors.Join(errs...)
	})}
	errs = append(errs, hd.alloc.Free(hd.workspace))
	if hd.tuneWorkspace != 0 {
		errs = append(errs, hd.alloc.Free(hd.tuneWorkspace))
		hd.tuneWorkspace = 0
	}
	hd.plans = nil
	return errors.Join(errs...)
}

// Run queues the product m of the matrices at a and b into d on stream
// (nil: the default stream). The first product of each shape asks
// cuBLASLt's heuristic for an algorithm; later ones reuse it.
func (hd *Handle) Run(m Matmul, a, b, d cuda.DevicePtr, stream *cuda.Stream) error {
	if m.Bias {
		return errors.New("cuBLASLt: a product with a bias runs with RunBias")
	}
	return hd.run(m, a, b, d, 0, hd.workspace, stream)
}

// RunBias is Run for a product with a bias (m.Bias): bias points at its
// N elements of m.DType.
func (hd *Handle) RunBias(m Matmul, a, b, d, bias cuda.DevicePtr, stream *cuda.Stream) error {
	if !m.Bias || bias == 0 {
		return errors.New("cuBLASLt: RunBias needs a product with a bias and the bias's address")
	}
	return hd.run(m, a, b, d, bias, hd.workspace, stream)
}

// run queues the product m on stream with the workspace ws: the handle's
// for the program's calls (Run, RunBias), the tuning one for a Tune's,
// whose stream is another. Two kernels that share a workspace may overwrite
// each other's partial results.
func (hd *Handle) run(m Matmul, a, b, d, bias, ws cuda.DevicePtr, stream *cuda.Stream) error {
	if err := m.check(); err != nil {
		return err
	}
	key := planKey{Matmul: m}
	if m.Bias {
		key.biasAlign = alignment(bias)
	}
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.plans == nil {
		return errors.New("cuBLASLt: handle used after Close")
	}
	l := hd.lib
	return hd.dev.WithContext(func() error {
		p := hd.plans[key]
		if p == nil {
			var err error
			if p, err = hd.newPlan(m, bias); err != nil {
				return err
			}
			hd.plans[key] = p
		}
		if m.Bias {
			// The descriptor is the plan's; its bias pointer is this
			// call's (read when the call is queued).
			if err := hd.setDescPtr(p.desc, descBiasPointer, bias); err != nil {
				return err
			}
		}
		// cuBLASLt's A is Strata's B and its B Strata's A (package doc).
		return l.check("cublasLtMatmul", l.cublasLtMatmul(hd.h, p.desc, unsafe.Pointer(&hd.alpha),
			uint64(b), p.b, uint64(a), p.a, unsafe.Pointer(&hd.beta), uint64(d), p.d, uint64(d), p.d,
			unsafe.Pointer(&p.algo.algo), uint64(ws), WorkspaceBytes, stream.Handle()))
	})
}

// newPlan makes the descriptors of m and picks cuBLASLt's first
// heuristic algorithm for it (with bias, the address of m's bias: the
// heuristic reads its alignment). The context is current.
func (hd *Handle) newPlan(m Matmul, bias cuda.DevicePtr) (_ *plan, err error) {
	l := hd.lib
	p := &plan{}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.destroy(l))
		}
	}()
	if err := l.check("cublasLtMatmulDescCreate", l.cublasLtMatmulDescCreate(&p.desc, compute32F, F32)); err != nil {
		return nil, err
	}
	// Column-major: cuBLASLt computes Dᵀ[N,M] = op(Bᵀ)·op(Aᵀ). B stored
	// [K, N] row-major is N×K column-major (no transpose), stored [N, K]
	// it is K×N and transposed; A likewise with M.
	transA, transB := int32(opN), int32(opN)
	bRows, bCols, aRows, aCols := m.N, m.K, m.K, m.M
	if m.TransB {
		transA, bRows, bCols = opT, m.K, m.N
	}
	if m.TransA {
		transB, aRows, aCols = opT, m.M, m.K
	}
	if err := hd.setDesc(p.desc, descTransA, transA); err != nil {
		return nil, err
	}
	if err := hd.setDesc(p.desc, descTransB, transB); err != nil {
		return nil, err
	}
	if m.Bias {
		// cuBLASLt's D is Dᵀ: its rows are Strata's columns j, which is
		// what the BIAS epilogue indexes its vector by.
		if err := hd.setDesc(p.desc, descEpilogue, epilogueBias); err != nil {
			return nil, err
		}
		if err := hd.setDescPtr(p.desc, descBiasPointer, bias); err != nil {
			return nil, err
		}
	}
	if p.b, err = hd.layout(m.AType, bRows, bCols, m.Batch, bRows*bCols); err != nil {
		return nil, err
	}
	aStride := aRows * aCols
	if m.SharedA {
		aStride = 0
	}
	if p.a, err = hd.layout(m.AType, aRows, aCols, m.Batch, aStride); err != nil {
		return nil, err
	}
	if p.d, err = hd.layout(m.DType, m.N, m.M, m.Batch, m.N*m.M); err != nil {
		return nil, err
	}
	algos, err := hd.heuristics(p, 1)
	if err != nil {
		return nil, err
	}
	if len(algos) < 1 {
		return nil, fmt.Errorf("cuBLASLt has no algorithm for %s·%s → %s, M=%d N=%d K=%d batch=%d", m.AType, m.AType, m.DType, m.M, m.N, m.K, m.Batch)
	}
	p.algo = algos[0]
	return p, nil
}

// heuristics returns up to n algorithms cuBLASLt's heuristic proposes for
// p's descriptors within the workspace, best first. The context is
// current.
func (hd *Handle) heuristics(p *plan, n int32) ([]heuristicResult, error) {
	l := hd.lib
	var pref uintptr
	if err := l.check("cublasLtMatmulPreferenceCreate", l.cublasLtMatmulPreferenceCreate(&pref)); err != nil {
		return nil, err
	}
	defer l.cublasLtMatmulPreferenceDestroy(pref)
	ws := uint64(WorkspaceBytes)
	if err := l.check("cublasLtMatmulPreferenceSetAttribute", l.cublasLtMatmulPreferenceSetAttribute(pref, prefMaxWorkspaceBytes, unsafe.Pointer(&ws), 8)); err != nil {
		return nil, err
	}
	out := make([]heuristicResult, n)
	var got int32
	if err := l.check("cublasLtMatmulAlgoGetHeuristic", l.cublasLtMatmulAlgoGetHeuristic(hd.h, p.desc, p.b, p.a, p.d, p.d, pref, n, &out[0], &got)); err != nil {
		return nil, err
	}
	return out[:got], nil
}

// setDesc sets an int32 attribute of a matmul descriptor.
func (hd *Handle) setDesc(desc uintptr, attr int32, v int32) error {
	return hd.lib.check("cublasLtMatmulDescSetAttribute", hd.lib.cublasLtMatmulDescSetAttribute(desc, attr, unsafe.Pointer(&v), 4))
}

// setDescPtr sets a pointer attribute of a matmul descriptor.
func (hd *Handle) setDescPtr(desc uintptr, attr int32, p cuda.DevicePtr) error {
	v := uint64(p)
	return hd.lib.check("cublasLtMatmulDescSetAttribute", hd.lib.cublasLtMatmulDescSetAttribute(desc, attr, unsafe.Pointer(&v), 8))
}

// layout makes the column-major layout of batch rows×cols matrices, each
// stride elements after the previous one (0: one matrix for every batch).
func (hd *Handle) layout(t DataType, rows, cols, batch, stride int64) (uintptr, error) {
	l := hd.lib
	var lay uintptr
	if err := l.check("cublasLtMatrixLayoutCreate", l.cublasLtMatrixLayoutCreate(&lay, t, uint64(rows), uint64(cols), rows)); err != nil {
		return 0, err
	}
	if batch > 1 {
		count := int32(batch)
		err := l.check("cublasLtMatrixLayoutSetAttribute", l.cublasLtMatrixLayoutSetAttribute(lay, layoutBatchCount, unsafe.Pointer(&count), 4))
		if err == nil {
			err = l.check("cublasLtMatrixLayoutSetAttribute", l.cublasLtMatrixLayoutSetAttribute(lay, layoutBatchStride, unsafe.Pointer(&stride), 8))
		}
		if err != nil {
			l.cublasLtMatrixLayoutDestroy(lay)
			return 0, err
		}
	}
	return lay, nil
}

// destroy releases the descriptors p holds. The context is current.
func (p *plan) destroy(l *lib) error {
	var errs []error
	for _, lay := range []uintptr{p.a, p.b, p.d} {
		if lay != 0 {
			errs = append(errs, l.check("cublasLtMatrixLayoutDestroy", l.cublasLtMatrixLayoutDestroy(lay)))
		}
	}
	if p.desc != 0 {
		errs = append(errs, l.check("cublasLtMatmulDescDestroy", l.cublasLtMatmulDescDestroy(p.desc)))
	}
	return errors.Join(errs...)
}

// TuneCandidates is how many of the algorithms cuBLASLt's heuristic
// proposes Tune times. Measured on the H200 (bench/NOTES.md, session 15):
// for GPT-2's prefill the fastest of the first eight was #5 for the head
// (0.774 against #0's 0.863 ms) and the MLP's first product (0.0551
// against 0.0598), #4 for the qkv projection (0.0434 against 0.0488).
const TuneCandidates = 8

// TuneMinFlops is the smallest product (2·M·N·K·batch) Tune times: below
// it a product takes a few microseconds, about what its launch costs, and
// the algorithms differ by less than the timing's noise (a decoding
// step's products at batch 8 ran 10–14 µs whichever algorithm).
const TuneMinFlops = 1 << 31

// Tune times the first TuneCandidates algorithms cuBLASLt's heuristic
// proposes for m (each run once, then timed timingRuns times on stream,
// the fastest run counting: timePlan) on the operands at a, b and d (and
// bias, for a product with one), and makes the fastest the algorithm of
// m's later calls: the heuristic's first proposal is not always its
// fastest. The choice is logged under the topic autotune. A product under
// TuneMinFlops only runs once, with the first proposal.
//
// Tune holds the handle only to read and set m's plan: the calls of Run
// meanwhile (a program's first run while its products are tuned in the
// background) run on the heuristic's first proposal, or on the choice of
// an earlier Tune, and switch to this one's when it ends. Every run of a
// Tune (a small product's one run too) is on a workspace of Tune's own,
// and the candidates' timings wait for the program's work on the device
// (cuda.Device.WaitQuiet) and are made again when a run of it began
// meanwhile: the device is the program's first, and the timings stay
// those of an idle device.
func (hd *Handle) Tune(m Matmul, a, b, d, bias cuda.DevicePtr, stream *cuda.Stream) error {
	if err := m.check(); err != nil {
		return err
	}
	if m.Bias != (bias != 0) {
		return errors.New("cuBLASLt: Tune needs the bias's address exactly for a product with a bias")
	}
	key := planKey{Matmul: m}
	if m.Bias {
		key.biasAlign = alignment(bias)
	}
	hd.tuneMu.Lock()
	defer hd.tuneMu.Unlock()
	hd.mu.Lock()
	closed := hd.plans == nil
	hd.mu.Unlock()
	if closed {
		return errors.New("cuBLASLt: handle used after Close")
	}
	// Every run of a Tune, timed or not, is on the tuning workspace: the
	// program's calls on other streams use the handle's meanwhile, and
	// two kernels that share a workspace may overwrite each other's
	// partial results.
	if hd.tuneWorkspace == 0 {
		ws, err := hd.alloc.AllocFresh(WorkspaceBytes)
		if err != nil {
			return fmt.Errorf("cuBLASLt tuning workspace: %w", err)
		}
		hd.tuneWorkspace = ws
	}
	if 2*float64(m.M)*float64(m.N)*float64(m.K)*float64(m.Batch) < TuneMinFlops {
		return hd.run(m, a, b, d, bias, hd.tuneWorkspace, stream)
	}
	// A plan of Tune's own (cuBLASLt's handle is thread-safe): the shared
	// one keeps its algorithm until the choice is made.
	var p *plan
	var algos []heuristicResult
	err := hd.dev.WithContext(func() (err error) {
		if p, err = hd.newPlan(m, bias); err != nil {
			return err
		}
		algos, err = hd.heuristics(p, TuneCandidates)
		return err
	})
	if err != nil {
		return err
	}
	defer func() { _ = hd.dev.WithContext(func() error { return p.destroy(hd.lib) }) }()
	start, err := hd.dev.NewEvent()
	if err != nil {
		return err
	}
	defer start.Destroy()
	end, err := hd.dev.NewEvent()
	if err != nil {
		return err
	}
	defer end.Destroy()
	began := time.Now()
	best, bestMs := -1, float32(0)
	times := make([]string, 0, len(algos))
	retimed := 0
	for i, h := range algos {
		p.algo = h
		ms, again, err := hd.timePlan(p, a, b, d, stream, start, end)
		if err != nil {
			continue // a candidate that does not run is not chosen
		}
		retimed += again
		times = append(times, fmt.Sprintf("#%d %.4f ms", i, ms))
		if best < 0 || ms < bestMs {
			best, bestMs = i, ms
		}
	}
	if best < 0 {
		return fmt.Errorf("cuBLASLt: none of %d algorithms for M=%d N=%d K=%d batch=%d ran", len(algos), m.M, m.N, m.K, m.Batch)
	}
	logs.Printf("autotune", "cuBLASLt %s product %dx%dx%d (batch %d, transposes %v %v, bias %v): algorithm #%d of the heuristic's %d (%s; timed in %.1f ms, %d timings made again after the program's work)",
		m.AType, m.M, m.N, m.K, m.Batch, m.TransA, m.TransB, m.Bias, best, len(algos), strings.Join(times, ", "),
		float64(time.Since(began).Microseconds())/1000, retimed)
	hd.mu.Lock()
	defer hd.mu.Unlock()
	if hd.plans == nil {
		return errors.New("cuBLASLt: handle used after Close")
	}
	shared := hd.plans[key]
	if shared == nil {
		err := hd.dev.WithContext(func() (err error) { shared, err = hd.newPlan(m, bias); return err })
		if err != nil {
			return err
		}
		hd.plans[key] = shared
	}
	shared.algo = algos[best]
	return nil
}

// timePlan runs plan p's product (its bias in its descriptor) once on the
// tuning workspace (the kernel's first run loads it), then timingRuns
// times, each between start and end on stream, and returns the fastest
// run's milliseconds (cuda.FastestRun): a run another stream's work
// slowed, or that waited for the host, only ever takes longer. The timed
// runs start once the program's work queued so far has finished, hold the
// device's TimingLock, and are all made again (counted in again) when a
// run of the program's began meanwhile (cuda.Device.TimeQuiet). The
// tuning lock is held.
func (hd *Handle) timePlan(p *plan, a, b, d cuda.DevicePtr, stream *cuda.Stream, start, end *cuda.Event) (best float32, again int, err error) {
	l := hd.lib
	call := func() (bool, error) {
		return true, hd.dev.WithContext(func() error {
			return l.check("cublasLtMatmul", l.cublasLtMatmul(hd.h, p.desc, unsafe.Pointer(&hd.alpha),
				uint64(b), p.b, uint64(a), p.a, unsafe.Pointer(&hd.beta), uint64(d), p.d, uint64(d), p.d,
				unsafe.Pointer(&p.algo.algo), uint64(hd.tuneWorkspace), WorkspaceBytes, stream.Handle()))
		})
	}
	if _, err := call(); err != nil {
		return 0, 0, err
	}
	again, err = hd.dev.TimeQuiet(func() (bool, error) {
		var err error
		best, _, err = cuda.FastestRun(timingRuns, call, stream, start, end)
		return true, err
	})
	return best, again, err
}

// timingRuns is how many timed runs of each candidate Tune takes the
// fastest of.
const timingRuns = 3
