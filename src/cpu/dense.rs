//! `dense`: MuJoCo Warp's former island kernel, on the CPU.
//!
//! Per world a 0/1 `tree_tree[ntree][ntree]` matrix is filled from every hyperedge, its support
//! expanded as a star through its first tree (a one-tree row sets its diagonal entry), then one
//! depth-first search per world with an explicit stack of `ntree²` entries labels every tree
//! with the tree its search started from. Searches start from trees in ascending order, so that
//! start tree is the smallest of its component: the labels are min-roots, ready for the shared
//! canonical numbering.
//!
//! The GPU kernel holds both arrays for every world at once, `8·nworld·ntree²` bytes of int32
//! scratch; that is the figure this mode reports and checks against its memory cap, refusing
//! rather than allocating above it. On the CPU one world's matrix and stack are reused.

use super::{CpuMode, Stats};
use crate::error::{Error, Result};
use crate::islands::Islands;
use crate::maps::MapScratch;
use crate::model::Model;
use crate::rows::Input;

/// The default memory cap: 1 GiB of scratch.
pub const DEFAULT_CAP_BYTES: usize = 1 << 30;

/// The dense-matrix mode.
#[derive(Debug)]
pub struct Dense {
    cap_bytes: usize,
    tree_tree: Vec<i32>,
    stack: Vec<i32>,
    maps: MapScratch,
}

impl Default for Dense {
    fn default() -> Dense {
        Dense::new(DEFAULT_CAP_BYTES)
    }
}

impl Dense {
    /// A dense mode that refuses batches whose scratch, `8·nworld·ntree²` bytes, exceeds
    /// `cap_bytes`.
    ///
    /// ```
    /// use archipelago::{cpu::CpuMode, cpu::dense::Dense, Batch, Error, Input, Islands, Model};
    /// let model = Model::from_dofnum(&[1; 64]).unwrap();
    /// let mut b = Batch::builder();
    /// b.end_world();
    /// let batch = b.finish();
    /// let input = Input::new(&model, &batch).unwrap();
    /// let mut dense = Dense::new(1000); // 8·1·64² = 32768 bytes would be needed
    /// let err = dense.solve(&input, &mut Islands::default()).unwrap_err();
    /// assert!(matches!(err, Error::Refused { mode: "dense", .. }));
    /// ```
    pub fn new(cap_bytes: usize) -> Dense {
        Dense {
            cap_bytes,
            tree_tree: Vec::new(),
            stack: Vec::new(),
            maps: MapScratch::default(),
        }
    }

    /// The memory cap in bytes.
    pub fn cap_bytes(&self) -> usize {
        self.cap_bytes
    }

    /// Sizes the scratch for worlds of `ntree` trees.
    fn size_for(&mut self, ntree: usize) {
        self.maps.reserve(ntree);
        self.tree_tree.resize(ntree * ntree, 0);
        self.stack.resize(ntree * ntree, 0);
    }

    /// Scratch bytes of the GPU kernel for `nworld` worlds of `ntree` trees (`None` on overflow).
    pub fn scratch_bytes(nworld: usize, ntree: usize) -> Option<usize> {
        ntree
            .checked_mul(ntree)?
            .checked_mul(nworld)?
            .checked_mul(2 * size_of::<i32>())
    }

    /// The scratch bytes of `nworld` worlds of `ntree` trees where they are within `cap_bytes`;
    /// otherwise `dense`'s refusal, saying what they would need.
    pub fn check_scratch(nworld: usize, ntree: usize, cap_bytes: usize) -> Result<usize> {
        match Dense::scratch_bytes(nworld, ntree) {
            Some(bytes) if bytes <= cap_bytes => Ok(bytes),
            bytes => Err(Error::Refused {
                mode: "dense",
                reason: format!(
                    "{nworld} worlds of {ntree} trees need 8·nworld·ntree² = {} bytes of \
                     scratch, over the cap of {cap_bytes} bytes",
                    bytes.map_or("more than usize::MAX".into(), |b| b.to_string()),
                ),
            }),
        }
    }
}

impl CpuMode for Dense {
    fn name(&self) -> &'static str {
        "dense"
    }

    /// Only where one world of `model` is within the cap: a mode that refuses every batch of
    /// it needs no scratch.
    fn reserve(&mut self, model: &Model) {
        let ntree = model.ntree();
        if Dense::scratch_bytes(1, ntree).is_some_and(|b| b <= self.cap_bytes) {
            self.size_for(ntree);
        }
    }

    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        let (model, batch) = (input.model(), input.batch());
        let (nworld, ntree) = (batch.nworld(), model.ntree());
        let scratch_bytes = Dense::check_scratch(nworld, ntree, self.cap_bytes)?;
        if nworld > 0 {
            self.size_for(ntree);
        }
        let (tree_tree, stack) = (&mut self.tree_tree[..], &mut self.stack);
        super::solve_worlds(input, out, &mut self.maps, |w, labels| {
            tree_tree.fill(0);
            for support in batch.hyperedges_of(w) {
                let Some(&first) = support.first() else {
                    continue; // a rowless hyperedge of sleeping trees only
                };
                let first = first as usize;
                for &t in support {
                    let t = t as usize;
                    tree_tree[first * ntree + t] = 1;
                    tree_tree[t * ntree + first] = 1;
                }
            }
            labels.fill(-1);
            dfs(tree_tree, stack, ntree, labels);
            0
        });
        Ok(Stats {
            rounds: 0,
            scratch_bytes,
        })
    }
}

/// Labels every tree with an edge by the tree its search started from, scanning start trees in
/// ascending order. A tree is labelled when pushed, so each is pushed at most once; the stack
/// keeps the kernel's `ntree²` size all the same.
fn dfs(tree_tree: &[i32], stack: &mut [i32], ntree: usize, labels: &mut [i32]) {
    for start in 0..ntree {
        let row = &tree_tree[start * ntree..(start + 1) * ntree];
        if labels[start] != -1 || !row.contains(&1) {
            continue;
        }
        labels[start] = start as i32;
        stack[0] = start as i32;
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let t = stack[top] as usize;
            for (u, &edge) in tree_tree[t * ntree..(t + 1) * ntree].iter().enumerate() {
                if edge == 1 && labels[u] == -1 {
                    labels[u] = start as i32;
                    stack[top] = u as i32;
                    top += 1;
                }
            }
        }
    }
}
