//! The step graphs a solver keeps: one a key of the scalars a launch was captured with, the
//! least recently replayed dropped first, and the capture of a launch made without one.

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

/// Moves the entry of `key` to the front of `kept` (the latest first), or puts a new one there
/// (its value the default), the last dropped where `kept` then holds more than `most`.
pub(super) fn to_front<K: PartialEq, V: Default>(kept: &mut Vec<(K, V)>, key: K, most: usize) {
    match kept.iter().position(|(k, _)| *k == key) {
        Some(i) => kept[..=i].rotate_right(1),
        None => {
            kept.insert(0, (key, V::default()));
            kept.truncate(most);
        }
    }
}

impl QuotientSolver {
    /// Captures the graph of the last launch, made directly because no graph was kept for its
    /// key ([`replay`](QuotientSolver::replay)), if the solver still stands as it was for that
    /// launch (no upload since has moved its key or world count). Called while the device runs
    /// the launch, before the host waits for it.
    pub(super) fn capture_uncaptured(&mut self) -> Result<()> {
        let Some((key, nworld)) = self.uncaptured.take() else {
            return Ok(());
        };
        if nworld != self.ws.nworld() || key != self.graph_key() {
            return Ok(());
        }
        to_front(&mut self.graphs, key, GRAPHS);
        let stream = self.stream.clone();
        let mut graph = std::mem::take(&mut self.graphs[0].1);
        let r = graph.capture(&stream, nworld, |s| self.launch(s));
        self.graphs[0].1 = graph;
        match r {
            Ok(()) => self.captures += 1,
            Err(_) => drop(self.graphs.remove(0)),
        }
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

#[cfg(test)]
mod tests {
    use super::to_front;

    #[test]
    fn graphs_are_kept_by_key_the_least_recently_replayed_dropped_first() {
        let mut kept: Vec<(u8, Vec<u8>)> = Vec::new();
        for key in [1, 2, 3, 1, 2, 3] {
            to_front(&mut kept, key, 3);
            kept[0].1.push(key);
        }
        // Three keys in turn, three kept: each made once, and replayed again.
        assert_eq!(kept, [(3, vec![3, 3]), (2, vec![2, 2]), (1, vec![1, 1])]);
        to_front(&mut kept, 2, 3);
        to_front(&mut kept, 4, 3);
        assert_eq!(kept, [(4, vec![]), (2, vec![2, 2]), (3, vec![3, 3])]);
    }
}
