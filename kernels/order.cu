// Deterministic mode on the device: the canonical order of each world's rows (src/gpu/order.rs
// launches these; src/order/keys.rs defines the key). Every kernel takes one `OrderArgs` by
// value, laid out like `gpu::order::OrderArgs`. One block sorts one world, except the worlds
// over the shared-memory tile, which many blocks sort in a chain of launches.
//
// The kernels only sort: they write the permutation both ways (`order`: canonical row -> input
// row, `rank`: its inverse) and each world's bounds status. Discovery reads the rows as
// uploaded, since connectivity does not depend on row order, and the row-level maps read them
// in input order too and write each row's island at its canonical place, `rank` (common.cu,
// world_maps_in), so no row data is ever moved.
//
// Three sorts, picked per capacity and key width by the host:
//  - small tiles (< 2048 rows) with key and row index in 32 bits: the key is packed with the
//    row's index in the world into one unique value, and the block sorts its tile with a
//    bitonic network, each thread holding E consecutive values: exchanges inside a thread's E
//    values stay in registers, those within 32 threads go through warp shuffles (no barrier),
//    the others through a ping-pong shared-memory tile (one barrier per stage). Unique values
//    make the order equal to a stable sort by key.
//  - other tiles up to 8192 rows: a stable LSD radix sort of the keys in shared memory.
//  - larger worlds: a stable LSD radix sort in 8-bit digits, keys and row indices ping-ponging
//    through global scratch, a block per chunk of 2048 rows ranking it as order_block ranks its
//    tile (order_radix_*).
// Nothing allocates and no launch depends on a value read back, so the step is graph-capturable.
// Every sort lets the kernel after it start at once (grid_dependents_launch): a fused mode
// kernel launched as its programmatic dependent runs its discovery alongside the sort and
// waits for the sort only before its maps (common.cu, world_maps_in).

#define ORDER_RADIX_THREADS 256
#define ORDER_RADIX 256
#define ORDER_CONTACT_CLASS 5u

// Where the key fields sit (src/order/keys.rs: KeyLayout). A field whose range is empty
// (min > max) has no rows; a row that needs it is out of bounds.
struct OrderLayout {
    int id_min, id_max, geom_min, geom_max, colid_min, colid_max;
    unsigned id_bits, geom_bits, colid_bits, payload_bits, bits, pad;
};

// Per chunk of a large world (order_radix_keys): the AND and the OR of its keys, and its first
// out-of-bounds row + 1 (0x7fffffff: none).
struct OrderChunk {
    unsigned long long all, any;
    int bad, pad;
};

struct OrderArgs {
    const unsigned* world_rowadr;   // nworld + 1
    const unsigned char* row_type;
    const int* row_id;
    const int* geom;                // two per row
    const int* colid;
    const OrderLayout* layout;      // uploaded with each step
    unsigned* order;                // canonical global row -> input global row
    unsigned* rank;                 // input global row -> canonical global row
    int* status;                    // per world: its first out-of-bounds row + 1, or 0
    unsigned long long* keys_a;     // large worlds: radix scratch, per global row
    unsigned long long* keys_b;
    unsigned* vals_a;
    unsigned* vals_b;
    OrderChunk* chunks;             // large worlds: per world, nchunk chunks
    unsigned* counts;               // large worlds: per world and chunk, 256 digit counts
    int nworld;
    unsigned idx_bits;              // bits of a row index inside a small world's tile
    unsigned pass;                  // large worlds: the digit pass of this launch
    unsigned nchunk;                // large worlds: chunks per world in the grid
};

__device__ __forceinline__ bool order_in(int v, int lo, int hi) { return v >= lo && v <= hi; }

// Key of global row r (at most 64 bits); an out-of-bounds row lowers *bad (shared) to r + 1.
// Every field is loaded before the type is known: one memory latency per key instead of two.
__device__ __forceinline__ unsigned long long order_key(const OrderArgs& a, const OrderLayout& L,
                                                        unsigned r, int* bad) {
    typedef unsigned long long K;
    const unsigned type = LDG(a.row_type + r);
    const int2 g = LDG((const int2*)a.geom + r);
    const int c = LDG(a.colid + r), id = LDG(a.row_id + r);
    if (type >= ORDER_CONTACT_CLASS) {
        if (!order_in(g.x, L.geom_min, L.geom_max) || !order_in(g.y, L.geom_min, L.geom_max) ||
            !order_in(c, L.colid_min, L.colid_max)) {
            atomicMin(bad, (int)r + 1);
            return 0;
        }
        K packed = ((K)(unsigned)(g.x - L.geom_min) << (L.geom_bits + L.colid_bits)) |
                   ((K)(unsigned)(g.y - L.geom_min) << L.colid_bits) |
                   (K)(unsigned)(c - L.colid_min);
        unsigned shift = L.payload_bits - (2 * L.geom_bits + L.colid_bits);
        return ((K)ORDER_CONTACT_CLASS << L.payload_bits) | (packed << shift);
    }
    if (!order_in(id, L.id_min, L.id_max)) {
        atomicMin(bad, (int)r + 1);
        return 0;
    }
    K v = (K)(unsigned)(id - L.id_min);
    return ((K)type << L.payload_bits) | (v << (L.payload_bits - L.id_bits));
}

// Lanes of the warp whose BITS-bit digit equals d, from one ballot per bit: cheaper than
// __match_any_sync, which was a fifth of the radix sort's stalls on the H200. The ballot and the
// lane's own bit share one predicate (inline PTX): through __ballot_sync's int argument the
// compiler tested each bit twice, 7 instructions per bit; now ptxas moves the digit into the
// predicate registers at once and spends a vote and two logic operations per bit.
template <int BITS>
__device__ __forceinline__ unsigned order_peers(unsigned d) {
    unsigned m = 0xffffffffu;
#pragma unroll
    for (int b = 0; b < BITS; ++b) {
        unsigned x, own; // the ballot of bit b, and all ones where this lane's bit b is set
        asm("{\n\t.reg .pred p;\n\t"
            "setp.ne.u32 p, %2, 0;\n\t"
            "vote.sync.ballot.b32 %0, p, 0xffffffff;\n\t"
            "selp.b32 %1, -1, 0, p;\n\t}"
            : "=r"(x), "=r"(own)
            : "r"(d & (1u << b)));
        m &= ~(x ^ own);
    }
    return m;
}

// Exclusive scan of one value per thread over the block (any multiple of 32 up to 1024
// threads); *total gets the sum. Every thread of the block must call it, and a barrier must
// separate two calls (the warp sums are reused), which spares a third barrier here.
__device__ unsigned order_scan(unsigned v, unsigned* total) {
    __shared__ unsigned sums[32];
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarp = blockDim.x >> 5;
    unsigned x = v;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        unsigned s = lane < nwarp ? sums[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            unsigned y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += y;
        }
        if (lane < nwarp) sums[lane] = s;
    }
    __syncthreads();
    unsigned before = warp == 0 ? 0 : sums[warp - 1];
    *total = sums[nwarp - 1];
    return before + x - v;
}

// Canonical global row dst comes from input global row src.
__device__ __forceinline__ void order_place(const OrderArgs& a, unsigned dst, unsigned src) {
    a.order[dst] = src;
    a.rank[src] = dst;
}

// The world's bounds status, once every key of the block is computed (every thread must call
// this; `bad` is the block's shared flag).
__device__ void order_status(const OrderArgs& a, unsigned w, const int* bad) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const int b = *bad;
        a.status[w] = b == 0x7fffffff ? 0 : b;
    }
}

// ---- small worlds: bitonic sort of packed (key, index) values in registers ----

// Thread t holds tile positions t*E .. t*E + E - 1. A compare-exchange at distance j is done in
// the thread's registers when j < E, by a warp shuffle with lane t ^ (j / E) when j < 32 E, and
// through the shared-memory tile (one barrier) otherwise.
template <typename V, int E>
__device__ void order_small(const OrderArgs& a) {
    grid_dependents_launch(); // the fused kernel after this one may start its discovery
    extern __shared__ unsigned long long order_tile[];
    const unsigned T = blockDim.x, N = T * E, tid = threadIdx.x, w = blockIdx.x;
    const unsigned base = tid * E;
    const unsigned r0 = a.world_rowadr[w], n = a.world_rowadr[w + 1] - r0;
    const OrderLayout L = *a.layout;
    __shared__ int bad;
    if (tid == 0) bad = 0x7fffffff;
    __syncthreads();
    V v[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        unsigned p = base + e;
        v[e] = p < n ? (V)((order_key(a, L, r0 + p, &bad) << a.idx_bits) | p) : ~(V)0;
    }
    V* tile = (V*)order_tile;
    unsigned flip = 0;
    for (unsigned k = 2; k <= N; k <<= 1) {
        for (unsigned j = k >> 1; j >= E; j >>= 1) {
            if (j >= 32 * E) {
                V* b = tile + flip * N;
                flip ^= 1;
#pragma unroll
                for (int e = 0; e < E; ++e) b[base + e] = v[e];
                __syncthreads();
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    unsigned p = base + e;
                    V o = b[p ^ j];
                    bool keep_min = ((p & j) == 0) == ((p & k) == 0);
                    v[e] = keep_min ? (o < v[e] ? o : v[e]) : (o > v[e] ? o : v[e]);
                }
            } else {
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    unsigned p = base + e;
                    V o = __shfl_xor_sync(0xffffffffu, v[e], j / E);
                    bool keep_min = ((p & j) == 0) == ((p & k) == 0);
                    v[e] = keep_min ? (o < v[e] ? o : v[e]) : (o > v[e] ? o : v[e]);
                }
            }
        }
#pragma unroll
        for (int j = E / 2; j > 0; j >>= 1) {
            if ((unsigned)j < k) {
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    if ((e & j) == 0) {
                        bool asc = ((base + e) & k) == 0;
                        V x = v[e], y = v[e | j];
                        V lo = x < y ? x : y, hi = x < y ? y : x;
                        v[e] = asc ? lo : hi;
                        v[e | j] = asc ? hi : lo;
                    }
                }
            }
        }
    }
    const V mask = (V)((1ull << a.idx_bits) - 1);
#pragma unroll
    for (int e = 0; e < E; ++e)
        if (base + e < n) order_place(a, r0 + base + e, r0 + (unsigned)(v[e] & mask));
    order_status(a, w, &bad);
}

// Every variant: at most 1024 threads and 64 registers, so blocks of up to 512 threads run two
// per multiprocessor (one world's barriers and loads overlap another's).
#define ORDER_KERNELS(KIND, FN)                                                                    \
    FN(KIND, u32, unsigned, 1) FN(KIND, u32, unsigned, 2) FN(KIND, u32, unsigned, 4)               \
    FN(KIND, u32, unsigned, 8) FN(KIND, u64, unsigned long long, 1)                                \
    FN(KIND, u64, unsigned long long, 2) FN(KIND, u64, unsigned long long, 4)                      \
    FN(KIND, u64, unsigned long long, 8)
#define ORDER_KERNEL(KIND, W, T, E)                                                                \
    extern "C" __global__ void __launch_bounds__(1024) order_##KIND##_##W##_e##E(OrderArgs a) {    \
        order_##KIND<T, E>(a);                                                                     \
    }
ORDER_KERNELS(small, ORDER_KERNEL)

// ---- small worlds: stable LSD radix sort in shared memory ----

// order_block's shared memory and its world's span of differing key bits.
template <typename K>
struct OrderTile {
    unsigned* cnt; // [warp][digit], ORDER_RADIX per warp
    K* skey;       // N keys
    unsigned* sval; // 2 N row indices: this pass's and the next's
    unsigned lo, passes;
};

// Stable ranks of this warp's values k (its E values per lane, in the order e, then lane)
// among the warp's values of equal BITS-bit digit at `shift`, counted on from the warp's own
// digit counters `own` (which advance past them). Every value's peers first (independent
// ballots the scheduler can overlap), kept as (lanes before it) | (peers) << 8; then the short
// serial walk over the counters.
template <typename K, int E, int BITS>
__device__ __forceinline__ void order_warp_ranks(const K (&k)[E], unsigned shift, unsigned* own,
                                                 unsigned (&rank)[E]) {
    constexpr unsigned MASK = (1u << BITS) - 1;
    const unsigned lower = (1u << (threadIdx.x & 31)) - 1u;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const unsigned peers = order_peers<BITS>((unsigned)(k[e] >> shift) & MASK);
        rank[e] = __popc(peers & lower) | (unsigned)__popc(peers) << 8;
    }
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const unsigned d = (unsigned)(k[e] >> shift) & MASK;
        const unsigned before = rank[e] & 0xffu, at = own[d];
        __syncwarp();
        if (before == 0) own[d] = at + (rank[e] >> 8);
        rank[e] = at + before;
        __syncwarp();
    }
}

// The passes of order_block with BITS-bit digits over the keys k (this thread's E values).
// Returns the row index buffer of the final order (position p holds row src[p]; no barrier
// after its last writes), or null when no pass ran.
template <typename K, int E, int BITS>
__device__ const unsigned* order_block_passes(const OrderTile<K>& t, K (&k)[E]) {
    constexpr unsigned RADIX = 1u << BITS, MASK = RADIX - 1, C = RADIX / 32;
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarp = blockDim.x >> 5;
    const unsigned N = blockDim.x * E;
    unsigned* cnt = t.cnt;
    // Each warp ranks against its own counters, so it clears them itself (no barrier).
    unsigned* own = cnt + warp * ORDER_RADIX;
#pragma unroll
    for (unsigned i = lane; i < RADIX; i += 32) own[i] = 0;
    __syncwarp();
    const unsigned* src = nullptr;
    unsigned* dst = t.sval;
    for (unsigned pass = 0; pass < t.passes; ++pass) {
        const unsigned shift = t.lo + BITS * pass;
        const bool last = pass + 1 == t.passes;
        unsigned rank[E];
        order_warp_ranks<K, E, BITS>(k, shift, own, rank);
        __syncthreads();
        // Exclusive scan of the counters in (digit, warp) order: C consecutive per thread
        // (RADIX * nwarp = C T of them), from x = C tid: digit x / nwarp, warp x % nwarp, and
        // each next one the next warp (or the next digit's warp 0). One division per pass: a
        // division by the block's warp count per counter is a long instruction sequence.
        // The counters are read twice rather than held in registers across the scan: the
        // ranks and values already fill them. Unrolled for 32-bit keys only: 64-bit keys at 8
        // values per thread would spill.
        const unsigned d0 = tid * C / nwarp, w0 = tid * C - d0 * nwarp;
        unsigned sum = 0;
#pragma unroll(sizeof(K) == 4 ? C : 1)
        for (unsigned i = 0, d = d0, wi = w0; i < C; ++i) {
            sum += cnt[wi * ORDER_RADIX + d];
            if (++wi == nwarp) {
                wi = 0;
                ++d;
            }
        }
        unsigned total;
        unsigned run = order_scan(sum, &total);
#pragma unroll(sizeof(K) == 4 ? C : 1)
        for (unsigned i = 0, d = d0, wi = w0; i < C; ++i) {
            unsigned* at = &cnt[wi * ORDER_RADIX + d];
            const unsigned c = *at;
            *at = run;
            run += c;
            if (++wi == nwarp) {
                wi = 0;
                ++d;
            }
        }
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const unsigned p = warp * 32 * E + e * 32 + lane;
            const unsigned pos = own[(unsigned)(k[e] >> shift) & MASK] + rank[e];
            if (!last) t.skey[pos] = k[e]; // the last pass moves row indices only
            dst[pos] = src ? src[p] : p;
        }
        src = dst;
        if (last) break;
        __syncwarp();
#pragma unroll
        for (unsigned i = lane; i < RADIX; i += 32) own[i] = 0;
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) k[e] = t.skey[warp * 32 * E + e * 32 + lane];
        // The next pass writes skey and the other index buffer only after two more barriers.
        dst = dst == t.sval ? t.sval + N : t.sval;
    }
    return src;
}

// The bitonic network costs O(n log^2 n) exchanges per world and made the step compute-bound on
// big tiles (a 4096-row world: 78 stages over every value). This sort takes ceil(span / 8)
// passes of digits of at most 8 bits over keys alone (the sort is stable, so no index is packed
// and a 32-bit key serves up to 32 bits). Per pass, each warp ranks its 32 E values round by
// round (order_peers within a round, a per-warp digit counter across rounds), one block scan
// over the (digit, warp) counters gives every digit's start per warp, and the values move
// through shared memory. Warp w holds positions w * 32E + e * 32 + lane, so (warp, round, lane)
// is position order and equal digits keep it. Shared memory: 256 counters per warp, the keys
// and two buffers of row indices (block_smem in src/gpu/order.rs). The counters are stored warp
// by warp (warp * 256 + digit): a warp's lanes then reach distinct digits in distinct banks.
// Stored digit by digit, every counter of one warp sat in one bank, and ranking and scatter ran
// up to 32-way bank conflicts (3,960-row worlds ×1024: 227 us for the whole order stage on the
// H200).
template <typename K, int E>
__device__ void order_block(const OrderArgs& a) {
    grid_dependents_launch(); // the fused kernel after this one may start its discovery
    extern __shared__ unsigned long long order_tile[];
    const unsigned T = blockDim.x, tid = threadIdx.x, w = blockIdx.x;
    const unsigned lane = tid & 31, warp = tid >> 5, nwarp = T >> 5, N = T * E;
    const unsigned r0 = a.world_rowadr[w], n = a.world_rowadr[w + 1] - r0;
    const OrderLayout L = *a.layout;
    unsigned* cnt = (unsigned*)order_tile;       // [warp][digit]
    K* skey = (K*)(cnt + ORDER_RADIX * nwarp);   // N keys (8-byte aligned: 1 KiB per warp above)
    unsigned* sval = (unsigned*)(skey + N);      // 2 N row indices: this pass's and the next's
    __shared__ int bad;
    __shared__ K world_all, world_any;
    if (tid == 0) {
        bad = 0x7fffffff;
        world_all = ~(K)0;
        world_any = 0;
    }
    __syncthreads();
    // Keys live in registers between passes; their row indices stay in shared memory (read
    // at each scatter), which keeps u32 keys with 8 per thread within 56 registers: two blocks
    // of up to 576 threads per multiprocessor.
    K k[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        unsigned p = warp * 32 * E + e * 32 + lane;
        // Padding sorts after every row: all-ones digits, and later than any equal key.
        k[e] = p < n ? (K)order_key(a, L, r0 + p, &bad) : ~(K)0;
    }
    // Only the bits in which the world's keys differ decide its order: the passes cover the
    // span from the lowest to the highest of them. A world without contacts, say, has every
    // key's low contact bits zero (ids sit high in the payload), which halves its passes.
    K all = ~(K)0, any = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        if (warp * 32 * E + e * 32 + lane < n) {
            all &= k[e];
            any |= k[e];
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        all &= __shfl_xor_sync(0xffffffffu, all, o);
        any |= __shfl_xor_sync(0xffffffffu, any, o);
    }
    if (lane == 0) {
        atomicAnd(&world_all, all);
        atomicOr(&world_any, any);
    }
    __syncthreads();
    // The passes cover the span from the lowest to the highest differing bit, in as few passes
    // of at most 8 bits as it takes, split evenly: each pass then ranks on fewer ballots and
    // scans fewer counters (the particle trace's 20-bit span: 3 passes of 7 bits, not 8 + 8 + 4;
    // 100_humanoids' 12 bits: 2 of 6). At least 5 bits, so every thread scans whole counters.
    const unsigned long long differ = (unsigned long long)(world_all ^ world_any);
    const unsigned lo = differ ? __ffsll((long long)differ) - 1 : 0;
    const unsigned span = differ ? 64 - __clzll((long long)differ) - lo : 0;
    const unsigned passes = n == 0 ? 0 : (span + 7) / 8;
    const unsigned bits = passes ? max(5u, (span + passes - 1) / passes) : 5u;
    const OrderTile<K> t{cnt, skey, sval, lo, passes};
    const unsigned* src = nullptr; // the input order when every key is equal and no pass runs
    switch (bits) {
    case 5: src = order_block_passes<K, E, 5>(t, k); break;
    case 6: src = order_block_passes<K, E, 6>(t, k); break;
    case 7: src = order_block_passes<K, E, 7>(t, k); break;
    default: src = order_block_passes<K, E, 8>(t, k); break;
    }
    // Position p holds row src[p].
    __syncthreads();
    for (unsigned p = tid; p < n; p += T) order_place(a, r0 + p, r0 + (src ? src[p] : p));
    order_status(a, w, &bad);
}

// The radix sort's kernels hold four digit widths' passes (order_block_passes), which together
// would take up to 64 registers. Capped at 56 (4 bytes of spill in the 32-bit, 8-per-thread
// variant, none in the others), two blocks of up to 576 threads fit per multiprocessor, which
// the particle trace's 544-thread worlds need (H200, session 6: its order stage 108 us, 153 us
// with one block per SM).
#define ORDER_BLOCK_KERNEL(KIND, W, T, E)                                                          \
    extern "C" __global__ void __maxnreg__(56) order_##KIND##_##W##_e##E(OrderArgs a) {            \
        order_##KIND<T, E>(a);                                                                     \
    }
ORDER_KERNELS(block, ORDER_BLOCK_KERNEL)

// ---- large worlds: a stable LSD radix sort in global scratch, many blocks per world ----

// Worlds over the shared-memory tile are cut into chunks of ORDER_CHUNK rows, one block each
// (grid: world, chunk), so that a few large worlds still fill the device: one block per world
// kept 16 of the H200's 132 SMs busy on 16 worlds of 16,384 rows, 322 µs with 256-row rounds and
// 191 µs with 8192-row chunks (benches/results/logs, session 7 run 9 and session 8 run 1).
// A step is a chain of launches, each a programmatic dependent of the one before that waits for
// it before reading anything (and before returning, which keeps the chain in order):
//   order_radix_keys      the keys and row indices (keys_a, vals_a); per chunk the AND and OR of
//                         its keys and its first out-of-bounds row (OrderChunk)
//   per pass, one 8-bit digit of the world's span of differing bits (from the chunks' AND/OR):
//     order_radix_count   each chunk's digit counts (counts: world, chunk, digit)
//     order_radix_scatter each key to the world's start of its digit, plus that digit's keys in
//                         earlier chunks, plus its stable rank in its chunk (keys ping-pong)
//   order_radix_place     the permutation both ways and the world's bounds status
// The host launches the passes the key layout's width needs; a world whose keys differ in fewer
// bits skips the others, and its rows end in the buffer its own pass count says.
#define ORDER_CHUNK_E 8
#define ORDER_CHUNK (ORDER_RADIX_THREADS * ORDER_CHUNK_E)
#define ORDER_RADIX_WARPS (ORDER_RADIX_THREADS / 32)
static_assert(ORDER_RADIX_THREADS == ORDER_RADIX, "a thread per digit");

// The world and chunk of this block, and the rows of the world.
struct OrderSpan {
    unsigned w, c, r0, n, c0, nchunk;
};

__device__ __forceinline__ OrderSpan order_radix_block(const OrderArgs& a) {
    OrderSpan s;
    s.w = blockIdx.x;
    s.c = blockIdx.y;
    s.r0 = a.world_rowadr[s.w];
    s.n = a.world_rowadr[s.w + 1] - s.r0;
    s.c0 = s.c * ORDER_CHUNK;
    s.nchunk = (s.n + ORDER_CHUNK - 1) / ORDER_CHUNK;
    return s;
}

// The world's digit passes and the bit its first digit starts at, from its chunks' AND and OR
// of keys: the bits outside their span are equal in every key. Every thread must call it.
__device__ uint2 order_radix_passes(const OrderArgs& a, const OrderSpan& s) {
    __shared__ uint2 passes;
    if (threadIdx.x < 32) {
        unsigned long long all = ~0ull, any = 0;
        for (unsigned c = threadIdx.x; c < s.nchunk; c += 32) {
            const OrderChunk& k = a.chunks[(size_t)s.w * a.nchunk + c];
            all &= k.all;
            any |= k.any;
        }
        for (int o = 16; o > 0; o >>= 1) {
            all &= __shfl_xor_sync(0xffffffffu, all, o);
            any |= __shfl_xor_sync(0xffffffffu, any, o);
        }
        const unsigned long long differ = all ^ any;
        const unsigned lo = differ ? __ffsll((long long)differ) - 1 : 0;
        const unsigned span = differ ? 64 - __clzll((long long)differ) - lo : 0;
        if (threadIdx.x == 0) passes = make_uint2((span + 7) / 8, lo);
    }
    __syncthreads();
    return passes;
}

template <typename K>
__device__ void order_radix_keys(const OrderArgs& a) {
    grid_dependents_launch();
    grid_dependency_wait();
    __shared__ int bad;
    __shared__ K chunk_all, chunk_any;
    const OrderSpan s = order_radix_block(a);
    if (s.c0 >= s.n) return;
    const unsigned tid = threadIdx.x;
    if (tid == 0) {
        bad = 0x7fffffff;
        chunk_all = ~(K)0;
        chunk_any = 0;
    }
    __syncthreads();
    const OrderLayout L = *a.layout;
    K* keys = (K*)a.keys_a;
    K all = ~(K)0, any = 0;
#pragma unroll
    for (int e = 0; e < ORDER_CHUNK_E; ++e) {
        const unsigned i = s.c0 + e * ORDER_RADIX_THREADS + tid;
        if (i < s.n) {
            const K k = (K)order_key(a, L, s.r0 + i, &bad);
            keys[s.r0 + i] = k;
            a.vals_a[s.r0 + i] = s.r0 + i;
            all &= k;
            any |= k;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        all &= __shfl_xor_sync(0xffffffffu, all, o);
        any |= __shfl_xor_sync(0xffffffffu, any, o);
    }
    if ((tid & 31) == 0) {
        atomicAnd(&chunk_all, all);
        atomicOr(&chunk_any, any);
    }
    __syncthreads();
    if (tid == 0) {
        OrderChunk k;
        k.all = chunk_all;
        k.any = chunk_any;
        k.bad = bad;
        k.pad = 0;
        a.chunks[(size_t)s.w * a.nchunk + s.c] = k;
    }
}

template <typename K>
__device__ void order_radix_count(const OrderArgs& a) {
    grid_dependents_launch();
    grid_dependency_wait();
    __shared__ unsigned hist[ORDER_RADIX];
    const OrderSpan s = order_radix_block(a);
    if (s.c0 >= s.n) return;
    const uint2 passes = order_radix_passes(a, s);
    if (a.pass >= passes.x) return;
    const unsigned tid = threadIdx.x, lower = (1u << (tid & 31)) - 1u;
    const unsigned shift = passes.y + 8 * a.pass;
    const K* keys = (const K*)(a.pass & 1 ? a.keys_b : a.keys_a) + s.r0;
    hist[tid] = 0;
    __syncthreads();
    // One shared atomic per warp and digit: keys cluster on their high digits.
#pragma unroll
    for (int e = 0; e < ORDER_CHUNK_E; ++e) {
        const unsigned i = s.c0 + e * ORDER_RADIX_THREADS + tid;
        const bool in = i < s.n;
        const unsigned d = in ? (unsigned)(keys[i] >> shift) & (ORDER_RADIX - 1) : 0;
        const unsigned peers = order_peers<8>(d) & __ballot_sync(0xffffffffu, in);
        if (in && (peers & lower) == 0) atomicAdd(&hist[d], (unsigned)__popc(peers));
    }
    __syncthreads();
    a.counts[((size_t)s.w * a.nchunk + s.c) * ORDER_RADIX + tid] = hist[tid];
}

template <typename K>
__device__ void order_radix_scatter(const OrderArgs& a) {
    grid_dependents_launch();
    grid_dependency_wait();
    constexpr int E = ORDER_CHUNK_E;
    constexpr unsigned MASK = ORDER_RADIX - 1;
    __shared__ unsigned cnt[ORDER_RADIX_WARPS * ORDER_RADIX]; // [warp][digit]
    __shared__ unsigned base[ORDER_RADIX];
    const OrderSpan s = order_radix_block(a);
    if (s.c0 >= s.n) return;
    const uint2 passes = order_radix_passes(a, s);
    if (a.pass >= passes.x) return;
    const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const unsigned shift = passes.y + 8 * a.pass, m = min(ORDER_CHUNK, s.n - s.c0);
    const bool odd = a.pass & 1;
    const K* sk = (const K*)(odd ? a.keys_b : a.keys_a) + s.r0;
    K* dk = (K*)(odd ? a.keys_a : a.keys_b) + s.r0;
    const unsigned* sv = (odd ? a.vals_b : a.vals_a) + s.r0;
    unsigned* dv = (odd ? a.vals_a : a.vals_b) + s.r0;
    // Where this chunk's keys of digit tid go: after the world's keys of smaller digits and
    // after the keys of digit tid in earlier chunks.
    {
        const unsigned* col = a.counts + (size_t)s.w * a.nchunk * ORDER_RADIX + tid;
        unsigned total = 0, before = 0;
        for (unsigned c = 0; c < s.nchunk; ++c) {
            const unsigned v = col[(size_t)c * ORDER_RADIX];
            total += v;
            before += c < s.c ? v : 0;
        }
        unsigned all;
        base[tid] = order_scan(total, &all) + before;
    }
    // Stable ranks in the chunk, as order_block ranks its tile: warp w holds chunk positions
    // w * 32 E .. (w + 1) * 32 E - 1, lane-minor; ballot peers rank a warp's keys of one digit and
    // per-warp counters order the warps.
    K k[E];
    unsigned rank[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const unsigned p = warp * 32 * E + e * 32 + lane;
        k[e] = p < m ? sk[s.c0 + p] : ~(K)0; // padding ranks after the chunk's rows
    }
    unsigned* own = cnt + warp * ORDER_RADIX;
    for (unsigned i = lane; i < ORDER_RADIX; i += 32) own[i] = 0;
    __syncwarp();
    order_warp_ranks<K, E, 8>(k, shift, own, rank);
    __syncthreads();
    // Exclusive scan of the counters in (digit, warp) order: thread d takes digit d's.
    {
        unsigned sum = 0;
        for (unsigned w = 0; w < ORDER_RADIX_WARPS; ++w) sum += cnt[w * ORDER_RADIX + tid];
        unsigned all, run = order_scan(sum, &all);
        for (unsigned w = 0; w < ORDER_RADIX_WARPS; ++w) {
            const unsigned v = cnt[w * ORDER_RADIX + tid];
            cnt[w * ORDER_RADIX + tid] = run;
            run += v;
        }
    }
    __syncthreads();
    // own[d] - cnt[d]: this warp's first key of digit d among the chunk's keys of digit d.
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const unsigned p = warp * 32 * E + e * 32 + lane;
        if (p < m) {
            const unsigned d = (unsigned)(k[e] >> shift) & MASK;
            const unsigned to = base[d] + own[d] - cnt[d] + rank[e];
            dk[to] = k[e];
            dv[to] = sv[s.c0 + p];
        }
    }
}

extern "C" __global__ void __launch_bounds__(ORDER_RADIX_THREADS) order_radix_place(OrderArgs a) {
    grid_dependents_launch(); // the fused kernel after this one may start its discovery
    grid_dependency_wait();
    const OrderSpan s = order_radix_block(a);
    if (s.c == 0 && threadIdx.x < 32) {
        int bad = 0x7fffffff;
        for (unsigned c = threadIdx.x; c < s.nchunk; c += 32)
            bad = min(bad, a.chunks[(size_t)s.w * a.nchunk + c].bad);
        for (int o = 16; o > 0; o >>= 1) bad = min(bad, __shfl_xor_sync(0xffffffffu, bad, o));
        if (threadIdx.x == 0) a.status[s.w] = bad == 0x7fffffff ? 0 : bad;
    }
    if (s.c0 >= s.n) return;
    const uint2 passes = order_radix_passes(a, s);
    const unsigned* vals = passes.x & 1 ? a.vals_b : a.vals_a;
#pragma unroll
    for (int e = 0; e < ORDER_CHUNK_E; ++e) {
        const unsigned i = s.c0 + e * ORDER_RADIX_THREADS + threadIdx.x;
        if (i < s.n) order_place(a, s.r0 + i, vals[s.r0 + i]);
    }
}

#define ORDER_RADIX_KERNEL(STEP, W, K)                                                             \
    extern "C" __global__ void __launch_bounds__(ORDER_RADIX_THREADS)                              \
        order_radix_##STEP##_##W(OrderArgs a) {                                                    \
        order_radix_##STEP<K>(a);                                                                  \
    }
ORDER_RADIX_KERNEL(keys, u32, unsigned)
ORDER_RADIX_KERNEL(keys, u64, unsigned long long)
ORDER_RADIX_KERNEL(count, u32, unsigned)
ORDER_RADIX_KERNEL(count, u64, unsigned long long)
ORDER_RADIX_KERNEL(scatter, u32, unsigned)
ORDER_RADIX_KERNEL(scatter, u64, unsigned long long)
