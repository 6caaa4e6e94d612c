//! Deterministic mode: with rows in canonical order, every output of every CPU mode — row-level
//! maps included — is bitwise identical across repeated runs and across random permutations of
//! the input's constraints (as GPU contact generation produces them, contact ids renumbered in
//! arrival order).

#[path = "support/gpu.rs"]
mod device;
#[path = "support/keys.rs"]
mod keys;
#[path = "support/traces.rs"]
mod traces;

use archipelago::order::{Canonicalizer, RowKeys, gather};
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Input, Islands, Model, RowType, cpu, oracle};
use keys::unique_contact_keys;

/// One constraint: several rows with one type, id and support (MuJoCo emits a constraint's rows
/// consecutively), and for contacts the geom pair and collision id.
#[derive(Debug, Clone)]
struct Constraint {
    uid: usize,
    kind: RowType,
    id: i32,
    nrow: usize,
    support: Vec<i32>,
    geom: [i32; 2],
    colid: i32,
}

#[derive(Debug, Clone)]
struct World {
    constraints: Vec<Constraint>,
    rowless: Vec<(i32, Vec<i32>)>,
}

struct Case {
    model: Model,
    worlds: Vec<World>,
}

/// Fewer than `kmax` distinct values of `0..n` in random order.
fn some(rng: &mut Rng, n: usize, kmax: usize) -> Vec<usize> {
    let k = rng.below(kmax);
    rng.distinct(n, k)
}

fn trees(rng: &mut Rng, ntree: usize, max: usize) -> Vec<i32> {
    let k = 1 + rng.below(max);
    let mut t: Vec<i32> = rng
        .distinct(ntree, k)
        .into_iter()
        .map(|t| t as i32)
        .collect();
    t.sort_unstable();
    t
}

/// A random scene: trees of 1..3 dofs; geoms 0 and 1 static, geom g ≥ 2 on tree (g − 2) / 2;
/// per world equalities, dof friction, joint and tendon limits and contacts of one cone type.
fn generate(rng: &mut Rng) -> Case {
    let ntree = 1 + rng.below(24);
    let dofnum: Vec<i32> = (0..ntree).map(|_| 1 + rng.below(3) as i32).collect();
    let model = Model::from_dofnum(&dofnum).unwrap();
    let ngeom = 2 + 2 * ntree;
    let geom_tree = |g: usize| if g < 2 { -1 } else { ((g - 2) / 2) as i32 };
    let cone = [RowType::ContactPyramidal, RowType::ContactElliptic][rng.below(2)];
    let nworld = 1 + rng.below(6);
    let mut uid = 0;
    let mut worlds = Vec::new();
    for _ in 0..nworld {
        let mut cs = Vec::new();
        let mut push = |cs: &mut Vec<Constraint>, kind, id, nrow, support, geom, colid| {
            cs.push(Constraint {
                uid,
                kind,
                id,
                nrow,
                support,
                geom,
                colid,
            });
            uid += 1;
        };
        if rng.below(5) == 0 {
            worlds.push(World {
                constraints: cs,
                rowless: Vec::new(),
            });
            continue;
        }
        for id in some(rng, 6, 4) {
            let nrow = [1, 3, 6][rng.below(3)];
            let s = trees(rng, ntree, 2);
            push(&mut cs, RowType::Equality, id as i32, nrow, s, [-1; 2], -1);
        }
        for dof in some(rng, model.nv(), 4) {
            let s = vec![model.dof_treeid()[dof]];
            push(&mut cs, RowType::FrictionDof, dof as i32, 1, s, [-1; 2], -1);
        }
        for jnt in some(rng, ntree, 3) {
            let s = vec![jnt as i32];
            push(&mut cs, RowType::LimitJoint, jnt as i32, 1, s, [-1; 2], -1);
        }
        for ten in some(rng, 4, 3) {
            let s = trees(rng, ntree, 3);
            push(&mut cs, RowType::LimitTendon, ten as i32, 1, s, [-1; 2], -1);
        }
        // (geom1 ≤ geom2, collision id) is unique per contact, as in MuJoCo.
        let ncontact = rng.below(3 * ntree + 4);
        let pairs = rng.distinct(ngeom * ngeom * 3, ncontact);
        for p in pairs {
            let (g1, g2, colid) = (p / (ngeom * 3), (p / 3) % ngeom, p % 3);
            if g1 > g2 {
                continue;
            }
            let mut s: Vec<i32> = [geom_tree(g1), geom_tree(g2)]
                .into_iter()
                .filter(|&t| t >= 0)
                .collect();
            s.dedup();
            if s.is_empty() {
                continue;
            }
            let condim = [1, 3, 4][rng.below(3)];
            let (kind, nrow) = match (condim, cone) {
                (1, _) => (RowType::ContactFrictionless, 1),
                (c, RowType::ContactPyramidal) => (cone, 2 * (c - 1)),
                (c, _) => (cone, c),
            };
            let geom = [g1 as i32, g2 as i32];
            push(&mut cs, kind, 0, nrow, s, geom, colid as i32);
        }
        let rowless = (0..rng.below(2))
            .map(|f| (f as i32, trees(rng, ntree, 4)))
            .collect();
        worlds.push(World {
            constraints: cs,
            rowless,
        });
    }
    Case { model, worlds }
}

/// The rows of `case` with each world's constraints in the order `shuffle` leaves them; contact
/// ids count contacts in that order (as upstream assigns them). Also returns, per row, the
/// (constraint uid, row within the constraint) it came from: caller data to gather.
fn build(case: &Case, mut shuffle: Option<&mut Rng>) -> (Batch, RowKeys, Vec<(usize, usize)>) {
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    let mut tags = Vec::new();
    for world in &case.worlds {
        let mut cs = world.constraints.clone();
        if let Some(rng) = shuffle.as_deref_mut() {
            rng.shuffle(&mut cs);
        }
        let mut contact = 0;
        for c in &cs {
            let id = if c.kind.is_contact() { contact } else { c.id };
            contact += i32::from(c.kind.is_contact());
            for row in 0..c.nrow {
                b.row(c.kind, id, &c.support);
                if c.kind.is_contact() {
                    keys.push_contact(c.geom, c.colid);
                } else {
                    keys.push_other();
                }
                tags.push((c.uid, row));
            }
        }
        for (id, support) in &world.rowless {
            b.rowless(*id, support);
        }
        b.end_world();
    }
    (b.finish(), keys, tags)
}

/// Everything a canonical run produces: the outputs of every mode, the canonical batch without
/// contact ids (those number arrival order), and the caller's gathered row data.
#[derive(Debug, PartialEq)]
struct Run {
    islands: Vec<(String, Islands)>,
    row_type: Vec<RowType>,
    other_id: Vec<i32>,
    row_supadr: Vec<u32>,
    row_support: Vec<i32>,
    geom: Vec<[i32; 2]>,
    colid: Vec<i32>,
    tags: Vec<(usize, usize)>,
}

/// Equality of two runs, reporting the first differing part instead of dumping both.
fn assert_same(got: &Run, want: &Run, what: &str) {
    for ((mode, g), (_, w)) in got.islands.iter().zip(&want.islands) {
        assert_eq!(g.first_mismatch(w), None, "{what}: mode {mode}");
        assert!(g == w, "{what}: mode {mode}: padding differs");
    }
    let parts = [
        ("row_type", got.row_type == want.row_type),
        ("row id", got.other_id == want.other_id),
        ("row_supadr", got.row_supadr == want.row_supadr),
        ("row_support", got.row_support == want.row_support),
        ("geom", got.geom == want.geom),
        ("colid", got.colid == want.colid),
        ("constraint rows", got.tags == want.tags),
    ];
    for (part, same) in parts {
        assert!(same, "{what}: canonical {part} differs");
    }
    assert_eq!(got.islands.len(), want.islands.len());
}

struct Runner {
    canon: Canonicalizer,
    modes: Vec<Box<dyn cpu::CpuMode>>,
    out: Islands,
}

impl Runner {
    fn new(case: &Case) -> Runner {
        let (batch, _, _) = build(case, None);
        Runner::for_batch(&case.model, &batch)
    }

    /// Every CPU mode, with the canonicalizer sized for `batch`.
    fn for_batch(model: &Model, batch: &Batch) -> Runner {
        Runner {
            canon: Canonicalizer::new(&Capacity::fit(model, batch)),
            modes: cpu::NAMES
                .iter()
                .map(|n| cpu::by_name(n).unwrap())
                .collect(),
            out: Islands::default(),
        }
    }

    fn run(
        &mut self,
        model: &Model,
        batch: &Batch,
        keys: &RowKeys,
        tags: &[(usize, usize)],
    ) -> Run {
        let input = Input::new(model, batch).unwrap();
        let (sorted, order) = self.canon.canonicalize(&input, keys).unwrap();
        let sorted_input = Input::new(model, sorted).unwrap();
        let reference = oracle::solve(&sorted_input);
        let mut islands = vec![("oracle".to_string(), reference.clone())];
        for mode in &mut self.modes {
            mode.solve(&sorted_input, &mut self.out).unwrap();
            assert_eq!(self.out.first_mismatch(&reference), None, "{}", mode.name());
            islands.push((mode.name().to_string(), self.out.clone()));
        }
        let mut run = Run {
            islands,
            row_type: sorted.row_type.clone(),
            other_id: (0..sorted.nrow())
                .map(|r| {
                    if sorted.row_type[r].is_contact() {
                        -1
                    } else {
                        sorted.row_id[r]
                    }
                })
                .collect(),
            row_supadr: sorted.row_supadr.clone(),
            row_support: sorted.row_support.clone(),
            geom: Vec::new(),
            colid: Vec::new(),
            tags: Vec::new(),
        };
        gather::gather_rows(&keys.geom, order, &mut run.geom).unwrap();
        gather::gather_rows(&keys.colid, order, &mut run.colid).unwrap();
        gather::gather_rows(tags, order, &mut run.tags).unwrap();
        run
    }
}

#[test]
fn every_output_is_identical_across_permuted_inputs() {
    let mut rng = Rng::new(11);
    let mut differed = 0;
    for seed in 0..40 {
        let case = generate(&mut Rng::new(seed));
        let mut runner = Runner::new(&case);
        let (batch, keys, tags) = build(&case, None);
        let want = runner.run(&case.model, &batch, &keys, &tags);
        let plain = oracle::solve(&Input::new(&case.model, &batch).unwrap());
        for _ in 0..25 {
            let (batch, keys, tags) = build(&case, Some(&mut rng));
            let got = runner.run(&case.model, &batch, &keys, &tags);
            assert_same(&got, &want, &format!("case {seed}"));
            // Without the canonical order the row-level maps follow the input order.
            let raw = oracle::solve(&Input::new(&case.model, &batch).unwrap());
            differed += usize::from(raw != plain);
        }
        // Rows of one constraint stay together and in their order.
        for pair in want.tags.windows(2) {
            let ((u0, r0), (u1, r1)) = (pair[0], pair[1]);
            assert!(u0 != u1 || r1 == r0 + 1, "case {seed}: {pair:?}");
            assert!(u0 == u1 || r1 == 0, "case {seed}: {pair:?}");
        }
    }
    assert!(
        differed > 100,
        "permutations should change the uncanonical outputs ({differed})"
    );
}

#[test]
fn every_output_is_identical_across_100_runs() {
    for seed in 100..106 {
        let case = generate(&mut Rng::new(seed));
        let (batch, keys, tags) = build(&case, Some(&mut Rng::new(seed)));
        let mut reused = Runner::new(&case);
        let want = reused.run(&case.model, &batch, &keys, &tags);
        for i in 0..100 {
            let got = if i % 2 == 0 {
                reused.run(&case.model, &batch, &keys, &tags)
            } else {
                Runner::new(&case).run(&case.model, &batch, &keys, &tags)
            };
            assert_same(&got, &want, &format!("case {seed}, run {i}"));
        }
    }
}

#[test]
fn canonical_world_reads_in_mujoco_block_order() {
    let case = generate(&mut Rng::new(5));
    let (batch, keys, _) = build(&case, Some(&mut Rng::new(9)));
    let mut canon = Canonicalizer::new(&Capacity::fit(&case.model, &batch));
    let input = Input::new(&case.model, &batch).unwrap();
    let (sorted, _) = canon.canonicalize(&input, &keys).unwrap();
    for w in 0..sorted.nworld() {
        let class = |r: usize| (sorted.row_type[r] as u8).min(5);
        let rows: Vec<usize> = sorted.rows_of(w).collect();
        assert!(
            rows.windows(2).all(|p| class(p[0]) <= class(p[1])),
            "world {w}"
        );
    }
}

#[test]
fn conformance_corpus_is_identical_across_permuted_inputs() {
    // The whole conformance corpus, each case under two random permutations of its constraints.
    let mut rng = Rng::new(77);
    for case in archipelago::synth::conformance() {
        let case_keys = unique_contact_keys(&case.batch);
        let groups = constraints_keyed(&case.batch, &case_keys);
        let (batch, keys, tags) = rebuild_keyed(&case.batch, &case_keys, &groups, None);
        let mut runner = Runner::for_batch(&case.model, &batch);
        let want = runner.run(&case.model, &batch, &keys, &tags);
        for _ in 0..2 {
            let (batch, keys, tags) =
                rebuild_keyed(&case.batch, &case_keys, &groups, Some(&mut rng));
            let got = runner.run(&case.model, &batch, &keys, &tags);
            assert_same(&got, &want, &format!("corpus case seed {}", case.seed));
        }
    }
}

#[test]
fn conformance_corpus_is_identical_across_permuted_inputs_on_the_gpu() {
    // Every GPU mode, deterministic, on the conformance corpus: the canonical outputs equal the
    // CPU's (the oracle on the CPU-sorted batch), the device's permutation gathers the same
    // caller rows, and two random permutations of each case's constraints change nothing;
    // whether or not the fused kernels overlap the sort.
    use archipelago::gpu::solver::{Options, Overlap};
    use archipelago::gpu::{Mode, Solver};
    let Some(gpu) = device::open() else { return };
    let range = device::corpus_range();
    let start = std::time::Instant::now();
    let mut rng = Rng::new(78);
    let mut solved = 0usize;
    let cases = archipelago::synth::conformance().enumerate();
    for (k, case) in cases.skip(range.start).take(range.len()) {
        if k % 2000 == 0 {
            eprintln!("case {k} at {:.1} s", start.elapsed().as_secs_f64());
        }
        let case_keys = unique_contact_keys(&case.batch);
        let groups = constraints_keyed(&case.batch, &case_keys);
        let cap = Capacity::fit(&case.model, &case.batch);
        let mut runner = Runner {
            canon: Canonicalizer::new(&cap),
            modes: Vec::new(),
            out: Islands::default(),
        };
        let (batch, keys, tags) = rebuild_keyed(&case.batch, &case_keys, &groups, None);
        let want = runner.run(&case.model, &batch, &keys, &tags);
        let perms: Vec<_> = (0..3)
            .map(|p| match p {
                0 => (batch.clone(), keys.clone(), tags.clone()),
                _ => rebuild_keyed(&case.batch, &case_keys, &groups, Some(&mut rng)),
            })
            .collect();
        // Each overlap of the sort with the fused kernels on a third of the cases.
        let overlap = [Overlap::Auto, Overlap::Always, Overlap::Never][k % 3];
        let opts = Options {
            deterministic: true,
            overlap,
            ..Options::default()
        };
        for mode in Mode::ALL {
            let mut solver = match Solver::with_options(&gpu, mode, cap, &case.model, opts) {
                Ok(s) => s,
                Err(archipelago::Error::Refused { .. }) if mode == Mode::Dense => continue,
                Err(e) => panic!("{mode} on corpus case {k}: {e}"),
            };
            let (mut out, mut order, mut rank) = (Islands::default(), Vec::new(), Vec::new());
            for (p, (batch, keys, tags)) in perms.iter().enumerate() {
                let input = Input::new(&case.model, batch).unwrap();
                solver.solve_keyed(&input, keys, &mut out).unwrap();
                let what = format!(
                    "corpus case {k} (seed {}), {mode}, permutation {p}, overlap {overlap:?}",
                    case.seed
                );
                assert_eq!(out.first_mismatch(&want.islands[0].1), None, "{what}");
                assert!(out == want.islands[0].1, "{what}: padding differs");
                solver.download_order(&mut order, &mut rank).unwrap();
                let gathered: Vec<_> = order.iter().map(|&r| tags[r as usize]).collect();
                assert!(gathered == want.tags, "{what}: canonical rows differ");
                solved += 1;
            }
        }
    }
    println!(
        "deterministic GPU modes identical on corpus cases {range:?}: {solved} solves in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// A trace step split into constraints: contact rows in runs of one key (a contact's rows share
/// its geom pair and collision id), the rows of each (type, id) of the other kinds one
/// constraint, in first-appearance order. Per world the constraints, each a list of input rows.
fn constraints_keyed(batch: &Batch, keys: &RowKeys) -> Vec<Vec<Vec<usize>>> {
    (0..batch.nworld())
        .map(|w| {
            let mut groups: Vec<Vec<usize>> = Vec::new();
            let mut seen: Vec<((RowType, i32), usize)> = Vec::new();
            let mut last_contact: Option<([i32; 2], i32)> = None;
            for r in batch.rows_of(w) {
                let kind = batch.row_type[r];
                if kind.is_contact() {
                    let key = (keys.geom[r], keys.colid[r]);
                    match (last_contact == Some(key), groups.last_mut()) {
                        (true, Some(g)) => g.push(r),
                        _ => groups.push(vec![r]),
                    }
                    last_contact = Some(key);
                    continue;
                }
                last_contact = None;
                match seen.iter().find(|(k, _)| *k == (kind, batch.row_id[r])) {
                    Some(&(_, g)) => groups[g].push(r),
                    None => {
                        seen.push(((kind, batch.row_id[r]), groups.len()));
                        groups.push(vec![r]);
                    }
                }
            }
            groups
        })
        .collect()
}

/// The step with each world's constraints in `shuffle`'s order, contact ids renumbered in
/// arrival order (as upstream assigns them); keys travel with their rows, tags name the input
/// row.
fn rebuild_keyed(
    batch: &Batch,
    keys: &RowKeys,
    groups: &[Vec<Vec<usize>>],
    shuffle: Option<&mut Rng>,
) -> (Batch, RowKeys, Vec<(usize, usize)>) {
    let mut rng = shuffle;
    let mut b = Batch::builder();
    let mut out = RowKeys::default();
    let mut tags = Vec::new();
    for (w, world) in groups.iter().enumerate() {
        let mut order: Vec<&Vec<usize>> = world.iter().collect();
        if let Some(rng) = rng.as_deref_mut() {
            rng.shuffle(&mut order);
        }
        let mut contact = 0;
        for group in order {
            for (i, &r) in group.iter().enumerate() {
                let kind = batch.row_type[r];
                let id = if kind.is_contact() {
                    contact
                } else {
                    batch.row_id[r]
                };
                b.row(kind, id, batch.row_support_of(r));
                out.push_contact(keys.geom[r], keys.colid[r]);
                tags.push((r, i));
            }
            contact += i32::from(batch.row_type[group[0]].is_contact());
        }
        b.edges_from(batch, w);
        b.end_world();
    }
    (b.finish(), out, tags)
}

#[test]
fn committed_traces_are_identical_across_permuted_inputs() {
    let paths = traces::paths();
    assert!(paths.len() >= 30, "found {} traces", paths.len());
    let mut rng = Rng::new(2026);
    let mut permuted_contacts = 0;
    for path in &paths {
        let tr = archipelago::trace::Trace::open(path).unwrap();
        let busiest = (0..tr.nstep()).max_by_key(|&s| tr.nrow(s)).unwrap_or(0);
        for step in [busiest, tr.nstep() / 2] {
            let (mut raw, mut raw_keys) = (Batch::default(), RowKeys::default());
            tr.batch(step, &mut raw);
            tr.row_keys(step, &mut raw_keys);
            let groups = constraints_keyed(&raw, &raw_keys);
            let (batch, keys, tags) = rebuild_keyed(&raw, &raw_keys, &groups, None);
            let mut runner = Runner::for_batch(tr.model(), &batch);
            let want = runner.run(tr.model(), &batch, &keys, &tags);
            for _ in 0..3 {
                let (batch, keys, tags) = rebuild_keyed(&raw, &raw_keys, &groups, Some(&mut rng));
                let got = runner.run(tr.model(), &batch, &keys, &tags);
                assert_same(&got, &want, &format!("{} step {step}", path.display()));
            }
            permuted_contacts += raw.row_type.iter().filter(|t| t.is_contact()).count();
        }
    }
    assert!(permuted_contacts > 1000, "{permuted_contacts} contact rows");
}

/// The `Engine`'s `deterministic` option, in every engine mode built by `make`: outputs bitwise
/// identical across permuted inputs, equal to the oracle on the canonical batch, the order
/// returned maps canonical rows back to input rows, and a plain `step` is refused.
fn check_deterministic_engine(
    make: &dyn Fn(&Model, Capacity, archipelago::engine::Options) -> archipelago::engine::Engine,
) {
    use archipelago::engine::{Mode, Options};
    use invalidation::Events;
    let mut rng = Rng::new(23);
    let events = Events::new();
    for seed in 0..12 {
        let case = generate(&mut Rng::new(1000 + seed));
        let (batch, keys, tags) = build(&case, None);
        let cap = Capacity::fit(&case.model, &batch);
        for mode in Mode::ALL {
            let options = Options {
                mode,
                deterministic: true,
                ..Options::default()
            };
            let mut engine = make(&case.model, cap, options);
            assert!(
                engine.step(&batch, &events).is_err(),
                "{mode:?}: a plain step needs keys"
            );
            let want = engine.step_keyed(&batch, &keys, &events).unwrap().clone();
            let want_tags: Vec<_> = engine.order().iter().map(|&r| tags[r as usize]).collect();
            let mut canon = Canonicalizer::new(&cap);
            let input = Input::new(&case.model, &batch).unwrap();
            let (sorted, _) = canon.canonicalize(&input, &keys).unwrap();
            let oracle = oracle::solve(&Input::new(&case.model, sorted).unwrap());
            assert_eq!(want.first_mismatch(&oracle), None, "case {seed} {mode:?}");
            for _ in 0..6 {
                let (batch, keys, tags) = build(&case, Some(&mut rng));
                let got = engine.step_keyed(&batch, &keys, &events).unwrap();
                assert_eq!(got, &want, "case {seed} {mode:?}: outputs differ");
                let got_tags: Vec<_> = engine.order().iter().map(|&r| tags[r as usize]).collect();
                assert_eq!(
                    got_tags, want_tags,
                    "case {seed} {mode:?}: row order differs"
                );
            }
        }
    }
}

#[test]
fn the_deterministic_engine_is_identical_across_permuted_inputs_in_every_mode() {
    check_deterministic_engine(&|model, cap, options| {
        archipelago::engine::Engine::new(model, cap, options).unwrap()
    });
}

#[test]
fn the_deterministic_gpu_engine_is_identical_across_permuted_inputs_in_every_mode() {
    let Some(gpu) = device::open() else { return };
    check_deterministic_engine(&|model, cap, options| {
        archipelago::engine::Engine::with_gpu(&gpu, model, cap, options).unwrap()
    });
}
