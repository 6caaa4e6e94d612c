// `quotient_warp_kernel`: quotient.cu's replay with one warp per world, for batches of many
// worlds whose every slot has at most Q_NODE_MAX nodes (src/gpu/quotient/ decides). It has
// no reuse check of hyperedges, only q_node_maps' partition check (reuse on): a world whose
// node -> island map is the one its outputs were last mapped with over the same contraction
// maps only its rows. Compiled after common.cu and quotient.cu, as a program of its own (the
// block kernels, quotient_block.cu, are another), which only a solver whose batches may take a
// warp a world loads.
//
// Why: past a wave of worlds the block-per-world kernel is bound by neither bytes nor issue
// slots (benches/results/logs/ncu-2026-12-01-session26-8192.md: 16 % of DRAM bandwidth, 46 %
// of issue slots at 8,192 worlds of mechanism-90%): its phases wait on each other through block
// barriers, and its block-wide maps are built for worlds of any size. A replayed world of few
// nodes needs none of that. One warp does all of it without a block barrier:
//  1. the static block starts at the first static row (taken as row 0 where the policy allows
//     and the comparison proves it: `at0`, in qw_world); it must be the slot's stream
//     (q_static_differs, as the block kernel), compared here or, by each block's last warp,
//     between steps 4 and 5 (the late guard, below);
//  2. each dynamic hyperedge (and no row after the block may be static) as the set of its
//     nodes; those joining two or more nodes are broadcast (one shuffle each, once for a run
//     of equal sets: a contact's rows) into each node's neighbour set, lane n holding node
//     n's; the closure (Warshall's algorithm, one shuffle per node) gives each node its
//     component, whose smallest node is its root (node ids ascend with their smallest tree,
//     so ranking roots by id is the canonical numbering);
//  3. unless the partition is the one the outputs in place were mapped with (reuse on), per
//     island (lane) its trees and dofs as sums over its nodes; its places by a warp scan;
//  4. then trees, in ascending order within their island: where the slot's trees form at most
//     QW_RUNS runs of one node (its run table, host-made), a run a lane, each run's trees and
//     dofs one block of places after its island's runs before it; else ranked by warp matches
//     (warp_scatter), their dofs' places by one scan over the trees in island order; then
//     dofs in dof order; runs of 32 trees or more on average (cloth-like slots) run by run, a
//     tree and its dofs a lane, with no per-element table;
//  5. rows: per island its rows by kind, the static ones from its nodes' counts (the slot's
//     node_efc) and the dynamic ones one by one; its row outputs and first place by a scan;
//     then, with at most QW_RUNS runs of static rows, the dynamic rows by a scatter and each
//     run of static rows one block of places, as the trees (long runs run by run); else one
//     scatter over every row, a static row's island from the slot's row_node. Either way no
//     load of the world's static rows: a dynamic row's island as written when counted.
// Per-warp scratch in dynamic shared memory: 3 * ntree ints (the host launches it for models
// of at most 512 trees: WARP_TREES_MAX). A world that does not replay (no slot, static rows
// changed, a node asleep) is left pending; once every warp of the block is done, the whole
// block solves its pending worlds one by one with the block kernel's path (q_world), which
// flags them as it always does. Nothing else differs: the same outputs, flags (0 | 8:
// replayed, node-level maps, | 4: rows only) and node-level cache key. The masked twins
// (MASK, below) solve a masked world in its warp instead (flag 2 | 8 | 32).
// The pair kernels (quotient_pair_*) give each world a second warp that runs step 1's
// comparison (qw_guard) while the first maps the world, where every world's two warps are
// resident at once (the host's rule, src/gpu/quotient/: from more worlds than multiprocessors to
// 16 worlds a multiprocessor on the H200, worlds of at most 1,024 rows). Below a wave a world's
// step is its warp's chain of dependent loads, and the guard's are a long part of it; a world
// its guard warp finds changed is solved by its block over what the first warp wrote, as after
// the late guard (below). Measured against one warp a world (session 43, four runs a build) at
// 1,024 and 2,048 worlds: mechanism-90% -1.38 and -1.30 µs, hammock -1.45 and -1.20,
// humanoid-50% -0.62 and -0.50; against a block a world at 256 and 512: mechanism-90% -3.9 and
// -3.6, hammock -4.4 and -5.1, cloth-99% -5.3 and -11.6.
// Measured on the H200 (each choice's A/B, and what was tried and dropped: sessions 27-39 of
// benches/results/gpu-h200-notes.md): a warp a world took 8,192 worlds of mechanism-90% from
// 70.2 µs a step (a block a world) to 47.8 (session 27); at 1,024 worlds a lone warp's world
// can take longer than a block's, hence the host's rule, past seven worlds a multiprocessor
// (session 29). Of mechanism-90%'s 17.1 µs at 4,096 worlds (session 35), the guard took
// 1.4-1.9, step 1 about 0.5, step 4's per-element loops about 1.0 and step 5's static rows
// about 2.0. Loads issued earlier, rows staged in shared memory (by lanes or by bulk copies),
// L1 and L2 prefetch, bigger blocks and tables copied in by cp.async were all slower or even:
// at 64 registers a thread, with every world's warp resident, whatever holds a value longer
// spills or moves the register allocation against the step. Half a warp a world, two worlds a
// warp, for slots of at most 16 nodes (session 48: logs/h200-2026-12-03-session48-calls.md, the
// code in its patch) was slower at 4,096 worlds, one wave either way, by 5-6 µs on
// mechanism-90%, hammock and cloth-99%, and at 8,192, where it is one wave against two, by 4.5-12:
// a warp then runs both worlds' loops over trees, dofs and rows, each at 16 lanes, which cost
// more than the fixed work the two worlds share. The maps' outputs stored evict-first (__stcs;
// session 88, on an H100) took 14 % off hammock at 4,096 worlds, whose replays then kept their
// rows in L2, but cost mechanism-90% at 4,096 worlds, cloth-99% and hammock at 8,192 0.35-1.2 µs:
// not taken here. The full rebuilds gain more from it and take it (common.cu, put_out). Past a
// wave, each block's first warp asking L2 (bulk prefetch) for the rows of the block a wave later
// (session 90, on an H100: logs/h100-2026-12-06-session90-calls.md, patches beside it) made
// mechanism-90% at 8,192 worlds 1.2 µs slower, hammock 1.4, mechanism-90% at 16,384 2.6.

#define QW_WARPS 4
// The late guard: the last warp of each block runs step 1's comparison after its world's tree and
// dof maps (step 4), before its rows, instead of first. A comparison that fails then leaves the
// world pending like any other, and the block solves it (q_world) over what the warp wrote: the
// tree-level path (its static rows differ) writes every output again, and a masked replay with
// reuse on keeps only tree- and dof-level outputs that the same node -> island map gives. Why: a
// multiprocessor's warps start together and run the same phases at once, the guard's loads then the
// maps' stores; one warp in four out of step spreads the load on its pipes. Measured at 4,096
// worlds (session 42, three calls, four runs a build each): mechanism-90% -0.45, -0.62 and -0.62
// µs, hammock -0.40, -0.25 and -0.50, cloth-99% -2.10, -2.23 and -1.95, humanoid-50% within 0.1,
// with L2 warm; about as good with L2 cold or the device busy. At 8,192 worlds (two waves) no
// change. Late guards in one warp of two, three of four, one block of two or of four, or one warp
// of eight gained less or lost. Session 42 put it after step 5; there it made its warp the block's
// last to finish (at 4,096 worlds of mechanism-90% that warp's work took 24,200 cycles against
// 21,000 for the other three, and a build without it took 0.63 µs less a step: session 85's calls 3
// and 5 on an H100, benches/results/logs/h100-2026-12-06-session85-calls.md). Before step 5 instead
// (its calls 7 and 8, µs a step): mechanism-90% -0.25 and -0.22 at 4,096 worlds, -1.30 and -1.03 at
// 8,192; hammock -0.30 and -0.38 at 4,096, -1.40 at 8,192; cloth-99% +0.30 and +0.35; humanoid-50%
// +0.20 and +0.15; mechanism-90%'s step sequences faster in all eight cells (one run each). After
// step 2 (before the components) or before step 3 it was slower on four shapes of five.
// Lent to the block's other three warps instead (a third of the comparison each, after or before
// their own worlds, where the block starts at row 0) it was slower on every shape: session 86 on
// an H100 by 1.60-4.35 µs (after; 0.80-6.10 with its variants), session 92 on an H200 (after their
// worlds, four runs a build, benches/results/logs/session92-lent-guard.patch) mechanism-90% +0.98
// at 4,096 worlds and +1.70 at 8,192, hammock +1.25 and +2.88, cloth-99% +3.15.
// Phase marks (ARCHIPELAGO_Q_TRACE: quotient.cu's Q_MARK_BY) by lane 0 of a world's warp; their
// meaning in the warp kernels: src/gpu/phase_trace.rs.
#define QW_MARK(i) Q_MARK_BY((threadIdx.x & 31) == 0, i)
#define QW_START() Q_START_BY((threadIdx.x & 31) == 0)
// Runs per slot at most for the warp kernel's run maps (RUNS_MAX in
// src/gpu/quotient/node_tables.rs).
#define QW_RUNS 32

// One warp's per-world tables in static shared memory: node -> island, and per group (the
// islands, then the untouched trees) its trees, dofs and first tree place; the row counters.
struct QWarp {
    int isl[Q_NODE_MAX];
    int ntree[Q_NODE_MAX + 1];
    int nv[Q_NODE_MAX + 1];
    int cursor[Q_NODE_MAX + 1];
    int cnt_e[Q_NODE_MAX];
    int cnt_ne[Q_NODE_MAX];
    int cnt_nf[Q_NODE_MAX];
    // Per run (of trees, then of static rows): its island, its first element's place less
    // its first element, its first dof's place less its first dof (trees); its weights.
    int run_isl[QW_RUNS];
    int run_place[QW_RUNS];
    int run_dof[QW_RUNS];
    int2 run_w[QW_RUNS];
};

// A masked world's guard (MASK): per node the count and hash sum of its static hyperedges.
struct QMask {
    unsigned cnt[Q_NODE_MAX];
    unsigned long long sum[Q_NODE_MAX];
};

// A slot's runs (q.runs, q.run_bytes per slot: run_bytes in src/gpu/quotient/node_tables.rs):
// consecutive elements of one node among its static rows and among its trees. The counts of runs
// of rows and of trees (more than QW_RUNS: the warp scatters them one by one); per run of rows
// {first row, row count << 5 | node} from QR_ROWS; per run of trees {first tree, tree count, first
// dof, dof count << 5 | node} from QR_TREES; then per tree (rounded up to 4 bytes) and per static
// row its run, a byte each, from QR_BYTES.
#define QR_ROWS 16
#define QR_TREES (QR_ROWS + 8 * QW_RUNS)
#define QR_BYTES (QR_TREES + 16 * QW_RUNS)

// Per lane (a run), the sums of the weights w (left by every lane before a __syncwarp) over
// the lanes of its group (peers, warp_peers) below it: a loop over those lanes only (most
// runs have few or none).
__device__ __forceinline__ int2 qw_group_below(unsigned peers, const int2* w) {
    int2 r = make_int2(0, 0);
    for (unsigned m = peers & ((1u << (threadIdx.x & 31)) - 1u); m; m &= m - 1) {
        const int2 x = w[__ffs(m) - 1];
        r.x += x.x;
        r.y += x.y;
    }
    return r;
}

// Step 1's start: world w's first static row (nr without one), by one warp.
__device__ __forceinline__ int qw_static_start(const QArgs& q, const unsigned char* wtype,
                                               unsigned row0, int nr) {
    const int lane = threadIdx.x & 31;
    int start = nr;
    for (int base = 0; base < nr && start == nr; base += 32) {
        const int r = base + lane;
        const bool st = r < nr && q_row_static(q, LDG(wtype + r), row0 + r);
        const unsigned m = __ballot_sync(FULL_MASK, st);
        if (m) start = base + __ffs(m) - 1;
    }
    return start;
}

// Whether a world's static block is taken to start at row 0 without looking (`at0`, qw_world),
// for a world of k static rows in its slot and nr rows: only where the policy puts no dynamic
// row before the static ones in MuJoCo's row order (equalities, then friction; none static by
// id), so that a world that replays its stream starts it at row 0.
// (A macro: as a function it moved the plain warp kernel's instructions, 9,168 -> 9,176.)
#define QW_AT0(q, k, nr) \
    ((k) > 0 && (nr) >= (k) && !(q).eq_ids && ((q).eq_static || !(q).friction_static))

// The span of a slot's static rows from its first present run of rows to its last, a lane a
// run (this lane's: rows [x, x + n), present or not); [k, 0) where none is present (every
// static row asleep: no pass over rows all gone).
__device__ __forceinline__ int2 qw_present_span(bool present, unsigned x, unsigned n,
                                                unsigned k) {
    return make_int2((int)__reduce_min_sync(FULL_MASK, present ? x : k),
                     (int)__reduce_max_sync(FULL_MASK, present ? x + n : 0u));
}

// The masked twins' hint (MASK): whether world w's static rows are exactly its slot's stream
// without the runs of the nodes in `hint`, those its warp found asleep at its last masked step
// (MuJoCo's sleeping islands lose their rows whole, in place, so a world that stays asleep
// repeats it). Then kk is its static rows; the world is mapped as a replayed one, the asleep
// nodes' runs left out, instead of walking every row as dynamic. The comparison is
// q_static_differs' over the present runs (a lane a run of the slot's row runs, at most
// QW_RUNS: the rows and support entries gone before it), so a wrong hint costs the comparison
// only. Scratch: s.run_isl (gone), s.run_place (rows gone before), s.run_dof (entries).
template <bool MASK>
__device__ bool qw_hinted(const Args& a, const QArgs& q, unsigned slot, unsigned hint,
                          unsigned row0, int nr, int start, int k, int& kk, QWarp& s) {
    const int lane = threadIdx.x & 31;
    const unsigned char* runs = q.runs + (size_t)slot * q.run_bytes;
    const unsigned nrun = LDG(reinterpret_cast<const unsigned*>(runs));
    if (nrun > QW_RUNS) return false;
    const unsigned* sadr = q.stream_adr + (size_t)slot * (q.max_static + 1);
    const bool rin = lane < (int)nrun;
    const uint2 rrun =
        rin ? LDG(reinterpret_cast<const uint2*>(runs + QR_ROWS) + lane) : make_uint2(0, 0);
    const bool gone = rin && (hint >> (rrun.y & 31u) & 1u);
    const int n = (int)(rrun.y >> 5);
    const int rows_gone = gone ? n : 0;
    const int ents_gone = gone ? (int)(LDG(sadr + rrun.x + n) - LDG(sadr + rrun.x)) : 0;
    const int ri = warp_inscan(rows_gone), ei = warp_inscan(ents_gone);
    const int rm = __shfl_sync(FULL_MASK, ri, 31), em = __shfl_sync(FULL_MASK, ei, 31);
    s.run_isl[lane] = gone;
    s.run_place[lane] = ri - rows_gone;
    s.run_dof[lane] = ei - ents_gone;
    __syncwarp();
    kk = k - rm;
    if (nr - start < kk) return false;
    const unsigned* wadr = a.supadr + row0 + start;
    const unsigned char* wtype = a.row_type + row0 + start;
    const unsigned char* skind = q.stream_kind + (size_t)slot * q.max_static;
    const int* want_at = q.stream_support + (size_t)slot * q.max_entries;
    const unsigned char* row_run = runs + QR_BYTES + ((a.ntree + 3) & ~3);
    const unsigned base = LDG(wadr);
    unsigned diff = (LDG(wadr + kk) - base) ^ (LDG(sadr + k) - (unsigned)em);
    // Over the stream's present span only (none where the asleep nodes hold every static row).
    const int2 span = qw_present_span(rin && !gone, rrun.x, (unsigned)n, (unsigned)k);
    for (int p = span.x + lane; p < span.y; p += 32) {
        const int j = LDG(row_run + p);
        if (s.run_isl[j]) continue;
        const int i = p - s.run_place[j];
        const unsigned e0 = LDG(sadr + p), e1 = LDG(sadr + p + 1);
        const unsigned at = LDG(wadr + i);
        diff |= (at - base) ^ (e0 - (unsigned)s.run_dof[j]);
        diff |= (unsigned)LDG(wtype + i) ^ (unsigned)LDG(skind + p);
        for (unsigned e = e0; e < e1; ++e)
            diff |= (unsigned)(LDG(a.support + at + (e - e0)) ^ LDG(want_at + e));
    }
    bool bad = diff != 0;
    // No static row after them: a node whose runs end the stream may have woken (its rows
    // there), and the walk would take it.
    for (int r = start + kk + lane; r < nr; r += 32)
        bad |= q_row_static(q, LDG(a.row_type + row0 + r), row0 + r);
    if (q.eq_ids && q_dynamic_eq_among(q, wtype, row0 + start, kk, lane, 32)) bad = true;
    return !__any_sync(FULL_MASK, bad);
}

// World w by one warp, if its static hyperedges replay its slot's stream (warp-uniform result;
// false: nothing was written, or with a late guard or PAIR maybe written over). `order`,
// `first` and `tisl` are the warp's 3 * ntree ints. PAIR: the guard is another warp's
// (qw_guard). MASK and hint_only (an aside block's first warp): a masked world only by its hint,
// never walked (false: nothing written).
template <bool REUSE, bool ONE, bool PAIR, bool MASK>
__device__ bool qw_world(const Args& a, const QArgs& q, int w, QWarp& s, int* order, int* first,
                         int* tisl, QMask* mk, bool hint_only) {
    const int lane = threadIdx.x & 31;
    const int ntree = a.ntree;
    QW_START();
    // A batch of one slot (the usual case: every world of one model) takes it and its counts
    // from the arguments: no wait on the world's slot, then on the slot's counts, before the
    // world's own loads.
    const unsigned slot = ONE ? (unsigned)q.one_slot : LDG(q.world_slot + w);
    if (slot == 0xffffffffu) return false;
    const int nnode = ONE ? q.one_nnode : (int)LDG(q.nnode + slot);
    if (nnode > Q_NODE_MAX) return false;
    int k = ONE ? q.one_k : (int)LDG(q.nstatic_rows + slot);
    const int nstatic = ONE ? q.one_nstatic : (int)LDG(q.nstatic + slot);
    const unsigned row0 = LDG(a.world_rowadr + w);
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    // The world's rows from its first (signed indices: loads in a loop then take constant
    // offsets from one address).
    const unsigned char* wtype = a.row_type + row0;
    // Places past the islands hold -1 after every mapping of the quotient's kernels, so after
    // a node-level one (a key) only those of its last islands that are gone need it
    // (q_node_maps): how many, loaded now so that step 3 does not wait on it.
    unsigned long long* cached = q.c_node + (size_t)w * Q_CACHE_NODE;
    const unsigned long long key = cached[0];
    const int pad_from = key != 0 ? a.nisland[w] : ntree;
    // Lane n's node (step 2), loaded now so that nothing waits on it there.
    const size_t sn = (size_t)slot * ntree;
    const int n = lane;
    const bool in = n < nnode;
    const int4 zero = make_int4(0, 0, 0, 0);
    const int4* head = q.node_head + (size_t)slot * Q_HEAD;
    const int4 h0 = in ? LDG(head + 1 + n) : zero, h1 = in ? LDG(head + 2 + n) : zero;
    const bool rows = in && LDG(q.node_rows + sn + n) > 0;
    // 1. The static block starts at the first static row (rows before it are dynamic by that
    // choice; rows after it are checked with the dynamic ones, in step 2), and must be the
    // slot's stream. Without static rows in the slot every row is checked in step 2.
    // The block's last warp compares before step 5 (the late guard, above), the others now;
    // in the pair kernels the world's second warp does (qw_guard). MASK: every warp now, and a
    // world whose static rows are not the slot's stream takes the guard with the awake mask
    // (`masked`, below) instead of its block.
    const bool guard_late = !MASK && !PAIR && (threadIdx.x >> 5) == QW_WARPS - 1;
    // The plain and pair kernels take the block to start at row 0 without looking (`at0`: a round
    // trip less before the comparison's loads). A comparison that passes proves it: row 0's type is
    // then the stream's first kind, a static one, and without equalities static by id a row's type
    // alone makes it static, so qw_static_start would have found 0. One that fails looks for the
    // start and compares again; the late guard's world and a pair's (qw_guard compares from row 0
    // too) go to their block, as any world whose late guard fails. Only where the policy puts no
    // dynamic row before the static ones in MuJoCo's row order (equalities, then friction): there
    // row 0 is the start whenever the world replays its stream, so no world goes to its block that
    // would not have without it. Measured on an H100 against looking first (sessions 86-87, µs a
    // step): humanoid-50% -0.25 to -0.50, mechanism-90% at 8,192 worlds -0.40 to -0.57, even on
    // mechanism-90% at 4,096, hammock, cloth-99% and under --eq-dynamic 0 (where it does not
    // apply); in the pair kernels (session 88, two to four runs each) hammock -0.25 and
    // mechanism-90% -0.10 at 2,048 worlds, humanoid-50% -0.15, cloth-99% -0.10 and mechanism-90%
    // even at 1,024 (hammock's alone beyond the runs' spread; none slower). One copy of the
    // comparison in a loop of two passes was 0.7-5.3 slower (humanoid-50% even), and checking row 0
    // in the late guard's warp after step 2 up to 1.4: both slower even where they do not apply.
    const bool at0 = !MASK && QW_AT0(q, k, nr);
    int start = k > 0 && !at0 ? qw_static_start(q, wtype, row0, nr) : 0;
    // `masked` is read as MASK && masked throughout, which the compiler folds to false in the
    // plain kernels: their machine code stays that of before the masked twins.
    bool masked = false;
    if (nr - start < k) {
        if (!MASK) return false;
        masked = true;
    }
    if (!(MASK && masked) && (MASK || (!PAIR && !guard_late)) &&
        __any_sync(FULL_MASK,
                   q_static_differs(WarpGroup{}, a, q, w, slot, nr, nh, k, nstatic, start))) {
        if (MASK) {
            masked = true;
        } else {
            if (!at0) return false;
            start = qw_static_start(q, wtype, row0, nr);
            if (start == 0 || nr - start < k ||
                __any_sync(FULL_MASK, q_static_differs(WarpGroup{}, a, q, w, slot, nr, nh, k,
                                                       nstatic, start)))
                return false;
        }
    }
    QW_MARK(1);
    // A masked world (MASK) whose hint holds (qw_hinted) is mapped as a replayed one without its
    // asleep nodes' rows: `asleep`, read as MASK && asleep, so 0 in the plain kernels.
    unsigned asleep = 0, hint = 0;
    if constexpr (MASK) {
        if (masked) {
            hint = q.asleep[w];
            const unsigned held = hint & __ballot_sync(FULL_MASK, rows);
            int kk;
            if (held != 0 && nstatic == k && (!q.flex_static || nh == nr) &&
                qw_hinted<MASK>(a, q, slot, held, row0, nr, start, k, kk, s)) {
                asleep = held;
                k = kk;
                masked = false;
            }
        }
    }
    if (MASK && masked && hint_only) return false;
    // A masked world (MASK): as quotient.cu's q_solve_masked, each static hyperedge must lie in
    // one node, whose static hyperedges are all there (their count and hash sum the slot's) or
    // none (asleep); no dynamic one may touch an asleep node of several trees. Its every
    // hyperedge is then walked as a dynamic one (k = 0: no static block, no runs of static
    // rows), its static ones counted per node on the way.
    if (MASK && masked) {
        k = 0;
        start = 0;
        mk->cnt[lane] = 0;
        mk->sum[lane] = 0;
        __syncwarp();
    }
    // 2. The dynamic hyperedges (rows around the block; rowless ones unless static) as node
    // sets: lane n gathers node n's neighbours from those joining two or more nodes. A row
    // after the block must not be static. Equal sets in consecutive lanes (a contact's rows
    // share one support) are broadcast once.
    const int* tn = q.tree_node + sn;
    const int ndyn = ((MASK && masked) ? nh : (q.flex_static ? nr : nh)) - k;
    unsigned adj = 0, touched = 0, woke = 0;
    bool late = false;
    // The lane's first dynamic row's type and first node, kept for step 5.
    int type0 = -1, node0 = 0;
    for (int base = 0; base < ndyn; base += 32) {
        const int d = base + lane;
        unsigned m = 0;
        int nfirst = 0;
        if (d < ndyn) {
            const int h = d < start ? d : d + k;
            const int type = h < nr ? LDG(wtype + h) : -1;
            if (!(MASK && masked) && h >= start + k && h < nr)
                late |= q_row_static(q, type, row0 + h);
            const unsigned x = h < nr ? row0 + h : hyper_index(a, w, h, nr);
            const unsigned s0 = LDG(a.supadr + x), s1 = LDG(a.supadr + x + 1);
            // Two entries a round: a contact's pair waits on memory twice, not four times.
            for (unsigned j = s0; j < s1; j += 2) {
                const int t0 = LDG(a.support + j);
                const int t1 = j + 1 < s1 ? LDG(a.support + j + 1) : t0;
                const int n0 = LDG(tn + t0);
                if (j == s0 && base == 0) node0 = n0;
                if (MASK && masked && j == s0) nfirst = n0;
                m |= 1u << n0 | 1u << LDG(tn + t1);
            }
            if (base == 0) type0 = type;
            // A masked world's every row's type and first node, for step 5 (in the row's
            // output, which step 5 writes over): one load there instead of four. Measured
            // (session 58, call 1, mechanism-90% at 4,096 worlds): 30.9 -> 30.05 µs a step with
            // half the worlds masked, 34.35 -> 33.65 with all; cloth-99% with half 54.05 -> 53.65.
            // Two hyperedges a lane in this loop besides was slower (cloth-99% +3.65).
            if (MASK && masked && h < nr) a.efc_island[row0 + h] = type << 8 | nfirst;
            if (MASK && masked && m != 0) {
                if (!(h < nr ? q_row_static(q, type, row0 + h) : q.flex_static != 0)) {
                    woke |= m;
                } else if (m & (m - 1)) {
                    late = true; // a static hyperedge across nodes
                } else {
                    const int node = __ffs(m) - 1;
                    atomicAdd(&mk->cnt[node], 1u);
                    atomicAdd(&mk->sum[node],
                              q_row_hash(h < nr ? type : Q_ROWLESS_KIND, a.support, s0, s1));
                }
            }
        }
        touched |= m;
        const unsigned prev = __shfl_up_sync(FULL_MASK, m, 1);
        const bool fresh = lane == 0 || prev != m;
        for (unsigned joins = __ballot_sync(FULL_MASK, fresh && (m & (m - 1)) != 0); joins;
             joins &= joins - 1) {
            const unsigned e = __shfl_sync(FULL_MASK, m, __ffs(joins) - 1);
            if (e >> lane & 1u) adj |= e;
        }
    }
    if (__any_sync(FULL_MASK, late)) return false;
    QW_MARK(2);
    for (int o = 16; o > 0; o >>= 1) touched |= __shfl_xor_sync(FULL_MASK, touched, o);
    // An asleep node of several trees touched by a dynamic row wakes: the world is stale.
    if (MASK && asleep != 0 &&
        (asleep & touched & __ballot_sync(FULL_MASK, in && h1.x - h0.x > 1)))
        return false;
    if (MASK && masked) {
        for (int o = 16; o > 0; o >>= 1) woke |= __shfl_xor_sync(FULL_MASK, woke, o);
        __syncwarp();
        const unsigned c = in ? mk->cnt[n] : 0u, want = in ? LDG(q.node_rows + sn + n) : 0u;
        const bool whole = c == want && mk->sum[n] == (in ? LDG(q.node_sum + sn + n) : 0ull);
        // Stale: some of a node's static hyperedges, or an asleep node of several trees touched.
        const bool stale = !whole && (c != 0 || ((woke >> n & 1u) && h1.x - h0.x > 1));
        if (__any_sync(FULL_MASK, stale)) return false;
        // Its asleep nodes, the hint for its next masked step (qw_hinted).
        const unsigned gone = __ballot_sync(FULL_MASK, in && c == 0 && want > 0);
        if (lane == 0 && gone != hint) q.asleep[w] = gone;
    }
    // Components, roots and islands (MuJoCo makes no islands without rows: world_discovers).
    const unsigned reach = q_closure(in ? adj | 1u << n : 0u, nnode);
    const bool active =
        world_discovers(a, nr) && ((MASK && masked) ? (touched >> n & 1u) != 0
                                    : ((rows && !(MASK && (asleep >> n & 1u))) ||
                                       (touched >> n & 1u)));
    const int root = active ? __ffs(reach) - 1 : -1;
    const unsigned roots = __ballot_sync(FULL_MASK, active && root == n);
    const int nisland = __popc(roots);
    const int isl = root < 0 ? -1 : __popc(roots & ((1u << root) - 1u));
    QW_MARK(3);
    // 3. The partition check (reuse on, as in q_node_maps): the same node -> island map over
    // the same contraction means that the tree- and dof-level outputs in place are this
    // step's, so only the rows are mapped (step 5). Else per group its trees and dofs (the
    // untouched group last), then the places.
    const size_t T = (size_t)w * ntree, D = (size_t)w * a.nv;
    const bool same = REUSE && key == q_contraction(head) &&
                      !__any_sync(FULL_MASK, in && reinterpret_cast<const signed char*>(
                                                       cached + 1)[n] != isl);
    if (!same) {
        s.ntree[n] = 0;
        s.nv[n] = 0;
        if (n == 0) {
            s.ntree[Q_NODE_MAX] = 0;
            s.nv[Q_NODE_MAX] = 0;
        }
    }
    if (n < nisland) {
        s.cnt_e[n] = 0;
        s.cnt_ne[n] = 0;
        s.cnt_nf[n] = 0;
    }
    s.isl[n] = in ? isl : -1;
    // The node's static rows by kind, for step 5.
    const int4 efc = in ? LDG(q.node_efc + (size_t)slot * Q_NODE_MAX + n) : zero;
    // The counts of the slot's runs (steps 4 and 5).
    const unsigned char* runs = q.runs + (size_t)slot * q.run_bytes;
    const uint2 nruns = LDG(reinterpret_cast<const uint2*>(runs));
    __syncwarp();
    const unsigned char* tree_run = runs + QR_BYTES;
    // Runs of 32 trees or more on average (cloth-like: a few nodes of many trees) are mapped run
    // by run, a tree and its dofs a lane, with nothing to look up per element.
    const bool long_tree_runs = nruns.y <= QW_RUNS && 32 * nruns.y <= (unsigned)ntree;
    if (n == 0) {
        a.rounds[w] = 0;
        // Replayed (0), or masked (2) and by its warp (32); node-level maps (8), rows only (4).
        q.stale[w] = (MASK && masked)   ? (same ? 46 : 42)
                     : (MASK && asleep) ? (same ? 110 : 106)
                                        : (same ? 12 : 8);
    }
    if (!same) {
        const int g = isl < 0 ? nisland : isl;
        if (in) {
            atomicAdd(&s.ntree[g], h1.x - h0.x);
            atomicAdd(&s.nv[g], h1.y - h0.y);
        }
        __syncwarp();
        const I3 c = n < nisland ? I3{s.ntree[n], s.nv[n], 0} : I3{0, 0, 0};
        I3 tot;
        const I3 ex = warp_exscan3(c, &tot);
        // Per group its first tree's and first dof's places (step 4), the untouched group's after
        // every island's.
        if (n <= nisland) {
            s.cursor[n] = n < nisland ? ex.x : tot.x;
            s.nv[n] = n < nisland ? ex.y : tot.y;
        }
        if (n < nisland) q_island_trees(a, T + n, c, ex);
        // An island's first dof is its smallest tree's (trees own dof blocks in tree order).
        if (root == n) a.island_dofadr[T + isl] = LDG(a.tree_dofadr + h0.z);
        const int pad_to = max(pad_from, nisland);
        __syncwarp();
        for (int i = nisland + lane; i < pad_to; i += 32) no_island(a, T + i);
        reinterpret_cast<signed char*>(cached + 1)[n] = (signed char)(in ? isl : -1);
        if (n == 0) {
            cached[0] = q_contraction(head);
            a.nisland[w] = nisland;
            a.nidof[w] = tot.y;
        }
        QW_MARK(4);
        // 4. Trees: island and place (the untouched ones after every island's), then the dofs of
        // the trees in place order, then every dof. Where the slot's trees form at most QW_RUNS
        // runs of one node, each run's trees (and their dofs: trees own dof blocks in tree order)
        // keep their order in one block of places, after its island's runs before it
        // (qw_group_below): no scatter, no scan. Else a scatter, then a scan over the trees in
        // place order.
        if (nruns.y <= QW_RUNS) {
            const bool tin = lane < (int)nruns.y;
            const uint4 trun = tin ? LDG(reinterpret_cast<const uint4*>(runs + QR_TREES) + lane)
                                   : make_uint4(0, 0, 0, 0);
            const int ri = tin ? s.isl[trun.w & 31u] : -1;
            const int key = tin ? (ri < 0 ? nisland : ri) : -2 - lane;
            s.run_w[lane] = make_int2((int)trun.y, (int)(trun.w >> 5));
            const unsigned peers = warp_peers(key);
            __syncwarp();
            const int2 below = qw_group_below(peers, s.run_w);
            const int place = tin ? s.cursor[key] + below.x - (int)trun.x : 0;
            const int dof = tin ? s.nv[key] + below.y - (int)trun.z : 0;
            if (long_tree_runs) {
                // Trees own dof blocks in tree order, so a run's dofs are one block too.
                for (int j = 0; j < (int)nruns.y; ++j) {
                    const int t0 = (int)__shfl_sync(FULL_MASK, trun.x, j);
                    const int t1 = t0 + (int)__shfl_sync(FULL_MASK, trun.y, j);
                    const int d0 = (int)__shfl_sync(FULL_MASK, trun.z, j);
                    const int d1 = d0 + (int)(__shfl_sync(FULL_MASK, trun.w, j) >> 5);
                    const int i = __shfl_sync(FULL_MASK, ri, j);
                    const int pt = __shfl_sync(FULL_MASK, place, j);
                    const int pd = __shfl_sync(FULL_MASK, dof, j);
                    for (int t = t0 + lane; t < t1; t += 32) {
                        a.tree_island[T + t] = i;
                        a.map_itree2tree[T + pt + t] = t;
                    }
                    for (int d = d0 + lane; d < d1; d += 32) {
                        a.dof_island[D + d] = i;
                        a.map_dof2idof[D + d] = pd + d;
                        a.map_idof2dof[D + pd + d] = d;
                    }
                }
            } else {
                if (tin) {
                    s.run_isl[lane] = ri;
                    s.run_place[lane] = place;
                    s.run_dof[lane] = dof;
                }
                __syncwarp();
                // Two rounds at a time here and in the dof and static-row loops below: each
                // round waits on its table load, and two such loads then wait together
                // (session 34: 1-3 % of a step at 4,096 worlds, with the guard's cut).
#pragma unroll 2
                for (int t = lane; t < ntree; t += 32) {
                    const int j = LDG(tree_run + t);
                    const int i = s.run_isl[j];
                    tisl[t] = i;
                    first[t] = s.run_dof[j];
                    a.tree_island[T + t] = i;
                    a.map_itree2tree[T + s.run_place[j] + t] = t;
                }
            }
        } else {
            for (int t = lane; t < ntree; t += 32) tisl[t] = s.isl[LDG(tn + t)];
            __syncwarp();
            warp_scatter(
                ntree, [&](int t) { return tisl[t]; }, s.cursor, tot.x,
                [&](int t, int place) {
                    a.tree_island[T + t] = tisl[t];
                    a.map_itree2tree[T + place] = t;
                    order[place] = t;
                });
            __syncwarp();
            int before = 0;
            for (int base = 0; base < ntree; base += 32) {
                const int p = base + lane;
                const int t = p < ntree ? order[p] : 0;
                const int dn = p < ntree ? LDG(a.tree_dofnum + t) : 0;
                const int inc = warp_inscan(dn);
                if (p < ntree) first[t] = before + inc - dn - LDG(a.tree_dofadr + t);
                before += __shfl_sync(FULL_MASK, inc, 31);
            }
        }
        __syncwarp();
        if (!long_tree_runs) {
#pragma unroll 2
            for (int d = lane; d < a.nv; d += 32) {
                const int t = LDG(a.dof_treeid + d);
                const int f = first[t] + d;
                a.dof_island[D + d] = tisl[t];
                a.map_dof2idof[D + d] = f;
                a.map_idof2dof[D + f] = d;
            }
        }
    }
    __syncwarp();
    QW_MARK(5);
    // The late guard (above): after the tree and dof maps, before the rows.
    if (guard_late) {
        // The world's counts loaded again rather than held through the maps (fewer spills).
        const unsigned slot2 = ONE ? (unsigned)q.one_slot : LDG(q.world_slot + w);
        const int k2 = ONE ? q.one_k : (int)LDG(q.nstatic_rows + slot2);
        const int ns2 = ONE ? q.one_nstatic : (int)LDG(q.nstatic + slot2);
        if (__any_sync(FULL_MASK,
                       q_static_differs(WarpGroup{}, a, q, w, slot2, world_nrow(a, w),
                                        world_nhyper(a, w), k2, ns2, start)))
            return false;
    }
    QW_MARK(6);
    // 5. Rows: per island its rows, equalities and friction rows, then its row outputs and
    // first place (a scan), then each row's island and place, in input order (the quotient's
    // workspace never follows a canonical order: a deterministic Engine orders rows on the
    // host, so a.rank is null here).
    // The static rows' counts are their nodes' (checked against the slot in step 1); the
    // dynamic rows are counted one by one, their island that of their first tree, written
    // now (the scatter reads it back: one load instead of three).
    if (!(MASK && masked) && isl >= 0 && efc.x > 0 && !(MASK && (asleep >> n & 1u))) {
        atomicAdd(&s.cnt_e[isl], efc.x);
        atomicAdd(&s.cnt_ne[isl], efc.y);
        atomicAdd(&s.cnt_nf[isl], efc.z);
    }
    int* efc_island = a.efc_island + row0;
    // The first round's island of each lane's row, kept for the scatter of the rows after the
    // block where they are that round's (start 0): no load of what was just stored. Measured on
    // an H100 (session 89, two calls of two or four runs a build, µs a step): mechanism-90% at
    // 8,192 worlds -0.40 and -0.37, at 4,096 +0.03 and +0.15 (-0.28 and -0.47 with L2 flushed),
    // hammock -0.40 and 0.00, cloth-99% within 0.2. Not in the pair kernels: there it cost
    // mechanism-90% at 2,048 worlds 0.45.
    int ri0 = -2;
    for (int base = 0; base < nr - k; base += 32) {
        const int d = base + lane;
        int ri = -2, type = -1;
        if (d < nr - k) {
            const int r = d < start ? d : d + k;
            if (MASK && masked) {
                // As step 2 left them (the same rows in the same lanes).
                const int v = efc_island[r];
                type = v >> 8;
                ri = s.isl[v & 31];
            } else {
                // The first round's from step 2 (the same rows in the same lanes).
                type = base == 0 ? type0 : LDG(wtype + r);
                ri = s.isl[base == 0 ? node0
                                     : LDG(tn + LDG(a.support + LDG(a.supadr + row0 + r)))];
            }
            efc_island[r] = ri;
        }
        if (!PAIR && base == 0) ri0 = ri;
        count_rows(ri, type, s.cnt_e, s.cnt_ne, s.cnt_nf);
    }
    __syncwarp();
    const int rest = q_island_rows_warp(a, T, nisland, s.cnt_e, s.cnt_ne, s.cnt_nf);
    __syncwarp();
    int *iefc2efc = a.map_iefc2efc + row0, *efc2iefc = a.map_efc2iefc + row0;
    auto place_row = [&](int r, int place) {
        iefc2efc[place] = r;
        efc2iefc[r] = place;
    };
    if (!(MASK && masked) && nruns.x <= QW_RUNS) {
        // Within an island its rows before the block, its static rows, then its rows after the
        // block. The rows before take their places by a scatter; then each run of static rows
        // (one node: one island) takes one block of places, after its island's runs before it;
        // the rows after by a scatter; then each static row its run's place (the slot's row
        // runs: no load of the world's rows).
        warp_scatter(start, [&](int r) { return efc_island[r]; }, s.cnt_e, rest, place_row);
        const bool rl = lane < (int)nruns.x;
        const uint2 rrun =
            rl ? LDG(reinterpret_cast<const uint2*>(runs + QR_ROWS) + lane) : make_uint2(0, 0);
        // MASK: an asleep node's runs are gone; the later runs' rows sit as many rows earlier.
        const bool rin = rl && !(MASK && (asleep >> (rrun.y & 31u) & 1u));
        // (An inclusive scan: a present run adds nothing to its own count.)
        const int rgone = MASK ? warp_inscan(rl && !rin ? (int)(rrun.y >> 5) : 0) : 0;
        const int ri = rin ? s.isl[rrun.y & 31u] : -1;
        const unsigned peers = warp_peers(rin ? ri : -2 - lane);
        s.run_w[lane] = make_int2((int)(rrun.y >> 5), 0);
        __syncwarp();
        const int below = qw_group_below(peers, s.run_w).x;
        const int place = rin ? s.cnt_e[ri] + below - (int)rrun.x : 0;
        // Runs of 32 rows or more on average: run by run below, nothing to look up per row.
        // The slot's static rows (k is the world's: fewer where a hint left asleep runs out).
        const int ks = (MASK && asleep) ? (ONE ? q.one_k : (int)LDG(q.nstatic_rows + slot)) : k;
        const bool long_runs = 32 * nruns.x <= (unsigned)ks;
        if (rl && !long_runs) {
            s.run_isl[lane] = ri;
            s.run_place[lane] = place;
            if (MASK) s.run_dof[lane] = rgone;
        }
        __syncwarp();
        // The group's last run moves its island's cursor past the group's static rows.
        if (rin && peers >> lane == 1u) s.cnt_e[ri] += below + (int)(rrun.y >> 5);
        __syncwarp();
        const int after = start + k;
        warp_scatter(
            nr - after,
            [&](int i) { return !PAIR && start == 0 && i < 32 ? ri0 : efc_island[after + i]; },
            s.cnt_e,
            rest,
            [&](int i, int place) { place_row(after + i, place); });
        if (long_runs) {
            for (int j = 0; j < (int)nruns.x; ++j) {
                const int p0 = (int)__shfl_sync(FULL_MASK, rrun.x, j);
                const int p1 = p0 + (int)(__shfl_sync(FULL_MASK, rrun.y, j) >> 5);
                const int i = __shfl_sync(FULL_MASK, ri, j), at = __shfl_sync(FULL_MASK, place, j);
                if (MASK && i < 0) continue; // gone (warp-uniform)
                const int r0 = start - (MASK ? __shfl_sync(FULL_MASK, rgone, j) : 0);
                for (int p = p0 + lane; p < p1; p += 32) {
                    efc_island[r0 + p] = i;
                    place_row(r0 + p, at + p);
                }
            }
        } else {
            const unsigned char* row_run = tree_run + ((ntree + 3) & ~3);
            // MASK: over the stream's present span only (as qw_hinted).
            const int2 span = (MASK && asleep)
                                  ? qw_present_span(rin, rrun.x, rrun.y >> 5, (unsigned)ks)
                                  : make_int2(0, ks);
#pragma unroll 2
            for (int p = span.x + lane; p < span.y; p += 32) {
                const int j = LDG(row_run + p);
                const int i = s.run_isl[j], at = s.run_place[j] + p;
                if (MASK && i < 0) continue; // gone
                const int r = start + p - (MASK ? s.run_dof[j] : 0);
                efc_island[r] = i;
                place_row(r, at);
            }
        }
    } else {
        // A static row's island is its node's (the slot's row_node), with no load of the
        // world's rows, written as the scatter loads it as its key.
        const unsigned char* rn = q.row_node + (size_t)slot * q.max_static;
        warp_scatter(
            nr,
            [&](int r) {
                if (r < start || r >= start + k) return efc_island[r];
                const int i = s.isl[LDG(rn + (r - start))];
                efc_island[r] = i;
                return i;
            },
            s.cnt_e, rest, place_row);
    }
    QW_MARK(7);
    return true;
}

// The pair kernels' second warp of world w: step 1's comparison (the guard), while the world's
// own warp maps it (true: its static rows are not its slot's stream, and the block solves it
// over what that warp wrote, as after a late guard). A world that its own warp leaves pending
// anyway (no slot, too few rows from the first static one) is not compared.
template <bool ONE>
__device__ bool qw_guard(const Args& a, const QArgs& q, int w) {
    const unsigned slot = ONE ? (unsigned)q.one_slot : LDG(q.world_slot + w);
    if (slot == 0xffffffffu) return false;
    const int k = ONE ? q.one_k : (int)LDG(q.nstatic_rows + slot);
    const int nstatic = ONE ? q.one_nstatic : (int)LDG(q.nstatic + slot);
    const unsigned row0 = LDG(a.world_rowadr + w);
    const int nr = world_nrow(a, w), nh = world_nhyper(a, w);
    // Where the world's warp took the block to start at row 0 (`at0`), so does its guard, without
    // looking: a comparison that passes proves it, one that fails leaves the world to its block.
    // No second comparison from the true start, as qw_world makes: the world's warp has mapped it
    // from row 0 meanwhile. So rows in an order other than MuJoCo's (a dynamic row before the
    // static ones) take the block path at every step here: exact, only slower.
    const int start =
        k > 0 && !QW_AT0(q, k, nr) ? qw_static_start(q, a.row_type + row0, row0, nr) : 0;
    if (nr - start < k) return false;
    return __any_sync(FULL_MASK,
                      q_static_differs(WarpGroup{}, a, q, w, slot, nr, nh, k, nstatic, start));
}

// The masked twins (MASK), which the host launches after a step with masked worlds: a world
// that its warp leaves pending makes its whole block wait for the block's serial solve of it (a
// step of mechanism-90% at 4,096 worlds took 16.2 µs with none masked, 28.2 with one world of
// the 4,096 masked, 43.2 with half). So in the twins every warp compares its world's static
// rows first (no late guard; in the pair twins the guard warps idle), and solves a masked world
// itself (qw_world's `masked`): 30.5 µs with half masked, 34.8 with all (43.8 by a block a
// world; session 57, calls 2 and 3). One masked world walks all its rows in one warp, the
// launch's long pole where few are masked (29.6 µs with one); so the host also sets aside the
// worlds that were masked and walked at its last step where they are at most a sixteenth of the
// batch (src/gpu/quotient/: ASIDE_SHARE): the launch's first q.aside_blocks blocks each take one
// of them, beside the warps, and the warps skip them (20.5 µs a step with one masked, 26.3 with
// 256).
// A world that stays asleep repeats its stream less the asleep nodes' runs, so the walk leaves
// the nodes it found asleep as a hint (q.asleep), and at the world's next masked step its warp
// maps it as a replayed one if the hint holds (qw_hinted; flag 64), walking only its dynamic
// rows. Measured against the walk (session 58, calls 4 and 5, 4,096 worlds): mechanism-90%
// 30.15 -> 20.55 µs a step with an eighth masked, 29.75 -> 19.55 with half, 34.25 -> 22.25 with
// all; cloth-99% and hammock with half (the asleep node holds nearly every static row, so the
// walk had little to walk) +1.10 and +0.40; nothing masked even.
// The block path leaves the same hint (q_solve_masked), and an aside block's first warp maps its
// world where the hint holds (flag 64), else the block solves it (q_world; a world that
// replays after all is mapped by that warp, flag 8). So a world set aside, or left pending by a
// plain warp at the step it fell asleep, goes back to its own warp at its next step instead of
// being set aside again while it sleeps. Measured (session 59, call 3, mechanism-90%): 27.10 ->
// 21.60 µs a step with 256 of 4,096 worlds masked, 17.90 -> 15.35 with 64 of 1,024 (the pair
// twins); with one of 4,096, 20.20 -> 21.10 with L2 warm, 30.45 -> 29.05 flushed, 20.60 -> 20.40
// with the device busy (that world's warp is the launch's long pole either way).
// What a masked step still costs is mostly the twins' own, on every replayed world: nothing
// masked, the twins against the plain kernels (ARCHIPELAGO_Q_TWINS=1; session 59, call 4) took
// mechanism-90% at 4,096 worlds +2.70 µs a step, hammock +4.25, cloth-99% +13.50, at 1,024
// (pairs) +2.30 and +2.15. Each warp taking the guard first and a replayed world then the
// plain kernels' path (guard done) was slower still, by 0.5-2.7 µs (call 5, exp/twins-dispatch).
// So the twins take only the worlds the last step masked, listed by the host, and the plain
// kernels (REST) the rest of the worlds, listed too, in a launch of their own beside the twins'
// (a stream forked in the step's graph): a replayed world runs the plain kernels' code, with one
// load more (its index). A world that falls asleep at a step unreported is left by its plain
// warp to its block, as at a step after none masked; one reported is taken in by the host as
// masked (follow_sleep_events, src/gpu/quotient/launch.rs). Lists, not flags: with the masked
// worlds spread (every other one), flags left half of the plain kernels' warps idle and their
// blocks took a second wave.
// Measured against the twins over every world (session 60, calls 4 and 5; µs a step,
// L2 warm / device busy): at 4,096 worlds cloth-99% with a sixteenth masked 68.45 -> 55.25 /
// 67.90 -> 53.05, with half 56.30 -> 47.00 / 55.65 -> 44.60; mechanism-90% with a sixteenth
// 22.55 -> 20.20 / 21.05 -> 18.90, with half 20.05 -> 19.65 / 19.55 -> 19.05, with one masked
// world 20.80 -> 21.05 / 20.45 -> 19.20 (L2 flushed +2.20); hammock with half even; 8,192
// worlds of mechanism-90% with half -0.45 / -1.65. With two warps a world (the pair kernels,
// below a wave) it loses on three shapes of four: at 1,024 worlds hammock with half +1.80 /
// +1.45, mechanism-90% with half +2.30 / +0.85 and with a sixteenth +1.85 / +0.20, at 2,048
// mechanism-90% with half +1.70 / +0.95; cloth-99% with half -0.75 / -1.65. Launched as a
// programmatic dependent of the twins instead of beside them, the plain kernels' launch was
// about 1 µs later (session 60, call 3).

// QW_WARPS worlds per block, one per warp (PAIR: and each world's guard by a warp of its own,
// the block's second QW_WARPS); then the block's pending worlds, by the block. MASK: masked
// worlds by their warps, and the first q.aside_blocks blocks of the launch solve the worlds set
// aside instead, one each; without it, none of that code (below: why). MASK and REST: the
// launch's worlds from its list (q.lists), not consecutive.
// REUSE: with the partition check (reuse on); without it, none of its code, so that a launch
// with reuse off runs the same machine code as before the check.
// At most 64 registers a thread, also in the program capped for many waves (regcap): this
// kernel's warps spill at fewer, and it ran slower so (8,192 worlds of mechanism-90%: 47.8 µs
// at 64, 58.6 at 40, 70.2 at 32, session 27; 35.2, 48.5 and 52.8 in session 49, hammock 46.9,
// 63.9 and 72.6, though 32 makes 8,192 worlds one wave; and the pair kernels at 32, one wave of
// two warps a world at 4,096 worlds, lost 7.4-13.3 µs to one warp a world at 64).
template <bool REUSE, bool ONE, bool PAIR, bool MASK, bool REST>
__device__ __forceinline__ void qw_block(const Args& a, const QArgs& q) {
    extern __shared__ int smem[];
    __shared__ QWarp s_warp[QW_WARPS];
    __shared__ QMask s_mask[MASK ? QW_WARPS : 1];
    __shared__ int s_pending[PAIR ? 2 * QW_WARPS : QW_WARPS];
    constexpr bool LIST = MASK || REST;
    __shared__ int s_world[LIST ? QW_WARPS : 1];
    const int wid = threadIdx.x >> 5, ntree = a.ntree, nb = MASK ? q.aside_blocks : 0;
    // An aside block's first warp maps its world only where the world's hint holds (the block
    // path leaves one: q_solve_masked), so that a world that stays asleep goes back to its own
    // warp at the next step; else the block solves it, as a world a warp leaves pending.
    const bool aside = MASK && (int)blockIdx.x < nb;
    // LIST: the launch's worlds from its list (u32::MAX: none; the host's): the twins' aside
    // blocks' worlds, one a block, then the twins' or the plain kernels' four a block (the
    // worlds the last step masked, or the others). Else four consecutive worlds.
    const int at =
        aside ? (int)blockIdx.x : nb + ((int)blockIdx.x - nb) * QW_WARPS + wid % QW_WARPS;
    const unsigned listed = LIST ? LDG(q.lists + at) : 0u;
    const int w0 = LIST ? 0 : (int)blockIdx.x * QW_WARPS;
    const int w = LIST ? (int)listed : w0 + wid % QW_WARPS;
    const bool here = LIST ? listed != 0xffffffffu && (!aside || wid == 0) : w < a.nworld;
    bool pending;
    if (PAIR && wid >= QW_WARPS) {
        // MASK: the world's own warp compares (it must know whether the world is masked).
        pending = !MASK && here && qw_guard<ONE>(a, q, w);
    } else {
        int* mine = smem + wid * 3 * ntree;
        pending = here && !qw_world<REUSE, ONE, PAIR, MASK>(a, q, w, s_warp[wid], mine,
                                                            mine + ntree, mine + 2 * ntree,
                                                            &s_mask[MASK ? wid : 0], aside);
        if (LIST && (threadIdx.x & 31) == 0) s_world[wid] = w;
    }
    if ((threadIdx.x & 31) == 0) s_pending[wid] = pending;
    // Marks 8 and 9 (a world's warp, not a pair's guard warp): the barrier's wait.
    const bool marks = here && !(PAIR && wid >= QW_WARPS);
    if (marks) QW_MARK(8);
    const bool any_pending = __syncthreads_or(pending);
    if (marks) QW_MARK(9);
    if (!any_pending) return;
    for (int i = 0; i < QW_WARPS; ++i) {
        bool again = s_pending[i];
        if constexpr (PAIR) again |= s_pending[QW_WARPS + i];
        if (!again) continue; // block-uniform
        q_world<true>(a, q, LIST ? s_world[i] : w0 + i);
        __syncthreads();
    }
}

// The entry points: qw_block<REUSE, ONE, PAIR, MASK, REST>, at 64 registers a thread either way
// (the warp kernels' blocks of four warps, eight a multiprocessor; the pair kernels' of eight,
// four).
// The `one` kernels are for a launch whose worlds all have one slot (q.one_slot; the host checks
// it). The pair kernels give each world's guard a second warp (qw_guard), for a batch whose
// worlds' pairs of warps are all resident at once (src/gpu/quotient/ decides): there a world's
// warp waits on its own chain of loads, and the guard's is a long part of it. The `masked`
// twins are for a launch after a step with masked worlds, and the host takes them there only;
// the others run the machine code of before the aside blocks, whose code alone had moved the
// register allocation (ptxas: twice the spill loads in the pair kernels), and before the masked
// path (qw_world reads `masked` as MASK && masked, which the compiler folds away: their PTX is
// the same). Measured with the aside blocks in the twins, against one kernel for both (session
// 57, call 1, four runs a build, nothing masked): mechanism-90% -0.35 µs a step at 4,096 worlds
// and -0.80 at 2,048, hammock -0.55 and -0.15, cloth-99% -0.30 at 4,096; sleep_toggles' busiest
// step +0.55, within its runs' spread; one masked world of 4,096 (an aside kernel either way)
// -1.20. Twice the kernels cost a cold start 1.7 s more (29.6 s against 27.9, one bench process)
// and 3.2 MB more in the kernel cache. The `rest` kernels (above: the plain kernels for the
// worlds beside the twins) are the plain ones with their worlds from a list; a third set of
// kernels took the warp program's NVRTC build here from 48 s to 72 s (once per machine and build:
// src/gpu/kernel_cache.rs).
#define QW_ENTRY(name, reuse, one, pair, mask, rest)                                             \
    extern "C" __global__ void __launch_bounds__((pair ? 64 : 32) * QW_WARPS, pair ? 4 : 8)       \
        name(const __grid_constant__ Args a, const __grid_constant__ QArgs q) {                   \
        qw_block<reuse, one, pair, mask, rest>(a, q);                                             \
    }
#define QW_ENTRIES(name, reuse, one, pair)                                                       \
    QW_ENTRY(name##_kernel, reuse, one, pair, false, false)                                       \
    QW_ENTRY(name##_rest_kernel, reuse, one, pair, false, true)                                   \
    QW_ENTRY(name##_masked_kernel, reuse, one, pair, true, false)

QW_ENTRIES(quotient_warp, false, false, false)
QW_ENTRIES(quotient_warp_one, false, true, false)
QW_ENTRIES(quotient_warp_reuse, true, false, false)
QW_ENTRIES(quotient_warp_reuse_one, true, true, false)
QW_ENTRIES(quotient_pair, false, false, true)
QW_ENTRIES(quotient_pair_one, false, true, true)
QW_ENTRIES(quotient_pair_reuse, true, false, true)
QW_ENTRIES(quotient_pair_reuse_one, true, true, true)
