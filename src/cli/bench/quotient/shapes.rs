//! The quotient bench's workloads: the synthetic shapes of about 0 %, 50 %, 90 % and 99 % static
//! rows, the traces at the counts of issue 4's figures and the mostly static traces, and each
//! shape's step sequences.

use super::super::sequence::{self, Sequence};
use super::super::{Make, Shape, memory, synthetic_keys, trace_dir, trace_shape, trace_shape_name};
use archipelago::quotient::Policy;
use archipelago::synth::Rng;
use archipelago::trace::Trace;
use archipelago::{Batch, Capacity, Model, RowType};

/// The traces of issue 4's figures, at the world counts of its MuJoCo Warp figures (as in the
/// plain bench's list, [`super::super::shapes()`], which also has replicate_particle at 256
/// worlds).
const TRACES: [(&str, usize); 5] = [
    ("flex_trampoline", 64),
    ("aloha_clutter", 2048),
    ("replicate_particle", 1024),
    ("benchmark_humanoid200", 256),
    ("humanoid_100_humanoids", 256),
];

/// Traces whose rows are mostly static (default policy, over all their steps): hammock 98%,
/// flex_poncho_edgeequality 91%; tiled to these world counts.
const STATIC_TRACES: [(&str, usize); 2] = [("hammock", 1024), ("flex_poncho_edgeequality", 64)];

/// A synthetic shape's generator: its batch of the given worlds from a seed (the seed varies
/// the dynamic rows).
type Generator = fn(u64, usize) -> Shape;

/// The synthetic shapes: name, generator, seed of the shape itself, worlds by default.
const SYNTHETIC: [(&str, Generator, u64, usize); 4] = [
    ("q:contacts-0%", contacts_only, 11, 4096),
    ("q:humanoid-50%", humanoid_like, 12, 1024),
    ("q:mechanism-90%", mechanism, 13, 1024),
    ("q:cloth-99%", cloth_like, 14, 256),
];

/// Rest fractions of a synthetic shape's step sequences.
const SYNTHETIC_REST: [f64; 2] = [0.0, 0.5];

/// Shares of the worlds that switch an equality off and on at every step, in the toggling
/// sequences of the synthetic shapes that have it (issue 5: static against dynamic
/// equalities for toggle-heavy worlds).
const TOGGLING_SHARES: [f64; 2] = [0.1, 1.0];

fn shape(name: &str, model: Model, batch: Batch) -> Shape {
    Shape {
        name: name.to_string(),
        model,
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

/// Contacts only (0% static): pairs of nearby trees, 4 pyramidal rows each, some against the
/// floor.
fn contacts_only(seed: u64, nworld: usize) -> Shape {
    let (ntree, rows) = (64, 64);
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        let mut k = 0;
        while k < rows {
            let a = rng.below(ntree) as i32;
            let support = if rng.below(4) == 0 {
                vec![a]
            } else {
                vec![a, ((a as usize + 1 + rng.below(6)) % ntree) as i32]
            };
            for _ in 0..4 {
                b.row(RowType::ContactPyramidal, k, &support);
                k += 1;
            }
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![6; ntree]).expect("valid");
    shape("q:contacts-0%", model, b.finish())
}

/// Humanoid-like (about 50% static): 32 trees of 4 dofs, two friction-loss rows per tree, then
/// limits and contacts.
fn humanoid_like(seed: u64, nworld: usize) -> Shape {
    let ntree = 32;
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        for t in 0..ntree as i32 {
            b.row(RowType::FrictionDof, 4 * t, &[t]);
            b.row(RowType::FrictionDof, 4 * t + 1, &[t]);
        }
        for k in 0..8 {
            b.row(RowType::LimitJoint, k, &[rng.below(ntree) as i32]);
        }
        for k in 0..14 {
            let a = rng.below(ntree) as i32;
            let c = ((a as usize + 1 + rng.below(3)) % ntree) as i32;
            for _ in 0..4 {
                b.row(RowType::ContactPyramidal, k, &[a, c]);
            }
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![4; ntree]).expect("valid");
    shape("q:humanoid-50%", model, b.finish())
}

/// Mechanism (about 90% static): 8 closed loops of 8 trees each, every link a connect equality
/// of 3 rows, then a few contacts.
fn mechanism(seed: u64, nworld: usize) -> Shape {
    let ntree = 64;
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        for m in 0..8 {
            for i in 0..8 {
                let (a, c) = (8 * m + i, 8 * m + (i + 1) % 8);
                for _ in 0..3 {
                    b.row(RowType::Equality, a, &[a, c]);
                }
            }
        }
        for k in 0..5 {
            let a = rng.below(ntree) as i32;
            let c = rng.below(ntree) as i32;
            for _ in 0..4 {
                b.row(RowType::ContactPyramidal, k, &[a, c]);
            }
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![1; ntree]).expect("valid");
    shape("q:mechanism-90%", model, b.finish())
}

/// Cloth-like (about 99% static): a 20×20 grid of 3-dof vertices coupled by one flex-edge
/// equality row per edge, then a few floor contacts.
fn cloth_like(seed: u64, nworld: usize) -> Shape {
    let side = 20usize;
    let ntree = side * side;
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        let mut eq = 0;
        for y in 0..side {
            for x in 0..side {
                let t = (y * side + x) as i32;
                if x + 1 < side {
                    b.row(RowType::Equality, eq, &[t, t + 1]);
                    eq += 1;
                }
                if y + 1 < side {
                    b.row(RowType::Equality, eq, &[t, t + side as i32]);
                    eq += 1;
                }
            }
        }
        for k in 0..8 {
            b.row(RowType::ContactPyramidal, k, &[rng.below(ntree) as i32]);
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&vec![3; ntree]).expect("valid");
    shape("q:cloth-99%", model, b.finish())
}

/// The quotient section's shapes: the four synthetic static shares, then issue 4's traces,
/// then the mostly static traces, each at its default world count or at `worlds` (a trace's
/// worlds are its recorded ones repeated; its name says how many).
pub(in super::super) fn shapes(worlds: Option<usize>) -> Vec<(String, Make)> {
    let mut out: Vec<(String, Make)> = SYNTHETIC
        .into_iter()
        .map(|(n, f, seed, nworld)| {
            let nworld = worlds.unwrap_or(nworld);
            let make = move || {
                // One world first: what each of the shape's worlds takes.
                let one = f(seed, 1);
                let rows = Capacity::fit(&one.model, &one.batch).njmax;
                memory::check("bench", n, nworld, one.model.ntree(), rows)?;
                Ok(Some(f(seed, nworld)))
            };
            (n.to_string(), Box::new(make) as Make)
        })
        .collect();
    for (scene, nworld) in TRACES.into_iter().chain(STATIC_TRACES) {
        let nworld = worlds.unwrap_or(nworld);
        let name = format!("trace:{scene}x{nworld}");
        let label = name.clone();
        let make = move || trace_shape(&label, scene, nworld);
        out.push((name, Box::new(make) as Make));
    }
    out
}

/// The step sequences of the shape listed as `name` (see [`shapes`]; `worlds` as there): for
/// a synthetic shape, one per rest fraction over four versions of it, then, where its worlds
/// have equality [`sequence::TOGGLED_EQ`], one per toggling share; for a trace, its recorded
/// steps. With `asleep` (`--asleep SHARE` and the policy), a synthetic shape's one sleeping
/// sequence at that share ([`Sequence::sleeping`]) instead, and none for a trace (its recorded
/// worlds are awake).
pub(super) fn sequences(
    name: &str,
    worlds: Option<usize>,
    asleep: Option<(f64, &Policy)>,
) -> archipelago::Result<Vec<Sequence>> {
    if let Some(&(_, f, seed, nworld)) = SYNTHETIC.iter().find(|(n, ..)| *n == name) {
        let nworld = worlds.unwrap_or(nworld);
        let shape = f(seed, nworld);
        let mut versions = vec![shape.batch];
        versions.extend((1..4).map(|k| f(seed + 1000 * k, nworld).batch));
        let model = &shape.model;
        if let Some((share, policy)) = asleep {
            let classifier = policy.classifier_for(&versions[0]);
            let seq = Sequence::sleeping(model.clone(), versions, share, &classifier);
            return Ok(vec![seq]);
        }
        let mut out: Vec<Sequence> = SYNTHETIC_REST
            .iter()
            .map(|&rest| Sequence::synthetic(model.clone(), versions.clone(), rest))
            .collect();
        let b = &versions[0];
        let toggles = (0..b.nrow())
            .any(|r| b.row_type[r].is_equality() && b.row_id[r] == sequence::TOGGLED_EQ);
        if toggles {
            out.extend(
                TOGGLING_SHARES
                    .iter()
                    .map(|&share| Sequence::toggling(model.clone(), versions.clone(), share)),
            );
        }
        return Ok(out);
    }
    let Some((scene, nworld)) = trace_shape_name(name).filter(|_| asleep.is_none()) else {
        return Ok(Vec::new());
    };
    let path = trace_dir().join(format!("{scene}.npz"));
    Ok(vec![Sequence::trace(Trace::open(&path)?, nworld)])
}
