//! `labelprop`: min-label propagation with pointer jumping, one thread block per world, labels in
//! shared memory, maps fused into the same launch.
//!
//! Convergence is decided inside the kernel by a block vote (`__syncthreads_or` over "some label
//! moved"): since a world is one block, the vote is a barrier, so rounds cost no host round trip,
//! no device flag polled by the host and no grid-wide synchronisation; the whole step stays one
//! graph node. The rounds of each world are written to the workspace for the statistics.

use cudarc::driver::CudaStream;

use super::maps::{self, BlockShape};
use super::module::Kernels;
use super::workspace::Workspace;
use crate::error::Result;

/// Enqueues one step: a single launch.
pub fn enqueue(k: &Kernels, shape: BlockShape, ws: &Workspace, stream: &CudaStream) -> Result<()> {
    maps::launch_fused_per_world(&k.block_labelprop, shape, ws, stream)
}
