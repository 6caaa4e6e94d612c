//! Criterion benches of the CPU modes on generated realistic batches, one group per tree count.
//! `dense` is skipped where it refuses (its `8·nworld·ntree²` scratch over the default cap).
//! Also the per-step host checks every `Engine::step` makes before any mode runs: validating
//! the batch (`Input::new`) and fitting it to the capacity.
//!
//! And the canonical maps alone (`maps::fill_world`, which every CPU mode runs after its
//! connectivity), over every world of the same batches and of a cloth-like batch (one island
//! of 400 trees per world).
//!
//! Run: `cargo bench --bench cpu_modes` (the checks alone: `cargo bench --bench cpu_modes -- checks`,
//! the maps alone: `-- maps/`).

use std::hint::black_box;
use std::time::Duration;

use archipelago::maps::{self, MapScratch};
use archipelago::synth::{self, Spec};
use archipelago::{Batch, Capacity, Error, Input, Islands, Model, RowType, cpu, oracle};
use criterion::{Criterion, criterion_group, criterion_main};

/// (trees, worlds, rows per world): worlds shrink as trees grow to keep a run short.
const SHAPES: [(usize, usize, usize); 5] = [
    (22, 1024, 100),
    (64, 512, 100),
    (256, 128, 256),
    (1024, 16, 1024),
    (4096, 4, 4096),
];

fn modes(c: &mut Criterion) {
    for (ntree, nworld, rows) in SHAPES {
        let (model, batch) = synth::batch(&Spec::realistic(nworld, ntree, rows), 42);
        let input = Input::new(&model, &batch).expect("generated batches are valid");
        let mut group = c.benchmark_group(format!("cpu/{ntree}trees_{nworld}worlds"));
        let oracle = oracle::solve(&input);
        for name in cpu::NAMES {
            let mut mode = cpu::by_name(name).expect("listed mode");
            // One batch solved again and again: with reuse the quotient would time its cache.
            mode.set_reuse(false);
            let mut out = Islands::default();
            match mode.solve(&input, &mut out) {
                Err(Error::Refused { .. }) => continue,
                other => {
                    other.expect("a valid batch solves");
                }
            }
            // What is timed is exact: the untimed first step, and (below) the last timed one
            // (the first again where the filter leaves this mode out).
            assert_eq!(out.first_mismatch(&oracle), None, "{name}");
            group.bench_function(name, |b| {
                b.iter(|| black_box(mode.solve(black_box(&input), &mut out)))
            });
            assert_eq!(out.first_mismatch(&oracle), None, "{name}, timed");
        }
        group.finish();
    }
}

/// The host checks of a step, on batches of the GPU benchmarks' sizes (where they are the part
/// of a step's wall that no device can take).
fn checks(c: &mut Criterion) {
    let mut group = c.benchmark_group("checks");
    for (nworld, ntree, rows) in [(1024, 64, 212), (4096, 64, 100)] {
        let (model, batch) = synth::batch(&Spec::realistic(nworld, ntree, rows), 42);
        let cap = Capacity::fit(&model, &batch);
        let input = Input::new(&model, &batch).expect("generated batches are valid");
        let shape = format!("{nworld}x{ntree}_{}rows", batch.nrow());
        group.bench_function(format!("validate/{shape}"), |b| {
            b.iter(|| black_box(Input::new(black_box(&model), black_box(&batch)).is_ok()))
        });
        group.bench_function(format!("fits/{shape}"), |b| {
            b.iter(|| black_box(cap.fits(black_box(&input)).is_ok()))
        });
    }
    group.finish();
}

/// `maps::fill_world` over every world, from the labels of a full solve.
fn maps(c: &mut Criterion) {
    let mut group = c.benchmark_group("maps");
    let shapes = SHAPES[..4].iter().map(|&(ntree, nworld, rows)| {
        let (model, batch) = synth::batch(&Spec::realistic(nworld, ntree, rows), 42);
        (format!("{ntree}trees_{nworld}worlds"), model, batch)
    });
    for (name, model, batch) in shapes.chain([cloth()]) {
        let input = Input::new(&model, &batch).expect("generated batches are valid");
        let mut out = Islands::default();
        cpu::by_name("dsu")
            .expect("listed mode")
            .solve(&input, &mut out)
            .expect("a valid batch solves");
        let nisland = out.nisland.clone();
        let mut scratch = MapScratch::with_capacity(model.ntree());
        group.bench_function(name, |b| {
            b.iter(|| {
                for (w, &n) in nisland.iter().enumerate() {
                    maps::fill_world(black_box(&input), w, n, &mut out, &mut scratch);
                }
            })
        });
    }
    group.finish();
}

/// 256 worlds of a 20×20 cloth: 400 trees of 3 dofs in one island (an equality row per edge),
/// a few one-tree contacts.
fn cloth() -> (String, Model, Batch) {
    let (nworld, side) = (256, 20);
    let mut b = Batch::builder();
    for w in 0..nworld {
        let mut eq = 0;
        for y in 0..side {
            for x in 0..side {
                let t = y * side + x;
                for (ok, n) in [(x + 1 < side, t + 1), (y + 1 < side, t + side)] {
                    if ok {
                        b.row(RowType::Equality, eq, &[t, n]);
                        eq += 1;
                    }
                }
            }
        }
        for k in 0..8 {
            b.row(
                RowType::ContactPyramidal,
                k,
                &[(w + 53 * k) % (side * side)],
            );
        }
        b.end_world();
    }
    let model = Model::from_dofnum(&[3; 400]).expect("valid");
    ("cloth_400trees_256worlds".into(), model, b.finish())
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500));
    targets = modes, checks, maps
}
criterion_main!(benches);
