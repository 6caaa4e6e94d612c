//! The canonical-order machinery: radix sort against the standard library's stable sort, key
//! layouts on both sides of the 32- and 64-bit boundaries, gather and inverse.

use archipelago::order::keys::{CLASS_BITS, CONTACT_CLASS};
use archipelago::order::sort::sort_pairs;
use archipelago::order::{
    Bounds, Canonicalizer, KeyBounds, KeyLayout, KeyWidth, RadixSorter, RowKeys, gather,
};
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Error, Input, Model, RowType};

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Keys of `bits` bits, drawn from few distinct values so ties (stability) are exercised.
fn random_keys(rng: &mut Rng, n: usize, bits: u32, distinct: usize) -> Vec<u64> {
    let pool: Vec<u64> = (0..distinct).map(|_| rng.next_u64() & mask(bits)).collect();
    (0..n).map(|_| pool[rng.below(pool.len())]).collect()
}

fn std_order(keys: &[u64]) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
    idx.sort_by_key(|&i| keys[i as usize]); // stable
    idx
}

#[test]
fn radix_matches_std_stable_sort_for_every_width() {
    let mut rng = Rng::new(1);
    let mut sorter = RadixSorter::new(4);
    for bits in [1, 7, 8, 9, 16, 24, 31, 32, 33, 40, 63, 64] {
        for n in [0, 1, 2, 17, 300, 5000] {
            for distinct in [1, 3, n.max(1)] {
                let keys = random_keys(&mut rng, n, bits, distinct);
                let want = std_order(&keys);
                let mut vals: Vec<u32> = (0..n as u32).collect();
                if bits <= 32 {
                    let mut k32: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
                    sorter.sort_u32(&mut k32, &mut vals, bits).unwrap();
                    assert!(k32.windows(2).all(|p| p[0] <= p[1]));
                } else {
                    let mut k64 = keys.clone();
                    sorter.sort_u64(&mut k64, &mut vals, bits).unwrap();
                    assert!(k64.windows(2).all(|p| p[0] <= p[1]));
                }
                assert_eq!(vals, want, "bits {bits}, n {n}, distinct {distinct}");
            }
        }
    }
}

#[test]
fn radix_sorts_only_the_requested_low_bits() {
    // Bits above `bits` are ignored: a 32-bit layout never looks at the high digits.
    let mut keys = vec![0x102u32, 1, 0x200, 3];
    let mut vals = vec![0, 1, 2, 3];
    let (mut tk, mut tv) = (vec![0; 4], vec![0; 4]);
    sort_pairs(&mut keys, &mut vals, 8, &mut tk, &mut tv).unwrap();
    assert_eq!(vals, [2, 1, 0, 3]);
}

#[test]
fn sort_pairs_reports_short_scratch() {
    let (mut keys, mut vals) = (vec![2u32, 1], vec![0u32, 1]);
    let (mut tk, mut tv) = (vec![0; 1], vec![0; 2]);
    let err = sort_pairs(&mut keys, &mut vals, 8, &mut tk, &mut tv).unwrap_err();
    assert!(matches!(err, Error::Offsets { .. }), "{err}");
    assert_eq!(vals, [0, 1]);
}

fn layout(geom_bits: u32, colid_bits: u32, id_bits: u32) -> KeyLayout {
    let span = |bits: u32| Bounds {
        min: -1,
        max: (-1i64 + mask(bits) as i64) as i32,
    };
    KeyLayout::new(KeyBounds {
        id: Some(span(id_bits)),
        geom: Some(span(geom_bits)),
        colid: Some(span(colid_bits)),
    })
}

#[test]
fn layout_width_on_both_sides_of_each_boundary() {
    let cases = [
        (layout(12, 5, 4), 32, KeyWidth::Narrow),
        (layout(12, 6, 4), 33, KeyWidth::Wide),
        (layout(0, 0, 29), 32, KeyWidth::Narrow),
        (layout(0, 0, 30), 33, KeyWidth::Wide),
        (layout(28, 5, 31), 64, KeyWidth::Wide),
        (layout(28, 6, 31), 65, KeyWidth::Split),
        (layout(31, 31, 31), 96, KeyWidth::Split),
    ];
    for (l, bits, width) in cases {
        assert_eq!((l.bits(), l.width()), (bits, width), "{l:?}");
    }
    let l = layout(12, 5, 4);
    let top = |k: u128| (k >> l.payload_bits()) as u32;
    assert_eq!(top(l.contact_key([-1, 4094], 30).unwrap()), CONTACT_CLASS);
    assert_eq!(top(l.other_key(RowType::LimitTendon, 14).unwrap()), 4);
    assert_eq!(l.contact_key([4095, 0], 0), None, "geom past the bounds");
    assert_eq!(
        l.other_key(RowType::Equality, 15),
        None,
        "id past the bounds"
    );
    assert_eq!(CLASS_BITS + l.payload_bits(), 32);
}

/// One world of random rows: non-contacts of every type and contacts whose geom and collision
/// ids span exactly `geom_bits` / `colid_bits` bits (so the fitted layout lands where asked).
fn wide_world(
    rng: &mut Rng,
    b: &mut archipelago::BatchBuilder,
    keys: &mut RowKeys,
    nrow: usize,
    geom_bits: u32,
    colid_bits: u32,
    id_bits: u32,
) {
    let pick = |rng: &mut Rng, bits: u32, r: usize| -> i32 {
        // Rows 0 and 1 pin the span; ties come from a small pool.
        match r {
            0 => 0,
            1 => mask(bits) as i32,
            _ if rng.below(2) == 0 => rng.below(3) as i32,
            _ => (rng.next_u64() & mask(bits)) as i32,
        }
    };
    for r in 0..nrow {
        if r % 3 == 2 {
            let kind = RowType::ALL[rng.below(5)];
            b.row(kind, pick(rng, id_bits, r / 3), &[0]);
            keys.push_other();
        } else {
            let kind = RowType::ALL[5 + rng.below(3)];
            b.row(kind, r as i32, &[1]);
            let g = [pick(rng, geom_bits, r), pick(rng, geom_bits, r + 1)];
            keys.push_contact(g, pick(rng, colid_bits, r));
        }
    }
    b.end_world();
}

/// The canonical order by comparing tuples, with the input position as the last tie-breaker.
fn tuple_order(batch: &Batch, keys: &RowKeys) -> Vec<u32> {
    let mut order = Vec::new();
    for w in 0..batch.nworld() {
        let mut rows: Vec<usize> = batch.rows_of(w).collect();
        rows.sort_by_key(|&r| {
            let kind = batch.row_type[r];
            if kind.is_contact() {
                let [g1, g2] = keys.geom[r];
                (
                    CONTACT_CLASS,
                    i64::from(g1),
                    i64::from(g2),
                    keys.colid[r],
                    r,
                )
            } else {
                (kind as u32, i64::from(batch.row_id[r]), 0, 0, r)
            }
        });
        order.extend(rows.iter().map(|&r| r as u32));
    }
    order
}

#[test]
fn canonical_order_matches_tuple_sort_across_the_overflow_boundaries() {
    let model = Model::from_dofnum(&[1, 1]).unwrap();
    let mut rng = Rng::new(7);
    let cases = [
        (12, 5, 4, 32, KeyWidth::Narrow),
        (12, 6, 4, 33, KeyWidth::Wide),
        (0, 0, 29, 32, KeyWidth::Narrow),
        (0, 0, 30, 33, KeyWidth::Wide),
        (28, 5, 30, 64, KeyWidth::Wide),
        (28, 6, 30, 65, KeyWidth::Split),
        (30, 30, 30, 93, KeyWidth::Split),
    ];
    for (geom_bits, colid_bits, id_bits, bits, width) in cases {
        let mut b = Batch::builder();
        let mut keys = RowKeys::default();
        for w in 0..4 {
            wide_world(
                &mut rng,
                &mut b,
                &mut keys,
                40 + 50 * w,
                geom_bits,
                colid_bits,
                id_bits,
            );
        }
        if geom_bits == 0 {
            // Id-only case: keep only non-contacts, so the contact fields take no bits.
            let batch = b.finish();
            let mut nb = Batch::builder();
            let mut nk = RowKeys::default();
            for w in 0..batch.nworld() {
                for r in batch.rows_of(w) {
                    if !batch.row_type[r].is_contact() {
                        nb.row(batch.row_type[r], batch.row_id[r], batch.row_support_of(r));
                        nk.push_other();
                    }
                }
                // Pin the id span again (the pinned rows may have been contacts).
                nb.row(RowType::Equality, 0, &[0]).row(
                    RowType::Equality,
                    mask(id_bits) as i32,
                    &[0],
                );
                nk.push_other();
                nk.push_other();
                nb.end_world();
            }
            check_case(&model, &nb.finish(), &nk, bits, width);
        } else {
            check_case(&model, &b.finish(), &keys, bits, width);
        }
    }
}

fn check_case(model: &Model, batch: &Batch, keys: &RowKeys, bits: u32, width: KeyWidth) {
    let input = Input::new(model, batch).unwrap();
    let mut canon = Canonicalizer::new(&Capacity::fit(model, batch));
    let (sorted, order) = canon.canonicalize(&input, keys).unwrap();
    let order = order.to_vec();
    let sorted = sorted.clone();
    let l = canon.layout().unwrap();
    assert_eq!((l.bits(), l.width()), (bits, width), "{l:?}");
    assert_eq!(order, tuple_order(batch, keys), "{bits}-bit keys");
    check_gathered(batch, &order, &sorted, canon.rank());

    // A fixed, wider layout (bounds from a "model") gives the same order.
    let wide = KeyLayout::new(KeyBounds {
        id: Some(Bounds {
            min: i32::MIN,
            max: i32::MAX,
        }),
        geom: Some(Bounds {
            min: -1,
            max: i32::MAX,
        }),
        colid: Some(Bounds {
            min: -5,
            max: i32::MAX,
        }),
    });
    assert_eq!(wide.width(), KeyWidth::Split);
    let mut fixed = Canonicalizer::new(&Capacity::fit(model, batch)).with_layout(wide);
    let (_, fixed_order) = fixed.canonicalize(&input, keys).unwrap();
    assert_eq!(fixed_order, &order[..]);
}

fn check_gathered(src: &Batch, order: &[u32], dst: &Batch, rank: &[u32]) {
    assert_eq!(dst.world_rowadr, src.world_rowadr);
    for (k, &r) in order.iter().enumerate() {
        let r = r as usize;
        assert_eq!(dst.row_type[k], src.row_type[r]);
        assert_eq!(dst.row_id[k], src.row_id[r]);
        assert_eq!(dst.row_support_of(k), src.row_support_of(r));
        assert_eq!(rank[r] as usize, k);
    }
    assert_eq!(
        (
            &dst.world_edgeadr,
            &dst.edge_id,
            &dst.edge_supadr,
            &dst.edge_support
        ),
        (
            &src.world_edgeadr,
            &src.edge_id,
            &src.edge_supadr,
            &src.edge_support
        )
    );
    assert_eq!(dst.edge_kind, src.edge_kind);
}

#[test]
fn rows_of_one_constraint_keep_their_relative_order() {
    let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    let mut b = Batch::builder();
    let mut keys = RowKeys::default();
    // Two pyramidal contacts of 4 rows each, interleaved with a weld of 6 rows, out of order.
    for _ in 0..4 {
        b.row(RowType::ContactPyramidal, 1, &[1, 2]);
        keys.push_contact([8, 9], 1);
    }
    for _ in 0..6 {
        b.row(RowType::Equality, 2, &[0, 1]);
        keys.push_other();
    }
    for _ in 0..4 {
        b.row(RowType::ContactPyramidal, 0, &[1, 2]);
        keys.push_contact([8, 9], 0);
    }
    b.row(RowType::Equality, 0, &[2]).end_world();
    keys.push_other();
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let mut canon = Canonicalizer::new(&Capacity::fit(&model, &batch));
    let (_, order) = canon.canonicalize(&input, &keys).unwrap();
    assert_eq!(
        order,
        [14, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0, 1, 2, 3],
        "equality 0, weld 2 (rows in order), contact colid 0, contact colid 1"
    );
}

#[test]
fn canonicalizer_refuses_bad_inputs_without_panicking() {
    let model = Model::from_dofnum(&[1, 1]).unwrap();
    let mut b = Batch::builder();
    b.row(RowType::ContactElliptic, 0, &[0, 1])
        .row(RowType::Equality, 7, &[1])
        .end_world();
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let cap = Capacity::fit(&model, &batch);

    let short = RowKeys::non_contact(1);
    let err = Canonicalizer::new(&cap)
        .canonicalize(&input, &short)
        .unwrap_err();
    assert!(matches!(err, Error::Offsets { .. }), "{err}");

    let mut keys = RowKeys::default();
    keys.push_contact([3, 4], 0);
    keys.push_other();
    let small = Capacity { njmax: 1, ..cap };
    let err = Canonicalizer::new(&small)
        .canonicalize(&input, &keys)
        .unwrap_err();
    assert!(matches!(err, Error::OverCapacity { .. }), "{err}");

    let narrow = KeyLayout::new(KeyBounds {
        id: Some(Bounds::below(5)),
        geom: Some(Bounds::below(10)),
        colid: Some(Bounds::below(1)),
    });
    let err = Canonicalizer::new(&cap)
        .with_layout(narrow)
        .canonicalize(&input, &keys)
        .unwrap_err();
    assert!(matches!(err, Error::KeyBounds { row: 1, .. }), "{err}");

    let mut dst = Batch::default();
    assert!(gather::gather(&batch, &[0, 2], &mut dst).is_err());
    assert!(gather::gather(&batch, &[0], &mut dst).is_err());
    let mut rank = Vec::new();
    assert!(gather::invert(&[1, 1], &mut rank).is_err());
}

#[test]
fn canonicalizer_allocates_nothing_once_sized() {
    let model = Model::from_dofnum(&[1, 1, 1, 1]).unwrap();
    let mut rng = Rng::new(3);
    let make = |rng: &mut Rng| {
        let mut b = Batch::builder();
        let mut keys = RowKeys::default();
        for _ in 0..8 {
            for _ in 0..rng.below(30) {
                let t = rng.below(4) as i32;
                b.row(RowType::ContactPyramidal, 0, &[t]);
                keys.push_contact([rng.below(9) as i32, 9], rng.below(3) as i32);
            }
            b.rowless(0, &[0, 3]).end_world();
        }
        (b.finish(), keys)
    };
    let cap = Capacity {
        nworld: 8,
        ntree: 4,
        nv: 4,
        njmax: 30,
        nsupport: 32,
        nedge: 1,
    };
    let mut canon = Canonicalizer::new(&cap);
    let bytes = canon.bytes();
    for _ in 0..20 {
        let (batch, keys) = make(&mut rng);
        let input = Input::with_capacity(&model, &batch, &cap).unwrap();
        canon.canonicalize(&input, &keys).unwrap();
        assert_eq!(
            canon.bytes(),
            bytes,
            "a batch within capacity grew the scratch"
        );
    }
}
