//! Reuse of unchanged worlds on the CPU, as the device quotient does (`kernels/quotient.cu`):
//! every output of a world is a function of its hyperedges alone (row types and supports, rows
//! then rowless; ids do not matter), so a world whose hyperedges equal those of the last step it
//! was solved in takes that step's outputs instead of being solved again. That holds for one
//! model: the dof-level outputs follow its dof layout, and a world without rows has islands or
//! not by the model, so a step of another model forgets every world ([`Reuse::begin_step`]).
//!
//! The cache keeps, per world and padded to the capacity, the hyperedges and every output of
//! its last solved step; [`Reuse::check`] compares exactly (and keeps the backoff below),
//! [`Reuse::restore`] copies the outputs back (row-level ones at this step's rows, which
//! earlier worlds' row counts may have moved), [`Reuse::store`] records a solved world.
//! Everything is allocated by [`Reuse::new`].
//!
//! A world that keeps changing backs off: the store copies every output of the world, which
//! costs about as much as a cheap solve, so after [`BACKOFF_AFTER`] misses in a row against
//! the step just before, the world is neither compared nor stored for 1, 2, 4 … up to
//! [`BACKOFF_MAX`] steps (its cached step stays valid: outputs are a function of hyperedges).
//! The step a pause ends probes: it compares against the old entry (a match is reused, but
//! neither it nor a mismatch changes the backoff) and stores afresh, so the next step tells
//! whether the world now repeats; a match there ends the backoff.
//!
//! A world that did change may still have the partition of trees of its cached step (new
//! contacts inside existing islands, say). Its tree- and dof-level outputs are a function of
//! that partition alone, so [`Reuse::same_partition`] and [`Reuse::restore_partition`] give
//! them back and only the row-level ones are mapped; [`Reuse::store_rows`] then records the
//! step without copying what the cache already holds.

use std::ops::Range;

use crate::islands::{EXTENTS, Extent, Islands, PARTITION_FIELDS};
use crate::model::Model;
use crate::rows::{Batch, Capacity, RowType};

/// What world `w` held at its last solved step.
#[derive(Debug, Clone, Copy, Default)]
struct Cached {
    rows: usize,
    row_entries: usize,
    edges: usize,
    edge_entries: usize,
}

/// What [`Reuse::check`] found for a world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Its hyperedges equal its cached step's: restore that step's outputs.
    Unchanged,
    /// It changed (or nothing is cached): solve it, then store it.
    Changed,
    /// It kept changing and pauses reuse: solve it; the store leaves the cache alone.
    Paused,
}

/// `tree_island`'s place in [`FIELDS`](crate::islands::FIELDS).
const TREE_ISLAND: usize = 2;

/// Misses in a row before a world pauses reuse.
pub const BACKOFF_AFTER: u8 = 4;
/// The longest pause, in steps.
pub const BACKOFF_MAX: u64 = 64;

/// Each world's hyperedges and outputs at the last step it was solved in.
#[derive(Debug, Clone)]
pub struct Reuse {
    cap: Capacity,
    cached: Vec<Option<Cached>>,
    /// Steps begun ([`Reuse::begin_step`]).
    step: u64,
    /// Per world: misses in a row against the step before, the step its pause ends, and the
    /// last step its cached hyperedges were its own (stored or matched).
    misses: Vec<u8>,
    resume: Vec<u64>,
    current_at: Vec<u64>,
    row_type: Vec<RowType>,
    row_adr: Vec<u32>,
    edge_adr: Vec<u32>,
    support: Vec<i32>,
    /// Every output field, each world's slice padded (rows to `njmax`), in
    /// [`Islands::fields_mut`] order.
    outputs: Vec<Vec<i32>>,
    /// The dof layout of the cached steps' model (`tree_dofadr`, `tree_dofnum`, `dof_treeid`:
    /// the model's topology), allocated for the capacity; empty before the first step, when
    /// nothing is cached to forget.
    layout: [Vec<i32>; 3],
    /// The rest of the cached steps' model: whether it finds islands without rows.
    islands_without_rows: bool,
}

impl Reuse {
    /// An empty cache with room for `cap`.
    pub fn new(cap: &Capacity) -> Reuse {
        let w = cap.nworld;
        let outputs = EXTENTS
            .iter()
            .map(|&extent| vec![0; w * per_world(cap, extent)])
            .collect();
        Reuse {
            cap: *cap,
            cached: vec![None; w],
            step: 0,
            misses: vec![0; w],
            resume: vec![0; w],
            current_at: vec![0; w],
            row_type: vec![RowType::Equality; w * cap.njmax],
            row_adr: vec![0; w * (cap.njmax + 1)],
            edge_adr: vec![0; w * (cap.nedge + 1)],
            support: vec![0; w * cap.nsupport],
            outputs,
            layout: [
                Vec::with_capacity(cap.ntree),
                Vec::with_capacity(cap.ntree),
                Vec::with_capacity(cap.nv),
            ],
            islands_without_rows: false,
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        let outputs: usize = self.outputs.iter().map(|f| f.len() * 4).sum();
        self.cached.len() * (size_of::<Option<Cached>>() + size_of::<u8>() + 2 * size_of::<u64>())
            + self.row_type.len() * size_of::<RowType>()
            + (self.row_adr.len() + self.edge_adr.len() + self.support.len()) * 4
            + outputs
            + self.layout.iter().map(|v| v.capacity() * 4).sum::<usize>()
    }

    /// Forgets every world (the next step solves them all).
    pub fn clear(&mut self) {
        self.cached.fill(None);
        self.misses.fill(0);
        self.resume.fill(0);
    }

    /// Starts a step of `model`: call once before the step's [`check`](Reuse::check)s and
    /// stores. A model other than the cached steps' (its dof layout, or whether it finds
    /// islands without rows) forgets every world.
    pub fn begin_step(&mut self, model: &Model) {
        let now = [model.tree_dofadr(), model.tree_dofnum(), model.dof_treeid()];
        if self.islands_without_rows != model.islands_without_rows()
            || !self
                .layout
                .iter()
                .zip(now)
                .all(|(kept, new)| kept[..] == *new)
        {
            self.clear();
            self.islands_without_rows = model.islands_without_rows();
            for (kept, new) in self.layout.iter_mut().zip(now) {
                kept.clear();
                kept.extend_from_slice(new);
            }
        }
        self.step += 1;
    }

    /// What world `w` of `batch` does this step: take its cached outputs (it is not pausing and
    /// its hyperedges equal those of its last solved step), or be solved. Counts the misses
    /// that pause it.
    pub fn check(&mut self, batch: &Batch, w: usize) -> Check {
        if w >= self.cached.len() {
            return Check::Changed;
        }
        if self.step < self.resume[w] {
            return Check::Paused;
        }
        // The first check after a pause is a probe: against an older entry, so its match is
        // reused but does not end the backoff, and its mismatch does not extend it.
        let probe = self.resume[w] != 0;
        self.resume[w] = 0;
        if self.unchanged(batch, w) {
            if !probe {
                self.misses[w] = 0;
            }
            self.current_at[w] = self.step;
            return Check::Unchanged;
        }
        // A miss counts only against the step just before (not, say, a world back after
        // a step in which the batch had fewer worlds).
        if self.cached[w].is_some() && self.current_at[w] + 1 == self.step {
            self.misses[w] = self.misses[w].saturating_add(1);
            if self.misses[w] >= BACKOFF_AFTER {
                let doublings = u32::from(self.misses[w] - BACKOFF_AFTER);
                let pause = 1u64 << doublings.min(BACKOFF_MAX.ilog2());
                self.resume[w] = self.step + 1 + pause;
            }
        }
        Check::Changed
    }

    /// Whether world `w` of `batch` has exactly the hyperedges of its last solved step (only
    /// [`check`](Reuse::check) asks, so that every comparison counts for the backoff).
    fn unchanged(&self, batch: &Batch, w: usize) -> bool {
        let Some(c) = self.cached.get(w).copied().flatten() else {
            return false;
        };
        let (rows, edges, row_sup, edge_sup) = spans(batch, w);
        if (rows.len(), row_sup.len(), edges.len(), edge_sup.len())
            != (c.rows, c.row_entries, c.edges, c.edge_entries)
        {
            return false;
        }
        let (r, e, s) = self.at(w);
        let relative =
            |adr: &[u32], cached: &[u32]| adr.iter().zip(cached).all(|(&a, &b)| a - adr[0] == b);
        batch.row_type[rows.clone()] == self.row_type[r..r + c.rows]
            && relative(
                &batch.row_supadr[rows.start..=rows.end],
                &self.row_adr[r + w..],
            )
            && relative(
                &batch.edge_supadr[edges.start..=edges.end],
                &self.edge_adr[e + w..],
            )
            && batch.row_support[row_sup] == self.support[s..s + c.row_entries]
            && batch.edge_support[edge_sup]
                == self.support[s + c.row_entries..s + c.row_entries + c.edge_entries]
    }

    /// World `w`'s outputs of its last solved step into `out` (sized for this step), its
    /// row-level ones at this step's rows of the world.
    pub fn restore(&self, w: usize, out: &mut Islands) {
        let rows = out.world_rowadr[w] as usize..out.world_rowadr[w + 1] as usize;
        self.restore_fields(w, out, &rows, EXTENTS.len());
    }

    /// Whether world `w`'s cached step has the canonical partition `tree_island` (this step's,
    /// world-local): then that step's tree- and dof-level outputs are this step's too.
    pub fn same_partition(&self, w: usize, tree_island: &[i32]) -> bool {
        let Some(Some(_)) = self.cached.get(w) else {
            return false;
        };
        let from = w * per_world(&self.cap, Extent::Tree);
        self.outputs[TREE_ISLAND][from..from + tree_island.len()] == *tree_island
    }

    /// World `w`'s tree- and dof-level outputs (fields before [`PARTITION_FIELDS`]) of its
    /// cached step into `out`, after [`same_partition`](Reuse::same_partition). No row-level
    /// field is among them, so no rows are needed.
    pub fn restore_partition(&self, w: usize, out: &mut Islands) {
        self.restore_fields(w, out, &(0..0), PARTITION_FIELDS);
    }

    /// The first `count` output fields of world `w`'s cached step into `out`, row-level ones
    /// at `rows`; per-island fields hold its `nisland` values and -1 past them.
    fn restore_fields(&self, w: usize, out: &mut Islands, rows: &Range<usize>, count: usize) {
        let (ntree, nv) = (out.ntree, out.nv);
        let nisland = self.outputs[0][w].max(0) as usize;
        let fields = out.fields_mut().into_iter().zip(&self.outputs);
        for ((field, extent), cached) in fields.take(count) {
            let dst = slice_of(extent, w, ntree, nv, rows);
            let n = kept(extent, dst.len(), nisland);
            let from = w * per_world(&self.cap, extent);
            field[dst.start..dst.start + n].copy_from_slice(&cached[from..from + n]);
            field[dst.start + n..dst.end].fill(-1);
        }
    }

    /// Records world `w` of `batch`, solved into `out`, unless it is pausing (then its cached
    /// step stays). A world past the capacity is left uncached.
    pub fn store(&mut self, batch: &Batch, w: usize, out: &mut Islands) {
        self.store_from(batch, w, out, 0);
    }

    /// [`store`](Reuse::store) for a world whose partition-level outputs came from its cached
    /// step ([`restore_partition`](Reuse::restore_partition)): only the row-level ones are
    /// copied.
    pub fn store_rows(&mut self, batch: &Batch, w: usize, out: &mut Islands) {
        self.store_from(batch, w, out, PARTITION_FIELDS);
    }

    /// [`store`](Reuse::store), copying the output fields from `first` on.
    fn store_from(&mut self, batch: &Batch, w: usize, out: &mut Islands, first: usize) {
        if w < self.resume.len() && self.step < self.resume[w] {
            return;
        }
        let (rows, edges, row_sup, edge_sup) = spans(batch, w);
        let fits = w < self.cached.len()
            && rows.len() <= self.cap.njmax
            && edges.len() <= self.cap.nedge
            && row_sup.len() + edge_sup.len() <= self.cap.nsupport;
        if !fits {
            if let Some(c) = self.cached.get_mut(w) {
                *c = None;
            }
            return;
        }
        let (r, e, s) = self.at(w);
        self.row_type[r..r + rows.len()].copy_from_slice(&batch.row_type[rows.clone()]);
        let relative = |adr: &[u32], cached: &mut [u32]| {
            for (c, &a) in cached.iter_mut().zip(adr) {
                *c = a - adr[0];
            }
        };
        relative(
            &batch.row_supadr[rows.start..=rows.end],
            &mut self.row_adr[r + w..r + w + rows.len() + 1],
        );
        relative(
            &batch.edge_supadr[edges.start..=edges.end],
            &mut self.edge_adr[e + w..e + w + edges.len() + 1],
        );
        let (n, m) = (row_sup.len(), edge_sup.len());
        self.support[s..s + n].copy_from_slice(&batch.row_support[row_sup]);
        self.support[s + n..s + n + m].copy_from_slice(&batch.edge_support[edge_sup]);
        let out_rows = out.world_rowadr[w] as usize..out.world_rowadr[w + 1] as usize;
        let (ntree, nv) = (out.ntree, out.nv);
        let nisland = out.nisland[w].max(0) as usize;
        let fields = out.fields_mut().into_iter().zip(&mut self.outputs);
        for ((field, extent), cached) in fields.skip(first) {
            let src = slice_of(extent, w, ntree, nv, &out_rows);
            let n = kept(extent, src.len(), nisland);
            let to = w * per_world(&self.cap, extent);
            cached[to..to + n].copy_from_slice(&field[src.start..src.start + n]);
        }
        self.current_at[w] = self.step;
        self.cached[w] = Some(Cached {
            rows: rows.len(),
            row_entries: n,
            edges: edges.len(),
            edge_entries: m,
        });
    }

    /// World `w`'s starts in the row, rowless and support arrays (the two address arrays hold
    /// one more entry per world, added by the callers as `+ w`).
    fn at(&self, w: usize) -> (usize, usize, usize) {
        (
            w * self.cap.njmax,
            w * self.cap.nedge,
            w * self.cap.nsupport,
        )
    }
}

/// World `w`'s rows and rowless hyperedges in `batch`, and their support entries.
fn spans(batch: &Batch, w: usize) -> (Range<usize>, Range<usize>, Range<usize>, Range<usize>) {
    let (rows, edges) = (batch.rows_of(w), batch.edges_of(w));
    let row_sup = batch.row_supadr[rows.start] as usize..batch.row_supadr[rows.end] as usize;
    let edge_sup = batch.edge_supadr[edges.start] as usize..batch.edge_supadr[edges.end] as usize;
    (rows, edges, row_sup, edge_sup)
}

/// Entries of a world's slice of `len` that are kept: per-island fields hold `nisland` values
/// and −1 past them (restored by filling), every other field all of its slice.
fn kept(extent: Extent, len: usize, nisland: usize) -> usize {
    if extent == Extent::Island {
        nisland.min(len)
    } else {
        len
    }
}

/// Entries per world of a field of `extent`, padded to the capacity.
fn per_world(cap: &Capacity, extent: Extent) -> usize {
    match extent {
        Extent::World => 1,
        Extent::Tree | Extent::Island => cap.ntree,
        Extent::Dof => cap.nv,
        Extent::Row => cap.njmax,
    }
}

/// World `w`'s slice of a field of `extent` in an output sized for `ntree` trees and `nv` dofs,
/// whose rows of the world are `rows`.
fn slice_of(
    extent: Extent,
    w: usize,
    ntree: usize,
    nv: usize,
    rows: &Range<usize>,
) -> Range<usize> {
    match extent {
        Extent::World => w..w + 1,
        Extent::Tree | Extent::Island => w * ntree..(w + 1) * ntree,
        Extent::Dof => w * nv..(w + 1) * nv,
        Extent::Row => rows.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::islands::FIELDS;

    #[test]
    fn tree_island_is_where_the_cache_looks_for_it() {
        assert_eq!(FIELDS[TREE_ISLAND], "tree_island");
        assert_eq!(EXTENTS[TREE_ISLAND], Extent::Tree);
    }
}
