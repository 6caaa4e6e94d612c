//! What the warp kernel and the node-level maps read of a slot of few nodes besides the
//! cache's own tables: its nodes' heads, each tree's place among its node's trees, its static
//! rows' nodes and counts, and its runs of one node among its static rows and its trees. Made on
//! the host once, when the slot is contracted (`kernels/quotient.cu`, `kernels/quotient_warp.cu`
//! read them).

use crate::model::Model;
use crate::quotient::Tables;

/// Slots of at most this many nodes take the kernel's node-level maps (`Q_NODE_MAX` in
/// `kernels/quotient.cu`: one warp handles the nodes).
pub(super) const NODE_MAPS_MAX: u32 = 32;

/// Runs of one node at most, among a slot's static rows or its trees, for the warp kernel to
/// place them by runs (`QW_RUNS` in `kernels/quotient_warp.cu`); it scatters those of a slot
/// with more one by one.
pub(super) const RUNS_MAX: usize = 32;

/// Bytes per slot of the runs table (`QR_*` in `kernels/quotient_warp.cu`), a multiple of 16:
/// the counts of runs of static rows and of trees (16 bytes), then per run of static rows its
/// first row and its row count << 5 | its node (8 bytes), per run of trees its first tree, tree
/// count, first dof and dof count << 5 | its node (16 bytes), then per tree (rounded up to 4
/// bytes) and per static row its run as a byte.
pub(super) fn run_bytes(ntree: usize, max_static: usize) -> usize {
    (16 + 24 * RUNS_MAX + ntree.next_multiple_of(4) + max_static).next_multiple_of(16)
}

/// Cuts elements (each one's node, in order) into runs of consecutive elements of one node:
/// `run(j, first, count, node)` for each run while there are at most [`RUNS_MAX`], and each
/// element's run in `run_of` then. Returns the number of runs (past [`RUNS_MAX`], the kernel
/// scatters the elements one by one).
pub(super) fn cut_runs(
    nodes: impl Iterator<Item = u32>,
    run_of: &mut [u8],
    mut run: impl FnMut(usize, usize, usize, u32),
) -> usize {
    let (mut count, mut open, mut len) = (0, None, 0);
    for (i, node) in nodes.enumerate() {
        match open {
            Some((_, n)) if n == node => {}
            _ => {
                if let Some((first, n)) = open.filter(|_| count <= RUNS_MAX) {
                    run(count - 1, first, i - first, n);
                }
                count += 1;
                open = Some((i, node));
            }
        }
        if count <= RUNS_MAX {
            run_of[i] = (count - 1) as u8;
        }
        len = i + 1;
    }
    if let Some((first, n)) = open.filter(|_| count <= RUNS_MAX) {
        run(count - 1, first, len - first, n);
    }
    count
}

/// Writes `words` little-endian (as the device reads them) from byte `at` of `bytes`.
fn put_words(bytes: &mut [u8], at: usize, words: &[u32]) {
    for (b, w) in bytes[at..].chunks_exact_mut(4).zip(words) {
        b.copy_from_slice(&w.to_le_bytes());
    }
}

/// 16-byte records per slot in `node_head` (`Q_HEAD`): the contraction number, then one per
/// node and one past the last.
pub(super) const NODE_HEAD: usize = NODE_MAPS_MAX as usize + 2;

/// 8-byte words per world in the node-level partition check's cache (`Q_CACHE_NODE`).
pub(super) const NODE_CACHE_WORDS: usize = 1 + NODE_MAPS_MAX as usize / 8;

/// What the kernel's node-level maps read besides the slot's tables, filled per slot of at
/// most [`NODE_MAPS_MAX`] nodes when it is contracted. Only for models whose trees own
/// consecutive dof blocks in tree order (the maps place a tree's dofs right after its place).
/// The warp that handles the nodes reads one slot's `head` (a few cache lines), the pass over
/// trees one `place` per tree.
pub(super) struct NodeTables {
    /// The model's first dof per tree, then its dof count (trees own dof blocks in tree
    /// order, so a tree's dofs are `dofadr[t]..dofadr[t + 1]`).
    pub(super) dofadr: Vec<u32>,
    /// Per slot (`ntree + 1`): dofs of the slot's `node_trees` before each place.
    pub(super) pre: Vec<u32>,
    /// Per slot, [`NODE_HEAD`] records of 4 words: {contraction number (low, high), 0, 0},
    /// then per node and one past the last {first place in `node_trees`, `pre` there, smallest
    /// tree, 0}. The contraction number is unique over the solver's life (0: none): the
    /// device's node-level partition check keys on it.
    pub(super) head: Vec<u32>,
    /// Per slot (`ntree` pairs): each tree's place in its node's list and the dofs of its
    /// node's trees before it.
    pub(super) place: Vec<i32>,
    /// Per slot, [`NODE_MAPS_MAX`] records of 4 words: each node's static rows, and of them
    /// the equalities and the friction rows (the warp kernel's row counts per island).
    pub(super) efc: Vec<u32>,
    /// Per slot (`max_static` bytes): the node of each static row, the one of its first tree
    /// (the warp kernel's island of a static row, once the row is checked against the slot).
    pub(super) row_node: Vec<u8>,
    /// Per slot (`run_bytes`): its runs of one node among the static rows and the trees (see
    /// [`cut_runs`]), then per tree and per static row its run.
    pub(super) runs: Vec<u8>,
    pub(super) run_bytes: usize,
    pub(super) max_static: usize,
    pub(super) last_contraction: u64,
}

impl NodeTables {
    pub(super) fn new(model: &Model, nslot: usize, max_static: usize) -> NodeTables {
        let t = model.ntree();
        NodeTables {
            dofadr: model
                .tree_dofadr()
                .iter()
                .chain(&[model.nv() as i32])
                .map(|&d| d as u32)
                .collect(),
            pre: vec![0; nslot * (t + 1)],
            head: vec![0; nslot * NODE_HEAD * 4],
            place: vec![0; nslot * t * 2],
            efc: vec![0; nslot * NODE_MAPS_MAX as usize * 4],
            row_node: vec![0; nslot * max_static],
            runs: vec![0; nslot * run_bytes(t, max_static)],
            run_bytes: run_bytes(t, max_static),
            max_static,
            last_contraction: 0,
        }
    }

    /// Fills the tables of slot `s` (of at most [`NODE_MAPS_MAX`] nodes) from the cache's.
    pub(super) fn fill(&mut self, s: usize, t: &Tables<'_>) {
        let n = t.ntree;
        let nnode = t.nnode[s] as usize;
        let trees = &t.node_trees[s * n..(s + 1) * n];
        let adr = &t.node_treeadr[s * (n + 1)..s * (n + 1) + nnode + 1];
        self.fill_rows(s, t);
        self.fill_runs(s, t);
        let pre = &mut self.pre[s * (n + 1)..(s + 1) * (n + 1)];
        let mut sum = 0;
        for (p, &tree) in pre.iter_mut().zip(trees) {
            *p = sum;
            let t = tree as usize;
            sum += self.dofadr[t + 1] - self.dofadr[t];
        }
        pre[n] = sum;
        self.last_contraction += 1;
        let head = &mut self.head[s * NODE_HEAD * 4..(s + 1) * NODE_HEAD * 4];
        head.fill(0);
        head[0] = self.last_contraction as u32;
        head[1] = (self.last_contraction >> 32) as u32;
        for (node, &a) in adr.iter().enumerate() {
            let r = &mut head[4 * (node + 1)..4 * (node + 2)];
            r[0] = a as u32;
            r[1] = pre[a as usize];
            r[2] = trees.get(a as usize).map_or(0, |&t| t as u32);
        }
        let place = &mut self.place[s * n * 2..(s + 1) * n * 2];
        for w in adr.windows(2) {
            let (a0, a1) = (w[0] as usize, w[1] as usize);
            for k in a0..a1 {
                let t = trees[k] as usize;
                place[2 * t] = (k - a0) as i32;
                place[2 * t + 1] = (pre[k] - pre[a0]) as i32;
            }
        }
    }

    /// Slot `s`'s runs of one node among its static rows (after [`fill_rows`](Self::fill_rows))
    /// and among its trees (see [`run_bytes`]).
    pub(super) fn fill_runs(&mut self, s: usize, t: &Tables<'_>) {
        let n = t.ntree;
        let rows = &self.row_node[s * self.max_static..][..t.nstatic_rows[s] as usize];
        let trees = &t.tree_node[s * n..(s + 1) * n];
        let dofadr = &self.dofadr;
        let runs = &mut self.runs[s * self.run_bytes..(s + 1) * self.run_bytes];
        let (lists, run_of) = runs.split_at_mut(16 + 24 * RUNS_MAX);
        let (head, lists) = lists.split_at_mut(16);
        let (row_list, tree_list) = lists.split_at_mut(8 * RUNS_MAX);
        let (tree_run, row_run) = run_of.split_at_mut(n.next_multiple_of(4));
        let row_runs = cut_runs(
            rows.iter().map(|&x| x as u32),
            row_run,
            |j, first, count, node| {
                put_words(row_list, 8 * j, &[first as u32, (count as u32) << 5 | node]);
            },
        );
        let tree_runs = cut_runs(
            trees.iter().map(|&x| x as u32),
            tree_run,
            |j, first, count, node| {
                let (d0, d1) = (dofadr[first], dofadr[first + count]);
                let words = [first as u32, count as u32, d0, (d1 - d0) << 5 | node];
                put_words(tree_list, 16 * j, &words);
            },
        );
        put_words(head, 0, &[row_runs as u32, tree_runs as u32, 0, 0]);
    }

    /// Slot `s`'s static rows (the stream's first `nstatic_rows`): each one's node, and per
    /// node their count by kind (the contraction's, [`Tables::node_efc`]).
    pub(super) fn fill_rows(&mut self, s: usize, t: &Tables<'_>) {
        let (n, ms, me) = (t.ntree, t.max_static, t.max_entries);
        let tree_node = &t.tree_node[s * n..(s + 1) * n];
        let adr = &t.stream_adr[s * (ms + 1)..(s + 1) * (ms + 1)];
        let support = &t.stream_support[s * me..(s + 1) * me];
        let m = NODE_MAPS_MAX as usize * 4;
        let efc = &mut self.efc[s * m..(s + 1) * m];
        efc.fill(0);
        let nnode = t.nnode[s] as usize;
        for (e, counts) in efc
            .chunks_exact_mut(4)
            .zip(&t.node_efc[s * n..s * n + nnode])
        {
            e[..3].copy_from_slice(counts);
        }
        let row_node = &mut self.row_node[s * self.max_static..(s + 1) * self.max_static];
        for i in 0..t.nstatic_rows[s] as usize {
            row_node[i] = tree_node[support[adr[i] as usize] as usize] as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{NODE_MAPS_MAX, NodeTables, RUNS_MAX, cut_runs};
    use crate::gpu::workspace::dof_blocks;
    use crate::quotient::{Policy, Quotient};
    use crate::{Capacity, Input, RowType, synth};
    use invalidation::Events;

    /// The runs of `nodes`: their count, each run's (first, count, node), each element's run.
    fn runs(nodes: &[u32]) -> (usize, Vec<(usize, usize, u32)>, Vec<u8>) {
        let (mut list, mut run_of) = (Vec::new(), vec![99u8; nodes.len()]);
        let count = cut_runs(nodes.iter().copied(), &mut run_of, |j, first, n, node| {
            assert_eq!(j, list.len());
            list.push((first, n, node));
        });
        (count, list, run_of)
    }

    #[test]
    fn runs_of_one_node_with_their_first_elements_and_counts() {
        let (count, list, run_of) = runs(&[3, 3, 1, 1, 1, 3, 0]);
        assert_eq!(count, 4);
        assert_eq!(list, [(0, 2, 3), (2, 3, 1), (5, 1, 3), (6, 1, 0)]);
        assert_eq!(run_of, [0, 0, 1, 1, 1, 2, 3]);
        assert_eq!(runs(&[]), (0, vec![], vec![]));
    }

    /// The little-endian word at byte `at`.
    fn word(bytes: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    /// Checks a list of runs as the warp kernel reads it (`count` runs from byte `list`, each
    /// `size` bytes: the first element, ..., and `count << 5 | node` in the last word; for
    /// trees the tree count, the first dof and the dof count there) against the elements'
    /// nodes and their runs (bytes from `run_of`); `dofs` gives trees' dof spans.
    fn check_list(
        runs: &[u8],
        (count, list, size): (usize, usize, usize),
        nodes: &[u32],
        run_of: usize,
        dofs: Option<&[i32]>,
    ) {
        if count > RUNS_MAX {
            let changes = nodes.windows(2).filter(|p| p[0] != p[1]).count();
            assert_eq!(count, changes + 1);
            return;
        }
        let mut next = 0;
        for j in 0..count {
            let at = list + size * j;
            let (first, last) = (word(runs, at) as usize, word(runs, at + size - 4));
            let (len, node) = match dofs {
                Some(_) => (word(runs, at + 4) as usize, last & 31),
                None => ((last >> 5) as usize, last & 31),
            };
            assert_eq!(first, next, "runs follow each other");
            assert!(len > 0 && nodes[first..first + len].iter().all(|&n| n == node));
            assert!(
                first + len == nodes.len() || nodes[first + len] != node,
                "maximal"
            );
            let of = &runs[run_of + first..run_of + first + len];
            assert!(of.iter().all(|&r| r as usize == j));
            if let Some(adr) = dofs {
                let (d0, nd) = (word(runs, at + 8), last >> 5);
                assert_eq!((d0, d0 + nd), (adr[first] as u32, adr[first + len] as u32));
            }
            next = first + len;
        }
        assert_eq!(next, nodes.len());
    }

    #[test]
    fn every_slot_s_runs_are_its_rows_and_trees_as_the_warp_kernel_reads_them() {
        let mut slots = 0;
        for case in synth::conformance().step_by(41).take(300) {
            let model = &case.model;
            if !dof_blocks(model) {
                continue;
            }
            let input = Input::new(model, &case.batch).unwrap();
            let cap = Capacity::fit(model, &case.batch);
            let mut q = Quotient::new(&cap, Policy::default());
            q.prepare(&input, &Events::new()).unwrap();
            let t = q.cache().tables();
            let mut nt = NodeTables::new(model, cap.nworld, t.max_static);
            let nv = [model.nv() as i32];
            let adr: Vec<i32> = model.tree_dofadr().iter().chain(&nv).copied().collect();
            let n = t.ntree;
            let mut seen = vec![false; cap.nworld];
            for w in 0..case.batch.nworld() {
                let Some(s) = q.cache().slot_of(w).map(|s| s as usize) else {
                    continue;
                };
                if std::mem::replace(&mut seen[s], true) || t.nnode[s] > NODE_MAPS_MAX {
                    continue;
                }
                nt.fill(s, &t);
                let runs = &nt.runs[s * nt.run_bytes..(s + 1) * nt.run_bytes];
                let k = t.nstatic_rows[s] as usize;
                let rows: Vec<u32> = nt.row_node[s * nt.max_static..][..k]
                    .iter()
                    .map(|&x| x as u32)
                    .collect();
                let trees: Vec<u32> = t.tree_node[s * n..(s + 1) * n]
                    .iter()
                    .map(|&x| x as u32)
                    .collect();
                let (tree_run, row_run) = (
                    16 + 24 * RUNS_MAX,
                    16 + 24 * RUNS_MAX + n.next_multiple_of(4),
                );
                check_list(runs, (word(runs, 0) as usize, 16, 8), &rows, row_run, None);
                // Each node's static rows by kind, as the warp kernel reads them.
                let mut efc = vec![[0u32; 4]; t.nnode[s] as usize];
                for (i, &node) in rows.iter().enumerate() {
                    let code = t.stream_kind[s * t.max_static + i] as i32;
                    let kind = RowType::from_code(code).unwrap();
                    let e = &mut efc[node as usize];
                    e[0] += 1;
                    e[1] += kind.is_equality() as u32;
                    e[2] += kind.is_friction() as u32;
                }
                let m = NODE_MAPS_MAX as usize * 4;
                assert_eq!(nt.efc[s * m..s * m + 4 * efc.len()], efc.concat());
                let list = (word(runs, 4) as usize, 16 + 8 * RUNS_MAX, 16);
                check_list(runs, list, &trees, tree_run, Some(&adr));
                slots += 1;
            }
        }
        // The corpus's worlds of at most 32 nodes, each slot once (989 at this writing).
        assert!(slots > 500, "{slots} slots checked");
    }

    #[test]
    fn past_the_most_runs_only_the_count() {
        let alternating = |n: u32| (0..n).map(|i| i % 2).collect::<Vec<_>>();
        let (count, list, run_of) = runs(&alternating(RUNS_MAX as u32));
        assert_eq!((count, list.len()), (RUNS_MAX, RUNS_MAX));
        assert_eq!(list[RUNS_MAX - 1], (RUNS_MAX - 1, 1, 1));
        assert_eq!(run_of[RUNS_MAX - 1], RUNS_MAX as u8 - 1);
        let (count, list, _) = runs(&alternating(RUNS_MAX as u32 + 1));
        assert_eq!((count, list.len()), (RUNS_MAX + 1, RUNS_MAX));
    }
}
