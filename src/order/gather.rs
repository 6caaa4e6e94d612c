//! Applying a row permutation to a [`Batch`], into a preallocated output batch.

use crate::error::{Error, Result};
use crate::rows::Batch;

/// Makes `dst` the batch whose global row `k` is `src`'s row `order[k]` (type, id and support),
/// with `src`'s world offsets and rowless hyperedges. `dst`'s vectors are cleared and refilled, so
/// once they have grown to a batch's size, gathering another of at most that size allocates
/// nothing. `order` should keep each row inside its world (the canonical order does); an index
/// past the rows is an error.
///
/// ```
/// use archipelago::{Batch, RowType};
/// use archipelago::order::gather;
/// let mut b = Batch::builder();
/// b.row(RowType::ContactPyramidal, 4, &[1, 2]).row(RowType::Equality, 0, &[0]).end_world();
/// let src = b.finish();
/// let mut dst = Batch::default();
/// gather::gather(&src, &[1, 0], &mut dst).unwrap();
/// assert_eq!(dst.row_id, [0, 4]);
/// assert_eq!(dst.row_support, [0, 1, 2]);
/// ```
pub fn gather(src: &Batch, order: &[u32], dst: &mut Batch) -> Result<()> {
    let nrow = src.nrow();
    if order.len() != nrow {
        return Err(Error::Offsets {
            array: "order",
            detail: format!("{} entries for {nrow} rows", order.len()),
        });
    }
    if let Some(k) = order.iter().position(|&r| r as usize >= nrow) {
        return Err(Error::Offsets {
            array: "order",
            detail: format!("entry {k} names row {} of {nrow}", order[k]),
        });
    }
    copy_into(&mut dst.world_rowadr, &src.world_rowadr);
    dst.row_type.clear();
    dst.row_type
        .extend(order.iter().map(|&r| src.row_type[r as usize]));
    dst.row_id.clear();
    dst.row_id
        .extend(order.iter().map(|&r| src.row_id[r as usize]));
    dst.row_supadr.clear();
    dst.row_supadr.push(0);
    dst.row_support.clear();
    for &r in order {
        dst.row_support
            .extend_from_slice(src.row_support_of(r as usize));
        dst.row_supadr.push(dst.row_support.len() as u32);
    }
    copy_into(&mut dst.world_edgeadr, &src.world_edgeadr);
    copy_into(&mut dst.edge_kind, &src.edge_kind);
    copy_into(&mut dst.edge_id, &src.edge_id);
    copy_into(&mut dst.edge_supadr, &src.edge_supadr);
    copy_into(&mut dst.edge_support, &src.edge_support);
    Ok(())
}

/// Writes the inverse permutation of `order` into `rank`: `rank[order[k]] = k`. `order` must be a
/// permutation of `0..order.len()`.
pub fn invert(order: &[u32], rank: &mut Vec<u32>) -> Result<()> {
    rank.clear();
    rank.resize(order.len(), u32::MAX);
    for (k, &r) in order.iter().enumerate() {
        match rank.get_mut(r as usize) {
            Some(slot) if *slot == u32::MAX => *slot = k as u32,
            _ => {
                return Err(Error::Offsets {
                    array: "order",
                    detail: format!("entry {k} ({r}) is repeated or out of range"),
                });
            }
        }
    }
    Ok(())
}

/// Gathers any per-row array of the caller's into canonical order: `dst[k] = src[order[k]]`.
///
/// ```
/// use archipelago::order::gather::gather_rows;
/// let mut dst = Vec::new();
/// gather_rows(&[10.0, 20.0, 30.0], &[2, 0, 1], &mut dst).unwrap();
/// assert_eq!(dst, [30.0, 10.0, 20.0]);
/// ```
pub fn gather_rows<T: Copy>(src: &[T], order: &[u32], dst: &mut Vec<T>) -> Result<()> {
    dst.clear();
    for (k, &r) in order.iter().enumerate() {
        match src.get(r as usize) {
            Some(&v) => dst.push(v),
            None => {
                return Err(Error::Offsets {
                    array: "order",
                    detail: format!("entry {k} names row {r} of {}", src.len()),
                });
            }
        }
    }
    Ok(())
}

fn copy_into<T: Copy>(dst: &mut Vec<T>, src: &[T]) {
    dst.clear();
    dst.extend_from_slice(src);
}
