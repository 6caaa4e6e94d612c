// `quotient`: the static quotient on the device, one thread block per world, then the maps in the
// same launch: quotient_kernel; quotient_few_kernel (the same, with the rare paths out of line) for
// a batch whose every world has a slot of few nodes; quotient_aside_kernel (the same, with a
// world's few rows mapped by a warp the pass over its trees leaves idle, the rare paths inline) for
// such a batch of no more worlds than multiprocessors (entry points in quotient_block.cu; the warp
// kernels' in quotient_warp.cu, each a program of its own after common.cu and this file:
// src/gpu/quotient/); it uses only these of common.cu: FULL_MASK, LDG, Args, world_nrow,
// world_nhyper, hyper_index, world_scratch, activate, unite, union_support, jump_all,
// world_maps_mirrored, and for partial reuse and the node-level maps row_mirror_of, row_islands,
// row_batch, row_batch_islands, RowBatch, ROW_BATCH, row_scatter, block_scatter_pays,
// BLOCK_SCATTER_MIN, block_exscan3, warp_exscan3, I3, BlockGroup, WarpGroup, no_island.
//
// Per world, with the quotient slot the host contracted (src/quotient/contract.rs), the same
// decisions as the CPU step (src/quotient/step.rs):
//  1. Replay check: the world's rows must be some dynamic rows, then exactly the contracted
//     static rows (type and support, in order), then only dynamic rows; and, when rowless
//     couplings are static, exactly the contracted rowless hyperedges. Every thread compares
//     its share; one __syncthreads_or decides. Replayed: parent[] over the slot's nodes in
//     shared memory, every node with contracted rows active; the dynamic hyperedges' trees are
//     mapped to nodes (tree_node) and min-root united (over at most 32 nodes, as bit sets:
//     QBits); pointer jumping; each tree's label = the smallest tree of its root node. The
//     union runs in the same phase as the comparison, before its verdict (a mismatch discards
//     the labels: steps 2 and 3 start afresh), so its loads overlap the comparison's and the
//     two share one barrier.
//  2. Otherwise the guard with the per-node awake mask (src/quotient/guard.rs): each static
//     hyperedge must lie inside one node; per node, the count and wrapping hash sum of the
//     static hyperedges present are compared with the contracted ones: all present = active,
//     none = asleep (MuJoCo sleeps whole islands: the node's trees are not bound together this
//     step), anything else = stale. A dynamic hyperedge touching a sleeping node of several
//     trees is stale too. Not stale: the node solve with asleep nodes left untouched.
//  3. Stale (a toggle, an edit, a partial sleep nobody reported, no slot yet): the world is
//     solved directly (tree-level union over every hyperedge, as `block` does) — never a stale
//     answer — and flagged for the host to rebuild its quotient before the next step.
// Before all three, the reuse check: a world whose hyperedges (row types and every support,
// rows then rowless couplings: all its outputs depend on) equal those of the last step it was
// solved in keeps that step's outputs. Its tree- and dof-level outputs are still in place
// (per-world slices nothing else writes); its row-level outputs, packed by row, are too when
// its first row is where they were last written (q.c_rowadr): every world writes its own rows'
// span each step, so no other world's rows were there since (the host forgets the places when
// the world count changes, as a world not launched writes nothing). Otherwise earlier worlds'
// row counts moved them, and they are copied back from the per-world cache. The check
// reads the cache in the same phase as the replay check's span scan and shares its barrier,
// rewriting on the way what differs (q_check_cache); a world solved otherwise writes its
// row-level outputs to the cache's row mirror (Args::row_mirror) as the maps write them.
// And when a world did change but its partition of trees did not (new contacts inside existing
// islands, say), its tree- and dof-level outputs are those of the cached step, still in place:
// only the row-level outputs are computed (q_same_partition, q_row_maps).
// A replayed or masked world whose quotient has at most 32 nodes takes neither the tree-level
// partition check nor the tree-level maps: every output follows from its nodes, and the
// partition check is one over nodes (q_node_maps, below).
// q.stale[w] reports which: 0 replayed, 1 solved directly (rebuild), 2 masked, 3 reused; plus
// 4 when only the row-level outputs were computed, 8 when they came from the nodes, 16 when
// reused row-level outputs were in place, 32 when masked and solved by its warp (the warp
// kernels' masked twins, quotient_warp.cu), 64 when that warp mapped it by its hint (qw_hinted).

struct QArgs {
    const int* row_id;                 // per global row; uploaded and read only while eq_ids
                                       // (no check or output needs an id)
    const unsigned* world_slot;        // nworld; 0xffffffff = no quotient
    const unsigned* nnode;             // per slot
    const int* tree_node;              // nslot * ntree
    const int* node_mintree;           // nslot * ntree
    const unsigned* node_rows;         // nslot * ntree
    const unsigned long long* node_sum; // nslot * ntree: wrapping sum of row hashes
    const int* node_treeadr;           // nslot * (ntree + 1), per slot from 0
    // For the node-level maps (slots of at most Q_NODE_MAX nodes only, see q_node_maps):
    const int* node_trees;             // nslot * ntree: each node's trees, ascending, by node
    const unsigned* node_dofpre;       // nslot * (ntree + 1): dofs of node_trees before each
                                       // place
    const int4* node_head;             // nslot * Q_HEAD: {contraction number (from 1) as two
                                       // ints, 0, 0}, then per node and one past the last
                                       // {first place in node_trees, node_dofpre there,
                                       // smallest tree, 0}
    const int2* tree_place;            // nslot * ntree: {place in its node's list, dofs of
                                       // its node's trees before it}
    // For the warp kernel (quotient_warp.cu), the same slots only:
    const int4* node_efc;              // nslot * Q_NODE_MAX: per node its static rows, of
                                       // them equalities and friction rows, 0
    const unsigned char* row_node;     // nslot * max_static: each static row's node
    const unsigned char* runs;         // nslot * run_bytes: runs of one node among the static
                                       // rows and the trees (see QR_ROWS in quotient_warp.cu)
    const unsigned* nstatic;           // per slot: static hyperedges (rows, then rowless)
    const unsigned* nstatic_rows;      // per slot
    const unsigned char* stream_kind;  // nslot * max_static
    const unsigned* stream_adr;        // nslot * (max_static + 1), slot-relative
    const int* stream_support;         // nslot * max_entries
    int* stale;                        // nworld: 0 replayed, 1 solved, 2 masked, 3 reused;
                                       // | 4: row-level outputs only, | 8: node-level maps,
                                       // | 16: reused in place
    // The cache of each world's last solved step (reuse), padded per world:
    int* c_count;                      // nworld * 4: rows, hyperedges, row entries, all entries
                                       // (rows = -1: nothing cached)
    unsigned* c_rowadr;                // nworld: first row where the world's row-level outputs
                                       // were last written (0xffffffff: unknown)
    unsigned char* c_type;             // nworld * cap_rows
    unsigned* c_adr;                   // nworld * (cap_hyper + 1): rows', then rowless, from 0
    int* c_support;                    // nworld * cap_entries
    // The node-level partition check's cache, Q_CACHE_NODE words per world: the contraction
    // its tree- and dof-level outputs were last mapped over (0: none), then that step's
    // node -> island (Q_NODE_MAX bytes).
    unsigned long long* c_node;
    long long* trace;                  // nworld * Q_TRACE_MARKS clock64 marks (Q_TRACE only)
    const unsigned* lists;             // warp kernels, the launches after a step with masked
                                       // worlds: each launch's worlds (0xffffffff: none), see
                                       // quotient_warp.cu
    int eq_ids;                        // equality rows are static by id: those in
    int eq_lo, eq_hi;                  // [eq_lo, eq_hi), one run (Classifier::static_eqs)
    int eq_static;
    int friction_static;
    int flex_static;
    int max_static;
    int max_entries;
    int reuse;                         // the reuse check (block kernels)
    int reuse_nodes;                   // the node-level partition check (every kernel)
    int cap_rows;
    int cap_hyper;
    int cap_entries;
    int node_maps;                     // 1: trees own consecutive dof blocks in tree order,
                                       // so worlds of few nodes take q_node_maps
    int run_bytes;                     // per slot in runs
    // When every world of the launch has the same slot: that slot, its nodes, static rows and
    // static hyperedges (the warp kernel then waits on none of them); else one_slot = -1.
    int one_slot;
    int one_nnode;
    int one_k;
    int one_nstatic;
    int aside_blocks;                  // warp kernels: the launch's first blocks, one a world
                                       // set aside
    unsigned* asleep;                  // nworld: the nodes a world's masked solve last found
                                       // asleep (a hint for the masked twins, verified before
                                       // use)
};

// Phase marks for finding where a world's time goes (ARCHIPELAGO_Q_TRACE, src/gpu/
// phase_trace.rs): compiled in only under Q_TRACE, where the thread for which `who` holds (thread
// 0 of a world's block, lane 0 of its warp in the warp kernels) stores clock64() at each mark of
// world w. Q_START_BY is mark 0 with the world's other marks cleared first, so that a mark its path
// does not pass this step is absent, not an earlier step's. A mark after a barrier shows when the
// block left it; Q_END adds a barrier of its own, so that the last mark waits for every warp.
#define Q_TRACE_MARKS 10
#ifdef Q_TRACE
#define Q_MARK_BY(who, i)                                                                        \
    do {                                                                                         \
        if ((who) && q.trace) q.trace[(size_t)w * Q_TRACE_MARKS + (i)] = clock64();             \
    } while (0)
#define Q_START_BY(who)                                                                          \
    do {                                                                                         \
        if ((who) && q.trace)                                                                    \
            for (int i = 1; i < Q_TRACE_MARKS; ++i) q.trace[(size_t)w * Q_TRACE_MARKS + i] = 0;  \
        Q_MARK_BY(who, 0);                                                                       \
    } while (0)
#define Q_END()                                                                                  \
    do {                                                                                         \
        __syncthreads();                                                                         \
        Q_MARK(Q_TRACE_MARKS - 1);                                                               \
    } while (0)
#else
// Without the marks each is an empty statement.
#define Q_MARK_BY(who, i) \
    do {                  \
    } while (0)
#define Q_START_BY(who) Q_MARK_BY(who, 0)
#define Q_END() Q_MARK_BY(true, 0)
#endif
#define Q_MARK(i) Q_MARK_BY(threadIdx.x == 0, i)

// Whether equality `id` is dynamic while equalities are static by id (q.eq_ids): outside the
// static run.
__device__ __forceinline__ bool q_eq_dynamic(const QArgs& q, int id) {
    return id < q.eq_lo || id >= q.eq_hi;
}

// Whether global row r, of type `type`, is static under the policy (src/quotient/classify.rs).
// Its id is loaded only while equalities are static by id (then the host uploads the ids).
__device__ __forceinline__ bool q_row_static(const QArgs& q, int type, unsigned r) {
    // The static types as bits (equality 0, friction 1 and 2): one test for every row.
    const unsigned types = (q.eq_static ? 1u : 0u) | (q.friction_static ? 6u : 0u);
    if ((unsigned)type > 2u || !(types >> type & 1u)) return false;
    if (type != 0 || !q.eq_ids) return true;
    return !q_eq_dynamic(q, q.row_id[r]);
}

// The first and last static rows of world w: per thread, per warp (shuffles), then one shared
// atomic per warp (s_span = {first, last}, set to {nr, -1} by the caller, read after its next
// barrier); and every node with contracted rows active in `lab`. Returns whether this thread
// saw a static row; without `reduce` (the caller needs only that) s_span is left as it is.
__device__ bool q_span(const Args& a, const QArgs& q, int w, unsigned slot, int nr, int* s_span,
                       int* lab, bool reduce) {
    const int tid = threadIdx.x, bd = blockDim.x;
    const unsigned row0 = a.world_rowadr[w];
    const size_t sn = (size_t)slot * a.ntree;
    // Over every tree's place, not the slot's node count: one dependent load less (node_rows
    // is zero past the slot's nodes).
    for (int n = tid; n < a.ntree; n += bd) lab[n] = q.node_rows[sn + n] > 0 ? n : -1;
    int lo = nr, hi = -1;
    for (int r = tid; r < nr; r += bd)
        if (q_row_static(q, a.row_type[row0 + r], row0 + r)) {
            lo = min(lo, r);
            hi = max(hi, r);
        }
    if (!reduce) return hi >= 0;
    for (int o = 16; o > 0; o >>= 1) {
        lo = min(lo, __shfl_xor_sync(FULL_MASK, lo, o));
        hi = max(hi, __shfl_xor_sync(FULL_MASK, hi, o));
    }
    if ((tid & 31) == 0 && hi >= 0) {
        atomicMin(&s_span[0], lo);
        atomicMax(&s_span[1], hi);
    }
    return hi >= 0;
}

// ---- the node solve over bits, for a quotient of at most Q_NODE_MAX nodes -------------------
//
// A small quotient's nodes fit in a word, so the replay unites them as bit sets: each dynamic
// hyperedge ORs the set of its nodes into each of its nodes' neighbour sets, reductions that
// nothing waits on. Union-find takes, per entry, loads and compare-and-swaps that each wait on
// the one before: on flex_trampoline (49 contacts a world) a third of its replay phase, and
// neither fewer operations nor shared-space ones helped (benches/results/gpu-h200-notes.md,
// session 18). After the replay's barrier warp 0 closes the sets (Warshall's algorithm, one
// shuffle per node) and writes the labels union-find would have left.
#define Q_NODE_MAX 32

struct QBits {
    unsigned adj[Q_NODE_MAX]; // per node: the nodes sharing a dynamic hyperedge with it
    unsigned touched;         // nodes in some dynamic hyperedge
};

// Hyperedge support[s0, s1) into b, over the slot's tree -> node map tn.
__device__ __forceinline__ void q_bits_union(const Args& a, const int* tn, unsigned s0,
                                             unsigned s1, QBits& b) {
    unsigned m = 0;
    for (unsigned j = s0; j < s1; ++j) m |= 1u << tn[LDG(a.support + j)];
    if (!m) return;
    atomicOr(&b.touched, m);
    for (unsigned r = m; r; r &= r - 1) atomicOr(&b.adj[__ffs(r) - 1], m);
}

// The closure of the nodes' neighbour sets (lane n holds node n's, with n itself, for the
// nnode nodes): Warshall's algorithm, one shuffle per node. Every lane of the warp calls it.
__device__ __forceinline__ unsigned q_closure(unsigned reach, int nnode) {
    for (int k = 0; k < nnode; ++k) {
        const unsigned rk = __shfl_sync(FULL_MASK, reach, k);
        if (reach >> k & 1u) reach |= rk;
    }
    return reach;
}

// Warp 0, once b is complete: lab[0, nnode) as the union-find would leave it, from the nodes
// active before (lab >= 0, q_span): -1 for a node neither active nor touched, else the smallest
// node of its component.
__device__ __forceinline__ void q_bits_labels(const QBits& b, int nnode, int* lab) {
    const int n = threadIdx.x;
    const bool in = n < nnode;
    const unsigned reach = q_closure(in ? b.adj[n] | 1u << n : 0u, nnode);
    if (in) lab[n] = lab[n] >= 0 || (b.touched >> n & 1u) ? __ffs(reach) - 1 : -1;
    __syncwarp();
}

#define Q_CMP_BATCH 4
// Support entries a thread at a time (one register each side, against four a row): 16 a lane
// cover a warp's 512 entries in one batch (a hammock world has 506 static ones, mechanism-90%
// 384), so the warp kernels wait on them once. At 4,096 worlds 16 beat 4 (cloth-99% by about
// 1 µs a step, the others by up to 0.5); 8 lost to 4, and 24 to 16 (session 50,
// benches/results/gpu-h200-notes.md). Four elements a 16-byte load, against the slot's stream
// kept at four shifts (exp/vguard94c), lost 0.1-1.75 µs a step on every cell with L2 warm, up to
// 1.95 with it flushed or the device busy (session 96, on an H100).
#define Q_CMP_EBATCH 16
#define Q_EQ_BATCH 2

// Whether any of the k rows from global row r0 (types at wtype) is an equality whose id is
// outside the static run, this thread's share of them (rank tid of bd). Two rows a thread at a
// time, their types and ids loaded before either is tested: row by row, a warp's pass over a
// cloth's 767 static rows waited 24 times on a type, then an id, then a search of the dynamic
// ids, as they were then (session 43; four at a time spilled more in the warp kernels).
__device__ __forceinline__ bool q_dynamic_eq_among(const QArgs& q, const unsigned char* wtype,
                                                unsigned r0, int k, int tid, int bd) {
    const int* wid = q.row_id + r0;
    bool found = false;
    for (int i0 = 0; i0 < k; i0 += Q_EQ_BATCH * bd) {
        int type[Q_EQ_BATCH], id[Q_EQ_BATCH];
#pragma unroll
        for (int u = 0; u < Q_EQ_BATCH; ++u) {
            const int i = i0 + u * bd + tid;
            type[u] = i < k ? wtype[i] : -1;
            id[u] = i < k ? wid[i] : 0;
        }
#pragma unroll
        for (int u = 0; u < Q_EQ_BATCH; ++u) found |= type[u] == 0 && q_eq_dynamic(q, id[u]);
    }
    return found;
}

// This thread's share (of the group g: a whole block, or a warp) of "world w's static
// hyperedges are not exactly its slot's stream", for the slot's static rows `k` placed from
// row `start` on (start + k <= nr) and its static hyperedges `nstatic`: the rows' types,
// relative support offsets and entries, then, when rowless couplings are static, theirs. Row and
// coupling ids do not matter: see invalidation::signature.
template <class G>
__device__ int q_static_differs(const G& g, const Args& a, const QArgs& q, int w, unsigned slot,
                                int nr, int nh, int k, int nstatic, int start) {
    const int tid = g.rank(), bd = g.size();
    const unsigned row0 = a.world_rowadr[w];
    int bad = 0;
    const size_t ss = (size_t)slot * q.max_static;
    const size_t se = (size_t)slot * q.max_entries;
    const unsigned* sadr = q.stream_adr + (size_t)slot * (q.max_static + 1);
    // The block's rows, indexed from its first (pointers and signed indices: each batch's
    // loads then take one address and constant offsets).
    const unsigned* wadr = a.supadr + row0 + start;
    const unsigned char* wtype = a.row_type + row0 + start;
    const unsigned char* skind = q.stream_kind + ss;
    const unsigned base = wadr[0];
    // Q_CMP_BATCH rows a thread at a time, loaded before any is compared: a thread then waits
    // on memory once per batch, not once per row. Past the block both sides load as zero, so
    // the comparison needs no bound and no branch: the differing bits are or-ed together. The
    // same type is static, as the stream's kinds are under the policy the slot was contracted
    // with, the current one (a new policy rebuilds every world).
    unsigned diff = 0;
    for (int i0 = 0; i0 < k; i0 += Q_CMP_BATCH * bd) {
        unsigned adr[Q_CMP_BATCH], want[Q_CMP_BATCH], type[Q_CMP_BATCH], kind[Q_CMP_BATCH];
#pragma unroll
        for (int u = 0; u < Q_CMP_BATCH; ++u) {
            const int i = i0 + u * bd + tid;
            adr[u] = i < k ? wadr[i] - base : 0u;
            want[u] = i < k ? sadr[i] : 0u;
            type[u] = i < k ? wtype[i] : 0u;
            kind[u] = i < k ? skind[i] : 0u;
        }
#pragma unroll
        for (int u = 0; u < Q_CMP_BATCH; ++u) diff |= (adr[u] ^ want[u]) | (type[u] ^ kind[u]);
    }
    // While equalities are static by id, none of the block's may lie outside the static run
    // (an equality renumbered): a second pass over the types, with the ids, which only such a
    // policy pays for.
    if (q.eq_ids && q_dynamic_eq_among(q, wtype, row0 + start, k, tid, bd)) bad = 1;
    const unsigned nent = sadr[k];
    const unsigned have = wadr[k] - base;
    diff |= have ^ nent;
    const int m = (int)(nent < have ? nent : have);
    const int* got_at = a.support + base;
    const int* want_at = q.stream_support + se;
    for (int j0 = 0; j0 < m; j0 += Q_CMP_EBATCH * bd) {
        unsigned got[Q_CMP_EBATCH], want[Q_CMP_EBATCH];
#pragma unroll
        for (int u = 0; u < Q_CMP_EBATCH; ++u) {
            const int j = j0 + u * bd + tid;
            got[u] = j < m ? got_at[j] : 0u;
            want[u] = j < m ? want_at[j] : 0u;
        }
#pragma unroll
        for (int u = 0; u < Q_CMP_EBATCH; ++u) diff |= got[u] ^ want[u];
    }
    if (diff != 0) bad = 1;
    // Rowless couplings, when static (and the world has some: without, nothing to load, and
    // a chain of three dependent loads less before the caller's reduction).
    if (q.flex_static) {
        const int ne = nh - nr;
        const int sk = nstatic - k;
        if (ne != sk) {
            bad = 1;
        } else if (ne > 0) {
            const unsigned h0 = hyper_index(a, w, nr, nr);
            const unsigned ebase = a.supadr[h0];
            for (int e = tid; e <= ne; e += bd) {
                const unsigned h = hyper_index(a, w, nr + e, nr);
                if (a.supadr[h] - ebase + nent != sadr[k + e]) bad = 1;
            }
            const unsigned sn = sadr[k + ne] - nent;
            const unsigned hn = a.supadr[hyper_index(a, w, nh, nr)] - ebase;
            const unsigned mn = sn < hn ? sn : hn;
            for (unsigned j = tid; j < mn; j += bd)
                if (a.support[ebase + j] != q.stream_support[se + nent + j]) bad = 1;
        }
    }
    return bad;
}

// Step 1, after q_span and a barrier: this thread's share of "world w's static hyperedges are
// not exactly the slot's stream" (the caller's barrier reduces it), given the slot's static
// rows `k` and static hyperedges `nstatic` (loaded before the barrier); meanwhile `lab` receives
// the node solve (not yet jumped), or with `bits` (at most Q_NODE_MAX nodes) b receives it.
__device__ int q_replay(const Args& a, const QArgs& q, int w, unsigned slot, int nr, int nh,
                        int k, int nstatic, const int* s_span, int* lab, bool bits, QBits& b) {
    const int tid = threadIdx.x, bd = blockDim.x;
    const size_t sn = (size_t)slot * a.ntree;
    const int start = k == 0 ? 0 : s_span[0];
    if (nr - start < k) return 1;  // uniform: every thread sees the same values
    int bad = q_static_differs(BlockGroup{}, a, q, w, slot, nr, nh, k, nstatic, start);
    // Rows after the block are dynamic (rows before it are, by the choice of start).
    if (s_span[1] >= start + k) bad = 1;
    // The dynamic hyperedges over nodes, as if the comparison will pass: by threads counted
    // from the block's end, so that in a large block they are not the ones whose comparison
    // above waits on loaded loop bounds (a thread's loads wait in program order).
    const int* tn = q.tree_node + sn;
    for (int h = bd - 1 - tid; h < nh; h += bd) {
        if (h < nr ? (h >= start && h < start + k) : q.flex_static) continue;
        const unsigned x = hyper_index(a, w, h, nr);
        const unsigned s0 = a.supadr[x], s1 = a.supadr[x + 1];
        if (bits) {
            q_bits_union(a, tn, s0, s1, b);
            continue;
        }
        if (s0 >= s1) continue;
        const int f = tn[a.support[s0]];
        activate(lab, f);
        for (unsigned j = s0 + 1; j < s1; ++j) {
            const int n = tn[a.support[j]];
            activate(lab, n);
            unite(lab, f, n);
        }
    }
    return bad;
}

#define Q_IDLE 0u
#define Q_ACTIVE 1u
#define Q_ASLEEP 2u
#define Q_ROWLESS_KIND 8

// invalidation::signature::mix (splitmix64's finalizer).
__device__ __forceinline__ unsigned long long q_mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// invalidation::signature::row_hash over support[s0, s1).
__device__ unsigned long long q_row_hash(int kind, const int* support, unsigned s0,
                                         unsigned s1) {
    unsigned long long set = 0;
    for (unsigned j = s0; j < s1; ++j)
        set += q_mix((unsigned long long)(unsigned)support[j] ^ 0x5851f42d4c957f2dull);
    const unsigned long long head =
        ((unsigned long long)kind << 56) ^ ((unsigned long long)(s1 - s0) << 32);
    return q_mix(q_mix(head) ^ set);
}

// Whether hyperedge h (of nr rows) of world w is static.
__device__ __forceinline__ bool q_hyper_static(const Args& a, const QArgs& q, int w, int h,
                                               int nr) {
    if (h >= nr) return q.flex_static != 0;
    const unsigned r = a.world_rowadr[w] + (unsigned)h;
    return q_row_static(q, a.row_type[r], r);
}

// Step 2: the guard with the awake mask, then the node solve. Returns 1 (block-uniform) when
// the quotient does not fit this step's static hyperedges; then `lab` holds garbage.
__device__ __forceinline__ int q_solve_masked(const Args& a, const QArgs& q, int w, unsigned slot,
                                              int nr, int nh, int* lab, int* cnt) {
    const int tid = threadIdx.x, bd = blockDim.x, ntree = a.ntree;
    const size_t sn = (size_t)slot * ntree;
    const int nnode = (int)q.nnode[slot];
    const int* tn = q.tree_node + sn;
    const int* adr = q.node_treeadr + (size_t)slot * (ntree + 1);
    // Accumulators in the maps' scratch (the maps clear it themselves): per node a count in
    // cnt[0, nnode), later its state, and a 64-bit hash sum from the first 8-byte boundary at or
    // after cnt + ntree (at most 2 * ntree + 1 more ints: cnt holds 6 * ntree).
    unsigned* state = (unsigned*)cnt;
    unsigned long long* sum = (unsigned long long*)(((size_t)(cnt + ntree) + 7) & ~(size_t)7);
    for (int n = tid; n < nnode; n += bd) {
        state[n] = 0;
        sum[n] = 0;
    }
    __syncthreads();
    int bad = 0;
    for (int h = tid; h < nh; h += bd) {
        if (!q_hyper_static(a, q, w, h, nr)) continue;
        const unsigned x = hyper_index(a, w, h, nr);
        const unsigned s0 = a.supadr[x], s1 = a.supadr[x + 1];
        if (s0 >= s1) continue;
        const int node = tn[a.support[s0]];
        int spans = 0;
        for (unsigned j = s0 + 1; j < s1; ++j) spans |= tn[a.support[j]] != node;
        if (spans) {
            bad = 1;
            continue;
        }
        const int kind = h < nr ? (int)a.row_type[a.world_rowadr[w] + h] : Q_ROWLESS_KIND;
        atomicAdd(&state[node], 1u);
        atomicAdd(&sum[node], q_row_hash(kind, a.support, s0, s1));
    }
    if (__syncthreads_or(bad)) return 1;
    // invalidation::signature::compare: present = expected, none present, or stale.
    for (int n = tid; n < nnode; n += bd) {
        const unsigned rows = state[n], want = q.node_rows[sn + n];
        unsigned s;
        if (rows == want && sum[n] == q.node_sum[sn + n]) s = want > 0 ? Q_ACTIVE : Q_IDLE;
        else if (rows == 0) s = Q_ASLEEP;
        else {
            bad = 1;
            s = Q_IDLE;
        }
        state[n] = s;
        lab[n] = s == Q_ACTIVE ? n : -1;
    }
    if (__syncthreads_or(bad)) return 1;
    // The nodes found asleep, as the masked twins' hint (q.asleep; quotient_warp.cu's
    // qw_hinted): a world solved here (left pending by its warp, or set aside) is then mapped as a
    // replayed one by a warp at its next masked step. A word's bits: slots of at most 32 nodes.
    if (tid < 32) {
        const unsigned m = __ballot_sync(FULL_MASK, tid < nnode && state[tid] == Q_ASLEEP);
        if (tid == 0 && nnode <= 32 && q.asleep[w] != m) q.asleep[w] = m;
    }
    for (int h = tid; h < nh; h += bd) {
        if (q_hyper_static(a, q, w, h, nr)) continue;
        const unsigned x = hyper_index(a, w, h, nr);
        const unsigned s0 = a.supadr[x], s1 = a.supadr[x + 1];
        if (s0 >= s1) continue;
        const int f = tn[a.support[s0]];
        for (unsigned j = s0; j < s1; ++j) {
            const int n = tn[a.support[j]];
            // A sleeping component's trees are not bound together this step.
            if (state[n] == Q_ASLEEP && adr[n + 1] - adr[n] > 1) {
                bad = 1;
                break;
            }
            activate(lab, n);
            if (j > s0) unite(lab, f, n);
        }
    }
    return __syncthreads_or(bad);
}

// q_solve_masked out of line, for quotient_few_kernel and the warp kernels' fallback (COLD).
__device__ __noinline__ int q_solve_masked_cold(const Args& a, const QArgs& q, int w,
                                                unsigned slot, int nr, int nh, int* lab,
                                                int* cnt) {
    return q_solve_masked(a, q, w, slot, nr, nh, lab, cnt);
}

// Where world w's hyperedges lie: its first row r0, the support entries of its rows (from
// rbase, rn of them), its first rowless hyperedge e0 and their entries (from ebase, en).
struct QSpans {
    unsigned r0, rbase, rn, e0, ebase, en;
};

__device__ __forceinline__ QSpans q_spans(const Args& a, int w, int nr, int nh) {
    QSpans s;
    s.r0 = a.world_rowadr[w];
    s.rbase = a.supadr[s.r0];
    s.rn = a.supadr[s.r0 + nr] - s.rbase;
    s.e0 = hyper_index(a, w, nr, nr);
    s.ebase = a.supadr[s.e0];
    s.en = nh > nr ? a.supadr[hyper_index(a, w, nh, nr)] - s.ebase : 0;
    return s;
}

// Whether world w's hyperedges fit the cache.
__device__ __forceinline__ bool q_cache_fits(const QArgs& q, int nr, int nh, const QSpans& sp) {
    return nr <= q.cap_rows && nh <= q.cap_hyper && sp.rn + sp.en <= (unsigned)q.cap_entries;
}

// Reuse: this thread's share of "world w's hyperedges differ from the cached step's" (row
// types, support offsets and entries; row and coupling ids do not affect any output), with
// the cache brought up to this step's hyperedges on the way: each element is compared and, if
// it differs, rewritten by the same thread, so an unchanged world writes nothing and a changed
// one needs no later copy. When the counts differ (every thread alike sees them) the
// hyperedges are copied without comparing; a world past the cache's capacity is not cached.
// The counts themselves are written after the verdict (q_cache_count), once every thread has
// read the old ones.
__device__ int q_check_cache(const Args& a, const QArgs& q, int w, int nr, int nh, int4 c,
                             const QSpans& sp) {
    const int tid = threadIdx.x, bd = blockDim.x;
    const auto [r0, rbase, rn, e0, ebase, en] = sp;
    if (!q_cache_fits(q, nr, nh, sp)) return 1;
    const bool same = c.x == nr && c.y == nh && (unsigned)c.z == rn && (unsigned)c.w == rn + en;
    unsigned char* ct = q.c_type + (size_t)w * q.cap_rows;
    unsigned* cadr = q.c_adr + (size_t)w * (q.cap_hyper + 1);
    int* cs = q.c_support + (size_t)w * q.cap_entries;
    int bad = !same;
    for (int r = tid; r < nr; r += bd) {
        const unsigned char t = a.row_type[r0 + r];
        const unsigned adr = a.supadr[r0 + r] - rbase;
        if (!same || t != ct[r] || adr != cadr[r]) {
            bad = 1;
            ct[r] = t;
            cadr[r] = adr;
        }
    }
    for (int e = tid; e < nh - nr; e += bd) {
        const unsigned adr = a.supadr[e0 + e] - ebase + rn;
        if (!same || adr != cadr[nr + e]) {
            bad = 1;
            cadr[nr + e] = adr;
        }
    }
    for (unsigned j = tid; j < rn + en; j += bd) {
        const int t = j < rn ? a.support[rbase + j] : a.support[ebase + (j - rn)];
        if (!same || t != cs[j]) {
            bad = 1;
            cs[j] = t;
        }
    }
    return bad;
}

// Reuse, after the verdict that world w changed (thread 0): its new counts, or "not cached".
__device__ __forceinline__ void q_cache_count(const QArgs& q, int w, int nr, int nh,
                                              const QSpans& sp) {
    reinterpret_cast<int4*>(q.c_count)[w] =
        q_cache_fits(q, nr, nh, sp) ? make_int4(nr, nh, (int)sp.rn, (int)(sp.rn + sp.en))
                                    : make_int4(-1, -1, -1, -1);
}

// Reuse: world w's row-level outputs from the cache (the row mirror the maps filled when the
// world was last solved), at this step's rows.
__device__ void q_restore(const Args& a, int w, int nr) {
    const unsigned r0 = a.world_rowadr[w];
    const int* co = row_mirror_of(a, w);
    const int m = a.mirror_rows;
    for (int k = threadIdx.x; k < nr; k += blockDim.x) {
        a.efc_island[r0 + k] = co[k];
        a.map_efc2iefc[r0 + k] = co[m + k];
        a.map_iefc2efc[r0 + k] = co[2 * m + k];
    }
}

// Partial reuse: whether world w's partition of trees this step is the partition of the
// cached step, whose tree_island is still in place (both steps able to have islands:
// world_discovers). It is when every tree is touched in both or in neither, each new
// component lies inside one old island (each touched tree has its component's smallest
// tree's old island), and there are as many components as old islands: then the map from
// components to old islands is onto, hence one-to-one, and the canonical numbering is the
// same. q_partition_tree is one tree's share (its new label `l`: -1 untouched, else the
// smallest tree of its component), with the old island kept in `isl` and the row counters
// cleared for q_row_maps; q_partition_note adds a warp's shares to s_part (= {0, 0} from the
// kernel's start); after a barrier q_partition_same reads the verdict (block-uniform).
__device__ __forceinline__ void q_partition_tree(const Args& a, size_t T, int t, int l, int* isl,
                                                 int* cnt, int* diff, int* roots) {
    const int o = a.tree_island[T + t];
    if ((l < 0) != (o < 0) || (l >= 0 && a.tree_island[T + l] != o)) *diff = 1;
    *roots += l == t;
    isl[t] = o;
    cnt[2 * a.ntree + t] = 0; // cnt_e, cnt_ne, cnt_nf
    cnt[3 * a.ntree + t] = 0;
    cnt[4 * a.ntree + t] = 0;
}

__device__ __forceinline__ void q_partition_note(int diff, int roots, int* s_part) {
    for (int o = 16; o > 0; o >>= 1) roots += __shfl_xor_sync(FULL_MASK, roots, o);
    const bool any = __any_sync(FULL_MASK, diff);
    if ((threadIdx.x & 31) == 0) {
        if (any) s_part[0] = 1;
        if (roots) atomicAdd(&s_part[1], roots);
    }
}

__device__ __forceinline__ bool q_partition_same(const Args& a, int w, const int* s_part) {
    return !s_part[0] && s_part[1] == a.nisland[w];
}

// Island o's tree and dof counts and its first tree's and first dof's places.
__device__ __forceinline__ void q_island_trees(const Args& a, size_t o, I3 count, I3 place) {
    a.island_ntree[o] = count.x;
    a.island_nv[o] = count.y;
    a.island_itreeadr[o] = place.x;
    a.island_idofadr[o] = place.y;
}

// Island o's row counts (e rows, ne equality and nf friction rows) and first row.
__device__ __forceinline__ void q_island_rows(const Args& a, size_t o, int e, int adr, int ne,
                                              int nf) {
    a.island_nefc[o] = e;
    a.island_ne[o] = ne;
    a.island_nf[o] = nf;
    a.island_iefcadr[o] = adr;
}

// The same for up to 32 islands (of world offset T), by one warp: each island's first row
// (an exclusive scan of cnt_e, which then holds it as the scatter's cursor). Returns the
// world's rows in islands.
__device__ __forceinline__ int q_island_rows_warp(const Args& a, size_t T, int nisland,
                                                  int* cnt_e, const int* cnt_ne,
                                                  const int* cnt_nf) {
    const int lane = threadIdx.x & 31;
    const int e = lane < nisland ? cnt_e[lane] : 0;
    const int inc = warp_inscan(e), adr = inc - e;
    if (lane < nisland) {
        q_island_rows(a, T + lane, e, adr, cnt_ne[lane], cnt_nf[lane]);
        cnt_e[lane] = adr;
    }
    return __shfl_sync(FULL_MASK, inc, 31);
}

// World w's per-island row outputs and row maps (nisland islands), from the row counts that
// row_islands left in cnt (cnt_e, cnt_ne, cnt_nf at 2, 3 and 4 * ntree), behind a barrier.
// Up to 32 islands one warp scans them (no barrier inside the scan).
__device__ void q_row_outputs(const Args& a, int w, int nr, int nisland, int* cnt, int* mirror) {
    __shared__ int s_rest;
    const int tid = threadIdx.x, bd = blockDim.x, ntree = a.ntree;
    int *cnt_e = cnt + 2 * ntree, *cnt_ne = cnt + 3 * ntree, *cnt_nf = cnt + 4 * ntree;
    const size_t T = (size_t)w * ntree;
    auto put = [&](int i, int e, int adr) {
        q_island_rows(a, T + i, e, adr, cnt_ne[i], cnt_nf[i]);
        cnt_e[i] = adr;
    };
    int rest = 0;
    if (nisland <= 32) {
        if (tid < 32) {
            const int tot = q_island_rows_warp(a, T, nisland, cnt_e, cnt_ne, cnt_nf);
            if (tid == 0) s_rest = tot;
        }
        __syncthreads();
        rest = s_rest;
    } else {
        int ph = 0;
        for (int base = 0; base < nisland; base += bd) {
            const int i = base + tid;
            const int e = i < nisland ? cnt_e[i] : 0;
            I3 tot;
            const int adr = rest + block_exscan3(I3{e, 0, 0}, &tot, ph).x;
            if (i < nisland) put(i, e, adr);
            rest += tot.x;
        }
        __syncthreads();
    }
    // The block scatter's table where cnt_nf and the maps' dofadr were (free after the scan).
    int* tab = cnt + 4 * ntree;
    const unsigned r0 = a.world_rowadr[w];
    if (block_scatter_pays(nisland, nr, 2 * ntree))
        row_scatter<true>(a, r0, nr, nisland, cnt_e, rest, mirror, tab);
    else if (tid < 32)
        row_scatter<false>(a, r0, nr, nisland, cnt_e, rest, mirror, tab);
}

// World w's row-level outputs when its trees' islands are known (`isl_of(tree)`; nisland of
// them) and its row counters cleared: the rows' islands and counts, then q_row_outputs. For
// partial reuse (the cached step's islands, q_partition_tree) and the node-level maps.
template <class IslandOf>
__device__ void q_row_maps(const Args& a, int w, int nr, int nisland, IslandOf isl_of, int* cnt) {
    const int ntree = a.ntree;
    int *cnt_e = cnt + 2 * ntree, *cnt_ne = cnt + 3 * ntree, *cnt_nf = cnt + 4 * ntree;
    int* mirror = nr <= a.mirror_rows ? row_mirror_of(a, w) : nullptr;
    row_islands(BlockGroup{}, a, a.world_rowadr[w], nr, isl_of, cnt_e, cnt_ne, cnt_nf, mirror);
    __syncthreads();
    q_row_outputs(a, w, nr, nisland, cnt, mirror);
}

// q_row_maps by the block's last warp alone, from its rows loaded before (one batch:
// row_batch), while the rest of the block writes the tree- and dof-level outputs
// (q_node_maps): for at most 32 islands and BLOCK_SCATTER_MIN rows, which one warp scans and
// scatters in the block's version too.
template <class IslandOf>
__device__ void q_row_maps_aside(const Args& a, int w, int nr, int nisland, IslandOf isl_of,
                                 int* cnt, const RowBatch& rows) {
    const int ntree = a.ntree;
    int *cnt_e = cnt + 2 * ntree, *cnt_ne = cnt + 3 * ntree, *cnt_nf = cnt + 4 * ntree;
    int* mirror = nr <= a.mirror_rows ? row_mirror_of(a, w) : nullptr;
    const unsigned r0 = a.world_rowadr[w];
    row_batch_islands(WarpGroup{}, a, nr, 0, rows, isl_of, cnt_e, cnt_ne, cnt_nf, mirror, r0);
    __syncwarp();
    const int rest = q_island_rows_warp(a, (size_t)w * ntree, nisland, cnt_e, cnt_ne, cnt_nf);
    __syncwarp();
    row_scatter<false, true>(a, r0, nr, nisland, cnt_e, rest, mirror, nullptr);
}

// ---- node-level maps: every output of a world of few nodes -----------------------------------
//
// The tree-level maps (common.cu) rank islands, count and scatter over trees and dofs, a dozen
// phases each behind a barrier: that is most of a changed world's latency (benches/results/
// gpu-h200-notes.md, sessions 10-13). Over a quotient of at most 32 nodes nearly all of it is
// a function of the nodes, which one warp handles without block barriers: the islands are the
// root nodes (node ids ascend with their smallest tree, so ranking roots by id is the
// canonical numbering), and each island's (and the untouched trees') tree and dof counts are
// sums over its nodes. A tree's place among its group's trees (its island's, or the untouched
// ones') is its place in its own node plus the trees of the group's other nodes below it:
// nodes whose smallest tree is above it have none; a one-tree node below it has its tree (a
// popcount over node bits, and a prefix of their dofs); only a node of several trees below it
// needs a binary search in its tree list. So one pass over trees writes every tree- and
// dof-level output, with no scatter and no scan over trees.
// The partition check becomes one over nodes: each world keeps the node -> island map it was
// last mapped with and its slot's contraction number (q.c_node); the same map over the same
// contraction means the same tree- and dof-level outputs, still in place (reuse on only), so
// only the rows are mapped. Any other way of solving the world resets that key.
// Needs every tree to own a dof block in tree order (each tree has at least one dof: Model),
// so that a tree's idofs follow its place and an island's first dof is its smallest tree's.
#define Q_HEAD (Q_NODE_MAX + 2)
#define Q_CACHE_NODE (1 + Q_NODE_MAX / 8)

// What the pass over trees reads: per node and per group (the islands, then the untouched
// trees: at most Q_NODE_MAX + 1 groups).
struct QNodes {
    int isl[Q_NODE_MAX];             // node -> island, -1 untouched
    int mintree[Q_NODE_MAX];         // node -> its smallest tree (ascending with the node id)
    int snv[Q_NODE_MAX];             // one-tree node -> dofs of its group's one-tree nodes up
                                     // to it (inclusive)
    unsigned single[Q_NODE_MAX + 1]; // per group: its one-tree nodes
    unsigned multi[Q_NODE_MAX + 1];  // per group: its nodes of several trees
    int tree0[Q_NODE_MAX + 1];       // per group: its first place in map_itree2tree
    int dof0[Q_NODE_MAX + 1];        // per group: its first place in map_idof2dof
    int nisland;
    int same;                        // the partition is the cached step's
    int pad_to;                      // island places to fill with -1: [nisland, pad_to)
};

// The contraction number of a slot's node head (its first record, two ints).
__device__ __forceinline__ unsigned long long q_contraction(const int4* head) {
    const int4 h = LDG(head);
    return (unsigned long long)(unsigned)h.x | ((unsigned long long)(unsigned)h.y << 32);
}

// Elements of the ascending v[lo, hi) below x.
template <class V>
__device__ __forceinline__ int q_below(V v, int lo, int hi, int x) {
    const int from = lo;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (v(mid) < x) lo = mid + 1;
        else hi = mid;
    }
    return lo - from;
}

// Every output of world w (nr rows) over its slot's nnode <= Q_NODE_MAX nodes, given the
// node solve in lab[0, nnode) (min-root, not jumped; -1 = inactive) behind a barrier, or
// written by warp 0 itself (q_bits_labels), the one warp that reads it here.
// ASIDE: the rows may go to an idle warp (below). Returns whether the partition was the
// cached step's (only the rows were mapped).
template <bool ASIDE>
__device__ bool q_node_maps(const Args& a, const QArgs& q, int w, unsigned slot, int nr,
                            int nnode, const int* lab, int* cnt, QNodes& s) {
    const int tid = threadIdx.x, bd = blockDim.x, ntree = a.ntree, nv = a.nv;
    const size_t sn = (size_t)slot * ntree, sa = (size_t)slot * (ntree + 1);
    const size_t T = (size_t)w * ntree, D = (size_t)w * nv;
    const int4* head = q.node_head + (size_t)slot * Q_HEAD;
    unsigned long long* cached = q.c_node + (size_t)w * Q_CACHE_NODE;
    // The slot's tree -> node for the passes over trees and rows; the row counters from
    // 2 * ntree on (q_row_outputs).
    int* tnode = cnt;
    int *cnt_e = cnt + 2 * ntree, *cnt_ne = cnt + 3 * ntree, *cnt_nf = cnt + 4 * ntree;
    for (int t = tid; t < ntree; t += bd) tnode[t] = LDG(q.tree_node + sn + t);
    if (tid < 32) {
        const int n = tid;
        const bool in = n < nnode;
        const unsigned bit = 1u << n;
        const int4 zero = make_int4(0, 0, 0, 0);
        const int4 h0 = in ? LDG(head + 1 + n) : zero, h1 = in ? LDG(head + 2 + n) : zero;
        const int a0 = h0.x, a1 = h1.x, p0 = h0.y, p1 = h1.y, mintree = h0.z;
        const unsigned long long gen = q_contraction(head);
        const unsigned long long key = cached[0];
        const int old = reinterpret_cast<const signed char*>(cached + 1)[n];
        const int old_nisland = a.nisland[w];
        // The node's root (lab[x] <= x along a chain: min-root unions), its island by rank.
        // MuJoCo makes no islands without rows (world_discovers): then every node is untouched.
        int root = in && world_discovers(a, nr) ? lab[n] : -1;
        if (root >= 0)
            while (lab[root] != root) root = lab[root];
        const unsigned roots = __ballot_sync(FULL_MASK, in && root == n);
        const int nisland = __popc(roots);
        const int isl = root < 0 ? -1 : __popc(roots & ((1u << root) - 1u));
        const int g = isl < 0 ? nisland : isl;
        const bool single = in && a1 - a0 == 1, multi = in && a1 - a0 > 1;
        s.single[n] = 0;
        s.multi[n] = 0;
        s.tree0[n] = 0;
        s.dof0[n] = 0;
        s.snv[n] = p1 - p0;
        if (n == 0) {
            s.single[Q_NODE_MAX] = 0;
            s.multi[Q_NODE_MAX] = 0;
            s.tree0[Q_NODE_MAX] = 0;
            s.dof0[Q_NODE_MAX] = 0;
            s.nisland = nisland;
        }
        if (in) {
            s.isl[n] = isl;
            s.mintree[n] = mintree;
        }
        if (n < nisland) {
            cnt_e[n] = 0;
            cnt_ne[n] = 0;
            cnt_nf[n] = 0;
        }
        // Same map, same contraction: the tree- and dof-level outputs are in place.
        const bool same = q.reuse_nodes && key == gen && !__any_sync(FULL_MASK, in && old != isl);
        __syncwarp();
        if (in) {
            atomicOr(single ? &s.single[g] : &s.multi[g], bit);
            atomicAdd(&s.tree0[g], a1 - a0);
            atomicAdd(&s.dof0[g], p1 - p0);
        }
        // The dofs of the group's one-tree nodes up to this one.
        const unsigned peers = __match_any_sync(FULL_MASK, single ? g : -1 - n);
        int snv = 0;
        if (single)
            for (unsigned m = peers & (bit | (bit - 1u)); m; m &= m - 1) snv += s.snv[__ffs(m) - 1];
        __syncwarp();
        s.snv[n] = snv;
        // Each group's first places (the untouched trees' after every island's).
        const I3 c = n < nisland ? I3{s.tree0[n], s.dof0[n], 0} : I3{0, 0, 0};
        I3 tot;
        const I3 ex = warp_exscan3(c, &tot);
        __syncwarp();
        if (n < nisland) {
            s.tree0[n] = ex.x;
            s.dof0[n] = ex.y;
        }
        if (n == nisland) {
            s.tree0[n] = tot.x;
            s.dof0[n] = tot.y;
        }
        if (n == 0) s.same = same;
        if (!same) {
            if (n < nisland) q_island_trees(a, T + n, c, ex);
            if (n == 0) {
                a.nisland[w] = nisland;
                a.nidof[w] = tot.y;
                cached[0] = gen;
                // Places past the islands hold -1 after every mapping of this kernel, so
                // after a node-level one (a key) only those of its islands that are gone need
                // it; without a key (none yet, or tree-level maps, which fill every place) all.
                s.pad_to = key != 0 ? max(old_nisland, nisland) : ntree;
            }
            reinterpret_cast<signed char*>(cached + 1)[n] = (signed char)(in ? isl : -1);
        }
    }
    // The row maps need the nodes' islands, not the pass over trees: where the pass leaves the
    // block's last warp idle, the rows are few (one warp scatters them anyway) and the world
    // has its multiprocessor to itself (ASIDE), that warp maps the rows meanwhile, behind its own
    // barriers, instead of the block after the pass; it loads them (one batch) while warp 0
    // works out the nodes. (Where worlds share multiprocessors, one warp's rows cost the
    // 1,024-world shapes 0.1-0.8 µs: benches/results/gpu-h200-notes.md.)
    static_assert(BLOCK_SCATTER_MIN <= 32 * ROW_BATCH, "the aside warp's rows are one batch");
    const bool rows_aside = ASIDE && nr <= BLOCK_SCATTER_MIN && ntree + 32 <= bd;
    const int tb = rows_aside ? bd - 32 : bd; // the pass's threads
    RowBatch rows;
    if (rows_aside && tid >= tb) rows = row_batch(WarpGroup{}, a, a.world_rowadr[w], nr, 0);
    __syncthreads();
    Q_MARK(4);
    const int nisland = s.nisland;
    const bool same = s.same;
    auto isl_of = [&](int t) { return s.isl[tnode[t]]; };
    if (rows_aside && tid >= tb) {
        q_row_maps_aside(a, w, nr, nisland, isl_of, cnt, rows);
        return same;
    }
    for (int t = tid; t < ntree && !same; t += tb) {
        const int n = tnode[t];
        const int isl = s.isl[n];
        const int g = isl < 0 ? nisland : isl;
        const int2 own = LDG(q.tree_place + sn + t);
        // The dof block's loads now, with the place's: issued after the place's stores, they
        // waited behind them (diagnostic marks, session 20: 1,404 cycles for thread 0's dofs).
        const int d0 = LDG(a.tree_dofadr + t), dn = LDG(a.tree_dofnum + t);
        int place = s.tree0[g] + own.x, first = s.dof0[g] + own.y;
        // Nodes with their smallest tree below t: ids [0, k).
        const int k = q_below([&](int i) { return s.mintree[i]; }, 0, nnode, t);
        const unsigned below = k == 32 ? FULL_MASK : (1u << k) - 1u;
        const unsigned single = s.single[g] & below;
        place += __popc(single);
        if (single) first += s.snv[31 - __clz(single)];
        for (unsigned m = s.multi[g] & below & ~(1u << n); m; m &= m - 1) {
            const int j = __ffs(m) - 1;
            const int4 hj = LDG(head + 1 + j);
            const int lo = hj.x, hi = LDG(head + 2 + j).x;
            const int c = q_below([&](int i) { return LDG(q.node_trees + sn + i); }, lo, hi, t);
            place += c;
            first += (int)LDG(q.node_dofpre + sa + lo + c) - hj.y;
        }
        a.tree_island[T + t] = isl;
        a.map_itree2tree[T + place] = t;
        // An island's first dof is its first tree's.
        if (isl >= 0 && place == s.tree0[g]) a.island_dofadr[T + isl] = d0;
        for (int j = 0; j < dn; ++j) {
            a.dof_island[D + d0 + j] = isl;
            a.map_dof2idof[D + d0 + j] = first + j;
            a.map_idof2dof[D + first + j] = d0 + j;
        }
    }
    for (int i = nisland + tid; i < s.pad_to && !same; i += tb) no_island(a, T + i);
    Q_MARK(5);
    if (!rows_aside) q_row_maps(a, w, nr, nisland, isl_of, cnt);
    return same;
}

// The tree-level path of world w (flag: 0 replayed, 1 solved directly, 2 masked): a slot of
// more than Q_NODE_MAX nodes, a world without a slot, or a stale one.
__device__ __forceinline__ void q_tree_level(const Args& a, const QArgs& q, int w, unsigned slot,
                                             int nr, int nh, int nnode, int flag, bool bits,
                                             int cached_rows, int* lab, int* cnt, int* s_part) {
    const int ntree = a.ntree, tid = threadIdx.x, bd = blockDim.x;
    // The tree-level maps below leave no node-level key.
    if (tid == 0) q.c_node[(size_t)w * Q_CACHE_NODE] = 0;
    // Partial reuse is tried when a step is cached (rows -1: none) and it could have islands,
    // and so can this one.
    const bool check =
        cached_rows >= 0 && world_discovers(a, nr) && world_discovers(a, cached_rows);
    const size_t T = (size_t)w * ntree;
    int* isl = cnt;
    int diff = 0, roots = 0;
    if (flag != 1) {
        const size_t sn = (size_t)slot * ntree;
        const int* tn = q.tree_node + sn;
        if (flag == 0 && bits) __syncthreads();  // warp 0's labels
        jump_all(lab, nnode);
        // Pull back through the map scratch, then into lab (the maps clear cnt themselves);
        // the partition check below compares the labels with the cached step's.
        for (int t = tid; t < ntree; t += bd) {
            const int r = lab[tn[t]];
            cnt[t] = r < 0 ? -1 : q.node_mintree[sn + r];
        }
        __syncthreads();
        Q_MARK(6);
        // The thread that copies tree t's label also checks it below: no barrier between.
        for (int t = tid; t < ntree; t += bd) lab[t] = cnt[t];
    } else {
        for (int t = tid; t < ntree; t += bd) lab[t] = -1;
        __syncthreads();
        for (int h = tid; h < nh; h += bd) {
            const unsigned x = hyper_index(a, w, h, nr);
            union_support(lab, a.support, a.supadr[x], a.supadr[x + 1]);
        }
        __syncthreads();
        jump_all(lab, ntree);
        Q_MARK(6);
    }
    if (check) {
        for (int base = 0; base < ntree; base += bd) {
            const int t = base + tid;
            if (t < ntree) q_partition_tree(a, T, t, lab[t], isl, cnt, &diff, &roots);
            q_partition_note(diff, roots, s_part);
            diff = roots = 0;
        }
    }
    __syncthreads();
    Q_MARK(7);
    const bool same = check && q_partition_same(a, w, s_part);
    if (tid == 0) {
        q.stale[w] = flag | (same ? 4 : 0);
        a.rounds[w] = 0;
    }
    Q_MARK(8);
    if (same)
        q_row_maps(a, w, nr, a.nisland[w], [&](int t) { return isl[t]; }, cnt);
    else world_maps_mirrored(a, w, lab, cnt);
}

// q_tree_level out of line, for quotient_few_kernel and the warp kernels' fallback (COLD).
__device__ __noinline__ void q_tree_level_cold(const Args& a, const QArgs& q, int w,
                                               unsigned slot, int nr, int nh, int nnode, int flag,
                                               bool bits, int cached_rows, int* lab, int* cnt,
                                               int* s_part) {
    q_tree_level(a, q, w, slot, nr, nh, nnode, flag, bits, cached_rows, lab, cnt, s_part);
}

// World w by the whole block (one world per block, or a world the warp kernel left pending:
// quotient_warp.cu). COLD: the masked solve and the tree-level path out of line, as
// quotient_few_kernel takes them (quotient_block.cu) and the warp kernels for the worlds their
// warps leave pending; inline in the warp kernels (session 84, an H100) mechanism-90% was 0.1
// and 0.6 µs slower at 2,048 and 4,096 worlds, within 0.1 at 8,192, on hammock and on
// humanoid-50%. ASIDE: quotient_aside_kernel's body.
template <bool COLD, bool ASIDE = false>
__device__ __forceinline__ void q_world(const Args& a, const QArgs& q, int w) {
    extern __shared__ int smem[];
    __shared__ int s_span[2];
    __shared__ int s_part[2];
    __shared__ QNodes s_nodes;
    __shared__ QBits s_bits;
    if (w >= a.nworld) return;
    Q_START_BY(threadIdx.x == 0);
    int *lab, *cnt;
    world_scratch(a, w, smem, &lab, &cnt);
    const int tid = threadIdx.x;
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    const unsigned slot = q.world_slot[w];
    if (tid == 0) {
        s_span[0] = nr;
        s_span[1] = -1;
        s_part[0] = 0;
        s_part[1] = 0;
    }
    if (tid <= Q_NODE_MAX) reinterpret_cast<unsigned*>(&s_bits)[tid] = 0;
    __syncthreads();
    Q_MARK(1);
    // The slot's counts, loaded now for the phases after the next barrier.
    const bool has_slot = slot != 0xffffffffu;
    const int nstatic_rows = has_slot ? (int)q.nstatic_rows[slot] : 0;
    const int nstatic = has_slot ? (int)q.nstatic[slot] : 0;
    const int nnode = has_slot ? (int)q.nnode[slot] : 0;
    // The replay's node solve over bits (then labelled by warp 0, below).
    const bool bits = nnode <= Q_NODE_MAX;
    // Without reuse, a slot with no static rows and a union over bits needs no barrier before
    // the replay: any static row is then a mismatch (no span to reduce), and the bit-set union
    // does not read lab (warp 0 does, after the replay's barrier). The span's loads still go
    // first: only its reduction waits for the slot's counts.
    const bool span_in_replay = !q.reuse && has_slot && nstatic_rows == 0 && bits;
    const bool saw_static =
        has_slot && q_span(a, q, w, slot, nr, s_span, lab, !span_in_replay);
    // The cached step's counts (rows -1: nothing cached), read before this step replaces them.
    const int4 cached = q.reuse ? reinterpret_cast<const int4*>(q.c_count)[w] : int4{-1, 0, 0, 0};
    const unsigned placed = q.reuse ? q.c_rowadr[w] : 0xffffffffu;
    const QSpans sp = q.reuse ? q_spans(a, w, nr, nh) : QSpans{};
    // One barrier for the span and the reuse verdict.
    if (!span_in_replay &&
        !__syncthreads_or(q.reuse ? q_check_cache(a, q, w, nr, nh, cached, sp) : 1)) {
        Q_MARK(2);
        const bool moved = placed != sp.r0;
        if (moved) q_restore(a, w, nr);
        if (tid == 0) {
            if (moved) q.c_rowadr[w] = sp.r0;
            q.stale[w] = moved ? 3 : 3 | 16;
            a.rounds[w] = 0;
        }
        Q_END();
        return;
    }
    Q_MARK(2);
    // Every path below writes the world's row-level outputs from its first row on.
    if (q.reuse && tid == 0) {
        q_cache_count(q, w, nr, nh, sp);
        if (placed != sp.r0) q.c_rowadr[w] = sp.r0;
    }
    const int cached_rows = cached.x;
    int flag = 1;
    if (has_slot) {
        const int bad =
            q_replay(a, q, w, slot, nr, nh, nstatic_rows, nstatic, s_span, lab, bits, s_bits) |
            (span_in_replay && saw_static);
        const int replay_bad = __syncthreads_or(bad);
        Q_MARK(3);
        if (!replay_bad) {
            flag = 0;
            if (bits && tid < 32) q_bits_labels(s_bits, nnode, lab);
        } else if (!(COLD ? q_solve_masked_cold(a, q, w, slot, nr, nh, lab, cnt)
                         : q_solve_masked(a, q, w, slot, nr, nh, lab, cnt))) {
            flag = 2;
        }
    }
    // A world of few nodes: every output from the nodes (no tree labels, no partition check).
    if (flag != 1 && q.node_maps && nnode <= Q_NODE_MAX) {
        const bool same = q_node_maps<ASIDE>(a, q, w, slot, nr, nnode, lab, cnt, s_nodes);
        if (tid == 0) {
            q.stale[w] = flag | 8 | (same ? 4 : 0);
            a.rounds[w] = 0;
        }
        Q_END();
        return;
    }
    if constexpr (COLD)
        q_tree_level_cold(a, q, w, slot, nr, nh, nnode, flag, bits, cached_rows, lab, cnt, s_part);
    else
        q_tree_level(a, q, w, slot, nr, nh, nnode, flag, bits, cached_rows, lab, cnt, s_part);
    Q_END();
}
