//! Seeded, reproducible generators of batches: the shapes the conformance tests, benches and the
//! demo run on.
//!
//! A [`Spec`] describes a batch (worlds, trees, rows per world, the topology of each world's
//! hyperedges and the noise laid over it); [`batch`] turns a spec and a seed into a
//! ([`Model`], [`Batch`]) pair, always the same pair for the same arguments. [`corpus`] yields an
//! endless stream of varied cases for conformance testing.
//!
//! ```
//! use archipelago::synth::{self, Spec, Topology};
//! let spec = Spec { nworld: 4, ntree: 30, rows: 20, topology: Topology::Chain, ..Spec::default() };
//! let (model, batch) = synth::batch(&spec, 7);
//! assert_eq!((model.ntree(), batch.nworld()), (30, 4));
//! assert_eq!(synth::batch(&spec, 7), (model, batch)); // reproducible
//! ```

use crate::model::Model;
use crate::rows::{Batch, BatchBuilder, EdgeKind, RowType};

/// A small, fast, seedable generator (splitmix64): reproducible across platforms and releases,
/// which is all the generators need.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // Multiply-shift (Lemire): unbiased enough for test data, no modulo.
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }

    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// Shuffles `items` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// `k` distinct values of `0..n` in random order (all `n` of them when `k > n`).
    ///
    /// ```
    /// use archipelago::synth::Rng;
    /// let mut picked = Rng::new(3).distinct(10, 4);
    /// assert_eq!(picked.len(), 4);
    /// picked.sort();
    /// picked.dedup();
    /// assert!(picked.len() == 4 && picked.iter().all(|&v| v < 10));
    /// ```
    pub fn distinct(&mut self, n: usize, k: usize) -> Vec<usize> {
        let k = k.min(n);
        let mut all: Vec<usize> = (0..n).collect();
        // A partial Fisher–Yates: only the first `k` places are drawn.
        for i in 0..k {
            let j = i + self.below(n - i);
            all.swap(i, j);
        }
        all.truncate(k);
        all
    }
}

/// The structure of a world's hyperedges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Topology {
    /// Random rows of one to three trees: many small islands.
    Sparse,
    /// Random pairs, several per tree: one or a few large islands.
    Dense,
    /// Paths through the trees in a random order: long diameter (worst case for propagation).
    Chain,
    /// A few hubs, each coupled to many leaves.
    Star,
    /// Hyperedges wider than a 32-lane warp, up to 256 trees.
    Wide,
    /// Rings with redundant chords.
    Cycles,
    /// Pairs of clusters joined by a single bridge row, sometimes deleted.
    Bridges,
    /// Only one-tree rows (limits, contacts with static bodies): every touched tree alone.
    OneTree,
    /// Contact-like rows: pairs repeated as the rows of a pyramidal or elliptic cone.
    Contacts,
    /// Each world picks one of the above: worlds of one batch differ in shape.
    Mixed,
    /// A scene-like world: equality chains, one-tree limits and friction, sparse couplings and
    /// (mostly) contacts, with rows in MuJoCo's efc order (sorted by type).
    Scene,
}

impl Topology {
    /// Every single-structure topology (all but [`Topology::Mixed`] and [`Topology::Scene`]).
    pub const PURE: [Topology; 9] = [
        Topology::Sparse,
        Topology::Dense,
        Topology::Chain,
        Topology::Star,
        Topology::Wide,
        Topology::Cycles,
        Topology::Bridges,
        Topology::OneTree,
        Topology::Contacts,
    ];
}

/// What to generate. Every field is a knob; [`Spec::default`] is a small mixed batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Worlds in the batch.
    pub nworld: usize,
    /// Trees in the model.
    pub ntree: usize,
    /// Rows per world (the mean when [`Spec::vary_rows`] is set).
    pub rows: usize,
    /// Hyperedge structure of each world.
    pub topology: Topology,
    /// Trees get between 1 and this many dofs (1 gives `nv == ntree`).
    pub max_dofnum: i32,
    /// Fraction of trees left out of a world's hyperedges (sleeping or free trees).
    pub inactive: f64,
    /// Fraction of worlds with no rows at all.
    pub empty_worlds: f64,
    /// Rowless hyperedges (couplings without rows, of every kind) per world, at most.
    pub rowless: usize,
    /// Worlds draw their row count from `0..=2·rows` instead of exactly `rows`.
    pub vary_rows: bool,
    /// Lay noise over the rows: duplicated rows, reversed supports, repeated trees inside a
    /// support, shuffled row order.
    pub noise: bool,
    /// The model finds islands in worlds without rows ([`Model::islands_without_rows`]).
    pub islands_without_rows: bool,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            nworld: 8,
            ntree: 32,
            rows: 40,
            topology: Topology::Mixed,
            max_dofnum: 6,
            inactive: 0.1,
            empty_worlds: 0.05,
            rowless: 1,
            vary_rows: true,
            noise: true,
            islands_without_rows: false,
        }
    }
}

impl Spec {
    /// A realistic batch: `nworld` worlds of `ntree` trees with about `rows` rows each, mostly
    /// contacts plus equalities, limits and friction ([`Topology::Scene`]).
    pub fn realistic(nworld: usize, ntree: usize, rows: usize) -> Spec {
        Spec {
            nworld,
            ntree,
            rows,
            topology: Topology::Scene,
            max_dofnum: 6,
            inactive: 0.15,
            empty_worlds: 0.02,
            rowless: 1,
            vary_rows: true,
            noise: true,
            islands_without_rows: false,
        }
    }
}

/// One generated case: the spec and seed it came from, and the pair they give.
#[derive(Debug, Clone)]
pub struct Case {
    /// The spec.
    pub spec: Spec,
    /// The seed given to [`batch`].
    pub seed: u64,
    /// The model.
    pub model: Model,
    /// The rows.
    pub batch: Batch,
}

/// The model of `spec`: `ntree` trees with 1..=`max_dofnum` dofs each.
pub fn model(spec: &Spec, rng: &mut Rng) -> Model {
    let max = spec.max_dofnum.max(1) as usize;
    // Mostly small trees (hinges, slides) with the odd free body, as in real scenes.
    let dofnum: Vec<i32> = (0..spec.ntree)
        .map(|_| {
            if rng.chance(0.7) {
                1
            } else {
                rng.between(1, max) as i32
            }
        })
        .collect();
    Model::from_dofnum(&dofnum)
        .expect("every generated tree owns at least one dof")
        .with_islands_without_rows(spec.islands_without_rows)
}

/// The (model, batch) pair of `spec` and `seed`: the same arguments always give the same pair.
pub fn batch(spec: &Spec, seed: u64) -> (Model, Batch) {
    let mut rng = Rng::new(seed);
    let model = model(spec, &mut rng);
    let mut b = Batch::builder();
    for _ in 0..spec.nworld {
        world(spec, &mut rng, &mut b);
    }
    (model, b.finish())
}

/// The conformance corpus every mode is checked on: the first [`CONFORMANCE_CASES`] cases of
/// `corpus(CONFORMANCE_SEED)` (the CPU modes in every CI run; the GPU modes on a device).
pub fn conformance() -> impl Iterator<Item = Case> {
    corpus(CONFORMANCE_SEED).take(CONFORMANCE_CASES)
}

/// Seed of the conformance corpus.
pub const CONFORMANCE_SEED: u64 = 0x5eed;

/// Size of the conformance corpus.
pub const CONFORMANCE_CASES: usize = 20_500;

/// An endless iterator of varied cases for conformance tests: sizes from `ntree` 0 up to a few
/// hundred, from no worlds up to a dozen, every topology, with and without noise. Take as many as
/// needed.
///
/// ```
/// let cases: Vec<_> = archipelago::synth::corpus(1).take(3).collect();
/// assert_eq!(cases.len(), 3);
/// ```
pub fn corpus(seed: u64) -> impl Iterator<Item = Case> {
    let mut rng = Rng::new(seed ^ 0x0a7c_41be_1a90_0000);
    std::iter::from_fn(move || {
        let mut spec = corpus_spec(&mut rng);
        let seed = rng.next_u64();
        // One case in eight finds islands without rows; taken from the seed, so that every
        // other draw (and so every case of a corpus from before the flag) stays as it was.
        spec.islands_without_rows = seed.is_multiple_of(8);
        let (model, batch) = batch(&spec, seed);
        Some(Case {
            spec,
            seed,
            model,
            batch,
        })
    })
}

fn corpus_spec(rng: &mut Rng) -> Spec {
    let ntree = match rng.below(20) {
        0 => 0,
        1 => 1,
        2..=4 => rng.between(2, 6),
        5..=14 => rng.between(7, 40),
        15..=18 => rng.between(41, 100),
        _ => rng.between(101, 300),
    };
    let topology = if rng.chance(0.2) {
        Topology::Mixed
    } else if rng.chance(0.15) {
        Topology::Scene
    } else {
        rng.pick(&Topology::PURE)
    };
    let rows = match rng.below(4) {
        0 => rng.between(0, 4),
        1 => rng.between(1, ntree.max(1)),
        _ => rng.between(ntree / 2, 2 * ntree + 4),
    };
    Spec {
        nworld: if rng.chance(0.1) {
            rng.between(0, 1)
        } else {
            rng.between(1, 12)
        },
        ntree,
        rows,
        topology,
        max_dofnum: rng.pick(&[1, 1, 3, 6]),
        inactive: rng.pick(&[0.0, 0.0, 0.1, 0.5, 0.9]),
        empty_worlds: rng.pick(&[0.0, 0.1, 0.3]),
        rowless: rng.pick(&[0, 0, 1, 3]),
        vary_rows: rng.chance(0.5),
        noise: rng.chance(0.6),
        islands_without_rows: false,
    }
}

/// A row in the making: its type, id and support.
#[derive(Debug)]
struct Row {
    kind: RowType,
    id: i32,
    support: Vec<i32>,
}

/// Appends one world of `spec` to `b`.
fn world(spec: &Spec, rng: &mut Rng, b: &mut BatchBuilder) {
    let ntree = spec.ntree;
    let nrow = if rng.chance(spec.empty_worlds) || ntree == 0 {
        0
    } else if spec.vary_rows {
        rng.between(0, 2 * spec.rows)
    } else {
        spec.rows
    };
    // The trees this world's hyperedges may touch; the rest stay unconstrained.
    let mut active: Vec<i32> = (0..ntree as i32)
        .filter(|_| !rng.chance(spec.inactive))
        .collect();
    if active.is_empty() && ntree > 0 {
        active.push(rng.below(ntree) as i32);
    }
    rng.shuffle(&mut active);
    let topology = match spec.topology {
        Topology::Mixed if rng.chance(0.1) => Topology::Scene,
        Topology::Mixed => rng.pick(&Topology::PURE),
        t => t,
    };
    let mut rows: Vec<Row> = Vec::with_capacity(nrow);
    if topology == Topology::Scene {
        scene(&active, nrow, rng, &mut rows);
    } else {
        typed_rows(topology, &active, nrow, None, rng, &mut rows);
    }
    if spec.noise {
        add_noise(rng, &mut rows);
    }
    if topology == Topology::Scene {
        // MuJoCo emits equality, friction, limit, then contact rows.
        rows.sort_by_key(|row| row.kind);
    }
    for row in &rows {
        b.row(row.kind, row.id, &row.support);
    }
    let nedge = if spec.rowless == 0 || ntree == 0 {
        0
    } else {
        rng.between(0, spec.rowless)
    };
    for _ in 0..nedge {
        // Mostly a patch of trees; rarely a flex whose trees are all asleep (empty).
        let width = if rng.chance(0.05) {
            0
        } else {
            rng.between(1, active.len().min(40))
        };
        let start = rng.below(active.len());
        let support: Vec<i32> = (0..width)
            .map(|k| active[(start + k) % active.len()])
            .collect();
        // Every kind couples alike; the kind follows the id so that the draws stay as they were.
        let id = rng.below(4);
        b.rowless_of(EdgeKind::ALL[id], id as i32, &support);
    }
    b.end_world();
}

/// Appends `nrow` rows of `topology` (a single-structure one); types from `kinds` when given,
/// contact types for [`Topology::Contacts`], otherwise a realistic mix.
fn typed_rows(
    topology: Topology,
    active: &[i32],
    nrow: usize,
    kinds: Option<&[RowType]>,
    rng: &mut Rng,
    rows: &mut Vec<Row>,
) {
    if nrow == 0 || active.is_empty() {
        return;
    }
    for support in supports(topology, active, nrow, rng) {
        let kind = match (kinds, topology) {
            (Some(kinds), _) => rng.pick(kinds),
            (None, Topology::Contacts) => RowType::ALL[rng.between(5, 7)],
            (None, _) => rng.pick(&TYPE_MIX),
        };
        rows.push(Row {
            kind,
            id: rng.below(64) as i32,
            support,
        });
    }
}

/// A scene-like world: a share of the rows for each kind of constraint a real scene has.
fn scene(active: &[i32], nrow: usize, rng: &mut Rng, rows: &mut Vec<Row>) {
    let equalities = nrow / 10;
    let limits = nrow / 10;
    let friction = nrow / 20;
    let tendons = nrow / 20;
    let contacts = nrow - equalities - limits - friction - tendons;
    // A rope or loop of welded trees over a stretch of the (shuffled) active trees.
    let rope = &active[..active.len().min(equalities + 1)];
    typed_rows(
        Topology::Chain,
        rope,
        equalities,
        Some(&[RowType::Equality]),
        rng,
        rows,
    );
    let one = [RowType::LimitJoint];
    typed_rows(Topology::OneTree, active, limits, Some(&one), rng, rows);
    let one = [RowType::FrictionDof];
    typed_rows(Topology::OneTree, active, friction, Some(&one), rng, rows);
    let tendon = [RowType::LimitTendon, RowType::FrictionTendon];
    typed_rows(Topology::Sparse, active, tendons, Some(&tendon), rng, rows);
    typed_rows(Topology::Contacts, active, contacts, None, rng, rows);
}

/// Up to `nrow` supports of the given topology over the (shuffled, non-empty) `active` trees.
fn supports(topology: Topology, active: &[i32], nrow: usize, rng: &mut Rng) -> Vec<Vec<i32>> {
    match topology {
        Topology::Sparse => (0..nrow)
            .map(|_| {
                let width = rng.between(1, 3);
                (0..width).map(|_| rng.pick(active)).collect()
            })
            .collect(),
        Topology::Dense => (0..nrow)
            .map(|_| vec![rng.pick(active), rng.pick(active)])
            .collect(),
        Topology::Chain => chain_supports(active, nrow),
        Topology::Star => star_supports(active, nrow, rng),
        Topology::Wide => wide_supports(active, nrow, rng),
        Topology::Cycles => cycles_supports(active, nrow, rng),
        Topology::Bridges => bridges_supports(active, nrow, rng),
        Topology::OneTree => (0..nrow).map(|_| vec![rng.pick(active)]).collect(),
        Topology::Contacts => contacts_supports(active, nrow, rng),
        Topology::Mixed | Topology::Scene => {
            unreachable!("resolved to single-structure topologies by the caller")
        }
    }
}

/// [`Topology::Chain`]'s supports: no randomness, the order is the (shuffled) `active`'s.
fn chain_supports(active: &[i32], nrow: usize) -> Vec<Vec<i32>> {
    let n = active.len();
    // Links along the shuffled order; once every link is used, the path runs back.
    let links = n.saturating_sub(1).max(1);
    (0..nrow)
        .map(|k| {
            let (pass, i) = (k / links, k % links);
            let i = if pass % 2 == 0 { i } else { links - 1 - i };
            vec![active[i], active[(i + 1).min(n - 1)]]
        })
        .collect()
}

/// [`Topology::Star`]'s supports: a hub (one of the first sixteenth) and one leaf, or a few.
fn star_supports(active: &[i32], nrow: usize, rng: &mut Rng) -> Vec<Vec<i32>> {
    let hubs = &active[..(active.len() / 16).max(1)];
    (0..nrow)
        .map(|_| {
            let hub = rng.pick(hubs);
            let leaves = if rng.chance(0.2) {
                rng.between(2, 6)
            } else {
                1
            };
            let mut s = vec![hub];
            s.extend((0..leaves).map(|_| rng.pick(active)));
            s
        })
        .collect()
}

/// [`Topology::Wide`]'s supports: half pairs, half runs of 33 to 256 trees (every tree where
/// there are no more than 33).
fn wide_supports(active: &[i32], nrow: usize, rng: &mut Rng) -> Vec<Vec<i32>> {
    let n = active.len();
    (0..nrow)
        .map(|_| {
            if rng.chance(0.5) {
                return vec![rng.pick(active), rng.pick(active)];
            }
            let width = if n <= 33 {
                n
            } else {
                rng.between(33, n.min(256))
            };
            let start = rng.below(n);
            (0..width).map(|k| active[(start + k) % n]).collect()
        })
        .collect()
}

/// [`Topology::Cycles`]'s supports: rings over consecutive stretches of `active`, each with a
/// chord or two.
fn cycles_supports(active: &[i32], nrow: usize, rng: &mut Rng) -> Vec<Vec<i32>> {
    let n = active.len();
    let mut out = Vec::with_capacity(nrow);
    let mut at = 0;
    while out.len() < nrow {
        let len = rng.between(3, n.clamp(3, 12));
        let ring: Vec<i32> = (0..len).map(|k| active[(at + k) % n]).collect();
        at = (at + len) % n;
        for k in 0..len {
            out.push(vec![ring[k], ring[(k + 1) % len]]);
        }
        // Redundant chords: they close more cycles without changing the partition.
        for _ in 0..rng.between(0, 2) {
            out.push(vec![rng.pick(&ring), rng.pick(&ring)]);
        }
    }
    out.truncate(nrow);
    out
}

/// [`Topology::Bridges`]'s supports: pairs within either half of `active`, and in half the
/// worlds one of them replaced by a bridge between the halves.
fn bridges_supports(active: &[i32], nrow: usize, rng: &mut Rng) -> Vec<Vec<i32>> {
    let n = active.len();
    let half = (n / 2).max(1);
    let (left, right) = active.split_at(half.min(n));
    let right = if right.is_empty() { left } else { right };
    let mut out: Vec<Vec<i32>> = (0..nrow)
        .map(|_| {
            let side = if rng.chance(0.5) { left } else { right };
            vec![rng.pick(side), rng.pick(side)]
        })
        .collect();
    // The single bridge between the halves; deleted in half the worlds.
    if rng.chance(0.5) {
        let at = rng.below(out.len());
        out[at] = vec![rng.pick(left), rng.pick(right)];
    }
    out
}

/// [`Topology::Contacts`]'s supports: a pair, or one tree, repeated as a cone's rows.
fn contacts_supports(active: &[i32], nrow: usize, rng: &mut Rng) -> Vec<Vec<i32>> {
    let mut out = Vec::with_capacity(nrow);
    while out.len() < nrow {
        let pair = if rng.chance(0.3) {
            vec![rng.pick(active)] // against the floor or another static body
        } else {
            vec![rng.pick(active), rng.pick(active)]
        };
        for _ in 0..rng.pick(&[1, 3, 4]) {
            out.push(pair.clone());
        }
    }
    out.truncate(nrow);
    out
}

/// Row types in rough proportion to real scenes: mostly contacts.
const TYPE_MIX: [RowType; 12] = [
    RowType::Equality,
    RowType::Equality,
    RowType::FrictionDof,
    RowType::FrictionTendon,
    RowType::LimitJoint,
    RowType::LimitTendon,
    RowType::ContactFrictionless,
    RowType::ContactPyramidal,
    RowType::ContactPyramidal,
    RowType::ContactPyramidal,
    RowType::ContactElliptic,
    RowType::ContactElliptic,
];

/// Duplicates some rows, reverses some supports, repeats a tree inside some, shuffles the order.
fn add_noise(rng: &mut Rng, rows: &mut Vec<Row>) {
    let mut noisy = Vec::with_capacity(rows.len() + rows.len() / 8);
    for mut row in rows.drain(..) {
        if rng.chance(0.2) {
            row.support.reverse();
        }
        if rng.chance(0.1) {
            let t = rng.pick(&row.support);
            let at = rng.below(row.support.len() + 1);
            row.support.insert(at, t);
        }
        if rng.chance(0.1) {
            noisy.push(Row {
                kind: row.kind,
                id: row.id,
                support: row.support.clone(),
            });
        }
        noisy.push(row);
    }
    if rng.chance(0.5) {
        rng.shuffle(&mut noisy);
    }
    *rows = noisy;
}
