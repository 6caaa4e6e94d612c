//! `block`: one thread block per world with `parent[]` in shared memory: min-root CAS
//! union-find without global atomics, compression, then the maps, all in one kernel launch.
//! When a world's scratch (28 bytes per tree) exceeds the shared memory a block may use, the
//! same kernel keeps it in a global per-world buffer instead.

use cudarc::driver::{CudaFunction, CudaStream};

use super::maps::{self, BlockShape};
use super::module::{Program, Split};
use super::workspace::Workspace;
use super::{Gpu, module, regcap};
use crate::error::Result;

/// The program of `block_dsu_kernel` with at most [`regcap::BLOCK`] registers a thread: the
/// shared definitions and `block.cu` only.
pub fn capped_source() -> String {
    let sources = [
        ("common.cu", include_str!("../../kernels/common.cu")),
        ("block.cu", include_str!("../../kernels/block.cu")),
    ];
    regcap::source(regcap::BLOCK, &module::concat(&sources))
}

/// The program of [`capped_source`].
pub const CAPPED_PROGRAM: Program = Program {
    name: "block (registers capped)",
    source: capped_source,
    split: Split::Off,
};

/// `block_dsu_kernel` with at most [`regcap::BLOCK`] registers a thread, for batches of many
/// waves ([`capped_source`]), compiled on first use in a process and loaded once per context.
pub fn capped(gpu: &Gpu) -> Result<CudaFunction> {
    let program = gpu.program(&CAPPED_PROGRAM)?;
    module::function(&program, "block_dsu_kernel")
}

/// Enqueues one step: a single launch of `f`, `block_dsu_kernel` (the main module's, or its
/// register-capped copy for many waves: [`super::regcap`]).
pub(crate) fn enqueue(
    f: &CudaFunction,
    shape: BlockShape,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    maps::launch_fused_per_world(f, shape, ws, stream)
}
