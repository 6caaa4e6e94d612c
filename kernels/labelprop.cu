// `labelprop`: min-label propagation with pointer jumping, one thread block per world, labels
// in shared memory. Each round every hyperedge reduces the min label of its trees and scatters
// it with atomicMin to each tree and to each tree's label; then labels jump to their label's
// label until nothing moves. Convergence is decided inside the kernel with __syncthreads_or: a
// world is one block, so the vote is a barrier, with no host round trip and no grid-wide
// synchronisation.

// Touched trees start as their own label (plain stores of the same value).
__device__ void touch_all(const Args& a, int w, int* lab) {
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    for (int k = threadIdx.x; k < nh; k += blockDim.x) {
        const unsigned h = hyper_index(a, w, k, nr);
        for (unsigned j = LDG(a.supadr + h); j < LDG(a.supadr + h + 1); ++j) {
            const int t = LDG(a.support + j);
            lab[t] = t;
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024) block_labelprop_kernel(Args a) {
    extern __shared__ int smem[];
    const int w = blockIdx.x;
    if (w >= a.nworld) return;
    int *lab, *cnt;
    world_begin(a, w, smem, &lab, &cnt);
    const int ntree = a.ntree, tid = threadIdx.x, bd = blockDim.x;
    touch_all(a, w, lab);
    __syncthreads();
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    volatile int* v = lab;
    int rounds = 0;
    while (true) {
        ++rounds;
        int changed = 0;
        for (int k = tid; k < nh; k += bd) {
            const unsigned h = hyper_index(a, w, k, nr);
            const unsigned s0 = LDG(a.supadr + h), s1 = LDG(a.supadr + h + 1);
            int m = INT_MAX_;
            for (unsigned j = s0; j < s1; ++j) m = min(m, v[LDG(a.support + j)]);
            for (unsigned j = s0; j < s1; ++j) {
                const int t = LDG(a.support + j);
                const int l = v[t];
                if (atomicMin(&lab[t], m) > m) changed = 1;
                // Hook the tree's current label too (its representative), so a whole basin
                // moves at once and a path needs O(log n) rounds, not O(diameter).
                if (atomicMin(&lab[l], m) > m) changed = 1;
            }
        }
        __syncthreads();
        jump_all(lab, ntree);
        if (!__syncthreads_or(changed)) break;
    }
    if (tid == 0) a.rounds[w] = rounds;
    world_maps(a, w, lab, cnt);
}
