//! Engine options for the tests that run every configuration.

use archipelago::{Mode, Options};

/// `Options` for every mode, reuse on and off, deterministic off and on.
pub fn every() -> Vec<Options> {
    let mut all = Vec::new();
    for mode in Mode::ALL {
        for reuse in [true, false] {
            for deterministic in [false, true] {
                all.push(Options {
                    mode,
                    reuse,
                    deterministic,
                    ..Options::default()
                });
            }
        }
    }
    all
}
