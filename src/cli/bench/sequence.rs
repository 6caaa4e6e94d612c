//! Step sequences for `bench --quotient`: what a simulation feeds the engine step after step,
//! so that the quotient's reuse of unchanged worlds is measured where it happens and not on
//! replays of one batch (where every world after the first step would be unchanged).
//!
//! A trace's sequence is its recorded steps (the last [`TRACE_STEPS`]) with their events, its
//! few recorded worlds tiled to the shape's world count (`archipelago::trace::Tiled`; a copy's
//! wrap resets it to the first step, with the changes reported as a simulation would). Copies of one recorded world are
//! shifted in time against each other (copy `c` runs `c · SHIFT` steps ahead, wrapping around),
//! so that, as in a batch of independently perturbed worlds, they do not all change at the
//! same steps: plain copies would make whole steps unchanged, which flatters reuse wherever
//! one changed world is enough to set the kernel's time. A synthetic shape's sequence is
//! [`SYNTHETIC_STEPS`] steps in which each world independently either rests (emits last
//! step's rows again) or moves (its dynamic rows change), by a fixed fraction. A toggling
//! sequence moves every world and also switches equality [`TOGGLED_EQ`] off and back on in a
//! share of the worlds at every step, reporting each switch: there the quotient with
//! equalities static (a switch rebuilds that world's quotient on the host) steps against
//! equalities dynamic (solved every step) and learned (dynamic once switched twice). A sleeping
//! sequence (`bench --quotient --asleep SHARE`) moves every world and puts the static component
//! of tree 0 to sleep in a share of them in turns of four steps: it falls asleep, sleeps, wakes,
//! stays awake, each reported as MuJoCo would (its rows gone while it sleeps); its figures are
//! also given by [`Phase`], so that the step at which worlds fall asleep is measured apart. Every
//! contender steps the same sequence in the same order;
//! each step is uploaded, timed as one graph replay between CUDA events (with what the replay
//! does on the host meanwhile: a graph captured for a new launch shape falls in its step),
//! downloaded and compared with the CPU `dsu`. The first step (graph capture, contraction) is not timed. The
//! full rebuilds and the quotient without reuse then replay the step again, after its check
//! (the device idle meanwhile) and after an L2 flush (the device busy until then), which
//! splits a sequence step's cost beyond a steady step's between the L2 and the idle device
//! ([`Again`]).

use std::fmt::Write as _;
use std::time::Instant;

use archipelago::gpu::graph::L2Flush;
use archipelago::gpu::quotient::QuotientSolver;
use archipelago::gpu::{Gpu, Mode, PinnedBatch, PinnedIslands, Solver};
use archipelago::quotient::classify::LEARN_AFTER;
use archipelago::quotient::{Classifier, EqPolicy, Policy};
use archipelago::synth::Rng;
use archipelago::trace::{Tiled, Trace};
use archipelago::{Batch, BatchBuilder, Capacity, Engine, Input, Islands, Model, Options, cpu};
use invalidation::{Event, Events};

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

/// Where a sequence's steps come from.
pub(super) enum Source {
    /// A trace's steps, its recorded worlds tiled to the sequence's worlds.
    Trace(Tiled),
    /// Versions of one synthetic shape that differ only in their dynamic rows (generated
    /// from different seeds); each world shows one version at each step.
    Synthetic {
        versions: Vec<Batch>,
        /// The fraction of worlds that rest at each step.
        rest: f64,
        /// Worlds `0..toggling` switch [`TOGGLED_EQ`] off at odd steps and on at even ones.
        toggling: usize,
        /// Worlds whose component sleeps in turns (a sleeping sequence's), by [`Phase`].
        sleeping: Option<Sleeping>,
        shown: Vec<usize>,
        rng: Rng,
    },
}

/// A sleeping sequence's sleepers: each version with their components asleep
/// (`super::asleep::put_to_sleep`: the same worlds and trees in every version, whose static rows
/// are the same), whether each world sleeps, and the trees that sleep.
pub(super) struct Sleeping {
    versions: Vec<Batch>,
    sleeps: Vec<bool>,
    trees: Vec<(u32, i32)>,
}

/// Where a step of a sleeping sequence is in its sleepers' turn of four steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Awake, as at the step before.
    Awake,
    /// Their components fall asleep: reported, their rows gone.
    FallsAsleep,
    /// Asleep, as at the step before.
    Asleep,
    /// They wake: reported, their rows back.
    Wakes,
}

impl Phase {
    /// Every phase, in a turn's order.
    pub const ALL: [Phase; 4] = [
        Phase::Awake,
        Phase::FallsAsleep,
        Phase::Asleep,
        Phase::Wakes,
    ];

    /// The phase of step `k` (step 0 is awake, unreported).
    pub fn of_step(k: usize) -> Phase {
        Phase::ALL[k % 4]
    }

    /// Whether the sleepers' components are asleep at this phase.
    fn asleep(self) -> bool {
        matches!(self, Phase::FallsAsleep | Phase::Asleep)
    }

    /// The phase's name in the report.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Awake => "awake",
            Phase::FallsAsleep => "falling asleep",
            Phase::Asleep => "asleep",
            Phase::Wakes => "waking",
        }
    }
}

/// One shape's step sequence.
pub(super) struct Sequence {
    /// What the sequence is, for the report.
    pub label: String,
    pub model: Model,
    pub capacity: Capacity,
    pub len: usize,
    source: Source,
}

impl Sequence {
    /// The last [`TRACE_STEPS`] steps of `trace`, its worlds tiled to `nworld`.
    pub fn trace(trace: Trace, nworld: usize) -> Sequence {
        let len = trace.nstep().min(TRACE_STEPS);
        let first = trace.nstep() - len;
        let tiled = Tiled::new(&trace, first..trace.nstep(), nworld, SHIFT);
        Sequence {
            label: format!(
                "the trace's steps {first}..{}, {} recorded worlds tiled to {nworld}, copies {SHIFT} steps apart",
                trace.nstep(),
                trace.nworld()
            ),
            model: trace.model().clone(),
            capacity: tiled.capacity(),
            len,
            source: Source::Trace(tiled),
        }
    }

    /// [`SYNTHETIC_STEPS`] steps over `versions` (the first is the shape's own batch), with
    /// `rest` of the worlds resting at each step and the others moving to another version.
    pub fn synthetic(model: Model, versions: Vec<Batch>, rest: f64) -> Sequence {
        Sequence::synthetic_with(model, versions, rest, 0)
    }

    /// [`SYNTHETIC_STEPS`] steps over `versions` in which every world moves and `share` of
    /// them switch equality [`TOGGLED_EQ`] off at odd steps and back on at even ones, each
    /// switch reported (`Event::EqActive`).
    pub fn toggling(model: Model, versions: Vec<Batch>, share: f64) -> Sequence {
        let toggling = (share * versions[0].nworld() as f64).round() as usize;
        let mut seq = Sequence::synthetic_with(model, versions, 0.0, toggling);
        seq.label = format!(
            "{SYNTHETIC_STEPS} steps, {:.0}% of worlds switch equality {TOGGLED_EQ} off and on at every step (reported), every world's dynamic rows change",
            100.0 * share
        );
        seq
    }

    /// [`SYNTHETIC_STEPS`] steps over `versions` in which every world moves and, in `share` of
    /// them (spread evenly), the static component of tree 0 under `classifier` falls asleep,
    /// sleeps, wakes and stays awake in turn ([`Phase`]), each change reported
    /// (`Event::Sleep`, `Event::Wake`) and its rows gone while it sleeps, as MuJoCo drops them.
    pub fn sleeping(
        model: Model,
        versions: Vec<Batch>,
        share: f64,
        classifier: &Classifier,
    ) -> Sequence {
        let nworld = versions[0].nworld();
        let (mut asleep, mut trees) = (Vec::with_capacity(versions.len()), Vec::new());
        for (i, v) in versions.iter().enumerate() {
            let (batch, events) = super::asleep::put_to_sleep(&model, v, classifier, share);
            let these: Vec<(u32, i32)> = events
                .as_slice()
                .iter()
                .filter_map(|e| match *e {
                    Event::Sleep { world, tree } => Some((world, tree)),
                    _ => None,
                })
                .collect();
            if i == 0 {
                trees = these;
            } else {
                debug_assert_eq!(trees, these, "the versions' static rows differ");
            }
            asleep.push(batch);
        }
        let mut sleeps = vec![false; nworld];
        for &(w, _) in &trees {
            sleeps[w as usize] = true;
        }
        let nsleep = sleeps.iter().filter(|&&s| s).count();
        let mut seq = Sequence::synthetic_with(model, versions, 0.0, 0);
        if let Source::Synthetic { sleeping, .. } = &mut seq.source {
            *sleeping = Some(Sleeping {
                versions: asleep,
                sleeps,
                trees,
            });
        }
        seq.label = format!(
            "{SYNTHETIC_STEPS} steps, tree 0's component in {nsleep} worlds falling asleep, asleep, waking and awake in turn (reported), every world's dynamic rows change"
        );
        seq
    }

    /// The phase of step `k` of a sleeping sequence ([`Sequence::sleeping`]); `None` for others.
    pub fn phase(&self, k: usize) -> Option<Phase> {
        match &self.source {
            Source::Synthetic {
                sleeping: Some(_), ..
            } => Some(Phase::of_step(k)),
            _ => None,
        }
    }

    /// The quotient's contenders besides the default policy: on a toggling sequence, the
    /// other equality policies of [`eq_policies`].
    pub fn policies(&self) -> Vec<(&'static str, Policy)> {
        match self.source {
            Source::Synthetic { toggling, .. } if toggling > 0 => eq_policies()
                .into_iter()
                .filter(|(_, eq)| *eq != Policy::default().eq)
                .map(|(label, eq)| {
                    let policy = Policy {
                        eq,
                        ..Policy::default()
                    };
                    (label, policy)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn synthetic_with(model: Model, versions: Vec<Batch>, rest: f64, toggling: usize) -> Sequence {
        let mut capacity = Capacity::fit(&model, &versions[0]);
        for v in &versions[1..] {
            let c = Capacity::fit(&model, v);
            capacity.njmax = capacity.njmax.max(c.njmax);
            capacity.nsupport = capacity.nsupport.max(c.nsupport);
            capacity.nedge = capacity.nedge.max(c.nedge);
        }
        let nworld = versions[0].nworld();
        Sequence {
            label: format!(
                "{SYNTHETIC_STEPS} steps, {:.0}% of worlds at rest per step (the others' dynamic rows change)",
                100.0 * rest
            ),
            model,
            capacity,
            len: SYNTHETIC_STEPS,
            source: Source::Synthetic {
                versions,
                rest,
                toggling,
                sleeping: None,
                shown: vec![0; nworld],
                rng: Rng::new(29),
            },
        }
    }

    /// Step `k` (0-based, in order) into `batch` (reusing its arrays) and `events`.
    #[cfg(test)]
    fn step_into(&mut self, k: usize, batch: &mut Batch, events: &mut Events) {
        let mut b = std::mem::take(batch).into_builder();
        self.step(k, &mut b, events);
        *batch = b.finish();
    }

    /// Step `k` (0-based, in order): its worlds appended to `b` (empty), its events in `events`.
    fn step(&mut self, k: usize, b: &mut BatchBuilder, events: &mut Events) {
        events.clear();
        match &mut self.source {
            // At its wrap a copy is reset to the first step, the changes reported; the first
            // step reports nothing.
            Source::Trace(tiled) => tiled.step_into(k, b, events),
            Source::Synthetic {
                versions,
                rest,
                toggling,
                sleeping,
                shown,
                rng,
            } => {
                if k > 0 {
                    for v in shown.iter_mut() {
                        if !rng.chance(*rest) {
                            *v = (*v + 1 + rng.below(versions.len() - 1)) % versions.len();
                        }
                    }
                }
                let off = k % 2 == 1;
                let phase = Phase::of_step(k);
                let report: Option<fn(&mut Events, u32, i32) -> &mut Events> = match phase {
                    Phase::FallsAsleep => Some(Events::sleep),
                    Phase::Wakes => Some(Events::wake),
                    Phase::Awake | Phase::Asleep => None,
                };
                if let (Some(z), Some(report)) = (sleeping.as_ref(), report) {
                    for &(w, t) in &z.trees {
                        report(events, w, t);
                    }
                }
                for (w, &v) in shown.iter().enumerate() {
                    if let Some(z) = sleeping.as_ref().filter(|z| z.sleeps[w] && phase.asleep()) {
                        b.world_from(&z.versions[v], w);
                        continue;
                    }
                    if w < *toggling {
                        if k > 0 {
                            events.eq_active(w as u32, TOGGLED_EQ, !off);
                        }
                        if off {
                            world_without_eq(b, &versions[v], w, TOGGLED_EQ);
                            continue;
                        }
                    }
                    b.world_from(&versions[v], w);
                }
            }
        }
    }
}

/// World `w` of `src` without the rows of equality `eq` (switched off: MuJoCo emits none).
fn world_without_eq(b: &mut BatchBuilder, src: &Batch, w: usize, eq: i32) {
    for r in src.rows_of(w) {
        let (kind, id) = (src.row_type[r], src.row_id[r]);
        if !(kind.is_equality() && id == eq) {
            b.row(kind, id, src.row_support_of(r));
        }
    }
    for e in src.edges_of(w) {
        b.rowless(src.edge_id[e], src.edge_support_of(e));
    }
    b.end_world();
}

/// Mean device time per step of every contender over a sequence.
pub(super) struct Figures {
    /// Per full-rebuild mode: mean device µs per step, or why it could not run.
    pub full: Vec<(Mode, Result<f64, String>)>,
    /// The quotient with reuse: mean device µs per step.
    pub quotient: f64,
    /// The quotient without reuse (every world checked and solved): mean device µs per step.
    pub quotient_off: f64,
    /// Per full-rebuild mode and the quotient without reuse (by name), the same steps
    /// replayed again: [`Again`].
    pub again: Vec<(String, Again)>,
    /// World-steps the quotient reused, replayed, masked and solved directly (timed steps).
    pub counts: [usize; 4],
    /// Of the world-steps reused, those whose row-level outputs were still in place (no copy).
    pub in_place: usize,
    /// Of the world-steps not reused, those whose partition stayed (row-level outputs only).
    pub rows_only: usize,
    /// Of the world-steps not reused, those mapped from their quotient's nodes.
    pub by_nodes: usize,
    /// Timed steps on which the quotient with reuse took a warp a replayed world, which has no
    /// reuse check (`QuotientSolver::reuse_active` false).
    pub warp_steps: usize,
    /// The quotient with reuse and the tree-level maps only (node-level maps off), when the
    /// model allows node-level maps: mean device µs per step.
    pub quotient_trees: Option<f64>,
    /// The quotient with reuse under the sequence's other policies ([`Sequence::policies`]).
    pub policies: Vec<PolicyFigures>,
    /// A sleeping sequence's figures by [`Phase`] (empty for other sequences).
    pub by_phase: Vec<PhaseFigures>,
    /// Graphs the quotient captured over the timed steps, with reuse off (its replays again
    /// included) and on (`QuotientSolver::captures`): a capture's instantiation and upload
    /// fall in its step's time.
    pub captures: [u64; 2],
    /// Whether every contender equalled the CPU at every step.
    pub ok: bool,
    /// The first mismatch, if any.
    pub mismatch: Option<String>,
    /// Median wall µs per whole step (upload, replay, download) of every contender, the
    /// quotient's with reuse on, and of an `auto` Engine stepping the same sequence.
    pub wall: Vec<(String, f64)>,
    /// The `auto` Engine's mean wall µs per step, its trials and its one-time choice of a
    /// full-rebuild mode included.
    pub auto_mean: f64,
    /// Steps the `auto` Engine ran the quotient.
    pub auto_quotient_steps: usize,
    /// The full-rebuild mode the `auto` Engine chose for its other steps.
    pub auto_full: Option<Mode>,
    /// Over the timed steps outside the `auto` Engine's trials (what a long run is made of:
    /// a trial is 10 steps of every 1,024, but 9 of a 32-step sequence's 31): their count, the
    /// Engine's median wall µs and that of the full rebuild it ran, over the same steps.
    pub auto_between: Option<(usize, f64, f64)>,
}

/// A sequence step replayed again, mean device µs per step of each replay. A step's first
/// replay follows its upload and the host's work since the last replay (the device idle
/// meanwhile) and finds in L2 whatever the other contenders left there. Once it is downloaded
/// and checked, the step is replayed again: after the check, with the device idle as before but
/// the step's data in L2; then after an L2 flush (`gpu::graph::L2Flush`), with the device busy
/// until the replay and none of the step's data in L2. Against a steady step (replays with
/// little idle time between them, the data in L2), the first tells what the idle device costs
/// and the second what the L2 does.
pub(super) struct Again {
    pub after_check: f64,
    pub flushed: f64,
}

/// A sleeping sequence's steps of one [`Phase`]: their count, and the mean device µs a step of
/// every full-rebuild mode that ran and of the quotient with reuse off and on.
pub(super) struct PhaseFigures {
    pub phase: Phase,
    pub steps: usize,
    pub full: Vec<(Mode, f64)>,
    pub quotient_off: f64,
    pub quotient: f64,
}

/// A quotient contender with reuse on and another classification policy.
pub(super) struct PolicyFigures {
    pub label: &'static str,
    /// Mean device µs per step.
    pub device: f64,
    /// Median wall µs per whole step (its host half, with the rebuilds it makes, included).
    pub wall: f64,
    /// World-steps it solved directly (its device found a quotient stale).
    pub direct: usize,
}

impl Figures {
    /// The fastest full-rebuild mode over the sequence.
    pub fn best(&self) -> Option<(Mode, f64)> {
        self.full
            .iter()
            .filter_map(|(m, r)| r.as_ref().ok().map(|&us| (*m, us)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The report's lines for this sequence.
    pub fn report(&self, seq: &Sequence, out: &mut String) {
        let timed = seq.len.saturating_sub(1);
        let _ = writeln!(
            out,
            "\nstep sequence: {}; mean device µs per step over the {timed} steps after the first, each stepped once in order (upload, one timed graph replay, download, compared with the CPU)\n",
            seq.label
        );
        out.push_str("| mode | device µs/step (sequence) | again after its check (device idle) | again after an L2 flush (device busy) |\n|---|---|---|---|\n");
        let again = |who: &str| {
            self.again
                .iter()
                .find(|(w, _)| w == who)
                .map_or("— | —".to_string(), |(_, a)| {
                    format!("{:.1} | {:.1}", a.after_check, a.flushed)
                })
        };
        for (m, r) in &self.full {
            match r {
                Ok(us) => writeln!(out, "| {m} | {us:.1} | {} |", again(m.name())),
                Err(e) => writeln!(out, "| {m} | {e} | — | — |"),
            }
            .expect("writing to a String");
        }
        let [reused, replayed, masked, direct] = self.counts;
        let all = (reused + replayed + masked + direct).max(1);
        let _ = writeln!(
            out,
            "| quotient (reuse off) | {:.1} | {} |\n| quotient (reuse on) | {:.1} | — | — |",
            self.quotient_off,
            again("quotient (reuse off)"),
            self.quotient
        );
        if let Some(us) = self.quotient_trees {
            let _ = writeln!(
                out,
                "| quotient (reuse on, tree-level maps only) | {us:.1} | — | — |"
            );
        }
        for p in &self.policies {
            let _ = writeln!(
                out,
                "| quotient (reuse on, {}) | {:.1} | — | — |",
                p.label, p.device
            );
        }
        if !self.by_phase.is_empty() {
            out.push_str(
                "\nby phase of the sleepers' turn, mean device µs a step:\n\n| phase | steps |",
            );
            for (m, _) in &self.by_phase[0].full {
                let _ = write!(out, " {m} |");
            }
            out.push_str(" quotient (reuse off) | quotient (reuse on) |\n|---|---|");
            out.push_str(&"---|".repeat(self.by_phase[0].full.len() + 2));
            out.push('\n');
            for p in &self.by_phase {
                let _ = write!(out, "| {} | {} |", p.phase.label(), p.steps);
                for (_, us) in &p.full {
                    let _ = write!(out, " {us:.1} |");
                }
                let _ = writeln!(out, " {:.1} | {:.1} |", p.quotient_off, p.quotient);
            }
        }
        if !self.again.is_empty() {
            out.push_str("\n(again: once the step is downloaded and checked, its batch replayed once more, then once more after an L2 flush; neither checked nor in the wall times; with reuse on a replay again would reuse every world, so those rows have none)\n");
        }
        let _ = writeln!(
            out,
            "\nquotient (reuse on) world-steps: {reused} reused ({:.1}%; {} with their row-level outputs in place), {replayed} replayed, {masked} masked, {direct} solved directly; of the {} not reused, {} mapped from their nodes, {} kept their partition (row-level outputs only); every step equals the CPU: {}",
            100.0 * reused as f64 / all as f64,
            self.in_place,
            all - reused,
            self.by_nodes,
            self.rows_only,
            if self.ok { "yes" } else { "NO" }
        );
        let [off, on] = self.captures;
        let _ = writeln!(
            out,
            "\ngraphs captured over the timed steps: quotient (reuse off) {off}, its replays again included; quotient (reuse on) {on}"
        );
        if self.warp_steps > 0 {
            let _ = writeln!(
                out,
                "\nquotient (reuse on): a warp a replayed world on {} of the timed steps, where only the partition check applies (that kernel has no reuse check of rows)",
                self.warp_steps
            );
        }
        for p in &self.policies {
            let _ = writeln!(
                out,
                "\nquotient (reuse on, {}): {} world-steps solved directly",
                p.label, p.direct
            );
        }
        if let Some(m) = &self.mismatch {
            let _ = writeln!(out, "\nfirst mismatch: {m}");
        }
        if let Some((mode, us)) = self.best() {
            let _ = writeln!(
                out,
                "\nsequence vs best full rebuild ({mode}): {:.2}x",
                us / self.quotient
            );
        }
        out.push_str("\nwall µs per whole step (host half, upload, replay, download), median over the same steps: ");
        let walls: Vec<String> = self
            .wall
            .iter()
            .map(|(who, us)| format!("{who} {us:.0}"))
            .collect();
        out.push_str(&walls.join(", "));
        if let (Some(auto), Some(best)) = (self.auto_wall(), self.best_full_wall()) {
            let _ = writeln!(
                out,
                "; the auto Engine ran the quotient on {} of {timed} steps and took {:.3}x the best full rebuild's median wall time ({}){}{}; its mean, with its trials and its one-time timing of every full-rebuild mode, {:.0}",
                self.auto_quotient_steps,
                auto / best.1,
                best.0,
                self.auto_full_wall()
                    .map_or(String::new(), |(m, us)| format!(
                        " and {:.3}x that of the full rebuild it ran ({m})",
                        auto / us
                    )),
                self.auto_between_ratio()
                    .map_or(String::new(), |(n, r)| format!(
                        ", {r:.3}x that one's over the {n} steps between its trials"
                    )),
                self.auto_mean
            );
        } else {
            out.push('\n');
        }
    }

    /// The `auto` Engine's mean wall µs per step.
    pub fn auto_wall(&self) -> Option<f64> {
        self.wall.iter().find(|(w, _)| w == "auto").map(|w| w.1)
    }

    /// The full-rebuild mode the `auto` Engine ran, and its median wall time as a contender: the
    /// reference that is not the smallest of several noisy medians (walls are host-bound, so
    /// the full modes' differ by noise more than by their device times).
    pub fn auto_full_wall(&self) -> Option<(Mode, f64)> {
        let mode = self.auto_full?;
        let wall = self.wall.iter().find(|(w, _)| w == mode.name())?;
        Some((mode, wall.1))
    }

    /// Over the steps between the `auto` Engine's trials ([`Figures::auto_between`]): their
    /// count and the Engine's median wall over that of the full rebuild it ran.
    pub fn auto_between_ratio(&self) -> Option<(usize, f64)> {
        self.auto_between.map(|(n, auto, full)| (n, auto / full))
    }

    /// The full-rebuild mode with the lowest median wall time, and that time.
    pub fn best_full_wall(&self) -> Option<(String, f64)> {
        self.wall
            .iter()
            .filter(|(w, _)| Mode::ALL.iter().any(|m| m.name() == w))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .cloned()
    }
}

/// A full-rebuild mode in a sequence: its solver (or why it could not be made), the device µs
/// of each step's first replay and of its replays again ([`Again`]).
type Contender = (Mode, Result<Solver, String>, Vec<f64>, Vec<[f64; 2]>);

/// Steps `seq` through every mode in `modes`, the quotient under `policy` (reuse off, then on)
/// and an `auto` Engine under it, in lockstep, and under the default policy the sequence's other
/// policies ([`Sequence::policies`]); `flush` evicts L2 before the replays again ([`Again`]).
pub(super) fn run(
    g: &Gpu,
    seq: &mut Sequence,
    modes: &[Mode],
    policy: &Policy,
    flush: &L2Flush,
) -> archipelago::Result<Figures> {
    let cap = seq.capacity;
    let model = seq.model.clone();
    let mut full: Vec<Contender> = modes
        .iter()
        .map(|&m| {
            let s = Solver::new(g, m, cap, &model).map_err(|e| e.to_string());
            (m, s, Vec::new(), Vec::new())
        })
        .collect();
    let mut q = QuotientSolver::new(g, cap, &model, policy.clone())?;
    q.set_reuse(true)?;
    let mut q_off = QuotientSolver::new(g, cap, &model, policy.clone())?;
    q_off.set_reuse(false)?;
    let (mut quotient_off, mut quotient_off_again) = (Vec::new(), Vec::new());
    // The quotient with reuse on and the node-level maps off, where the model has them.
    let mut q_trees = if q.node_maps() {
        let mut t = QuotientSolver::new(g, cap, &model, policy.clone())?;
        t.set_node_maps(false);
        Some(t)
    } else {
        None
    };
    let mut quotient_trees = Vec::new();
    // The sequence's other policies, reuse on: (label, solver, device µs, walls, direct).
    let mut policies = Vec::new();
    let others = match *policy == Policy::default() {
        true => seq.policies(),
        false => Vec::new(),
    };
    for (label, other) in others {
        let mut s = QuotientSolver::new(g, cap, &model, other)?;
        s.set_reuse(true)?;
        policies.push((label, s, Vec::new(), Vec::new(), 0));
    }
    let options = Options {
        mode: archipelago::Mode::Auto,
        policy: policy.clone(),
        ..Options::default()
    };
    let mut auto = Engine::with_gpu(g, &model, cap, options)?;
    let (mut auto_quotient_steps, mut auto_wall, mut auto_trial) = (0, Vec::new(), Vec::new());
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); full.len() + 1];
    let mut reference_mode = cpu::by_name("dsu").expect("the CPU dsu exists");
    // Page-locked rows and outputs, as a user who wants the fastest walls would have them.
    let (mut batch, mut events) = (PinnedBatch::new(g, &cap), Events::new());
    let (mut reference, mut out) = (Islands::default(), PinnedIslands::new(g, &cap));
    let (mut quotient, mut counts) = (Vec::new(), [0usize; 4]);
    let (mut in_place, mut rows_only, mut by_nodes, mut warp_steps) = (0, 0, 0, 0);
    let (mut mismatch, mut phases) = (None, Vec::new());
    let mut captured_first = [0; 2];
    for k in 0..seq.len {
        batch.build(|b| seq.step(k, b, &mut events));
        let input = Input::new(&model, &batch)?;
        reference_mode.solve(&input, &mut reference)?;
        let mut check = |who: &str, out: &Islands| {
            if mismatch.is_none()
                && let Some(m) = out.first_mismatch(&reference)
            {
                mismatch = Some(format!("{who} at step {k}: {m:?}"));
            }
        };
        // Whoever runs first after the CPU reference finds the input where it left it: on all
        // 19 sequences of sessions 29 and 30 (4,096 and 8,192 worlds) the first full mode,
        // always `dsu`, had the lowest median wall of every mode, 30-70 µs below modes faster
        // on the device. So the full modes take turns at the front, and `auto` runs first on
        // odd steps and last on even ones.
        let auto_first = k % 2 == 1;
        let mut auto_us = None;
        if auto_first {
            auto_us = Some(auto_once(&mut auto, &input, &events, &mut check)?);
        }
        let nfull = full.len();
        for j in 0..nfull {
            let i = (j + k) % nfull;
            let (m, solver, times, again) = &mut full[i];
            let Ok(s) = solver else { continue };
            let t = Instant::now();
            s.upload(&input)?;
            let us = s.time_replays(0, 1)?[0];
            out.fill(&input, |o| s.download(&input, o))?;
            let wall = t.elapsed().as_secs_f64() * 1e6;
            check(m.name(), &out);
            if k > 0 {
                times.push(us);
                walls[i].push(wall);
                again.push([
                    s.time_replays(0, 1)?[0],
                    flush.time_replays(1, || s.replay())?[0],
                ]);
            }
        }
        let (us, _) = replay_once(&mut q_off, &input, &events, &mut out)?;
        check("quotient (reuse off)", &out);
        if k > 0 {
            quotient_off.push(us);
            quotient_off_again.push([
                q_off.time_replays(0, 1)?[0],
                flush.time_replays(1, || q_off.replay())?[0],
            ]);
        }
        // The tree-level maps run before the quotient on even steps and after it on odd ones,
        // so that neither always finds the caches as the other left them.
        let mut trees = |out: &mut PinnedIslands, check: &mut dyn FnMut(&str, &Islands)| {
            if let Some(t) = &mut q_trees {
                let (us, _) = replay_once(t, &input, &events, out)?;
                check("quotient (tree-level maps)", out);
                if k > 0 {
                    quotient_trees.push(us);
                }
            }
            archipelago::Result::Ok(())
        };
        if k % 2 == 0 {
            trees(&mut out, &mut check)?;
        }
        let t = Instant::now();
        let (us, by_warps) = replay_once(&mut q, &input, &events, &mut out)?;
        let wall = t.elapsed().as_secs_f64() * 1e6;
        check("quotient", &out);
        if k % 2 == 1 {
            trees(&mut out, &mut check)?;
        }
        for (label, s, times, walls, direct) in &mut policies {
            let t = Instant::now();
            let (us, _) = replay_once(s, &input, &events, &mut out)?;
            let wall = t.elapsed().as_secs_f64() * 1e6;
            check(label, &out);
            if k > 0 {
                times.push(us);
                walls.push(wall);
                *direct += s.last_counts().direct;
            }
        }
        let auto_us = match auto_us {
            Some(us) => us,
            None => auto_once(&mut auto, &input, &events, &mut check)?,
        };
        if k == 0 {
            captured_first = [q_off.captures(), q.captures()];
        }
        if k > 0 {
            phases.extend(seq.phase(k));
            walls[full.len()].push(wall);
            auto_wall.push(auto_us);
            auto_trial.push(auto.auto_in_trial());
            auto_quotient_steps += usize::from(auto.last_mode() == archipelago::Mode::Quotient);
            quotient.push(us);
            let c = q.last_counts();
            in_place += c.in_place;
            rows_only += c.rows_only;
            by_nodes += c.by_nodes;
            warp_steps += usize::from(by_warps);
            for (n, v) in counts
                .iter_mut()
                .zip([c.reused, c.replayed, c.masked, c.direct])
            {
                *n += v;
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let median = |v: &[f64]| super::median(v.to_vec());
    let again_of = |v: &[[f64; 2]]| Again {
        after_check: v.iter().map(|a| a[0]).sum::<f64>() / v.len().max(1) as f64,
        flushed: v.iter().map(|a| a[1]).sum::<f64>() / v.len().max(1) as f64,
    };
    let mut again: Vec<(String, Again)> = full
        .iter()
        .filter(|(_, s, _, _)| s.is_ok())
        .map(|(m, _, _, a)| (m.name().to_string(), again_of(a)))
        .collect();
    again.push(("quotient (reuse off)".into(), again_of(&quotient_off_again)));
    let mut wall: Vec<(String, f64)> = full
        .iter()
        .zip(&walls)
        .filter(|((_, s, _, _), _)| s.is_ok())
        .map(|((m, _, _, _), w)| (m.name().to_string(), median(w)))
        .collect();
    wall.push(("quotient".into(), median(&walls[full.len()])));
    let policies: Vec<PolicyFigures> = policies
        .into_iter()
        .map(|(label, _, times, walls, direct)| PolicyFigures {
            label,
            device: mean(&times),
            wall: median(&walls),
            direct,
        })
        .collect();
    for p in &policies {
        wall.push((format!("quotient ({})", p.label), p.wall));
    }
    wall.push(("auto".into(), median(&auto_wall)));
    let auto_mean = mean(&auto_wall);
    // The full rebuild the Engine ran, over the steps it ran between trials (walls of the
    // contenders that ran: the same timed steps as the Engine's).
    let auto_full = auto.gpu_full_mode();
    let between = |w: &[f64]| -> Vec<f64> {
        w.iter()
            .zip(&auto_trial)
            .filter(|&(_, &trial)| !trial)
            .map(|(&us, _)| us)
            .collect()
    };
    let own = full
        .iter()
        .position(|(m, s, _, _)| s.is_ok() && Some(*m) == auto_full);
    let auto_between = own.and_then(|i| {
        let (a, f) = (between(&auto_wall), between(&walls[i]));
        (!a.is_empty() && a.len() == f.len()).then(|| (a.len(), median(&a), median(&f)))
    });
    // A sleeping sequence's timed steps by phase (each contender's times are of the same steps).
    let of_phase = |times: &[f64], phase: Phase| -> Vec<f64> {
        let steps = times.iter().zip(&phases).filter(|&(_, &p)| p == phase);
        steps.map(|(&us, _)| us).collect()
    };
    let by_phase = match phases.is_empty() {
        true => Vec::new(),
        false => Phase::ALL
            .into_iter()
            .map(|phase| PhaseFigures {
                phase,
                steps: phases.iter().filter(|&&p| p == phase).count(),
                full: full
                    .iter()
                    .filter(|(_, s, _, _)| s.is_ok())
                    .map(|(m, _, t, _)| (*m, mean(&of_phase(t, phase))))
                    .collect(),
                quotient_off: mean(&of_phase(&quotient_off, phase)),
                quotient: mean(&of_phase(&quotient, phase)),
            })
            .collect(),
    };
    Ok(Figures {
        full: full
            .into_iter()
            .map(|(m, s, t, _)| (m, s.map(|_| mean(&t))))
            .collect(),
        quotient: mean(&quotient),
        quotient_off: mean(&quotient_off),
        again,
        counts,
        in_place,
        rows_only,
        by_nodes,
        warp_steps,
        quotient_trees: q_trees.is_some().then(|| mean(&quotient_trees)),
        policies,
        by_phase,
        captures: [
            q_off.captures() - captured_first[0],
            q.captures() - captured_first[1],
        ],
        ok: mismatch.is_none(),
        mismatch,
        wall,
        auto_mean,
        auto_quotient_steps,
        auto_full,
        auto_between,
    })
}

/// One step of the `auto` Engine over `input` (validated once for every contender: the Engine
/// takes it as is), checked; returns its wall µs.
fn auto_once(
    auto: &mut Engine,
    input: &Input<'_>,
    events: &Events,
    check: &mut dyn FnMut(&str, &Islands),
) -> archipelago::Result<f64> {
    let t = Instant::now();
    let got = auto.step_input(input, events)?;
    let us = t.elapsed().as_secs_f64() * 1e6;
    check("auto", got);
    Ok(us)
}

/// One step of a quotient solver over `input`: upload, one timed graph replay, download into
/// `out`. Returns the replay's device µs and whether it took a warp a world (chosen at the
/// upload from the batch and the last step's counts, so named before the download).
fn replay_once(
    s: &mut QuotientSolver,
    input: &Input<'_>,
    events: &Events,
    out: &mut PinnedIslands,
) -> archipelago::Result<(f64, bool)> {
    s.upload(input, events)?;
    let by_warps = s.warp_worlds();
    let us = s.time_replays(0, 1)?[0];
    out.fill(input, |o| s.download(input, o))?;
    Ok((us, by_warps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use archipelago::RowType;
    use archipelago::quotient::Quotient;
    use invalidation::Event;

    fn rows_of(b: &Batch, w: usize) -> Vec<(RowType, i32, Vec<i32>)> {
        b.rows_of(w)
            .map(|r| (b.row_type[r], b.row_id[r], b.row_support_of(r).to_vec()))
            .collect()
    }

    /// Four versions (0..4) of a batch of `nworld` worlds, each world as `world` writes it for
    /// the version.
    fn versions(nworld: usize, world: impl Fn(&mut BatchBuilder, i32)) -> Vec<Batch> {
        let version = |v: i32| {
            let mut b = Batch::builder();
            for _ in 0..nworld {
                world(&mut b, v);
                b.end_world();
            }
            b.finish()
        };
        (0..4).map(version).collect()
    }

    /// Every quotient, told of `events`, equals a full rebuild (the CPU `dsu`) of `batch`.
    fn each_equals_a_full_rebuild(
        quotients: &mut [Quotient],
        model: &Model,
        (batch, events): (&Batch, &Events),
        k: usize,
    ) {
        let input = Input::new(model, batch).unwrap();
        let (mut want, mut got) = (Islands::default(), Islands::default());
        cpu::by_name("dsu")
            .unwrap()
            .solve(&input, &mut want)
            .unwrap();
        for q in quotients {
            q.step(&input, events, &mut got).unwrap();
            assert_eq!(got.first_mismatch(&want), None, "step {k}");
        }
    }

    #[test]
    fn a_synthetic_sequence_moves_the_worlds_it_does_not_rest() {
        let versions = versions(50, |b, v| {
            b.row(RowType::Equality, 0, &[0, 1]);
            b.row(RowType::ContactPyramidal, v, &[1, 2]);
        });
        let model = Model::from_dofnum(&[1; 3]).unwrap();
        for (rest, moving) in [(0.0, 50), (1.0, 0)] {
            let mut seq = Sequence::synthetic(model.clone(), versions.clone(), rest);
            let (mut prev, mut now, mut events) =
                (Batch::default(), Batch::default(), Events::new());
            seq.step_into(0, &mut prev, &mut events);
            for k in 1..seq.len {
                seq.step_into(k, &mut now, &mut events);
                let moved = (0..50).filter(|&w| rows_of(&prev, w) != rows_of(&now, w));
                assert_eq!(moved.count(), moving, "rest {rest} step {k}");
                std::mem::swap(&mut prev, &mut now);
            }
        }
    }

    #[test]
    fn a_toggling_sequence_switches_its_equality_in_a_share_of_the_worlds_and_reports_it() {
        // Equality 0 binds trees 0-1 and equality 1 trees 2-3; one contact moves per version.
        let versions = versions(20, |b, v| {
            b.row(RowType::Equality, 0, &[0, 1]);
            b.row(RowType::Equality, 0, &[0, 1]);
            b.row(RowType::Equality, 1, &[2, 3]);
            b.row(RowType::ContactPyramidal, v, &[v % 5, (v + 1) % 5]);
        });
        let model = Model::from_dofnum(&[1; 5]).unwrap();
        let first = versions[0].clone();
        let mut seq = Sequence::toggling(model.clone(), versions, 0.25);
        assert_eq!(seq.policies().len(), 2);
        assert!(
            Sequence::synthetic(model.clone(), vec![first], 0.0)
                .policies()
                .is_empty()
        );
        let mut quotients: Vec<Quotient> = seq
            .policies()
            .into_iter()
            .map(|(_, p)| p)
            .chain([Policy::default()])
            .map(|p| Quotient::new(&seq.capacity, p))
            .collect();
        let (mut batch, mut events) = (Batch::default(), Events::new());
        for k in 0..seq.len {
            seq.step_into(k, &mut batch, &mut events);
            let off = k % 2 == 1;
            for w in 0..20 {
                let eq0 = rows_of(&batch, w)
                    .iter()
                    .filter(|(t, id, _)| t.is_equality() && *id == TOGGLED_EQ)
                    .count();
                assert_eq!(eq0, if w < 5 && off { 0 } else { 2 }, "step {k} world {w}");
            }
            let reported: Vec<Event> = events.as_slice().to_vec();
            let expected: Vec<Event> = (0..5)
                .filter(|_| k > 0)
                .map(|w| Event::EqActive {
                    world: w,
                    eq: TOGGLED_EQ,
                    active: !off,
                })
                .collect();
            assert_eq!(reported, expected, "step {k}");
            // Every policy's quotient, told of the switches, equals a full rebuild.
            each_equals_a_full_rebuild(&mut quotients, &model, (&batch, &events), k);
        }
        // Static: every switch of a toggling world rebuilt it; dynamic: nothing rebuilt;
        // learned (the default, the last quotient): equality 0 went dynamic after its second
        // switch.
        let by_eq = |eq: &EqPolicy| {
            let i = seq.policies().iter().position(|p| p.1.eq == *eq);
            &quotients[i.unwrap_or(quotients.len() - 1)]
        };
        assert!(by_eq(&EqPolicy::Static).counters().reported >= 5 * (seq.len as u64 - 1));
        assert_eq!(by_eq(&EqPolicy::Dynamic).counters().reported, 0);
        let learned = EqPolicy::Learn { after: LEARN_AFTER };
        assert_eq!(by_eq(&learned).learned().collect::<Vec<_>>(), [TOGGLED_EQ]);
        assert_eq!(default_eq_label(), "equalities learned");
    }

    #[test]
    fn a_sleeping_sequence_puts_a_share_of_the_worlds_to_sleep_and_wakes_them_in_turn() {
        // Equalities join trees 0-1-2 (tree 0's component) and 3-4; a contact on tree 4 stays
        // awake, one between 1 and 5 sleeps with tree 0's component.
        let versions = versions(16, |b, v| {
            b.row(RowType::Equality, 0, &[0, 1]);
            b.row(RowType::Equality, 1, &[1, 2]);
            b.row(RowType::Equality, 2, &[3, 4]);
            b.row(RowType::ContactPyramidal, v, &[1, 5]);
            b.row(RowType::ContactPyramidal, v + 1, &[4]);
        });
        let model = Model::from_dofnum(&[1; 6]).unwrap();
        let first = versions[0].clone();
        let policy = Policy::default();
        let classifier = policy.classifier_for(&versions[0]);
        let mut seq = Sequence::sleeping(model.clone(), versions, 0.25, &classifier);
        assert!(seq.label.contains("in 4 worlds"), "{}", seq.label);
        assert!(seq.policies().is_empty());
        let toggling = Sequence::toggling(model.clone(), vec![first], 0.5);
        assert_eq!(toggling.phase(1), None);
        let mut q = [Quotient::new(&seq.capacity, policy)];
        let (mut batch, mut events) = (Batch::default(), Events::new());
        let sleepers = [3u32, 7, 11, 15];
        for k in 0..seq.len {
            seq.step_into(k, &mut batch, &mut events);
            let phase = seq.phase(k).unwrap();
            assert_eq!(phase, Phase::ALL[k % 4]);
            for w in 0..16 {
                let rows = batch.rows_of(w).len();
                let asleep = sleepers.contains(&(w as u32)) && phase.asleep();
                assert_eq!(rows, if asleep { 2 } else { 5 }, "step {k} world {w}");
            }
            let reported: Vec<Event> = events.as_slice().to_vec();
            let expected: Vec<Event> = sleepers
                .iter()
                .flat_map(|&world| (0..3).map(move |tree| (world, tree)))
                .filter_map(|(world, tree)| match phase {
                    _ if k == 0 => None,
                    Phase::FallsAsleep => Some(Event::Sleep { world, tree }),
                    Phase::Wakes => Some(Event::Wake { world, tree }),
                    _ => None,
                })
                .collect();
            assert_eq!(reported, expected, "step {k}");
            each_equals_a_full_rebuild(&mut q, &model, (&batch, &events), k);
        }
        // Sleep is no rebuild: the sleepers' components were masked while asleep.
        let counters = q[0].counters();
        assert_eq!(counters.reported, 0);
        assert!(counters.masked >= 4 * 15, "{counters:?}");
    }

    #[test]
    fn auto_is_compared_with_the_luckiest_full_mode_and_with_its_own() {
        let model = Model::from_dofnum(&[1; 2]).unwrap();
        let seq = Sequence::synthetic(model, vec![Batch::default()], 0.0);
        let figures = Figures {
            full: vec![(Mode::Labelprop, Ok(20.0)), (Mode::Tiled, Ok(25.0))],
            quotient: 30.0,
            quotient_off: 31.0,
            again: vec![(
                "tiled".into(),
                Again {
                    after_check: 21.0,
                    flushed: 22.5,
                },
            )],
            counts: [0, 10, 0, 0],
            in_place: 0,
            rows_only: 0,
            by_nodes: 0,
            warp_steps: 0,
            quotient_trees: None,
            policies: Vec::new(),
            by_phase: Vec::new(),
            captures: [1, 0],
            ok: true,
            mismatch: None,
            wall: vec![
                ("labelprop".into(), 2600.0),
                ("tiled".into(), 2340.0),
                ("quotient".into(), 2800.0),
                ("auto".into(), 2574.0),
            ],
            auto_mean: 3000.0,
            auto_quotient_steps: 4,
            auto_full: Some(Mode::Labelprop),
            auto_between: Some((22, 2550.0, 2500.0)),
        };
        assert_eq!(figures.best_full_wall(), Some(("tiled".into(), 2340.0)));
        assert_eq!(figures.auto_full_wall(), Some((Mode::Labelprop, 2600.0)));
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(
            out.contains("took 1.100x the best full rebuild's median wall time (tiled) and 0.990x that of the full rebuild it ran (labelprop), 1.020x that one's over the 22 steps between its trials;"),
            "{out}"
        );
        assert!(!out.contains("a warp a replayed world"), "{out}");
        assert!(
            out.contains("graphs captured over the timed steps: quotient (reuse off) 1, its replays again included; quotient (reuse on) 0"),
            "{out}"
        );
        // The replays again, where a contender has them.
        assert!(out.contains("| tiled | 25.0 | 21.0 | 22.5 |"), "{out}");
        assert!(out.contains("| labelprop | 20.0 | — | — |"), "{out}");
        assert!(
            out.contains("| quotient (reuse on) | 30.0 | — | — |"),
            "{out}"
        );
        let figures = Figures {
            warp_steps: 9,
            ..figures
        };
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(
            out.contains(
                "a warp a replayed world on 9 of the timed steps, where only the partition check"
            ),
            "{out}"
        );
        // A full mode that was not a contender has no wall of its own to compare with.
        let figures = Figures {
            auto_full: Some(Mode::Block),
            ..figures
        };
        assert_eq!(figures.auto_full_wall(), None);
        // A sleeping sequence's figures by phase: a row a phase, a column a contender.
        let figures = Figures {
            by_phase: Phase::ALL
                .into_iter()
                .map(|phase| PhaseFigures {
                    phase,
                    steps: 8,
                    full: vec![(Mode::Warp, 50.0)],
                    quotient_off: 30.0,
                    quotient: if phase == Phase::FallsAsleep {
                        45.0
                    } else {
                        31.0
                    },
                })
                .collect(),
            ..figures
        };
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(
            out.contains("| phase | steps | warp | quotient (reuse off) | quotient (reuse on) |\n|---|---|---|---|---|\n| awake | 8 | 50.0 | 30.0 | 31.0 |\n| falling asleep | 8 | 50.0 | 30.0 | 45.0 |"),
            "{out}"
        );
    }

    #[test]
    fn trace_copies_run_shifted_in_time() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/hammock.npz");
        let trace = Trace::open(&path).unwrap();
        let (n, nstep) = (trace.nworld(), trace.nstep());
        let mut seq = Sequence::trace(Trace::open(&path).unwrap(), 4 * n);
        let first = nstep - seq.len;
        let (mut got, mut want, mut events) = (Batch::default(), Batch::default(), Events::new());
        for k in [0, 1, seq.len - 1] {
            seq.step_into(k, &mut got, &mut events);
            assert_eq!(got.nworld(), 4 * n);
            for w in 0..4 * n {
                trace.batch(first + (k + (w / n) * SHIFT) % seq.len, &mut want);
                assert_eq!(
                    rows_of(&got, w),
                    rows_of(&want, w % n),
                    "step {k} world {w}"
                );
            }
        }
    }
}
