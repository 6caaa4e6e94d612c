//! Deterministic mode: every world's rows in a canonical order before discovery.
//!
//! Upstream GPU contact generation appends rows with atomic counters, so row order — and with it
//! every row-level output (`efc_island`, `map_efc2iefc`, …) — changes from run to run. Sorting
//! each world's rows by a key computed from row data alone ([`keys`]) with a stable radix sort
//! ([`sort`]) and gathering them ([`gather`]) makes every output a function of the set of rows:
//! bitwise identical across runs and across input permutations of the constraints.
//!
//! [`Canonicalizer`] does the whole step on the CPU with scratch sized once from a [`Capacity`];
//! [`crate::gpu::order`] runs the same order on the device, inside a deterministic GPU solver's
//! captured step.
//!
//! ```
//! use archipelago::order::{Canonicalizer, RowKeys};
//! use archipelago::{Batch, Capacity, Input, Model, RowType};
//! let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
//! let mut b = Batch::builder();
//! let mut keys = RowKeys::default();
//! b.row(RowType::ContactPyramidal, 0, &[1, 2]); keys.push_contact([5, 9], 0);
//! b.row(RowType::ContactPyramidal, 1, &[0, 1]); keys.push_contact([2, 9], 0);
//! b.row(RowType::Equality, 3, &[0]);            keys.push_other();
//! b.end_world();
//! let batch = b.finish();
//! let input = Input::new(&model, &batch).unwrap();
//! let mut canon = Canonicalizer::new(&Capacity::fit(&model, &batch));
//! let (sorted, order) = canon.canonicalize(&input, &keys).unwrap();
//! assert_eq!(order, [2, 1, 0]); // equality first, then contacts by geom pair
//! assert_eq!(sorted.row_id, [3, 1, 0]);
//! ```

pub mod gather;
pub mod keys;
pub mod sort;

pub use keys::{Bounds, KeyBounds, KeyLayout, KeyWidth, RowKeys};
pub use sort::RadixSorter;

use crate::error::{Error, Result};
use crate::rows::{Batch, Capacity, Input};

/// Puts each world's rows into canonical order, with every buffer allocated once from a
/// [`Capacity`]: a batch within it allocates nothing.
#[derive(Debug, Clone)]
pub struct Canonicalizer {
    capacity: Capacity,
    fixed: Option<KeyLayout>,
    last: Option<KeyLayout>,
    batch: Batch,
    order: Vec<u32>,
    rank: Vec<u32>,
    keys32: Vec<u32>,
    keys64: Vec<u64>,
    high: Vec<u64>,
    sorter: RadixSorter,
}

impl Canonicalizer {
    /// Scratch and output for batches within `capacity`. Each batch gets the narrowest key
    /// layout its rows fit ([`KeyLayout::fit`]) unless one is fixed with
    /// [`with_layout`](Self::with_layout). Every buffer is allocated here, so `capacity` should
    /// pass [`Capacity::check_sizes`] (an engine checks it first).
    pub fn new(capacity: &Capacity) -> Canonicalizer {
        let rows = capacity.nworld * capacity.njmax;
        Canonicalizer {
            capacity: *capacity,
            fixed: None,
            last: None,
            batch: Batch::with_capacity(capacity),
            order: Vec::with_capacity(rows),
            rank: Vec::with_capacity(rows),
            keys32: vec![0; capacity.njmax],
            keys64: vec![0; capacity.njmax],
            high: vec![0; capacity.njmax],
            sorter: RadixSorter::new(capacity.njmax),
        }
    }

    /// Uses `layout` for every batch instead of fitting one per batch (for example bounds from
    /// the model: geom ids below `ngeom`). The order is the same; only the key width differs. A
    /// row outside the layout's bounds is refused with [`Error::KeyBounds`].
    pub fn with_layout(mut self, layout: KeyLayout) -> Canonicalizer {
        self.fixed = Some(layout);
        self
    }

    /// The capacity this was sized for.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// Sorts every world of `input` into canonical order. Returns the canonical batch and the
    /// gather order: canonical global row `k` is input row `order[k]` (so `dst[k] =
    /// src[order[k]]` puts any per-row array of the caller's into canonical order; see
    /// [`gather::gather_rows`], and [`rank`](Self::rank) for the inverse). `keys` describes the
    /// input's rows.
    pub fn canonicalize(&mut self, input: &Input<'_>, keys: &RowKeys) -> Result<(&Batch, &[u32])> {
        let batch = input.batch();
        self.capacity.fits(input)?;
        keys.check(batch)?;
        let layout = self.fixed.unwrap_or_else(|| KeyLayout::fit(batch, keys));
        self.last = Some(layout);
        self.order.clear();
        self.order.extend(0..batch.nrow() as u32);
        for w in 0..batch.nworld() {
            self.sort_world(batch, keys, &layout, w)?;
        }
        gather::gather(batch, &self.order, &mut self.batch)?;
        gather::invert(&self.order, &mut self.rank)?;
        Ok((&self.batch, &self.order))
    }

    fn sort_world(
        &mut self,
        batch: &Batch,
        keys: &RowKeys,
        layout: &KeyLayout,
        w: usize,
    ) -> Result<()> {
        let rows = batch.rows_of(w);
        let n = rows.len();
        let order = &mut self.order[rows.clone()];
        let bad = |r: usize| Error::KeyBounds {
            row: r,
            detail: format!("{:?}", layout.bounds()),
        };
        let key = |r: usize| layout.key(batch, keys, r).ok_or_else(|| bad(r));
        let key64 = |r: usize| layout.key64(batch, keys, r).ok_or_else(|| bad(r));
        match layout.width() {
            KeyWidth::Narrow => {
                for (slot, r) in self.keys32[..n].iter_mut().zip(rows) {
                    *slot = key64(r)? as u32;
                }
                self.sorter
                    .sort_u32(&mut self.keys32[..n], order, layout.bits())
            }
            KeyWidth::Wide => {
                for (slot, r) in self.keys64[..n].iter_mut().zip(rows) {
                    *slot = key64(r)?;
                }
                self.sorter
                    .sort_u64(&mut self.keys64[..n], order, layout.bits())
            }
            KeyWidth::Split => {
                // Two stable passes: by the low 64 bits, then by the rest.
                let start = rows.start;
                for ((low, high), r) in self.keys64[..n]
                    .iter_mut()
                    .zip(&mut self.high[..n])
                    .zip(rows)
                {
                    let k = key(r)?;
                    (*low, *high) = (k as u64, (k >> 64) as u64);
                }
                self.sorter.sort_u64(&mut self.keys64[..n], order, 64)?;
                for (slot, &r) in self.keys64[..n].iter_mut().zip(order.iter()) {
                    *slot = self.high[r as usize - start];
                }
                self.sorter
                    .sort_u64(&mut self.keys64[..n], order, layout.bits() - 64)
            }
        }
    }

    /// The key layout of the last batch.
    pub fn layout(&self) -> Option<KeyLayout> {
        self.last
    }

    /// The gather order of the last batch (canonical row → input row).
    pub fn order(&self) -> &[u32] {
        &self.order
    }

    /// The inverse of [`order`](Self::order) for the last batch (input row → canonical row).
    pub fn rank(&self) -> &[u32] {
        &self.rank
    }

    /// The canonical batch of the last call.
    pub fn batch(&self) -> &Batch {
        &self.batch
    }

    /// Bytes held (scratch and the canonical batch).
    pub fn bytes(&self) -> usize {
        let b = &self.batch;
        (b.world_rowadr.capacity()
            + b.row_id.capacity()
            + b.row_supadr.capacity()
            + b.row_support.capacity()
            + b.world_edgeadr.capacity()
            + b.edge_id.capacity()
            + b.edge_supadr.capacity()
            + b.edge_support.capacity()
            + self.order.capacity()
            + self.rank.capacity()
            + self.keys32.capacity())
            * 4
            + b.edge_kind.capacity()
            + b.row_type.capacity()
            + (self.keys64.capacity() + self.high.capacity()) * 8
            + self.sorter.bytes()
    }
}
