//! What the slots of a batch's worlds allow the launch: whether every world takes the
//! node-level maps, and whether the batch has one slot, passed to the warp kernel by value.

use crate::quotient::Tables;

use super::node_tables::NODE_MAPS_MAX;

/// What the slots of a batch's worlds allow, from the host's tables after a step's
/// contractions: recomputed only when the slots or the world count change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BatchSlots {
    pub(super) nworld: usize,
    /// Every world has a slot of at most [`NODE_MAPS_MAX`] nodes.
    pub(super) few_nodes: bool,
    /// Every world has this one slot: the usual batch, of one model whose worlds share their
    /// static incidence.
    pub(super) one: Option<OneSlot>,
}

/// A slot and its counts, passed to the warp kernel by value when every world has it: the
/// warp then waits neither on its world's slot nor, after it, on the slot's counts before its
/// world's own loads (session 37, 4,096 worlds: 0.2-0.9 µs less a step on each of four
/// shapes, with L2 warm or cold).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OneSlot {
    pub(super) slot: u32,
    pub(super) nnode: u32,
    pub(super) static_rows: u32,
    pub(super) static_hyper: u32,
}

impl BatchSlots {
    pub(super) fn of(t: &Tables<'_>, nworld: usize) -> BatchSlots {
        let slots = &t.world_slot[..nworld];
        let few_nodes = slots
            .iter()
            .all(|&s| t.nnode.get(s as usize).is_some_and(|&n| n <= NODE_MAPS_MAX));
        let one = match slots.first() {
            Some(&s) if s != u32::MAX && slots.iter().all(|&x| x == s) => Some(OneSlot {
                slot: s,
                nnode: t.nnode[s as usize],
                static_rows: t.nstatic_rows[s as usize],
                static_hyper: t.nstatic[s as usize],
            }),
            _ => None,
        };
        BatchSlots {
            nworld,
            few_nodes,
            one,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BatchSlots;
    use crate::quotient::{Policy, Quotient};
    use crate::{Capacity, Input};
    use invalidation::Events;

    #[test]
    fn a_batch_has_one_slot_only_while_every_world_shares_it() {
        use crate::{Batch, Model, RowType};
        // Eight worlds of two loops of four trees each (two nodes), contacts varying; world 5
        // couples the loops by one more equality when `odd` (another static incidence).
        let model = Model::from_dofnum(&[1; 8]).unwrap();
        let batch = |odd: bool| {
            let mut b = Batch::builder();
            for w in 0..8 {
                for t in 0..8 {
                    b.row(RowType::Equality, t, &[t, 4 * (t / 4) + (t + 1) % 4]);
                }
                if odd && w == 5 {
                    b.row(RowType::Equality, 8, &[3, 4]);
                }
                b.row(RowType::ContactPyramidal, 0, &[w % 8, (w + 3) % 8]);
                b.end_world();
            }
            b.finish()
        };
        let slots_of = |batch: &crate::Batch, nworld: usize| {
            let cap = Capacity::fit(&model, batch);
            let mut q = Quotient::new(&cap, Policy::default());
            q.prepare(&Input::new(&model, batch).unwrap(), &Events::new())
                .unwrap();
            BatchSlots::of(&q.cache().tables(), nworld)
        };
        let even = slots_of(&batch(false), 8);
        let one = even.one.expect("one slot");
        assert!(even.few_nodes);
        assert_eq!((one.nnode, one.static_rows, one.static_hyper), (2, 8, 8));
        let odd = slots_of(&batch(true), 8);
        assert_eq!((odd.one, odd.few_nodes), (None, true));
        // The worlds before the odd one still share theirs; no worlds, no slot.
        assert_eq!(slots_of(&batch(true), 5).one.map(|o| o.nnode), Some(2));
        assert_eq!(slots_of(&batch(false), 0).one, None);
    }
}
