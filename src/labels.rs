//! Canonical island numbering, shared by every mode.
//!
//! Connectivity modes produce, per world, the smallest tree id of each tree's component (−1 for
//! a tree no hyperedge touches). Numbering those roots in ascending order gives MuJoCo's
//! numbering: islands ordered by their smallest tree.

/// Turns min-roots into canonical island ids in place and returns the number of islands.
///
/// `labels[t]` must be −1 or a tree of `t`'s component with `labels[t] <= t`, where
/// `labels[t] == t` exactly for the component's smallest tree: min-roots, or the parent array of
/// a union-find that hooks larger roots under smaller ones. Each tree takes the island of its
/// (smaller, already ranked) label.
///
/// ```
/// let mut labels = vec![0, -1, 0, 3, 3, 5];
/// assert_eq!(archipelago::labels::rank_min_roots(&mut labels), 3);
/// assert_eq!(labels, [0, -1, 0, 1, 1, 2]);
/// ```
pub fn rank_min_roots(labels: &mut [i32]) -> i32 {
    let mut nisland = 0;
    for t in 0..labels.len() {
        let root = labels[t];
        if root < 0 {
            continue;
        }
        labels[t] = if root as usize == t {
            nisland += 1;
            nisland - 1
        } else {
            // The label is smaller than `t`, so it already holds its island id.
            labels[root as usize]
        };
    }
    nisland
}

/// Applies MuJoCo's rule for a world without rows, then ranks: returns `nisland`.
///
/// Native `mj_island` returns before discovery when a world has no efc rows, so there rowless
/// hyperedges alone make no islands, unless the model finds islands without rows
/// ([`crate::Model::islands_without_rows`]). `discovers` is [`crate::Input::discovers`] of the
/// world. Every mode calls this (or its device twin), so the rule lives in one place.
pub fn canonicalize(labels: &mut [i32], discovers: bool) -> i32 {
    if !discovers {
        labels.fill(-1);
        return 0;
    }
    rank_min_roots(labels)
}
