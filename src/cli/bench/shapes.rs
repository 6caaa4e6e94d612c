//! The bench's workloads: the plain bench's generated shapes (random, chains, particles, the
//! synthetic contact keys of the deterministic mode) and the committed traces tiled to a world
//! count; what each shape is, in a line.

use archipelago::order::RowKeys;
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Model, RowType};

use super::super::memory;

/// One benchmark shape.
pub(super) struct Shape {
    pub(super) name: String,
    pub(super) model: Model,
    pub(super) batch: Batch,
    /// Canonical-order keys of the rows (deterministic mode).
    pub(super) keys: RowKeys,
    /// The batch the quotient steps first, and the events that lead from it to `batch` (a
    /// shape put partly asleep: see `bench/asleep.rs`).
    pub(super) waking: Option<(Batch, invalidation::Events)>,
}

/// Keys for synthetic contacts: tree `t` carries geoms `2t + 1` and `2t + 2`, geom 0 is the
/// floor; the collision id counts earlier rows of the same pair in the world.
pub(super) fn synthetic_keys(batch: &Batch) -> RowKeys {
    let mut keys = RowKeys::with_capacity(batch.nrow());
    for w in 0..batch.nworld() {
        let mut seen: std::collections::HashMap<[i32; 2], i32> = Default::default();
        for r in batch.rows_of(w) {
            if !batch.row_type[r].is_contact() {
                keys.push_other();
                continue;
            }
            let s = batch.row_support_of(r);
            let a = 2 * s[0] + 1;
            let b = s.get(1).map_or(0, |t| 2 * t + 2);
            let pair = [a.min(b), a.max(b)];
            let n = seen.entry(pair).or_insert(0);
            keys.push_contact(pair, *n);
            *n += 1;
        }
    }
    keys
}

/// Trees with a free joint (6 dofs) every fourth tree, hinges otherwise.
fn robot_model(ntree: usize) -> Model {
    let dofnum: Vec<i32> = (0..ntree).map(|t| if t % 4 == 0 { 6 } else { 1 }).collect();
    Model::from_dofnum(&dofnum).expect("valid dof counts")
}

/// Contact-like rows: each contact couples a tree with a near neighbour (or the floor) and
/// emits `rows_per_contact` rows; a few equality and limit rows are mixed in.
fn contacts(
    rng: &mut Rng,
    b: &mut archipelago::BatchBuilder,
    ntree: usize,
    rows: usize,
    window: usize,
    rows_per_contact: usize,
) {
    let mut k = 0;
    while k < rows {
        let a = rng.below(ntree);
        let roll = rng.below(20);
        if roll == 0 {
            b.row(
                RowType::Equality,
                k as i32,
                &[a as i32, ((a + 1) % ntree) as i32],
            );
            k += 1;
        } else if roll == 1 {
            b.row(RowType::LimitJoint, k as i32, &[a as i32]);
            k += 1;
        } else {
            let support = if roll < 5 {
                vec![a as i32] // against the floor
            } else {
                let d = 1 + rng.below(window.max(1));
                vec![a as i32, ((a + d) % ntree) as i32]
            };
            for _ in 0..rows_per_contact.min(rows - k) {
                b.row(RowType::ContactPyramidal, k as i32, &support);
                k += 1;
            }
        }
    }
    b.end_world();
}

fn random_shape(name: &'static str, nworld: usize, ntree: usize, rows: usize, seed: u64) -> Shape {
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for _ in 0..nworld {
        contacts(&mut rng, &mut b, ntree, rows, 8, 4);
    }
    let batch = b.finish();
    Shape {
        name: name.to_string(),
        model: robot_model(ntree),
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

/// One world whose trees form a single path, in a random order (the worst case for
/// propagation: diameter ntree - 1).
fn chain_shape(name: &'static str, ntree: usize, seed: u64) -> Shape {
    let mut rng = Rng::new(seed);
    let mut perm: Vec<i32> = (0..ntree as i32).collect();
    rng.shuffle(&mut perm);
    let mut b = Batch::builder();
    for i in 0..ntree.saturating_sub(1) {
        b.row(RowType::Equality, i as i32, &[perm[i], perm[i + 1]]);
    }
    b.end_world();
    let batch = b.finish();
    Shape {
        name: name.to_string(),
        model: Model::from_dofnum(&vec![1; ntree]).expect("valid"),
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

/// Particle-like: `ntree` 3-dof particles in a cube, contacts between grid neighbours and with
/// the floor, 4 pyramidal rows each.
fn particle_shape(
    name: &'static str,
    nworld: usize,
    ntree: usize,
    rows: usize,
    seed: u64,
) -> Shape {
    let mut rng = Rng::new(seed);
    let side = (ntree as f64).cbrt().ceil() as usize;
    let mut b = Batch::builder();
    for _ in 0..nworld {
        let mut k = 0;
        while k < rows {
            let a = rng.below(ntree);
            let step = [1, side, side * side][rng.below(3)];
            let support = if rng.below(10) == 0 || a + step >= ntree {
                vec![a as i32]
            } else {
                vec![a as i32, (a + step) as i32]
            };
            for _ in 0..4.min(rows - k) {
                b.row(RowType::ContactPyramidal, k as i32, &support);
                k += 1;
            }
        }
        b.end_world();
    }
    let batch = b.finish();
    Shape {
        name: name.to_string(),
        model: Model::from_dofnum(&vec![3; ntree]).expect("valid"),
        keys: synthetic_keys(&batch),
        batch,
        waking: None,
    }
}

pub(super) type Make = Box<dyn Fn() -> super::super::Result<Option<Shape>>>;
type Synthetic = (&'static str, fn() -> Shape);

pub(super) fn shapes() -> Vec<(String, Make)> {
    let synthetic: Vec<Synthetic> = vec![
        ("8192x64", || random_shape("8192x64", 8192, 64, 64, 1)),
        ("aloha-2048x22", || {
            random_shape("aloha-2048x22", 2048, 22, 100, 2)
        }),
        ("1024x256", || random_shape("1024x256", 1024, 256, 256, 3)),
        ("humanoid-256x200", || {
            random_shape("humanoid-256x200", 256, 200, 1090, 9)
        }),
        ("64x1024", || random_shape("64x1024", 64, 1024, 1024, 4)),
        ("1x4096", || random_shape("1x4096", 1, 4096, 4096, 5)),
        ("1x4096-chain", || chain_shape("1x4096-chain", 4096, 6)),
        ("particle-1024x1000", || {
            particle_shape("particle-1024x1000", 1024, 1000, 3960, 7)
        }),
        ("1024x4096", || {
            random_shape("1024x4096", 1024, 4096, 4096, 8)
        }),
        // Past the shared-memory sorts' 8192-row tile: deterministic mode's global radix sort.
        ("16x4096-16k", || {
            random_shape("16x4096-16k", 16, 4096, 16384, 10)
        }),
    ];
    let mut all: Vec<(String, Make)> = synthetic
        .into_iter()
        .map(|(n, f)| (n.to_string(), Box::new(move || Ok(Some(f()))) as Make))
        .collect();
    // Real MuJoCo 4.0.0 traces, their busiest step tiled to the world counts of issue 4's
    // MuJoCo Warp figures.
    for (scene, nworld) in [
        ("aloha_clutter", 2048),
        ("replicate_particle", 1024),
        ("replicate_particle", 256),
        ("benchmark_humanoid200", 256),
        ("humanoid_100_humanoids", 256),
        ("flex_trampoline", 64),
    ] {
        let name = format!("trace:{scene}x{nworld}");
        let label = name.clone();
        all.push((name, Box::new(move || trace_shape(&label, scene, nworld))));
    }
    all
}

/// The trace and world count a shape called `trace:NAMExN` names (N at least 1).
pub(super) fn trace_shape_name(name: &str) -> Option<(&str, usize)> {
    let (scene, n) = name.strip_prefix("trace:")?.rsplit_once('x')?;
    let n = n.parse::<usize>().ok().filter(|&n| n > 0)?;
    (!scene.is_empty()).then_some((scene, n))
}

/// Where the committed traces are: `$ARCHIPELAGO_ROOT/traces`, else `./traces`.
pub(super) fn trace_dir() -> std::path::PathBuf {
    std::env::var_os("ARCHIPELAGO_ROOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("."))
        .join("traces")
}

/// The busiest step of trace `scene` with its worlds repeated to `nworld` worlds (None when
/// the trace is not there).
pub(super) fn trace_shape(
    name: &str,
    scene: &str,
    nworld: usize,
) -> super::super::Result<Option<Shape>> {
    let path = trace_dir().join(format!("{scene}.npz"));
    if !path.exists() {
        return Ok(None);
    }
    let tr = archipelago::trace::Trace::open(&path)?;
    let step = (0..tr.nstep()).max_by_key(|&s| tr.nrow(s)).unwrap_or(0);
    let mut src = Batch::default();
    tr.batch(step, &mut src);
    let rows = Capacity::fit(tr.model(), &src).njmax;
    memory::check("bench", name, nworld, tr.model().ntree(), rows)?;
    let mut src_keys = RowKeys::default();
    tr.row_keys(step, &mut src_keys);
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    for w in 0..nworld {
        if src.nworld() == 0 {
            b.end_world();
            continue;
        }
        let sw = w % src.nworld();
        b.world_from(&src, sw);
        for r in src.rows_of(sw) {
            keys.push_contact(src_keys.geom[r], src_keys.colid[r]);
        }
    }
    Ok(Some(Shape {
        name: format!("{name} (step {step} of {})", tr.nstep()),
        model: tr.model().clone(),
        batch: b.finish(),
        keys,
        waking: None,
    }))
}

/// Static facts of a shape: per-world rows and support entries, arity, index dtype.
pub(super) fn describe(s: &Shape) -> String {
    let b = &s.batch;
    let nw = b.nworld().max(1);
    let entries = b.row_support.len() + b.edge_support.len();
    let hyper = b.nrow() + b.nedge();
    let max_arity = (0..b.nrow())
        .map(|r| b.row_support_of(r).len())
        .chain((0..b.nedge()).map(|e| b.edge_support_of(e).len()))
        .max()
        .unwrap_or(0);
    format!(
        "nworld {} · ntree {} · nv {} · rows/world {:.0} · entries/world {:.0} · arity mean {:.2} max {} · index i32",
        b.nworld(),
        s.model.ntree(),
        s.model.nv(),
        b.nrow() as f64 / nw as f64,
        entries as f64 / nw as f64,
        entries as f64 / hyper.max(1) as f64,
        max_arity
    )
}
