// `block`: one thread block per world, parent[] in shared memory (min-root CAS union-find with
// path halving, no global atomics), then the maps in the same launch: one kernel per step.

extern "C" __global__ void __launch_bounds__(1024) block_dsu_kernel(Args a) {
    extern __shared__ int smem[];
    const int w = blockIdx.x;
    if (w >= a.nworld) return;
    int *lab, *cnt;
    world_scratch(a, w, smem, &lab, &cnt);
    const int ntree = a.ntree, tid = threadIdx.x, bd = blockDim.x;
    for (int t = tid; t < ntree; t += bd) lab[t] = -1;
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    // Small worlds: copy the rows' support offsets and supports into shared memory first, with
    // independent coalesced loads (one memory latency), instead of a chain of dependent global
    // loads per row in the union and again in the maps.
    unsigned* s_adr = nullptr;
    int* s_sup = nullptr;
    const unsigned r0 = LDG(a.world_rowadr + w);
    if (a.stage_cap > 0 && a.use_smem) {
        const unsigned e0 = LDG(a.supadr + r0), e1 = LDG(a.supadr + r0 + nr);
        if ((long long)nr + 1 + (e1 - e0) <= a.stage_cap) {
            s_adr = (unsigned*)(smem + 7 * ntree);
            s_sup = (int*)(s_adr + nr + 1);
            for (int i = tid; i <= nr; i += bd) s_adr[i] = LDG(a.supadr + r0 + i) - e0;
            for (unsigned j = tid; j < e1 - e0; j += bd) s_sup[j] = LDG(a.support + e0 + j);
        }
    }
    __syncthreads();
    for (int k = tid; k < nh; k += bd) {
        if (s_sup && k < nr) {
            union_support<true>(lab, s_sup, s_adr[k], s_adr[k + 1]);
        } else {
            const unsigned h = hyper_index(a, w, k, nr);
            union_support(lab, a.support, LDG(a.supadr + h), LDG(a.supadr + h + 1));
        }
    }
    __syncthreads();
    // Every tree straight to its root in O(log depth) block-wide passes.
    jump_all(lab, ntree);
    if (tid == 0) a.rounds[w] = 0;
    world_maps(a, w, lab, cnt, s_adr, s_sup);
}
