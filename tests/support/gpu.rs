//! The device for the GPU tests, and which cases of the conformance corpus
//! (`archipelago::synth::conformance`) the GPU corpus tests run.

#![allow(dead_code)]

use archipelago::Error;
use archipelago::gpu::Gpu;

/// The device, or `None` after printing `skipped: no CUDA device` when there is none; any other
/// failure to open one fails the test.
pub fn open() -> Option<Gpu> {
    match Gpu::open() {
        Ok(g) => Some(g),
        Err(Error::NoDevice(why)) => {
            println!("skipped: no CUDA device ({why})");
            None
        }
        Err(e) => panic!("opening the device failed with {e}"),
    }
}

/// The corpus cases selected by `ARCHIPELAGO_GPU_CORPUS`: the first 600 by default; `all` runs
/// the whole corpus the CPU modes are checked on in CI, a number that many cases, `a..b` a
/// range (so that a long run can be split across device calls).
pub fn corpus_range() -> std::ops::Range<usize> {
    const DEFAULT: usize = 600;
    let all = archipelago::synth::CONFORMANCE_CASES;
    match std::env::var("ARCHIPELAGO_GPU_CORPUS").as_deref() {
        Ok("all") => 0..all,
        Ok(s) => match s.split_once("..") {
            Some((a, b)) => a.parse().unwrap_or(0)..b.parse().unwrap_or(all).min(all),
            None => 0..s.parse().unwrap_or(DEFAULT).min(all),
        },
        Err(_) => 0..DEFAULT,
    }
}
