//! Deterministic mode on versus off on the CPU: the cost of putting every world's rows in
//! canonical order, per shape, against the `dsu` mode's solve. (The GPU comparison, every mode
//! with the order step inside its captured graph, is `archipelago bench --deterministic`.)
//!
//! `cargo bench --bench order [-- --quick] [-- --out FILE]` prints a markdown table (and writes
//! it to FILE). Rows arrive in a random order, as GPU contact generation leaves them.

use std::time::Instant;

use archipelago::order::{Canonicalizer, KeyLayout, RowKeys};
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Input, Islands, Model, RowType, cpu};

struct Shape {
    name: &'static str,
    nworld: usize,
    ntree: usize,
    /// Contacts per world (4 pyramidal rows each) and joint-limit rows per world.
    contacts: usize,
    limits: usize,
    chain: bool,
}

const SHAPES: [Shape; 6] = [
    Shape {
        name: "aloha-like",
        nworld: 2048,
        ntree: 22,
        contacts: 32,
        limits: 4,
        chain: false,
    },
    Shape {
        name: "8192x64",
        nworld: 8192,
        ntree: 64,
        contacts: 24,
        limits: 4,
        chain: false,
    },
    Shape {
        name: "humanoid-like",
        nworld: 256,
        ntree: 200,
        contacts: 270,
        limits: 10,
        chain: false,
    },
    Shape {
        name: "particle-like",
        nworld: 1024,
        ntree: 1000,
        contacts: 990,
        limits: 0,
        chain: false,
    },
    Shape {
        name: "1024x256",
        nworld: 1024,
        ntree: 256,
        contacts: 200,
        limits: 16,
        chain: false,
    },
    Shape {
        name: "1x4096 chain",
        nworld: 1,
        ntree: 4096,
        contacts: 4095,
        limits: 0,
        chain: true,
    },
];

/// A batch of the shape: contacts between random geoms (geom g on tree g / 2), each 4 rows,
/// in random arrival order with ids numbered in that order; joint limits first.
fn make(shape: &Shape, rng: &mut Rng) -> (Model, Batch, RowKeys) {
    let model = Model::from_dofnum(&vec![1; shape.ntree]).unwrap();
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    let ngeom = 2 * shape.ntree;
    for _ in 0..shape.nworld {
        for l in 0..shape.limits {
            b.row(RowType::LimitJoint, l as i32, &[(l % shape.ntree) as i32]);
            keys.push_other();
        }
        for c in 0..shape.contacts {
            let (g1, g2) = if shape.chain {
                (2 * c, 2 * c + 2)
            } else {
                (rng.below(ngeom), rng.below(ngeom))
            };
            let (g1, g2) = (g1.min(g2), g1.max(g2));
            let mut support = vec![(g1 / 2) as i32, (g2 / 2) as i32];
            support.dedup();
            let colid = rng.below(4) as i32;
            let rows = if shape.chain { 1 } else { 4 };
            for _ in 0..rows {
                b.row(RowType::ContactPyramidal, c as i32, &support);
                keys.push_contact([g1 as i32, g2 as i32], colid);
            }
        }
        b.end_world();
    }
    (model, b.finish(), keys)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median wall time of `f` in µs: at least 3 runs, up to `budget` seconds.
fn time(budget: f64, mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    let mut t = Vec::new();
    while t.len() < 3 || (start.elapsed().as_secs_f64() < budget && t.len() < 200) {
        let s = Instant::now();
        f();
        t.push(s.elapsed().as_secs_f64() * 1e6);
    }
    median(t)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1));
    let budget = if quick { 0.3 } else { 2.0 };
    let mut table = String::new();
    table.push_str(
        "| shape | worlds | rows/world | key bits | CPU dsu off µs | CPU order µs | CPU on/off |\n",
    );
    table.push_str("|---|---|---|---|---|---|---|\n");
    for shape in &SHAPES {
        let mut rng = Rng::new(42);
        let (model, batch, keys) = make(shape, &mut rng);
        let input = Input::new(&model, &batch).unwrap();
        let cap = Capacity::fit(&model, &batch);
        let layout = KeyLayout::fit(&batch, &keys);
        let mut dsu = cpu::by_name("dsu").unwrap();
        let mut out = Islands::default();
        let off = time(budget, || {
            dsu.solve(&input, &mut out).unwrap();
        });
        let mut canon = Canonicalizer::new(&cap);
        let order = time(budget, || {
            canon.canonicalize(&input, &keys).unwrap();
        });
        let line = format!(
            "| {} | {} | {} | {} | {:.0} | {:.0} | {:.2} |\n",
            shape.name,
            shape.nworld,
            batch.nrow() / shape.nworld,
            layout.bits(),
            off,
            order,
            (off + order) / off,
        );
        print!("{line}");
        table.push_str(&line);
    }
    println!("\n{table}");
    if let Some(path) = out {
        std::fs::write(path, &table).expect("write the table");
    }
}
