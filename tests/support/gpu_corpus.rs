//! Which cases of the conformance corpus (`archipelago::synth::conformance`) the GPU corpus
//! tests run: the first 600 by default; `ARCHIPELAGO_GPU_CORPUS=all` runs the whole corpus the
//! CPU modes are checked on in CI, a number that many cases, `a..b` a range (so that a long run
//! can be split across device calls).

/// The case range selected by `ARCHIPELAGO_GPU_CORPUS`.
pub fn range() -> std::ops::Range<usize> {
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
