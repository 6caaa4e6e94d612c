//! `block`: one thread block per world with `parent[]` in shared memory: min-root CAS
//! union-find without global atomics, compression, then the maps, all in one kernel launch.
//! When a world's scratch (28 bytes per tree) exceeds the shared memory a block may use, the
//! same kernel keeps it in a global per-world buffer instead.

use cudarc::driver::CudaStream;

use super::maps::{self, BlockShape};
use super::module::Kernels;
use super::workspace::Workspace;
use crate::error::Result;

/// Enqueues one step: a single launch.
pub fn enqueue(k: &Kernels, shape: BlockShape, ws: &Workspace, stream: &CudaStream) -> Result<()> {
    maps::launch_fused_per_world(&k.block_dsu, shape, ws, stream)
}
