// `tiled`: the same propagation, but each warp takes 32 consecutive support entries of the world
// (rows' supports, then rowless ones) as a tile. Lanes of one hyperedge reduce their min with
// __reduce_min_sync over the group __match_any_sync finds, then scatter it with atomicMin. A
// hyperedge cut by a tile boundary stays linked through its first tree (the anchor), which every
// piece reads and writes. Convergence: the same in-kernel block vote as labelprop.

// The hyperedge (unified index) holding support entry g, among hyperedges [lo, hi).
__device__ __forceinline__ unsigned hyper_of_entry(const unsigned* supadr, unsigned lo, unsigned hi,
                                                   unsigned g) {
    // Largest h in [lo, hi) with supadr[h] <= g.
    while (hi - lo > 1) {
        const unsigned mid = lo + (hi - lo) / 2;
        if (supadr[mid] <= g) lo = mid;
        else hi = mid;
    }
    return lo;
}

extern "C" __global__ void __launch_bounds__(1024) block_tiled_kernel(Args a) {
    extern __shared__ int smem[];
    const int w = blockIdx.x;
    if (w >= a.nworld) return;
    int *lab, *cnt;
    world_begin(a, w, smem, &lab, &cnt);
    const int ntree = a.ntree, tid = threadIdx.x, bd = blockDim.x;
    touch_all(a, w, lab);
    __syncthreads();
    // The world's entries: rows' [re0, re1), then rowless [ee0, ee1).
    const unsigned hr0 = LDG(a.world_rowadr + w), hr1 = LDG(a.world_rowadr + w + 1);
    const unsigned he0 = LDG(a.world_rowadr + a.nworld) + LDG(a.world_edgeadr + w);
    const unsigned he1 = LDG(a.world_rowadr + a.nworld) + LDG(a.world_edgeadr + w + 1);
    const unsigned re0 = LDG(a.supadr + hr0), re1 = LDG(a.supadr + hr1);
    const unsigned ee0 = LDG(a.supadr + he0), ee1 = LDG(a.supadr + he1);
    const int nent = (int)((re1 - re0) + (ee1 - ee0));
    const int lane = tid & 31, wid = tid >> 5, nwarp = bd >> 5;
    volatile int* v = lab;
    int rounds = 0;
    while (true) {
        ++rounds;
        int changed = 0;
        for (int chunk = wid * 32; chunk < nent; chunk += nwarp * 32) {
            const int j = chunk + lane;
            int key = -2 - lane, t = 0, anchor = 0, val = INT_MAX_;
            if (j < nent) {
                const bool is_row = j < (int)(re1 - re0);
                const unsigned g = is_row ? re0 + j : ee0 + (j - (re1 - re0));
                const unsigned h = is_row ? hyper_of_entry(a.supadr, hr0, hr1, g)
                                          : hyper_of_entry(a.supadr, he0, he1, g);
                key = (int)h;
                t = LDG(a.support + g);
                anchor = LDG(a.support + LDG(a.supadr + h));
                val = min(v[t], v[anchor]);
            }
            const unsigned group = __match_any_sync(FULL_MASK, key);
            const int m = __reduce_min_sync(group, val);
            if (j < nent) {
                const int l = v[t];
                if (atomicMin(&lab[t], m) > m) changed = 1;
                if (atomicMin(&lab[l], m) > m) changed = 1; // hook the representative too
                if ((group & ((1u << lane) - 1u)) == 0u && atomicMin(&lab[anchor], m) > m)
                    changed = 1;
            }
        }
        __syncthreads();
        jump_all(lab, ntree);
        if (!__syncthreads_or(changed)) break;
    }
    if (tid == 0) a.rounds[w] = rounds;
    world_maps(a, w, lab, cnt);
}
