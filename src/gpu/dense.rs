//! `dense`: MuJoCo Warp's former island kernel, kept as the baseline. A `tree_tree` 0/1 matrix
//! per world (cleared, then filled with idempotent stores, one thread per hyperedge), one
//! depth-first search per world with an explicit stack (one thread per world), then the maps.
//! It needs `8 * nworld * ntree^2` bytes and refuses when that would not fit.

use cudarc::driver::CudaStream;

use super::maps::{self, BlockShape};
use super::module::Kernels;
use super::workspace::Workspace;
use crate::error::{Error, Result};
use crate::rows::Capacity;

/// Bytes of the matrix and the stack for `cap`.
pub fn scratch_bytes(cap: &Capacity) -> Option<usize> {
    cap.nworld
        .checked_mul(cap.ntree)?
        .checked_mul(cap.ntree)?
        .checked_mul(8)
}

/// Refuses when the dense scratch exceeds `free` bytes (or `limit`, when set).
pub fn check_fits(cap: &Capacity, free: usize, limit: Option<usize>) -> Result<()> {
    let need = scratch_bytes(cap);
    let allowed = limit.map_or(free, |l| l.min(free));
    match need {
        Some(n) if n <= allowed => Ok(()),
        _ => Err(Error::Refused {
            mode: "dense",
            reason: format!(
                "its tree_tree matrix and stack need {} bytes (8 x {} worlds x {}^2 trees); {} bytes are available",
                need.map_or("more than 2^64".to_string(), |n| n.to_string()),
                cap.nworld,
                cap.ntree,
                allowed
            ),
        }),
    }
}

/// Enqueues one step.
pub fn enqueue(k: &Kernels, shape: BlockShape, ws: &Workspace, stream: &CudaStream) -> Result<()> {
    let (w, t) = (ws.nworld(), ws.args().ntree as usize);
    ws.labels().fill(0xff, w * t * 4, stream)?;
    ws.dense_mat().fill(0, w * t * t * 4, stream)?;
    maps::launch_per_hyperedge(&k.dense_build, ws, stream)?;
    let blocks = w.div_ceil(128) as u32;
    maps::launch(&k.dense_dfs, (blocks, 1, 1), 128, 0, &ws.args(), stream)?;
    maps::enqueue(k, shape, ws, stream)
}
