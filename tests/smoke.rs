//! A quick end-to-end check of the foundation: dsu equals the oracle on hand-made worlds.

use archipelago::{Batch, Input, Islands, Model, RowType, cpu, oracle};

#[test]
fn dsu_matches_oracle_on_small_worlds() {
    let model = Model::from_dofnum(&[1, 2, 1, 3, 1, 1]).unwrap();
    let mut b = Batch::builder();
    b.row(RowType::Equality, 0, &[3, 1])
        .row(RowType::ContactPyramidal, 0, &[5])
        .row(RowType::LimitJoint, 2, &[1])
        .rowless(0, &[4, 5])
        .end_world();
    b.end_world();
    b.rowless(0, &[0, 1]).end_world();
    b.row(RowType::FrictionDof, 0, &[0, 0])
        .row(RowType::ContactElliptic, 1, &[2, 4, 0])
        .end_world();
    let batch = b.finish();
    let input = Input::new(&model, &batch).unwrap();
    let want = oracle::solve(&input);
    let mut got = Islands::default();
    cpu::by_name("dsu")
        .unwrap()
        .solve(&input, &mut got)
        .unwrap();
    assert_eq!(got.first_mismatch(&want), None);
    let w0 = want.world(0);
    assert_eq!(w0.tree_island, &[-1, 0, -1, 0, 1, 1]);
    assert_eq!(w0.map_itree2tree, &[1, 3, 4, 5, 0, 2]);
    assert_eq!(w0.efc_island, &[0, 1, 0]);
    assert_eq!(w0.map_iefc2efc, &[0, 2, 1]);
    assert_eq!(want.world(2).nisland, 0);
    assert_eq!(want.world(3).nisland, 1);
}
