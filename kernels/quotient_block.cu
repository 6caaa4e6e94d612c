// The block-per-world entry points of `quotient` (quotient.cu's q_world, one thread block per
// world), compiled as their own NVRTC program after common.cu and quotient.cu
// (src/gpu/quotient/): the program every quotient solver loads, and the one with a register-
// capped copy (WORLD_BOUNDS, common.cu) for batches of many waves. The warp-per-world entry
// points (quotient_warp.cu) are a program apart, loaded only by a solver whose batches may take
// them: their kernels are most of the quotient's machine code, which the driver assembles at a
// cold load (session 50: 39-48 s a program on a fresh H200), and no capped copy of theirs
// differs from their own.

extern "C" __global__ void WORLD_BOUNDS
    quotient_kernel(const __grid_constant__ Args a, const __grid_constant__ QArgs q) {
    q_world<false>(a, q, blockIdx.x);
}

// The same for a batch whose every world has a slot of at most Q_NODE_MAX nodes (the host
// knows: src/gpu/quotient/) and no more worlds than multiprocessors, where a world has its
// multiprocessor to itself: the node-level maps may then give the rows to a warp that the pass
// over trees leaves idle (q_node_maps). A kernel of its own, so that the other batches' code
// stays as it was: inline in one kernel that path cost them 0.1-0.4 µs even where it never ran
// (benches/results/gpu-h200-notes.md, session 21).
// Neither kernel calls a function. Sessions 20-83 had the masked solve and the tree-level path
// out of line here and in a third kernel for batches of more worlds (quotient_few_kernel), for
// a compact common path; measured inline against that (session 84, an H100,
// benches/results/logs/h100-2026-12-06-session84-calls.md): flex_trampoline at 64 worlds 9.98
// -> 9.43 and 9.90 -> 9.57 µs a step in two calls; hammock, mechanism-90%, cloth-99% and
// humanoid-50% at 256-1,024 worlds within 0.2 µs either way, and over the bench's step
// sequences within their runs' spread. Why the common path is faster inline is not
// established: the rare paths do not run there, and the out-of-line callees' copies of the
// memory descriptor to uniform registers before each load and store (R2UR, about 1,500) are in
// the callees only.
extern "C" __global__ void WORLD_BOUNDS
    quotient_aside_kernel(const __grid_constant__ Args a, const __grid_constant__ QArgs q) {
    q_world<false, true>(a, q, blockIdx.x);
}
