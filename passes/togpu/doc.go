// Package togpu provides the convert-loop-to-gpu pass and the lower-to-gpu
// pipeline (docs/lowering.md): every top-level loop.parallel nest of a
// func.func becomes one gpu.func kernel in a gpu.module @<func>_kernels, and
// the nest's place in the host function is taken by the launch: host index
// math for the grid, loop.view of every N-D buffer to 1-D, loop.dim of its
// dynamic sizes, and gpu.launch_func. A nest over a static extent of 0 has
// no work and is erased, with no kernel. Importing the package registers
// both, and the passes named below.
//
// # How a nest's kernel is chosen
//
// pass.run (togpu.go) first replaces the calls graph-attention-to-flash
// left (lowerFlashCalls, flash_pass.go) by flash kernels' launches. Then,
// per function (convertFunc): with Config.CuBLASLt and Config.CuDNN the
// nests a library computes become gpu.library_matmul / gpu.library_conv2d
// calls (lowerLibraryMatmuls, lowerLibraryConvs) and make no kernel; every
// other nest is checked (check, kernel.go) and built by kernelGen.build,
// which asks analyze (mapping.go) for its plan, the first that takes it:
//
//  1. mmaPlan (gemm.go): a matmul nest (gemm_match.go) on the tensor cores,
//     tiling Config.MMATile (mma.sync, or wgmma when the tile says so);
//  2. convPlan (conv_mma.go): a convolution nest as an implicit GEMM, the
//     same *mma plan with the convolution's geometry;
//  3. rowPlan (rows.go), after mergeRowLoops: a nest whose points are rows
//     and whose inner loops reduce over a row;
//  4. pointwisePlan (pointwise.go): anything else (always correct: each
//     thread runs the whole body for its points).
//
// (1 and 2 only with Config.TensorCores.) A plan is a mapping: it emits
// the kernel body and computes the grid; its launch parameters are
// recorded on the kernel as `strata.launch = {block, vector,
// rows_per_block, mapping}`, so that autotuning can vary them. build then
// lowers what is left of the loops (kernelGen.lower), narrows the index
// arithmetic to i32 where that is exact (index32.go), and emits the launch
// (kernelGen.launch).
//
// # Kernel families: files and entry points
//
// Each family is one file group; a reader looking for a family opens its
// prefix.
//
//   - pointwise (pointwise.go): a 1-D grid-stride loop over the flattened
//     iteration space, consecutive threads on consecutive innermost indices
//     (coalesced), each thread handling `vector` consecutive points when
//     every access is contiguous in the innermost index. Entry points:
//     pointwisePlan, (*pointwise).emit; rollInnerLoops keeps inner loops
//     from unrolling fully. Nests with inner loops that are not row
//     reductions (one thread per output) take it with vector 1.
//   - rows (rows_*): the nest's points are rows and its inner loops run over
//     a row. A block (rows_per_block = 1) or a warp (rows_per_block > 1)
//     handles a row; its threads stride over each inner loop, reduce their
//     partials with gpu.shuffle xor and, across warps, workgroup memory and
//     gpu.barrier. Rows that read columns (a bias gradient's second half)
//     take a lane of every warp each, 32 a block (rows_per_block = 32:
//     row.cols, reduceColumn). rows.go recognizes the reductions (recognize,
//     selectMinMax) and makes the plan (rowPlan); rows_emit.go builds the
//     kernel ((*row).emit, emitLoop, reduceRow, the row held in registers);
//     rows_stats.go computes a mean and a variance in one trip (Welford);
//     rows_merge.go merges a row's sibling loops (mergeRowLoops).
//   - GEMM (gemm_*, mapping "mma"): gemm_match.go recognizes
//     convert-graph-to-loop's matmul nest (matchMatmul); gemm.go holds the
//     tilings (MMATile, MMATiles, ParseMMATile) and the plan (mmaPlan);
//     gemm_kernel.go the pieces the tensor-core kernels share (operand
//     copies into shared memory in cp.async stages, the block's tile in
//     grouped order, the fused epilogue) and the mma.sync kernel
//     ((*mma).emit); gemm_wgmma.go the wgmma kernel for sm_90a (emitWGMMA);
//     gemm_ws.go its warp-specialized form, a producer warpgroup handing
//     stages over through mbarriers (emitWS); gemm_tma.go the producer's TMA
//     copies through tensor-map arguments (tmaProducer); gemm_epilogue.go
//     the epilogue staged through workgroup memory (stagedEpilogue).
//   - convolution (conv_*): conv_mma.go runs a convolution nest as an
//     implicit GEMM on the GEMM kernels (convPlan, convGeom: the
//     operand's im2col addressing).
//   - flash attention (flash_*, mapping "flash"): flash.go the kernel's
//     design and its shape (Flash: Check, Kernel, Launch); flash_tile.go
//     the tilings (FlashTile, FlashTiles, WGMMATile); flash_kernel.go the
//     generator every flash kernel shares (flashGen: key-tile copies, the
//     online softmax, the masked score tiles) and the mma.sync forward
//     (flashGen.emit); flash_wgmma.go the wgmma forward, plain and
//     warp-specialized (emitWGMMA, emitWGMMAPipe); flash_tma.go its K and
//     V tiles by TMA, multicast across a cluster (setupTMA); flash_grad.go and
//     flash_grad_wgmma.go the backward (FlashGrad.Kernels: dQ, then dK and
//     dV); flash_pass.go the graph-attention-to-flash pass
//     (OutlineAttention) and, in convert-loop-to-gpu, the lowering of its
//     calls to launches (lowerFlashCalls).
//   - decode attention (decode_*, mapping "decode"): decode_attention.go
//     a decoding step's masked attention (one query a sequence against a
//     KV cache) as two split-K kernels that skip the cache's 32-key tiles
//     the mask drops (DecodeAttention: ScoresKernel, CombineKernel,
//     Launch), outlined by graph-attention-to-flash.
//   - libraries (library_*): library_gemm.go hands matmul nests to
//     cuBLASLt (libraryPlan, lowerLibraryMatmuls → gpu.library_matmul);
//     library_conv.go hands convolutions and their gradients to cuDNN, and
//     unstrided 1×1 ones to cuBLASLt (convLibraryPlan, filterGradientPlan,
//     lowerLibraryConvs).
//
// # Shared pieces
//
//   - togpu.go: the pass, its options (Config) and the per-function driver.
//   - mapping.go: the mapping interface every plan implements and the
//     choice among the plans (analyze).
//   - kernel.go: what every kernel needs: the nest's checks, the kernel's
//     signature from the nest's captures, the launch, and the lowering of
//     inner loop.parallel ops (sequentialize) and N-D accesses.
//   - tiles.go: ix, the offset arithmetic of the tiled kernels (GEMM,
//     convolution, flash attention) in their offset type, and its i32
//     form for mbarrier parities, TMA coordinates and cluster ranks. The
//     families' copy pipelines (cp.async stages, TMA with mbarriers) stay
//     their own: their stage layouts and swizzles differ.
//   - index32.go: 32-bit index arithmetic for the SIMT kernels;
//     narrow.go: NarrowLaunches, grids too small for their data.
//   - module-wide passes after the mapping: expandmath.go (math PTX lacks),
//     dedup.go (kernels that are the same code merged).
//
// # Why one package
//
// The families share unexported machinery: kernelGen and Config, the
// mapping interface, the GEMM's operand copies and epilogue (which the
// convolutions reuse), ix, and the driver that runs them in one pass.
// Subpackages would have to export that machinery to each other (or move
// it to an internal package whose exported names exist only for this), and
// the in-package tests reach the plans directly. The file prefixes give a
// reader the same map without that API.
package togpu
