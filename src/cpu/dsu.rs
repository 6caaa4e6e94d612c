//! `dsu`: min-root union-find over the hyperedges' supports, as native MuJoCo (3.11+) and
//! MuJoCo Warp 4.0.0 do it.
//!
//! Each hyperedge activates its trees and unions them pairwise along the support; the union
//! hooks the larger root under the smaller, so every root is its component's smallest tree and
//! one ascending pass ranks the islands canonically.

use super::{CpuMode, Stats};
use crate::error::Result;
use crate::islands::Islands;
use crate::maps::MapScratch;
use crate::model::Model;
use crate::rows::Input;
use crate::union_find::join;

/// The min-root union-find mode.
#[derive(Debug, Default)]
pub struct Dsu {
    parent: Vec<i32>,
    maps: MapScratch,
}

impl CpuMode for Dsu {
    fn name(&self) -> &'static str {
        "dsu"
    }

    fn reserve(&mut self, model: &Model) {
        self.maps.reserve(model.ntree());
        self.parent.resize(model.ntree(), -1);
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.reserve(input.model());
        let (batch, parent) = (input.batch(), &mut self.parent[..]);
        super::solve_worlds(input, out, &mut self.maps, |w, labels| {
            parent.fill(-1);
            // A world without islands (`labels::canonicalize`) skips the unions.
            if input.discovers(w) {
                for support in batch.row_supports_of(w) {
                    join(parent, support);
                }
                for support in batch.coupling_edges_of(w) {
                    join(parent, support);
                }
            }
            // Every parent is smaller than its child and every root is its component's
            // smallest tree, which is all the ranking needs: no final pass of finds.
            labels.copy_from_slice(parent);
            0
        });
        let scratch_bytes = self.parent.capacity() * 4 + self.maps.bytes();
        Ok(Stats {
            rounds: 0,
            scratch_bytes,
        })
    }
}
