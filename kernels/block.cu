// `block`: one thread block per world, parent[] in shared memory (min-root CAS union-find with
// path halving, no global atomics), then the maps in the same launch: one kernel per step.

extern "C" __global__ void WORLD_BOUNDS block_dsu_kernel(Args a) {
    extern __shared__ int smem[];
    const int w = blockIdx.x;
    if (w >= a.nworld) return;
    int *lab, *cnt;
    world_begin(a, w, smem, &lab, &cnt);
    const int ntree = a.ntree, tid = threadIdx.x, bd = blockDim.x;
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    for (int k = tid; k < nh; k += bd) {
        const unsigned h = hyper_index(a, w, k, nr);
        union_support(lab, a.support, LDG(a.supadr + h), LDG(a.supadr + h + 1));
    }
    __syncthreads();
    // Every tree straight to its root in O(log depth) block-wide passes.
    jump_all(lab, ntree);
    if (tid == 0) a.rounds[w] = 0;
    world_maps(a, w, lab, cnt);
}
