//! CPU modes. Each finds connectivity its own way and hands min-roots to the shared canonical
//! numbering ([`crate::labels`]) and maps ([`crate::maps`]): rows → connectivity → labels → maps.

pub mod dense;
pub mod dsu;
pub mod labelprop;
pub mod quotient;

use crate::error::Result;
use crate::islands::Islands;
use crate::labels;
use crate::maps::{self, MapScratch};
use crate::model::Model;
use crate::rows::Input;

/// What a mode reports about one batch step besides its outputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Propagation rounds (the maximum over worlds); 0 for modes without rounds.
    pub rounds: u32,
    /// Bytes of scratch the mode holds for this batch (excluding the outputs).
    pub scratch_bytes: usize,
}

/// A CPU island-discovery mode: fills every output of every world of `input`.
pub trait CpuMode: Send {
    /// The mode's name as the command line spells it.
    fn name(&self) -> &'static str;

    /// Computes all outputs into `out` (resized as needed; allocations are reused).
    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats>;

    /// Whether worlds unchanged since their last solved step may keep its outputs (only the
    /// quotient reuses; the other modes solve every step either way). Timings that solve one
    /// batch again and again turn it off, or they would time a cache instead of a solve.
    fn set_reuse(&mut self, _on: bool) {}

    /// Allocates the scratch that batches of `model` need, so that solving them allocates
    /// nothing (an [`Engine`](crate::Engine) calls it when it is built). Solving sizes the
    /// scratch anyway: this only moves that to a time the caller chooses.
    fn reserve(&mut self, _model: &Model) {}
}

/// Names of the CPU modes, in the order the tools list them.
pub const NAMES: [&str; 4] = ["dense", "dsu", "labelprop", "quotient"];

/// A fresh CPU mode by name (`dense` with its default memory cap).
pub fn by_name(name: &str) -> Option<Box<dyn CpuMode>> {
    match name {
        "dense" => Some(Box::new(dense::Dense::default())),
        "dsu" => Some(Box::new(dsu::Dsu::default())),
        "labelprop" => Some(Box::new(labelprop::LabelProp::default())),
        "quotient" => Some(Box::new(quotient::QuotientMode::default())),
        _ => None,
    }
}

/// The flow every full-rebuild CPU mode shares, world by world: `connect` writes world `w`'s
/// min-roots into its labels (−1 for a tree no hyperedge touched) and returns the rounds it ran;
/// the labels are then numbered canonically ([`labels::canonicalize`]) and every map filled from
/// them ([`maps::fill_world`]). `out` is resized for `input` first. Returns the most rounds.
fn solve_worlds(
    input: &Input<'_>,
    out: &mut Islands,
    maps: &mut MapScratch,
    mut connect: impl FnMut(usize, &mut [i32]) -> u32,
) -> u32 {
    let (model, batch) = (input.model(), input.batch());
    let ntree = model.ntree();
    out.resize(ntree, model.nv(), batch);
    let mut rounds = 0;
    for w in 0..batch.nworld() {
        let labels = &mut out.tree_island[w * ntree..(w + 1) * ntree];
        rounds = rounds.max(connect(w, labels));
        let nisland = labels::canonicalize(labels, input.discovers(w));
        maps::fill_world(input, w, nisland, out, maps);
    }
    rounds
}
