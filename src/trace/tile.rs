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
/// ([`Event::moved`]); events of every world are reported once. At its wrap a copy is reset to
/// the first step, as a simulation resets a world, and told of what that changed (equalities
/// switched, trees asleep or awake: [`Trace::changes`]). The first step reports nothing.
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
#[derive(Debug)]
pub struct Tiled {
    steps: Vec<(Batch, Events)>,
    /// The changes from the last step to the first, by recorded world: a copy's wrap.
    wrap: Events,
    nworld: usize,
    shift: usize,
    capacity: Capacity,
}

impl Tiled {
    /// Steps `steps` of `trace` (each within `0..trace.nstep()`), its worlds repeated to `nworld`,
    /// each copy `shift` steps ahead of the one before.
    pub fn new(trace: &Trace, steps: Range<usize>, nworld: usize, shift: usize) -> Tiled {
        let mut wrap = Events::new();
        if let Some(last) = steps.clone().last() {
            trace.changes(Some(last), steps.start, &mut wrap);
        }
        Tiled {
            wrap,
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
            if k > 0 {
                let src_events = if at == 0 { &self.wrap } else { src_events };
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
    fn a_copy_is_told_of_its_own_events_and_of_its_wrap() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
        let t = Trace::open(dir.join("sleep_toggles.npz")).unwrap();
        let (n, len) = (t.nworld(), t.nstep());
        // Copy 1 runs one step ahead: at step len - 1 it wraps to step 0.
        let tiled = Tiled::new(&t, 0..len, 2 * n, 1);
        // A world's events: those that move to it from itself.
        let of = |events: &Events, w: usize| -> Vec<Event> {
            let w = w as u32;
            (events.as_slice().iter())
                .filter(|e| e.moved(w, w).is_some())
                .copied()
                .collect()
        };
        let (mut recorded, mut wrap) = (Events::new(), Events::new());
        t.changes(Some(len - 1), 0, &mut wrap);
        assert!(!wrap.as_slice().is_empty(), "sleep_toggles ends asleep");
        for k in [0, 1, len / 2, len - 1] {
            let (batch, events) = tiled.step(k);
            assert_eq!(batch.nworld(), 2 * n);
            for r in 0..n {
                // Copy 0 as recorded (nothing at the first step).
                t.events(k, &mut recorded);
                let want = if k == 0 { Vec::new() } else { of(&recorded, r) };
                let moved = |e: Vec<Event>, to: usize| -> Vec<Event> {
                    e.iter()
                        .filter_map(|e| e.moved(r as u32, to as u32))
                        .collect()
                };
                assert_eq!(of(&events, r), want, "step {k} world {r}");
                // Copy 1 one step ahead, or reset to the first at its wrap.
                t.events((k + 1) % len, &mut recorded);
                let want = match k {
                    0 => Vec::new(),
                    k if k == len - 1 => moved(of(&wrap, r), n + r),
                    _ => moved(of(&recorded, r), n + r),
                };
                assert_eq!(of(&events, n + r), want, "step {k} world {}", n + r);
            }
        }
    }

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
