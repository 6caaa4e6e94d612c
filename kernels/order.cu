// Deterministic mode on the device: each world's rows put into canonical order before discovery
// (src/gpu/order.rs launches these; src/order/keys.rs defines the key). Every kernel takes one
// `OrderArgs` by value, laid out like `gpu::order::OrderArgs`, and one block handles one world.
//
// Two sorts, picked per capacity and key width by the host:
//  - small worlds (<= 4096 rows): the key is packed with the row's index in the world into one
//    unique 32- or 64-bit value, and the block sorts its tile with a bitonic network, each
//    thread holding E consecutive values: exchanges inside a thread's E values stay in
//    registers, those within 32 threads go through warp shuffles (no barrier), the others
//    through a ping-pong shared-memory tile (one barrier per stage). Unique values make the
//    order equal to a stable sort by key.
//  - larger worlds or wider keys: the stable 8-bit LSD radix sort of src/order/sort.rs, keys and
//    values ping-ponging through global scratch.
// Both end in the same gather: canonical row types, support offsets (a block scan of the row
// lengths), supports, the rowless hyperedges copied as they are, and the permutation both ways.
// Nothing allocates and no launch depends on a value read back, so the step is graph-capturable.

#define ORDER_RADIX_THREADS 256
#define ORDER_RADIX_WARPS (ORDER_RADIX_THREADS / 32)
#define ORDER_RADIX 256
#define ORDER_CONTACT_CLASS 5u

// Where the key fields sit (src/order/keys.rs: KeyLayout). A field whose range is empty
// (min > max) has no rows; a row that needs it is out of bounds.
struct OrderLayout {
    int id_min, id_max, geom_min, geom_max, colid_min, colid_max;
    unsigned id_bits, geom_bits, colid_bits, payload_bits, bits, pad;
};

struct OrderArgs {
    const unsigned* world_rowadr;   // nworld + 1
    const unsigned* world_edgeadr;  // nworld + 1
    const unsigned* supadr;         // input rows' support offsets, then rowless hyperedges'
    const int* support;
    const unsigned char* row_type;
    const int* row_id;
    const int* geom;                // two per row
    const int* colid;
    const OrderLayout* layout;      // uploaded with each step
    unsigned* out_supadr;           // canonical rows, then the rowless hyperedges unchanged
    int* out_support;
    unsigned char* out_type;
    unsigned* order;                // canonical global row -> input global row
    unsigned* rank;                 // input global row -> canonical global row
    int* status;                    // per world: its first out-of-bounds row + 1, or 0
    unsigned long long* keys_a;     // radix scratch, per global row
    unsigned long long* keys_b;
    unsigned* vals_a;
    unsigned* vals_b;
    int nworld;
    unsigned idx_bits;              // bits of a row index inside a small world's tile
};

__device__ __forceinline__ bool order_in(int v, int lo, int hi) { return v >= lo && v <= hi; }

// Key of global row r (at most 64 bits); an out-of-bounds row lowers *bad (shared) to r + 1.
__device__ __forceinline__ unsigned long long order_key(const OrderArgs& a, const OrderLayout& L,
                                                        unsigned r, int* bad) {
    typedef unsigned long long K;
    unsigned type = LDG(a.row_type + r);
    if (type >= ORDER_CONTACT_CLASS) {
        int g1 = LDG(a.geom + 2 * r), g2 = LDG(a.geom + 2 * r + 1), c = LDG(a.colid + r);
        if (!order_in(g1, L.geom_min, L.geom_max) || !order_in(g2, L.geom_min, L.geom_max) ||
            !order_in(c, L.colid_min, L.colid_max)) {
            atomicMin(bad, (int)r + 1);
            return 0;
        }
        K packed = ((K)(unsigned)(g1 - L.geom_min) << (L.geom_bits + L.colid_bits)) |
                   ((K)(unsigned)(g2 - L.geom_min) << L.colid_bits) | (K)(unsigned)(c - L.colid_min);
        unsigned shift = L.payload_bits - (2 * L.geom_bits + L.colid_bits);
        return ((K)ORDER_CONTACT_CLASS << L.payload_bits) | (packed << shift);
    }
    int id = LDG(a.row_id + r);
    if (!order_in(id, L.id_min, L.id_max)) {
        atomicMin(bad, (int)r + 1);
        return 0;
    }
    K v = (K)(unsigned)(id - L.id_min);
    return ((K)type << L.payload_bits) | (v << (L.payload_bits - L.id_bits));
}

// Exclusive scan of one value per thread over the block (any multiple of 32 up to 1024
// threads); *total gets the sum. Every thread of the block must call it.
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
    __syncthreads();
    return before + x - v;
}

// One round of the gather: canonical row r0 + p takes input row src (valid when `valid`),
// its supports starting at *carry (advanced by the round's total). Every thread must call it.
__device__ __forceinline__ void order_gather_round(const OrderArgs& a, unsigned r0, unsigned p,
                                                   unsigned src, bool valid, unsigned* carry) {
    unsigned s0 = 0, len = 0;
    if (valid) {
        s0 = a.supadr[src];
        len = a.supadr[src + 1] - s0;
    }
    unsigned total;
    unsigned adr = *carry + order_scan(len, &total);
    if (valid) {
        unsigned dst = r0 + p;
        a.order[dst] = src;
        a.rank[src] = dst;
        a.out_type[dst] = a.row_type[src];
        a.out_supadr[dst] = adr;
        for (unsigned j = 0; j < len; ++j) a.out_support[adr + j] = a.support[s0 + j];
    }
    *carry += total;
}

// The rowless hyperedges of world w keep their place (the rows' supports fill the same span in
// any order), their supports one contiguous span copied by the whole block; the last world also
// writes the offset that ends the rows. Then the world's bounds status (every thread must call
// this; `bad` is the block's shared flag).
__device__ void order_finish(const OrderArgs& a, unsigned w, const int* bad) {
    unsigned nrow = a.world_rowadr[a.nworld];
    unsigned e0 = a.world_edgeadr[w], e1 = a.world_edgeadr[w + 1];
    for (unsigned e = e0 + threadIdx.x; e < e1; e += blockDim.x)
        a.out_supadr[nrow + e + 1] = a.supadr[nrow + e + 1];
    unsigned s0 = a.supadr[nrow + e0], s1 = a.supadr[nrow + e1];
    for (unsigned j = s0 + threadIdx.x; j < s1; j += blockDim.x) a.out_support[j] = a.support[j];
    if (threadIdx.x == 0) {
        if (w + 1 == (unsigned)a.nworld) a.out_supadr[nrow] = a.supadr[nrow];
        int b = *bad;
        a.status[w] = b == 0x7fffffff ? 0 : b;
    }
}

// The gather of a block whose thread holds canonical rows base .. base + E - 1 of its world
// (input rows r0 + src[e]): one block scan places the threads' supports one after another.
// Every load goes through the read-only path and comes before the stores, so a thread's loads
// overlap instead of each waiting behind the store before it (the gather was the latency chain
// of a big world's order step).
template <int E>
__device__ void order_gather_blocked(const OrderArgs& a, unsigned r0, unsigned n, unsigned base,
                                     const unsigned* src_local) {
    unsigned src[E], s0[E], len[E], type[E], sum = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) {
        const bool valid = base + e < n;
        src[e] = r0 + src_local[e];
        s0[e] = valid ? LDG(a.supadr + src[e]) : 0u;
        len[e] = valid ? LDG(a.supadr + src[e] + 1) - s0[e] : 0u;
        type[e] = valid ? LDG(a.row_type + src[e]) : 0u;
        sum += len[e];
    }
    unsigned total;
    unsigned adr = LDG(a.supadr + r0) + order_scan(sum, &total);
#pragma unroll
    for (int e = 0; e < E; ++e) {
        if (base + e < n) {
            const unsigned dst = r0 + base + e;
            a.order[dst] = src[e];
            a.rank[src[e]] = dst;
            a.out_type[dst] = (unsigned char)type[e];
            a.out_supadr[dst] = adr;
            for (unsigned j = 0; j < len[e]; ++j) a.out_support[adr + j] = LDG(a.support + s0[e] + j);
            adr += len[e];
        }
    }
}

// ---- small worlds: bitonic sort of packed (key, index) values in registers ----

// Thread t holds tile positions t*E .. t*E + E - 1. A compare-exchange at distance j is done in
// the thread's registers when j < E, by a warp shuffle with lane t ^ (j / E) when j < 32 E, and
// through the shared-memory tile (one barrier) otherwise.
template <typename V, int E>
__device__ void order_small(const OrderArgs& a) {
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
    unsigned src[E];
#pragma unroll
    for (int e = 0; e < E; ++e) src[e] = (unsigned)(v[e] & mask);
    order_gather_blocked<E>(a, r0, n, base, src);
    order_finish(a, w, &bad);
}

#define ORDER_SMALL(NAME, V, E)                                                                   \
    extern "C" __global__ void __launch_bounds__(1024) NAME(OrderArgs a) { order_small<V, E>(a); }
ORDER_SMALL(order_small_u32_e1, unsigned, 1)
ORDER_SMALL(order_small_u32_e2, unsigned, 2)
ORDER_SMALL(order_small_u32_e4, unsigned, 4)
ORDER_SMALL(order_small_u64_e1, unsigned long long, 1)
ORDER_SMALL(order_small_u64_e2, unsigned long long, 2)
ORDER_SMALL(order_small_u64_e4, unsigned long long, 4)

// ---- small worlds: stable LSD radix sort in shared memory ----

// The bitonic network costs O(n log^2 n) exchanges per world and made the step compute-bound on
// big tiles (a 4096-row world: 78 stages over every value). This sort takes ceil(bits / 8)
// passes of 8-bit digits over keys alone (the sort is stable, so no index is packed and a
// 32-bit key serves up to 32 bits). Per pass, each warp ranks its 32 E values round by round
// (__match_any_sync within a round, a per-warp digit counter across rounds), one block scan
// over the (digit, warp) counters gives every digit's start per warp, and the values move
// through shared memory. Warp w holds positions w * 32E + e * 32 + lane, so (warp, round, lane)
// is position order and equal digits keep it. Shared memory: 256 counters per warp, the keys
// and the row indices (order_block_smem in src/gpu/order.rs).
template <typename K, int E>
__device__ void order_block(const OrderArgs& a) {
    extern __shared__ unsigned long long order_tile[];
    const unsigned T = blockDim.x, tid = threadIdx.x, w = blockIdx.x;
    const unsigned lane = tid & 31, warp = tid >> 5, nwarp = T >> 5, N = T * E;
    const unsigned lower = (1u << lane) - 1u;
    const unsigned r0 = a.world_rowadr[w], n = a.world_rowadr[w + 1] - r0;
    const OrderLayout L = *a.layout;
    unsigned* cnt = (unsigned*)order_tile;       // [digit][warp]
    K* skey = (K*)(cnt + ORDER_RADIX * nwarp);   // N keys (8-byte aligned: 1 KiB per warp above)
    unsigned* sval = (unsigned*)(skey + N);      // N row indices
    __shared__ int bad;
    if (tid == 0) bad = 0x7fffffff;
    __syncthreads();
    K k[E];
    unsigned v[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        unsigned p = warp * 32 * E + e * 32 + lane;
        // Padding sorts after every row: all-ones digits, and later than any equal key.
        k[e] = p < n ? (K)order_key(a, L, r0 + p, &bad) : ~(K)0;
        v[e] = p;
    }
    const unsigned passes = (L.bits + 7) / 8;
    for (unsigned pass = 0; pass < passes; ++pass) {
        const unsigned shift = 8 * pass;
        for (unsigned i = tid; i < ORDER_RADIX * nwarp; i += T) cnt[i] = 0;
        __syncthreads();
        unsigned dig[E], rank[E];
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const unsigned d = (unsigned)(k[e] >> shift) & (ORDER_RADIX - 1);
            const unsigned peers = __match_any_sync(0xffffffffu, d);
            const unsigned before = __popc(peers & lower);
            const unsigned at = cnt[d * nwarp + warp];
            dig[e] = d;
            rank[e] = at + before;
            __syncwarp();
            if (before == 0) cnt[d * nwarp + warp] = at + __popc(peers);
            __syncwarp();
        }
        __syncthreads();
        // Exclusive scan of the counters in (digit, warp) order: 8 consecutive per thread.
        unsigned c[8], sum = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            c[i] = cnt[tid * 8 + i];
            sum += c[i];
        }
        unsigned total;
        unsigned run = order_scan(sum, &total);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            cnt[tid * 8 + i] = run;
            run += c[i];
        }
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const unsigned pos = cnt[dig[e] * nwarp + warp] + rank[e];
            skey[pos] = k[e];
            sval[pos] = v[e];
        }
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) {
            const unsigned p = warp * 32 * E + e * 32 + lane;
            k[e] = skey[p];
            v[e] = sval[p];
        }
        __syncthreads();  // before the next pass clears the counters
    }
    if (passes == 0) {  // every key equal: the input order
#pragma unroll
        for (int e = 0; e < E; ++e) sval[warp * 32 * E + e * 32 + lane] = v[e];
        __syncthreads();
    }
    // Gather in the blocked arrangement: thread t takes canonical rows t * E .. t * E + E - 1.
    const unsigned base = tid * E;
    unsigned src[E];
#pragma unroll
    for (int e = 0; e < E; ++e) src[e] = sval[base + e];
    order_gather_blocked<E>(a, r0, n, base, src);
    order_finish(a, w, &bad);
}

#define ORDER_BLOCK(NAME, K, E)                                                                   \
    extern "C" __global__ void __launch_bounds__(1024) NAME(OrderArgs a) { order_block<K, E>(a); }
ORDER_BLOCK(order_block_u32_e1, unsigned, 1)
ORDER_BLOCK(order_block_u32_e2, unsigned, 2)
ORDER_BLOCK(order_block_u32_e4, unsigned, 4)
ORDER_BLOCK(order_block_u64_e1, unsigned long long, 1)
ORDER_BLOCK(order_block_u64_e2, unsigned long long, 2)
ORDER_BLOCK(order_block_u64_e4, unsigned long long, 4)

// ---- large worlds or wide keys: stable LSD radix sort (8-bit digits) per world ----

template <typename K>
__device__ __forceinline__ unsigned order_digit(K k, unsigned shift) {
    return (unsigned)(k >> shift) & (ORDER_RADIX - 1);
}

// Stable scatter of src[0..n) by the digit at `shift` to dst, starting each digit at base[d]
// (shared, advanced by this call). 256-element tiles in order; inside a tile, warps in order and
// lanes in order (match + popc), so equal digits keep their input order.
template <typename K>
__device__ void order_scatter(const K* src_k, const unsigned* src_v, K* dst_k, unsigned* dst_v,
                              unsigned n, unsigned shift, unsigned* base) {
    __shared__ unsigned warp_cnt[ORDER_RADIX_WARPS][ORDER_RADIX];
    __shared__ unsigned tile_cnt[ORDER_RADIX];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (unsigned w = 0; w < ORDER_RADIX_WARPS; ++w) warp_cnt[w][tid] = 0;
    __syncthreads();
    for (unsigned start = 0; start < n; start += ORDER_RADIX_THREADS) {
        unsigned i = start + tid;
        bool valid = i < n;
        K k = valid ? src_k[i] : (K)0;
        unsigned v = valid ? src_v[i] : 0u;
        unsigned d = valid ? order_digit(k, shift) : ORDER_RADIX;  // invalid lanes group apart
        unsigned peers = __match_any_sync(0xffffffffu, d);
        unsigned rank = __popc(peers & ((1u << lane) - 1u));
        if (valid && rank == 0) warp_cnt[warp][d] = __popc(peers);
        __syncthreads();
        {
            unsigned run = 0;
            for (unsigned w = 0; w < ORDER_RADIX_WARPS; ++w) {
                unsigned c = warp_cnt[w][tid];
                warp_cnt[w][tid] = run;
                run += c;
            }
            tile_cnt[tid] = run;
        }
        __syncthreads();
        if (valid) {
            unsigned pos = base[d] + warp_cnt[warp][d] + rank;
            dst_k[pos] = k;
            dst_v[pos] = v;
        }
        __syncthreads();
        base[tid] += tile_cnt[tid];
        for (unsigned w = 0; w < ORDER_RADIX_WARPS; ++w) warp_cnt[w][tid] = 0;
        __syncthreads();
    }
}

// Keys of type K (32-bit when the key fits) in the 64-bit-per-row scratch.
template <typename K>
__device__ void order_radix(const OrderArgs& a) {
    __shared__ unsigned hist[ORDER_RADIX];
    __shared__ int skip;
    __shared__ int bad;
    const unsigned w = blockIdx.x, tid = threadIdx.x;
    const unsigned r0 = a.world_rowadr[w], n = a.world_rowadr[w + 1] - r0;
    const OrderLayout L = *a.layout;
    K* keys_a = (K*)a.keys_a;
    K* keys_b = (K*)a.keys_b;
    if (tid == 0) bad = 0x7fffffff;
    __syncthreads();
    for (unsigned i = tid; i < n; i += ORDER_RADIX_THREADS) {
        keys_a[r0 + i] = (K)order_key(a, L, r0 + i, &bad);
        a.vals_a[r0 + i] = r0 + i;
    }
    K *sk = keys_a + r0, *dk = keys_b + r0;
    unsigned *sv = a.vals_a + r0, *dv = a.vals_b + r0;
    unsigned passes = (L.bits + 7) / 8;
    for (unsigned p = 0; p < passes; ++p) {
        unsigned shift = 8 * p;
        hist[tid] = 0;
        if (tid == 0) skip = 0;
        __syncthreads();
        for (unsigned i = tid; i < n; i += ORDER_RADIX_THREADS)
            atomicAdd(&hist[order_digit(sk[i], shift)], 1u);
        __syncthreads();
        unsigned c = hist[tid];
        if (c == n) skip = 1;  // every key has this digit: the pass is the identity
        unsigned total;
        unsigned b = order_scan(c, &total);  // synchronizes, so `skip` is visible
        bool identity = skip;
        __syncthreads();  // before the next pass resets `skip`
        if (identity) continue;
        hist[tid] = b;
        __syncthreads();
        order_scatter<K>(sk, sv, dk, dv, n, shift, hist);
        K* tk = sk; sk = dk; dk = tk;
        unsigned* tv = sv; sv = dv; dv = tv;
    }
    __syncthreads();
    unsigned carry = a.supadr[r0];
    for (unsigned start = 0; start < n; start += ORDER_RADIX_THREADS) {
        unsigned p = start + tid;
        order_gather_round(a, r0, p, p < n ? sv[p] : 0u, p < n, &carry);
    }
    order_finish(a, w, &bad);
}

extern "C" __global__ void __launch_bounds__(ORDER_RADIX_THREADS) order_radix_u32(OrderArgs a) {
    order_radix<unsigned>(a);
}
extern "C" __global__ void __launch_bounds__(ORDER_RADIX_THREADS) order_radix_u64(OrderArgs a) {
    order_radix<unsigned long long>(a);
}
