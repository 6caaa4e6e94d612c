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
// knows: src/gpu/quotient/), where the masked solve and the tree-level path run only for a
// world whose quotient went stale or partly asleep. Those two are then called out of line, so
// that the path such worlds take is one compact stretch of code instead of lying within 200 KB
// of machine code: on sequences with new rows every step mechanism-90% and cloth-99% ran 1-5
// µs (of 21-28) faster, steady steps even (benches/results/gpu-h200-notes.md, session 20);
// inline (session 84, an H100, flex_poncho_edgeequality at 1,024 worlds) the trace's sequence
// took 103.6-104.0 µs a step against 95.7-99.7 out of line, the steady step even.
// Out of line they read the arguments through generic pointers: the tree-level path so called
// is 15-20% slower, hence the two kernels.
extern "C" __global__ void WORLD_BOUNDS
    quotient_few_kernel(const __grid_constant__ Args a, const __grid_constant__ QArgs q) {
    q_world<true>(a, q, blockIdx.x);
}

// The same for such a batch of no more worlds than multiprocessors, where a world has its
// multiprocessor to itself: the node-level maps may then give the rows to a warp that the pass
// over trees leaves idle (q_node_maps). A kernel of its own, so that the other batches' code
// stays as it was: inline in quotient_few_kernel that path cost them 0.1-0.4 µs even where it
// never ran (benches/results/gpu-h200-notes.md, session 21). Unlike quotient_few_kernel it
// takes the masked solve and the tree-level path inline: measured against them out of line
// (session 84, an H100, benches/results/logs/h100-2026-12-06-session84-calls.md) steady steps
// took flex_trampoline at 64 worlds 9.43 and 9.57 µs against 9.98 and 9.90, flex_poncho at 64
// 18.82 against 19.27, mechanism-90% and cloth-99% at 128 within 0.1, and the two flex traces'
// sequences were as before (the default bench). Why the steady step is faster inline is not
// established: the rare paths do not run there.
extern "C" __global__ void WORLD_BOUNDS
    quotient_aside_kernel(const __grid_constant__ Args a, const __grid_constant__ QArgs q) {
    q_world<false, true>(a, q, blockIdx.x);
}
