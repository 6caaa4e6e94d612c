// Shared by every GPU mode: the argument block, block-wide scans, the union-find primitives and
// the island maps of one world computed by one thread block.
//
// Compiled at run time by NVRTC (no system headers): every kernel takes one `Args` by value,
// laid out exactly like `gpu::workspace::Args` on the Rust side.

#define FULL_MASK 0xffffffffu
// The bounds of a block-per-world kernel that may run in many waves (`block`, the quotient's):
// blocks of up to 1024 threads, hence at most 64 registers a thread; or, in a copy of the
// program compiled with WORLD_MAXNREG (src/gpu/regcap.rs), that many registers at most, so
// that more worlds are resident where a batch does not fit the multiprocessors at once.
#ifdef WORLD_MAXNREG
#define WORLD_BOUNDS __maxnreg__(WORLD_MAXNREG)
#else
#define WORLD_BOUNDS __launch_bounds__(1024)
#endif
#define INT_MAX_ 0x7fffffff

struct Args {
    // Inputs (one step).
    const unsigned* world_rowadr;  // nworld + 1, global row offsets
    const unsigned* world_edgeadr; // nworld + 1, rowless-hyperedge offsets
    const unsigned* supadr;        // rows' support offsets, then rowless hyperedges' (unified)
    const int* support;            // row supports, then rowless supports
    const unsigned char* row_type; // per global row
    const unsigned* rank;          // deterministic mode: input global row -> canonical global
                                   // row (the row-level maps follow it); null: input order
    const int* dof_treeid;         // nv
    const int* tree_dofadr;        // ntree
    const int* tree_dofnum;        // ntree
    // Scratch.
    int* labels;                   // nworld * ntree: min-root (or -1) per tree
    int* fallback;                 // nworld * 7 * ntree when shared memory is too small
    int* rounds;                   // nworld
    int* dense_mat;                // nworld * ntree * ntree (dense only)
    int* dense_stack;              // nworld * ntree * ntree (dense only)
    // Outputs (MuJoCo names).
    int* nisland;
    int* nidof;
    int* tree_island;
    int* island_ntree;
    int* island_itreeadr;
    int* map_itree2tree;
    int* dof_island;
    int* island_nv;
    int* island_idofadr;
    int* island_dofadr;
    int* map_dof2idof;
    int* map_idof2dof;
    int* efc_island;
    int* island_ne;
    int* island_nf;
    int* island_nefc;
    int* island_iefcadr;
    int* map_efc2iefc;
    int* map_iefc2efc;
    int* row_mirror;               // null, or per world 3 * mirror_rows ints that receive a
                                   // copy of its row-level outputs (efc_island, map_efc2iefc,
                                   // map_iefc2efc; world-local planes): the quotient's cache
    int nworld;
    int ntree;
    int nv;
    int use_smem;                  // 1: per-world scratch in dynamic shared memory
    int dof_blocks;                // 1: trees own consecutive dof blocks in tree order
    int mirror_rows;
    int rowless_islands;           // 1: a world without rows still has islands (the model's
                                   // islands_without_rows)
};

// World w's row mirror (see Args), or null.
__device__ __forceinline__ int* row_mirror_of(const Args& a, int w) {
    return a.row_mirror ? a.row_mirror + (size_t)w * 3 * a.mirror_rows : nullptr;
}

// Read-only inputs through the non-coherent path: the compiler may then overlap these loads
// with the stores and shared atomics around them (plain loads of a const pointer may alias the
// outputs and stay in program order).
#define LDG(p) __ldg(p)

// Programmatic dependent launch (sm_90 and later): a kernel launched with the attribute waits
// here for the grids before it; one launched without it returns at once.
__device__ __forceinline__ void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream start once every block of this grid has called it.
__device__ __forceinline__ void grid_dependents_launch() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Rows of world w.
__device__ __forceinline__ int world_nrow(const Args& a, int w) {
    return (int)(LDG(a.world_rowadr + w + 1) - LDG(a.world_rowadr + w));
}

// Hyperedges of world w: its rows, then its rowless hyperedges.
__device__ __forceinline__ int world_nhyper(const Args& a, int w) {
    return world_nrow(a, w) + (int)(LDG(a.world_edgeadr + w + 1) - LDG(a.world_edgeadr + w));
}

// Whether world w (of nrow rows) can have islands: it has rows, or the model finds islands
// without them (src/rows.rs: Input::discovers; native mj_island returns before discovery
// otherwise).
__device__ __forceinline__ bool world_discovers(const Args& a, int nrow) {
    return nrow > 0 || a.rowless_islands != 0;
}

// Unified index (into supadr) of the k-th hyperedge of world w, which has nr rows.
__device__ __forceinline__ unsigned hyper_index(const Args& a, int w, int k, int nr) {
    return k < nr ? LDG(a.world_rowadr + w) + (unsigned)k
                  : LDG(a.world_rowadr + a.nworld) + LDG(a.world_edgeadr + w) + (unsigned)(k - nr);
}

// Per-world scratch: labels (ntree) and six per-island arrays (6 * ntree), in dynamic shared
// memory when it fits, otherwise in the global fallback buffer.
__device__ __forceinline__ void world_scratch(const Args& a, int w, int* smem, int** lab,
                                              int** cnt) {
    int* base = a.use_smem ? smem : a.fallback + (size_t)w * 7 * (size_t)a.ntree;
    *lab = base;
    *cnt = base + a.ntree;
}

// A fused kernel's start for world w: its scratch, every tree untouched (-1), a barrier.
__device__ __forceinline__ void world_begin(const Args& a, int w, int* smem, int** lab, int** cnt) {
    world_scratch(a, w, smem, lab, cnt);
    for (int t = threadIdx.x; t < a.ntree; t += blockDim.x) (*lab)[t] = -1;
    __syncthreads();
}

struct I3 {
    int x, y, z;
};

// Inclusive scan of one counter across the 32 lanes of a warp.
__device__ __forceinline__ int warp_inscan(int v) {
    const int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(FULL_MASK, v, o);
        if (lane >= o) v += y;
    }
    return v;
}

// Inclusive scan of three counters across the 32 lanes of a warp.
__device__ __forceinline__ I3 warp_inscan3(I3 v) {
    const int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        int x = __shfl_up_sync(FULL_MASK, v.x, o);
        int y = __shfl_up_sync(FULL_MASK, v.y, o);
        int z = __shfl_up_sync(FULL_MASK, v.z, o);
        if (lane >= o) {
            v.x += x;
            v.y += y;
            v.z += z;
        }
    }
    return v;
}

// Warp-wide exclusive scan of three counters; every lane gets the totals.
__device__ __forceinline__ I3 warp_exscan3(I3 v, I3* total) {
    const I3 inc = warp_inscan3(v);
    total->x = __shfl_sync(FULL_MASK, inc.x, 31);
    total->y = __shfl_sync(FULL_MASK, inc.y, 31);
    total->z = __shfl_sync(FULL_MASK, inc.z, 31);
    return I3{inc.x - v.x, inc.y - v.y, inc.z - v.z};
}

// Block-wide exclusive scan of three counters at once; every thread gets the block totals.
// blockDim.x must be a multiple of 32. One barrier: the warp totals are double-buffered by the
// caller's phase bit `ph` (two calls apart, a barrier always separates reuse of one buffer).
// Shuffles are what a big block pays for here (one warp's worth per clock on the whole SM),
// so a warp whose counters are all zero (past the end of the data) skips its own scan, and the
// warp totals are summed with reductions instead of a second scan.
__device__ I3 block_exscan3(I3 v, I3* total, int& ph) {
    __shared__ I3 s_warp[2][32];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const bool data = __any_sync(FULL_MASK, (v.x | v.y | v.z) != 0);
    const I3 inc = data ? warp_inscan3(v) : I3{0, 0, 0};
    if (lane == 31) s_warp[ph][wid] = inc;
    __syncthreads();
    // Every warp sums the warp totals itself (no second barrier): those before it, and all.
    const I3 s = lane < nw ? s_warp[ph][lane] : I3{0, 0, 0};
    ph ^= 1;
    const bool before = lane < wid;
    total->x = __reduce_add_sync(FULL_MASK, s.x);
    total->y = __reduce_add_sync(FULL_MASK, s.y);
    total->z = __reduce_add_sync(FULL_MASK, s.z);
    const I3 base = I3{__reduce_add_sync(FULL_MASK, before ? s.x : 0),
                       __reduce_add_sync(FULL_MASK, before ? s.y : 0),
                       __reduce_add_sync(FULL_MASK, before ? s.z : 0)};
    return I3{base.x + inc.x - v.x, base.y + inc.y - v.y, base.z + inc.z - v.z};
}

// ---- union-find over a parent array p (shared or global); -1 = untouched ----------------------

// Marks tree t touched (its own root) if it was untouched.
__device__ __forceinline__ void activate(int* p, int t) {
    if (((volatile int*)p)[t] == -1) atomicCAS(&p[t], -1, t);
}

// Root of x with path halving. Only non-roots are rewritten, and only to an ancestor, so plain
// stores never race with the CAS that hooks a root.
__device__ __forceinline__ int find_halve(int* p, int x) {
    volatile int* vp = p;
    while (true) {
        int px = vp[x];
        if (px == x) return x;
        int gx = vp[px];
        if (gx != px) vp[x] = gx;
        x = gx;
    }
}

// Joins the components of a and b, hooking the larger root under the smaller one (min-root):
// parent[x] <= x always holds, so every root is the smallest tree of its component.
__device__ __forceinline__ void unite(int* p, int a, int b) {
    while (true) {
        a = find_halve(p, a);
        b = find_halve(p, b);
        if (a == b) return;
        if (a > b) {
            int t = a;
            a = b;
            b = t;
        }
        if (atomicCAS(&p[b], b, a) == b) return;
    }
}

// Read-only root search; safe while other threads write their own entry's final root.
__device__ __forceinline__ int find_ro(const int* p, int x) {
    const volatile int* vp = p;
    int px = vp[x];
    while (px != x) {
        x = px;
        px = vp[x];
    }
    return x;
}

// Unions the support of hyperedge range [s0, s1) into p (tree ids are world-local).
__device__ __forceinline__ void union_support(int* p, const int* support, unsigned s0,
                                              unsigned s1) {
    if (s0 >= s1) return;
    const int f = LDG(support + s0);
    activate(p, f);
    for (unsigned j = s0 + 1; j < s1; ++j) {
        const int t = LDG(support + j);
        activate(p, t);
        unite(p, f, t);
    }
}

// Pointer jumping to a fixed point: lab[t] <- lab[lab[t]], block-wide, until nothing moves.
// Each thread writes only its own trees; values only decrease and stay inside the component.
__device__ void jump_all(int* lab, int ntree) {
    volatile int* v = lab;
    while (true) {
        int moved = 0;
        for (int t = threadIdx.x; t < ntree; t += blockDim.x) {
            const int l = v[t];
            if (l >= 0) {
                const int ll = v[l];
                if (ll < l) {
                    v[t] = ll;
                    moved = 1;
                }
            }
        }
        if (!__syncthreads_or(moved)) break;
    }
}

// ---- the maps -------------------------------------------------------------------------------

// The lanes of this warp whose key equals this lane's (every lane must call it). One key
// across the warp (a big island) needs no match.
__device__ __forceinline__ unsigned warp_peers(int k) {
    const bool uniform = __all_sync(FULL_MASK, k == __shfl_sync(FULL_MASK, k, 0));
    return uniform ? FULL_MASK : __match_any_sync(FULL_MASK, k);
}

// Stable counting-sort scatter run by one warp: element i with key k >= 0 goes to
// cursor[k]++ (in ascending i), key -1 goes after all islands from `rest` on. Keys are loaded
// SCATTER_BATCH iterations ahead so that the serial part waits on memory once per batch.
#define SCATTER_BATCH 8
#define ROW_BATCH 4
// One round of warp_scatter: element i (< n, or past the end) with key k.
template <class Write>
__device__ __forceinline__ void warp_scatter_round(int i, int n, int k, unsigned lower, int* cursor,
                                                   int& rest, Write write) {
    const unsigned mask = warp_peers(k);
    const int rank = __popc(mask & lower);
    int slot = 0;
    if (k >= 0) slot = cursor[k] + rank;
    else if (k == -1) slot = rest + rank;
    const unsigned rest_mask = __ballot_sync(FULL_MASK, k == -1);
    __syncwarp();
    if (k >= 0 && rank == 0) cursor[k] += __popc(mask);
    rest += __popc(rest_mask);
    __syncwarp();
    if (i < n) write(i, slot);
}
template <class Key, class Write>
__device__ void warp_scatter(int n, Key key, int* cursor, int rest, Write write) {
    const int lane = threadIdx.x & 31;
    const unsigned lower = (1u << lane) - 1u;
    for (int base = 0; base < n; base += 32 * SCATTER_BATCH) {
        int kb[SCATTER_BATCH];
#pragma unroll
        for (int u = 0; u < SCATTER_BATCH; ++u) {
            const int i = base + u * 32 + lane;
            kb[u] = i < n ? key(i) : -2 - lane;
        }
#pragma unroll
        for (int u = 0; u < SCATTER_BATCH; ++u) {
            if (base + u * 32 >= n) break; // warp-uniform
            warp_scatter_round(base + u * 32 + lane, n, kb[u], lower, cursor, rest, write);
        }
    }
}

// warp_scatter for at most 32 * ROW_BATCH elements with one copy of the round's code: a warp
// that runs it alone (the aside warp, quotient.cu) fetches each instruction from beyond the
// multiprocessor once instead of once per unrolled round (session 23: that warp's scatter
// was most of the kernel's instruction-fetch stalls on flex_trampoline).
template <class Key, class Write>
__device__ void warp_scatter_few(int n, Key key, int* cursor, int rest, Write write) {
    const int lane = threadIdx.x & 31;
    const unsigned lower = (1u << lane) - 1u;
    int kb[ROW_BATCH];
#pragma unroll
    for (int u = 0; u < ROW_BATCH; ++u) {
        const int i = u * 32 + lane;
        kb[u] = i < n ? key(i) : -2 - lane;
    }
#pragma unroll 1
    for (int u = 0; u * 32 < n; ++u) {
        int k = kb[0];
#pragma unroll
        for (int v = 1; v < ROW_BATCH; ++v)
            if (u == v) k = kb[v];
        warp_scatter_round(u * 32 + lane, n, k, lower, cursor, rest, write);
    }
}

// The same scatter by a whole block when there are at most BLOCK_SCATTER_KEYS islands, for
// a chunk of blockDim.x elements at a time instead of one warp's serial rounds of 32. It costs
// barriers and work in every warp, which pay only where a world's latency matters more than the
// multiprocessor's throughput: past BLOCK_SCATTER_MIN elements, in blocks of 512 threads or
// more (the launch rule gives those to batches of no more worlds than multiprocessors and to
// big worlds; in smaller blocks other worlds' blocks fill the idle warps). Each warp
// ranks its lanes among equal keys (a match) and counts each key in its column of a small
// table (one column per warp, so no barrier clears it); after a barrier one warp per key turns
// that key's row into start slots (a scan over the warps, in order) and moves its cursor; after
// a second barrier every element is written. Elements of no island are the table's last row,
// whose cursor starts at `rest`. The table (row = key, 33 columns: one per warp, one against
// bank conflicts) lives in the caller's scratch, BLOCK_SCATTER_TABLE(nisland) ints: in static
// shared memory every block of every kernel that has the scatter would reserve it, used or not,
// and the driver takes shared memory from the L1 cache.
#define BLOCK_SCATTER_KEYS 31
#define BLOCK_SCATTER_MIN 128
#define BLOCK_SCATTER_TABLE(nisland) (((nisland) + 1) * 33)
// Whether to scatter n elements by the whole block, with `room` ints of scratch for the table.
__device__ __forceinline__ bool block_scatter_pays(int nisland, int n, int room) {
    return nisland <= BLOCK_SCATTER_KEYS && n > BLOCK_SCATTER_MIN && blockDim.x >= 512 &&
           BLOCK_SCATTER_TABLE(nisland) <= room;
}
template <class Key, class Write>
__device__ void block_scatter(int n, int nisland, Key key, int* cursor, int rest, int* tab,
                              Write write) {
    __shared__ int s_rest;
    const int tid = threadIdx.x, lane = tid & 31, wid = tid >> 5, nwarp = blockDim.x >> 5;
    const unsigned lower = (1u << lane) - 1u;
    const int nkey = nisland + 1;
    if (tid == 0) s_rest = rest;
    for (int base = 0; base < n; base += blockDim.x) {
        const int i = base + tid;
        const int k = i < n ? key(i) : -2;
        const int row = k == -1 ? nisland : k;
        for (int r = lane; r < nkey; r += 32) tab[r * 33 + wid] = 0;
        __syncwarp();
        const unsigned mask = warp_peers(k);
        const int rank = __popc(mask & lower);
        if (k >= -1 && rank == 0) tab[row * 33 + wid] = __popc(mask);
        __syncthreads();
        for (int r = wid; r < nkey; r += nwarp) {
            const int c = lane < nwarp ? tab[r * 33 + lane] : 0;
            int inc = c;
            for (int o = 1; o < 32; o <<= 1) {
                const int y = __shfl_up_sync(FULL_MASK, inc, o);
                if (lane >= o) inc += y;
            }
            const int start = r < nisland ? cursor[r] : s_rest;
            if (lane < nwarp) tab[r * 33 + lane] = start + inc - c;
            const int total = __shfl_sync(FULL_MASK, inc, 31);
            if (lane == 0) {
                if (r < nisland) cursor[r] = start + total;
                else s_rest = start + total;
            }
        }
        __syncthreads();
        if (k >= -1) write(i, tab[row * 33 + wid] + rank);
        __syncwarp(); // this warp's reads of its column before its next chunk clears it
    }
}

// After ranking, `lab` holds for a root -2 - (its island), for any other touched tree its root,
// and -1 for an untouched tree: the island of tree t is two shared loads away, so the labels
// need no rewrite pass (and no barrier for it). `found` is world_discovers: MuJoCo makes no
// islands without rows unless the model says so.
__device__ __forceinline__ int island_of(const int* lab, int t, bool found) {
    if (!found || t < 0) return -1;
    const int l = lab[t];
    if (l == -1) return -1;
    if (l <= -2) return -2 - l;
    return -2 - lab[l];
}

// Counting groups: runs of equal keys in consecutive lanes. The first lane of a run (its
// leader) counts for the whole run, so a big island, or the dofs of one tree and the rows of
// one contact, which come in runs, cost one shared-memory atomic per run instead of one per
// member serialized on one address. Returns the leader's run as a lane mask (0 elsewhere).
__device__ __forceinline__ unsigned key_group(int key, bool* leader) {
    const int lane = threadIdx.x & 31;
    const int prev = __shfl_up_sync(FULL_MASK, key, 1);
    const bool head = lane == 0 || prev != key;
    const unsigned heads = __ballot_sync(FULL_MASK, head);
    const unsigned above = lane == 31 ? 0u : heads & (FULL_MASK << (lane + 1));
    const unsigned end = above ? (above & (0u - above)) : 0u; // lowest head above, or none
    *leader = head;
    if (!head) return 0u;
    const unsigned from = FULL_MASK << lane;
    return end ? from & (end - 1u) : from;
}

// The thread group that computes one world's maps: a whole block, or one warp (the `warp`
// mode). Loops stride by the group's size and its barriers are the group's.
struct BlockGroup {
    static constexpr bool whole_block = true;
    __device__ int rank() const { return threadIdx.x; }
    __device__ int size() const { return blockDim.x; }
    __device__ void sync() const { __syncthreads(); }
    __device__ I3 exscan3(I3 v, I3* total, int& ph) const { return block_exscan3(v, total, ph); }
};
struct WarpGroup {
    static constexpr bool whole_block = false;
    __device__ int rank() const { return threadIdx.x & 31; }
    __device__ int size() const { return 32; }
    __device__ void sync() const { __syncwarp(); }
    __device__ I3 exscan3(I3 v, I3* total, int&) const { return warp_exscan3(v, total); }
};

// Counts a row a lane (of island isl, -1 or less: none; of type `type`) per island in cnt_e
// (rows), cnt_ne (equality rows) and cnt_nf (friction rows), one shared atomic per run of
// equal islands (key_group). Every lane of the warp calls it.
__device__ __forceinline__ void count_rows(int isl, int type, int* cnt_e, int* cnt_ne,
                                           int* cnt_nf) {
    const unsigned eq = __ballot_sync(FULL_MASK, type == 0);
    const unsigned fr = __ballot_sync(FULL_MASK, type == 1 || type == 2);
    bool lead;
    const unsigned grp = key_group(isl, &lead);
    if (isl >= 0 && lead) {
        atomicAdd(&cnt_e[isl], __popc(grp));
        if (grp & eq) atomicAdd(&cnt_ne[isl], __popc(grp & eq));
        if (grp & fr) atomicAdd(&cnt_nf[isl], __popc(grp & fr));
    }
}

// One batch of a world's rows as row_islands loads them: ROW_BATCH rows per thread of the
// group, each with its first tree, its type and its output index.
struct RowBatch {
    unsigned at[ROW_BATCH];
    int first[ROW_BATCH], type[ROW_BATCH];
};

// Loads the batch of rows from `base` on (of rows r0 .. r0 + nrow) for the group g: two
// dependent levels (a row's support offset, then its first tree), each issued for every row
// of the batch before it is waited on.
template <class G>
__device__ __forceinline__ RowBatch row_batch(const G& g, const Args& a, unsigned r0, int nrow,
                                              int base) {
    const int tid = g.rank(), bd = g.size();
    RowBatch b;
#pragma unroll
    for (int u = 0; u < ROW_BATCH; ++u) {
        const int k = base + u * bd + tid;
        const bool in = k < nrow;
        const unsigned r = r0 + k;
        b.first[u] = in ? (int)LDG(a.supadr + r) : 0;
        b.type[u] = in ? LDG(a.row_type + r) : -1;
        b.at[u] = in && a.rank ? LDG(a.rank + r) : r;
    }
#pragma unroll
    for (int u = 0; u < ROW_BATCH; ++u)
        if (base + u * bd + tid < nrow) b.first[u] = LDG(a.support + b.first[u]);
    return b;
}

// The islands of a loaded batch of rows (row_batch): each row's island is `isl_of` of its
// first tree, written to efc_island (and its mirror, when not null), and counted per island in
// cnt_e (rows), cnt_ne (equality rows) and cnt_nf (friction rows).
template <class G, class IslandOf>
__device__ __forceinline__ void row_batch_islands(const G& g, const Args& a, int nrow, int base,
                                                  const RowBatch& b, IslandOf isl_of,
                                                  int* cnt_e, int* cnt_ne, int* cnt_nf,
                                                  int* mirror, unsigned r0) {
    const int tid = g.rank(), bd = g.size();
#pragma unroll
    for (int u = 0; u < ROW_BATCH; ++u) {
        if (base + u * bd >= nrow) break; // group-uniform
        const int k = base + u * bd + tid;
        int isl = -2;
        if (k < nrow) {
            isl = isl_of(b.first[u]);
            a.efc_island[b.at[u]] = isl;
            if (mirror) mirror[b.at[u] - r0] = isl;
        }
        count_rows(isl, b.type[u], cnt_e, cnt_ne, cnt_nf);
    }
}

// The islands of a world's rows (rows r0 .. r0 + nrow), computed by the group g, batch by
// batch (row_batch, row_batch_islands). A row's island is two dependent loads away (its
// support offset, its first tree), so each thread loads ROW_BATCH rows level by level: one
// latency per level and batch instead of per row. Rows are read in input order (the counts do
// not depend on order); in deterministic mode each island goes to the row's canonical place,
// whose index (`rank`) loads alongside the first level instead of adding a third.
template <class G, class IslandOf>
__device__ void row_islands(const G& g, const Args& a, unsigned r0, int nrow, IslandOf isl_of,
                            int* cnt_e, int* cnt_ne, int* cnt_nf, int* mirror) {
    for (int base = 0; base < nrow; base += g.size() * ROW_BATCH) {
        const RowBatch b = row_batch(g, a, r0, nrow, base);
        row_batch_islands(g, a, nrow, base, b, isl_of, cnt_e, cnt_ne, cnt_nf, mirror, r0);
    }
}

// A write-only output's store. STREAM (the full rebuilds' maps): evict-first (st.global.cs), so
// that a step's outputs, written once and read by no later kernel of the step, give way in L2 to
// the rows still to be read. Measured on an H100 at 4,096 worlds (session 89, two runs a build, µs
// a step): cloth-99% `block` 192.2 -> 185.4 (186.3 with L2 flushed), `labelprop` 203.8 -> 200.5,
// `tiled` 403.9 -> 398.2; mechanism-90% `block` 48.8 -> 46.7, `warp` 43.4 -> 42.2. The cost: a
// reader right after the step (a solver) finds the maps evicted sooner. Session 99 measured it on
// an H100 (bench --quotient's reader of every output; each mode against itself with plain stores,
// three runs each): at 4,096 worlds the read gives back all of mechanism-90% `warp`'s 1.7 µs, 4.4
// of hammock `warp`'s 5.3 and 1.6 of cloth-99% `block`'s 7.0; at 8,192 mechanism-90% `block`
// (0.6 faster) reads 2.1 slower; below, even. Kept: with the read it is ahead or even elsewhere
// (benches/results/logs/h100-2026-12-07-session99-calls.md). Outputs the maps read
// back (efc_island, dof_island) stay plain; the quotient's too: with the hint in every mode it was
// slower on four cells of five (session 88, exp/csall-88: its calls page,
// benches/results/logs/h100-2026-12-06-session88-calls.md).
template <bool STREAM>
__device__ __forceinline__ void put_out(int* p, int v) {
    if constexpr (STREAM) __stcs(p, v);
    else *p = v;
}

// The row maps of a world: map_iefc2efc and map_efc2iefc from the islands in efc_island, with
// the per-island cursors `cursor` (rows of no island from `rest` on), and their mirror when not
// null; by the whole block (BLOCK, its table in `tab`) or by one warp (for at most
// 32 * ROW_BATCH rows with FEW: warp_scatter_few); STREAM: put_out's.
template <bool BLOCK, bool FEW = false, bool STREAM = false>
__device__ __forceinline__ void row_scatter(const Args& a, unsigned r0, int nrow, int nisland,
                                            int* cursor, int rest, int* mirror, int* tab) {
    auto key = [&](int k) { return a.efc_island[r0 + k]; };
    auto write = [&](int k, int slot) {
        put_out<STREAM>(&a.map_iefc2efc[r0 + slot], k);
        put_out<STREAM>(&a.map_efc2iefc[r0 + k], slot);
        if (mirror) {
            mirror[a.mirror_rows + k] = slot;
            mirror[2 * a.mirror_rows + slot] = k;
        }
    };
    if (BLOCK) block_scatter(nrow, nisland, key, cursor, rest, tab, write);
    else if (FEW) warp_scatter_few(nrow, key, cursor, rest, write);
    else warp_scatter(nrow, key, cursor, rest, write);
}

// -1 in every per-island output at index o (a world's places past its islands); STREAM:
// put_out's.
template <bool STREAM = false>
__device__ __forceinline__ void no_island(const Args& a, size_t o) {
    put_out<STREAM>(&a.island_ntree[o], -1);
    put_out<STREAM>(&a.island_nv[o], -1);
    put_out<STREAM>(&a.island_nefc[o], -1);
    put_out<STREAM>(&a.island_ne[o], -1);
    put_out<STREAM>(&a.island_nf[o], -1);
    put_out<STREAM>(&a.island_itreeadr[o], -1);
    put_out<STREAM>(&a.island_idofadr[o], -1);
    put_out<STREAM>(&a.island_iefcadr[o], -1);
    put_out<STREAM>(&a.island_dofadr[o], -1);
}

// Every output of world w from its min-roots `lab` (length ntree: -1 untouched, else the
// smallest tree of the component; rewritten as described at island_of), computed by the group
// g (a multiple of 32 threads). `cnt` holds 6 * ntree ints of scratch. Loops run whole warps
// (for the warp-wide intrinsics inside).
// With MIRROR (the quotient's kernel only: a compile-time switch, so that the other modes'
// kernels carry none of it) the row-level outputs are also copied to Args::row_mirror. STREAM
// (the full rebuilds): the write-only outputs stored evict-first (put_out).
template <class G, bool MIRROR = false, bool STREAM = false>
__device__ void world_maps_in(const G& g, const Args& a, int w, int* lab, int* cnt) {
    // Deterministic mode: the fused kernels may start while the order kernel still sorts
    // (programmatic dependent launch, src/gpu/maps.rs: launch_fused); discovery never reads
    // the order, the maps wait here until it is complete and visible (a no-op otherwise).
    if (a.rank) grid_dependency_wait();
    const int ntree = a.ntree, nv = a.nv;
    const size_t T = (size_t)w * ntree, D = (size_t)w * nv;
    const unsigned r0 = LDG(a.world_rowadr + w);
    const int nrow = world_nrow(a, w);
    const bool found = world_discovers(a, nrow);
    const int tid = g.rank(), bd = g.size();
    int ph = 0;
    int* cnt_t = cnt;
    int* cnt_d = cnt + ntree;
    int* cnt_e = cnt + 2 * ntree;
    int* cnt_ne = cnt + 3 * ntree;
    int* cnt_nf = cnt + 4 * ntree;
    int* dofadr = cnt + 5 * ntree;

    // 1. Rank the roots with a group scan (ascending tree = ascending smallest tree of the
    //    island) and clear the counters.
    int nisland = 0;
    for (int base = 0; base < ntree; base += bd) {
        const int t = base + tid;
        const int root = (t < ntree && found && lab[t] == t) ? 1 : 0;
        if (t < ntree) {
            cnt_t[t] = 0;
            cnt_d[t] = 0;
            cnt_e[t] = 0;
            cnt_ne[t] = 0;
            cnt_nf[t] = 0;
            dofadr[t] = INT_MAX_;
        }
        I3 tot;
        const int ex = g.exscan3(I3{root, 0, 0}, &tot, ph).x;
        if (root) lab[t] = -2 - (nisland + ex);
        nisland += tot.x;
    }
    g.sync();
    // 2. Islands of trees, dofs and rows, and the members of each island.
    for (int base = 0; base < ntree; base += bd) {
        const int t = base + tid;
        const int isl = t < ntree ? island_of(lab, t, found) : -2;
        if (t < ntree) put_out<STREAM>(&a.tree_island[T + t], isl);
        bool lead;
        const unsigned g = key_group(isl, &lead);
        if (isl >= 0 && lead) atomicAdd(&cnt_t[isl], __popc(g));
    }
    for (int base = 0; base < nv; base += bd) {
        const int d = base + tid;
        const int isl = d < nv ? island_of(lab, LDG(a.dof_treeid + d), found) : -2;
        if (d < nv) a.dof_island[D + d] = isl;
        bool lead;
        const unsigned g = key_group(isl, &lead);
        if (isl >= 0 && lead) {
            atomicAdd(&cnt_d[isl], __popc(g));
            atomicMin(&dofadr[isl], d); // the group's lowest lane holds its smallest dof
        }
    }
    int* mirror = MIRROR && nrow <= a.mirror_rows ? row_mirror_of(a, w) : nullptr;
    row_islands(g, a, r0, nrow, [&](int t) { return island_of(lab, t, found); }, cnt_e, cnt_ne,
                cnt_nf, mirror);
    g.sync();
    // 3. Per-island outputs, start addresses by group scans, -1 padding past nisland; the
    //    counters become the scatter cursors.
    I3 carry = I3{0, 0, 0};
    for (int base = 0; base < ntree; base += bd) {
        const int i = base + tid;
        const I3 v = i < nisland ? I3{cnt_t[i], cnt_d[i], cnt_e[i]} : I3{0, 0, 0};
        I3 tot;
        const I3 ex = g.exscan3(v, &tot, ph);
        if (i < ntree) {
            const size_t o = T + i;
            if (i < nisland) {
                const I3 adr = I3{carry.x + ex.x, carry.y + ex.y, carry.z + ex.z};
                put_out<STREAM>(&a.island_ntree[o], v.x);
                put_out<STREAM>(&a.island_nv[o], v.y);
                put_out<STREAM>(&a.island_nefc[o], v.z);
                put_out<STREAM>(&a.island_ne[o], cnt_ne[i]);
                put_out<STREAM>(&a.island_nf[o], cnt_nf[i]);
                put_out<STREAM>(&a.island_itreeadr[o], adr.x);
                put_out<STREAM>(&a.island_idofadr[o], adr.y);
                put_out<STREAM>(&a.island_iefcadr[o], adr.z);
                put_out<STREAM>(&a.island_dofadr[o], dofadr[i]);
                cnt_t[i] = adr.x;
                cnt_d[i] = adr.y;
                cnt_e[i] = adr.z;
            } else {
                no_island<STREAM>(a, o);
            }
        }
        carry = I3{carry.x + tot.x, carry.y + tot.y, carry.z + tot.z};
    }
    if (tid == 0) {
        a.nisland[w] = nisland;
        a.nidof[w] = carry.y;
    }
    g.sync();
    // 4. Stable scatters, members of no island last: with few islands and a long map each map
    //    by the whole block in turn (block_scatter), otherwise one warp per map (a warp takes
    //    several when the group has fewer). cnt_ne is free again and keeps the tree order for
    //    step 5.
    //    Row and dof keys are read back from the islands written in step 2: one load each,
    //    which the scatter batches. Re-deriving them from the labels (support offset, support,
    //    label, root label: four dependent loads behind branches) kept the batch from
    //    overlapping its loads; that was the regression after H200 run 2 (run 5 measured both).
    int* itree = cnt_ne;
    auto tree_key = [&](int t) { return island_of(lab, t, found); };
    auto tree_write = [&](int t, int slot) {
        put_out<STREAM>(&a.map_itree2tree[T + slot], t);
        itree[slot] = t;
    };
    auto dof_key = [&](int d) { return a.dof_island[D + d]; };
    auto dof_write = [&](int d, int slot) {
        put_out<STREAM>(&a.map_idof2dof[D + slot], d);
        put_out<STREAM>(&a.map_dof2idof[D + d], slot);
    };
    // The block scatter's table goes where cnt_nf and dofadr were: free until step 5.
    int* tab = cnt + 4 * ntree;
    bool by_block = false;
    if constexpr (G::whole_block) {
        const int longest = max(max(ntree, nrow), a.dof_blocks ? 0 : nv);
        by_block = block_scatter_pays(nisland, longest, 2 * ntree);
        if (by_block) {
            block_scatter(ntree, nisland, tree_key, cnt_t, carry.x, tab, tree_write);
            if (!a.dof_blocks)
                block_scatter(nv, nisland, dof_key, cnt_d, carry.y, tab, dof_write);
            row_scatter<true, false, STREAM>(a, r0, nrow, nisland, cnt_e, carry.z, mirror, tab);
        }
    }
    if (!by_block) {
        const int wid = tid >> 5, nwarp = bd >> 5;
        for (int m = wid; m < 3; m += nwarp) {
            if (m == 0)
                row_scatter<false, false, STREAM>(a, r0, nrow, nisland, cnt_e, carry.z, mirror,
                                                  tab);
            else if (m == 1 && !a.dof_blocks) warp_scatter(nv, dof_key, cnt_d, carry.y, dof_write);
            else if (m == 2) warp_scatter(ntree, tree_key, cnt_t, carry.x, tree_write);
        }
    }
    // 5. When every tree owns a consecutive block of dofs in tree order (and there are many
    //    dofs), the idof order is the trees' dof blocks laid out in itree order: one group scan
    //    of dof counts over itree gives each tree's first idof, and every dof is placed in
    //    parallel.
    if (a.dof_blocks) {
        g.sync();
        int* first = cnt_nf; // per tree: its first idof
        int done = 0;
        for (int base = 0; base < ntree; base += bd) {
            const int p = base + tid;
            const int t = p < ntree ? itree[p] : 0;
            const int n = p < ntree ? LDG(a.tree_dofnum + t) : 0;
            I3 tot;
            const int ex = g.exscan3(I3{n, 0, 0}, &tot, ph).x;
            if (p < ntree) first[t] = done + ex;
            done += tot.x;
        }
        g.sync();
        for (int d = tid; d < nv; d += bd) {
            const int t = LDG(a.dof_treeid + d);
            const int slot = first[t] + d - LDG(a.tree_dofadr + t);
            put_out<STREAM>(&a.map_idof2dof[D + slot], d);
            put_out<STREAM>(&a.map_dof2idof[D + d], slot);
        }
    }
}

// world_maps_in for a whole block (blockDim.x a multiple of 32), outputs stored evict-first.
__device__ void world_maps(const Args& a, int w, int* lab, int* cnt) {
    world_maps_in<BlockGroup, false, true>(BlockGroup{}, a, w, lab, cnt);
}

// world_maps_in for a whole block with the row-level outputs copied to Args::row_mirror when it is
// set (the quotient's block kernels): plain stores, unlike world_maps's (put_out says why).
__device__ void world_maps_mirrored(const Args& a, int w, int* lab, int* cnt) {
    world_maps_in<BlockGroup, true>(BlockGroup{}, a, w, lab, cnt);
}

// Does nothing: the bench times its graph to know the launch floor.
extern "C" __global__ void noop_kernel(Args a) {}

// Returns once the device's clock has advanced by `ns` nanoseconds, touching no memory: enqueued
// before a timed step (gpu::graph::Busy), it keeps the device busy while the host enqueues the
// step, so the step's time excludes the host's launch latency and whatever L2 holds stays.
extern "C" __global__ void spin_kernel(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// One buffer of ints that read_outputs_kernel reads: its address and length, and the blocks
// that read it (from `first`, `blocks` of them).
struct IntSpan {
    const int* p;
    long long n;
    long long first;
    long long blocks;
};

// Reads every int of each of the nspan spans (at most READ_SPANS_MAX) once, as a solver
// reading a step's outputs right after it would (gpu::graph::OutputReader: what the outputs'
// stores left in L2 shows in its time). Each span has blocks enough that a thread makes at most
// READ_LOADS 16-byte loads (the host's OutputReader::LOADS), issued before any is used, so that
// a thread waits for memory once (spans must start 16-byte aligned, which OutputReader::over
// checks; the last n % 4 ints are read one each by the span's first n % 4 threads). Their XOR,
// compared with a constant, keeps the loads; with `check` each thread XORs it into *sink
// instead, so that a test can compare the XOR of every int read with the host's (one atomic a
// thread: for tests, not timed).
#define READ_LOADS 4
#define READ_SPANS_MAX 64
extern "C" __global__ void read_outputs_kernel(const IntSpan* spans, int nspan, int* sink,
                                               int check) {
    // The block's span: the firsts staged in shared memory by one load a thread (nspan is at
    // most blockDim.x), then counted, so that no thread chases the table load by load.
    __shared__ long long first[READ_SPANS_MAX];
    if (threadIdx.x < nspan) first[threadIdx.x] = spans[threadIdx.x].first;
    __syncthreads();
    int k = 0;
    for (int j = 1; j < nspan; ++j) k += blockIdx.x >= first[j];
    const IntSpan s = spans[k];
    const long long n4 = s.n / 4, stride = s.blocks * blockDim.x;
    const long long t = (blockIdx.x - s.first) * blockDim.x + threadIdx.x;
    const int4* p4 = reinterpret_cast<const int4*>(s.p);
    int4 v[READ_LOADS];
#pragma unroll
    for (int j = 0; j < READ_LOADS; ++j) {
        const long long i = t + j * stride;
        v[j] = i < n4 ? p4[i] : make_int4(0, 0, 0, 0);
    }
    int acc = 0;
#pragma unroll
    for (int j = 0; j < READ_LOADS; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    if (t < s.n - 4 * n4) acc ^= s.p[4 * n4 + t];
    if (check) atomicXor(sink, acc);
    else if (acc == 0x5eed5eed) *sink = acc;
}

// Maps for modes that leave min-roots in a.labels (dense, dsu): one block per world.
extern "C" __global__ void __launch_bounds__(1024) maps_kernel(Args a) {
    extern __shared__ int smem[];
    const int w = blockIdx.x;
    if (w >= a.nworld) return;
    int *lab, *cnt;
    world_scratch(a, w, smem, &lab, &cnt);
    const int* src = a.labels + (size_t)w * a.ntree;
    for (int t = threadIdx.x; t < a.ntree; t += blockDim.x) lab[t] = src[t];
    __syncthreads();
    // Plain stores: with put_out's evict-first ones this kernel (1,024 threads, so at most 64
    // registers) spilled (44 bytes stored, 192 loaded; session 88).
    world_maps_in(BlockGroup{}, a, w, lab, cnt);
}
