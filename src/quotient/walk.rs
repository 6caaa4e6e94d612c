//! Walks a world's hyperedges split by class, so every pass (signature, contraction, guard,
//! solve) sees exactly the same static and dynamic sets.

use invalidation::signature::row_hash;

use super::classify::{Classifier, ROWLESS_KIND};
use crate::rows::{Batch, couples};

/// Calls `f(kind, support, local)` for every static hyperedge of world `w`: static rows
/// (`local` = world-local row index) then static coupling rowless hyperedges (`local` = −1 − e).
/// Ids decide only the class (an equality classified dynamic by its id); past that no pass
/// needs them, since no output depends on them.
#[inline]
pub fn each_static<E>(
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    mut f: impl FnMut(u8, &[i32], i32) -> Result<(), E>,
) -> Result<(), E> {
    let rows = batch.rows_of(w);
    for r in rows.clone() {
        let kind = batch.row_type[r];
        if classifier.row_is_static(kind, batch.row_id[r]) {
            f(kind as u8, batch.row_support_of(r), (r - rows.start) as i32)?;
        }
    }
    if classifier.rowless_is_static() {
        let edges = batch.edges_of(w);
        for e in edges.clone() {
            let support = batch.edge_support_of(e);
            if couples(support) {
                f(ROWLESS_KIND, support, -1 - (e - edges.start) as i32)?;
            }
        }
    }
    Ok(())
}

/// Calls `f(support)` for every dynamic hyperedge of world `w` (rows, then rowless ones when
/// those are classified dynamic; rowless ones that couple nothing are skipped).
#[inline]
pub fn each_dynamic<E>(
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    mut f: impl FnMut(&[i32]) -> Result<(), E>,
) -> Result<(), E> {
    for r in batch.rows_of(w) {
        if !classifier.row_is_static(batch.row_type[r], batch.row_id[r]) {
            f(batch.row_support_of(r))?;
        }
    }
    if !classifier.rowless_is_static() {
        for e in batch.edges_of(w) {
            let support = batch.edge_support_of(e);
            if couples(support) {
                f(support)?;
            }
        }
    }
    Ok(())
}

/// The hash of a static hyperedge as the guard sees it.
#[inline]
pub fn hash(kind: u8, support: &[i32]) -> u64 {
    row_hash(kind, support)
}
