//! Launch shapes and the maps launch.
//!
//! The maps run on the device for every mode, one thread block per world (`world_maps` in
//! `kernels/common.cu`): rank the min-roots with a block-wide scan (the canonical numbering),
//! count members per island with shared-memory atomics, turn counts into start addresses with
//! block scans, then three warps do the three stable counting-sort scatters (trees, dofs, rows)
//! with `__match_any_sync` ranks. The fused modes (`block`, `labelprop`, `tiled`) call the same
//! device function at the end of their own kernel; `dense` and `dsu` launch `maps_kernel`.

use cudarc::driver::{CudaFunction, CudaStream, result};

use super::module::Kernels;
use super::workspace::{Args, Workspace};
use super::{DeviceInfo, cuda};
use crate::error::{Error, Result};
use crate::rows::Capacity;

/// Threads per block of the per-hyperedge kernels.
pub const EDGE_THREADS: u32 = 128;

/// How a block-per-world kernel is launched: threads per block and dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockShape {
    /// Threads per block (a multiple of 32, at least 64: the three scatters need two warps).
    pub threads: u32,
    /// Dynamic shared memory per block in bytes (0 when the scratch is in global memory).
    pub smem: u32,
}

/// Bytes of per-world scratch: labels and six per-island arrays.
pub fn scratch_bytes(ntree: usize) -> usize {
    28 * ntree
}

/// Shared memory a block keeps at least for its kernels' static arrays ([`BlockShape::choose`]).
pub const STATIC_SMEM_KEPT: usize = 4096;

/// Whether the per-world scratch fits in the shared memory a block may opt in to beside the
/// kernel's own static shared memory (`static_bytes`), which counts against the same limit.
pub fn fits_smem(ntree: usize, static_bytes: usize, smem_optin: usize) -> bool {
    scratch_bytes(ntree) + static_bytes <= smem_optin
}

impl BlockShape {
    /// Threads per block for the block-per-world kernel `f`, from the work of one world (its
    /// trees, dofs and hyperedges): 128 up to 256, 256 up to 1024, 512 up to 4096, else 1024.
    /// Four adjustments, measured on the H200: when there are no more worlds than
    /// multiprocessors, a world takes up to 1024 threads (nothing else competes for the SM);
    /// big worlds in more than one wave drop to 256 threads when that keeps as many threads
    /// resident per SM (so four times the worlds are in flight); tiny worlds that would not all
    /// be resident at 128 threads (from the occupancy the driver reports for `f`'s registers
    /// and shared memory) drop to 64, so that twice as many worlds are in flight; and worlds
    /// of 257 to 1024 items in more than [`MANY_WAVES`] waves drop to the smallest block that
    /// keeps as many threads resident.
    pub fn choose(f: &CudaFunction, cap: &Capacity, info: &DeviceInfo) -> Result<BlockShape> {
        Self::choose_for(
            f,
            cap,
            info,
            cap.ntree.max(cap.nv).max(cap.njmax + cap.nedge),
        )
    }

    /// [`choose`](Self::choose) for a kernel whose widest loop over a world has `work`
    /// iterations (the quotient's node-level maps write a tree's dofs in the tree's thread, so
    /// their dofs do not widen it).
    pub fn choose_for(
        f: &CudaFunction,
        cap: &Capacity,
        info: &DeviceInfo,
        work: usize,
    ) -> Result<BlockShape> {
        // Kept for static shared memory: `f`'s own, and at least 4 KiB for the kernels given a
        // shape chosen on another (the quotient's node-level ones declare about 1.9 KB).
        let fixed = f.shared_size_bytes().map_err(cuda("cuFuncGetAttribute"))?;
        let fixed = (fixed as usize).max(STATIC_SMEM_KEPT);
        let smem = if fits_smem(cap.ntree, fixed, info.smem_optin) {
            scratch_bytes(cap.ntree) as u32
        } else {
            0
        };
        Kernels::allow_smem(f, smem.max(1) as usize)?;
        let occupancy = |threads: u32| BlockShape { threads, smem }.resident(f);
        let sms = info.sm_count.max(1) as usize;
        let threads = match threads_from_env() {
            Some(t) => t,
            None => threads_for(work, cap.nworld, sms, occupancy)?,
        };
        Ok(BlockShape { threads, smem })
    }

    /// Blocks of this shape of `f` resident at once on one multiprocessor, as the driver
    /// reports from `f`'s registers and shared memory.
    pub fn resident(&self, f: &CudaFunction) -> Result<usize> {
        f.occupancy_max_active_blocks_per_multiprocessor(self.threads, self.smem as usize, None)
            .map(|b| b as usize)
            .map_err(cuda("cuOccupancyMaxActiveBlocksPerMultiprocessor"))
    }

    /// Allows `f` the dynamic shared memory of this shape.
    pub fn prepare(&self, f: &CudaFunction) -> Result<()> {
        Kernels::allow_smem(f, self.smem.max(1) as usize)
    }
}

/// The rule of [`BlockShape::choose_for`] apart from the driver: threads per block for `nworld`
/// worlds whose widest loop has `work` iterations, on `sms` multiprocessors of which each holds
/// `occupancy(t)` blocks of `t` threads.
fn threads_for(
    work: usize,
    nworld: usize,
    sms: usize,
    occupancy: impl Fn(u32) -> Result<usize>,
) -> Result<u32> {
    let mut threads = match work {
        0..=256 => 128,
        257..=1024 => 256,
        1025..=4096 => 512,
        _ => 1024,
    };
    if nworld <= sms {
        threads = work.next_power_of_two().clamp(threads as usize, 1024) as u32;
    } else if threads >= 512 && nworld > occupancy(threads)? * sms {
        // More worlds than one wave: smaller blocks put more worlds in flight for the same
        // resident threads (particle x1024: 236.6 µs at 256 threads, 364.5 at 1024, `block`
        // on the H200). Only where shared memory does not cap the blocks per SM instead.
        let resident = occupancy(threads)? * threads as usize;
        if occupancy(256)? * 256 >= resident {
            threads = 256;
        }
    } else if threads == 128 && occupancy(128)? * sms < nworld {
        threads = 64;
    } else if threads == 256 && beyond_waves(nworld, occupancy(256)?, sms) {
        // hammock x8192 (96 trees, 312 dofs, 265 rows): 64 threads a world took a wave 2.4
        // times as long as 256, but four times the worlds were in flight: the quotient 169 ->
        // 100 µs, `block` 175 -> 134; at x2048 (3.9 waves of 256) the quotient 42.0 -> 28.4,
        // `block` 45.6 -> 36.7 (benches/results/gpu-h200-notes.md, sessions 25 and 26).
        let resident = occupancy(256)? * 256;
        for t in [64, 128] {
            if occupancy(t)? * t as usize >= resident {
                threads = t;
                break;
            }
        }
    }
    Ok(threads)
}

/// Waves of worlds past which mid-sized worlds take smaller blocks ([`BlockShape::choose`]):
/// a world of 64 threads took 2.4 times as long as one of 256 in the measured case, so the
/// four times as many in flight pay only past two waves at 256 (three waves of 256 take
/// three world times, one wave of 64 takes 2.4).
pub const MANY_WAVES: usize = 2;

/// Whether `nworld` worlds, `resident` blocks a multiprocessor on `sms` of them, span more
/// than [`MANY_WAVES`] waves (none resident: every batch does).
pub fn beyond_waves(nworld: usize, resident: usize, sms: usize) -> bool {
    nworld > MANY_WAVES * resident * sms
}

/// Threads per block forced by `ARCHIPELAGO_GPU_THREADS` (for measuring the rule above): a
/// multiple of 32 from 64 to 1024, else ignored.
fn threads_from_env() -> Option<u32> {
    let t: u32 = std::env::var("ARCHIPELAGO_GPU_THREADS")
        .ok()?
        .parse()
        .ok()?;
    ((64..=1024).contains(&t) && t.is_multiple_of(32)).then_some(t)
}

/// Launches `f` on `stream` (also inside a graph capture) with `params`, one pointer to each
/// kernel argument in order; the one place that calls the driver's launch. With `dependent`,
/// `f` is a programmatic dependent of the kernel before it on `stream`: it may start once every
/// block of that kernel has signalled (`griddepcontrol.launch_dependents`), and waits
/// (`griddepcontrol.wait`) before it reads anything that kernel writes; graphs capture this as
/// a programmatic edge.
///
/// # Safety
/// Each pointer must point to a value of exactly the type of the kernel's parameter at its
/// position, and every device pointer inside those values must stay allocated for as long as
/// the launch, and any graph captured from it, may run. With `dependent`, `f` must wait before
/// reading the previous kernel's outputs.
pub(crate) unsafe fn launch_with(
    f: &CudaFunction,
    grid: (u32, u32, u32),
    (threads, smem): (u32, u32),
    stream: &CudaStream,
    params: &mut [*mut std::ffi::c_void],
    dependent: bool,
) -> Result<()> {
    if !dependent {
        // SAFETY: the caller's contract above.
        return unsafe {
            result::launch_kernel(
                f.cu_function(),
                grid,
                (threads, 1, 1),
                smem,
                stream.cu_stream(),
                params,
            )
        }
        .map_err(cuda("cuLaunchKernel"));
    }
    use cudarc::driver::sys;
    // SAFETY: a plain-data union; every other byte stays zero.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.programmaticStreamSerializationAllowed = 1;
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value,
    };
    let config = sys::CUlaunchConfig {
        gridDimX: grid.0,
        gridDimY: grid.1,
        gridDimZ: grid.2,
        blockDimX: threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: smem,
        hStream: stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    // SAFETY: the caller's contract above; `config` and `attr` outlive the call.
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            f.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(cuda("cuLaunchKernelEx"))
}

/// Launches a fused discovery + maps kernel (`block`, `labelprop`, `tiled`, `warp`) over
/// `grid`. In deterministic mode on devices that allow it, it is a programmatic dependent of
/// the order kernel: its discovery (which never reads the order) runs while the worlds are
/// still being sorted, and its maps wait for the sort (`world_maps_in` in
/// `kernels/common.cu`). Otherwise, an ordinary launch.
pub(crate) fn launch_fused(
    f: &CudaFunction,
    grid: (u32, u32, u32),
    threads: u32,
    smem: u32,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    let args = ws.args();
    if !ws.overlaps_order() || grid.0 == 0 {
        return launch(f, grid, threads, smem, &args, stream);
    }
    let mut params = [&args as *const Args as *mut std::ffi::c_void];
    // SAFETY: the fused kernels take exactly one `Args` by value, whose pointers are buffers of
    // the workspace (which outlives every launch and graph made from it), and they wait for
    // the order kernel before their maps read `Args::rank`.
    unsafe { launch_with(f, grid, (threads, smem), stream, &mut params, true) }
}

/// Launches `f` with `args` on `stream` (also inside a graph capture).
pub(crate) fn launch(
    f: &CudaFunction,
    grid: (u32, u32, u32),
    threads: u32,
    smem: u32,
    args: &Args,
    stream: &CudaStream,
) -> Result<()> {
    if grid.0 == 0 || grid.1 == 0 || grid.2 == 0 {
        return Ok(());
    }
    if grid.1 > 65_535 || grid.2 > 65_535 {
        return Err(Error::Refused {
            mode: "gpu",
            reason: format!("launch grid {grid:?} exceeds the device's limits"),
        });
    }
    let mut params = [args as *const Args as *mut std::ffi::c_void];
    // SAFETY: every kernel taking `Args` takes exactly one, by value; its pointers are buffers
    // of the workspace, which outlives every launch and graph made from it.
    unsafe { launch_with(f, grid, (threads, smem), stream, &mut params, false) }
}

/// Launches a fused kernel (`block`, `labelprop`, `tiled`), one block per world now on the
/// device; see [`launch_fused`].
pub(crate) fn launch_fused_per_world(
    f: &CudaFunction,
    shape: BlockShape,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    let grid = (ws.nworld() as u32, 1, 1);
    launch_fused(f, grid, shape.threads, shape.smem, ws, stream)
}

/// Launches a block-per-world kernel over the worlds now on the device.
pub(crate) fn launch_per_world(
    f: &CudaFunction,
    shape: BlockShape,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    launch(
        f,
        (ws.nworld() as u32, 1, 1),
        shape.threads,
        shape.smem,
        &ws.args(),
        stream,
    )
}

/// Launches a per-hyperedge kernel: grid (world, chunk of `EDGE_THREADS` hyperedges).
pub(crate) fn launch_per_hyperedge(
    f: &CudaFunction,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    let cap = ws.capacity();
    let chunks = (cap.njmax + cap.nedge).div_ceil(EDGE_THREADS as usize) as u32;
    launch(
        f,
        (ws.nworld() as u32, chunks, 1),
        EDGE_THREADS,
        0,
        &ws.args(),
        stream,
    )
}

/// Enqueues the maps from the min-roots in the workspace's labels.
pub(crate) fn enqueue(
    k: &Kernels,
    shape: BlockShape,
    ws: &Workspace,
    stream: &CudaStream,
) -> Result<()> {
    launch_per_world(&k.maps, shape, ws, stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An H200's 132 multiprocessors for a kernel of 64 registers a thread (65,536 a
    /// multiprocessor, at most 32 blocks) whose blocks each take `smem_blocks`-th of the
    /// shared memory.
    fn h200(smem_blocks: usize) -> impl Fn(u32) -> Result<usize> {
        move |t| Ok((65536 / (64 * t as usize)).min(32).min(smem_blocks))
    }

    #[test]
    fn threads_follow_the_measured_cases() {
        // (widest loop, worlds, blocks the shared memory allows, threads)
        let cases = [
            // hammock (312 dofs): 64 threads only past two waves of 256 (4 blocks of 256 a
            // multiprocessor: 528 worlds a wave at most twice over).
            (312, 8192, 32, 64),
            (312, 2048, 32, 64),
            (312, 1057, 32, 64),
            (312, 1056, 32, 256),
            (312, 1024, 32, 256),
            // ... and only where as many threads stay resident: with room for three blocks
            // none smaller does, with room for eight 128 does and 64 does not.
            (312, 8192, 3, 256),
            (312, 8192, 8, 128),
            // mechanism-90% (212 rows): 64 once the worlds are not all resident at 128.
            (212, 1024, 32, 128),
            (212, 8192, 32, 64),
            // particle: big worlds past one wave drop to 256 where as many stay resident.
            (3960, 1024, 8, 256),
            // No more worlds than multiprocessors: as wide as the widest loop, up to 1,024.
            (460, 64, 32, 512),
            (5000, 1, 32, 1024),
        ];
        for (work, nworld, smem_blocks, want) in cases {
            let got = threads_for(work, nworld, 132, h200(smem_blocks)).unwrap();
            assert_eq!(
                got, want,
                "{work} items, {nworld} worlds, {smem_blocks} blocks"
            );
        }
    }
}
