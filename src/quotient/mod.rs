//! `quotient`: the static quotient mode (DESIGN.md §§1, 5).
//!
//! Static rows (equalities, friction loss, rowless couplings — see [`classify`]) are contracted once
//! per world by a host DSU into a quotient ([`contract`]); worlds with identical static incidence
//! share one. Each step only the dynamic rows are unioned over the quotient's nodes ([`step`]). A
//! world whose static rows are its quotient's block (the common case) is then mapped from its
//! nodes ([`node_maps`]: per node and per run of static rows, the dynamic rows one by one); any
//! other has its labels pulled back to trees and goes through the shared canonical numbering and
//! maps. Either way every output is identical to a full rebuild's.
//!
//! Nothing stale is ever used: reported events ([`invalidation::Events`]) decide which worlds are
//! rebuilt before the step, and the guard ([`guard`]) checks each world's static rows against its
//! quotient during the step, rebuilding the world on any difference. Sleeping components are
//! masked per node without a rebuild.
//!
//! ```
//! use archipelago::quotient::{Policy, Quotient};
//! use archipelago::{oracle, Batch, Capacity, Input, Islands, Model, RowType};
//! use archipelago::Events;
//! let model = Model::from_dofnum(&[1, 1, 1, 1]).unwrap();
//! let mut b = Batch::builder();
//! b.row(RowType::Equality, 0, &[0, 1]).row(RowType::ContactPyramidal, 0, &[1, 3]).end_world();
//! let batch = b.finish();
//! let input = Input::new(&model, &batch).unwrap();
//! let mut q = Quotient::new(&Capacity::fit(&model, &batch), Policy::default());
//! let mut out = Islands::default();
//! q.step(&input, &Events::new(), &mut out).unwrap();
//! assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
//! assert_eq!(out.world(0).tree_island, &[0, 0, -1, 0]);
//! ```

pub mod classify;
pub mod contract;
pub mod guard;
pub mod node_maps;
pub mod reuse;
pub mod step;
mod walk;

pub use classify::{Classifier, EqPolicy, Policy, Share};
pub use contract::{Built, Quotients, Tables, View};
pub use invalidation::{Cause, Decision, Events, Tracker, Verdict};

use crate::cpu::{CpuMode, Stats};
use crate::error::{Error, Result};
use crate::islands::Islands;
use crate::labels;
use crate::maps::{self, MapScratch};
use crate::rows::{Capacity, Input};
use invalidation::StepMarks;
use step::{Solved, StepScratch};

/// Running totals of what the quotient did, for diagnostics and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Steps taken.
    pub steps: u64,
    /// World-steps solved over a quotient.
    pub world_steps: u64,
    /// Quotients contracted.
    pub contracted: u64,
    /// Worlds attached to an existing identical quotient.
    pub shared: u64,
    /// Rebuilds decided from reported events (a rebuild of all counts once per world).
    pub reported: u64,
    /// Rebuilds forced by the guard (unreported changes, partial sleep seen in the rows).
    pub guarded: u64,
    /// Rebuilds because a reported sleep or wake split a contracted component.
    pub partial_sleep: u64,
    /// World-steps that masked at least one sleeping node instead of rebuilding.
    pub masked: u64,
    /// Worlds solved by the direct fallback.
    pub direct: u64,
    /// World-steps whose hyperedges equalled the last solved step's, so that step's outputs
    /// were reused ([`Quotient::set_reuse`], or the device's reuse:
    /// `gpu::quotient::QuotientSolver::set_reuse`).
    pub reused: u64,
    /// World-steps that skipped the reuse check because the world kept changing (a pause: see
    /// [`reuse`]; CPU only).
    pub paused: u64,
    /// World-steps that changed but kept the partition of trees of their last solved step, so
    /// only their row-level outputs were mapped (CPU only; the device counts its own in
    /// `gpu::quotient::StepCounts`).
    pub kept_partition: u64,
    /// World-steps replayed over their quotient (its block of static rows in place, every node
    /// awake) whose outputs were mapped from its nodes ([`node_maps`]) rather than from their
    /// trees' labels (CPU only: the device's node-level maps are counted in
    /// `gpu::quotient::StepCounts`).
    pub node_mapped: u64,
}

/// The quotient engine for one model and capacity: the cache, the tracker, the scratch.
#[derive(Debug, Clone)]
pub struct Quotient {
    capacity: Capacity,
    policy: Policy,
    classifier: Classifier,
    cache: Quotients,
    tracker: Tracker,
    decision: Decision,
    scratch: StepScratch,
    maps: MapScratch,
    counters: Counters,
    /// Reported toggles per static equality, for [`EqPolicy::Learn`].
    toggles: Vec<(i32, u32)>,
    /// Unchanged worlds' outputs, when on ([`Quotient::set_reuse`]).
    reuse: Option<Box<reuse::Reuse>>,
    /// Whether reuse also serves changed worlds that kept their partition
    /// ([`Quotient::set_partition_reuse`]).
    partition_reuse: bool,
    /// Per world and node id, whether this step's sleep and wake events have checked that node
    /// (`check_partial_sleep`).
    sleep_checked: StepMarks,
    /// Why a world without a quotient has none: [`Cause::Initial`] until a rebuild of every
    /// world drops the quotients of worlds past its batch, then that rebuild's cause.
    unbuilt: Cause,
}

impl Quotient {
    /// A quotient engine with room for `capacity`, classifying rows by `policy`. Everything a
    /// step needs is allocated here.
    pub fn new(capacity: &Capacity, policy: Policy) -> Quotient {
        let (nworld, ntree) = (capacity.nworld, capacity.ntree);
        let maps = MapScratch::with_capacity(ntree);
        Quotient {
            capacity: *capacity,
            classifier: policy.classifier(),
            policy,
            cache: Quotients::new(capacity),
            tracker: Tracker::new(nworld, ntree),
            decision: Decision::with_capacity(nworld),
            scratch: StepScratch::new(ntree),
            maps,
            counters: Counters::default(),
            toggles: Vec::with_capacity(classify::LEARN_MAX),
            reuse: None,
            partition_reuse: true,
            sleep_checked: StepMarks::new(nworld * ntree),
            unbuilt: Cause::Initial,
        }
    }

    /// Whether a step takes the outputs of worlds whose hyperedges (row types and supports)
    /// equal those of the last step they were solved in, instead of solving them again (off
    /// for a new `Quotient`; the CPU engines and the CPU `quotient` mode turn it on). Every
    /// output is a function of those hyperedges alone for one model, so reuse is exact (a
    /// step of another model, even of as many trees and dofs, forgets every world); on, it
    /// holds a copy of every world's hyperedges and outputs (allocated here) and costs a
    /// comparison per world and a copy per world solved, except for worlds that keep changing,
    /// which pause it (see [`reuse`]). A world that changed but kept the partition of trees of
    /// its cached step takes that step's tree- and dof-level outputs and maps only its rows
    /// ([`Quotient::set_partition_reuse`]). Turning it on again forgets every world. The
    /// device quotient has its own (`gpu::quotient::QuotientSolver::set_reuse`); this one
    /// serves [`Quotient::step`].
    pub fn set_reuse(&mut self, on: bool) {
        match (on, &mut self.reuse) {
            (true, None) => self.reuse = Some(Box::new(reuse::Reuse::new(&self.capacity))),
            (true, Some(r)) => r.clear(),
            (false, _) => self.reuse = None,
        }
    }

    /// Whether unchanged worlds reuse their outputs ([`Quotient::set_reuse`]).
    pub fn reuse(&self) -> bool {
        self.reuse.is_some()
    }

    /// With reuse on, whether a world that changed but kept the partition of trees of its
    /// cached step takes that step's tree- and dof-level outputs, which are a function of the
    /// partition alone, and maps only its rows (on for a new `Quotient`; counted in
    /// [`Counters::kept_partition`]). Off, such a world is mapped in full: for measuring.
    pub fn set_partition_reuse(&mut self, on: bool) {
        self.partition_reuse = on;
    }

    /// The classification policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Changes the classification policy; every world is rebuilt at the next step.
    pub fn set_policy(&mut self, policy: Policy) {
        if policy != self.policy {
            self.classifier = policy.classifier();
            self.policy = policy;
            // A new policy learns afresh: toggles counted under the old one do not count.
            self.toggles.clear();
            self.tracker.reclassified();
        }
    }

    /// The classifier in use.
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// The decision of the last step, with the cause of every rebuild.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// The tracker (epochs, reported awake state).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    /// The trees of tree `t`'s node in world `w`'s quotient, where that node holds static
    /// hyperedges (several trees, or static rows of its own): the node whose static rows the
    /// guard finds all gone, and masks, when every one of its trees sleeps. `None` for a tree of
    /// no static hyperedge, whose sleep leaves what the world replays as it was, and for a world
    /// without a quotient. The GPU quotient takes a world into its launch's masked ones by it.
    ///
    /// ```
    /// # use archipelago::{quotient::{Policy, Quotient}, Batch, Capacity, Input, Islands, Model, RowType};
    /// # use archipelago::Events;
    /// let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    /// let cap = Capacity { nworld: 1, ntree: 3, nv: 3, njmax: 4, nsupport: 8, nedge: 0 };
    /// let mut b = Batch::builder();
    /// b.row(RowType::Equality, 0, &[0, 1]); // trees 0 and 1 contracted into one node
    /// b.end_world();
    /// let batch = b.finish();
    /// let mut q = Quotient::new(&cap, Policy::default());
    /// q.step(&Input::new(&model, &batch).unwrap(), &Events::new(), &mut Islands::default()).unwrap();
    /// assert_eq!(q.static_node(0, 1), Some(&[0, 1][..]));
    /// assert_eq!(q.static_node(0, 2), None); // tree 2: no static row
    /// ```
    pub fn static_node(&self, w: usize, t: usize) -> Option<&[i32]> {
        let slot = self.cache.slot_of(w)?;
        let trees = self.cache.trees_with(slot, t);
        (trees.len() > 1 || self.cache.rows_with(slot, t) > 0).then_some(trees)
    }

    /// The quotient cache.
    pub fn cache(&self) -> &Quotients {
        &self.cache
    }

    /// Calls `f` for every slot contracted since the last call (what a device mirror uploads).
    pub fn drain_contracted(&mut self, f: impl FnMut(u32)) {
        self.cache.drain_contracted(f);
    }

    /// Running totals.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Bytes held by the cache and the scratch (all allocated up front).
    pub fn bytes(&self) -> usize {
        self.cache.bytes()
            + self.scratch.bytes()
            + self.maps.bytes()
            + self.toggles.capacity() * 8
            + self.sleep_checked.bytes()
            + self.reuse.as_ref().map_or(0, |r| r.bytes())
    }

    /// Records events without stepping (for example while another mode is solving), so the
    /// quotients they invalidate are rebuilt before they are used again.
    pub fn record(&mut self, events: &Events) -> Result<()> {
        // Every event checked before any is applied: learning counts toggles before the
        // tracker records them.
        self.check(events)?;
        if let EqPolicy::Learn { after } = self.policy.eq {
            self.learn(events, after);
        }
        let classifier = &self.classifier;
        self.tracker
            .record(events, |s| classifier.is_static(s))
            .map_err(Error::from)
    }

    /// Checks `events` as [`record`](Quotient::record) does, recording nothing (O(1) where
    /// every one is in range; see [`Tracker::check_all`](invalidation::Tracker::check_all)).
    pub fn check(&self, events: &Events) -> Result<()> {
        self.tracker.check_all(events).map_err(Error::from)
    }

    /// Counts reported toggles of static equalities; one toggled `after` times turns dynamic
    /// and every world is rebuilt once with the new classification.
    fn learn(&mut self, events: &Events, after: u32) {
        if events.eq_active_count() == 0 {
            return;
        }
        for e in events.as_slice() {
            let invalidation::Event::EqActive { eq, .. } = *e else {
                continue;
            };
            if !self.classifier.is_static(invalidation::SourceId::Eq(eq)) {
                continue;
            }
            let i = match self.toggles.iter().position(|&(id, _)| id == eq) {
                Some(i) => i,
                None if self.toggles.len() < classify::LEARN_MAX => {
                    self.toggles.push((eq, 0));
                    self.toggles.len() - 1
                }
                None => continue,
            };
            self.toggles[i].1 += 1;
            if self.toggles[i].1 >= after && self.classifier.make_dynamic(eq) {
                self.tracker.reclassified();
            }
        }
    }

    /// The equalities [`EqPolicy::Learn`] has turned dynamic so far.
    pub fn learned(&self) -> impl Iterator<Item = i32> + '_ {
        self.toggles
            .iter()
            .filter(|&&(eq, _)| self.classifier.dynamic_eqs().binary_search(&eq).is_ok())
            .map(|&(eq, _)| eq)
    }

    /// One step: records `events`, rebuilds what they (or the guard) invalidate, and writes every
    /// output of every world of `input` into `out`.
    pub fn step(&mut self, input: &Input<'_>, events: &Events, out: &mut Islands) -> Result<()> {
        self.capacity.fits(input)?;
        self.record(events)?;
        self.solve_recorded(input, out);
        Ok(())
    }

    /// The step after recording: the input is valid and fits the capacity.
    fn solve_recorded(&mut self, input: &Input<'_>, out: &mut Islands) {
        let (model, batch) = (input.model(), input.batch());
        let ntree = model.ntree();
        out.resize(ntree, model.nv(), batch);
        self.prepare_recorded(input);
        if let Some(r) = self.reuse.as_deref_mut() {
            r.begin_step(model);
        }
        for w in 0..batch.nworld() {
            self.counters.world_steps += 1;
            if let Some(r) = self.reuse.as_deref_mut() {
                match r.check(batch, w) {
                    reuse::Check::Unchanged => {
                        r.restore(w, out);
                        self.counters.reused += 1;
                        continue;
                    }
                    reuse::Check::Paused => self.counters.paused += 1,
                    reuse::Check::Changed => {}
                }
            }
            self.solve_world(input, w, out);
        }
    }

    /// World `w`'s step past the reuse check: solved over its quotient (rebuilt where the guard
    /// finds it stale, solved directly where even that does not fit), then mapped from its nodes
    /// where it replayed its block, else from its trees' labels; with reuse, only its rows where
    /// it kept its partition, and its outputs cached.
    fn solve_world(&mut self, input: &Input<'_>, w: usize, out: &mut Islands) {
        let batch = input.batch();
        let ntree = input.model().ntree();
        let solved = match self.solve_nodes(input, w) {
            Err(finding) => {
                self.rebuild_stale(input, w, finding);
                self.solve_nodes(input, w).ok()
            }
            solved => solved.ok(),
        };
        let view = self.cache.view(self.cache.slot_of(w).unwrap_or_default());
        let tree = w * ntree..(w + 1) * ntree;
        let labels = &mut out.tree_island[tree.clone()];
        // Where it replayed its block, the world is mapped from its nodes (node_maps), else from
        // its labels.
        let block = match solved {
            Some(Solved::Replayed { start }) if ntree > 0 && input.discovers(w) => Some(start),
            Some(solved) => {
                // Never after a rebuild: every node of a fresh quotient has its rows.
                if let Solved::Scanned { asleep } = solved {
                    self.counters.masked += (asleep > 0) as u64;
                }
                step::pull_back(&view, self.scratch.nodes(view.nnode), labels);
                None
            }
            None => {
                self.counters.direct += 1;
                step::solve_direct(batch, w, &mut self.scratch, labels);
                None
            }
        };
        let nisland = match block {
            Some(_) => node_maps::label_trees(&view, self.scratch.nodes_mut(view.nnode), labels),
            None => labels::canonicalize(labels, input.discovers(w)) as usize,
        };
        let replayed = block.map(|start| node_maps::Replayed {
            view,
            start,
            island: self.scratch.nodes(view.nnode),
            nisland,
        });
        self.counters.node_mapped += replayed.is_some() as u64;
        // The tree- and dof-level outputs follow from the partition alone: a world that
        // kept its cached step's takes them from the cache and maps only its rows.
        let partition = self.partition_reuse;
        let maps = &mut self.maps;
        match self.reuse.as_deref_mut() {
            Some(r) if partition && r.same_partition(w, &out.tree_island[tree]) => {
                r.restore_partition(w, out);
                match &replayed {
                    Some(world) => node_maps::fill_world_rows(world, input, w, out, maps),
                    None => maps::fill_world_rows(input, w, nisland as i32, out, maps),
                }
                r.store_rows(batch, w, out);
                self.counters.kept_partition += 1;
            }
            r => {
                match &replayed {
                    Some(world) => node_maps::fill_world(world, input, w, out, maps),
                    None => maps::fill_world(input, w, nisland as i32, out, maps),
                }
                if let Some(r) = r {
                    r.store(batch, w, out);
                }
            }
        }
    }

    /// The capacity it was built for.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// Records `events` and brings every world's quotient up to date with them (rebuilding what
    /// they invalidate and building what is missing) without solving: the host half of a device
    /// step. The guard still runs where the step runs.
    pub fn prepare(&mut self, input: &Input<'_>, events: &Events) -> Result<()> {
        self.capacity.fits(input)?;
        self.record(events)?;
        self.prepare_recorded(input);
        Ok(())
    }

    fn prepare_recorded(&mut self, input: &Input<'_>) {
        let batch = input.batch();
        self.counters.steps += 1;
        self.tracker.decide_for(&mut self.decision, batch.nworld());
        // Which run of equalities stays static is chosen by weighing the batch, when the dynamic
        // ids are new and whenever every world is rebuilt anyway; a new choice rebuilds them all.
        let all = self.decision.verdict() == Verdict::RebuildAll;
        if all || !self.classifier.weighed() {
            let changed = self.classifier.weigh(batch);
            if changed && !all && self.cache.live_slots() > 0 {
                self.tracker.reclassified();
                self.tracker.decide_for(&mut self.decision, batch.nworld());
            }
        }
        if let Some(cause) = self.decision.all_cause() {
            self.unbuilt = cause;
            self.cache.clear();
            self.counters.reported += batch.nworld() as u64;
            self.tracker.mark_all_built();
        }
        for i in 0..self.decision.listed().len() {
            let w = self.decision.listed()[i];
            self.cache.release(w as usize);
            self.tracker.mark_built(w as usize);
            self.counters.reported += 1;
        }
        self.check_partial_sleep(batch.nworld());
        // Listed until now since the last step (`auto` records the steps a full rebuild solves);
        // the device quotient follows them into its masked worlds before its next record.
        self.tracker.sleep_events_taken(batch.nworld());
        for w in 0..batch.nworld() {
            if self.cache.slot_of(w).is_none() {
                self.decision.push(w as u32, self.unbuilt);
                self.build(input, w);
            }
        }
    }

    /// Counts a step a device solved: `worlds` world-steps, `masked` of them with a sleeping
    /// node masked, `reused` of them unchanged since their last solved step (the device's share
    /// of [`Counters`]).
    pub fn note_device_step(&mut self, worlds: u64, masked: u64, reused: u64) {
        self.counters.world_steps += worlds;
        self.counters.masked += masked;
        self.counters.reused += reused;
    }

    /// Rebuilds world `w`'s quotient from `input` because the guard found `finding` (on the host
    /// or on a device), listing it in the decision.
    pub fn rebuild_stale(
        &mut self,
        input: &Input<'_>,
        w: usize,
        finding: invalidation::GuardFinding,
    ) {
        self.decision.push(w as u32, Cause::Guard(finding));
        self.counters.guarded += 1;
        self.build(input, w);
    }

    fn solve_nodes(
        &mut self,
        input: &Input<'_>,
        w: usize,
    ) -> std::result::Result<Solved, invalidation::GuardFinding> {
        let s = self.cache.slot_of(w).unwrap_or_default();
        let view = self.cache.view(s);
        step::solve_nodes(&view, input.batch(), w, &self.classifier, &mut self.scratch)
    }

    fn build(&mut self, input: &Input<'_>, w: usize) {
        let built = self
            .cache
            .build(input.batch(), w, &self.classifier, &mut self.scratch.scan);
        match built {
            Built::Contracted => self.counters.contracted += 1,
            Built::Shared => self.counters.shared += 1,
        }
    }

    /// A reported sleep or wake that leaves a contracted component with trees in both states
    /// cannot be expressed by the node mask: rebuild that world. Each node touched is checked
    /// once, however many of its trees the step put to sleep or woke. Checked once an event, a
    /// cloth of 400 trees falling asleep in 256 worlds (102,400 events) took 41 M checks and
    /// 26 ms of the host half; `sleep-and-wake` in `benches/quotient.rs` went 3.8 → 0.26 ms.
    /// Marked by node rather than by its trees' slice, which each event looked up: 221 → 154 µs
    /// there (session 66, the development machine).
    fn check_partial_sleep(&mut self, nworld: usize) {
        let events = self.tracker.sleep_events();
        if events.is_empty() {
            return;
        }
        self.sleep_checked.next_step();
        let ntree = self.capacity.ntree;
        for &(w, t) in events {
            let w = w as usize;
            // A world past the batch is not stepped: its events stay listed for the step that
            // has it again (`Tracker::sleep_events_taken`).
            if w >= nworld {
                continue;
            }
            let Some(s) = self.cache.slot_of(w) else {
                continue;
            };
            // Marked by node, so that only its first event finds the node's trees.
            if !self
                .sleep_checked
                .mark(w * ntree + self.cache.node_with(s, t as usize))
            {
                continue;
            }
            let trees = self.cache.trees_with(s, t as usize);
            let awake = self.tracker.awake(w, t as usize);
            if trees
                .iter()
                .any(|&u| self.tracker.awake(w, u as usize) != awake)
            {
                self.decision
                    .push(w as u32, Cause::PartialSleep { tree: t });
                self.counters.partial_sleep += 1;
                self.cache.release(w);
            }
        }
    }
}

impl CpuMode for Quotient {
    fn name(&self) -> &'static str {
        "quotient"
    }

    /// A step without reported events: the guard alone keeps the quotients exact.
    fn solve(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.capacity.fits(input)?;
        self.tracker
            .record(&Events::new(), |_| true)
            .map_err(Error::from)?;
        self.solve_recorded(input, out);
        Ok(Stats {
            rounds: 0,
            scratch_bytes: self.bytes(),
        })
    }
}
