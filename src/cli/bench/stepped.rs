//! The full rebuilds' and the quotient's solvers as the bench drives them: stepped, replayed
//! and timed alike, whatever their own signatures (only the quotient's upload takes events).

use archipelago::gpu::quotient::QuotientSolver;
use archipelago::gpu::workspace::Workspace;
use archipelago::gpu::{PinnedIslands, Solver};
use archipelago::{Input, Islands, Result};
use invalidation::Events;

/// A GPU solver as the bench steps and times it.
pub(super) trait Stepped {
    fn upload(&mut self, input: &Input<'_>, events: &Events) -> Result<()>;
    fn replay(&mut self) -> Result<()>;
    fn download(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<()>;
    fn time_replays(&mut self, warmup: usize, n: usize) -> Result<Vec<f64>>;
    fn time_back_to_back(&mut self, warmup: usize, n: usize) -> Result<f64>;
    /// Its device buffers (the outputs a reader after the step reads among them).
    fn workspace(&self) -> &Workspace;
    /// Whether the uploaded step's launch takes a warp a world (chosen at the upload).
    fn by_warps(&self) -> bool {
        false
    }

    /// Downloads the last replay's outputs into `out` (page-locked, as an Engine on a GPU has
    /// them) and says whether they equal `reference`.
    fn download_equals(
        &mut self,
        input: &Input<'_>,
        out: &mut PinnedIslands,
        reference: &Islands,
    ) -> Result<bool> {
        out.fill(input, |o| self.download(input, o))?;
        Ok(out.first_mismatch(reference).is_none())
    }
}

impl Stepped for Solver {
    fn upload(&mut self, input: &Input<'_>, _: &Events) -> Result<()> {
        Solver::upload(self, input)
    }
    fn replay(&mut self) -> Result<()> {
        Solver::replay(self)
    }
    fn download(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<()> {
        Solver::download(self, input, out).map(|_| ())
    }
    fn time_replays(&mut self, warmup: usize, n: usize) -> Result<Vec<f64>> {
        Solver::time_replays(self, warmup, n)
    }
    fn time_back_to_back(&mut self, warmup: usize, n: usize) -> Result<f64> {
        Solver::time_back_to_back(self, warmup, n)
    }
    fn workspace(&self) -> &Workspace {
        Solver::workspace(self)
    }
}

impl Stepped for QuotientSolver {
    fn upload(&mut self, input: &Input<'_>, events: &Events) -> Result<()> {
        QuotientSolver::upload(self, input, events)
    }
    fn replay(&mut self) -> Result<()> {
        QuotientSolver::replay(self)
    }
    fn download(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<()> {
        QuotientSolver::download(self, input, out).map(|_| ())
    }
    fn time_replays(&mut self, warmup: usize, n: usize) -> Result<Vec<f64>> {
        QuotientSolver::time_replays(self, warmup, n)
    }
    fn time_back_to_back(&mut self, warmup: usize, n: usize) -> Result<f64> {
        QuotientSolver::time_back_to_back(self, warmup, n)
    }
    fn workspace(&self) -> &Workspace {
        QuotientSolver::workspace(self)
    }
    fn by_warps(&self) -> bool {
        self.warp_worlds()
    }
}
