//! `dsu`: min-root union-find in global memory, row-parallel (one thread per hyperedge; a
//! larger root is hooked under a smaller one with `atomicCAS`, finds halve paths), then one
//! read-only root search per tree (full compression), then the maps with a block-scan ranking
//! per world instead of a serial loop. Four graph nodes per step: memset, union, finalize, maps.

use cudarc::driver::CudaStream;

use super::maps::{self, BlockShape};
use super::module::Kernels;
use super::workspace::Workspace;
use crate::error::Result;

/// Enqueues one step.
pub fn enqueue(k: &Kernels, shape: BlockShape, ws: &Workspace, stream: &CudaStream) -> Result<()> {
    let trees = ws.nworld() * ws.args().ntree as usize;
    ws.labels().fill(0xff, trees * 4, stream)?;
    maps::launch_per_hyperedge(&k.dsu_union, ws, stream)?;
    let blocks = trees.div_ceil(256) as u32;
    maps::launch(&k.dsu_finalize, (blocks, 1, 1), 256, 0, &ws.args(), stream)?;
    maps::enqueue(k, shape, ws, stream)
}
