//! `labelprop`: min-label propagation with pointer jumping, one thread block per world, labels in
//! shared memory, maps fused into the same launch.
//!
//! Convergence is decided inside the kernel by a block vote (`__syncthreads_or` over "some label
//! moved"): since a world is one block, the vote is a barrier, so rounds cost no host round trip,
//! no device flag polled by the host and no grid-wide synchronisation; the whole step stays one
//! graph node. The rounds of each world are written to the workspace for the statistics.

use cudarc::driver::{CudaFunction, CudaStream};

use super::maps::{self, BlockShape};
use super::workspace::Workspace;
use crate::error::Result;

/// Enqueues one step: a single launch of `f`, `block_labelprop_kernel`.
pub fn enqueue(
    f: &CudaFunction,
    shape: BlockShape,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    maps::launch_fused_per_world(f, shape, ws, stream)
}
