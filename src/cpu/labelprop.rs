//! `labelprop`: min-label propagation over the hyperedges, with pointer jumping.
//!
//! Every tree a hyperedge touches starts with its own id as label. Each round reduces the
//! minimum label over every hyperedge and lowers each of its trees to it, then jumps pointers
//! (`label[t] = label[label[t]]`); rounds repeat until one changes nothing. Labels only ever
//! decrease and always name a tree of the same component, so at the fixed point every tree holds
//! its component's smallest tree: min-roots, ready for the shared canonical numbering.
//!
//! The round count (the last, unchanged round included) is what this mode is about: it grows
//! with the diameter of the hypergraph, which is why a long chain is its worst case.

use super::{CpuMode, Stats};
use crate::error::Result;
use crate::islands::Islands;
use crate::maps::MapScratch;
use crate::model::Model;
use crate::rows::{Batch, Input};

/// The min-label propagation mode.
#[derive(Debug, Default)]
pub struct LabelProp {
    maps: MapScratch,
}

impl CpuMode for LabelProp {
    fn name(&self) -> &'static str {
        "labelprop"
    }

    fn reserve(&mut self, model: &Model) {
        self.maps.reserve(model.ntree());
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.reserve(input.model());
        let batch = input.batch();
        let rounds = super::solve_worlds(input, out, &mut self.maps, |w, labels| {
            propagate(batch, w, labels)
        });
        Ok(Stats {
            rounds,
            scratch_bytes: self.maps.bytes(),
        })
    }
}

/// Writes world `w`'s min-roots into `labels` (−1 for untouched trees); returns the rounds run.
fn propagate(batch: &Batch, w: usize, labels: &mut [i32]) -> u32 {
    labels.fill(-1);
    for support in batch.hyperedges_of(w) {
        for &t in support {
            labels[t as usize] = t;
        }
    }
    let mut rounds = 0;
    loop {
        rounds += 1;
        let mut changed = false;
        for support in batch.hyperedges_of(w) {
            let Some(min) = support.iter().map(|&t| labels[t as usize]).min() else {
                continue;
            };
            for &t in support {
                let label = &mut labels[t as usize];
                if min < *label {
                    *label = min;
                    changed = true;
                }
            }
        }
        for t in 0..labels.len() {
            let label = labels[t];
            if label >= 0 {
                let jump = labels[label as usize];
                if jump < label {
                    labels[t] = jump;
                    changed = true;
                }
            }
        }
        if !changed {
            return rounds;
        }
    }
}
