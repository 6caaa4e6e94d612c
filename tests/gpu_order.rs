//! The GPU canonical order against the CPU one: random keys on both sides of the 32-bit
//! boundary, both strategies, many-tile worlds, empty worlds, bounds errors and graph replay.
//! Without a device every test reports `skipped: no CUDA device` and passes.

use archipelago::order::device::{self, DeviceOrder, Strategy};
use archipelago::order::{Bounds, Canonicalizer, KeyBounds, KeyLayout, KeyWidth, RowKeys};
use archipelago::{Batch, Capacity, Error, Input, Model, RowType};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn device_or_skip() -> Option<device::Device> {
    match device::open() {
        Ok(d) => Some(d),
        Err(e) => {
            println!("skipped: no CUDA device ({e})");
            None
        }
    }
}

/// Worlds of `rows[w]` random rows; contact geoms below 2^geom_bits, collision ids below
/// 2^colid_bits, ids below 2^id_bits (rows 0 and 1 of the batch pin the spans).
fn batch(rng: &mut Rng, rows: &[usize], bits: (u32, u32, u32), ntree: i32) -> (Batch, RowKeys) {
    let (geom_bits, colid_bits, id_bits) = bits;
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    let mut r = 0;
    let pick = |rng: &mut Rng, bits: u32, r: usize| -> i32 {
        let max = ((1u64 << bits) - 1) as i32;
        match r {
            0 => 0,
            1 => max,
            _ if rng.below(3) == 0 => rng.below(4).min(max as u64) as i32,
            _ => (rng.next() & max as u64) as i32,
        }
    };
    for &n in rows {
        for _ in 0..n {
            let t = rng.below(ntree as u64) as i32;
            let support: Vec<i32> = (0..1 + rng.below(3))
                .map(|k| (t + k as i32) % ntree)
                .collect();
            if rng.below(3) == 0 {
                let kind = RowType::ALL[rng.below(5) as usize];
                b.row(kind, pick(rng, id_bits, r), &support);
                keys.push_other();
            } else {
                b.row(RowType::ContactPyramidal, r as i32, &support);
                let g = [pick(rng, geom_bits, r), pick(rng, geom_bits, r + 1)];
                keys.push_contact(g, pick(rng, colid_bits, r));
            }
            r += 1;
        }
        if rng.below(2) == 0 {
            b.rowless(0, &[0, ntree - 1]);
        }
        b.end_world();
    }
    (b.finish(), keys)
}

fn check_against_cpu(
    dev: &device::Device,
    model: &Model,
    batch: &Batch,
    keys: &RowKeys,
    what: &str,
) {
    let input = Input::new(model, batch).unwrap();
    let cap = Capacity::fit(model, batch);
    let mut cpu = Canonicalizer::new(&cap);
    let layout = KeyLayout::fit(batch, keys);
    let (want_batch, want_order) = cpu.canonicalize(&input, keys).unwrap();
    for strategy in [Strategy::Segmented, Strategy::Global] {
        let mut gpu = match DeviceOrder::new(dev, &cap, layout, strategy) {
            Ok(g) => g,
            Err(Error::Refused { reason, .. }) => {
                println!("{what}: {strategy:?} refused: {reason}");
                continue;
            }
            Err(e) => panic!("{what}: {e}"),
        };
        let (got_batch, got_order) = gpu.canonicalize(&input, keys).unwrap();
        assert_eq!(got_order, want_order, "{what}: {strategy:?} order");
        assert_eq!(got_batch, want_batch, "{what}: {strategy:?} batch");
    }
}

#[test]
fn kernels_compile_with_nvrtc() {
    if !device::nvrtc_present() {
        println!("skipped: no NVRTC library");
        return;
    }
    for arch in ["80", "90"] {
        if let Err(e) = device::compile(arch) {
            panic!("sm_{arch}: {e}");
        }
    }
}

#[test]
fn gpu_sort_matches_cpu_across_the_32_bit_boundary() {
    let Some(dev) = device_or_skip() else { return };
    let model = Model::from_dofnum(&[1; 16]).unwrap();
    let mut rng = Rng(21);
    for (bits, width) in [
        ((12, 5, 4), KeyWidth::Narrow),
        ((12, 6, 4), KeyWidth::Wide),
        ((28, 5, 20), KeyWidth::Wide),
        ((2, 1, 3), KeyWidth::Narrow),
    ] {
        let shapes: [&[usize]; 5] = [
            &[0],
            &[5, 0, 300, 1, 0],
            &[700; 9],
            &[40; 257],
            &[1024, 1025, 1, 255, 256, 257, 1023, 3000],
        ];
        for rows in shapes {
            let (b, keys) = batch(&mut rng, rows, bits, 16);
            let layout = KeyLayout::fit(&b, &keys);
            if b.nrow() > 2 {
                assert_eq!(layout.width(), width, "{bits:?}");
            }
            check_against_cpu(
                &dev,
                &model,
                &b,
                &keys,
                &format!("{bits:?} {:?}", &rows[..1]),
            );
        }
    }
}

#[test]
fn gpu_flags_rows_outside_a_fixed_layout() {
    let Some(dev) = device_or_skip() else { return };
    let model = Model::from_dofnum(&[1, 1]).unwrap();
    let mut b = Batch::builder();
    b.row(RowType::Equality, 3, &[0])
        .row(RowType::ContactPyramidal, 0, &[0, 1])
        .end_world();
    let batch = b.finish();
    let keys = RowKeys {
        geom: vec![[-1, -1], [4, 40]],
        colid: vec![-1, 0],
    };
    let layout = KeyLayout::new(KeyBounds {
        id: Some(Bounds::below(8)),
        geom: Some(Bounds::below(32)),
        colid: Some(Bounds::below(4)),
    });
    let input = Input::new(&model, &batch).unwrap();
    let cap = Capacity::fit(&model, &batch);
    for strategy in [Strategy::Segmented, Strategy::Global] {
        let mut gpu = DeviceOrder::new(&dev, &cap, layout, strategy).unwrap();
        let err = gpu.canonicalize(&input, &keys).unwrap_err();
        assert!(matches!(err, Error::KeyBounds { row: 1, .. }), "{err}");
    }
}

#[test]
fn gpu_order_replays_from_a_cuda_graph() {
    let Some(dev) = device_or_skip() else { return };
    let model = Model::from_dofnum(&[1; 8]).unwrap();
    let mut rng = Rng(5);
    let (b, keys) = batch(&mut rng, &[90; 64], (6, 2, 5), 8);
    let input = Input::new(&model, &b).unwrap();
    let cap = Capacity::fit(&model, &b);
    let layout = KeyLayout::fit(&b, &keys);
    for strategy in [Strategy::Segmented, Strategy::Global] {
        let mut gpu = DeviceOrder::new(&dev, &cap, layout, strategy).unwrap();
        let (want_b, want_o) = gpu
            .canonicalize(&input, &keys)
            .map(|(b, o)| (b.clone(), o.to_vec()))
            .unwrap();
        let graph = gpu.capture().unwrap();
        // Scramble the outputs with a different batch, then replay the graph on the first one.
        let (b2, k2) = batch(&mut rng, &[90; 64], (6, 2, 5), 8);
        let input2 = Input::new(&model, &b2).unwrap();
        gpu.upload(&input2, &k2).unwrap();
        gpu.enqueue().unwrap();
        gpu.download(&input2).unwrap();
        gpu.upload(&input, &keys).unwrap();
        for _ in 0..3 {
            graph.launch().unwrap();
        }
        let (got_b, got_o) = gpu.download(&input).unwrap();
        assert_eq!(got_o, &want_o[..], "{strategy:?}");
        assert_eq!(got_b, &want_b, "{strategy:?}");
    }
}
