//! One step's constraint rows for a batch of worlds, in CSR form, and their validation.
//!
//! Per world a range of rows (`world_rowadr`); per row its type, id and support (the trees with a
//! structural nonzero in its Jacobian, `row_supadr`/`row_support`). Rowless hyperedges (trees that
//! native MuJoCo couples without a row: a deformable flex with active stiffness, and under the
//! discrete integrator a tendon's or an actuator's stiffness and damping and a passive flex
//! contact, [`EdgeKind`]) have their own CSR (`world_edgeadr`, `edge_supadr`, `edge_support`):
//! they couple trees but own no row.

use crate::error::{Error, Result};
use crate::model::Model;

/// MuJoCo's `mjtConstraint`: the type of an efc row (the codes are MuJoCo's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum RowType {
    /// Equality constraint (connect, weld, joint, tendon, flex).
    Equality = 0,
    /// Dof friction loss.
    FrictionDof = 1,
    /// Tendon friction loss.
    FrictionTendon = 2,
    /// Joint limit.
    LimitJoint = 3,
    /// Tendon limit.
    LimitTendon = 4,
    /// Frictionless contact.
    ContactFrictionless = 5,
    /// Pyramidal contact.
    ContactPyramidal = 6,
    /// Elliptic contact.
    ContactElliptic = 7,
}

impl RowType {
    /// Every row type, in code order.
    pub const ALL: [RowType; 8] = [
        RowType::Equality,
        RowType::FrictionDof,
        RowType::FrictionTendon,
        RowType::LimitJoint,
        RowType::LimitTendon,
        RowType::ContactFrictionless,
        RowType::ContactPyramidal,
        RowType::ContactElliptic,
    ];

    /// The row type with MuJoCo code `code`, if there is one.
    pub fn from_code(code: i32) -> Option<RowType> {
        usize::try_from(code)
            .ok()
            .and_then(|c| Self::ALL.get(c).copied())
    }

    /// Counted in `island_ne`.
    pub fn is_equality(self) -> bool {
        self == RowType::Equality
    }

    /// Counted in `island_nf`.
    pub fn is_friction(self) -> bool {
        matches!(self, RowType::FrictionDof | RowType::FrictionTendon)
    }

    /// A contact row of any cone.
    pub fn is_contact(self) -> bool {
        self as u8 >= RowType::ContactFrictionless as u8
    }
}

/// What couples the trees of a rowless hyperedge (the codes are the trace format's `edge_kind`).
///
/// Which kinds native MuJoCo 4.0.0 has is its rule, not archipelago's: every kind couples the
/// same way (its trees join one island), and the quotient classifies them alike
/// ([`crate::quotient::Policy::flex_static`]). The kind names the source an edit reports
/// ([`invalidation::Edit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(u8)]
pub enum EdgeKind {
    /// A deformable flex's stiffness (id: the flex).
    #[default]
    Flex = 0,
    /// A tendon's stiffness or damping in the discrete integrator's metric (id: the tendon).
    Tendon = 1,
    /// An actuator's state-dependent gain or bias, damping or armature in that metric (id: the
    /// actuator).
    Actuator = 2,
    /// A passive flex contact: a contact without rows (id: its index among the step's contacts).
    PassiveContact = 3,
}

impl EdgeKind {
    /// Every kind, in code order.
    pub const ALL: [EdgeKind; 4] = [
        EdgeKind::Flex,
        EdgeKind::Tendon,
        EdgeKind::Actuator,
        EdgeKind::PassiveContact,
    ];

    /// The kind with code `code`, if there is one.
    pub fn from_code(code: i32) -> Option<EdgeKind> {
        usize::try_from(code)
            .ok()
            .and_then(|c| Self::ALL.get(c).copied())
    }
}

/// One step's rows and rowless hyperedges for `nworld` worlds, in CSR form.
///
/// Row indices are global (across worlds); `world_rowadr[w] .. world_rowadr[w + 1]` are world
/// `w`'s rows, in their efc order. Build one with [`BatchBuilder`] or fill the arrays directly and
/// let [`Input::new`] validate them.
///
/// ```
/// use archipelago::{Batch, RowType};
/// let mut b = Batch::builder();
/// b.row(RowType::ContactPyramidal, 0, &[0, 2]); // world 0: a contact between trees 0 and 2
/// b.rowless(0, &[3, 4]);                        // and flex 0 coupling trees 3 and 4
/// b.end_world();
/// b.end_world();                                // world 1: no rows
/// let batch = b.finish();
/// assert_eq!((batch.nworld(), batch.nrow()), (2, 1));
/// assert_eq!(batch.row_support_of(0), &[0, 2]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Batch {
    /// `nworld + 1` offsets into the rows.
    pub world_rowadr: Vec<u32>,
    /// Type of each row.
    pub row_type: Vec<RowType>,
    /// MuJoCo's `efc_id` of each row (equality id, dof, joint, tendon or contact id).
    pub row_id: Vec<i32>,
    /// `nrow + 1` offsets into `row_support`.
    pub row_supadr: Vec<u32>,
    /// Tree ids of every row's support, concatenated.
    pub row_support: Vec<i32>,
    /// `nworld + 1` offsets into the rowless hyperedges.
    pub world_edgeadr: Vec<u32>,
    /// What couples each rowless hyperedge.
    pub edge_kind: Vec<EdgeKind>,
    /// Source of each rowless hyperedge, by its kind: a flex, tendon or actuator id, or a
    /// contact's index.
    pub edge_id: Vec<i32>,
    /// `nedge + 1` offsets into `edge_support`.
    pub edge_supadr: Vec<u32>,
    /// Tree ids of every rowless hyperedge, concatenated.
    pub edge_support: Vec<i32>,
}

impl Batch {
    /// An empty builder.
    pub fn builder() -> BatchBuilder {
        BatchBuilder::default()
    }

    /// An empty batch whose arrays have room for `cap` (its worlds, `njmax` rows, `nsupport`
    /// support entries and `nedge` rowless hyperedges a world): filled within it, through
    /// [`into_builder`](Self::into_builder), it never allocates.
    pub fn with_capacity(cap: &Capacity) -> Batch {
        let (w, rows, edges) = (cap.nworld, cap.nworld * cap.njmax, cap.nworld * cap.nedge);
        let entries = cap.nworld * cap.nsupport;
        Batch {
            world_rowadr: Vec::with_capacity(w + 1),
            row_type: Vec::with_capacity(rows),
            row_id: Vec::with_capacity(rows),
            row_supadr: Vec::with_capacity(rows + 1),
            row_support: Vec::with_capacity(entries),
            world_edgeadr: Vec::with_capacity(w + 1),
            edge_kind: Vec::with_capacity(edges),
            edge_id: Vec::with_capacity(edges),
            edge_supadr: Vec::with_capacity(edges + 1),
            edge_support: Vec::with_capacity(entries),
        }
    }

    /// An empty builder that appends into this batch's arrays, keeping their allocations: a
    /// batch rebuilt this way every step allocates nothing once it has reached its size.
    ///
    /// ```
    /// use archipelago::{Batch, RowType};
    /// let mut b = Batch::builder();
    /// b.row(RowType::Equality, 0, &[0, 1]).end_world();
    /// let first = b.finish();
    /// let room = first.row_support.capacity();
    /// let mut b = first.into_builder();
    /// b.row(RowType::LimitJoint, 3, &[2]).end_world();
    /// let second = b.finish();
    /// assert_eq!((second.nrow(), second.row_id[0]), (1, 3));
    /// assert_eq!(second.row_support.capacity(), room);
    /// ```
    pub fn into_builder(mut self) -> BatchBuilder {
        for v in [
            &mut self.world_rowadr,
            &mut self.row_supadr,
            &mut self.world_edgeadr,
            &mut self.edge_supadr,
        ] {
            v.clear();
            v.push(0);
        }
        self.row_type.clear();
        self.row_id.clear();
        self.row_support.clear();
        self.edge_kind.clear();
        self.edge_id.clear();
        self.edge_support.clear();
        BatchBuilder { batch: self }
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.world_rowadr.len().saturating_sub(1)
    }

    /// Number of rows over all worlds.
    pub fn nrow(&self) -> usize {
        self.row_type.len()
    }

    /// Number of rowless hyperedges over all worlds.
    pub fn nedge(&self) -> usize {
        self.edge_supadr.len().saturating_sub(1)
    }

    /// Global row range of world `w`.
    pub fn rows_of(&self, w: usize) -> std::ops::Range<usize> {
        self.world_rowadr[w] as usize..self.world_rowadr[w + 1] as usize
    }

    /// Global rowless-hyperedge range of world `w`.
    pub fn edges_of(&self, w: usize) -> std::ops::Range<usize> {
        self.world_edgeadr[w] as usize..self.world_edgeadr[w + 1] as usize
    }

    /// Support of global row `r`.
    pub fn row_support_of(&self, r: usize) -> &[i32] {
        &self.row_support[self.row_supadr[r] as usize..self.row_supadr[r + 1] as usize]
    }

    /// Support of global rowless hyperedge `e`.
    pub fn edge_support_of(&self, e: usize) -> &[i32] {
        &self.edge_support[self.edge_supadr[e] as usize..self.edge_supadr[e + 1] as usize]
    }

    /// Support entries (rows and rowless hyperedges) of world `w`.
    pub fn support_entries_of(&self, w: usize) -> usize {
        let rows = self.rows_of(w);
        let edges = self.edges_of(w);
        (self.row_supadr[rows.end] - self.row_supadr[rows.start]) as usize
            + (self.edge_supadr[edges.end] - self.edge_supadr[edges.start]) as usize
    }

    /// Every hyperedge of world `w` that couples trees: row supports first, then the rowless
    /// ones with at least two distinct trees.
    ///
    /// A row makes an island even of a single tree, but a rowless hyperedge only couples: native
    /// MuJoCo 4.0.0 joins a coupling's awake trees to its first one, so one with a single awake
    /// tree (or none) adds nothing and leaves its tree outside every island. Skipping those here
    /// gives every mode that rule.
    pub fn hyperedges_of(&self, w: usize) -> impl Iterator<Item = &[i32]> + '_ {
        self.row_supports_of(w).chain(self.coupling_edges_of(w))
    }

    /// The supports of world `w`'s rows, in row order (the first part of
    /// [`hyperedges_of`](Self::hyperedges_of)).
    pub fn row_supports_of(&self, w: usize) -> impl Iterator<Item = &[i32]> + '_ {
        let rows = self.rows_of(w);
        self.row_supadr[rows.start..=rows.end]
            .windows(2)
            .map(|span| &self.row_support[span[0] as usize..span[1] as usize])
    }

    /// The rowless hyperedges of world `w` with at least two distinct trees (the second part of
    /// [`hyperedges_of`](Self::hyperedges_of)).
    pub fn coupling_edges_of(&self, w: usize) -> impl Iterator<Item = &[i32]> + '_ {
        self.coupling_edges(w).map(|e| self.edge_support_of(e))
    }

    /// The global indices of the hyperedges [`coupling_edges_of`](Self::coupling_edges_of)
    /// yields (for their ids).
    pub fn coupling_edges(&self, w: usize) -> impl Iterator<Item = usize> + '_ {
        self.edges_of(w)
            .filter(|&e| couples(self.edge_support_of(e)))
    }

    /// Checks the CSR structure and every id against `model`. Capacities are checked separately
    /// ([`Capacity::check`]).
    pub fn validate(&self, model: &Model) -> Result<()> {
        check_offsets(
            "world_rowadr",
            &self.world_rowadr,
            self.row_type.len(),
            false,
        )?;
        check_offsets("world_edgeadr", &self.world_edgeadr, self.nedge(), false)?;
        if self.world_edgeadr.len() != self.world_rowadr.len() {
            return Err(Error::WorldCount {
                what: "world_edgeadr",
                got: self.world_edgeadr.len().saturating_sub(1),
                expected: self.nworld(),
            });
        }
        if self.row_id.len() != self.row_type.len() {
            return Err(Error::Offsets {
                array: "row_id",
                detail: format!("{} ids for {} rows", self.row_id.len(), self.row_type.len()),
            });
        }
        // One flat pass over the rows' offsets serves both their check and the common case's
        // (strictly increasing implies never decreasing).
        let rows_increase = increasing(&self.row_supadr);
        let nsup = self.row_support.len();
        check_offsets("row_supadr", &self.row_supadr, nsup, rows_increase)?;
        if self.row_supadr.len() != self.row_type.len() + 1 {
            return Err(Error::Offsets {
                array: "row_supadr",
                detail: format!("{} offsets for {} rows", self.row_supadr.len(), self.nrow()),
            });
        }
        check_offsets(
            "edge_supadr",
            &self.edge_supadr,
            self.edge_support.len(),
            false,
        )?;
        for (array, len) in [
            ("edge_kind", self.edge_kind.len()),
            ("edge_id", self.edge_id.len()),
        ] {
            if len != self.nedge() {
                return Err(Error::Offsets {
                    array,
                    detail: format!("{len} entries for {} rowless hyperedges", self.nedge()),
                });
            }
        }
        let ntree = model.ntree();
        // The common case in flat passes (no empty row support, every tree id in range); only
        // a batch that fails them is walked world by world for the first culprit, which is the
        // error reported.
        if rows_increase
            && trees_in_range(&self.row_support, ntree)
            && trees_in_range(&self.edge_support, ntree)
        {
            return Ok(());
        }
        for w in 0..self.nworld() {
            for r in self.rows_of(w) {
                let support = self.row_support_of(r);
                if support.is_empty() {
                    return Err(Error::EmptySupport { world: w, row: r });
                }
                check_trees(support, ntree, w, "row", r)?;
            }
            for e in self.edges_of(w) {
                check_trees(self.edge_support_of(e), ntree, w, "rowless hyperedge", e)?;
            }
        }
        Ok(())
    }
}

// The flat passes below fold every element instead of stopping at the first failure, so that
// the compiler vectorizes them: a valid batch, the common case, is read once at the speed of
// memory (`Engine::step` validates every step's batch; benches/results/cpu_modes.md).

/// Each offset of `adr` with the next (a zip of two slices, which the compiler vectorizes).
fn consecutive(adr: &[u32]) -> impl Iterator<Item = (&u32, &u32)> {
    adr.iter().zip(adr.get(1..).unwrap_or_default())
}

/// Whether `adr` never decreases.
fn non_decreasing(adr: &[u32]) -> bool {
    consecutive(adr).fold(true, |ok, (x, y)| ok & (x <= y))
}

/// Whether `adr` strictly increases (every row has a support entry).
fn increasing(adr: &[u32]) -> bool {
    consecutive(adr).fold(true, |ok, (x, y)| ok & (x < y))
}

/// Whether every tree id of `support` is in `0..ntree`.
fn trees_in_range(support: &[i32], ntree: usize) -> bool {
    match u32::try_from(ntree) {
        // A negative id reads as a large unsigned one.
        Ok(n) => support.iter().fold(true, |ok, &t| ok & ((t as u32) < n)),
        Err(_) => true, // every i32 id read as u32 is below such an ntree
    }
}

/// `adr` as offsets into an array of `len` entries: from 0, never decreasing, to `len`.
/// `increases`: already known to increase strictly (its flat pass is then skipped).
fn check_offsets(array: &'static str, adr: &[u32], len: usize, increases: bool) -> Result<()> {
    let bad = |detail: String| Err(Error::Offsets { array, detail });
    match adr.first() {
        None => return bad("empty (it needs at least the leading 0)".into()),
        Some(&first) if first != 0 => return bad(format!("starts at {first}, not 0")),
        _ => {}
    }
    // Where it decreases is looked for only once the flat pass found that it does.
    if !increases
        && !non_decreasing(adr)
        && let Some(i) = adr.windows(2).position(|p| p[1] < p[0])
    {
        return bad(format!(
            "decreases at {}: {} > {}",
            i + 1,
            adr[i],
            adr[i + 1]
        ));
    }
    let last = *adr.last().unwrap_or(&0) as usize;
    if last != len {
        return bad(format!(
            "ends at {last} but the array it indexes has {len} entries"
        ));
    }
    Ok(())
}

fn check_trees(
    support: &[i32],
    ntree: usize,
    world: usize,
    kind: &'static str,
    index: usize,
) -> Result<()> {
    for &tree in support {
        if tree == -1 {
            return Err(Error::StaticInSupport { world, kind, index });
        }
        if tree < 0 || tree as usize >= ntree {
            return Err(Error::TreeOutOfRange {
                world,
                kind,
                index,
                tree,
                ntree,
            });
        }
    }
    Ok(())
}

/// Appends rows world by world; [`BatchBuilder::finish`] returns the [`Batch`].
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    batch: Batch,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        Batch::default().into_builder()
    }
}

impl BatchBuilder {
    /// Appends a row to the current world.
    pub fn row(&mut self, kind: RowType, id: i32, support: &[i32]) -> &mut Self {
        let b = &mut self.batch;
        b.row_type.push(kind);
        b.row_id.push(id);
        b.row_support.extend_from_slice(support);
        b.row_supadr.push(b.row_support.len() as u32);
        self
    }

    /// Appends a rowless hyperedge from flex `id` to the current world.
    pub fn rowless(&mut self, id: i32, support: &[i32]) -> &mut Self {
        self.rowless_of(EdgeKind::Flex, id, support)
    }

    /// Appends a rowless hyperedge of any kind to the current world.
    ///
    /// ```
    /// use archipelago::{Batch, EdgeKind};
    /// let mut b = Batch::builder();
    /// b.rowless_of(EdgeKind::Tendon, 2, &[0, 1]).end_world();
    /// let batch = b.finish();
    /// assert_eq!((batch.edge_kind[0], batch.edge_id[0]), (EdgeKind::Tendon, 2));
    /// ```
    pub fn rowless_of(&mut self, kind: EdgeKind, id: i32, support: &[i32]) -> &mut Self {
        let b = &mut self.batch;
        b.edge_kind.push(kind);
        b.edge_id.push(id);
        b.edge_support.extend_from_slice(support);
        b.edge_supadr.push(b.edge_support.len() as u32);
        self
    }

    /// Appends world `w` of `src` (its rows, then its rowless hyperedges) as a whole world:
    /// for tiling recorded worlds into bigger batches.
    ///
    /// ```
    /// use archipelago::{Batch, RowType};
    /// let mut b = Batch::builder();
    /// b.row(RowType::Equality, 0, &[0, 1]).rowless(0, &[2, 3]).end_world();
    /// let one = b.finish();
    /// let mut b = Batch::builder();
    /// b.world_from(&one, 0).world_from(&one, 0);
    /// let two = b.finish();
    /// assert_eq!((two.nworld(), two.nrow(), two.nedge()), (2, 2, 2));
    /// ```
    pub fn world_from(&mut self, src: &Batch, w: usize) -> &mut Self {
        for r in src.rows_of(w) {
            self.row(src.row_type[r], src.row_id[r], src.row_support_of(r));
        }
        self.edges_from(src, w).end_world()
    }

    /// Appends world `w`'s rowless hyperedges of `src` (kinds, ids and supports as they are) to
    /// the current world: for a copy of a world whose rows change.
    pub fn edges_from(&mut self, src: &Batch, w: usize) -> &mut Self {
        for e in src.edges_of(w) {
            self.rowless_of(src.edge_kind[e], src.edge_id[e], src.edge_support_of(e));
        }
        self
    }

    /// Appends every world of `src`, in order ([`world_from`](Self::world_from) for each).
    pub fn worlds_from(&mut self, src: &Batch) -> &mut Self {
        for w in 0..src.nworld() {
            self.world_from(src, w);
        }
        self
    }

    /// Closes the current world; what follows goes to the next one.
    pub fn end_world(&mut self) -> &mut Self {
        let b = &mut self.batch;
        b.world_rowadr.push(b.row_type.len() as u32);
        b.world_edgeadr.push(b.edge_supadr.len() as u32 - 1);
        self
    }

    /// The batch. Rows or rowless hyperedges added after the last
    /// [`end_world`](Self::end_world) make a last world of their own, as if it had been called
    /// (nothing added is dropped); a last world without any is closed by calling it.
    ///
    /// ```
    /// use archipelago::{Batch, RowType};
    /// let mut b = Batch::builder();
    /// b.row(RowType::Equality, 0, &[0, 1]).end_world();
    /// b.row(RowType::ContactPyramidal, 0, &[1]);
    /// assert_eq!(b.finish().nworld(), 2);
    /// ```
    pub fn finish(mut self) -> Batch {
        let b = &self.batch;
        let closed_rows = *b.world_rowadr.last().unwrap_or(&0) as usize;
        let closed_edges = *b.world_edgeadr.last().unwrap_or(&0) as usize;
        if b.row_type.len() > closed_rows || b.edge_supadr.len() - 1 > closed_edges {
            self.end_world();
        }
        self.batch
    }
}

/// The sizes an engine is built for: device buffers and scratch are allocated once from these,
/// and a batch that exceeds any of them is refused with [`Error::OverCapacity`].
///
/// Its checks, from the cheapest: [`check_sizes`](Self::check_sizes) (could any batch need
/// these sizes: an engine asks before allocating), [`fits`](Self::fits) (does a validated
/// input fit, O(nworld)), [`check`](Self::check) (is a batch valid for a model, and does it
/// fit: every row read). [`fit`](Self::fit) makes the smallest capacity that holds a batch, and
/// [`within`](Self::within) compares two.
///
/// ```
/// use archipelago::{Batch, Capacity, Model, RowType};
/// let model = Model::from_dofnum(&[1, 1]).unwrap();
/// let mut b = Batch::builder();
/// b.row(RowType::Equality, 0, &[0, 1]).end_world();
/// let batch = b.finish();
/// // Room for the busiest step of a simulation: here, twice this one's rows.
/// let fit = Capacity::fit(&model, &batch);
/// let capacity = Capacity { njmax: 2 * fit.njmax, nsupport: 2 * fit.nsupport, ..fit };
/// assert!(fit.within(&capacity));
/// capacity.check(&model, &batch).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Capacity {
    /// Worlds per batch.
    pub nworld: usize,
    /// Trees per world (the model's `ntree`).
    pub ntree: usize,
    /// Dofs per world (the model's `nv`).
    pub nv: usize,
    /// Rows per world (MuJoCo's `njmax`).
    pub njmax: usize,
    /// Support entries per world, rows and rowless hyperedges together.
    pub nsupport: usize,
    /// Rowless hyperedges per world. Passive flex contacts (the discrete integrator's) come and
    /// go as contacts do: size it for the busiest step, not a quiet first one.
    pub nedge: usize,
}

impl Capacity {
    /// The smallest capacity that holds `batch` for `model`.
    #[must_use]
    pub fn fit(model: &Model, batch: &Batch) -> Capacity {
        let counts = (0..batch.nworld()).map(|w| world_counts(batch, w));
        let (mut njmax, mut nsupport, mut nedge) = (0, 0, 0);
        for (rows, support, edges) in counts {
            njmax = njmax.max(rows);
            nsupport = nsupport.max(support);
            nedge = nedge.max(edges);
        }
        Capacity {
            nworld: batch.nworld(),
            ntree: model.ntree(),
            nv: model.nv(),
            njmax,
            nsupport,
            nedge,
        }
    }

    /// Checks that a batch could need every size: over all `nworld` worlds, rows, support
    /// entries and rowless hyperedges stay within the `u32` offsets of a [`Batch`], and worlds,
    /// trees and dofs within the address space at 8 bytes each. An engine checks this before it
    /// allocates anything, so that a larger capacity is an [`Error::Capacity`] rather than a
    /// panic (or a size that wraps) where its buffers are sized. A capacity within these bounds
    /// but past the memory at hand still fails when allocated.
    pub fn check_sizes(&self) -> Result<()> {
        let total = |per_world: usize| self.nworld.checked_mul(per_world);
        let offsets = u32::MAX as usize;
        let bytes = isize::MAX as usize / 8;
        if self.nworld > bytes {
            return Err(Error::Capacity(format!(
                "{} worlds: more than {bytes}",
                self.nworld
            )));
        }
        let sizes = [
            ("njmax", self.njmax, offsets),
            ("nsupport", self.nsupport, offsets),
            ("nedge", self.nedge, offsets),
            ("ntree", self.ntree, bytes),
            ("nv", self.nv, bytes),
        ];
        for (what, per_world, max) in sizes {
            if total(per_world).is_none_or(|n| n > max) {
                return Err(Error::Capacity(format!(
                    "{} worlds of {what} {per_world}: more than {max} in all",
                    self.nworld
                )));
            }
        }
        Ok(())
    }

    /// Whether every size of `self` is at most `other`'s: what fits `self` fits `other`.
    #[must_use]
    pub fn within(&self, other: &Capacity) -> bool {
        self.nworld <= other.nworld
            && self.ntree <= other.ntree
            && self.nv <= other.nv
            && self.njmax <= other.njmax
            && self.nsupport <= other.nsupport
            && self.nedge <= other.nedge
    }

    /// Refuses `model` where it has more trees or dofs than this capacity holds.
    pub fn holds(&self, model: &Model) -> Result<()> {
        for (what, got, cap) in [
            ("ntree", model.ntree(), self.ntree),
            ("nv", model.nv(), self.nv),
        ] {
            if got > cap {
                return Err(Error::OverCapacity {
                    world: None,
                    what,
                    got,
                    cap,
                });
            }
        }
        Ok(())
    }

    /// This capacity with `model`'s own tree and dof counts: what a model that it
    /// [`holds`](Self::holds) needs of it, no more.
    #[must_use]
    pub fn sized_for(&self, model: &Model) -> Capacity {
        Capacity {
            ntree: model.ntree(),
            nv: model.nv(),
            ..*self
        }
    }

    /// The smallest capacity within which both `self` and `other` fit: each size the larger.
    ///
    /// ```
    /// use archipelago::Capacity;
    /// let a = Capacity { nworld: 4, ntree: 3, nv: 6, njmax: 10, nsupport: 20, nedge: 0 };
    /// let b = Capacity { nworld: 2, njmax: 12, nedge: 1, ..a };
    /// let both = a.union(&b);
    /// assert!(a.within(&both) && b.within(&both));
    /// assert_eq!((both.nworld, both.njmax, both.nedge), (4, 12, 1));
    /// ```
    #[must_use]
    pub fn union(&self, other: &Capacity) -> Capacity {
        Capacity {
            nworld: self.nworld.max(other.nworld),
            ntree: self.ntree.max(other.ntree),
            nv: self.nv.max(other.nv),
            njmax: self.njmax.max(other.njmax),
            nsupport: self.nsupport.max(other.nsupport),
            nedge: self.nedge.max(other.nedge),
        }
    }

    /// Checks that `batch` is valid for `model` and fits.
    pub fn check(&self, model: &Model, batch: &Batch) -> Result<()> {
        batch.validate(model)?;
        self.fits(&Input {
            model,
            batch,
            fitted: None,
        })
    }

    /// Checks that an already validated `input` fits: O(nworld), where [`check`](Self::check)
    /// reads every row again (steps of validated inputs call this one).
    pub fn fits(&self, input: &Input<'_>) -> Result<()> {
        // Checked already against a capacity no larger than this one in any size: O(1).
        if input.fitted.is_some_and(|c| c.within(self)) {
            return Ok(());
        }
        let (model, batch) = (input.model(), input.batch());
        let over = |world, what, got, cap| {
            Err(Error::OverCapacity {
                world,
                what,
                got,
                cap,
            })
        };
        if batch.nworld() > self.nworld {
            return over(None, "nworld", batch.nworld(), self.nworld);
        }
        self.holds(model)?;
        for w in 0..batch.nworld() {
            if batch.rows_of(w).len() > self.njmax {
                return over(Some(w), "rows", batch.rows_of(w).len(), self.njmax);
            }
            if batch.support_entries_of(w) > self.nsupport {
                return over(
                    Some(w),
                    "support entries",
                    batch.support_entries_of(w),
                    self.nsupport,
                );
            }
            if batch.edges_of(w).len() > self.nedge {
                return over(
                    Some(w),
                    "rowless hyperedges",
                    batch.edges_of(w).len(),
                    self.nedge,
                );
            }
        }
        Ok(())
    }
}

/// A model and a batch that have been validated together: the only input the modes accept, so
/// no mode ever sees an invalid id or offset.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    model: &'a Model,
    batch: &'a Batch,
    /// The capacity it was checked against, if any ([`Input::fitted`]).
    fitted: Option<Capacity>,
}

impl<'a> Input<'a> {
    /// Validates `batch` against `model`.
    pub fn new(model: &'a Model, batch: &'a Batch) -> Result<Input<'a>> {
        batch.validate(model)?;
        Ok(Input {
            model,
            batch,
            fitted: None,
        })
    }

    /// Validates `batch` against `model` and `capacity`.
    pub fn with_capacity(
        model: &'a Model,
        batch: &'a Batch,
        capacity: &Capacity,
    ) -> Result<Input<'a>> {
        Input::new(model, batch)?.fitted(capacity)
    }

    /// This input checked against `capacity` ([`Capacity::fits`], O(nworld)); the checks of
    /// every later step stage against the same capacity or a larger one are then free.
    pub fn fitted(self, capacity: &Capacity) -> Result<Input<'a>> {
        capacity.fits(&self)?;
        Ok(Input {
            fitted: Some(*capacity),
            ..self
        })
    }

    /// The model.
    pub fn model(&self) -> &'a Model {
        self.model
    }

    /// The rows.
    pub fn batch(&self) -> &'a Batch {
        self.batch
    }

    /// Whether world `w` can have islands: it has rows, or the model finds islands without
    /// them ([`Model::islands_without_rows`]). Native `mj_island` returns before discovery
    /// otherwise, and every mode applies the rule through this.
    #[inline]
    pub fn discovers(&self, w: usize) -> bool {
        self.model.islands_without_rows() || !self.batch.rows_of(w).is_empty()
    }
}

/// (rows, support entries, rowless hyperedges) of world `w`, reading offsets defensively so that
/// sizing an unvalidated batch never panics (broken offsets count as 0).
fn world_counts(batch: &Batch, w: usize) -> (usize, usize, usize) {
    let at = |adr: &[u32], i: usize| adr.get(i).copied().unwrap_or(0) as usize;
    let span = |adr: &[u32], a: usize, b: usize| at(adr, b).saturating_sub(at(adr, a));
    let (r0, r1) = (at(&batch.world_rowadr, w), at(&batch.world_rowadr, w + 1));
    let (e0, e1) = (at(&batch.world_edgeadr, w), at(&batch.world_edgeadr, w + 1));
    let support = span(&batch.row_supadr, r0, r1) + span(&batch.edge_supadr, e0, e1);
    (r1.saturating_sub(r0), support, e1.saturating_sub(e0))
}

/// Whether a rowless hyperedge couples anything: native MuJoCo 4.0.0 ignores one with fewer
/// than two distinct trees ([`Batch::coupling_edges`]).
#[inline]
pub fn couples(support: &[i32]) -> bool {
    support.iter().any(|&t| t != support[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flat_passes_agree_with_the_element_by_element_ones() {
        let cases: [&[u32]; 7] = [
            &[],
            &[0],
            &[0, 0],
            &[0, 1, 1, 3],
            &[0, 2, 1],
            &[3, 2],
            &[0, 1, 2],
        ];
        for adr in cases {
            let pairs: Vec<_> = adr.windows(2).collect();
            assert_eq!(
                non_decreasing(adr),
                pairs.iter().all(|p| p[0] <= p[1]),
                "{adr:?}"
            );
            assert_eq!(
                increasing(adr),
                pairs.iter().all(|p| p[0] < p[1]),
                "{adr:?}"
            );
        }
        let support = [0, 3, -1, 4, i32::MIN, i32::MAX];
        for ntree in [0, 1, 4, 5] {
            for k in 0..=support.len() {
                let s = &support[..k];
                let want = s.iter().all(|&t| (t as u32 as usize) < ntree);
                assert_eq!(trees_in_range(s, ntree), want, "{s:?} {ntree}");
            }
        }
    }
}
