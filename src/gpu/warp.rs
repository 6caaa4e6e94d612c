//! `warp`: one warp per world for small worlds, `parent[]` in shared memory, every map with warp
//! primitives (ballot ranks, shuffle scans, the match-any scatter), one launch per step. Four
//! worlds share a block; with no block barriers, up to 64 worlds are in flight per
//! multiprocessor, which is what shapes of many tiny worlds (8192 x 64, aloha) need.

use cudarc::driver::CudaStream;

use super::maps::{self, BlockShape};
use super::module::Kernels;
use super::workspace::Workspace;
use crate::error::Result;
use crate::rows::Capacity;

/// Worlds (warps) per block; must match `WARP_WORLDS` in `kernels/warp.cu`.
pub const WORLDS_PER_BLOCK: usize = 4;

/// The launch shape: four warps, each with its world's scratch in shared memory when it fits.
pub fn shape(cap: &Capacity, smem_optin: usize) -> BlockShape {
    let smem = WORLDS_PER_BLOCK * maps::scratch_bytes(cap.ntree);
    BlockShape {
        threads: 32 * WORLDS_PER_BLOCK as u32,
        smem: if smem + 1024 <= smem_optin {
            smem as u32
        } else {
            0
        },
    }
}

/// Enqueues one step: a single launch.
pub fn enqueue(k: &Kernels, shape: BlockShape, ws: &Workspace, stream: &CudaStream) -> Result<()> {
    let blocks = ws.nworld().div_ceil(WORLDS_PER_BLOCK) as u32;
    maps::launch_fused(
        &k.warp_dsu,
        (blocks, 1, 1),
        shape.threads,
        shape.smem,
        ws,
        stream,
    )
}
