//! Step sequences for `bench --quotient`: what a simulation feeds the engine step after step, so
//! that the quotient's reuse of unchanged worlds is measured where it happens and not on replays of
//! one batch (where every world after the first step would be unchanged).
//!
//! [`steps`]: how a sequence's steps are made ([`Sequence`]). A trace's sequence is its recorded
//! steps (the last [`TRACE_STEPS`]) with their events, its few recorded worlds tiled to the shape's
//! world count (`archipelago::trace::Tiled`; a copy's wrap resets it to the first step, with the
//! changes reported as a simulation would). Copies of one recorded world are shifted in time
//! against each other (copy `c` runs `c · SHIFT` steps ahead, wrapping around), so that, as in a
//! batch of independently perturbed worlds, they do not all change at the same steps: plain copies
//! would make whole steps unchanged, which flatters reuse wherever one changed world is enough to
//! set the kernel's time. A synthetic shape's sequence is [`SYNTHETIC_STEPS`] steps in which each
//! world independently either rests (emits last step's rows again) or moves (its dynamic rows
//! change), by a fixed fraction. A toggling sequence moves every world and also switches equality
//! [`TOGGLED_EQ`] off and back on in a share of the worlds at every step, reporting each switch:
//! there the quotient with equalities static (a switch rebuilds that world's quotient on the host)
//! steps against equalities dynamic (solved every step) and learned (dynamic once switched twice).
//! A sleeping sequence (`bench --quotient --asleep SHARE`) moves every world and puts the static
//! component of tree 0 to sleep in a share of them in turns of four steps: it falls asleep, sleeps,
//! wakes, stays awake, each reported as MuJoCo would (its rows gone while it sleeps); its figures
//! are also given by [`Phase`](steps::Phase), so that the step at which worlds fall asleep is
//! measured apart.
//!
//! [`run`](mod@run): the timing loop ([`run`](fn@run)). Every contender steps the same sequence in
//! the same order; each step is uploaded, replayed between CUDA events (with what the replay does
//! on the host meanwhile: the quotient launches a new launch shape directly and captures its
//! graph at the download, outside the timed replay, while the device runs it; a full rebuild
//! captures a new world count's graph inside it), downloaded and compared with the CPU `dsu`; the
//! events are read after the download's wait (`gpu::graph::LaunchTimer`), so that a contender's
//! whole-step wall, like the `auto` Engine's, has its copies enqueued while the device runs
//! (waiting for the replay first had added that wait to every contender's wall but `auto`'s).
//! The first step (graph capture, contraction)
//! is not timed. The full rebuilds and the quotient without reuse then replay the step again, after
//! its check (the device idle meanwhile) and after an L2 flush (the device busy until then), which
//! splits a sequence step's cost beyond a steady step's between the L2 and the idle device
//! ([`Again`](figures::Again)).
//!
//! [`figures`]: what a run measured ([`Figures`]), its report and its auto and
//! best summaries.

use archipelago::quotient::classify::LEARN_AFTER;
use archipelago::quotient::{EqPolicy, Policy};

mod figures;
mod run;
mod steps;

pub(super) use figures::{Figures, PolicyFigures};
pub(super) use run::run;
pub(super) use steps::Sequence;

/// Steps of a trace's sequence (its last ones).
pub(super) const TRACE_STEPS: usize = 200;

/// Steps of a synthetic shape's sequence.
pub(super) const SYNTHETIC_STEPS: usize = 32;

/// Steps between consecutive copies of a recorded world in a trace's sequence.
const SHIFT: usize = 37;

/// The equality a toggling sequence switches off and on.
pub(super) const TOGGLED_EQ: i32 = 0;

/// The equality policies a toggling sequence compares, in the toggle table's order.
pub(super) fn eq_policies() -> [(&'static str, EqPolicy); 3] {
    [
        ("equalities static", EqPolicy::Static),
        ("equalities dynamic", EqPolicy::Dynamic),
        ("equalities learned", EqPolicy::Learn { after: LEARN_AFTER }),
    ]
}

/// The label of the default policy's equalities among [`eq_policies`].
pub(super) fn default_eq_label() -> &'static str {
    let default = Policy::default().eq;
    eq_policies()
        .into_iter()
        .find(|(_, e)| *e == default)
        .map_or("default policy", |(label, _)| label)
}
