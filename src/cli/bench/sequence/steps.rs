//! How a sequence's steps are made: where they come from ([`Source`]), the sleepers' turn
//! ([`Phase`]) and [`Sequence`], which writes each step's worlds and events.

use archipelago::quotient::{Classifier, Policy};
use archipelago::synth::Rng;
use archipelago::trace::{Tiled, Trace};
use archipelago::{Batch, BatchBuilder, Capacity, Model};
use invalidation::{Event, Events};

use super::{SHIFT, SYNTHETIC_STEPS, TOGGLED_EQ, TRACE_STEPS, eq_policies};

/// Where a sequence's steps come from.
enum Source {
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
/// (`super::super::asleep::put_to_sleep`: the same worlds and trees in every version, whose
/// static rows are the same), whether each world sleeps, and the trees that sleep.
struct Sleeping {
    versions: Vec<Batch>,
    sleeps: Vec<bool>,
    trees: Vec<(u32, i32)>,
}

/// Where a step of a sleeping sequence is in its sleepers' turn of four steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::cli::bench) enum Phase {
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
pub(in crate::cli::bench) struct Sequence {
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
            let (batch, events) = super::super::asleep::put_to_sleep(&model, v, classifier, share);
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
    pub(super) fn step(&mut self, k: usize, b: &mut BatchBuilder, events: &mut Events) {
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
    b.edges_from(src, w);
    b.end_world();
}

#[cfg(test)]
mod tests {
    use super::super::default_eq_label;
    use super::*;
    use archipelago::RowType;
    use archipelago::quotient::EqPolicy;
    use archipelago::quotient::Quotient;
    use archipelago::quotient::classify::LEARN_AFTER;
    use archipelago::{Input, Islands, cpu};
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
