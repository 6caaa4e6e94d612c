//! Allocation counts on the step path, by a counting allocator: a CPU mode that has solved a
//! batch of a model solves any other batch of it without allocating (its scratch is sized by the
//! model, not by the islands of the batches it has seen), and an engine's steps allocate
//! nothing from the first (every buffer is allocated when it is built).

#[path = "support/keys.rs"]
mod keys;
#[path = "support/options.rs"]
mod options;
#[path = "support/quotient_scenes.rs"]
mod scenes;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use archipelago::synth::{self, Spec, Topology};
use archipelago::{Batch, Capacity, Engine, Input, Islands, Mode, Model, Options, RowType, cpu};
use invalidation::Events;

/// Counts the allocations of the current thread (tests run on threads of their own).
struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCS.with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

/// One world of `ntree` trees: one island of every tree, or every tree an island of its own.
fn world(ntree: usize, one_island: bool) -> Batch {
    let mut b = Batch::builder();
    let all: Vec<i32> = (0..ntree as i32).collect();
    if one_island {
        b.row(RowType::Equality, 0, &all);
    } else {
        for t in all {
            b.row(RowType::LimitJoint, t, &[t]);
        }
    }
    b.end_world();
    b.finish()
}

#[test]
fn a_full_rebuild_mode_allocates_nothing_after_its_first_batch_of_a_model() {
    let model = Model::from_dofnum(&[1, 3, 1, 6, 2, 1, 1, 2].repeat(8)).unwrap();
    let few = world(model.ntree(), true);
    let many = world(model.ntree(), false);
    let spec = Spec {
        nworld: 1,
        ntree: model.ntree(),
        rows: 90,
        topology: Topology::Mixed,
        ..Spec::default()
    };
    let mixed: Vec<Batch> = (0..20).map(|s| synth::batch(&spec, s).1).collect();
    for name in ["dense", "dsu", "labelprop"] {
        let mut mode = cpu::by_name(name).unwrap();
        let mut out = Islands::default();
        // The first batch of the model: one island.
        mode.solve(&Input::new(&model, &few).unwrap(), &mut out)
            .unwrap();
        for batch in std::iter::once(&many).chain(&mixed) {
            let input = Input::new(&model, batch).unwrap();
            // Outputs sized first: only the mode's own scratch is counted.
            out.resize(model.ntree(), model.nv(), batch);
            let n = allocations(|| {
                mode.solve(&input, &mut out).unwrap();
            });
            assert_eq!(n, 0, "{name}: {} islands", out.nisland[0]);
        }
    }
}

#[test]
fn an_engine_allocates_nothing_from_its_first_step() {
    // Every buffer a step needs is allocated when the engine is built: its steps of a realistic
    // batch allocate nothing from the first, in every mode, reuse on and off, with and without
    // the canonical order.
    let spec = Spec::realistic(8, 48, 60);
    let (model, batch) = synth::batch(&spec, 3);
    let keys = keys::unique_contact_keys(&batch);
    let capacity = Capacity::fit(&model, &batch);
    for options in options::every() {
        let deterministic = options.deterministic;
        let mut engine = Engine::new(&model, capacity, options.clone()).unwrap();
        let events = Events::new();
        // Enough steps for `auto` to try both of its contenders.
        let n = allocations(|| {
            for _ in 0..16 {
                if deterministic {
                    engine.step_keyed(&batch, &keys, &events).unwrap();
                } else {
                    engine.step(&batch, &events).unwrap();
                }
            }
        });
        assert_eq!(n, 0, "{options:?}");
    }
}

#[test]
fn engine_steps_allocate_nothing_through_every_kind_of_event() {
    // Random scenes' worlds mutated by every source, reported and not (rebuilds, guard
    // findings, sleep): the engine's held bytes never change and no step allocates, with the
    // quotient alone and under `auto`.
    for mode in [Mode::Quotient, Mode::Auto] {
        let mut rng = scenes::Rng::new(11);
        let scene = scenes::Scene::random(&mut rng, 30, 15, 4);
        let cap = Capacity {
            nworld: 16,
            ntree: 30,
            nv: scene.model.nv(),
            njmax: 400,
            nsupport: 1600,
            nedge: 4,
        };
        let options = Options {
            mode,
            ..Options::default()
        };
        let mut e = Engine::new(&scene.model, cap, options).unwrap();
        let bytes = e.held_bytes();
        let mut worlds = vec![scenes::World::new(&scene); 16];
        let mut tally = scenes::Tally::default();
        let mut events = Events::new();
        for step in 0..300 {
            events.clear();
            let last = e.islands().clone();
            for (w, world) in worlds.iter_mut().enumerate() {
                if rng.chance(0.3) {
                    let islands = if last.nworld == 0 {
                        vec![-1; 30]
                    } else {
                        last.world(w).tree_island.to_vec()
                    };
                    let (w, r) = (w as u32, &mut rng);
                    scenes::mutate(&scene, world, w, &islands, r, 0.7, &mut events, &mut tally);
                }
            }
            let batch = scenes::batch(&scene, &worlds, &mut rng);
            let n = allocations(|| {
                e.step(&batch, &events).unwrap();
            });
            assert_eq!(n, 0, "{}: step {step}", mode.name());
            assert_eq!(e.held_bytes(), bytes);
        }
        let c = e.quotient().counters();
        assert!(c.contracted > 1 && c.guarded + c.reported > 0, "{c:?}");
    }
}
