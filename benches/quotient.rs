//! CPU: the quotient against a full rebuild (`dsu`) for static shares of about 0%, 50%, 90% and
//! 99%, the cost of rebuilding every quotient, and — for toggle-heavy worlds — equalities
//! classified static (a toggle rebuilds the world) against dynamic (solved every step).
//!
//! Also the reuse of unchanged worlds (`Quotient::set_reuse`) on step sequences with 0%, 50%
//! and 90% of the worlds at rest, and what recording a step's events costs without stepping
//! (as `auto` does while a full rebuild solves).
//!
//! `cargo bench --bench quotient`; each benchmark id carries the measured static share.

use std::hint::black_box;
use std::time::Duration;

use archipelago::cpu::{CpuMode, dsu::Dsu};
use archipelago::quotient::step::{self, StepScratch};
use archipelago::quotient::{EqPolicy, Policy, Quotient, Quotients, classify};
use archipelago::synth::Rng;
use archipelago::{Batch, BatchBuilder, Capacity, Input, Islands, Model, RowType};
use criterion::{Criterion, criterion_group, criterion_main};
use invalidation::Events;

const NWORLD: usize = 64;

/// A scene: `ntree` one-dof trees, static rows written by `statics`, `ncontact` random
/// two-tree contacts (2 rows each) per world.
struct Shape {
    name: &'static str,
    ntree: usize,
    ncontact: usize,
    statics: fn(&mut BatchBuilder, usize, bool),
}

/// Equality `eq` (rows × trees) unless switched off.
fn eq_rows(b: &mut BatchBuilder, eq: i32, rows: usize, support: &[i32]) {
    for _ in 0..rows {
        b.row(RowType::Equality, eq, support);
    }
}

const SHAPES: [Shape; 4] = [
    Shape {
        name: "contacts-only",
        ntree: 64,
        ncontact: 48,
        statics: |_, _, _| {},
    },
    Shape {
        // Robots: connect equalities closing loops, friction loss on every dof.
        name: "humanoid-like",
        ntree: 64,
        ncontact: 40,
        statics: |b, ntree, toggled| {
            for k in 0..16 {
                if !(toggled && k == 0) {
                    eq_rows(b, k, 3, &[4 * k, 4 * k + 2]);
                }
            }
            for d in 0..ntree as i32 {
                b.row(RowType::FrictionDof, d, &[d]);
            }
        },
    },
    Shape {
        // A mechanism: a chain of welds.
        name: "mechanism",
        ntree: 128,
        ncontact: 20,
        statics: |b, ntree, toggled| {
            for k in 0..ntree as i32 / 2 {
                if !(toggled && k == 0) {
                    eq_rows(b, k, 6, &[2 * k, (2 * k + 1) % ntree as i32]);
                }
            }
        },
    },
    Shape {
        // A cloth: flex edge equalities on a 16×16 grid plus the stiffness coupling.
        name: "cloth-like",
        ntree: 256,
        ncontact: 2,
        statics: |b, ntree, toggled| {
            let side = 16;
            let mut eq = 0;
            for y in 0..side {
                for x in 0..side {
                    let t = y * side + x;
                    for n in [t + 1, t + side] {
                        let ok = (n == t + 1 && x + 1 < side) || (n == t + side && y + 1 < side);
                        if ok && !(toggled && eq == 0) {
                            eq_rows(b, eq, 1, &[t, n]);
                        }
                        eq += ok as i32;
                    }
                }
            }
            let _ = ntree;
        },
    },
];

fn model(shape: &Shape) -> Model {
    Model::from_dofnum(&vec![1; shape.ntree]).unwrap()
}

/// One batch; worlds for which `toggled(w)` holds have equality 0 switched off.
fn batch(shape: &Shape, seed: u64, toggled: impl Fn(usize) -> bool) -> Batch {
    let mut rng = Rng::new(seed);
    let mut b = Batch::builder();
    for w in 0..NWORLD {
        (shape.statics)(&mut b, shape.ntree, toggled(w));
        for c in 0..shape.ncontact as i32 {
            let (a, z) = (rng.below(shape.ntree) as i32, rng.below(shape.ntree) as i32);
            b.row(RowType::ContactPyramidal, c, &[a, z]);
            b.row(RowType::ContactPyramidal, c, &[a, z]);
        }
        if shape.name == "cloth-like" {
            b.rowless(0, &(0..shape.ntree as i32).collect::<Vec<_>>());
        }
        b.end_world();
    }
    b.finish()
}

/// The group every bench here is in. Its sample size and times are the defaults of the
/// `criterion_group!` config below, not set on the group: set on a group they overrode
/// `--warm-up-time` and `--measurement-time` given on the command line.
fn group(c: &mut Criterion) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
    c.benchmark_group("quotient")
}

fn shares(c: &mut Criterion) {
    let mut g = group(c);
    for shape in &SHAPES {
        let model = model(shape);
        let batch = batch(shape, 1, |_| false);
        let input = Input::new(&model, &batch).unwrap();
        let cap = Capacity::fit(&model, &batch);
        let share = classify::share(&input, &Policy::default().classifier());
        let tag = format!(
            "{}/static{:.0}%",
            shape.name,
            100.0 * share.entry_fraction()
        );
        let mut out = Islands::default();
        let oracle = archipelago::oracle::solve(&input);
        // Each checked before it is timed (the quotient twice: its first step contracts, the
        // timed ones replay its quotients).
        let mut dsu = Dsu::default();
        dsu.solve(&input, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&oracle), None, "{tag}/dsu");
        g.bench_function(format!("{tag}/dsu"), |b| {
            b.iter(|| dsu.solve(black_box(&input), &mut out).unwrap())
        });
        let mut q = Quotient::new(&cap, Policy::default());
        for _ in 0..2 {
            q.solve(&input, &mut out).unwrap();
            assert_eq!(out.first_mismatch(&oracle), None, "{tag}/quotient");
        }
        g.bench_function(format!("{tag}/quotient"), |b| {
            b.iter(|| q.solve(black_box(&input), &mut out).unwrap())
        });
        // Connectivity alone (min-root labels per world, no maps): what the quotient replaces.
        let classifier = Policy::default().classifier();
        let mut scratch = StepScratch::new(shape.ntree);
        let mut labels = vec![0; shape.ntree];
        g.bench_function(format!("{tag}/labels-direct"), |b| {
            b.iter(|| {
                for w in 0..NWORLD {
                    step::solve_direct(black_box(&batch), w, &mut scratch, &mut labels);
                }
            })
        });
        let mut cache = Quotients::new(&cap);
        for w in 0..NWORLD {
            cache.build(&batch, w, &classifier, &mut scratch.scan);
        }
        g.bench_function(format!("{tag}/labels-quotient"), |b| {
            b.iter(|| {
                for w in 0..NWORLD {
                    let view = cache.view(cache.slot_of(w).unwrap());
                    let b = black_box(&batch);
                    step::solve_world(&view, b, w, &classifier, &mut scratch, &mut labels).unwrap();
                }
            })
        });
        // Every step rebuilds every quotient (worst case: a capacity event each step).
        let mut q = Quotient::new(&cap, Policy::default());
        let mut all = Events::new();
        all.capacity_changed();
        g.bench_function(format!("{tag}/quotient-rebuild-all"), |b| {
            b.iter(|| q.step(black_box(&input), &all, &mut out).unwrap())
        });
        // The same rebuilds without the solve: the host half a device quotient pays.
        g.bench_function(format!("{tag}/quotient-rebuild-all/host-half"), |b| {
            b.iter(|| q.prepare(black_box(&input), &all).unwrap())
        });
    }
    g.finish();
}

/// Worlds toggling equality 0 every step: `fraction` of them, alternating on and off.
fn toggles(c: &mut Criterion) {
    let mut g = group(c);
    for shape in &SHAPES[1..] {
        let model = model(shape);
        for percent in [10usize, 100] {
            let toggling = |w: usize| w * 100 < percent * NWORLD;
            let on = batch(shape, 1, |_| false);
            let off = batch(shape, 1, toggling);
            let inputs = [&on, &off].map(|b| Input::new(&model, b).unwrap());
            let cap = Capacity::fit(&model, &on);
            let events = [true, false].map(|active| {
                let mut e = Events::new();
                for w in (0..NWORLD).filter(|&w| toggling(w)) {
                    e.eq_active(w as u32, 0, active);
                }
                e
            });
            for (label, eq) in [
                ("eq-static", EqPolicy::Static),
                ("eq-dynamic", EqPolicy::Dynamic),
                ("eq-learn", EqPolicy::Learn { after: 2 }),
            ] {
                let policy = Policy {
                    eq,
                    ..Policy::default()
                };
                let mut q = Quotient::new(&cap, policy);
                let mut out = Islands::default();
                let mut k = 0;
                g.bench_function(format!("{}/toggle{percent}%/{label}", shape.name), |b| {
                    b.iter(|| {
                        // Step k has equality 0 off (k odd) or back on (k even).
                        k ^= 1;
                        let (input, ev) = (&inputs[k], &events[k]);
                        q.step(black_box(input), ev, &mut out).unwrap()
                    })
                });
            }
            let mut dsu = Dsu::default();
            let mut out = Islands::default();
            let mut k = 0;
            g.bench_function(format!("{}/toggle{percent}%/dsu", shape.name), |b| {
                b.iter(|| {
                    k ^= 1;
                    dsu.solve(black_box(&inputs[k]), &mut out).unwrap()
                })
            });
        }
    }
    g.finish();
}

/// The device (skipped without one): the GPU quotient against every GPU full-rebuild mode, per
/// batch step including upload and download, at 64 and 1024 worlds.
fn gpu(c: &mut Criterion) {
    use archipelago::gpu::{Gpu, Mode as GpuMode, Solver, quotient::QuotientSolver};
    let gpu = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("gpu benches skipped: {e}");
            return;
        }
    };
    let mut g = group(c);
    for nworld in [64usize, 1024] {
        for shape in &SHAPES {
            let model = model(shape);
            let one = batch(shape, 1, |_| false);
            // Tile the 64 generated worlds up to `nworld`.
            let mut b = Batch::builder();
            for w in 0..nworld {
                let src = w % NWORLD;
                for r in one.rows_of(src) {
                    b.row(one.row_type[r], one.row_id[r], one.row_support_of(r));
                }
                b.edges_from(&one, src);
                b.end_world();
            }
            let batch = b.finish();
            let input = Input::new(&model, &batch).unwrap();
            let cap = Capacity::fit(&model, &batch);
            let share = classify::share(&input, &Policy::default().classifier());
            let tag = format!(
                "gpu/{nworld}w/{}/static{:.0}%",
                shape.name,
                100.0 * share.entry_fraction()
            );
            let mut out = Islands::default();
            if let Ok(mut q) = QuotientSolver::new(&gpu, cap, &model, Policy::default()) {
                // The same batch every iteration: with reuse every world would be reused.
                q.set_reuse(false).unwrap();
                let none = Events::new();
                g.bench_function(format!("{tag}/quotient"), |b| {
                    b.iter(|| q.step(black_box(&input), &none, &mut out).unwrap())
                });
            }
            for mode in GpuMode::ALL {
                let Ok(mut s) = Solver::new(&gpu, mode, cap, &model) else {
                    continue;
                };
                g.bench_function(format!("{tag}/{}", mode.name()), |b| {
                    b.iter(|| s.solve(black_box(&input), &mut out).unwrap())
                });
            }
        }
    }
    g.finish();
}

/// Reuse of unchanged worlds: steps in which `rest` of the worlds emit the rows of their last
/// step again and the others get new contacts (two batches that differ in their contacts,
/// alternated per moving world), the quotient with and without reuse (and with reuse but
/// without its same-partition path) against `dsu`.
fn reuse(c: &mut Criterion) {
    let mut g = group(c);
    for shape in &SHAPES {
        let model = model(shape);
        let versions = [1, 2].map(|seed| batch(shape, seed, |_| false));
        let cap = Capacity::fit(&model, &versions[0]);
        for rest in [0usize, 50, 90] {
            // A cycle of steps; world w moves at step k unless (w + 7k) % 100 < rest·100/100.
            let steps: Vec<Batch> = (0..8)
                .scan(vec![0usize; NWORLD], |shown, k| {
                    let mut b = Batch::builder();
                    for (w, v) in shown.iter_mut().enumerate() {
                        if (w * 13 + 7 * k) % 100 >= rest {
                            *v ^= 1;
                        }
                        b.world_from(&versions[*v], w);
                    }
                    Some(b.finish())
                })
                .collect();
            let inputs: Vec<Input> = steps
                .iter()
                .map(|b| Input::new(&model, b).unwrap())
                .collect();
            let none = Events::new();
            let mut out = Islands::default();
            // Reuse off, on, and on without the same-partition path (every changed world mapped
            // in full).
            for (on, partition) in [(false, true), (true, true), (true, false)] {
                let mut q = Quotient::new(&cap, Policy::default());
                q.set_reuse(on);
                q.set_partition_reuse(partition);
                let mut k = 0;
                let label = match (on, partition) {
                    (false, _) => "reuse-off",
                    (true, true) => "reuse-on",
                    (true, false) => "reuse-on-full-maps",
                };
                g.bench_function(format!("{}/rest{rest}%/{label}", shape.name), |b| {
                    b.iter(|| {
                        k = (k + 1) % inputs.len();
                        q.step(black_box(&inputs[k]), &none, &mut out).unwrap()
                    })
                });
            }
            let mut dsu = Dsu::default();
            let mut k = 0;
            g.bench_function(format!("{}/rest{rest}%/dsu", shape.name), |b| {
                b.iter(|| {
                    k = (k + 1) % inputs.len();
                    dsu.solve(black_box(&inputs[k]), &mut out).unwrap()
                })
            });
        }
    }
    g.finish();
}

/// Recording a step's toggles without stepping (what `auto` does while a full rebuild solves):
/// 4,096 worlds each switching equality 0, learned dynamic after two switches (the default
/// policy), so every event is absorbed.
fn record(c: &mut Criterion) {
    let mut g = group(c);
    const WORLDS: u32 = 4096;
    let shape = &SHAPES[2];
    let model = model(shape);
    let on = batch(shape, 1, |_| false);
    let cap = Capacity {
        nworld: WORLDS as usize,
        ..Capacity::fit(&model, &on)
    };
    let mut q = Quotient::new(&cap, Policy::default());
    let events = [true, false].map(|active| {
        let mut e = Events::new();
        for w in 0..WORLDS {
            e.eq_active(w, 0, active);
        }
        e
    });
    let mut k = 0;
    g.bench_function("record/4096-toggles/eq-learn", |b| {
        b.iter(|| {
            k ^= 1;
            q.record(black_box(&events[k])).unwrap()
        })
    });
    // A cloth's 256 trees asleep, then awake again, in 400 of 4,096 worlds: 102,400 events a
    // step (as many as a sixteenth of the bench's cloth-99% reports), as `auto` records them
    // while a full rebuild solves.
    let cloth = &SHAPES[3];
    let cap = Capacity {
        nworld: WORLDS as usize,
        ..Capacity::fit(&self::model(cloth), &batch(cloth, 1, |_| false))
    };
    let mut q = Quotient::new(&cap, Policy::default());
    let (mut sleep, mut wake) = (Events::new(), Events::new());
    for w in (0..WORLDS).step_by(10).take(400) {
        for t in 0..cloth.ntree as i32 {
            sleep.sleep(w, t);
            wake.wake(w, t);
        }
    }
    g.bench_function("record/400x256-sleeps-and-wakes", |b| {
        b.iter(|| {
            q.record(black_box(&sleep)).unwrap();
            q.record(black_box(&wake)).unwrap()
        })
    });
    g.finish();
}

/// The host half of the steps at which a cloth's component falls asleep and wakes again in
/// every world, reported tree by tree (64 worlds × 256 trees: 16,384 sleep events, then as
/// many wake events): the quotients stay (the node is masked while asleep), and each node the
/// events touch is checked once for trees left in both states.
fn sleep(c: &mut Criterion) {
    let mut g = group(c);
    let shape = &SHAPES[3];
    let model = model(shape);
    let awake = batch(shape, 1, |_| false);
    let mut b = Batch::builder();
    for _ in 0..NWORLD {
        b.end_world();
    }
    let asleep = b.finish();
    let (mut sleep, mut wake) = (Events::new(), Events::new());
    for w in 0..NWORLD as u32 {
        for t in 0..shape.ntree as i32 {
            sleep.sleep(w, t);
            wake.wake(w, t);
        }
    }
    let mut q = Quotient::new(&Capacity::fit(&model, &awake), Policy::default());
    let (awake, asleep) = (
        Input::new(&model, &awake).unwrap(),
        Input::new(&model, &asleep).unwrap(),
    );
    q.prepare(&awake, &Events::new()).unwrap();
    g.bench_function(format!("{}/sleep-and-wake/host-half", shape.name), |b| {
        b.iter(|| {
            q.prepare(&asleep, black_box(&sleep)).unwrap();
            q.prepare(&awake, black_box(&wake)).unwrap();
        })
    });
    assert_eq!(q.counters().partial_sleep, 0, "the component slept whole");
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = shares, toggles, reuse, record, sleep, gpu
}
criterion_main!(benches);
