//! Register caps for batches of many waves.
//!
//! A block-per-world kernel is compiled for blocks of up to 1024 threads, so it may take 64
//! registers a thread, and `block`'s and the quotient's take about that many: at 64 threads a
//! world, 16 worlds fit a multiprocessor, half the warps it holds. That costs nothing while
//! every world is resident at once. Where a batch spans more than
//! `maps::MANY_WAVES` waves, the solver launches a copy of its kernel
//! compiled with fewer registers instead (`WORLD_MAXNREG` in `kernels/common.cu`): what no
//! longer fits spills to the L1 cache, and more worlds are in flight. Measured on the H200 at
//! 8,192 worlds (benches/results/gpu-h200-notes.md, session 26): `block` 94.1 → 79.0–79.3 µs
//! on mechanism-90% and 134.0 → 116.0 on hammock at 32 registers; the quotient 76.8 →
//! 70.9–71.0 and 101.5 → 99.4–99.9 at 40 (at 32 hammock's took 110.0). Only those two have a
//! cap: the other modes' kernels were not measured so. Of the quotient only the block program
//! has a capped copy: its warp program's kernels have launch bounds of their own, so a copy of
//! them was the same machine code.
//!
//! The cost is at construction, once per machine and build: the first capped solver builds its
//! program with NVRTC where the kernel cache lacks it ([`super::kernel_cache`]). A quotient
//! solver then builds both of its block programs, the uncapped one first, since its occupancy
//! decides (with the driver assembling PTX, as until session 53: 16.8 s on a fresh H200
//! machine, 0.2 s once cached; `block` 1.5 s, then 0.08 s; session 26, call 6).
//!
//! `ARCHIPELAGO_REGCAP=0` turns the caps off (for measurements).

use cudarc::driver::CudaFunction;

use super::DeviceInfo;
use super::maps::{BlockShape, beyond_waves};
use crate::error::Result;

/// Registers a thread of `block`'s capped kernel.
pub const BLOCK: u32 = 32;

/// Registers a thread of the quotient's capped kernels.
pub const QUOTIENT: u32 = 40;

/// `source` compiled with at most `maxnreg` registers a thread in its block-per-world kernels.
pub fn source(maxnreg: u32, source: &str) -> String {
    format!("#define WORLD_MAXNREG {maxnreg}\n{source}")
}

/// Whether `nworld` worlds launched as `shape` of `f` span more than
/// `maps::MANY_WAVES` waves (`beyond_waves`), so that a capped copy of
/// `f` pays (and the caps are not turned off).
pub fn pays(f: &CudaFunction, shape: BlockShape, nworld: usize, info: &DeviceInfo) -> Result<bool> {
    if super::env_choice("ARCHIPELAGO_REGCAP") == Some(false) {
        return Ok(false);
    }
    let sms = info.sm_count.max(1) as usize;
    Ok(beyond_waves(nworld, shape.resident(f)?, sms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_batches_past_two_waves_take_the_cap() {
        // mechanism-90% at 64 threads and 64 registers: 16 blocks a multiprocessor, 2,112
        // worlds a wave on 132.
        assert!(beyond_waves(8192, 16, 132));
        assert!(beyond_waves(4225, 16, 132));
        assert!(!beyond_waves(4224, 16, 132));
        assert!(!beyond_waves(1024, 16, 132));
        // No resident block reported: every batch is beyond.
        assert!(beyond_waves(300, 0, 132));
    }

    #[test]
    fn the_cap_is_a_define_before_the_source() {
        let s = source(40, "int x;");
        assert!(s.starts_with("#define WORLD_MAXNREG 40\n"));
        assert!(s.ends_with("int x;"));
    }
}
