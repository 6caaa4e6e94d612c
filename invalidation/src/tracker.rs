//! Epochs per source and world, and the per-step decision.

use crate::event::{Edit, Event, Events, SourceId};
use crate::signature::GuardFinding;
use crate::step_marks::StepMarks;

/// The kinds of change the tracker counts, one epoch each per world (and one for all worlds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// `eq_active` toggles of statically classified equalities.
    EqActive,
    /// Tree sleep and wake (absorbed by the per-node awake mask unless a node is split).
    Sleep,
    /// Edits to static constraints.
    Edit,
    /// Capacity changes.
    Capacity,
    /// A change of the row classification policy.
    Classification,
}

impl Source {
    /// Every source, in epoch-slot order.
    pub const ALL: [Source; 5] = [
        Source::EqActive,
        Source::Sleep,
        Source::Edit,
        Source::Capacity,
        Source::Classification,
    ];

    /// Whether a change from this source makes a cached quotient stale by itself. Sleep does not:
    /// a static component sleeps as a unit and the awake mask removes it without a rebuild.
    pub fn invalidates(self) -> bool {
        self != Source::Sleep
    }
}

const NSOURCE: usize = Source::ALL.len();

/// Why a world's quotient is (re)built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// No quotient existed yet.
    Initial,
    /// A static equality was switched on or off.
    EqActive {
        /// Equality id.
        eq: i32,
        /// New value.
        active: bool,
    },
    /// A sleep or wake left a contracted component partly asleep.
    PartialSleep {
        /// A tree whose state differs from the rest of its component.
        tree: i32,
    },
    /// A static constraint was edited.
    Edit(Edit),
    /// The capacities changed.
    Capacity,
    /// The row classification policy changed.
    Classification,
    /// Nobody reported it, but the static rows present differ from the contracted ones.
    Guard(GuardFinding),
}

/// What a step does with the cached quotients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Every world reuses its quotient.
    Reuse,
    /// The listed worlds are rebuilt, the others reuse theirs.
    Rebuild,
    /// Every quotient is rebuilt.
    RebuildAll,
}

/// A step's decision with its causes, preallocated for `nworld` worlds so deciding allocates
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    verdict: Option<Verdict>,
    all_cause: Option<Cause>,
    worlds: Vec<u32>,
    causes: Vec<Cause>,
    listed: Vec<bool>,
}

impl Decision {
    /// An empty decision (reuse) for up to `nworld` worlds.
    pub fn with_capacity(nworld: usize) -> Decision {
        Decision {
            verdict: None,
            all_cause: None,
            worlds: Vec::with_capacity(nworld),
            causes: Vec::with_capacity(nworld),
            listed: vec![false; nworld],
        }
    }

    /// Back to "reuse everything".
    pub fn clear(&mut self) {
        for &w in &self.worlds {
            self.listed[w as usize] = false;
        }
        self.worlds.clear();
        self.causes.clear();
        self.verdict = None;
        self.all_cause = None;
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        self.verdict.unwrap_or(Verdict::Reuse)
    }

    /// Rebuild every world, for `cause`.
    pub fn rebuild_all(&mut self, cause: Cause) {
        self.verdict = Some(Verdict::RebuildAll);
        self.all_cause.get_or_insert(cause);
    }

    /// Rebuild `world` for `cause` (the first cause listed for a world is kept). Worlds outside
    /// the capacity are ignored.
    pub fn push(&mut self, world: u32, cause: Cause) {
        let Some(seen) = self.listed.get_mut(world as usize) else {
            return;
        };
        if *seen {
            return;
        }
        *seen = true;
        self.worlds.push(world);
        self.causes.push(cause);
        if self.verdict != Some(Verdict::RebuildAll) {
            self.verdict = Some(Verdict::Rebuild);
        }
    }

    /// The cause of a [`Verdict::RebuildAll`].
    pub fn all_cause(&self) -> Option<Cause> {
        self.all_cause
    }

    /// The worlds rebuilt individually, with their causes, in the order they were decided.
    pub fn worlds(&self) -> impl Iterator<Item = (u32, Cause)> + '_ {
        self.worlds.iter().copied().zip(self.causes.iter().copied())
    }

    /// The worlds rebuilt individually, in the order they were decided.
    pub fn listed(&self) -> &[u32] {
        &self.worlds
    }

    /// Whether `world` is listed for an individual rebuild.
    pub fn is_listed(&self, world: u32) -> bool {
        self.listed.get(world as usize).copied().unwrap_or(false)
    }

    /// The cause listed for `world`, or the cause of a rebuild of all.
    pub fn cause_of(&self, world: u32) -> Option<Cause> {
        self.worlds()
            .find(|&(w, _)| w == world)
            .map(|(_, c)| c)
            .or(self.all_cause)
    }
}

/// An event names a world or tree the tracker was not sized for, or a source by a negative id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrackerError {
    /// World index out of range.
    #[error("an event names world {world}, but {nworld} worlds are tracked (an engine's capacity)")]
    World {
        /// The world named.
        world: u32,
        /// Worlds tracked.
        nworld: usize,
    },
    /// Tree index out of range.
    #[error("an event names tree {tree}, but each world has {ntree} trees (the model's)")]
    Tree {
        /// The tree named.
        tree: i32,
        /// Trees per world.
        ntree: usize,
    },
    /// A negative equality, dof, tendon, flex or actuator id. (An id past the model's counts is
    /// taken: an edit may add an equality.)
    #[error("an event names {named}, but MuJoCo's ids count from 0")]
    Source {
        /// The source named.
        named: SourceId,
    },
}

/// Epochs per source and world, the reported awake state of every tree, and the decision logic.
///
/// A world's quotient is stale when an invalidating source's epoch moved since the quotient was
/// built ([`Tracker::mark_built`]); a move of a source's all-worlds epoch makes every world stale.
#[derive(Debug, Clone)]
pub struct Tracker {
    nworld: usize,
    ntree: usize,
    epoch: Vec<[u64; NSOURCE]>,
    built: Vec<[u64; NSOURCE]>,
    global: [u64; NSOURCE],
    built_global: [u64; NSOURCE],
    first_cause: Vec<Option<Cause>>,
    global_cause: Option<Cause>,
    dirty: Vec<u32>,
    in_dirty: Vec<bool>,
    awake: Vec<bool>,
    sleep_touched: Vec<(u32, i32)>,
    /// The worlds of the step that took `sleep_touched` (`sleep_events_taken`), if one did since
    /// the last record: the next record starts the list afresh but for the worlds past them.
    sleep_taken: Option<usize>,
    /// Per world and tree, whether `sleep_touched` lists it since the list started afresh, so
    /// that it lists each pair once.
    touched: StepMarks,
    absorbed: u64,
}

impl Tracker {
    /// A tracker for `nworld` worlds of `ntree` trees, every tree awake, no event recorded: it
    /// holds nothing stale, and a world that has no quotient yet is its owner's to build (the
    /// quotient engine lists those with [`Cause::Initial`]), then to mark built.
    pub fn new(nworld: usize, ntree: usize) -> Tracker {
        Tracker {
            nworld,
            ntree,
            epoch: vec![[0; NSOURCE]; nworld],
            built: vec![[0; NSOURCE]; nworld],
            global: [0; NSOURCE],
            built_global: [0; NSOURCE],
            first_cause: vec![None; nworld],
            global_cause: None,
            dirty: Vec::with_capacity(nworld),
            in_dirty: vec![false; nworld],
            awake: vec![true; nworld * ntree],
            sleep_touched: Vec::with_capacity(nworld * ntree),
            touched: StepMarks::new(nworld * ntree),
            // Nothing listed yet: the first record starts the list.
            sleep_taken: Some(nworld),
            absorbed: 0,
        }
    }

    /// Worlds tracked.
    pub fn nworld(&self) -> usize {
        self.nworld
    }

    /// Whether [`record`](Tracker::record) takes `events` without refusing any: every world and
    /// every sleep or wake's tree is in range, and every equality or edited source has an id of
    /// 0 or more. O(1), from the bounds [`Events`] keeps; where it holds, `record` cannot fail.
    ///
    /// ```
    /// use invalidation::{Events, Tracker};
    /// let tracker = Tracker::new(2, 4);
    /// let mut events = Events::new();
    /// events.sleep(1, 3);
    /// assert!(tracker.accepts(&events));
    /// events.wake(2, 0); // world 2 of 2
    /// assert!(!tracker.accepts(&events));
    /// ```
    pub fn accepts(&self, events: &Events) -> bool {
        events.within(self.nworld, self.ntree)
    }

    /// Checks `events` as [`record`](Tracker::record) does, recording nothing: the first event
    /// out of range is refused. O(1) where [`accepts`](Tracker::accepts) holds.
    pub fn check_all(&self, events: &Events) -> Result<(), TrackerError> {
        if !self.accepts(events) {
            for e in events.as_slice() {
                self.check(e)?;
            }
        }
        Ok(())
    }

    /// Records a step's events. `is_static` says whether a source's rows are classified static
    /// (changes to dynamic sources cost nothing). Every event is checked before any is applied.
    pub fn record(
        &mut self,
        events: &Events,
        is_static: impl Fn(SourceId) -> bool,
    ) -> Result<(), TrackerError> {
        // One by one only where the events' bounds leave some out of range (a cloth falling
        // asleep in every world reports 10^5 events or more).
        self.check_all(events)?;
        // Events recorded without a step (another mode solved it) stay listed for the next
        // step, so that it sees every sleep and wake since the last one; so do those of worlds
        // past the last step's batch, for the step that has them again.
        if let Some(nworld) = self.sleep_taken.take() {
            self.sleep_touched.retain(|&(w, _)| w as usize >= nworld);
            self.touched.next_step();
            for &(w, t) in &self.sleep_touched {
                self.touched.mark(w as usize * self.ntree + t as usize);
            }
        }
        for &e in events.as_slice() {
            match e {
                Event::EqActive { world, eq, active } => {
                    if is_static(SourceId::Eq(eq)) {
                        self.bump(world, Source::EqActive, Cause::EqActive { eq, active });
                    } else {
                        self.absorbed += 1;
                    }
                }
                Event::Sleep { world, tree } | Event::Wake { world, tree } => {
                    let slot = world as usize * self.ntree + tree as usize;
                    self.awake[slot] = matches!(e, Event::Wake { .. });
                    self.epoch[world as usize][Source::Sleep as usize] += 1;
                    if self.touched.mark(slot) {
                        self.sleep_touched.push((world, tree));
                    }
                }
                Event::Edit { world, edit } => {
                    if !is_static(edit.source()) {
                        self.absorbed += 1;
                    } else if let Some(world) = world {
                        self.bump(world, Source::Edit, Cause::Edit(edit));
                    } else {
                        self.bump_all(Source::Edit, Cause::Edit(edit));
                    }
                }
                Event::Capacity => self.bump_all(Source::Capacity, Cause::Capacity),
            }
        }
        Ok(())
    }

    /// Makes every world stale because the classification policy changed.
    pub fn reclassified(&mut self) {
        self.bump_all(Source::Classification, Cause::Classification);
    }

    /// Writes the decision for the events recorded since the last builds into `decision`.
    pub fn decide(&mut self, decision: &mut Decision) {
        self.decide_for(decision, self.nworld);
    }

    /// [`decide`](Self::decide) for a step of the first `nworld` worlds: a stale world past
    /// them is not listed (no step rebuilds it) and stays stale, with its cause, for the step
    /// that has it again.
    pub fn decide_for(&mut self, decision: &mut Decision, nworld: usize) {
        decision.clear();
        // A decision too small for this tracker (`Decision::default()`) would drop worlds.
        if decision.listed.len() < self.nworld {
            decision.listed.resize(self.nworld, false);
        }
        if self.global != self.built_global {
            decision.rebuild_all(self.global_cause.unwrap_or(Cause::Capacity));
            return;
        }
        let mut keep = 0;
        for i in 0..self.dirty.len() {
            let w = self.dirty[i];
            if self.is_stale(w as usize) {
                if (w as usize) < nworld {
                    let cause = self.first_cause[w as usize].unwrap_or(Cause::Initial);
                    decision.push(w, cause);
                }
                self.dirty[keep] = w;
                keep += 1;
            } else {
                self.in_dirty[w as usize] = false;
            }
        }
        self.dirty.truncate(keep);
    }

    /// Records that `world`'s quotient now reflects every event of its own so far. An
    /// all-worlds event (a capacity change, a model-wide edit, a new classification) stays
    /// until [`mark_all_built`](Self::mark_all_built), since every world must be rebuilt for it.
    pub fn mark_built(&mut self, world: usize) {
        if let (Some(b), Some(e)) = (self.built.get_mut(world), self.epoch.get(world)) {
            *b = *e;
            self.first_cause[world] = None;
        }
    }

    /// Records that every world's quotient now reflects every event so far.
    pub fn mark_all_built(&mut self) {
        self.built_global = self.global;
        self.global_cause = None;
        self.built.copy_from_slice(&self.epoch);
        self.first_cause.fill(None);
        for &w in &self.dirty {
            self.in_dirty[w as usize] = false;
        }
        self.dirty.clear();
    }

    /// Epoch of `source` for `world`: the number of its invalidating events so far, the world's
    /// and the all-worlds ones together (an `eq_active` switch of an equality classified dynamic
    /// invalidates nothing and is counted in [`absorbed`](Self::absorbed) instead).
    pub fn epoch(&self, source: Source, world: usize) -> u64 {
        self.epoch[world][source as usize] + self.global[source as usize]
    }

    /// Whether `world` has an invalidating event its quotient does not reflect.
    pub fn is_stale(&self, world: usize) -> bool {
        self.global != self.built_global
            || Source::ALL.iter().any(|&s| {
                s.invalidates() && self.epoch[world][s as usize] != self.built[world][s as usize]
            })
    }

    /// The reported state of `tree` in `world` (every tree starts awake). Panics when `world`
    /// or `tree` is out of the tracker's range.
    pub fn awake(&self, world: usize, tree: usize) -> bool {
        assert!(
            tree < self.ntree,
            "tree {tree} of a tracker of {} trees",
            self.ntree
        );
        self.awake[world * self.ntree + tree]
    }

    /// Whether every tree of `world` is reported awake.
    pub fn world_awake(&self, world: usize) -> bool {
        let n = self.ntree;
        self.awake[world * n..(world + 1) * n].iter().all(|&a| a)
    }

    /// The (world, tree) pairs with a sleep or wake event since the last step that took them
    /// ([`sleep_events_taken`](Self::sleep_events_taken)), each once: a step's own, those
    /// recorded while another mode solved the steps between, and those of worlds that the
    /// steps since their events did not have.
    pub fn sleep_events(&self) -> &[(u32, i32)] {
        &self.sleep_touched
    }

    /// Says that a step of the first `nworld` worlds has acted on
    /// [`sleep_events`](Self::sleep_events): the next record lists its own afresh, after the
    /// events of worlds past them, which stay until a step has those worlds.
    pub fn sleep_events_taken(&mut self, nworld: usize) {
        self.sleep_taken = Some(nworld);
    }

    /// Events that needed no rebuild because their source is classified dynamic. A toggle after
    /// which the owner turned its equality dynamic ([`reclassified`](Self::reclassified), before
    /// recording it) counts here too: the rebuild of every world is the reclassification's.
    pub fn absorbed(&self) -> u64 {
        self.absorbed
    }

    fn check(&self, e: &Event) -> Result<(), TrackerError> {
        if let Some(named) = e.source().filter(|s| s.id() < 0) {
            return Err(TrackerError::Source { named });
        }
        let world = match *e {
            Event::EqActive { world, .. }
            | Event::Edit {
                world: Some(world), ..
            } => world,
            Event::Sleep { world, tree } | Event::Wake { world, tree } => {
                if tree < 0 || tree as usize >= self.ntree {
                    return Err(TrackerError::Tree {
                        tree,
                        ntree: self.ntree,
                    });
                }
                world
            }
            Event::Edit { world: None, .. } | Event::Capacity => return Ok(()),
        };
        if world as usize >= self.nworld {
            return Err(TrackerError::World {
                world,
                nworld: self.nworld,
            });
        }
        Ok(())
    }

    fn bump(&mut self, world: u32, source: Source, cause: Cause) {
        let w = world as usize;
        self.epoch[w][source as usize] += 1;
        self.first_cause[w].get_or_insert(cause);
        if !self.in_dirty[w] {
            self.in_dirty[w] = true;
            self.dirty.push(world);
        }
    }

    fn bump_all(&mut self, source: Source, cause: Cause) {
        self.global[source as usize] += 1;
        self.global_cause.get_or_insert(cause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_static(_: SourceId) -> bool {
        true
    }

    #[test]
    fn reuse_without_events_and_after_builds() {
        let mut t = Tracker::new(3, 4);
        let mut d = Decision::with_capacity(3);
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Reuse);
        let mut ev = Events::new();
        ev.eq_active(2, 5, true).eq_active(2, 6, false);
        t.record(&ev, all_static).unwrap();
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Rebuild);
        assert_eq!(
            d.worlds().collect::<Vec<_>>(),
            [(
                2,
                Cause::EqActive {
                    eq: 5,
                    active: true
                }
            )]
        );
        let toggled = Cause::EqActive {
            eq: 5,
            active: true,
        };
        assert_eq!((d.cause_of(2), d.cause_of(0)), (Some(toggled), None));
        // Not rebuilt yet: still stale next step.
        t.record(&Events::new(), all_static).unwrap();
        t.decide(&mut d);
        assert!(d.is_listed(2));
        t.mark_built(2);
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Reuse);
        assert_eq!(t.epoch(Source::EqActive, 2), 2);
    }

    #[test]
    fn dynamic_sources_and_sleep_are_absorbed() {
        let mut t = Tracker::new(2, 4);
        let mut d = Decision::with_capacity(2);
        let mut ev = Events::new();
        ev.eq_active(0, 1, false)
            .edit(Some(1), Edit::EqRetargeted { eq: 1 })
            .sleep(1, 3)
            .sleep(1, 3)
            .wake(0, 2);
        t.record(&ev, |s| s != SourceId::Eq(1)).unwrap();
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Reuse);
        assert_eq!(t.absorbed(), 2);
        assert!(!t.awake(1, 3) && t.awake(0, 2));
        assert!(!t.world_awake(1) && t.world_awake(0));
        assert_eq!(t.sleep_events(), &[(1, 3), (0, 2)]);
        // Kept until a step takes them, then listed afresh.
        t.record(Events::new().sleep(0, 1), all_static).unwrap();
        assert_eq!(t.sleep_events(), &[(1, 3), (0, 2), (0, 1)]);
        t.sleep_events_taken(t.nworld());
        t.record(&Events::new(), all_static).unwrap();
        assert!(t.sleep_events().is_empty());
    }

    #[test]
    fn sleep_in_a_world_past_the_step_stays_listed_until_a_step_has_it() {
        let mut t = Tracker::new(3, 2);
        t.record(Events::new().sleep(2, 1).sleep(0, 0), all_static)
            .unwrap();
        // A step of worlds 0 and 1 takes the list: world 2's sleep stays, listed once.
        t.sleep_events_taken(2);
        t.record(Events::new().wake(0, 0).sleep(2, 1), all_static)
            .unwrap();
        assert_eq!(t.sleep_events(), &[(2, 1), (0, 0)]);
        t.sleep_events_taken(3);
        t.record(&Events::new(), all_static).unwrap();
        assert!(t.sleep_events().is_empty());
    }

    #[test]
    fn each_pair_is_listed_once_a_step_for_as_long_as_steps_go() {
        // Tree 1 of world 0 at the first step and again 255 steps later, when the stamps that
        // list each pair once have started over; tree 2 twice at every step in between.
        let mut t = Tracker::new(1, 3);
        let mut ev = Events::new();
        for k in 0..300 {
            ev.clear();
            if k % 255 == 0 {
                ev.sleep(0, 1);
            }
            ev.wake(0, 2).sleep(0, 2);
            t.record(&ev, all_static).unwrap();
            let want: &[(u32, i32)] = if k % 255 == 0 {
                &[(0, 1), (0, 2)]
            } else {
                &[(0, 2)]
            };
            assert_eq!(t.sleep_events(), want, "step {k}");
            t.sleep_events_taken(t.nworld());
        }
    }

    #[test]
    fn events_within_the_tracker_are_not_checked_one_by_one() {
        let mut ev = Events::new();
        assert!(ev.within(0, 0), "no events");
        ev.edit(None, Edit::FlexStiffness { flex: 0 })
            .capacity_changed();
        assert!(ev.within(0, 0), "events of no world");
        ev.sleep(3, 7);
        assert!(ev.within(4, 8) && !ev.within(3, 8) && !ev.within(4, 7));
        ev.wake(0, -1);
        assert!(!ev.within(4, 8));
        ev.clear();
        ev.eq_active(9, 0, true);
        assert!(!ev.within(9, 8) && ev.within(10, 0));
        assert_eq!(ev.eq_active_count(), 1);
        ev.clear();
        assert!(ev.within(0, 0) && ev.eq_active_count() == 0);
        ev.eq_active(0, -1, true);
        assert!(!ev.within(1, 0), "a negative equality id");
        ev.clear();
        ev.edit(None, Edit::ActuatorCoupling { actuator: -4 });
        assert!(!ev.within(0, 0), "a negative id edited in every world");
    }

    #[test]
    fn model_edits_and_capacity_rebuild_all() {
        let mut t = Tracker::new(2, 2);
        let mut d = Decision::with_capacity(2);
        let mut ev = Events::new();
        ev.edit(None, Edit::FlexStiffness { flex: 0 })
            .capacity_changed();
        t.record(&ev, all_static).unwrap();
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::RebuildAll);
        assert_eq!(
            d.all_cause(),
            Some(Cause::Edit(Edit::FlexStiffness { flex: 0 }))
        );
        // Every world has the rebuild of all as its cause.
        assert_eq!(d.cause_of(1), d.all_cause());
        t.mark_all_built();
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Reuse);
        t.reclassified();
        t.decide(&mut d);
        assert_eq!(d.all_cause(), Some(Cause::Classification));
    }

    #[test]
    fn bad_events_are_refused_whole() {
        let mut t = Tracker::new(2, 2);
        let mut ev = Events::new();
        ev.eq_active(0, 1, true).sleep(0, 2);
        assert_eq!(
            t.record(&ev, all_static),
            Err(TrackerError::Tree { tree: 2, ntree: 2 })
        );
        ev.clear();
        ev.eq_active(5, 1, true);
        assert!(matches!(
            t.record(&ev, all_static),
            Err(TrackerError::World { world: 5, .. })
        ));
        // Every kind of reach past the tracker, after events that fit: nothing is applied.
        let bad = [
            Event::Sleep { world: 0, tree: -1 },
            Event::Wake { world: 2, tree: 0 },
            Event::Edit {
                world: Some(2),
                edit: Edit::FlexStiffness { flex: 0 },
            },
            Event::EqActive {
                world: 0,
                eq: -1,
                active: true,
            },
            Event::Edit {
                world: None,
                edit: Edit::DofFriction { dof: -2, on: true },
            },
        ];
        for e in bad {
            ev.clear();
            ev.sleep(1, 1).wake(0, 0).push(e);
            assert!(t.record(&ev, all_static).is_err(), "{e:?}");
            assert!(t.awake(1, 1), "{e:?}: nothing applied");
        }
        ev.clear();
        ev.eq_active(1, -3, false);
        let e = t.record(&ev, all_static).unwrap_err();
        assert_eq!(
            e.to_string(),
            "an event names equality -3, but MuJoCo's ids count from 0"
        );
        let mut d = Decision::with_capacity(2);
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Reuse);
    }

    #[test]
    fn a_world_past_the_step_stays_stale_with_its_cause() {
        let mut t = Tracker::new(3, 2);
        let mut d = Decision::with_capacity(3);
        let mut ev = Events::new();
        ev.eq_active(2, 4, false).eq_active(0, 4, true);
        t.record(&ev, all_static).unwrap();
        // A step of two worlds: world 2 is not listed, and not forgotten.
        t.decide_for(&mut d, 2);
        let first = Cause::EqActive {
            eq: 4,
            active: true,
        };
        assert_eq!(d.worlds().collect::<Vec<_>>(), [(0, first)]);
        t.mark_built(0);
        assert!(t.is_stale(2));
        t.decide_for(&mut d, 3);
        let cause = Cause::EqActive {
            eq: 4,
            active: false,
        };
        assert_eq!(d.worlds().collect::<Vec<_>>(), [(2, cause)]);
    }

    #[test]
    fn a_default_decision_still_lists_every_stale_world() {
        let mut t = Tracker::new(2, 2);
        let mut ev = Events::new();
        ev.eq_active(1, 3, false);
        t.record(&ev, all_static).unwrap();
        let mut d = Decision::default();
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Rebuild);
        assert!(d.is_listed(1));
    }

    #[test]
    fn marking_worlds_built_one_by_one_leaves_an_all_worlds_event() {
        let mut t = Tracker::new(2, 2);
        let mut ev = Events::new();
        ev.capacity_changed();
        t.record(&ev, all_static).unwrap();
        t.mark_built(0);
        t.mark_built(1);
        let mut d = Decision::with_capacity(2);
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::RebuildAll);
        t.mark_all_built();
        t.decide(&mut d);
        assert_eq!(d.verdict(), Verdict::Reuse);
    }

    #[test]
    #[should_panic(expected = "tree 2 of a tracker of 2 trees")]
    fn a_tree_past_the_world_is_refused() {
        let t = Tracker::new(2, 2);
        let _ = t.awake(0, 2);
    }
}
