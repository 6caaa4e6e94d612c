//! A trace's few recorded worlds repeated to the many of a batch, each copy shifted in time, so
//! that a recorded scene runs at the scale it is benched and tested at without every world
//! doing the same thing at the same step.

use std::ops::Range;

use invalidation::{Event, Events};

use super::Trace;
use crate::rows::{Batch, BatchBuilder, Capacity};

/// Steps of a trace with its recorded worlds repeated to `nworld`: world `w` is a copy of
/// recorded world `w % n` that runs `(w / n) · shift` steps ahead, wrapping at the end.
///
/// Each copy is told of its own recorded world's events, renamed to it
/// ([`Event::moved`]); events of every world are reported once. At its wrap a copy jumps back to
/// the first step with nothing reported (the quotient's guard sees what changed), and the first
/// step reports nothing.
///
/// ```no_run
/// use archipelago::trace::{Tiled, Trace};
/// use archipelago::{Batch, Input, quotient::{Policy, Quotient}, Islands};
/// let trace = Trace::open("traces/closed_loops.npz")?;
/// let tiled = Tiled::new(&trace, 0..trace.nstep(), 1024, 37);
/// let mut q = Quotient::new(&tiled.capacity(), Policy::default());
/// let mut out = Islands::default();
/// for k in 0..tiled.len() {
///     let (batch, events) = tiled.step(k);
///     q.step(&Input::new(trace.model(), &batch)?, &events, &mut out)?;
/// }
/// # Ok::<(), archipelago::Error>(())
/// ```
pub struct Tiled {
    steps: Vec<(Batch, Events)>,
    nworld: usize,
    shift: usize,
    capacity: Capacity,
}

impl Tiled {
    /// Steps `steps` of `trace` (each within `0..trace.nstep()`), its worlds repeated to `nworld`,
    /// each copy `shift` steps ahead of the one before.
    pub fn new(trace: &Trace, steps: Range<usize>, nworld: usize, shift: usize) -> Tiled {
        Tiled {
            steps: steps.map(|k| trace.step(k)).collect(),
            nworld,
            shift,
            capacity: Capacity {
                nworld,
                ..trace.capacity()
            },
        }
    }

    /// Steps in the sequence.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether the sequence has no step.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The trace's capacity with room for `nworld` worlds.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// Step `k` (`k < len()`) into `b`, one world per copy, and its events appended to `events`.
    pub fn step_into(&self, k: usize, b: &mut BatchBuilder, events: &mut Events) {
        let (len, n) = (self.steps.len(), self.steps[0].0.nworld());
        for w in 0..self.nworld {
            if n == 0 {
                b.end_world();
                continue;
            }
            let (r, at) = (w % n, (k + (w / n) * self.shift) % len);
            let (src, src_events) = &self.steps[at];
            b.world_from(src, r);
            if k > 0 && at != 0 {
                for e in src_events.as_slice() {
                    if let Some(e) = moved(e, r, w) {
                        events.push(e);
                    }
                }
            }
        }
    }

    /// Step `k` (`k < len()`) as a batch and its events.
    pub fn step(&self, k: usize) -> (Batch, Events) {
        let (mut b, mut events) = (Batch::builder(), Events::new());
        self.step_into(k, &mut b, &mut events);
        (b.finish(), events)
    }
}

/// `e` for copy `w` of recorded world `r` ([`Event::moved`]); events of every world are
/// reported once, for world 0.
fn moved(e: &Event, r: usize, w: usize) -> Option<Event> {
    match e {
        Event::Edit { world: None, .. } | Event::Capacity => (w == 0).then_some(*e),
        _ => e.moved(r as u32, w as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_move_to_the_copies_of_their_world() {
        let sleep = Event::Sleep { world: 1, tree: 4 };
        assert_eq!(
            moved(&sleep, 1, 7),
            Some(Event::Sleep { world: 7, tree: 4 })
        );
        assert_eq!(moved(&sleep, 0, 6), None);
        // Events of every world are reported once, with the first copy.
        assert_eq!(moved(&Event::Capacity, 0, 0), Some(Event::Capacity));
        assert_eq!(moved(&Event::Capacity, 0, 3), None);
    }
}
