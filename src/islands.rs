//! The outputs: every island field of MuJoCo 4.0.0's `mjData`, for every world of a batch.
//!
//! Arrays are flat and padded: tree- and island-sized fields hold `ntree` entries per world,
//! dof-sized ones `nv`, row-sized ones follow the batch's global row order (their values are
//! world-local indices, as in MuJoCo). Island entries past `nisland` are −1. A world with no
//! islands has `tree_island`/`dof_island` all −1 and identity maps, so two results are equal
//! exactly when every field is, padding included.

use crate::rows::Batch;

/// Every island output for a batch of worlds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Islands {
    /// Worlds.
    pub nworld: usize,
    /// Trees per world.
    pub ntree: usize,
    /// Dofs per world.
    pub nv: usize,
    /// Row offsets per world (a copy of the batch's `world_rowadr`).
    pub world_rowadr: Vec<u32>,
    /// Number of islands per world.
    pub nisland: Vec<i32>,
    /// Number of dofs in islands per world.
    pub nidof: Vec<i32>,
    /// Island of each tree, −1 if unconstrained. `[nworld × ntree]`
    pub tree_island: Vec<i32>,
    /// Trees per island. `[nworld × ntree]`
    pub island_ntree: Vec<i32>,
    /// Start of each island in `map_itree2tree`. `[nworld × ntree]`
    pub island_itreeadr: Vec<i32>,
    /// Trees in island order, unconstrained trees last. `[nworld × ntree]`
    pub map_itree2tree: Vec<i32>,
    /// Island of each dof, −1 if unconstrained. `[nworld × nv]`
    pub dof_island: Vec<i32>,
    /// Dofs per island. `[nworld × ntree]`
    pub island_nv: Vec<i32>,
    /// Start of each island in the idof ordering. `[nworld × ntree]`
    pub island_idofadr: Vec<i32>,
    /// Smallest dof of each island. `[nworld × ntree]`
    pub island_dofadr: Vec<i32>,
    /// dof → idof. `[nworld × nv]`
    pub map_dof2idof: Vec<i32>,
    /// idof → dof, unconstrained dofs last. `[nworld × nv]`
    pub map_idof2dof: Vec<i32>,
    /// Island of each row. `[nrow]`
    pub efc_island: Vec<i32>,
    /// Equality rows per island. `[nworld × ntree]`
    pub island_ne: Vec<i32>,
    /// Friction rows per island. `[nworld × ntree]`
    pub island_nf: Vec<i32>,
    /// Rows per island. `[nworld × ntree]`
    pub island_nefc: Vec<i32>,
    /// Start of each island in the iefc ordering. `[nworld × ntree]`
    pub island_iefcadr: Vec<i32>,
    /// efc → iefc (world-local). `[nrow]`
    pub map_efc2iefc: Vec<i32>,
    /// iefc → efc (world-local). `[nrow]`
    pub map_iefc2efc: Vec<i32>,
}

/// Names of every output field, scalars first, then arrays in MuJoCo's order.
pub const FIELDS: [&str; 19] = [
    "nisland",
    "nidof",
    "tree_island",
    "island_ntree",
    "island_itreeadr",
    "map_itree2tree",
    "dof_island",
    "island_nv",
    "island_idofadr",
    "island_dofadr",
    "map_dof2idof",
    "map_idof2dof",
    "efc_island",
    "island_ne",
    "island_nf",
    "island_nefc",
    "island_iefcadr",
    "map_efc2iefc",
    "map_iefc2efc",
];

/// Fields `[0, PARTITION_FIELDS)` of [`FIELDS`] are a function of the partition of trees alone
/// (`tree_island`, with the model); the rest, from `efc_island` on, also of the rows.
pub const PARTITION_FIELDS: usize = 12;

/// The extent of each field of [`FIELDS`], in the same order.
pub const EXTENTS: [Extent; 19] = {
    use Extent::{Dof, Island, Row, Tree, World};
    [
        World, World, Tree, Island, Island, Tree, Dof, Island, Island, Island, Dof, Dof, Row,
        Island, Island, Island, Island, Row, Row,
    ]
};

/// What an output field is sized by: per world one entry, or `ntree` (trees, and islands: a
/// world has at most `ntree`), `nv` (dofs) entries per world, or one per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// One entry per world (`nisland`, `nidof`).
    World,
    /// `ntree` entries per world, one per tree.
    Tree,
    /// `ntree` entries per world: one per island (the world's `nisland` of them), −1 past them.
    Island,
    /// `nv` entries per world.
    Dof,
    /// One entry per row of the batch.
    Row,
}

impl Extent {
    /// The length of a field of each extent, for these sizes (rows: all worlds' rows).
    pub fn lengths(
        nworld: usize,
        ntree: usize,
        nv: usize,
        nrow: usize,
    ) -> impl Fn(Extent) -> usize {
        move |extent| match extent {
            Extent::World => nworld,
            Extent::Tree | Extent::Island => nworld * ntree,
            Extent::Dof => nworld * nv,
            Extent::Row => nrow,
        }
    }
}

/// The first field where two results differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// World.
    pub world: usize,
    /// Field name (MuJoCo's).
    pub field: &'static str,
    /// Index within the world's slice of that field.
    pub index: usize,
    /// Value in the reference.
    pub expected: i32,
    /// Value in the result under test.
    pub got: i32,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "world {}, {}[{}]: expected {}, got {}",
            self.world, self.field, self.index, self.expected, self.got
        )
    }
}

/// One world's outputs, trimmed to their meaningful lengths (island fields to `nisland`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct World<'a> {
    /// Number of islands.
    pub nisland: i32,
    /// Number of dofs in islands.
    pub nidof: i32,
    /// Per tree.
    pub tree_island: &'a [i32],
    /// Per island.
    pub island_ntree: &'a [i32],
    /// Per island.
    pub island_itreeadr: &'a [i32],
    /// Per tree.
    pub map_itree2tree: &'a [i32],
    /// Per dof.
    pub dof_island: &'a [i32],
    /// Per island.
    pub island_nv: &'a [i32],
    /// Per island.
    pub island_idofadr: &'a [i32],
    /// Per island.
    pub island_dofadr: &'a [i32],
    /// Per dof.
    pub map_dof2idof: &'a [i32],
    /// Per dof.
    pub map_idof2dof: &'a [i32],
    /// Per row.
    pub efc_island: &'a [i32],
    /// Per island.
    pub island_ne: &'a [i32],
    /// Per island.
    pub island_nf: &'a [i32],
    /// Per island.
    pub island_nefc: &'a [i32],
    /// Per island.
    pub island_iefcadr: &'a [i32],
    /// Per row.
    pub map_efc2iefc: &'a [i32],
    /// Per row.
    pub map_iefc2efc: &'a [i32],
}

impl<'a> World<'a> {
    /// Every array field with its MuJoCo name, in MuJoCo's order.
    pub fn arrays(&self) -> [(&'static str, &'a [i32]); 17] {
        [
            ("tree_island", self.tree_island),
            ("island_ntree", self.island_ntree),
            ("island_itreeadr", self.island_itreeadr),
            ("map_itree2tree", self.map_itree2tree),
            ("dof_island", self.dof_island),
            ("island_nv", self.island_nv),
            ("island_idofadr", self.island_idofadr),
            ("island_dofadr", self.island_dofadr),
            ("map_dof2idof", self.map_dof2idof),
            ("map_idof2dof", self.map_idof2dof),
            ("efc_island", self.efc_island),
            ("island_ne", self.island_ne),
            ("island_nf", self.island_nf),
            ("island_nefc", self.island_nefc),
            ("island_iefcadr", self.island_iefcadr),
            ("map_efc2iefc", self.map_efc2iefc),
            ("map_iefc2efc", self.map_iefc2efc),
        ]
    }

    /// The first difference from `expected` (scalars first, then arrays in MuJoCo's order),
    /// reported for world index `world`.
    #[must_use]
    pub fn first_mismatch(&self, expected: &World<'_>, world: usize) -> Option<Mismatch> {
        let m = |field, index, expected, got| Mismatch {
            world,
            field,
            index,
            expected,
            got,
        };
        if self.nisland != expected.nisland {
            return Some(m("nisland", 0, expected.nisland, self.nisland));
        }
        if self.nidof != expected.nidof {
            return Some(m("nidof", 0, expected.nidof, self.nidof));
        }
        for ((field, got), (_, want)) in self.arrays().into_iter().zip(expected.arrays()) {
            if got.len() != want.len() {
                let len = |s: &[i32]| s.len() as i32;
                return Some(m(field, got.len().min(want.len()), len(want), len(got)));
            }
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                return Some(m(field, i, want[i], got[i]));
            }
        }
        None
    }
}

/// Every field of the [`Islands`] `$o`, in [`FIELDS`] order, borrowed as `$r` (`&` or `&mut`):
/// the one list that [`Islands::fields`] and [`Islands::fields_mut`] share.
macro_rules! every_field {
    ($o:expr, $($r:tt)+) => {
        [
            $($r)+ $o.nisland,
            $($r)+ $o.nidof,
            $($r)+ $o.tree_island,
            $($r)+ $o.island_ntree,
            $($r)+ $o.island_itreeadr,
            $($r)+ $o.map_itree2tree,
            $($r)+ $o.dof_island,
            $($r)+ $o.island_nv,
            $($r)+ $o.island_idofadr,
            $($r)+ $o.island_dofadr,
            $($r)+ $o.map_dof2idof,
            $($r)+ $o.map_idof2dof,
            $($r)+ $o.efc_island,
            $($r)+ $o.island_ne,
            $($r)+ $o.island_nf,
            $($r)+ $o.island_nefc,
            $($r)+ $o.island_iefcadr,
            $($r)+ $o.map_efc2iefc,
            $($r)+ $o.map_iefc2efc,
        ]
    };
}

impl Islands {
    /// Outputs sized for `batch` on a model of `ntree` trees and `nv` dofs (contents unspecified
    /// until a mode fills them).
    pub fn for_batch(ntree: usize, nv: usize, batch: &Batch) -> Islands {
        let mut out = Islands::default();
        out.resize(ntree, nv, batch);
        out
    }

    /// Resizes every field for `batch`, reusing the allocations.
    pub fn resize(&mut self, ntree: usize, nv: usize, batch: &Batch) {
        let nworld = batch.nworld();
        self.nworld = nworld;
        self.ntree = ntree;
        self.nv = nv;
        self.world_rowadr.clear();
        self.world_rowadr.extend_from_slice(&batch.world_rowadr);
        let len = Extent::lengths(nworld, ntree, nv, batch.nrow());
        for (field, extent) in self.fields_mut() {
            field.resize(len(extent), 0);
        }
    }

    /// Every field with its name and what it is sized by, in [`FIELDS`] order.
    pub fn fields(&self) -> [(&'static str, &Vec<i32>, Extent); 19] {
        let (mut names, mut extents) = (FIELDS.into_iter(), EXTENTS.into_iter());
        every_field!(self, &).map(|f| (names.next().unwrap(), f, extents.next().unwrap()))
    }

    /// Every field with what it is sized by, mutably, in [`FIELDS`] order.
    pub fn fields_mut(&mut self) -> [(&mut Vec<i32>, Extent); 19] {
        let mut extents = EXTENTS.into_iter();
        every_field!(self, &mut).map(|f| (f, extents.next().unwrap()))
    }

    /// The nine island-sized fields (`ntree` entries per world, −1 past `nisland`), mutably.
    pub fn island_fields_mut(&mut self) -> [&mut Vec<i32>; 9] {
        [
            &mut self.island_ntree,
            &mut self.island_itreeadr,
            &mut self.island_nv,
            &mut self.island_idofadr,
            &mut self.island_dofadr,
            &mut self.island_ne,
            &mut self.island_nf,
            &mut self.island_nefc,
            &mut self.island_iefcadr,
        ]
    }

    /// World `w`'s outputs, island fields trimmed to its `nisland`.
    ///
    /// # Panics
    ///
    /// When `w` is not below [`nworld`](Self::nworld), naming both.
    pub fn world(&self, w: usize) -> World<'_> {
        let nworld = self.nworld;
        assert!(w < nworld, "world {w} of outputs of {nworld} worlds");
        let n = self.nisland[w].clamp(0, self.ntree as i32) as usize;
        let tree = w * self.ntree..(w + 1) * self.ntree;
        let isl = w * self.ntree..w * self.ntree + n;
        let dof = w * self.nv..(w + 1) * self.nv;
        let rows = self.world_rowadr[w] as usize..self.world_rowadr[w + 1] as usize;
        World {
            nisland: self.nisland[w],
            nidof: self.nidof[w],
            tree_island: &self.tree_island[tree.clone()],
            island_ntree: &self.island_ntree[isl.clone()],
            island_itreeadr: &self.island_itreeadr[isl.clone()],
            map_itree2tree: &self.map_itree2tree[tree],
            dof_island: &self.dof_island[dof.clone()],
            island_nv: &self.island_nv[isl.clone()],
            island_idofadr: &self.island_idofadr[isl.clone()],
            island_dofadr: &self.island_dofadr[isl.clone()],
            map_dof2idof: &self.map_dof2idof[dof.clone()],
            map_idof2dof: &self.map_idof2dof[dof],
            efc_island: &self.efc_island[rows.clone()],
            island_ne: &self.island_ne[isl.clone()],
            island_nf: &self.island_nf[isl.clone()],
            island_nefc: &self.island_nefc[isl.clone()],
            island_iefcadr: &self.island_iefcadr[isl],
            map_efc2iefc: &self.map_efc2iefc[rows.clone()],
            map_iefc2efc: &self.map_iefc2efc[rows],
        }
    }

    /// The first field where `self` differs from `expected`, world by world; `None` when every
    /// field of every world is equal (padding included, so this is bitwise equality).
    #[must_use]
    pub fn first_mismatch(&self, expected: &Islands) -> Option<Mismatch> {
        if self.nworld != expected.nworld {
            let (e, g) = (expected.nworld as i32, self.nworld as i32);
            return Some(Mismatch {
                world: 0,
                field: "nworld",
                index: 0,
                expected: e,
                got: g,
            });
        }
        (0..self.nworld)
            .find_map(|w| self.world(w).first_mismatch(&expected.world(w), w))
            .or_else(|| self.padding_mismatch(expected))
    }

    fn padding_mismatch(&self, expected: &Islands) -> Option<Mismatch> {
        if self == expected {
            return None;
        }
        // Trimmed views agree but the padded arrays do not: report the first padded difference.
        let island = |&(_, _, extent): &(&str, &Vec<i32>, Extent)| extent == Extent::Island;
        let pairs = self
            .fields()
            .into_iter()
            .zip(expected.fields())
            .filter(|(f, _)| island(f));
        for ((field, got, _), (_, want, _)) in pairs {
            if let Some(i) = (0..got.len().min(want.len())).find(|&i| got[i] != want[i]) {
                let (world, index) = (i / self.ntree.max(1), i % self.ntree.max(1));
                return Some(Mismatch {
                    world,
                    field,
                    index,
                    expected: want[i],
                    got: got[i],
                });
            }
        }
        Some(Mismatch {
            world: 0,
            field: "shape",
            index: 0,
            expected: 0,
            got: 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn island_extent_marks_exactly_the_per_island_fields() {
        for (name, extent) in FIELDS.into_iter().zip(EXTENTS) {
            assert_eq!(
                extent == Extent::Island,
                name.starts_with("island_"),
                "{name}"
            );
        }
        let mut out = Islands::default();
        let island = out
            .fields_mut()
            .into_iter()
            .filter(|(_, e)| *e == Extent::Island)
            .count();
        assert_eq!(island, out.island_fields_mut().len());
    }

    #[test]
    fn every_field_is_named_as_its_member() {
        let (model, batch) = crate::synth::batch(&crate::synth::Spec::realistic(2, 5, 8), 3);
        let mut out = Islands::for_batch(model.ntree(), model.nv(), &batch);
        for (k, (field, _)) in out.fields_mut().into_iter().enumerate() {
            field.fill(k as i32);
        }
        // Each member holds its index in FIELDS, read by its own name.
        assert!(out.nisland.iter().all(|&v| v == 0) && out.nidof.iter().all(|&v| v == 1));
        for (k, (name, values, _)) in out.fields().into_iter().enumerate() {
            assert!(values.iter().all(|&v| v == k as i32), "{name}");
        }
        out.nisland.fill(out.ntree as i32); // every island slot in the world's view
        for (name, values) in out.world(0).arrays() {
            let k = FIELDS.iter().position(|&f| f == name).unwrap();
            assert!(values.iter().all(|&v| v == k as i32), "{name}");
        }
    }

    #[test]
    fn partition_fields_come_before_every_row_level_field() {
        assert_eq!(FIELDS[PARTITION_FIELDS], "efc_island");
        assert!(
            EXTENTS[..PARTITION_FIELDS]
                .iter()
                .all(|&e| e != Extent::Row)
        );
        // The per-island row counts and addresses follow efc_island.
        for name in ["island_ne", "island_nf", "island_nefc", "island_iefcadr"] {
            assert!(FIELDS[PARTITION_FIELDS..].contains(&name), "{name}");
        }
    }
}
