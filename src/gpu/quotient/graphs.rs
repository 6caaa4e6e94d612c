//! The key of the quotient's step graphs (the scalars a launch was captured with), how many it
//! keeps ([`KeptGraphs`](crate::gpu::graph::KeptGraphs) holds them), and the capture of a
//! launch made without one.

use super::QuotientSolver;
use crate::error::Result;

/// The scalars a step's graph was captured with (kernel arguments are by value): the
/// classifier's, whether unchanged worlds reuse their outputs, whether worlds of few nodes take
/// the node-level maps, the threads per block, which kernel, the masked twins' aside and listed
/// blocks (none without the twins) and the plain kernels' blocks beside them, and the batch's
/// one slot with its counts.
pub(super) type GraphKey = [i32; 17];

/// Graphs a solver keeps, one a key, the least recently replayed dropped first. A batch whose
/// worlds fall asleep and wake goes through at least three keys in turn: the plain kernels
/// (nothing masked at the step before), the masked twins with aside blocks (after the step at
/// which worlds fell asleep and were walked) and the twins with those worlds listed (after a
/// step that mapped them by their hint); their list sizes move the key again. Kept two, those
/// three keys captured a graph again at three steps of four of a sleeping sequence (session
/// 61), each capture's instantiation and upload on the step's time then. A graph of a few
/// kernel nodes holds little. (A new key's launch now goes directly and its graph is captured
/// while the device runs it: see [`QuotientSolver::replay`].)
pub(super) const GRAPHS: usize = 8;

impl QuotientSolver {
    /// Captures the graph of the last launch, made directly because no graph was kept for its
    /// key ([`replay`](QuotientSolver::replay)), if the solver still stands as it was for that
    /// launch (no upload since has moved its key or world count). Called while the device runs
    /// the launch, before the host waits for it.
    pub(super) fn capture_pending(&mut self) -> Result<()> {
        if !self.graphs.is_pending() {
            return Ok(()); // without computing the key
        }
        let (key, nworld) = (self.graph_key(), self.ws.nworld());
        let stream = self.stream.clone();
        let mut graphs = std::mem::take(&mut self.graphs);
        let r = graphs.capture_pending(&stream, key, nworld, |s| self.launch(s));
        self.graphs = graphs;
        r
    }

    /// The key of the uploaded batch's graph ([`GraphKey`]).
    pub(super) fn graph_key(&self) -> GraphKey {
        let c = self.quotient.classifier();
        let (one, twins) = (self.one(), self.twins_blocks());
        [
            c.static_eqs().start,
            c.static_eqs().end,
            c.eq_static() as i32,
            c.friction_static() as i32,
            c.rowless_is_static() as i32,
            self.reuse_active() as i32,
            self.reuse as i32,
            self.node_maps as i32,
            self.launch_shape().threads as i32,
            self.kernel_choice() as i32,
            twins[0] as i32,
            twins[1] as i32,
            twins[2] as i32,
            one[0],
            one[1],
            one[2],
            one[3],
        ]
    }
}
