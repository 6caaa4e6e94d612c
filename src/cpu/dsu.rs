//! `dsu`: min-root union-find over the hyperedges' supports, as native MuJoCo (3.11+) and
//! MuJoCo Warp 4.0.0 do it.
//!
//! Each hyperedge activates its trees and unions them pairwise along the support; the union
//! hooks the larger root under the smaller, so every root is its component's smallest tree and
//! one ascending pass ranks the islands canonically.

use super::{CpuMode, Stats};
use crate::error::Result;
use crate::islands::Islands;
use crate::labels;
use crate::maps::{self, MapScratch};
use crate::rows::Input;

/// The min-root union-find mode.
#[derive(Debug, Default)]
pub struct Dsu {
    parent: Vec<i32>,
    maps: MapScratch,
}

/// Root of `t`, compressing the path behind it.
#[inline]
pub(crate) fn find(parent: &mut [i32], t: i32) -> i32 {
    let mut root = t;
    while parent[root as usize] != root {
        root = parent[root as usize];
    }
    let mut t = t;
    while parent[t as usize] != root {
        let next = parent[t as usize];
        parent[t as usize] = root;
        t = next;
    }
    root
}

/// Activates `a` and `b` (−1 = untouched) and joins their components under the smaller root.
#[inline]
pub(crate) fn union(parent: &mut [i32], a: i32, b: i32) {
    for t in [a, b] {
        if parent[t as usize] == -1 {
            parent[t as usize] = t;
        }
    }
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb) as usize] = ra.min(rb);
    }
}

impl CpuMode for Dsu {
    fn name(&self) -> &'static str {
        "dsu"
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        let (model, batch) = (input.model(), input.batch());
        let ntree = model.ntree();
        out.resize(ntree, model.nv(), batch);
        self.parent.resize(ntree, -1);
        for w in 0..batch.nworld() {
            let parent = &mut self.parent[..];
            parent.fill(-1);
            for support in batch.hyperedges_of(w) {
                let Some(&first) = support.first() else {
                    continue; // a rowless hyperedge whose trees all sleep
                };
                for &t in support {
                    union(parent, first, t);
                }
            }
            for t in 0..ntree as i32 {
                if parent[t as usize] != -1 {
                    parent[t as usize] = find(parent, t);
                }
            }
            let tree = w * ntree..(w + 1) * ntree;
            let labels = &mut out.tree_island[tree];
            labels.copy_from_slice(parent);
            let nisland = labels::canonicalize(labels, batch.rows_of(w).len());
            maps::fill_world(input, w, nisland, out, &mut self.maps);
        }
        let scratch_bytes = self.parent.capacity() * 4 + self.maps.bytes();
        Ok(Stats {
            rounds: 0,
            scratch_bytes,
        })
    }
}
