package autotune

import (
	"slices"

	"github.com/strata-ir/strata/logs"
	"github.com/strata-ir/strata/passes/togpu"
	"github.com/strata-ir/strata/runtime/cublaslt"
)

// loadCuBLASLt finds cuBLASLt; a variable so that tests can take it away.
var loadCuBLASLt = cublaslt.Load

// withLibrary returns cands with, right after the default (so that the
// time budget does not skip it), the configuration that runs the matmul
// nests on cuBLASLt with their epilogue as a separate kernel, as
// Inductor weighs ATen's GEMM against its templates: only when the
// program has mma kernels and the library loads. A library that does not
// load is logged and skipped, never an error.
func withLibrary(name string, cands []togpu.Config, kernels []Kernel) []togpu.Config {
	if !slices.ContainsFunc(kernels, func(k Kernel) bool { return k.Mapping == togpu.MappingMMA }) {
		return cands
	}
	if err := loadCuBLASLt(); err != nil {
		logs.Printf(Topic, "%s: no cuBLASLt candidate: %v", name, err)
		return cands
	}
	c := togpu.DefaultConfig
	c.CuBLASLt = true
	return slices.Insert(slices.Clone(cands), 1, c)
}
