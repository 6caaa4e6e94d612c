//! Allocation counts on the CPU modes' step path: once a mode has solved a batch of a model, it
//! solves any other batch of that model without allocating (its scratch is sized by the model,
//! not by the islands of the batches it has seen).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use archipelago::synth::{self, Spec, Topology};
use archipelago::{Batch, Input, Islands, Model, RowType, cpu};

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
