// `dense`: MuJoCo Warp's former kernel. A 0/1 tree_tree matrix per world (idempotent stores),
// then one depth-first search per world with an explicit stack of ntree^2 entries. Memory is
// 8 * nworld * ntree^2 bytes; this mode exists as the baseline to beat.

extern "C" __global__ void dense_build_kernel(Args a) {
    const int w = blockIdx.x;
    const int k = blockIdx.y * blockDim.x + threadIdx.x;
    if (w >= a.nworld) return;
    const int nr = world_nrow(a, w);
    if (k >= world_nhyper(a, w)) return;
    const unsigned h = hyper_index(a, w, k, nr);
    const unsigned s0 = LDG(a.supadr + h), s1 = LDG(a.supadr + h + 1);
    if (s0 >= s1) return;
    const size_t n = a.ntree;
    int* m = a.dense_mat + (size_t)w * n * n;
    const int f = LDG(a.support + s0);
    for (unsigned j = s0; j < s1; ++j) {
        const int t = LDG(a.support + j);
        m[(size_t)f * n + t] = 1;
        m[(size_t)t * n + f] = 1;
        m[(size_t)t * n + t] = 1; // the diagonal marks touched trees
    }
}

// One thread per world: trees in ascending order start a search, so each label is the
// smallest tree of its component. a.labels must be -1 beforehand.
extern "C" __global__ void dense_dfs_kernel(Args a) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= a.nworld) return;
    const size_t n = a.ntree;
    const int* m = a.dense_mat + (size_t)w * n * n;
    int* stack = a.dense_stack + (size_t)w * n * n;
    int* lab = a.labels + (size_t)w * n;
    for (int s = 0; s < (int)n; ++s) {
        if (!m[(size_t)s * n + s] || lab[s] >= 0) continue;
        lab[s] = s;
        size_t sp = 0;
        stack[sp++] = s;
        while (sp > 0) {
            const int u = stack[--sp];
            const int* row = m + (size_t)u * n;
            for (int v = 0; v < (int)n; ++v) {
                if (row[v] && lab[v] < 0) {
                    lab[v] = s;
                    stack[sp++] = v;
                }
            }
        }
    }
}
