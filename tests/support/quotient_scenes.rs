//! Random worlds with every static and dynamic row source, and the mutations the quotient must
//! survive: `eq_active` toggles, island sleep and wake, edits of static constraints, each either
//! reported as an event or not. Shared by the quotient tests and benches.

#![allow(dead_code)]

use archipelago::{Batch, BatchBuilder, Capacity, Model, RowType};
use invalidation::{Edit, Events};

pub use archipelago::synth::Rng;

/// `k` distinct trees out of `0..n`, in random order.
pub fn trees(rng: &mut Rng, n: usize, k: usize) -> Vec<i32> {
    rng.distinct(n, k).into_iter().map(|t| t as i32).collect()
}

/// The static sources of a scene: the same in every world until edited.
#[derive(Debug, Clone)]
pub struct Scene {
    pub model: Model,
    /// Equalities: (support, rows per activation).
    pub eqs: Vec<(Vec<i32>, usize)>,
    /// Dofs with friction loss.
    pub dof_friction: Vec<i32>,
    /// Tendons: support (friction-loss rows when on, limit rows now and then).
    pub tendons: Vec<Vec<i32>>,
    /// Flexes: vertex trees.
    pub flexes: Vec<Vec<i32>>,
    /// Contacts per world-step (mean).
    pub contacts: usize,
    /// Whether `mutate` puts islands to sleep. A world rebuilt while some of its trees sleep
    /// contracts without their rows, so each of them is a node of its own: scenes of more than
    /// 32 trees that must keep every slot within 32 nodes (the warp kernel) leave sleep out.
    pub sleeps: bool,
}

impl Scene {
    /// A random scene of `ntree` trees with `neq` equalities, some friction, tendons and flexes.
    pub fn random(rng: &mut Rng, ntree: usize, neq: usize, contacts: usize) -> Scene {
        let dofnum: Vec<i32> = (0..ntree).map(|_| 1 + rng.below(3) as i32).collect();
        let model = Model::from_dofnum(&dofnum).unwrap();
        let eqs = (0..neq)
            .map(|_| {
                let k = 1 + rng.below(3).min(ntree - 1);
                (trees(rng, ntree, k), 1 + rng.below(4))
            })
            .collect();
        let dof_friction = (0..model.nv() as i32).filter(|_| rng.chance(0.2)).collect();
        let tendons = (0..1 + rng.below(3))
            .map(|_| {
                let k = 1 + rng.below(4);
                trees(rng, ntree, k)
            })
            .collect();
        let flexes = (0..rng.below(3))
            .map(|_| {
                let k = 2 + rng.below(6);
                trees(rng, ntree, k)
            })
            .collect();
        Scene {
            model,
            eqs,
            dof_friction,
            tendons,
            flexes,
            contacts,
            sleeps: true,
        }
    }

    pub fn ntree(&self) -> usize {
        self.model.ntree()
    }

    /// A capacity that every batch of `nworld` worlds of this scene fits, whatever `mutate` did.
    pub fn capacity(&self, nworld: usize) -> Capacity {
        let neq_rows: usize = self.eqs.iter().map(|e| e.1).sum();
        let njmax = neq_rows
            + self.dof_friction.len()
            + 2 * self.tendons.len()
            + 3
            + 3 * (2 * self.contacts + 1);
        Capacity {
            nworld,
            ntree: self.ntree(),
            nv: self.model.nv(),
            njmax,
            nsupport: 4 * njmax + 8 * self.flexes.len(),
            nedge: self.flexes.len(),
        }
    }
}

/// One world's mutable state.
#[derive(Debug, Clone)]
pub struct World {
    pub eq_active: Vec<bool>,
    pub eq_support: Vec<Vec<i32>>,
    /// The id each equality's rows carry: its index, until an equality before it is removed
    /// (the ids after it shift) or one is added.
    pub eq_id: Vec<i32>,
    pub dof_friction_on: Vec<bool>,
    pub tendon_friction_on: Vec<bool>,
    pub flex_on: Vec<bool>,
    pub flex_support: Vec<Vec<i32>>,
    pub awake: Vec<bool>,
}

impl World {
    pub fn new(scene: &Scene) -> World {
        World {
            eq_active: vec![true; scene.eqs.len()],
            eq_support: scene.eqs.iter().map(|e| e.0.clone()).collect(),
            eq_id: (0..scene.eqs.len() as i32).collect(),
            dof_friction_on: vec![true; scene.dof_friction.len()],
            tendon_friction_on: vec![true; scene.tendons.len()],
            flex_on: vec![true; scene.flexes.len()],
            flex_support: scene.flexes.clone(),
            awake: vec![true; scene.ntree()],
        }
    }

    fn all_awake(&self, support: &[i32]) -> bool {
        support.iter().all(|&t| self.awake[t as usize])
    }

    /// Appends this world's rows for one step: MuJoCo's order (equality, friction, limits,
    /// contacts), rows of sleeping trees left out, flex couplings over awake vertices only.
    pub fn emit(&self, scene: &Scene, rng: &mut Rng, b: &mut BatchBuilder) {
        let ntree = scene.ntree();
        for (eq, (_, nrow)) in scene.eqs.iter().enumerate() {
            let support = &self.eq_support[eq];
            if self.eq_active[eq] && self.all_awake(support) {
                for _ in 0..*nrow {
                    b.row(RowType::Equality, self.eq_id[eq], support);
                }
            }
        }
        let dof_treeid = scene.model.dof_treeid();
        for (k, &dof) in scene.dof_friction.iter().enumerate() {
            let tree = dof_treeid[dof as usize];
            if self.dof_friction_on[k] && self.awake[tree as usize] {
                b.row(RowType::FrictionDof, dof, &[tree]);
            }
        }
        for (k, support) in scene.tendons.iter().enumerate() {
            if self.tendon_friction_on[k] && self.all_awake(support) {
                b.row(RowType::FrictionTendon, k as i32, support);
            }
        }
        let awake: Vec<i32> = (0..ntree as i32)
            .filter(|&t| self.awake[t as usize])
            .collect();
        if awake.is_empty() {
            return;
        }
        for _ in 0..rng.below(3) {
            let t = awake[rng.below(awake.len())];
            let dof = scene.model.tree_dofadr()[t as usize];
            b.row(RowType::LimitJoint, dof, &[t]);
        }
        for (k, support) in scene.tendons.iter().enumerate() {
            if self.all_awake(support) && rng.chance(0.2) {
                b.row(RowType::LimitTendon, k as i32, support);
            }
        }
        let ncontact = rng.below(2 * scene.contacts + 1);
        for c in 0..ncontact {
            let a = awake[rng.below(awake.len())];
            let kind = [
                RowType::ContactFrictionless,
                RowType::ContactPyramidal,
                RowType::ContactElliptic,
            ][rng.below(3)];
            let support: Vec<i32> = if rng.chance(0.25) {
                vec![a]
            } else {
                vec![a, awake[rng.below(awake.len())]]
            };
            for _ in 0..1 + rng.below(3) {
                b.row(kind, c as i32, &support);
            }
        }
        for (f, support) in self.flex_support.iter().enumerate() {
            if self.flex_on[f] {
                let live: Vec<i32> = support
                    .iter()
                    .copied()
                    .filter(|&t| self.awake[t as usize])
                    .collect();
                if !live.is_empty() {
                    b.rowless(f as i32, &live);
                }
            }
        }
    }
}

/// What the mutations did, for checking that every source was exercised.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub eq_toggles: u64,
    pub sleeps: u64,
    pub partial_sleeps: u64,
    pub wakes: u64,
    pub edits: u64,
    pub unreported: u64,
    pub capacity: u64,
    pub model_edits: u64,
}

/// Applies one random mutation to world `w` and reports it in `events` (or not, with
/// probability `1 − report`). `tree_island` is the world's last output, so sleep takes whole
/// islands as MuJoCo does (and now and then only part of one).
#[allow(clippy::too_many_arguments)] // a test helper: every argument is a different role
pub fn mutate(
    scene: &Scene,
    world: &mut World,
    w: u32,
    tree_island: &[i32],
    rng: &mut Rng,
    report: f64,
    events: &mut Events,
    tally: &mut Tally,
) {
    let ntree = scene.ntree();
    let reported = rng.chance(report);
    if !reported {
        tally.unreported += 1;
    }
    let ev = |e: &mut Events, f: &dyn Fn(&mut Events)| {
        if reported {
            f(e)
        }
    };
    match rng.below(9) {
        0 | 1 if !scene.eqs.is_empty() => {
            let eq = rng.below(scene.eqs.len());
            world.eq_active[eq] = !world.eq_active[eq];
            let active = world.eq_active[eq];
            ev(events, &|e| {
                e.eq_active(w, eq as i32, active);
            });
            tally.eq_toggles += 1;
        }
        2 | 3 if scene.sleeps => {
            // Sleep an island (or part of one).
            let t = rng.below(ntree);
            if !world.awake[t] {
                return;
            }
            let island = tree_island[t];
            let partial = rng.chance(0.1);
            let mut group: Vec<usize> = if island < 0 {
                vec![t]
            } else {
                (0..ntree).filter(|&u| tree_island[u] == island).collect()
            };
            if partial && group.len() > 1 {
                group.truncate(1 + rng.below(group.len() - 1));
                tally.partial_sleeps += 1;
            }
            for u in group {
                world.awake[u] = false;
                ev(events, &|e| {
                    e.sleep(w, u as i32);
                });
            }
            tally.sleeps += 1;
        }
        4 => {
            // Wake everything asleep, or one tree of it.
            let asleep: Vec<usize> = (0..ntree).filter(|&u| !world.awake[u]).collect();
            if asleep.is_empty() {
                return;
            }
            let group = if rng.chance(0.8) {
                asleep
            } else {
                vec![asleep[rng.below(asleep.len())]]
            };
            for u in group {
                world.awake[u] = true;
                ev(events, &|e| {
                    e.wake(w, u as i32);
                });
            }
            tally.wakes += 1;
        }
        5 if !scene.eqs.is_empty() && rng.chance(0.25) => {
            // An equality removed or added before `eq`: its rows keep their support under
            // another id (which may be one the policy classifies dynamic).
            let eq = rng.below(scene.eqs.len());
            let old = world.eq_id[eq];
            let new = if old > 0 && rng.chance(0.5) {
                old - 1
            } else {
                old + 1
            };
            world.eq_id[eq] = new;
            ev(events, &|e| {
                let at = old.min(new);
                let edit = if new < old {
                    Edit::EqRemoved { eq: at }
                } else {
                    Edit::EqAdded { eq: at }
                };
                e.edit(Some(w), edit);
            });
            tally.edits += 1;
        }
        5 if !scene.eqs.is_empty() => {
            let eq = rng.below(scene.eqs.len());
            let k = 1 + rng.below(3).min(ntree - 1);
            world.eq_support[eq] = trees(rng, ntree, k);
            ev(events, &|e| {
                e.edit(Some(w), Edit::EqRetargeted { eq: eq as i32 });
            });
            tally.edits += 1;
        }
        6 if !scene.dof_friction.is_empty() => {
            let k = rng.below(scene.dof_friction.len());
            world.dof_friction_on[k] = !world.dof_friction_on[k];
            let (dof, on) = (scene.dof_friction[k], world.dof_friction_on[k]);
            ev(events, &|e| {
                e.edit(Some(w), Edit::DofFriction { dof, on });
            });
            tally.edits += 1;
        }
        7 => {
            let k = rng.below(scene.tendons.len());
            world.tendon_friction_on[k] = !world.tendon_friction_on[k];
            let on = world.tendon_friction_on[k];
            ev(events, &|e| {
                e.edit(
                    Some(w),
                    Edit::TendonFriction {
                        tendon: k as i32,
                        on,
                    },
                );
            });
            tally.edits += 1;
        }
        8 if !scene.flexes.is_empty() => {
            let f = rng.below(scene.flexes.len());
            if rng.chance(0.5) {
                world.flex_on[f] = !world.flex_on[f];
                ev(events, &|e| {
                    e.edit(Some(w), Edit::FlexStiffness { flex: f as i32 });
                });
            } else {
                let k = 2 + rng.below(6);
                world.flex_support[f] = trees(rng, ntree, k);
                ev(events, &|e| {
                    e.edit(Some(w), Edit::FlexRigidity { flex: f as i32 });
                });
            }
            tally.edits += 1;
        }
        _ => {}
    }
}

/// Builds one step's batch for every world.
pub fn batch(scene: &Scene, worlds: &[World], rng: &mut Rng) -> Batch {
    let mut b = Batch::builder();
    for world in worlds {
        world.emit(scene, rng, &mut b);
        b.end_world();
    }
    b.finish()
}

/// [`batch`], except that each world `w` with `repeat[w]` gets exactly its rows and rowless
/// hyperedges of `prev` (the last step's batch, of at least `w + 1` worlds): a world whose
/// state did not change emitting the same rows again, as resting worlds do.
pub fn batch_repeating(
    scene: &Scene,
    worlds: &[World],
    prev: &Batch,
    repeat: &[bool],
    rng: &mut Rng,
) -> Batch {
    let mut b = Batch::builder();
    for (w, world) in worlds.iter().enumerate() {
        if repeat[w] && w < prev.nworld() {
            for r in prev.rows_of(w) {
                b.row(prev.row_type[r], prev.row_id[r], prev.row_support_of(r));
            }
            b.edges_from(prev, w);
        } else {
            world.emit(scene, rng, &mut b);
        }
        b.end_world();
    }
    b.finish()
}

/// Reverses the row order inside each world (rowless hyperedges too): the same hypergraph, so
/// the partition is unchanged while the static stream no longer replays in order.
pub fn reversed(batch: &Batch) -> Batch {
    let mut b = Batch::builder();
    for w in 0..batch.nworld() {
        for r in batch.rows_of(w).rev() {
            b.row(batch.row_type[r], batch.row_id[r], batch.row_support_of(r));
        }
        for e in batch.edges_of(w).rev() {
            b.rowless_of(
                batch.edge_kind[e],
                batch.edge_id[e],
                batch.edge_support_of(e),
            );
        }
        b.end_world();
    }
    b.finish()
}
