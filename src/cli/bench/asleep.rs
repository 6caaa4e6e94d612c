//! `bench --quotient --asleep SHARE`: a shape with a share of its worlds partly asleep, for
//! measuring the quotient's masked path (a world whose sleeping component's node is masked,
//! flag 2) against the full rebuilds, and the share past which the block kernels pay
//! (`gpu::quotient::MASKED_FOR_BLOCKS`, set for a run by `ARCHIPELAGO_Q_MASKED`).

use archipelago::quotient::{Classifier, Policy};
use archipelago::{Batch, Model};
use invalidation::Events;

use super::{Shape, synthetic_keys};

impl Shape {
    /// This shape with the static component of tree 0 asleep in `share` of its worlds
    /// ([`put_to_sleep`], the components as `policy` classifies the rows), the awake batch kept
    /// for the quotient's first step. Its keys are the synthetic ones: deterministic mode,
    /// which reads them, is not measured with the quotient.
    pub(super) fn put_to_sleep(self, share: f64, policy: &Policy) -> Shape {
        let classifier = policy.classifier_for(&self.batch);
        let (batch, events) = put_to_sleep(&self.model, &self.batch, &classifier, share);
        let mut worlds: Vec<u32> = events
            .as_slice()
            .iter()
            .filter_map(|e| match *e {
                invalidation::Event::Sleep { world, .. } => Some(world),
                _ => None,
            })
            .collect();
        worlds.dedup();
        let worlds = worlds.len();
        Shape {
            name: format!(
                "{}, tree 0's component asleep in {worlds} worlds",
                self.name
            ),
            keys: synthetic_keys(&batch),
            waking: Some((self.batch, events)),
            model: self.model,
            batch,
        }
    }
}

/// `batch` with the static component of tree 0 (under `classifier`) asleep in `share` of its
/// worlds, spread evenly: every row that touches one of its trees gone and its trees left out
/// of every rowless coupling, as MuJoCo drops a sleeping tree's rows; with the events that
/// report each of those trees asleep. The quotient steps the awake batch first, then this one
/// with the events, so its contracted components fall asleep whole and are masked.
pub(super) fn put_to_sleep(
    model: &Model,
    batch: &Batch,
    classifier: &Classifier,
    share: f64,
) -> (Batch, Events) {
    let nworld = batch.nworld();
    let (mut b, mut events) = (Batch::builder(), Events::new());
    let mut parent = vec![0i32; model.ntree()];
    let mut asleep = vec![false; model.ntree()];
    for w in 0..nworld {
        // World w is the k-th of the chosen ones where floor(share * (w + 1)) steps up.
        let chosen = (share * (w + 1) as f64).floor() > (share * w as f64).floor();
        if !chosen || model.ntree() == 0 {
            b.world_from(batch, w);
            continue;
        }
        component_of_tree_0(batch, w, classifier, &mut parent, &mut asleep);
        for t in (0..model.ntree()).filter(|&t| asleep[t]) {
            events.sleep(w as u32, t as i32);
        }
        let awake = |t: &i32| !asleep[*t as usize];
        for r in batch.rows_of(w) {
            let support = batch.row_support_of(r);
            if support.iter().all(awake) {
                b.row(batch.row_type[r], batch.row_id[r], support);
            }
        }
        for e in batch.edges_of(w) {
            let live: Vec<i32> = batch
                .edge_support_of(e)
                .iter()
                .copied()
                .filter(awake)
                .collect();
            if !live.is_empty() {
                b.rowless_of(batch.edge_kind[e], batch.edge_id[e], &live);
            }
        }
        b.end_world();
    }
    (b.finish(), events)
}

/// Marks in `asleep` the trees joined to tree 0 by world `w`'s static rows and couplings.
fn component_of_tree_0(
    batch: &Batch,
    w: usize,
    classifier: &Classifier,
    parent: &mut [i32],
    asleep: &mut [bool],
) {
    for (t, p) in parent.iter_mut().enumerate() {
        *p = t as i32;
    }
    fn find(parent: &mut [i32], mut t: i32) -> i32 {
        while parent[t as usize] != t {
            parent[t as usize] = parent[parent[t as usize] as usize];
            t = parent[t as usize];
        }
        t
    }
    let mut join = |support: &[i32]| {
        for pair in support.windows(2) {
            let (a, b) = (find(parent, pair[0]), find(parent, pair[1]));
            parent[a.max(b) as usize] = a.min(b);
        }
    };
    for r in batch.rows_of(w) {
        if classifier.row_is_static(batch.row_type[r], batch.row_id[r]) {
            join(batch.row_support_of(r));
        }
    }
    if classifier.rowless_is_static() {
        for e in batch.edges_of(w) {
            join(batch.edge_support_of(e));
        }
    }
    let root = find(parent, 0);
    for (t, asleep) in asleep.iter_mut().enumerate() {
        *asleep = find(parent, t as i32) == root;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use archipelago::RowType;
    use archipelago::quotient::Policy;

    #[test]
    fn a_share_of_the_worlds_sleeps_its_first_component_whole() {
        // Trees 0-1-2 joined by equalities, 3 by itself; a contact 2-3 and one on 3; a coupling
        // of 1 and 3, dynamic under this policy.
        let model = Model::from_dofnum(&[1; 4]).unwrap();
        let mut b = Batch::builder();
        for _ in 0..8 {
            b.row(RowType::Equality, 0, &[0, 1]);
            b.row(RowType::Equality, 1, &[1, 2]);
            b.row(RowType::ContactPyramidal, 0, &[2, 3]);
            b.row(RowType::ContactPyramidal, 1, &[3]);
            b.rowless(0, &[1, 3]);
            b.end_world();
        }
        let batch = b.finish();
        let policy = Policy {
            flex_static: false,
            ..Policy::default()
        };
        let c = policy.classifier();
        let (slept, events) = put_to_sleep(&model, &batch, &c, 0.25);
        let asleep: Vec<usize> = (0..8).filter(|&w| slept.rows_of(w).len() == 1).collect();
        assert_eq!(asleep, [3, 7], "two worlds of eight, spread");
        for w in 0..8 {
            if asleep.contains(&w) {
                assert_eq!(slept.row_support_of(slept.rows_of(w).start), &[3]);
                let e = slept.edges_of(w).start;
                assert_eq!(slept.edge_support_of(e), &[3]);
            } else {
                assert_eq!(slept.rows_of(w).len(), 4);
            }
        }
        let mut want = Events::new();
        for w in [3, 7] {
            want.sleep(w, 0).sleep(w, 1).sleep(w, 2);
        }
        assert_eq!(events.as_slice(), want.as_slice());
        // The quotient masks those components after the awake step, rebuilding nothing.
        let cap = archipelago::Capacity::fit(&model, &batch);
        let mut q = archipelago::quotient::Quotient::new(&cap, policy);
        let mut out = archipelago::Islands::default();
        let awake = archipelago::Input::new(&model, &batch).unwrap();
        q.step(&awake, &Events::new(), &mut out).unwrap();
        let input = archipelago::Input::new(&model, &slept).unwrap();
        let before = q.counters();
        q.step(&input, &events, &mut out).unwrap();
        let after = q.counters();
        assert_eq!(after.masked - before.masked, 2);
        assert_eq!(
            after.contracted + after.shared,
            before.contracted + before.shared
        );
        assert_eq!(
            out.first_mismatch(&archipelago::oracle::solve(&input)),
            None
        );
        // No share, no change.
        let (same, none) = put_to_sleep(&model, &batch, &c, 0.0);
        assert!(same == batch && none.is_empty());
    }
}
