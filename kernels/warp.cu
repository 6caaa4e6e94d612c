// `warp`: one warp per world for small worlds: parent[] in shared memory (min-root CAS
// union-find), then every map with warp primitives only (ballot ranks, shuffle scans, the same
// match_any scatter). No block barriers, and up to 64 worlds in flight per multiprocessor.

#define WARP_WORLDS 4 // worlds (warps) per block

// Warp-wide exclusive scan of three counters; every lane gets the totals.
__device__ __forceinline__ I3 warp_exscan3(I3 v, I3* total) {
    const int lane = threadIdx.x & 31;
    I3 inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        int x = __shfl_up_sync(FULL_MASK, inc.x, o);
        int y = __shfl_up_sync(FULL_MASK, inc.y, o);
        int z = __shfl_up_sync(FULL_MASK, inc.z, o);
        if (lane >= o) {
            inc.x += x;
            inc.y += y;
            inc.z += z;
        }
    }
    total->x = __shfl_sync(FULL_MASK, inc.x, 31);
    total->y = __shfl_sync(FULL_MASK, inc.y, 31);
    total->z = __shfl_sync(FULL_MASK, inc.z, 31);
    return I3{inc.x - v.x, inc.y - v.y, inc.z - v.z};
}

// world_maps for one warp (see common.cu for the steps).
__device__ void warp_world_maps(const Args& a, int w, int* lab, int* cnt) {
    const int ntree = a.ntree, nv = a.nv;
    const size_t T = (size_t)w * ntree, D = (size_t)w * nv;
    const unsigned r0 = LDG(a.world_rowadr + w);
    const int nrow = world_nrow(a, w);
    const int lane = threadIdx.x & 31;
    const unsigned lower = (1u << lane) - 1u;
    int* cnt_t = cnt;
    int* cnt_d = cnt + ntree;
    int* cnt_e = cnt + 2 * ntree;
    int* cnt_ne = cnt + 3 * ntree;
    int* cnt_nf = cnt + 4 * ntree;
    int* dofadr = cnt + 5 * ntree;

    int nisland = 0;
    for (int base = 0; base < ntree; base += 32) {
        const int t = base + lane;
        const bool root = t < ntree && nrow > 0 && lab[t] == t;
        if (t < ntree) {
            cnt_t[t] = 0;
            cnt_d[t] = 0;
            cnt_e[t] = 0;
            cnt_ne[t] = 0;
            cnt_nf[t] = 0;
            dofadr[t] = INT_MAX_;
        }
        const unsigned b = __ballot_sync(FULL_MASK, root);
        if (root) lab[t] = -2 - (nisland + __popc(b & lower));
        nisland += __popc(b);
    }
    __syncwarp();
    for (int base = 0; base < ntree; base += 32) {
        const int t = base + lane;
        const int isl = t < ntree ? island_of(lab, t, nrow) : -2;
        if (t < ntree) a.tree_island[T + t] = isl;
        bool lead;
        const unsigned g = key_group(isl, &lead);
        if (isl >= 0 && lead) atomicAdd(&cnt_t[isl], __popc(g));
    }
    for (int base = 0; base < nv; base += 32) {
        const int d = base + lane;
        const int isl = d < nv ? island_of(lab, LDG(a.dof_treeid + d), nrow) : -2;
        if (d < nv) a.dof_island[D + d] = isl;
        bool lead;
        const unsigned g = key_group(isl, &lead);
        if (isl >= 0 && lead) {
            atomicAdd(&cnt_d[isl], __popc(g));
            atomicMin(&dofadr[isl], d);
        }
    }
    for (int base = 0; base < nrow; base += 32) {
        const int k = base + lane;
        int isl = -2, type = -1;
        if (k < nrow) {
            const unsigned r = r0 + k;
            isl = island_of(lab, LDG(a.support + LDG(a.supadr + r)), nrow);
            a.efc_island[r] = isl;
            type = LDG(a.row_type + r);
        }
        const unsigned eq = __ballot_sync(FULL_MASK, type == 0);
        const unsigned fr = __ballot_sync(FULL_MASK, type == 1 || type == 2);
        bool lead;
        const unsigned g = key_group(isl, &lead);
        if (isl >= 0 && lead) {
            atomicAdd(&cnt_e[isl], __popc(g));
            if (g & eq) atomicAdd(&cnt_ne[isl], __popc(g & eq));
            if (g & fr) atomicAdd(&cnt_nf[isl], __popc(g & fr));
        }
    }
    __syncwarp();
    I3 carry = I3{0, 0, 0};
    for (int base = 0; base < ntree; base += 32) {
        const int i = base + lane;
        const I3 v = i < nisland ? I3{cnt_t[i], cnt_d[i], cnt_e[i]} : I3{0, 0, 0};
        I3 tot;
        const I3 ex = warp_exscan3(v, &tot);
        if (i < ntree) {
            const size_t o = T + i;
            if (i < nisland) {
                const I3 adr = I3{carry.x + ex.x, carry.y + ex.y, carry.z + ex.z};
                a.island_ntree[o] = v.x;
                a.island_nv[o] = v.y;
                a.island_nefc[o] = v.z;
                a.island_ne[o] = cnt_ne[i];
                a.island_nf[o] = cnt_nf[i];
                a.island_itreeadr[o] = adr.x;
                a.island_idofadr[o] = adr.y;
                a.island_iefcadr[o] = adr.z;
                a.island_dofadr[o] = dofadr[i];
                cnt_t[i] = adr.x;
                cnt_d[i] = adr.y;
                cnt_e[i] = adr.z;
            } else {
                a.island_ntree[o] = -1;
                a.island_nv[o] = -1;
                a.island_nefc[o] = -1;
                a.island_ne[o] = -1;
                a.island_nf[o] = -1;
                a.island_itreeadr[o] = -1;
                a.island_idofadr[o] = -1;
                a.island_iefcadr[o] = -1;
                a.island_dofadr[o] = -1;
            }
        }
        carry = I3{carry.x + tot.x, carry.y + tot.y, carry.z + tot.z};
    }
    if (lane == 0) {
        a.nisland[w] = nisland;
        a.nidof[w] = carry.y;
    }
    __syncwarp();
    int* itree = cnt_ne;
    warp_scatter(
        ntree, [&](int t) { return island_of(lab, t, nrow); }, cnt_t, carry.x,
        [&](int t, int slot) {
            a.map_itree2tree[T + slot] = t;
            itree[slot] = t;
        });
    warp_scatter(
        nrow, [&](int k) { return a.efc_island[r0 + k]; }, cnt_e, carry.z,
        [&](int k, int slot) {
            a.map_iefc2efc[r0 + slot] = k;
            a.map_efc2iefc[r0 + k] = slot;
        });
    if (!a.dof_blocks) {
        warp_scatter(
            nv, [&](int d) { return a.dof_island[D + d]; }, cnt_d, carry.y,
            [&](int d, int slot) {
                a.map_idof2dof[D + slot] = d;
                a.map_dof2idof[D + d] = slot;
            });
        return;
    }
    __syncwarp();
    int* first = cnt_nf;
    int done = 0;
    for (int base = 0; base < ntree; base += 32) {
        const int p = base + lane;
        const int t = p < ntree ? itree[p] : 0;
        const int n = p < ntree ? LDG(a.tree_dofnum + t) : 0;
        I3 tot;
        const I3 ex = warp_exscan3(I3{n, 0, 0}, &tot);
        if (p < ntree) first[t] = done + ex.x;
        done += tot.x;
    }
    __syncwarp();
    for (int d = lane; d < nv; d += 32) {
        const int t = LDG(a.dof_treeid + d);
        const int slot = first[t] + d - LDG(a.tree_dofadr + t);
        a.map_idof2dof[D + slot] = d;
        a.map_dof2idof[D + d] = slot;
    }
}

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
    warp_world_maps(a, w, lab, cnt);
}
