// `dsu`: min-root union-find in global memory, one thread per hyperedge (grid: world x chunk),
// then a read-only root search per tree. The maps follow in maps_kernel.

extern "C" __global__ void dsu_union_kernel(Args a) {
    const int w = blockIdx.x;
    const int k = blockIdx.y * blockDim.x + threadIdx.x;
    if (w >= a.nworld) return;
    const int nr = world_nrow(a, w);
    if (k >= world_nhyper(a, w)) return;
    const unsigned h = hyper_index(a, w, k, nr);
    union_support(a.labels + (size_t)w * a.ntree, a.support, LDG(a.supadr + h),
                  LDG(a.supadr + h + 1));
}

// Every touched tree points straight at its root. Each thread writes only its own entry, and
// only the root, so concurrent read-only searches stay valid.
extern "C" __global__ void dsu_finalize_kernel(Args a) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t n = (size_t)a.nworld * a.ntree;
    if (i >= n) return;
    const size_t base = i - i % a.ntree;
    int* p = a.labels + base;
    const int t = (int)(i - base);
    if (((volatile int*)p)[t] < 0) return;
    p[t] = find_ro(p, t);
}
