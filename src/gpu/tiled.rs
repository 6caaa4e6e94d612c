//! `tiled`: the propagation of `labelprop`, with 32-lane tiles over the world's support entries:
//! lanes of one hyperedge find each other with `__match_any_sync`, reduce their min with
//! `__reduce_min_sync`, and scatter it with `atomicMin`; a hyperedge cut by a tile boundary stays
//! linked through its first tree. Same in-kernel block vote for convergence, maps fused.

use cudarc::driver::CudaStream;

use super::maps::{self, BlockShape};
use super::module::Kernels;
use super::workspace::Workspace;
use crate::error::Result;

/// Enqueues one step: a single launch.
pub fn enqueue(k: &Kernels, shape: BlockShape, ws: &Workspace, stream: &CudaStream) -> Result<()> {
    maps::launch_fused_per_world(&k.block_tiled, shape, ws, stream)
}
