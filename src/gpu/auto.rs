//! `auto`: picks the full-rebuild mode from measured cost on the shape at hand.
//!
//! [`choose`] builds every mode that fits (dense only where its matrix fits in the device memory
//! actually free), times graph replays of a sample batch of the shape, and keeps the fastest;
//! the result is exact whichever wins, so the choice only affects speed.

use super::Gpu;
use super::solver::{Mode, Options, Solver};
use crate::error::{Error, Result};
use crate::model::Model;
use crate::rows::{Capacity, Input};

/// What `auto` measured: each candidate's median device time per step (µs), or why it was not
/// run.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The fastest mode.
    pub mode: Mode,
    /// Median µs per step for each mode that ran; the error text for each that did not.
    pub measured: Vec<(Mode, std::result::Result<f64, String>)>,
}

/// Times every mode on `sample` (which must fit `cap`) and returns the fastest, built and ready.
/// Where none could run: [`Error::Refused`] (with each mode's reason) when every one was refused
/// or found too little device memory, else the first other error.
pub fn choose(
    gpu: &Gpu,
    cap: Capacity,
    model: &Model,
    sample: &Input<'_>,
    opts: Options,
) -> Result<(Solver, Choice)> {
    let mut best: Option<(f64, Solver)> = None;
    let mut measured = Vec::new();
    // An error other than a refusal or the device's memory is a fault, not a choice: the
    // first such is returned where no mode ran.
    let mut fault = None;
    for mode in Mode::ALL {
        let timed = Solver::with_options(gpu, mode, cap, model, opts).and_then(|mut s| {
            s.upload(sample)?;
            Ok((super::graph::median_us(s.time_replays(2, 7)?), s))
        });
        match timed {
            Ok((us, solver)) => {
                measured.push((mode, Ok(us)));
                if best.as_ref().is_none_or(|(b, _)| us < *b) {
                    best = Some((us, solver));
                }
            }
            Err(e) => {
                measured.push((mode, Err(e.to_string())));
                if !matches!(e, Error::Refused { .. } | Error::OutOfMemory { .. }) {
                    fault.get_or_insert(e);
                }
            }
        }
    }
    if let (None, Some(e)) = (&best, fault) {
        return Err(e);
    }
    let (_, solver) = best.ok_or_else(|| {
        let why: Vec<String> = measured
            .iter()
            .filter_map(|(m, r)| r.as_ref().err().map(|e| format!("{}: {e}", m.name())))
            .collect();
        Error::Refused {
            mode: "auto",
            reason: format!(
                "no GPU mode could be built for this capacity ({})",
                why.join("; ")
            ),
        }
    })?;
    let mode = solver.mode();
    Ok((solver, Choice { mode, measured }))
}
