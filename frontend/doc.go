// Package frontend is Strata's Go tracing API and its torch.compile
// counterpart.
//
// Tensor ops (Add, MatMul, Softmax, …) are recorded lazily into graphs of
// the graph dialect with graph.Build, so a shape or dtype mistake is
// reported where it is made, at the caller's file:line, as the tensor's
// Err (and as the error of a compiled function's Call). Values are read
// back with Float32s, Float64s, Int64s and Item, which run the pending
// graph.
//
// Compile(fn, Options{Mode, Dynamic, Fullgraph, Backend, BackendOptions})
// turns an ordinary Go function of tensors into a Compiled function:
//
//   - Each call traces fn into graphs. A data-dependent read (Item,
//     Float32s, …) of a value computed in the graph or of one of its
//     inputs, a host callback (Print) or an op the backend does not
//     support is a graph break: the graph so far is compiled and run, and
//     tracing continues in a new graph. With Fullgraph the first break is
//     an error naming its reason and line. Explain reports graphs, breaks
//     and ops.
//   - Graphs are compiled by a backend from a registry (RegisterBackend;
//     built in: eager, aot_eager, interp, nvptx; an empty Backend is
//     nvptx where a GPU is present and interp elsewhere, see
//     DefaultBackend) and cached by structure, attributes, results and
//     input types.
//   - Every call runs fn, so compiled calls are never stale
//     (docs/frontend-state.md): a call recorded as one graph without
//     breaks leaves a tape, and later calls replay fn against it without
//     building IR, collecting the tensors fn uses (arguments, captured
//     tensors, struct fields) by identity and current value as the
//     graph's inputs; the first difference (a Go value took another
//     branch, changed an attribute) switches the call to recording.
//   - Arguments and results are trees (Invoke): structs, pointers,
//     slices and maps of tensors and Go scalars. Assign, AddInPlace, …
//     update tensors in place, functionally inside graphs and written
//     back after them. Seed, RandUniform, RandLike, Bernoulli and Dropout
//     draw from a Philox generator per call. Size, ReshapeS and Flatten
//     keep dynamic sizes symbolic.
//   - Every compiled graph carries sym guards (package sym: rank, size
//     and dtype predicates over symbols, the graph.guards attribute),
//     checked with sym.Guards.Check before a cached graph runs. A failing
//     guard recompiles, up to RecompileLimit graphs per position in the
//     function; past it the function runs eagerly, with one warning. The
//     recompiles log prints the failed guards with the values seen
//     (sym.Guards.Explain).
//   - Dynamic auto (the default) compiles static sizes first; when a call
//     brings other sizes, sym.AutoDynamic picks the dims that changed and
//     the graph is recompiled with them symbolic: they are "?" while
//     tracing, and graph-symbolize-shapes turns them into symbols s0, s1,
//     … (types with #graph.dims encodings), unifies sizes the shape rules
//     equate and derives the guards. One compiled graph then serves every
//     size. Dynamic true makes every dim symbolic from the first call;
//     MarkDynamic one dim. Sizes 0 and 1 are always specialized (the 0/1
//     policy of docs/dynamic-shapes.md). Reading the shape of a tensor in
//     a dynamic graph specializes its guards on the sizes of that call.
//   - Modes are validated; the CPU backends treat every mode as default.
//
// Logs: STRATA_LOGS=graph_breaks,recompiles,guards (package logs).
// CompileTimes splits a function's first call into trace, passes, codegen,
// load and the wait for the device (the nvptx backend opens the GPU in the
// background from Compile on).
//
// Tensors on the GPU (docs/frontend-gpu.md): ToGPU uploads a tensor to
// GPU 0; the nvptx backend's results stay there until read (Float32s,
// Item, a graph break, another backend: downloaded once) and pass into
// the next compiled call by reference, with no copy and no wait for the
// GPU. Free releases GPU memory at once (the garbage collector does it
// for unreachable tensors), Synchronize waits for the queued work and
// names the calls whose work failed, KernelTime separates a cached call's
// kernels from its host overhead. Without a GPU, ToGPU's error wraps
// ErrNoGPUBackend, located at the call.
//
// Go values fn reads (captured scalars, loop counts, fields) are read
// again on every call, since fn runs; concrete tensors it uses become
// graph inputs read at each call. A host read of a tensor the graph
// computes or reads is a graph break. Tensors made during a call and not
// returned have no value afterwards.
package frontend
