package gpu

// The op names of the gpu dialect, one per row of its op table: code
// outside the dialect names an op by its constant, never by a string
// literal, so that a misspelt or removed op fails to compile. A test
// (dialects.TestOpNameConstants) checks that the constants and the rows agree.
const (
	// OpModule is gpu.module: A top level compilation unit containing code to be run on a GPU.
	OpModule = "gpu.module"
	// OpModuleEnd is gpu.module_end: A pseudo op that marks the end of a gpu.module.
	OpModuleEnd = "gpu.module_end"
	// OpFunc is gpu.func: Function executable on a GPU.
	OpFunc = "gpu.func"
	// OpReturn is gpu.return: Terminator for GPU functions.
	OpReturn = "gpu.return"
	// OpThreadID is gpu.thread_id: Thread index within its block.
	OpThreadID = "gpu.thread_id"
	// OpBlockID is gpu.block_id: Block index within the grid.
	OpBlockID = "gpu.block_id"
	// OpBlockDim is gpu.block_dim: Number of threads per block.
	OpBlockDim = "gpu.block_dim"
	// OpGridDim is gpu.grid_dim: Number of blocks per grid.
	OpGridDim = "gpu.grid_dim"
	// OpBarrier is gpu.barrier: Synchronizes all work items of a workgroup.
	OpBarrier = "gpu.barrier"
	// OpShuffle is gpu.shuffle: Shuffles values within a subgroup.
	OpShuffle = "gpu.shuffle"
	// OpWarpSync is gpu.warp_sync: Synchronizes the 32 lanes of a warp.
	OpWarpSync = "gpu.warp_sync"
	// OpLaunchFunc is gpu.launch_func: Launches a function as a GPU kernel.
	OpLaunchFunc = "gpu.launch_func"
	// OpMMASync is gpu.mma_sync: Warp-level matrix multiply-accumulate on tensor cores (m16n8k16).
	OpMMASync = "gpu.mma_sync"
	// OpLdMatrix is gpu.ldmatrix: Warp-level load of 8×8 matrices of 16-bit elements from workgroup memory.
	OpLdMatrix = "gpu.ldmatrix"
	// OpCpAsync is gpu.cp_async: Asynchronous copy from global to workgroup memory.
	OpCpAsync = "gpu.cp_async"
	// OpCpAsyncCommit is gpu.cp_async_commit: Closes the thread's current group of asynchronous copies.
	OpCpAsyncCommit = "gpu.cp_async_commit"
	// OpCpAsyncWait is gpu.cp_async_wait: Waits for the thread's asynchronous copy groups.
	OpCpAsyncWait = "gpu.cp_async_wait"
	// OpWGMMA is gpu.wgmma: Warpgroup matrix multiply-accumulate on Hopper tensor cores (m64nNk16, sm_90a).
	OpWGMMA = "gpu.wgmma"
	// OpWGMMAWait is gpu.wgmma_wait: Waits for the warpgroup's gpu.wgmma groups and returns their results.
	OpWGMMAWait = "gpu.wgmma_wait"
	// OpFenceProxyAsync is gpu.fence_proxy_async: Orders the thread's workgroup-memory writes before the tensor cores' reads.
	OpFenceProxyAsync = "gpu.fence_proxy_async"
	// OpMbarrierInit is gpu.mbarrier_init: Initializes an asynchronous barrier in workgroup memory.
	OpMbarrierInit = "gpu.mbarrier_init"
	// OpMbarrierArrive is gpu.mbarrier_arrive: Arrives at an asynchronous barrier.
	OpMbarrierArrive = "gpu.mbarrier_arrive"
	// OpMbarrierWait is gpu.mbarrier_wait: Waits for a phase of an asynchronous barrier to complete.
	OpMbarrierWait = "gpu.mbarrier_wait"
	// OpSetMaxNReg is gpu.setmaxnreg: Changes the register count of the warpgroup's threads (sm_90a).
	OpSetMaxNReg = "gpu.setmaxnreg"
	// OpTMALoad is gpu.tma_load: Copies a box of a tensor from global to workgroup memory through a tensor map (sm_90).
	OpTMALoad = "gpu.tma_load"
	// OpMbarrierExpectTx is gpu.mbarrier_expect_tx: Expects transaction bytes on an asynchronous barrier's phase and arrives.
	OpMbarrierExpectTx = "gpu.mbarrier_expect_tx"
	// OpClusterArrive is gpu.cluster_arrive: Arrives at the cluster's barrier without waiting (sm_90).
	OpClusterArrive = "gpu.cluster_arrive"
	// OpClusterWait is gpu.cluster_wait: Waits for the cluster's barrier the thread arrived at (sm_90).
	OpClusterWait = "gpu.cluster_wait"
	// OpMbarrierArriveCluster is gpu.mbarrier_arrive_cluster: Arrives at an asynchronous barrier of a block of the cluster (sm_90).
	OpMbarrierArriveCluster = "gpu.mbarrier_arrive_cluster"
	// OpAtomicAdd is gpu.atomic_add: Adds f32 values to elements of a global buffer atomically.
	OpAtomicAdd = "gpu.atomic_add"
	// OpLibraryMatmul is gpu.library_matmul: A (batched) matrix product computed by a vendor library on the host's stream.
	OpLibraryMatmul = "gpu.library_matmul"
	// OpLibraryConv2D is gpu.library_conv2d: A 2-D convolution computed by a vendor library on the host's stream.
	OpLibraryConv2D = "gpu.library_conv2d"
)
