//! Traces recorded from native MuJoCo 4.0.0: read, validate, convert to batches, replay.
//!
//! A trace (`traces/*.npz`, format in `traces/README.md`, recorded by `tools/record_trace.py`)
//! holds, for `nstep` recorded steps × `nworld` worlds of one scene, every active constraint row
//! with its tree support, the rowless flex hyperedges, per-row extra data (contact geoms and
//! collision id, static source), `tree_awake`, `eq_active`, and every native island output.
//!
//! [`Trace::open`] validates the whole file (schema version, lengths, offsets, id ranges) and
//! reports any problem as [`Error::Trace`](crate::Error::Trace). A step then converts into the
//! crate's types with [`Trace::batch`] and [`Trace::native`], reusing allocations:
//!
//! ```no_run
//! use archipelago::{cpu, trace::Trace, Batch, Input, Islands};
//! let trace = Trace::open("traces/island_island_efc.npz")?;
//! let (mut batch, mut expected, mut got) = (Batch::default(), Islands::default(), Islands::default());
//! let mut dsu = cpu::by_name("dsu").unwrap();
//! for step in 0..trace.nstep() {
//!     trace.batch(step, &mut batch);
//!     trace.native(step, &mut expected);
//!     dsu.solve(&Input::new(trace.model(), &batch)?, &mut got)?;
//!     assert_eq!(archipelago::trace::compare(&got, &expected), None);
//! }
//! # Ok::<(), archipelago::Error>(())
//! ```

mod npz;
mod read;
pub mod replay;
mod tile;

pub use replay::{Oracle, Report, StepMismatch, compare, replay, replay_with};
pub use tile::Tiled;

use crate::islands::Islands;
use crate::model::Model;
use crate::rows::{Batch, Capacity};

/// The format version this reader understands.
pub const SCHEMA_VERSION: i32 = 1;

/// How the recorded model computed constraint Jacobians, which decides how row supports were
/// derived (sparse: structural nonzeros; dense: numerically nonzero entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jacobian {
    /// `mjJAC_DENSE`.
    Dense,
    /// `mjJAC_SPARSE`.
    Sparse,
}

/// One validated trace, held in memory. Slots are (step, world) pairs, step-major:
/// `slot = step * nworld + world`.
///
/// # Panics
///
/// Every method that takes a step or a world panics when it is out of range (`step < nstep()`,
/// `world < nworld()`), naming both, as slice indexing does: a caller loops over the trace's
/// own counts.
#[derive(Debug, Clone)]
pub struct Trace {
    pub(crate) path: String,
    pub(crate) scene: String,
    pub(crate) meta: String,
    pub(crate) jacobian: Jacobian,
    pub(crate) model: Model,
    pub(crate) counts: Counts,
    pub(crate) eq_type: Vec<i32>,
    pub(crate) eq_flex: Vec<i32>,
    pub(crate) step_index: Vec<i32>,
    pub(crate) rows: read::Rows,
    pub(crate) edges: read::Edges,
    pub(crate) tree_awake: Vec<u8>,
    pub(crate) eq_active: Vec<u8>,
    pub(crate) native: Native,
}

/// Model-level counts recorded with the trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Worlds per step.
    pub nworld: usize,
    /// Recorded steps.
    pub nstep: usize,
    /// Joints.
    pub njnt: usize,
    /// Tendons.
    pub ntendon: usize,
    /// Equality constraints.
    pub neq: usize,
    /// Flexes.
    pub nflex: usize,
    /// Actuators (0 in traces from before rowless actuator couplings were recorded).
    pub nactuator: usize,
}

/// Native island outputs of every slot. Island-level fields are CSR over slots
/// (`slot_islandadr`); tree, dof and row fields are dense.
#[derive(Debug, Clone, Default)]
pub(crate) struct Native {
    pub nisland: Vec<i32>,
    pub nidof: Vec<i32>,
    pub slot_islandadr: Vec<u32>,
    /// The nine island-sized fields, in `ISLAND_FIELDS` order.
    pub island: [Vec<i32>; 9],
    pub tree_island: Vec<i32>,
    pub map_itree2tree: Vec<i32>,
    pub dof_island: Vec<i32>,
    pub map_dof2idof: Vec<i32>,
    pub map_idof2dof: Vec<i32>,
    pub efc_island: Vec<i32>,
    pub map_efc2iefc: Vec<i32>,
    pub map_iefc2efc: Vec<i32>,
}

/// The island-sized output fields, in the order a trace's native outputs store them.
pub const ISLAND_FIELDS: [&str; 9] = [
    "island_ntree",
    "island_itreeadr",
    "island_nv",
    "island_idofadr",
    "island_dofadr",
    "island_ne",
    "island_nf",
    "island_nefc",
    "island_iefcadr",
];

/// Per-row data of one step beyond what a [`Batch`] holds, indexed like the batch's rows.
#[derive(Debug, Clone, Copy)]
pub struct RowExtra<'a> {
    /// Static source of each row: equality id (equality rows), dof id (dof friction), tendon id
    /// (tendon friction); −1 for dynamic rows (limits, contacts).
    pub source: &'a [i32],
    /// The contact's two geoms (−1 for a flex side); `[-1, -1]` for non-contact rows.
    pub geom: &'a [[i32; 2]],
    /// The contact's two flexes (−1 for a geom side); `[-1, -1]` for non-contact rows.
    pub flex: &'a [[i32; 2]],
    /// Collision id: the contact's index among earlier contacts of the same geom/flex pair in
    /// MuJoCo's contact order; −1 for non-contact rows.
    pub colid: &'a [i32],
}

impl RowExtra<'_> {
    /// The canonical-order keys of these rows ([`crate::order::RowKeys`], replacing `keys`'
    /// contents): contacts by their two sides and collision id, where a flex side `f` is named
    /// `-2 - f` (geoms are `>= 0`), so that contacts of different flexes against one geom get
    /// different keys; other rows are ordered by type and id.
    pub fn row_keys(&self, keys: &mut crate::order::RowKeys) {
        keys.clear();
        for ((geom, flex), &colid) in self.geom.iter().zip(self.flex).zip(self.colid) {
            if colid < 0 {
                keys.push_other();
                continue;
            }
            let side = |k: usize| {
                if geom[k] >= 0 {
                    geom[k]
                } else {
                    -2 - flex[k].max(0)
                }
            };
            keys.push_contact([side(0), side(1)], colid);
        }
    }
}

impl Trace {
    /// Reads and validates a trace file.
    pub fn open(path: impl AsRef<std::path::Path>) -> crate::Result<Trace> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| crate::Error::Trace {
            path: shown.clone(),
            detail: e.to_string(),
        })?;
        Trace::from_bytes(&bytes, &shown)
    }

    /// Reads and validates a trace held in memory; `path` names it in errors.
    pub fn from_bytes(bytes: &[u8], path: &str) -> crate::Result<Trace> {
        read::from_bytes(bytes, path)
    }

    /// The path (or name) the trace was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The scene's name.
    pub fn scene(&self) -> &str {
        &self.scene
    }

    /// The recorder's metadata (JSON text: MuJoCo version, arguments, date).
    pub fn meta(&self) -> &str {
        &self.meta
    }

    /// The Jacobian setting the supports were derived under.
    pub fn jacobian(&self) -> Jacobian {
        self.jacobian
    }

    /// The scene's tree/dof topology.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Model-level counts.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Worlds per step.
    pub fn nworld(&self) -> usize {
        self.counts.nworld
    }

    /// Recorded steps.
    pub fn nstep(&self) -> usize {
        self.counts.nstep
    }

    /// The simulation step number of each recorded step.
    pub fn step_index(&self) -> &[i32] {
        &self.step_index
    }

    /// MuJoCo's `eq_type` of each equality.
    pub fn eq_type(&self) -> &[i32] {
        &self.eq_type
    }

    /// The flex of each flex equality (−1 for other equalities).
    pub fn eq_flex(&self) -> &[i32] {
        &self.eq_flex
    }

    /// Rows over all worlds of `step`.
    pub fn nrow(&self, step: usize) -> usize {
        let s = self.slots(step);
        (self.rows.slot_rowadr[s.end] - self.rows.slot_rowadr[s.start]) as usize
    }

    /// Total rows of the trace.
    pub fn nrow_total(&self) -> usize {
        self.rows.row_type.len()
    }

    fn slots(&self, step: usize) -> std::ops::Range<usize> {
        let nstep = self.counts.nstep;
        assert!(step < nstep, "step {step} of a trace of {nstep} steps");
        step * self.counts.nworld..(step + 1) * self.counts.nworld
    }

    fn slot(&self, step: usize, world: usize) -> usize {
        let nworld = self.counts.nworld;
        assert!(
            world < nworld,
            "world {world} of a trace of {nworld} worlds"
        );
        self.slots(step).start + world
    }

    /// The batch and the events of `step` ([`batch`](Self::batch), [`events`](Self::events)) in
    /// new buffers, for callers that keep every step (a bench's sequence, a test that tiles
    /// worlds at offsets in time).
    pub fn step(&self, step: usize) -> (Batch, invalidation::Events) {
        let (mut batch, mut events) = (Batch::default(), invalidation::Events::new());
        self.batch(step, &mut batch);
        self.events(step, &mut events);
        (batch, events)
    }

    /// Fills `batch` with the rows and rowless hyperedges of every world of `step`
    /// (`step < nstep()`), reusing its allocations.
    pub fn batch(&self, step: usize, batch: &mut Batch) {
        let (r, e, s) = (&self.rows, &self.edges, self.slots(step));
        let rows = r.slot_rowadr[s.start] as usize..r.slot_rowadr[s.end] as usize;
        let edges = e.slot_edgeadr[s.start] as usize..e.slot_edgeadr[s.end] as usize;
        let sup = r.row_supadr[rows.start] as usize..r.row_supadr[rows.end] as usize;
        let esup = e.edge_supadr[edges.start] as usize..e.edge_supadr[edges.end] as usize;
        // Offsets from the range's first; other arrays as they are, each into its allocation.
        let rebase = |dst: &mut Vec<u32>, src: &[u32]| {
            dst.clear();
            dst.extend(src.iter().map(|&a| a - src[0]));
        };
        fn copy<T: Copy>(dst: &mut Vec<T>, src: &[T]) {
            dst.clear();
            dst.extend_from_slice(src);
        }
        rebase(&mut batch.world_rowadr, &r.slot_rowadr[s.start..=s.end]);
        rebase(&mut batch.world_edgeadr, &e.slot_edgeadr[s.start..=s.end]);
        copy(&mut batch.row_type, &r.row_type[rows.clone()]);
        copy(&mut batch.row_id, &r.row_id[rows.clone()]);
        rebase(&mut batch.row_supadr, &r.row_supadr[rows.start..=rows.end]);
        copy(&mut batch.row_support, &r.row_support[sup]);
        copy(&mut batch.edge_kind, &e.edge_kind[edges.clone()]);
        copy(&mut batch.edge_id, &e.edge_id[edges.clone()]);
        rebase(
            &mut batch.edge_supadr,
            &e.edge_supadr[edges.start..=edges.end],
        );
        copy(&mut batch.edge_support, &e.edge_support[esup]);
    }

    /// Per-row extra data of `step`, indexed like [`Trace::batch`]'s rows.
    pub fn row_extra(&self, step: usize) -> RowExtra<'_> {
        let s = self.slots(step);
        let rows = self.rows.slot_rowadr[s.start] as usize..self.rows.slot_rowadr[s.end] as usize;
        RowExtra {
            source: &self.rows.row_source[rows.clone()],
            geom: &self.rows.row_geom[rows.clone()],
            flex: &self.rows.row_flex[rows.clone()],
            colid: &self.rows.row_colid[rows],
        }
    }

    /// The canonical-order keys of `step`'s rows (see [`RowExtra::row_keys`]).
    pub fn row_keys(&self, step: usize, keys: &mut crate::order::RowKeys) {
        self.row_extra(step).row_keys(keys);
    }

    /// `tree_awake` of one world at `step` (1 awake, 0 asleep).
    pub fn tree_awake(&self, step: usize, world: usize) -> &[u8] {
        let n = self.model.ntree();
        let s = self.slot(step, world);
        &self.tree_awake[s * n..(s + 1) * n]
    }

    /// `eq_active` of one world at `step`.
    pub fn eq_active(&self, step: usize, world: usize) -> &[u8] {
        let n = self.counts.neq;
        let s = self.slot(step, world);
        &self.eq_active[s * n..(s + 1) * n]
    }

    /// A capacity that fits every recorded step: the most rows, support entries and rowless
    /// hyperedges any world has at any step.
    pub fn capacity(&self) -> Capacity {
        let mut cap = Capacity {
            nworld: self.nworld(),
            ntree: self.model.ntree(),
            nv: self.model.nv(),
            njmax: 0,
            nsupport: 0,
            nedge: 0,
        };
        let mut batch = Batch::default();
        for step in 0..self.nstep() {
            self.batch(step, &mut batch);
            cap = cap.union(&Capacity::fit(&self.model, &batch));
        }
        cap
    }

    /// The changes from step `step - 1` to `step` as the invalidation events a simulator would
    /// report: `eq_active` toggles, trees falling asleep and waking. Step 0 starts from every
    /// tree awake and its own `eq_active`. `events` is cleared first.
    ///
    /// ```no_run
    /// # fn main() -> archipelago::Result<()> {
    /// use archipelago::{Engine, Mode, Options, trace::Trace};
    /// let t = Trace::open("traces/invalidation_island_efc.npz")?;
    /// let options = Options { mode: Mode::Quotient, ..Options::default() };
    /// let mut engine = Engine::new(t.model(), t.capacity(), options)?;
    /// let (mut batch, mut events) = (archipelago::Batch::default(), archipelago::Events::new());
    /// for step in 0..t.nstep() {
    ///     t.batch(step, &mut batch);
    ///     t.events(step, &mut events);
    ///     engine.step(&batch, &events)?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn events(&self, step: usize, events: &mut invalidation::Events) {
        events.clear();
        self.changes(step.checked_sub(1), step, events);
    }

    /// Appends the changes from step `from` to step `to` (any two steps; `None`: the start,
    /// every tree awake and `to`'s own `eq_active`) as events: what a simulator reports when it
    /// moves its worlds from one state to the other, as when it resets them.
    pub fn changes(&self, from: Option<usize>, to: usize, events: &mut invalidation::Events) {
        for w in 0..self.nworld() {
            if let Some(from) = from {
                let then = self.eq_active(from, w);
                for (eq, (&a, &b)) in then.iter().zip(self.eq_active(to, w)).enumerate() {
                    if a != b {
                        events.eq_active(w as u32, eq as i32, b != 0);
                    }
                }
            }
            let then = from.map(|from| self.tree_awake(from, w));
            for (tree, &b) in self.tree_awake(to, w).iter().enumerate() {
                let a = then.map_or(1, |then| then[tree]);
                match (a != 0, b != 0) {
                    (true, false) => events.sleep(w as u32, tree as i32),
                    (false, true) => events.wake(w as u32, tree as i32),
                    _ => continue,
                };
            }
        }
    }

    /// Native `nisland` of one world at `step`.
    pub fn native_nisland(&self, step: usize, world: usize) -> i32 {
        self.native.nisland[self.slot(step, world)]
    }

    /// Fills `out` with native MuJoCo's outputs for every world of `step`. Worlds where native
    /// found no island (no rows) hold archipelago's convention (−1, identity maps); native's
    /// arrays are not engine data there, so [`compare`] checks only `nisland` and `nidof`.
    pub fn native(&self, step: usize, out: &mut Islands) {
        let (ntree, nv) = (self.model.ntree(), self.model.nv());
        let nworld = self.counts.nworld;
        let s = self.slots(step);
        let n = &self.native;
        out.nworld = nworld;
        out.ntree = ntree;
        out.nv = nv;
        out.world_rowadr.clear();
        out.world_rowadr.extend(
            self.rows.slot_rowadr[s.start..=s.end]
                .iter()
                .map(|&a| a - self.rows.slot_rowadr[s.start]),
        );
        out.nisland.clear();
        out.nisland.extend_from_slice(&n.nisland[s.clone()]);
        out.nidof.clear();
        out.nidof.extend_from_slice(&n.nidof[s.clone()]);
        let copy = |dst: &mut Vec<i32>, src: &[i32], width: usize| {
            dst.clear();
            dst.extend_from_slice(&src[s.start * width..s.end * width]);
        };
        copy(&mut out.tree_island, &n.tree_island, ntree);
        copy(&mut out.map_itree2tree, &n.map_itree2tree, ntree);
        copy(&mut out.dof_island, &n.dof_island, nv);
        copy(&mut out.map_dof2idof, &n.map_dof2idof, nv);
        copy(&mut out.map_idof2dof, &n.map_idof2dof, nv);
        let rows = self.rows.slot_rowadr[s.start] as usize..self.rows.slot_rowadr[s.end] as usize;
        for (dst, src) in [
            (&mut out.efc_island, &n.efc_island),
            (&mut out.map_efc2iefc, &n.map_efc2iefc),
            (&mut out.map_iefc2efc, &n.map_iefc2efc),
        ] {
            dst.clear();
            dst.extend_from_slice(&src[rows.clone()]);
        }
        // Island-sized fields: padded to ntree per world with −1.
        for (dst, src) in out.island_fields_mut().into_iter().zip(&n.island) {
            dst.clear();
            dst.resize(nworld * ntree, -1);
            for (w, slot) in s.clone().enumerate() {
                let isl = n.slot_islandadr[slot] as usize..n.slot_islandadr[slot + 1] as usize;
                dst[w * ntree..w * ntree + isl.len()].copy_from_slice(&src[isl]);
            }
        }
    }
}
