// Package autotune searches the launch parameters of convert-loop-to-gpu
// (block size, vector width, rows per block, grid cap) for a program on
// its real inputs, as torch.compile's max-autotune does, and remembers
// the decision in a text tuning database so that it is paid once.
//
// The unit of search is the whole program: convert-loop-to-gpu takes its
// configuration as pass options applying to every kernel, so each
// candidate is one compile of the loop-level module (lower-to-loop runs
// once) and is timed as a whole with CUDA events: the median of a few
// launches after a warm-up, on the call's own arguments. Candidates are
// generated from the kernels the default configuration produces (their
// `strata.launch` mappings): block sizes matter to pointwise kernels and
// block-per-row kernels, the vector width only to pointwise kernels that
// vectorize, rows per block only to rows short enough for a warp, and
// the grid cap only to pointwise kernels. The default configuration is
// always measured first, so tuning never picks something slower than it
// measured, and the search stops when its time budget is spent. A final
// round then times the candidates within FinalMargin of the fastest
// again over about SustainedMs of launches each, as a benchmark's loop or
// a training run calls a program, and picks the fastest there.
//
// Decisions are keyed by device name, the canonical hash of the input
// program and the shapes and element types of the arguments, and stored
// one per line in autotune.txt in the compile cache's directory.
package autotune
