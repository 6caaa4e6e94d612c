//! The quotient cache: a host DSU contracts each world's static incidence into a tree → node map
//! and per-node tree lists; worlds with identical static incidence share one quotient ("slot").
//!
//! Nodes are numbered in ascending order of their smallest tree, so a min-root union over node
//! ids yields min-root tree ids after pull-back — the labels [`crate::labels`] expects. A tree in
//! no static hyperedge is a node of its own. Everything is preallocated from the capacity: one
//! slot per world at most, since a world releases its slot before it builds a new one.

use invalidation::Signature;
use invalidation::signature::GuardFinding;

use super::classify::Classifier;
use super::guard::{self, Scan};
use super::walk;
use crate::rows::{Batch, Capacity, RowType};
use crate::union_find;

const NONE: u32 = u32::MAX;

/// One world's (or several identical worlds') contracted static incidence, read-only.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// Trees per world.
    pub ntree: usize,
    /// Nodes.
    pub nnode: usize,
    /// Node of each tree. `[ntree]`
    pub tree_node: &'a [i32],
    /// Smallest tree of each node, ascending. `[nnode]`
    pub node_mintree: &'a [i32],
    /// Static rows contracted into each node. `[nnode]`
    pub node_rows: &'a [u32],
    /// Wrapping sum of their hashes. `[nnode]`
    pub node_sum: &'a [u64],
    /// Of those, the rows (rowless hyperedges are counted in `node_rows` too), equality rows
    /// and friction-loss rows: the counts of `island_nefc`, `island_ne` and `island_nf` a node
    /// adds to its island. `[nnode]`
    pub node_efc: &'a [[u32; 3]],
    /// Start of each node's trees in `node_trees`. `[nnode + 1]`
    pub node_treeadr: &'a [i32],
    /// Trees of each node, ascending. `[ntree]`
    pub node_trees: &'a [i32],
    /// The static hyperedges contracted, in the order they came: kind of each (their ids are
    /// not kept: no output depends on them, see `invalidation::signature`).
    pub stream_kind: &'a [u8],
    /// Start of each one's support in `stream_support`. `[nstatic + 1]`
    pub stream_adr: &'a [u32],
    /// Their supports, concatenated.
    pub stream_support: &'a [i32],
    /// How many of them are rows (the rest are rowless hyperedges).
    pub stream_rows: usize,
    /// The static rows cut into runs of consecutive rows of one node (the node of a row's first
    /// tree), in order: `[node, rows]` each. A replayed world's rows are placed run by run
    /// ([`super::node_maps`]).
    pub row_runs: &'a [[u32; 2]],
}

impl View<'_> {
    /// The expected signature of node `n`.
    #[inline]
    pub fn expected(&self, n: usize) -> Signature {
        Signature {
            rows: self.node_rows[n],
            sum: self.node_sum[n],
        }
    }

    /// Where world `w`'s contracted static rows sit as one contiguous block (MuJoCo writes
    /// equality and friction rows first; dynamic equalities may come before them): the global
    /// row the block starts at, when the world's rows are some dynamic rows, then exactly the
    /// contracted static rows, then the rest, and its rowless hyperedges are exactly the
    /// contracted ones when those are static. Bulk slice compares; the rows after the block must
    /// still be checked to be dynamic.
    pub fn replayed_block(
        &self,
        batch: &Batch,
        w: usize,
        classifier: &Classifier,
    ) -> Option<usize> {
        let rows = batch.rows_of(w);
        let k = self.stream_rows;
        // Skip the dynamic rows before the block (none, in MuJoCo's order with static
        // equalities). An empty block is taken to start at the world's first row, so that the
        // solve checks every row, all after it, to be dynamic.
        let start = match k {
            0 => rows.start,
            _ => (rows.start..rows.end)
                .find(|&r| classifier.row_is_static(batch.row_type[r], batch.row_id[r]))
                .unwrap_or(rows.end),
        };
        if rows.end - start < k {
            return None;
        }
        self.block_matches(batch, w, classifier, start)
            .then_some(start)
    }

    fn block_matches(
        &self,
        batch: &Batch,
        w: usize,
        classifier: &Classifier,
        start: usize,
    ) -> bool {
        let k = self.stream_rows;
        let r = start..start + k;
        let base = batch.row_supadr[r.start];
        let end = batch.row_supadr[r.end];
        let split = self.stream_adr[k];
        if batch.row_support[base as usize..end as usize] != self.stream_support[..split as usize]
            || r.clone().zip(&self.stream_kind[..k]).any(|(r, &s)| {
                // The same type, and still static: with equalities classified by id, a
                // renumbered row may have turned dynamic (ids are compared nowhere else).
                let t = batch.row_type[r];
                t as u8 != s || !classifier.row_is_static(t, batch.row_id[r])
            })
            || batch.row_supadr[r.start..=r.end]
                .iter()
                .zip(&self.stream_adr[..=k])
                .any(|(&a, &s)| a - base != s)
        {
            return false;
        }
        if !classifier.rowless_is_static() {
            return true;
        }
        let edges = batch.edges_of(w);
        let ne = self.stream_kind.len() - k;
        if edges.len() != ne {
            return false;
        }
        let base = batch.edge_supadr[edges.start];
        let end = batch.edge_supadr[edges.end];
        batch.edge_support[base as usize..end as usize] == self.stream_support[split as usize..]
            && batch.edge_supadr[edges.start..=edges.end]
                .iter()
                .zip(&self.stream_adr[k..])
                .all(|(&a, &s)| a - base + split == s)
    }

    /// Whether world `w`'s static hyperedges are exactly the contracted ones, in the same order
    /// (the common case, checked by a sequential compare instead of hashing).
    pub fn replays(&self, batch: &Batch, w: usize, classifier: &Classifier) -> bool {
        let mut k = 0usize;
        let n = self.stream_kind.len();
        let same = walk::each_static(batch, w, classifier, |kind, support, _| {
            if k >= n || self.stream_kind[k] != kind {
                return Err(());
            }
            let (a, b) = (self.stream_adr[k] as usize, self.stream_adr[k + 1] as usize);
            // Supports are short: an element loop beats a `memcmp` call.
            if b - a != support.len()
                || support
                    .iter()
                    .zip(&self.stream_support[a..b])
                    .any(|(x, y)| x != y)
            {
                return Err(());
            }
            k += 1;
            Ok(())
        });
        same.is_ok() && k == n
    }

    /// Trees of node `n`.
    pub fn trees_of(&self, n: usize) -> &[i32] {
        &self.node_trees[self.node_treeadr[n] as usize..self.node_treeadr[n + 1] as usize]
    }
}

/// How a world got its quotient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    /// Contracted into a fresh slot.
    Contracted,
    /// Attached to an existing slot with identical static incidence.
    Shared,
}

/// Every world's quotient, in slots shared between worlds with identical static incidence.
#[derive(Debug, Clone)]
pub struct Quotients {
    ntree: usize,
    tree_node: Vec<i32>,
    node_mintree: Vec<i32>,
    node_rows: Vec<u32>,
    node_sum: Vec<u64>,
    node_efc: Vec<[u32; 3]>,
    node_treeadr: Vec<i32>,
    node_trees: Vec<i32>,
    nnode: Vec<u32>,
    stream_kind: Vec<u8>,
    stream_adr: Vec<u32>,
    stream_support: Vec<i32>,
    nstatic: Vec<u32>,
    nstatic_rows: Vec<u32>,
    nentry: Vec<u32>,
    row_runs: Vec<[u32; 2]>,
    nrow_runs: Vec<u32>,
    max_static: usize,
    max_entries: usize,
    key: Vec<Signature>,
    refs: Vec<u32>,
    free: Vec<u32>,
    table: Vec<u32>,
    world_slot: Vec<u32>,
    parent: Vec<i32>,
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    /// The slot the last build gave a world (`NONE`: none yet).
    last_built: u32,
}

/// Every slot's tables as flat arrays, for mirroring on a device: slot `s` owns
/// `[s * ntree, (s + 1) * ntree)` of the per-tree and per-node arrays, `[s * (ntree + 1), …)` of
/// `node_treeadr`, `[s * max_static, …)` of the stream's per-hyperedge arrays (`max_static + 1`
/// for `stream_adr`) and `[s * max_entries, …)` of `stream_support`.
#[derive(Debug, Clone, Copy)]
pub struct Tables<'a> {
    /// Trees per world.
    pub ntree: usize,
    /// Static hyperedges per slot, at most.
    pub max_static: usize,
    /// Static support entries per slot, at most.
    pub max_entries: usize,
    /// Slot of each world (`u32::MAX`: none).
    pub world_slot: &'a [u32],
    /// Nodes per slot.
    pub nnode: &'a [u32],
    /// Tree → node.
    pub tree_node: &'a [i32],
    /// Node → its smallest tree.
    pub node_mintree: &'a [i32],
    /// Static rows contracted into each node.
    pub node_rows: &'a [u32],
    /// Their hash sums.
    pub node_sum: &'a [u64],
    /// Of those, the rows, equality rows and friction-loss rows ([`View::node_efc`]).
    pub node_efc: &'a [[u32; 3]],
    /// Node tree lists (CSR offsets, per slot).
    pub node_treeadr: &'a [i32],
    /// Node tree lists.
    pub node_trees: &'a [i32],
    /// Static hyperedges per slot, and how many of them are rows.
    pub nstatic: &'a [u32],
    /// Static rows per slot (a prefix of the stream).
    pub nstatic_rows: &'a [u32],
    /// Stream kinds.
    pub stream_kind: &'a [u8],
    /// Stream support offsets (slot-relative).
    pub stream_adr: &'a [u32],
    /// Stream supports.
    pub stream_support: &'a [i32],
}

impl Quotients {
    /// Room for `capacity.nworld` worlds of `capacity.ntree` trees, each with up to
    /// `njmax + nedge` static hyperedges of `nsupport` entries; no world has a quotient yet.
    pub fn new(capacity: &Capacity) -> Quotients {
        let (nworld, ntree) = (capacity.nworld, capacity.ntree);
        let max_static = capacity.njmax + capacity.nedge;
        let max_entries = capacity.nsupport;
        let nslot = nworld;
        let per = nslot * ntree;
        Quotients {
            ntree,
            tree_node: vec![0; per],
            node_mintree: vec![0; per],
            node_rows: vec![0; per],
            node_sum: vec![0; per],
            node_efc: vec![[0; 3]; per],
            node_treeadr: vec![0; nslot * (ntree + 1)],
            node_trees: vec![0; per],
            nnode: vec![0; nslot],
            stream_kind: vec![0; nslot * max_static],
            stream_adr: vec![0; nslot * (max_static + 1)],
            stream_support: vec![0; nslot * max_entries],
            nstatic: vec![0; nslot],
            nstatic_rows: vec![0; nslot],
            nentry: vec![0; nslot],
            row_runs: vec![[0; 2]; nslot * max_static],
            nrow_runs: vec![0; nslot],
            max_static,
            max_entries,
            key: vec![Signature::default(); nslot],
            refs: vec![0; nslot],
            free: (0..nslot as u32).rev().collect(),
            table: vec![NONE; (2 * nslot).next_power_of_two().max(2)],
            world_slot: vec![NONE; nworld],
            parent: vec![-1; ntree],
            dirty: Vec::with_capacity(nslot),
            is_dirty: vec![false; nslot],
            last_built: NONE,
        }
    }

    /// Worlds this cache has room for.
    pub fn nworld(&self) -> usize {
        self.world_slot.len()
    }

    /// The slot of `world`, if it has a quotient.
    pub fn slot_of(&self, world: usize) -> Option<u32> {
        self.world_slot.get(world).copied().filter(|&s| s != NONE)
    }

    /// Slots in use (distinct quotients).
    pub fn live_slots(&self) -> usize {
        self.refs.len() - self.free.len()
    }

    /// The trees of the node of tree `t` in slot `s` (ascending): what
    /// [`View::trees_of`] gives for [`View::tree_node`]`[t]`, without building the view.
    pub fn trees_with(&self, s: u32, t: usize) -> &[i32] {
        let node = self.node_with(s, t);
        let (s, n) = (s as usize, self.ntree);
        let adr = &self.node_treeadr[s * (n + 1) + node..];
        &self.node_trees[s * n..(s + 1) * n][adr[0] as usize..adr[1] as usize]
    }

    /// The node of tree `t` in slot `s` ([`View::tree_node`]`[t]`, without building the view).
    pub fn node_with(&self, s: u32, t: usize) -> usize {
        self.tree_node[s as usize * self.ntree + t] as usize
    }

    /// Static rows contracted into the node of tree `t` in slot `s`: what [`View::node_rows`]
    /// gives for [`View::tree_node`]`[t]`, without building the view.
    pub fn rows_with(&self, s: u32, t: usize) -> u32 {
        self.node_rows[s as usize * self.ntree + self.node_with(s, t)]
    }

    /// The quotient of slot `s`.
    pub fn view(&self, s: u32) -> View<'_> {
        let (s, n) = (s as usize, self.ntree);
        let nnode = self.nnode[s] as usize;
        let t = s * n..(s + 1) * n;
        let (ms, me) = (self.max_static, self.max_entries);
        let nstatic = self.nstatic[s] as usize;
        View {
            ntree: n,
            nnode,
            tree_node: &self.tree_node[t.clone()],
            node_mintree: &self.node_mintree[s * n..s * n + nnode],
            node_rows: &self.node_rows[s * n..s * n + nnode],
            node_sum: &self.node_sum[s * n..s * n + nnode],
            node_efc: &self.node_efc[s * n..s * n + nnode],
            node_treeadr: &self.node_treeadr[s * (n + 1)..s * (n + 1) + nnode + 1],
            node_trees: &self.node_trees[t],
            stream_kind: &self.stream_kind[s * ms..s * ms + nstatic],
            stream_adr: &self.stream_adr[s * (ms + 1)..s * (ms + 1) + nstatic + 1],
            stream_support: &self.stream_support[s * me..s * me + self.nentry[s] as usize],
            stream_rows: self.nstatic_rows[s] as usize,
            row_runs: &self.row_runs[s * ms..s * ms + self.nrow_runs[s] as usize],
        }
    }

    /// Every slot's tables, flat (see [`Tables`]).
    pub fn tables(&self) -> Tables<'_> {
        Tables {
            ntree: self.ntree,
            max_static: self.max_static,
            max_entries: self.max_entries,
            world_slot: &self.world_slot,
            nnode: &self.nnode,
            tree_node: &self.tree_node,
            node_mintree: &self.node_mintree,
            node_rows: &self.node_rows,
            node_sum: &self.node_sum,
            node_efc: &self.node_efc,
            node_treeadr: &self.node_treeadr,
            node_trees: &self.node_trees,
            nstatic: &self.nstatic,
            nstatic_rows: &self.nstatic_rows,
            stream_kind: &self.stream_kind,
            stream_adr: &self.stream_adr,
            stream_support: &self.stream_support,
        }
    }

    /// Calls `f` for every slot contracted since the last call, then forgets them: what a device
    /// mirror must upload (besides `world_slot`) before the next step.
    pub fn drain_contracted(&mut self, mut f: impl FnMut(u32)) {
        for &s in &self.dirty {
            self.is_dirty[s as usize] = false;
            f(s);
        }
        self.dirty.clear();
    }

    /// Drops every world's quotient.
    pub fn clear(&mut self) {
        for w in 0..self.world_slot.len() {
            self.release(w);
        }
    }

    /// Drops `world`'s quotient (its slot is freed when no other world shares it).
    pub fn release(&mut self, world: usize) {
        let Some(s) = self.slot_of(world) else {
            return;
        };
        self.world_slot[world] = NONE;
        self.refs[s as usize] -= 1;
        if self.refs[s as usize] == 0 {
            self.table_remove(s);
            self.free.push(s);
        }
    }

    /// Gives `world` the quotient of its static hyperedges in `batch` (releasing the old one):
    /// an existing slot if one holds exactly the same static incidence, else a fresh contraction.
    pub fn build(
        &mut self,
        batch: &Batch,
        world: usize,
        classifier: &Classifier,
        scan: &mut Scan,
    ) -> Built {
        self.release(world);
        // The slot the last build gave is the likeliest match (worlds built in a row tend to be
        // alike: a batch's first step, a capacity change), so the world is scanned against it
        // and keyed in one pass; elsewhere a pass for the key, then a scan of the slot it finds.
        let mut key = Signature::default();
        let guess = self.last_built;
        let mut keyed = false;
        if guess != NONE && self.refs[guess as usize] > 0 {
            let view = self.view(guess);
            let found = guard::scan_keyed(&view, batch, world, classifier, scan, &mut key);
            if found.is_ok() && scan.all_present(&view) && self.key[guess as usize] == key {
                return self.share(world, guess);
            }
            keyed = !matches!(found, Err(GuardFinding::Spans { .. }));
        }
        if !keyed {
            key = Signature::default();
            let _ = walk::each_static::<()>(batch, world, classifier, |kind, support, _| {
                key.add(walk::hash(kind, support));
                Ok(())
            });
        }
        if let Some(s) = self.find_shared(batch, world, classifier, key, scan) {
            return self.share(world, s);
        }
        // A world releases before it builds, so a slot is always free.
        let s = self.free.pop().unwrap_or_default();
        self.contract(batch, world, classifier, s);
        if !self.is_dirty[s as usize] {
            self.is_dirty[s as usize] = true;
            self.dirty.push(s);
        }
        self.key[s as usize] = key;
        self.refs[s as usize] = 1;
        self.world_slot[world] = s;
        self.last_built = s;
        self.table_insert(s);
        Built::Contracted
    }

    /// Gives `world` the live slot `s`, which holds exactly its static incidence.
    fn share(&mut self, world: usize, s: u32) -> Built {
        self.refs[s as usize] += 1;
        self.world_slot[world] = s;
        self.last_built = s;
        Built::Shared
    }

    /// A live slot with `key` whose incidence the world's static rows match exactly (every
    /// node's rows present, none spanning nodes).
    fn find_shared(
        &self,
        batch: &Batch,
        world: usize,
        classifier: &Classifier,
        key: Signature,
        scan: &mut Scan,
    ) -> Option<u32> {
        let mask = self.table.len() - 1;
        let mut i = bucket(key) & mask;
        loop {
            let s = self.table[i];
            if s == NONE {
                return None;
            }
            if self.key[s as usize] == key {
                let view = self.view(s);
                if guard::scan(&view, batch, world, classifier, scan).is_ok()
                    && scan.all_present(&view)
                {
                    return Some(s);
                }
            }
            i = (i + 1) & mask;
        }
    }

    fn contract(&mut self, batch: &Batch, world: usize, classifier: &Classifier, s: u32) {
        let n = self.ntree;
        let parent = &mut self.parent[..];
        parent.fill(-1);
        let _ = walk::each_static::<()>(batch, world, classifier, |_, support, _| {
            union_find::join(parent, support);
            Ok(())
        });
        let s = s as usize;
        let tree_node = &mut self.tree_node[s * n..(s + 1) * n];
        let mintree = &mut self.node_mintree[s * n..(s + 1) * n];
        let mut nnode = 0usize;
        for t in 0..n {
            let root = if parent[t] == -1 {
                t
            } else {
                union_find::find(parent, t as i32) as usize
            };
            if root == t {
                tree_node[t] = nnode as i32;
                mintree[nnode] = t as i32;
                nnode += 1;
            } else {
                tree_node[t] = tree_node[root];
            }
        }
        self.nnode[s] = nnode as u32;

        // Per-node tree lists: counting sort by node, trees stay ascending.
        let adr = &mut self.node_treeadr[s * (n + 1)..s * (n + 1) + nnode + 1];
        adr.fill(0);
        for &node in tree_node.iter() {
            adr[node as usize + 1] += 1;
        }
        for i in 0..nnode {
            adr[i + 1] += adr[i];
        }
        let trees = &mut self.node_trees[s * n..(s + 1) * n];
        // `parent` is free again: reuse it as the fill cursor.
        parent[..nnode].copy_from_slice(&adr[..nnode]);
        for (t, &node) in tree_node.iter().enumerate() {
            let c = &mut parent[node as usize];
            trees[*c as usize] = t as i32;
            *c += 1;
        }

        // The whole slot's row counts are cleared, not only its nodes': the device reads every
        // tree's place (kernels/quotient.cu, q_span) and takes a zero past nnode as inactive.
        self.node_rows[s * n..(s + 1) * n].fill(0);
        let rows = &mut self.node_rows[s * n..s * n + nnode];
        let sums = &mut self.node_sum[s * n..s * n + nnode];
        sums.fill(0);
        let efc = &mut self.node_efc[s * n..s * n + nnode];
        efc.fill([0; 3]);
        let (ms, me) = (self.max_static, self.max_entries);
        let kinds = &mut self.stream_kind[s * ms..(s + 1) * ms];
        let adr = &mut self.stream_adr[s * (ms + 1)..(s + 1) * (ms + 1)];
        let entries = &mut self.stream_support[s * me..(s + 1) * me];
        let runs = &mut self.row_runs[s * ms..(s + 1) * ms];
        let (mut k, mut e, mut nrow, mut nrun) = (0usize, 0usize, 0u32, 0usize);
        adr[0] = 0;
        let _ = walk::each_static::<()>(batch, world, classifier, |kind, support, local| {
            let node = tree_node[support[0] as usize] as usize;
            if local >= 0 {
                nrow += 1;
                let row = RowType::ALL[kind as usize];
                let count = &mut efc[node];
                count[0] += 1;
                count[1] += row.is_equality() as u32;
                count[2] += row.is_friction() as u32;
                match nrun.checked_sub(1).map(|j| &mut runs[j]) {
                    Some(run) if run[0] == node as u32 => run[1] += 1,
                    _ => {
                        runs[nrun] = [node as u32, 1];
                        nrun += 1;
                    }
                }
            }
            rows[node] += 1;
            sums[node] = sums[node].wrapping_add(walk::hash(kind, support));
            // The capacity bounds both (checked before any step).
            kinds[k] = kind;
            entries[e..e + support.len()].copy_from_slice(support);
            e += support.len();
            k += 1;
            adr[k] = e as u32;
            Ok(())
        });
        self.nstatic[s] = k as u32;
        self.nstatic_rows[s] = nrow;
        self.nentry[s] = e as u32;
        self.nrow_runs[s] = nrun as u32;
    }

    fn table_insert(&mut self, s: u32) {
        let mask = self.table.len() - 1;
        let mut i = bucket(self.key[s as usize]) & mask;
        while self.table[i] != NONE {
            i = (i + 1) & mask;
        }
        self.table[i] = s;
    }

    /// Linear-probing removal with backward shift, so lookups never need tombstones.
    fn table_remove(&mut self, s: u32) {
        let mask = self.table.len() - 1;
        let mut i = bucket(self.key[s as usize]) & mask;
        while self.table[i] != s {
            if self.table[i] == NONE {
                return;
            }
            i = (i + 1) & mask;
        }
        self.table[i] = NONE;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let o = self.table[j];
            if o == NONE {
                return;
            }
            let home = bucket(self.key[o as usize]) & mask;
            // Move `o` into the hole unless its home lies cyclically in (i, j].
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.table[i] = o;
                self.table[j] = NONE;
                i = j;
            }
        }
    }

    /// Bytes held (all preallocated).
    pub fn bytes(&self) -> usize {
        self.tree_node.capacity() * 4
            + self.node_mintree.capacity() * 4
            + self.node_rows.capacity() * 4
            + self.node_sum.capacity() * 8
            + self.node_efc.capacity() * 12
            + self.node_treeadr.capacity() * 4
            + self.node_trees.capacity() * 4
            + self.nnode.capacity() * 4
            + self.stream_kind.capacity()
            + self.stream_adr.capacity() * 4
            + self.stream_support.capacity() * 4
            + self.nstatic.capacity() * 4
            + self.nstatic_rows.capacity() * 4
            + self.nentry.capacity() * 4
            + self.row_runs.capacity() * 8
            + self.nrow_runs.capacity() * 4
            + self.key.capacity() * std::mem::size_of::<Signature>()
            + self.refs.capacity() * 4
            + self.free.capacity() * 4
            + self.table.capacity() * 4
            + self.world_slot.capacity() * 4
            + self.parent.capacity() * 4
            + self.dirty.capacity() * 4
            + self.is_dirty.capacity()
    }
}

fn bucket(key: Signature) -> usize {
    invalidation::signature::mix(key.sum ^ key.rows as u64) as usize
}
