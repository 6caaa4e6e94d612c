// `warp`: one warp per world for small worlds: parent[] in shared memory (min-root CAS
// union-find), then the maps of common.cu run by the warp alone (shuffle scans, the same
// match_any scatter). No block barriers, and up to 64 worlds in flight per multiprocessor.

#define WARP_WORLDS 4 // worlds (warps) per block

extern "C" __global__ void __launch_bounds__(32 * WARP_WORLDS) warp_dsu_kernel(Args a) {
    extern __shared__ int smem[];
    const int slot = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int w = blockIdx.x * WARP_WORLDS + slot;
    if (w >= a.nworld) return; // whole warps leave together
    int *lab, *cnt;
    world_scratch(a, w, smem + (size_t)slot * 7 * a.ntree, &lab, &cnt);
    const int ntree = a.ntree;
    for (int t = lane; t < ntree; t += 32) lab[t] = -1;
    __syncwarp();
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    for (int k = lane; k < nh; k += 32) {
        const unsigned h = hyper_index(a, w, k, nr);
        union_support(lab, a.support, LDG(a.supadr + h), LDG(a.supadr + h + 1));
    }
    __syncwarp();
    for (int t = lane; t < ntree; t += 32) {
        if (((volatile int*)lab)[t] >= 0) lab[t] = find_ro(lab, t);
    }
    __syncwarp();
    if (lane == 0) a.rounds[w] = 0;
    world_maps_in<WarpGroup, false, true>(WarpGroup{}, a, w, lab, cnt);
}
