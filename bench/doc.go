// Package bench is Strata's benchmark suite against PyTorch on one GPU.
//
// The workloads of DESIGN §11 (workloads.go) are graph-dialect programs built
// at two sizes: the full size timed on the H200, and a small size that the
// unit tests run in the interpreter against a reference written in plain Go.
//
// One device call runs the whole suite (bench/run-device.sh):
//
//	strata-bench prepare --out DIR   inputs as .npy (fixed seed), Strata's
//	                                 results and timings (prepare.json)
//	python3 torch_side.py DIR        PyTorch eager and torch.compile modes on
//	                                 the same .npy inputs (torch.json)
//	strata-bench report DIR          compares every Strata result with
//	                                 PyTorch's, writes the results JSON
//
// Both sides time with CUDA events after a warm-up and report medians, as
// /work/.library/device/METHOD.md asks. Results (results.go) name every
// workload with its Strata/torch.compile ratio; perfdoc.go turns a results
// file into the GPU section of docs/performance.md and its plot.
package bench
