// Deterministic mode on the device: canonical row keys, a stable LSD radix sort (8-bit digits,
// the algorithm of src/order/sort.rs) and the gather of the rows into canonical order.
//
// Two strategies, measured against each other by the benchmark:
//  - segmented: one block per world does keys, every digit pass and the gather (one launch);
//  - global: the world index is the leading digit of a device-wide sort (keys, then per digit a
//    histogram, a scan and a scatter), followed by the per-world gather.
// Every buffer is allocated by the host once; nothing here allocates, and no launch depends on
// a value read back by the host, so the sequence can be captured in a CUDA graph.

#define ORDER_THREADS 256
#define ORDER_WARPS (ORDER_THREADS / 32)
#define ORDER_RADIX 256
#define ORDER_CONTACT_CLASS 5u

// Where the key fields sit (see src/order/keys.rs: KeyLayout). A field whose range is empty
// (min > max) has no rows; a row that needs it is out of bounds.
struct OrderLayout {
    int id_min, id_max, geom_min, geom_max, colid_min, colid_max;
    unsigned id_bits, geom_bits, colid_bits, payload_bits;
};

__device__ __forceinline__ bool order_in(int v, int lo, int hi) { return v >= lo && v <= hi; }

// Key of global row r; flags the first out-of-bounds row in *status (row + 1).
template <typename K>
__device__ __forceinline__ K order_key(const OrderLayout& L, int r, const unsigned char* row_type,
                                       const int* row_id, const int* geom, const int* colid,
                                       int* status) {
    unsigned type = row_type[r];
    if (type >= ORDER_CONTACT_CLASS) {
        int g1 = geom[2 * r], g2 = geom[2 * r + 1], c = colid[r];
        if (!order_in(g1, L.geom_min, L.geom_max) || !order_in(g2, L.geom_min, L.geom_max) ||
            !order_in(c, L.colid_min, L.colid_max)) {
            atomicCAS(status, 0, r + 1);
            return 0;
        }
        K packed = ((K)(unsigned)(g1 - L.geom_min) << (L.geom_bits + L.colid_bits)) |
                   ((K)(unsigned)(g2 - L.geom_min) << L.colid_bits) | (K)(unsigned)(c - L.colid_min);
        unsigned shift = L.payload_bits - (2 * L.geom_bits + L.colid_bits);
        return ((K)ORDER_CONTACT_CLASS << L.payload_bits) | (packed << shift);
    }
    int id = row_id[r];
    if (!order_in(id, L.id_min, L.id_max)) {
        atomicCAS(status, 0, r + 1);
        return 0;
    }
    K v = (K)(unsigned)(id - L.id_min);
    return ((K)type << L.payload_bits) | (v << (L.payload_bits - L.id_bits));
}

template <typename K>
__device__ __forceinline__ unsigned order_digit(K k, unsigned shift) {
    return (unsigned)(k >> shift) & (ORDER_RADIX - 1);
}

// Exclusive scan of one value per thread over the block; *total gets the sum.
__device__ unsigned order_block_scan(unsigned v, unsigned* total) {
    __shared__ unsigned warp_sum[ORDER_WARPS];
    unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned x = v;
    for (int o = 1; o < 32; o <<= 1) {
        unsigned y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sum[warp] = x;
    __syncthreads();
    if (warp == 0) {
        unsigned s = lane < ORDER_WARPS ? warp_sum[lane] : 0;
        for (int o = 1; o < 32; o <<= 1) {
            unsigned y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o) s += y;
        }
        if (lane < ORDER_WARPS) warp_sum[lane] = s;
    }
    __syncthreads();
    unsigned before = warp == 0 ? 0 : warp_sum[warp - 1];
    *total = warp_sum[ORDER_WARPS - 1];
    __syncthreads();
    return before + x - v;
}

// Stable scatter of src[0..n) by the digit at `shift` to dst, starting each digit at base[d]
// (shared, advanced by this call). 256-element tiles in order; inside a tile, warps in order and
// lanes in order (match + popc), so equal digits keep their input order.
template <typename K>
__device__ void order_scatter(const K* src_k, const unsigned* src_v, K* dst_k, unsigned* dst_v,
                              unsigned n, unsigned shift, unsigned* base) {
    __shared__ unsigned warp_cnt[ORDER_WARPS][ORDER_RADIX];
    __shared__ unsigned tile_cnt[ORDER_RADIX];
    unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (unsigned w = 0; w < ORDER_WARPS; ++w) warp_cnt[w][tid] = 0;
    __syncthreads();
    for (unsigned start = 0; start < n; start += ORDER_THREADS) {
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
            for (unsigned w = 0; w < ORDER_WARPS; ++w) {
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
        for (unsigned w = 0; w < ORDER_WARPS; ++w) warp_cnt[w][tid] = 0;
        __syncthreads();
    }
}

// Writes world w's rows in the order vals[r0..r1) (global input rows): order, type, id,
// support offsets (the world's support block starts where it did) and supports.
__device__ void order_gather_world(unsigned r0, unsigned r1, const unsigned* vals,
                                   const unsigned char* row_type, const int* row_id,
                                   const unsigned* row_supadr, const int* row_support,
                                   unsigned* order, unsigned char* out_type, int* out_id,
                                   unsigned* out_supadr, int* out_support, int last_world) {
    unsigned n = r1 - r0, carry = row_supadr[r0];
    for (unsigned start = 0; start < n; start += ORDER_THREADS) {
        unsigned i = start + threadIdx.x;
        unsigned src = 0, len = 0;
        if (i < n) {
            src = vals[r0 + i];
            len = row_supadr[src + 1] - row_supadr[src];
        }
        unsigned total;
        unsigned adr = carry + order_block_scan(len, &total);
        if (i < n) {
            order[r0 + i] = src;
            out_type[r0 + i] = row_type[src];
            out_id[r0 + i] = row_id[src];
            out_supadr[r0 + i] = adr;
            const int* s = row_support + row_supadr[src];
            for (unsigned j = 0; j < len; ++j) out_support[adr + j] = s[j];
        }
        carry += total;
    }
    if (threadIdx.x == 0 && last_world) out_supadr[r1] = row_supadr[r1];
}

// Segmented: one block per world. keys/vals a and b are ping-pong scratch indexed by global row.
template <typename K>
__device__ void order_segmented(OrderLayout L, unsigned bits, const unsigned* world_rowadr,
                                const unsigned char* row_type, const int* row_id, const int* geom,
                                const int* colid, const unsigned* row_supadr,
                                const int* row_support, K* keys_a, K* keys_b, unsigned* vals_a,
                                unsigned* vals_b, unsigned* order, unsigned char* out_type,
                                int* out_id, unsigned* out_supadr, int* out_support, int* status,
                                int nworld) {
    __shared__ unsigned hist[ORDER_RADIX];
    __shared__ int skip;
    unsigned w = blockIdx.x, tid = threadIdx.x;
    unsigned r0 = world_rowadr[w], r1 = world_rowadr[w + 1], n = r1 - r0;
    for (unsigned i = tid; i < n; i += ORDER_THREADS) {
        keys_a[r0 + i] = order_key<K>(L, r0 + i, row_type, row_id, geom, colid, status);
        vals_a[r0 + i] = r0 + i;
    }
    K *sk = keys_a + r0, *dk = keys_b + r0;
    unsigned *sv = vals_a + r0, *dv = vals_b + r0;
    unsigned passes = (bits + 7) / 8;
    for (unsigned p = 0; p < passes; ++p) {
        unsigned shift = 8 * p;
        hist[tid] = 0;
        if (tid == 0) skip = 0;
        __syncthreads();
        for (unsigned i = tid; i < n; i += ORDER_THREADS) atomicAdd(&hist[order_digit(sk[i], shift)], 1u);
        __syncthreads();
        unsigned c = hist[tid];
        if (c == n) skip = 1;  // every key has this digit: the pass is the identity
        unsigned total;
        unsigned b = order_block_scan(c, &total);  // synchronizes, so `skip` is visible
        if (skip) continue;
        hist[tid] = b;
        __syncthreads();
        order_scatter<K>(sk, sv, dk, dv, n, shift, hist);
        K* tk = sk; sk = dk; dk = tk;
        unsigned* tv = sv; sv = dv; dv = tv;
    }
    __syncthreads();
    const unsigned* vals = (sv == vals_a + r0) ? vals_a : vals_b;
    order_gather_world(r0, r1, vals, row_type, row_id, row_supadr, row_support, order, out_type,
                       out_id, out_supadr, out_support, w + 1 == (unsigned)nworld);
}

#define ORDER_SEGMENTED(NAME, K)                                                                  \
    extern "C" __global__ void __launch_bounds__(ORDER_THREADS) NAME(                           \
        OrderLayout L, unsigned bits, const unsigned* world_rowadr, const unsigned char* row_type, \
        const int* row_id, const int* geom, const int* colid, const unsigned* row_supadr,        \
        const int* row_support, K* keys_a, K* keys_b, unsigned* vals_a, unsigned* vals_b,        \
        unsigned* order, unsigned char* out_type, int* out_id, unsigned* out_supadr,             \
        int* out_support, int* status, int nworld) {                                             \
        order_segmented<K>(L, bits, world_rowadr, row_type, row_id, geom, colid, row_supadr,     \
                           row_support, keys_a, keys_b, vals_a, vals_b, order, out_type, out_id, \
                           out_supadr, out_support, status, nworld);                             \
    }
ORDER_SEGMENTED(order_segmented_u32, unsigned)
ORDER_SEGMENTED(order_segmented_u64, unsigned long long)

// ---- global: the world as the leading digit of one device-wide sort (64-bit keys) ----

// One thread per row: key = world << bits | row key; value = the row.
extern "C" __global__ void order_global_keys(OrderLayout L, unsigned bits,
                                             const unsigned* world_rowadr, int nworld,
                                             const unsigned char* row_type, const int* row_id,
                                             const int* geom, const int* colid,
                                             unsigned long long* keys, unsigned* vals, int* status) {
    unsigned nrow = world_rowadr[nworld];
    unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrow) return;
    // The world of row r: the last w with world_rowadr[w] <= r (binary search).
    int lo = 0, hi = nworld - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (world_rowadr[mid] <= r) lo = mid; else hi = mid - 1;
    }
    keys[r] = ((unsigned long long)lo << bits) |
              order_key<unsigned long long>(L, r, row_type, row_id, geom, colid, status);
    vals[r] = r;
}

// Per chunk of `chunk` rows: digit counts into counts[digit * nchunk + chunk].
extern "C" __global__ void __launch_bounds__(ORDER_THREADS)
order_global_hist(const unsigned long long* keys, const unsigned* world_rowadr, int nworld,
                  unsigned shift, unsigned chunk, unsigned nchunk, unsigned* counts) {
    __shared__ unsigned hist[ORDER_RADIX];
    unsigned nrow = world_rowadr[nworld];
    unsigned c = blockIdx.x, tid = threadIdx.x;
    hist[tid] = 0;
    __syncthreads();
    unsigned start = c * chunk, end = min(start + chunk, nrow);
    for (unsigned i = start + tid; i < end; i += ORDER_THREADS)
        atomicAdd(&hist[order_digit(keys[i], shift)], 1u);
    __syncthreads();
    counts[tid * nchunk + c] = hist[tid];
}

// Exclusive scan of counts[0 .. 256 * nchunk) in place, one block.
extern "C" __global__ void __launch_bounds__(ORDER_THREADS)
order_global_scan(unsigned* counts, unsigned nchunk) {
    unsigned n = ORDER_RADIX * nchunk;
    unsigned per = (n + ORDER_THREADS - 1) / ORDER_THREADS;
    unsigned start = threadIdx.x * per, end = min(start + per, n);
    unsigned sum = 0;
    for (unsigned i = start; i < end; ++i) sum += counts[i];
    unsigned total;
    unsigned run = order_block_scan(sum, &total);
    for (unsigned i = start; i < end; ++i) {
        unsigned c = counts[i];
        counts[i] = run;
        run += c;
    }
}

// Per chunk: stable scatter from the chunk's digit offsets.
extern "C" __global__ void __launch_bounds__(ORDER_THREADS)
order_global_scatter(const unsigned long long* src_k, const unsigned* src_v,
                     unsigned long long* dst_k, unsigned* dst_v, const unsigned* world_rowadr,
                     int nworld, unsigned shift, unsigned chunk, unsigned nchunk,
                     const unsigned* counts) {
    __shared__ unsigned base[ORDER_RADIX];
    unsigned nrow = world_rowadr[nworld];
    unsigned c = blockIdx.x;
    base[threadIdx.x] = counts[threadIdx.x * nchunk + c];
    __syncthreads();
    unsigned start = c * chunk;
    if (start >= nrow) return;
    unsigned n = min(chunk, nrow - start);
    order_scatter<unsigned long long>(src_k + start, src_v + start, dst_k, dst_v, n, shift, base);
}

// One block per world: gather in the order the global sort left in vals.
extern "C" __global__ void __launch_bounds__(ORDER_THREADS)
order_global_gather(const unsigned* world_rowadr, int nworld, const unsigned* vals,
                    const unsigned char* row_type, const int* row_id,
                    const unsigned* row_supadr, const int* row_support, unsigned* order,
                    unsigned char* out_type, int* out_id, unsigned* out_supadr,
                    int* out_support) {
    unsigned w = blockIdx.x;
    order_gather_world(world_rowadr[w], world_rowadr[w + 1], vals, row_type, row_id,
                       row_supadr, row_support, order, out_type, out_id, out_supadr, out_support,
                       w + 1 == (unsigned)nworld);
}
