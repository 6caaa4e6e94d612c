//! One hand-written case per rule of DESIGN.md §2, with the expected values written out, checked
//! on the oracle and on every CPU mode.

use archipelago::{Batch, Input, Islands, Model, RowType, cpu, oracle};

use RowType::{
    ContactElliptic, ContactPyramidal, Equality, FrictionDof, FrictionTendon, LimitJoint,
    LimitTendon,
};

/// The oracle's outputs, after checking that every mode computes the same.
fn solve(model: &Model, batch: &Batch) -> Islands {
    let input = Input::new(model, batch).unwrap();
    let want = oracle::solve(&input);
    for name in cpu::NAMES {
        let mut out = Islands::default();
        cpu::by_name(name).unwrap().solve(&input, &mut out).unwrap();
        assert_eq!(out.first_mismatch(&want), None, "{name}");
    }
    want
}

fn one_world(rows: &[(RowType, &[i32])], rowless: &[&[i32]]) -> Batch {
    let mut b = Batch::builder();
    for (k, &(kind, support)) in rows.iter().enumerate() {
        b.row(kind, k as i32, support);
    }
    for (k, &support) in rowless.iter().enumerate() {
        b.rowless(k as i32, support);
    }
    b.end_world();
    b.finish()
}

fn ones(n: usize) -> Model {
    Model::from_dofnum(&vec![1; n]).unwrap()
}

#[test]
fn islands_are_numbered_by_their_smallest_tree() {
    let batch = one_world(
        &[
            (ContactPyramidal, &[5, 4]),
            (Equality, &[3, 0]),
            (LimitTendon, &[2, 1]),
        ],
        &[],
    );
    let out = solve(&ones(6), &batch);
    let w = out.world(0);
    assert_eq!(w.nisland, 3);
    assert_eq!(w.tree_island, &[0, 1, 1, 0, 2, 2]);
    assert_eq!(w.island_ntree, &[2, 2, 2]);
    assert_eq!(w.island_itreeadr, &[0, 2, 4]);
    assert_eq!(w.map_itree2tree, &[0, 3, 1, 2, 4, 5]);
    assert_eq!(w.efc_island, &[2, 0, 1]);
}

#[test]
fn unconstrained_trees_and_dofs_come_after_all_islands() {
    // Trees own dofs 0-1, 2, 3, 4-6.
    let model = Model::from_dofnum(&[2, 1, 1, 3]).unwrap();
    let batch = one_world(&[(LimitJoint, &[3]), (FrictionDof, &[1])], &[]);
    let w = solve(&model, &batch);
    let w = w.world(0);
    assert_eq!(w.tree_island, &[-1, 0, -1, 1]);
    assert_eq!(w.map_itree2tree, &[1, 3, 0, 2]);
    assert_eq!(w.nidof, 4);
    assert_eq!(w.dof_island, &[-1, -1, 0, -1, 1, 1, 1]);
    assert_eq!(w.island_nv, &[1, 3]);
    assert_eq!(w.island_idofadr, &[0, 1]);
    assert_eq!(w.map_idof2dof, &[2, 4, 5, 6, 0, 1, 3]);
    assert_eq!(w.map_dof2idof, &[4, 5, 0, 6, 1, 2, 3]);
}

#[test]
fn rows_keep_their_order_inside_an_island() {
    let batch = one_world(
        &[
            (ContactPyramidal, &[2]),
            (Equality, &[0, 1]),
            (ContactPyramidal, &[2, 2]),
            (LimitJoint, &[1]),
        ],
        &[],
    );
    let w = solve(&ones(3), &batch);
    let w = w.world(0);
    assert_eq!(w.efc_island, &[1, 0, 1, 0]);
    assert_eq!(w.island_nefc, &[2, 2]);
    assert_eq!(w.island_iefcadr, &[0, 2]);
    assert_eq!(w.map_iefc2efc, &[1, 3, 0, 2]);
    assert_eq!(w.map_efc2iefc, &[2, 0, 3, 1]);
}

#[test]
fn a_tree_touched_only_by_a_one_tree_row_is_its_own_island() {
    let batch = one_world(&[(LimitJoint, &[1]), (ContactElliptic, &[2, 0])], &[]);
    let w = solve(&ones(4), &batch);
    let w = w.world(0);
    assert_eq!(w.nisland, 2);
    assert_eq!(w.tree_island, &[0, 1, 0, -1]);
    assert_eq!(w.island_ntree, &[2, 1]);
}

#[test]
fn a_tree_no_hyperedge_touches_has_no_island() {
    let batch = one_world(&[(Equality, &[0, 2])], &[]);
    let w = solve(&ones(3), &batch);
    assert_eq!(w.world(0).tree_island, &[0, -1, 0]);
}

#[test]
fn a_world_with_only_rowless_hyperedges_has_no_islands() {
    let model = Model::from_dofnum(&[1, 2, 1]).unwrap();
    let batch = one_world(&[], &[&[0, 1], &[2]]);
    let out = solve(&model, &batch);
    let w = out.world(0);
    assert_eq!((w.nisland, w.nidof), (0, 0));
    assert_eq!(w.tree_island, &[-1, -1, -1]);
    assert_eq!(w.dof_island, &[-1; 4]);
    // Identity maps, and every island entry is padding.
    assert_eq!(w.map_itree2tree, &[0, 1, 2]);
    assert_eq!(w.map_idof2dof, &[0, 1, 2, 3]);
    assert_eq!(w.map_dof2idof, &[0, 1, 2, 3]);
    assert_eq!(out.island_ntree, &[-1, -1, -1]);
    assert_eq!(out.island_dofadr, &[-1, -1, -1]);
}

#[test]
fn rowless_hyperedges_join_trees_once_the_world_has_rows() {
    // Trees 0 and 2 are coupled only by a flex: an island without rows, numbered first.
    let batch = one_world(&[(ContactPyramidal, &[1])], &[&[2, 0]]);
    let w = solve(&ones(4), &batch);
    let w = w.world(0);
    assert_eq!(w.tree_island, &[0, 1, 0, -1]);
    assert_eq!(w.island_nefc, &[0, 1]);
    assert_eq!(w.island_iefcadr, &[0, 0]);
    assert_eq!(w.efc_island, &[1]);
    // A rowless hyperedge also bridges two row-made islands.
    let batch = one_world(&[(Equality, &[0]), (Equality, &[3])], &[&[3, 1], &[1, 0]]);
    assert_eq!(solve(&ones(4), &batch).world(0).tree_island, &[0, 0, -1, 0]);
}

#[test]
fn island_ne_and_nf_count_equality_and_friction_rows() {
    let batch = one_world(
        &[
            (Equality, &[0, 1]),
            (FrictionDof, &[1]),
            (ContactPyramidal, &[2]),
            (FrictionTendon, &[0, 1]),
            (LimitTendon, &[1, 0]),
            (Equality, &[2]),
            (ContactElliptic, &[0]),
        ],
        &[],
    );
    let w = solve(&ones(3), &batch);
    let w = w.world(0);
    assert_eq!(w.island_ne, &[1, 1]);
    assert_eq!(w.island_nf, &[2, 0]);
    assert_eq!(w.island_nefc, &[5, 2]);
}

#[test]
fn island_dofadr_is_the_smallest_dof_of_the_island() {
    // Tree 0 owns dof 2, tree 1 dofs 0-1: the island's smallest dof is not its smallest tree's.
    let model = Model::from_parts(vec![2, 0, 3], vec![1, 2, 1], vec![1, 1, 0, 2]).unwrap();
    let batch = one_world(&[(Equality, &[0, 1]), (LimitJoint, &[2])], &[]);
    let w = solve(&model, &batch);
    let w = w.world(0);
    assert_eq!(w.tree_island, &[0, 0, 1]);
    assert_eq!(w.island_dofadr, &[0, 3]);
    assert_eq!(w.map_idof2dof, &[0, 1, 2, 3]);
    assert_eq!(w.island_idofadr, &[0, 3]);
}

#[test]
fn repeated_and_unsorted_trees_inside_a_support_are_legal() {
    let plain = one_world(&[(ContactPyramidal, &[1, 3])], &[]);
    let messy = one_world(&[(ContactPyramidal, &[3, 1, 3, 3, 1])], &[]);
    let (a, b) = (solve(&ones(4), &plain), solve(&ones(4), &messy));
    assert_eq!(b.first_mismatch(&a), None);
}

#[test]
fn island_entries_past_nisland_are_padding() {
    let batch = one_world(&[(Equality, &[0, 1])], &[]);
    let out = solve(&ones(3), &batch);
    assert_eq!(out.island_ntree, &[2, -1, -1]);
    assert_eq!(out.island_iefcadr, &[0, -1, -1]);
    assert_eq!(out.island_ne, &[1, -1, -1]);
}

#[test]
fn worlds_are_independent() {
    let mut b = Batch::builder();
    b.row(Equality, 0, &[0, 1]).end_world();
    b.end_world();
    b.row(Equality, 0, &[1, 2])
        .row(LimitJoint, 0, &[0])
        .end_world();
    let out = solve(&ones(3), &b.finish());
    assert_eq!(out.world(0).tree_island, &[0, 0, -1]);
    assert_eq!(out.world(1).tree_island, &[-1, -1, -1]);
    assert_eq!(out.world(1).nisland, 0);
    assert_eq!(out.world(2).tree_island, &[0, 1, 1]);
    // Row maps hold world-local indices.
    assert_eq!(out.world(2).map_iefc2efc, &[1, 0]);
    assert_eq!(out.world(2).efc_island, &[1, 0]);
}

#[test]
fn empty_models_and_batches_give_empty_outputs() {
    let none = Model::from_dofnum(&[]).unwrap();
    let mut b = Batch::builder();
    b.rowless(0, &[]).end_world();
    let out = solve(&none, &b.finish());
    assert_eq!((out.nworld, out.world(0).nisland), (1, 0));
    let out = solve(&ones(5), &Batch::builder().finish());
    assert_eq!(out.nworld, 0);
}
