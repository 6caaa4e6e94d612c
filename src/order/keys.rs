//! The canonical key of each row, computed from row data only (never from its position).
//!
//! Rows are ordered inside a world by a class, then by the class's fields:
//!
//! - equality, friction and limit rows: class = the MuJoCo type code (0..=4), then the row's id;
//! - contacts of every cone: class 5, then (geom1, geom2, collision id).
//!
//! Classes ascend in MuJoCo's own efc block order, so a canonical world reads like a native one:
//! equalities, friction, limits, contacts. Rows of one constraint (a weld's six rows, the
//! pyramid edges of one contact) share a key and keep their relative order because the sort is
//! stable: that is the "row within the constraint" part of the order.
//!
//! A [`KeyLayout`] packs the fields into as few bits as the batch (or the caller's bounds)
//! needs: each field is stored as `value - min` in `bits(max - min)` bits. The layout never
//! changes the order, only the key's width: [`KeyWidth::Narrow`] (≤ 32 bits, one 32-bit sort),
//! [`KeyWidth::Wide`] (≤ 64 bits) or [`KeyWidth::Split`] (more: two stable 64-bit passes).

use crate::error::{Error, Result};
use crate::rows::{Batch, RowType};

/// Row metadata the canonical key needs that a [`Batch`] does not carry, one entry per global
/// row: each contact's two geoms and its collision id (the index of the contact among those its
/// geom pair produced). Non-contact rows hold −1 (ignored).
///
/// ```
/// use archipelago::order::RowKeys;
/// let mut keys = RowKeys::default();
/// keys.push_other();             // an equality row
/// keys.push_contact([3, 7], 0);  // a contact between geoms 3 and 7
/// assert_eq!(keys.len(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowKeys {
    /// `[geom1, geom2]` of each contact row.
    pub geom: Vec<[i32; 2]>,
    /// Collision id of each contact row.
    pub colid: Vec<i32>,
}

impl RowKeys {
    /// Room for `nrow` rows without reallocating.
    pub fn with_capacity(nrow: usize) -> RowKeys {
        RowKeys {
            geom: Vec::with_capacity(nrow),
            colid: Vec::with_capacity(nrow),
        }
    }

    /// Rows described.
    pub fn len(&self) -> usize {
        self.colid.len()
    }

    /// No rows described.
    pub fn is_empty(&self) -> bool {
        self.colid.is_empty()
    }

    /// Forgets every row, keeping the allocations.
    pub fn clear(&mut self) {
        self.geom.clear();
        self.colid.clear();
    }

    /// Appends a contact row.
    pub fn push_contact(&mut self, geom: [i32; 2], colid: i32) {
        self.geom.push(geom);
        self.colid.push(colid);
    }

    /// Appends a non-contact row.
    pub fn push_other(&mut self) {
        self.push_contact([-1, -1], -1);
    }

    /// Entries for a batch without contacts: every row a non-contact.
    pub fn non_contact(nrow: usize) -> RowKeys {
        RowKeys {
            geom: vec![[-1, -1]; nrow],
            colid: vec![-1; nrow],
        }
    }

    /// Checks that there is one entry per row of `batch`.
    pub fn check(&self, batch: &Batch) -> Result<()> {
        for (array, len) in [
            ("RowKeys::geom", self.geom.len()),
            ("RowKeys::colid", self.colid.len()),
        ] {
            if len != batch.nrow() {
                return Err(Error::Offsets {
                    array,
                    detail: format!("{len} entries for {} rows", batch.nrow()),
                });
            }
        }
        Ok(())
    }
}

/// Class of contact rows (after every non-contact type code).
pub const CONTACT_CLASS: u32 = RowType::ContactFrictionless as u32;

/// Bits of the class field.
pub const CLASS_BITS: u32 = 3;

/// Inclusive value range of one key field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// Smallest value.
    pub min: i32,
    /// Largest value.
    pub max: i32,
}

impl Bounds {
    /// The range `0..n` (for example geom ids of a model with `n` geoms); `n == 0` gives `0..1`.
    pub fn below(n: usize) -> Bounds {
        let max = n.saturating_sub(1).min(i32::MAX as usize) as i32;
        Bounds { min: 0, max }
    }

    /// The smallest range holding every value of `values`; `None` when empty.
    pub fn of(values: impl IntoIterator<Item = i32>) -> Option<Bounds> {
        values.into_iter().fold(None, |acc, v| match acc {
            None => Some(Bounds { min: v, max: v }),
            Some(b) => Some(Bounds {
                min: b.min.min(v),
                max: b.max.max(v),
            }),
        })
    }

    fn bits(self) -> u32 {
        let span = (i64::from(self.max) - i64::from(self.min)).max(0) as u64;
        u64::BITS - span.leading_zeros()
    }

    fn contains(self, v: i32) -> bool {
        (self.min..=self.max).contains(&v)
    }
}

/// `v - b.min` when `v` lies in `b`.
#[inline]
fn offset(v: i32, b: Bounds) -> Option<u64> {
    let d = (i64::from(v) - i64::from(b.min)) as u64;
    (d <= (i64::from(b.max) - i64::from(b.min)) as u64).then_some(d)
}

/// The bounds a [`KeyLayout`] is built for: the range of non-contact ids, of geom ids (both
/// geoms share one range) and of collision ids. `None` means no row of that kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KeyBounds {
    /// Ids of equality, friction and limit rows.
    pub id: Option<Bounds>,
    /// Geom ids of contact rows.
    pub geom: Option<Bounds>,
    /// Collision ids of contact rows.
    pub colid: Option<Bounds>,
}

/// How wide a packed key is, and therefore how it is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyWidth {
    /// At most 32 bits: `u32` keys.
    Narrow,
    /// 33 to 64 bits: `u64` keys.
    Wide,
    /// More than 64 bits: sorted by the low 64 bits, then stably by the rest.
    Split,
}

/// Where each field sits in a packed key. From high to low bits: class, then either the id
/// (non-contacts) or geom1, geom2, colid (contacts), left-aligned under the class so both kinds
/// compare by class first.
///
/// ```
/// use archipelago::order::{Bounds, KeyBounds, KeyLayout, KeyWidth};
/// let layout = KeyLayout::new(KeyBounds {
///     id: Some(Bounds::below(100)),
///     geom: Some(Bounds::below(50)),
///     colid: Some(Bounds::below(4)),
/// });
/// assert_eq!(layout.bits(), 3 + 6 + 6 + 2);
/// assert_eq!(layout.width(), KeyWidth::Narrow);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyLayout {
    bounds: KeyBounds,
    id_bits: u32,
    geom_bits: u32,
    colid_bits: u32,
    payload_bits: u32,
}

impl KeyLayout {
    /// A layout for fields within `bounds`.
    pub fn new(bounds: KeyBounds) -> KeyLayout {
        let bits = |b: Option<Bounds>| b.map_or(0, Bounds::bits);
        let (id_bits, geom_bits, colid_bits) =
            (bits(bounds.id), bits(bounds.geom), bits(bounds.colid));
        KeyLayout {
            bounds,
            id_bits,
            geom_bits,
            colid_bits,
            payload_bits: id_bits.max(2 * geom_bits + colid_bits),
        }
    }

    /// The narrowest layout for every row of `batch` (non-contact ids from `row_id`, contact
    /// fields from `keys`). `keys` must have been checked against `batch` ([`RowKeys::check`]).
    pub fn fit(batch: &Batch, keys: &RowKeys) -> KeyLayout {
        let rows = 0..batch.nrow().min(keys.len());
        let contact = |r: &usize| batch.row_type[*r].is_contact();
        KeyLayout::new(KeyBounds {
            id: Bounds::of(
                rows.clone()
                    .filter(|r| !contact(r))
                    .map(|r| batch.row_id[r]),
            ),
            geom: Bounds::of(rows.clone().filter(contact).flat_map(|r| keys.geom[r])),
            colid: Bounds::of(rows.filter(contact).map(|r| keys.colid[r])),
        })
    }

    /// The bounds this layout was built for.
    pub fn bounds(&self) -> KeyBounds {
        self.bounds
    }

    /// Total bits of a key.
    pub fn bits(&self) -> u32 {
        CLASS_BITS + self.payload_bits
    }

    /// Bits below the class field.
    pub fn payload_bits(&self) -> u32 {
        self.payload_bits
    }

    /// Field widths `(id, geom, colid)` in bits.
    pub fn field_bits(&self) -> (u32, u32, u32) {
        (self.id_bits, self.geom_bits, self.colid_bits)
    }

    /// How keys of this layout are stored and sorted.
    pub fn width(&self) -> KeyWidth {
        match self.bits() {
            0..=32 => KeyWidth::Narrow,
            33..=64 => KeyWidth::Wide,
            _ => KeyWidth::Split,
        }
    }

    /// Key of global row `r` of `batch`, or `None` when a field is outside the layout's bounds.
    pub fn key(&self, batch: &Batch, keys: &RowKeys, r: usize) -> Option<u128> {
        let kind = batch.row_type[r];
        if kind.is_contact() {
            self.contact_key(keys.geom[r], keys.colid[r])
        } else {
            self.other_key(kind, batch.row_id[r])
        }
    }

    /// Key of a non-contact row of type `kind` and id `id`.
    pub fn other_key(&self, kind: RowType, id: i32) -> Option<u128> {
        let b = self.bounds.id.filter(|b| b.contains(id))?;
        let id = (i64::from(id) - i64::from(b.min)) as u128;
        let shift = self.payload_bits - self.id_bits;
        Some(self.class(kind as u32) | (id << shift))
    }

    /// Key of a contact row between `geom` with collision id `colid`.
    pub fn contact_key(&self, geom: [i32; 2], colid: i32) -> Option<u128> {
        let g = self.bounds.geom?;
        let c = self.bounds.colid.filter(|c| c.contains(colid))?;
        if !g.contains(geom[0]) || !g.contains(geom[1]) {
            return None;
        }
        let off = |v: i32, min: i32| (i64::from(v) - i64::from(min)) as u128;
        let packed = (off(geom[0], g.min) << (self.geom_bits + self.colid_bits))
            | (off(geom[1], g.min) << self.colid_bits)
            | off(colid, c.min);
        let shift = self.payload_bits - (2 * self.geom_bits + self.colid_bits);
        Some(self.class(CONTACT_CLASS) | (packed << shift))
    }

    /// Key of global row `r` when the layout is at most 64 bits wide ([`KeyWidth::Narrow`] or
    /// [`KeyWidth::Wide`]): the same value as [`key`](Self::key), in 64-bit arithmetic (the
    /// per-row hot path of the sort).
    #[inline]
    pub fn key64(&self, batch: &Batch, keys: &RowKeys, r: usize) -> Option<u64> {
        let kind = batch.row_type[r];
        let class = if kind.is_contact() {
            CONTACT_CLASS
        } else {
            kind as u32
        };
        let payload = if kind.is_contact() {
            let g = self.bounds.geom?;
            let [g1, g2] = keys.geom[r];
            let packed = (offset(g1, g)? << (self.geom_bits + self.colid_bits))
                | (offset(g2, g)? << self.colid_bits)
                | offset(keys.colid[r], self.bounds.colid?)?;
            packed << (self.payload_bits - (2 * self.geom_bits + self.colid_bits))
        } else {
            offset(batch.row_id[r], self.bounds.id?)? << (self.payload_bits - self.id_bits)
        };
        Some((u64::from(class) << self.payload_bits) | payload)
    }

    fn class(&self, class: u32) -> u128 {
        u128::from(class) << self.payload_bits
    }
}
