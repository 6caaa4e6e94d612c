//! Deterministic mode on the GPU: every mode with the canonical order inside its captured step
//! gives bitwise identical outputs across repeated runs and across randomly permuted input
//! rows, equal to the CPU canonical path (the oracle on `order::Canonicalizer`'s batch), with
//! the same permutation as the CPU. Every sort (shared-memory radix with 32- and 64-bit keys,
//! bitonic with 32- and 64-bit packed values, radix in global scratch for large worlds) and the
//! boundaries between them, fixed bounds, empty worlds and the committed traces. Without a device every test prints
//! `skipped: no CUDA device` and passes.

#[path = "support/gpu.rs"]
mod device;
#[path = "support/traces.rs"]
mod traces;

use archipelago::gpu::order::{Plan, RADIX_CHUNK, SMALL_MAX, Sort};
use archipelago::gpu::solver::{Options, Overlap};
use archipelago::gpu::{Gpu, Mode, Solver};
use archipelago::order::{Bounds, Canonicalizer, KeyBounds, KeyLayout, RowKeys};
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Error, Input, Islands, Model, RowType, oracle};
use device::open;

/// One constraint: its rows (consecutive, one type, id and support) and, for a contact, its
/// key. Contact keys are unique in a world.
#[derive(Debug, Clone)]
struct Constraint {
    kind: RowType,
    id: i32,
    nrow: usize,
    support: Vec<i32>,
    geom: [i32; 2],
    colid: i32,
}

struct World {
    constraints: Vec<Constraint>,
    rowless: Vec<Vec<i32>>,
}

struct Case {
    model: Model,
    worlds: Vec<World>,
}

/// Worlds of about `rows[w]` rows over `ntree` trees; contact geoms below 2^geom_bits,
/// collision ids below 2^colid_bits, other ids below 2^id_bits (the first world pins both ends
/// of every range, so the fitted key has exactly those widths).
fn generate(rng: &mut Rng, rows: &[usize], ntree: usize, bits: (u32, u32, u32)) -> Case {
    let (geom_bits, colid_bits, id_bits) = bits;
    let model = Model::from_dofnum(&vec![1; ntree]).unwrap();
    let max = |b: u32| ((1u64 << b) - 1) as i32;
    let mut worlds = Vec::new();
    for (w, &n) in rows.iter().enumerate() {
        let mut cs = Vec::new();
        let mut used = std::collections::HashSet::new();
        let mut k = 0;
        if w == 0 && n > 0 {
            for (geom, colid) in [
                ([0, 0], 0),
                ([max(geom_bits), max(geom_bits)], max(colid_bits)),
            ] {
                used.insert((geom, colid));
                cs.push(Constraint {
                    kind: RowType::ContactPyramidal,
                    id: 0,
                    nrow: 1,
                    support: vec![0],
                    geom,
                    colid,
                });
            }
            for id in [0, max(id_bits)] {
                cs.push(Constraint {
                    kind: RowType::LimitJoint,
                    id,
                    nrow: 1,
                    support: vec![(ntree - 1) as i32],
                    geom: [-1; 2],
                    colid: -1,
                });
            }
            k = 4;
        }
        while k < n {
            let t = rng.below(ntree) as i32;
            let u = rng.below(ntree) as i32;
            let support = if t == u {
                vec![t]
            } else {
                vec![t.min(u), t.max(u)]
            };
            if rng.below(4) == 0 {
                let kind = RowType::ALL[rng.below(5)];
                // Distinct constraints of one type get distinct ids.
                let Some(id) = (0..64)
                    .map(|_| (rng.next_u64() & max(id_bits) as u64) as i32)
                    .find(|&id| used.insert(([kind as i32, -2], id)))
                else {
                    continue;
                };
                let nrow = [1, 1, 3, 6][rng.below(4)].min(n - k);
                cs.push(Constraint {
                    kind,
                    id,
                    nrow,
                    support,
                    geom: [-1; 2],
                    colid: -1,
                });
                k += nrow;
            } else {
                let g = |rng: &mut Rng| (rng.next_u64() & max(geom_bits) as u64) as i32;
                let Some((geom, colid)) = (0..64)
                    .map(|_| {
                        let first = if rng.below(3) == 0 {
                            rng.below(4) as i32 & max(geom_bits)
                        } else {
                            g(rng)
                        };
                        (
                            [first, g(rng)],
                            (rng.next_u64() & max(colid_bits) as u64) as i32,
                        )
                    })
                    .find(|&key| used.insert(key))
                else {
                    continue;
                };
                let nrow = [1, 4][rng.below(2)].min(n - k);
                cs.push(Constraint {
                    kind: [RowType::ContactPyramidal, RowType::ContactElliptic][rng.below(2)],
                    id: 0,
                    nrow,
                    support,
                    geom,
                    colid,
                });
                k += nrow;
            }
        }
        let rowless = (0..rng.below(3))
            .map(|_| vec![rng.below(ntree) as i32, rng.below(ntree) as i32])
            .collect();
        worlds.push(World {
            constraints: cs,
            rowless,
        });
    }
    Case { model, worlds }
}

/// The case's rows with each world's constraints in `shuffle`'s order and contact ids counted
/// in arrival order (as upstream assigns them).
fn build(case: &Case, mut shuffle: Option<&mut Rng>) -> (Batch, RowKeys) {
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    for world in &case.worlds {
        let mut cs: Vec<&Constraint> = world.constraints.iter().collect();
        if let Some(rng) = shuffle.as_deref_mut() {
            rng.shuffle(&mut cs);
        }
        for (i, c) in cs.into_iter().enumerate() {
            let id = if c.kind.is_contact() { i as i32 } else { c.id };
            for _ in 0..c.nrow {
                b.row(c.kind, id, &c.support);
                keys.push_contact(c.geom, c.colid);
            }
        }
        for s in &world.rowless {
            b.rowless(0, s);
        }
        b.end_world();
    }
    (b.finish(), keys)
}

fn deterministic(gpu: &Gpu, mode: Mode, cap: Capacity, model: &Model) -> Option<Solver> {
    deterministic_with(gpu, mode, cap, model, Options::default())
}

fn deterministic_with(
    gpu: &Gpu,
    mode: Mode,
    cap: Capacity,
    model: &Model,
    opts: Options,
) -> Option<Solver> {
    let opts = Options {
        deterministic: true,
        ..opts
    };
    match Solver::with_options(gpu, mode, cap, model, opts) {
        Ok(s) => Some(s),
        Err(Error::Refused { .. }) if mode == Mode::Dense => None,
        Err(e) => panic!("{mode}: {e}"),
    }
}

/// Every mode, deterministic: outputs equal the oracle on the CPU's canonical batch, the
/// permutation equals the CPU's, repeated replays and `permutations` shuffled inputs give
/// bitwise identical outputs. Returns the plan the device used.
fn check(gpu: &Gpu, case: &Case, permutations: usize, seed: u64, what: &str) -> Option<Plan> {
    check_with(gpu, case, Sort::Auto, permutations, seed, what)
}

/// [`check`] with the sort of worlds that fit one block chosen.
fn check_with(
    gpu: &Gpu,
    case: &Case,
    sort: Sort,
    permutations: usize,
    seed: u64,
    what: &str,
) -> Option<Plan> {
    let opts = Options {
        sort,
        ..Options::default()
    };
    check_opts(gpu, case, opts, permutations, seed, what)
}

/// [`check`] with the solver options chosen (deterministic is always on).
fn check_opts(
    gpu: &Gpu,
    case: &Case,
    opts: Options,
    permutations: usize,
    seed: u64,
    what: &str,
) -> Option<Plan> {
    let (batch, keys) = build(case, None);
    let input = Input::new(&case.model, &batch).unwrap();
    let cap = Capacity::fit(&case.model, &batch);
    let mut canon = Canonicalizer::new(&cap);
    let (sorted, _) = canon.canonicalize(&input, &keys).unwrap();
    let want = oracle::solve(&Input::new(&case.model, sorted).unwrap());
    let (cpu_order, cpu_rank) = (canon.order().to_vec(), canon.rank().to_vec());
    let mut plan = None;
    for mode in Mode::ALL {
        let Some(mut solver) = deterministic_with(gpu, mode, cap, &case.model, opts) else {
            continue;
        };
        let mut first = Islands::default();
        solver.solve_keyed(&input, &keys, &mut first).unwrap();
        assert_eq!(first.first_mismatch(&want), None, "{what}: {mode}");
        let (mut order, mut rank) = (Vec::new(), Vec::new());
        solver.download_order(&mut order, &mut rank).unwrap();
        assert!(
            order == cpu_order,
            "{what}: {mode}: order differs from the CPU's"
        );
        assert!(
            rank == cpu_rank,
            "{what}: {mode}: rank differs from the CPU's"
        );
        plan = solver.order().and_then(|o| o.plan());
        let mut again = Islands::default();
        for run in 0..3 {
            solver.replay().unwrap();
            solver.download(&input, &mut again).unwrap();
            assert!(again == first, "{what}: {mode}: replay {run} differs");
        }
        let mut rng = Rng::new(seed);
        for p in 0..permutations {
            let (batch, keys) = build(case, Some(&mut rng));
            let input = Input::new(&case.model, &batch).unwrap();
            solver.solve_keyed(&input, &keys, &mut again).unwrap();
            assert_eq!(
                again.first_mismatch(&first),
                None,
                "{what}: {mode}: perm {p}"
            );
            assert!(again == first, "{what}: {mode}: permutation {p} differs");
        }
    }
    plan
}

#[test]
fn packed_32_bit_tiles_are_deterministic() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(1);
    let case = generate(&mut rng, &[120, 0, 77, 130, 1, 64, 33, 100], 24, (5, 2, 4));
    let plan = check_with(&gpu, &case, Sort::Bitonic, 4, 10, "32-bit tiles");
    assert_eq!(plan, Some(Plan::Small { wide: false }));
    let plan = check(&gpu, &case, 4, 11, "32-bit tiles, default sort");
    assert_eq!(plan, Some(Plan::Small { wide: false }));
    let plan = check_with(
        &gpu,
        &case,
        Sort::Block,
        4,
        12,
        "32-bit keys in shared memory",
    );
    assert_eq!(plan, Some(Plan::Block { wide: false }));
}

#[test]
fn big_tiles_take_the_shared_memory_radix_sort() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(5);
    let case = generate(&mut rng, &[2100, 5, 0, 1800], 64, (5, 2, 4));
    let plan = check(&gpu, &case, 3, 14, "big tiles, 32-bit keys");
    assert_eq!(plan, Some(Plan::Block { wide: false }));
    let plan = check_with(&gpu, &case, Sort::Bitonic, 3, 15, "big tiles, bitonic");
    assert_eq!(plan, Some(Plan::Small { wide: false }));
}

#[test]
fn overlapping_the_sort_with_the_fused_kernels_changes_nothing() {
    // The fused modes' kernel may start while the sort runs and wait only before its maps:
    // every overlap setting, for the bitonic and the shared-memory radix sort, with more
    // worlds than an H200 has multiprocessors (where `Auto` keeps the radix sort apart).
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(8);
    let rows: Vec<usize> = (0..160).map(|w| [300, 1200, 0, 2048][w % 4]).collect();
    let case = generate(&mut rng, &rows, 64, (9, 3, 5));
    for sort in [Sort::Bitonic, Sort::Block] {
        for overlap in [Overlap::Auto, Overlap::Always, Overlap::Never] {
            let opts = Options {
                sort,
                overlap,
                ..Options::default()
            };
            let what = format!("{sort:?}, overlap {overlap:?}");
            check_opts(&gpu, &case, opts, 1, 22, &what);
        }
    }
}

#[test]
fn packed_64_bit_tiles_are_deterministic() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(2);
    let case = generate(&mut rng, &[300, 2000, 0, 1090, 4096], 200, (13, 6, 9));
    let plan = check_with(&gpu, &case, Sort::Bitonic, 3, 20, "64-bit tiles");
    assert_eq!(plan, Some(Plan::Small { wide: true }));
    let plan = check(&gpu, &case, 3, 21, "64-bit keys in shared memory");
    assert_eq!(plan, Some(Plan::Block { wide: true }));
}

#[test]
fn the_largest_tiles_sort_in_one_block() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(6);
    // 8192-row tiles: 1024 threads holding 8 values each, every sort and both key widths.
    let case = generate(&mut rng, &[SMALL_MAX, 4097, 0, 6000], 400, (10, 3, 8));
    let plan = check(&gpu, &case, 2, 16, "8192-row tiles");
    assert_eq!(plan, Some(Plan::Block { wide: false }));
    let plan = check_with(&gpu, &case, Sort::Bitonic, 2, 17, "8192-row tiles, bitonic");
    assert_eq!(plan, Some(Plan::Small { wide: true }));
    let case = generate(&mut rng, &[5000, 0, SMALL_MAX - 1], 400, (24, 7, 3));
    let plan = check(&gpu, &case, 2, 18, "8192-row tiles, 64-bit keys");
    assert_eq!(plan, Some(Plan::Block { wide: true }));
}

#[test]
fn worlds_whose_keys_share_bits_are_sorted_on_the_bits_that_differ() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(7);
    let mut case = generate(&mut rng, &[2600, 2300, 2200, 2100], 100, (10, 3, 8));
    // World 1 keeps its other rows only (their ids sit high in the key, its low bits are
    // zero), world 2 its contacts only (equal type bits), world 3 one constraint (every key
    // equal: no pass at all). World 0 pins the key's width.
    case.worlds[1].constraints.retain(|c| !c.kind.is_contact());
    case.worlds[2].constraints.retain(|c| c.kind.is_contact());
    case.worlds[3].constraints.truncate(1);
    case.worlds[3].constraints[0].nrow = 6;
    let plan = check(&gpu, &case, 3, 19, "worlds sharing key bits");
    assert_eq!(plan, Some(Plan::Block { wide: false }));
}

/// The shared-memory radix sort splits each world's span of differing key bits into the
/// fewest passes of at most 8 bits, evenly (at least 5 bits each): spans from a few bits to
/// past 32 (64-bit keys) cover every digit width and pass count, with worlds that differ in
/// only a field or two.
#[test]
fn every_span_of_differing_bits_sorts_in_even_passes() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(23);
    for (i, bits) in [
        (1, 1, 1),
        (2, 1, 2),
        (2, 2, 3),
        (3, 1, 4),
        (3, 2, 5),
        (4, 2, 6),
        (5, 1, 7),
        (5, 3, 8),
        (6, 2, 9),
        (7, 3, 10),
        (8, 4, 12),
        (10, 3, 14),
        (12, 3, 18),
        (14, 2, 24),
        (15, 4, 28),
    ]
    .into_iter()
    .enumerate()
    {
        // Worlds well within the distinct keys these widths allow (the generator draws
        // distinct contacts and ids).
        let (g, c, id) = bits;
        let n = ((1usize << (2 * g + c)).min(5 << id) / 4).clamp(4, 1100);
        let mut case = generate(&mut rng, &[n, n / 2, n, n / 4], 40, bits);
        case.worlds[1].constraints.retain(|c| !c.kind.is_contact());
        case.worlds[3].constraints.retain(|c| c.kind.is_contact());
        let what = format!("span sweep {bits:?}");
        let plan = check_with(&gpu, &case, Sort::Block, 1, 40 + i as u64, &what);
        assert!(matches!(plan, Some(Plan::Block { .. })), "{what}: {plan:?}");
    }
}

#[test]
fn tiny_tiles_take_the_bitonic_network_and_forced_radix_agrees() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(4);
    let case = generate(&mut rng, &[20, 0, 31, 7, 1], 12, (5, 2, 4));
    let plan = check(&gpu, &case, 4, 12, "tiny tiles");
    assert_eq!(plan, Some(Plan::Small { wide: false }));
    let plan = check_with(&gpu, &case, Sort::Block, 4, 13, "tiny tiles, radix");
    assert_eq!(plan, Some(Plan::Block { wide: false }));
}

/// The boundary cases below: (geom, colid, id) bits, the fitted key's width, and the plan with
/// the bitonic network forced and by default (the radix sort once the packing needs 64 bits).
type Boundary = ((u32, u32, u32), u32, Plan, Plan);
const BOUNDARY: [Boundary; 7] = [
    // + 7 index bits = 32
    (
        (9, 4, 3),
        25,
        Plan::Small { wide: false },
        Plan::Small { wide: false },
    ),
    // 33
    (
        (9, 5, 3),
        26,
        Plan::Small { wide: true },
        Plan::Block { wide: false },
    ),
    // key 32 bits
    (
        (12, 5, 3),
        32,
        Plan::Small { wide: true },
        Plan::Block { wide: false },
    ),
    // key 33 bits
    (
        (12, 6, 3),
        33,
        Plan::Small { wide: true },
        Plan::Block { wide: true },
    ),
    // + 7 = 64
    (
        (24, 6, 3),
        57,
        Plan::Small { wide: true },
        Plan::Block { wide: true },
    ),
    // 65: too wide to pack, so the radix sort even when the bitonic network is asked for
    (
        (24, 7, 3),
        58,
        Plan::Block { wide: true },
        Plan::Block { wide: true },
    ),
    // key 64 bits
    (
        (30, 1, 3),
        64,
        Plan::Block { wide: true },
        Plan::Block { wide: true },
    ),
];

fn boundary_case(i: usize) -> Case {
    generate(
        &mut Rng::new(100 + i as u64),
        &[100, 90, 100],
        16,
        BOUNDARY[i].0,
    )
}

#[test]
fn boundary_cases_have_the_intended_key_widths() {
    for (i, (bits, want, _, _)) in BOUNDARY.into_iter().enumerate() {
        let (batch, keys) = build(&boundary_case(i), None);
        let layout = archipelago::order::KeyLayout::fit(&batch, &keys);
        assert_eq!(layout.bits(), want, "bits {bits:?}");
        assert_eq!(Capacity::fit(&boundary_case(i).model, &batch).njmax, 100);
    }
}

/// Key bits plus row-index bits on either side of 32 (the 32/64-bit packing boundary) and of
/// 64 (the packing limit), and the key itself on either side of 32 bits, with both sorts.
#[test]
fn both_sides_of_each_packing_boundary() {
    let Some(gpu) = open() else { return };
    // 100 rows → 128-row tile → 7 index bits.
    for (i, (bits, _, bitonic, auto)) in BOUNDARY.into_iter().enumerate() {
        let what = format!("bits {bits:?}");
        let plan = check_with(
            &gpu,
            &boundary_case(i),
            Sort::Bitonic,
            2,
            30 + i as u64,
            &what,
        );
        assert_eq!(plan, Some(bitonic), "{what}, bitonic");
        let plan = check(&gpu, &boundary_case(i), 2, 60 + i as u64, &what);
        assert_eq!(plan, Some(auto), "{what}");
    }
}

#[test]
fn worlds_beyond_the_tile_use_the_radix_sort() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(3);
    let case = generate(&mut rng, &[SMALL_MAX + 900, 10, 0, 3000], 300, (10, 3, 8));
    let plan = check(&gpu, &case, 2, 40, "large worlds");
    assert!(matches!(plan, Some(Plan::Radix { wide: false, .. })));
    let case = generate(&mut rng, &[SMALL_MAX + 300, 0, 1500], 300, (24, 7, 3));
    let plan = check(&gpu, &case, 2, 41, "large worlds, 64-bit keys");
    assert!(matches!(plan, Some(Plan::Radix { wide: true, .. })));
    // Worlds on both sides of the chunk boundaries, and worlds of a few rows, whose keys differ
    // in fewer bits: they skip passes, so their rows end in either scratch buffer.
    let c = RADIX_CHUNK;
    let rows = [4 * c + 1, c, c + 1, 2 * c - 1, 1, 2, 3, 5, 0, 17];
    for (bits, wide, seed) in [((10, 3, 8), false, 42), ((24, 7, 3), true, 43)] {
        let case = generate(&mut rng, &rows, 200, bits);
        let plan = check(&gpu, &case, 2, seed, "chunk boundaries");
        assert!(matches!(plan, Some(Plan::Radix { wide: w, .. }) if w == wide));
    }
}

#[test]
fn the_radix_passes_launched_only_grow() {
    let mut rng = Rng::new(6);
    let rows = [SMALL_MAX + 100, 700, 3];
    let many = generate(&mut rng, &rows, 300, (10, 3, 8));
    // Key fields narrow enough for fewer passes, wide enough for 8,292 distinct rows.
    let few = generate(&mut rng, &rows, 300, (6, 2, 5));
    let (mb, mk) = build(&many, None);
    let (fb, fk) = build(&few, None);
    let (min, fin) = (
        Input::new(&many.model, &mb).unwrap(),
        Input::new(&few.model, &fb).unwrap(),
    );
    let (cm, cf) = (
        Capacity::fit(&many.model, &mb),
        Capacity::fit(&few.model, &fb),
    );
    let cap = Capacity {
        nsupport: cm.nsupport.max(cf.nsupport),
        nedge: cm.nedge.max(cf.nedge),
        ..cm
    };
    // The cases themselves (also without a device): `few`'s key needs fewer passes.
    let need = |b: &Batch, k: &RowKeys| KeyLayout::fit(b, k).bits().div_ceil(8);
    assert!(need(&fb, &fk) < need(&mb, &mk));
    let Some(gpu) = open() else { return };
    let passes = |s: &Solver| match s.order().and_then(|o| o.plan()) {
        Some(Plan::Radix { passes, .. }) => passes,
        other => panic!("expected the radix sort, got {other:?}"),
    };
    let mut fresh = deterministic(&gpu, Mode::Block, cap, &few.model).unwrap();
    let mut out = Islands::default();
    fresh.solve_keyed(&fin, &fk, &mut out).unwrap();
    let few_passes = passes(&fresh);
    // One solver: the key of `many` needs more passes; `few` after it keeps them and is exact.
    let mut solver = deterministic(&gpu, Mode::Block, cap, &many.model).unwrap();
    let mut seen = Vec::new();
    for (input, keys) in [(&min, &mk), (&fin, &fk), (&min, &mk)] {
        solver.solve_keyed(input, keys, &mut out).unwrap();
        let mut canon = Canonicalizer::new(&cap);
        let (sorted, _) = canon.canonicalize(input, keys).unwrap();
        let want = oracle::solve(&Input::new(&many.model, sorted).unwrap());
        assert_eq!(out.first_mismatch(&want), None);
        seen.push(passes(&solver));
    }
    assert!(few_passes < seen[0], "{few_passes} vs {seen:?}");
    assert_eq!(seen, vec![seen[0]; 3]);
}

#[test]
fn fixed_bounds_flag_rows_outside_them() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(4);
    // Worlds that fit one block, and worlds that the chunked radix sort takes.
    for rows in [vec![50, 60], vec![SMALL_MAX + 100, 3000]] {
        let case = generate(&mut rng, &rows, 8, (6, 2, 3));
        let (batch, keys) = build(&case, None);
        let input = Input::new(&case.model, &batch).unwrap();
        let cap = Capacity::fit(&case.model, &batch);
        let bounds = |geom_max| KeyBounds {
            id: Some(Bounds::below(8)),
            geom: Some(Bounds::below(geom_max)),
            colid: Some(Bounds::below(4)),
        };
        let opts = |b| Options {
            deterministic: true,
            key_bounds: Some(b),
            ..Options::default()
        };
        let mut out = Islands::default();
        let mut wide =
            Solver::with_options(&gpu, Mode::Block, cap, &case.model, opts(bounds(1000))).unwrap();
        wide.solve_keyed(&input, &keys, &mut out).unwrap();
        let mut canon = Canonicalizer::new(&cap);
        let (sorted, _) = canon.canonicalize(&input, &keys).unwrap();
        let want = oracle::solve(&Input::new(&case.model, sorted).unwrap());
        assert_eq!(out.first_mismatch(&want), None);
        // The first row outside the bounds, as the CPU finds it.
        let mut bounded = Canonicalizer::new(&cap).with_layout(KeyLayout::new(bounds(10)));
        let Err(Error::KeyBounds { row: first, .. }) = bounded.canonicalize(&input, &keys) else {
            panic!("the CPU accepted rows outside the bounds");
        };
        let mut narrow =
            Solver::with_options(&gpu, Mode::Block, cap, &case.model, opts(bounds(10))).unwrap();
        match narrow.solve_keyed(&input, &keys, &mut out) {
            Err(Error::KeyBounds { row, .. }) => assert_eq!(row, first, "{rows:?}"),
            other => panic!("expected a key-bounds error, got {other:?}"),
        }
    }
}

#[test]
fn deterministic_solvers_need_keys_and_plain_ones_have_no_order() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(5);
    let case = generate(&mut rng, &[20], 4, (3, 1, 2));
    let (batch, _) = build(&case, None);
    let input = Input::new(&case.model, &batch).unwrap();
    let cap = Capacity::fit(&case.model, &batch);
    let mut det = deterministic(&gpu, Mode::Warp, cap, &case.model).unwrap();
    assert!(matches!(det.upload(&input), Err(Error::Refused { .. })));
    let plain = Solver::new(&gpu, Mode::Warp, cap, &case.model).unwrap();
    let (mut o, mut r) = (Vec::new(), Vec::new());
    assert!(matches!(
        plain.download_order(&mut o, &mut r),
        Err(Error::Refused { .. })
    ));
}

/// Keys refused for a batch (too few) are refused before the batch is copied, so the batch
/// uploaded before them still replays; a solver with no batch uploaded whole launches and
/// downloads nothing (its batch and its keys would be out of step).
#[test]
fn a_refused_keyed_upload_leaves_nothing_to_launch_or_download() {
    let Some(gpu) = open() else { return };
    let mut rng = Rng::new(9);
    let case = generate(&mut rng, &[24, 0, 17], 6, (3, 1, 2));
    let (batch, keys) = build(&case, None);
    let (shuffled, shuffled_keys) = build(&case, Some(&mut rng));
    let input = Input::new(&case.model, &batch).unwrap();
    let cap = Capacity::fit(&case.model, &batch);
    let mut canon = Canonicalizer::new(&cap);
    let (sorted, _) = canon.canonicalize(&input, &keys).unwrap();
    let want = oracle::solve(&Input::new(&case.model, sorted).unwrap());
    let refused = |s: &mut Solver, input: &Input<'_>| {
        let mut out = Islands::default();
        assert!(matches!(s.replay(), Err(Error::Refused { .. })));
        assert!(matches!(s.launch_direct(), Err(Error::Refused { .. })));
        assert!(matches!(
            s.download(input, &mut out),
            Err(Error::Refused { .. })
        ));
    };
    for mode in [Mode::Block, Mode::Warp, Mode::Dsu] {
        let mut s = deterministic(&gpu, mode, cap, &case.model).unwrap();
        // A fresh solver's first keys refused.
        assert!(s.upload_keyed(&input, &RowKeys::default()).is_err());
        refused(&mut s, &input);
        // A batch solved, then the keys of another refused: the first still replays.
        let mut out = Islands::default();
        s.solve_keyed(&input, &keys, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&want), None, "{mode}");
        let other = Input::new(&case.model, &shuffled).unwrap();
        assert!(s.upload_keyed(&other, &RowKeys::default()).is_err());
        s.replay().unwrap();
        s.download(&input, &mut out).unwrap();
        assert_eq!(
            out.first_mismatch(&want),
            None,
            "{mode}, after refused keys"
        );
        s.solve_keyed(&other, &shuffled_keys, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&want), None, "{mode}, permuted");
    }
}

/// A trace step as constraints: contact rows in runs of one key, other rows in runs of one
/// type, id and support.
fn trace_case(tr: &archipelago::trace::Trace, step: usize) -> Case {
    let (mut batch, mut keys) = (Batch::default(), RowKeys::default());
    tr.batch(step, &mut batch);
    tr.row_keys(step, &mut keys);
    let worlds = (0..batch.nworld())
        .map(|w| {
            let mut cs: Vec<Constraint> = Vec::new();
            let mut last: Option<([i32; 2], i32)> = None;
            for r in batch.rows_of(w) {
                let kind = batch.row_type[r];
                let support = batch.row_support_of(r).to_vec();
                let key = (keys.geom[r], keys.colid[r]);
                if kind.is_contact() {
                    if last == Some(key) {
                        cs.last_mut().unwrap().nrow += 1;
                    } else {
                        cs.push(Constraint {
                            kind,
                            id: 0,
                            nrow: 1,
                            support,
                            geom: key.0,
                            colid: key.1,
                        });
                    }
                    last = Some(key);
                    continue;
                }
                last = None;
                cs.push(Constraint {
                    kind,
                    id: batch.row_id[r],
                    nrow: 1,
                    support,
                    geom: [-1; 2],
                    colid: -1,
                });
            }
            let rowless = batch
                .edges_of(w)
                .map(|e| batch.edge_support_of(e).to_vec())
                .collect();
            World {
                constraints: group_rows(cs),
                rowless,
            }
        })
        .collect();
    Case {
        model: tr.model().clone(),
        worlds,
    }
}

/// Merges consecutive non-contact rows of one type, id and support into one constraint (a
/// weld's six rows, a limit's row).
fn group_rows(cs: Vec<Constraint>) -> Vec<Constraint> {
    let mut out: Vec<Constraint> = Vec::new();
    for c in cs {
        match out.last_mut() {
            Some(last)
                if !c.kind.is_contact()
                    && last.kind == c.kind
                    && last.id == c.id
                    && last.support == c.support =>
            {
                last.nrow += 1
            }
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn committed_traces_are_deterministic_on_every_mode() {
    let Some(gpu) = open() else { return };
    let paths = traces::paths();
    assert!(paths.len() >= 30, "found {} traces", paths.len());
    let mut checked = 0;
    for (i, path) in paths.iter().enumerate() {
        let tr = archipelago::trace::Trace::open(path).unwrap();
        let step = (0..tr.nstep()).max_by_key(|&s| tr.nrow(s)).unwrap_or(0);
        let case = trace_case(&tr, step);
        // Constraints sharing a non-contact key (a flex equality's rows, each with its own
        // support) keep their relative order as caller data: such steps are checked against
        // the CPU and across runs, not permuted.
        let permutations = if unique_non_contact_keys(&case) { 2 } else { 0 };
        check(
            &gpu,
            &case,
            permutations,
            500 + i as u64,
            &path.display().to_string(),
        );
        checked += 1;
    }
    assert_eq!(checked, paths.len());
}

/// Whether no two constraints of a world share a non-contact (type, id).
fn unique_non_contact_keys(case: &Case) -> bool {
    case.worlds.iter().all(|w| {
        let mut seen = std::collections::HashSet::new();
        w.constraints
            .iter()
            .filter(|c| !c.kind.is_contact())
            .all(|c| seen.insert((c.kind as i32, c.id)))
    })
}

#[test]
fn the_order_kernels_compile_for_hopper() {
    if !archipelago::gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    let src = archipelago::gpu::order::program_source();
    let (ptx, _) = archipelago::gpu::module::compile_cached(&src, (9, 0)).unwrap();
    // The assembler, which builds the machine code that a solver loads, accepts every kernel.
    archipelago::gpu::module::check_assembles(&src, (9, 0)).unwrap();
    for k in [
        "order_small_u32_e1",
        "order_small_u64_e4",
        "order_block_u32_e1",
        "order_block_u32_e4",
        "order_block_u64_e2",
        "order_radix_keys_u32",
        "order_radix_count_u32",
        "order_radix_scatter_u32",
        "order_radix_keys_u64",
        "order_radix_count_u64",
        "order_radix_scatter_u64",
        "order_radix_place",
    ] {
        assert!(ptx.contains(k), "{k} missing from the PTX");
    }
}
