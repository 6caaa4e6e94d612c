//! `quotient` on the device: the host contracts and tracks (the same [`crate::quotient::Quotient`]
//! the CPU mode uses), the device checks and solves every world in one launch
//! (`kernels/quotient.cu`), fused with the maps.
//!
//! A step ([`QuotientSolver::upload`], [`QuotientSolver::replay`], [`QuotientSolver::download`]):
//! enqueue the batch's copy, and while it runs record the events and rebuild what they
//! invalidate on the host, then upload the slots contracted since the last step and the world →
//! slot map; wait for the copies; replay the captured graph of
//! one kernel: per world first the reuse check (its hyperedges against those of its last solved
//! step: equal, it keeps that step's outputs; see [`QuotientSolver::set_reuse`]), then a replay
//! check of the static rows against its slot, else the guard with
//! the per-node awake mask (sleeping components absorbed without a rebuild, as on the CPU), then
//! the node solve over the dynamic rows — or, when neither fits, a direct tree-level solve, so
//! nothing stale is ever used — and the maps (only the row-level ones when the partition of
//! trees is the last solved step's; from the nodes themselves when the quotient has at most 32,
//! see [`QuotientSolver::set_node_maps`]); download the outputs and the per-world flags, and
//! rebuild the directly solved worlds' quotients on the host for the next step. Nothing is
//! allocated per step.
//!
//! The kernels are NVRTC programs of their own, so a problem in them never affects the other GPU
//! modes: the block program ([`block_program_source`]: common.cu, quotient.cu, quotient_block.cu),
//! which every solver loads, and the warp program ([`warp_program_source`]: common.cu, quotient.cu,
//! quotient_warp.cu), which only a solver whose batches may take a warp a world loads (see
//! [`QuotientSolver::set_warp_worlds`]): its twenty-four kernels are most of the quotient's machine
//! code, and most of what NVRTC's assembler takes on a machine whose kernel cache lacks it
//! ([`super::kernel_cache`]). The block program has three entry points of one body:
//! `quotient_kernel`; `quotient_few_kernel` for a batch whose every world has a slot of at most 32
//! nodes, with the masked solve and the tree-level path (there only for stale or partly asleep
//! worlds) called out of line, so that the common path is compact machine code; and
//! `quotient_aside_kernel`, for such a batch of no more worlds than multiprocessors, where a world
//! with few rows has them mapped by the warp that the pass over its trees leaves idle, during that
//! pass (its rare paths inline: see `kernels/quotient_block.cu`). A fourth, `quotient_warp_kernel`
//! (`kernels/quotient_warp.cu`), replays such worlds with one warp each, without block barriers and
//! without the reuse check (it keeps the node-level partition check), for batches of more than
//! seven worlds a multiprocessor (see [`QuotientSolver::set_warp_worlds`]); a world it cannot
//! replay is solved by its block as in the others. Where every world's two warps are resident at
//! once, the pair kernels (`quotient_pair_kernel`) give each world a second warp that compares its
//! static rows with its slot's while the first maps it, from more worlds than multiprocessors on
//! for worlds of at most 1,024 rows (see [`QuotientSolver::set_guard_warps`]). Each warp kernel has
//! a masked twin (`…_masked_kernel`) for a launch after a step with masked worlds, which solves
//! those in their warps and sets some aside for blocks of their own (see [`MASKED_FOR_BLOCKS`] and
//! [`QuotientSolver::aside_worlds`]), and a `…_rest_kernel` that maps the other worlds beside it
//! (see [`QuotientSolver::listed_worlds`]).
//!
//! Beside this file, one idea a file:
//! - `programs.rs`: the programs' sources and names;
//! - `rules.rs`: when a batch takes which kernels (each threshold with its measurements), and
//!   the switches that override them;
//! - `kernels.rs`: the loaded kernels, and how a launch picks one;
//! - `world_lists.rs`: the lists of worlds of the launches after a step with masked worlds;
//! - `buffers.rs`: the device buffers, and the kernels' argument block;
//! - `upload.rs`: what a step copies to the device;
//! - `launch.rs`: how a launch is decided and enqueued;
//! - `graphs.rs`: the step graphs, kept by key;
//! - `node_tables.rs`: what those kernels read of each slot of few nodes (made on the host when
//!   the slot is contracted);
//! - `slots.rs`: what a batch's slots allow the launch (the node-level maps, one slot by value).

mod buffers;
mod graphs;
mod kernels;
mod launch;
mod node_tables;
mod programs;
mod rules;
mod slots;
mod upload;
mod world_lists;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, CudaStream, sys};

use super::env_choice;
use super::graph::KeptGraphs;
use super::phase_trace::{self, PhaseTrace};
use super::pinned::PinnedVec;
use super::workspace::{DevBuf, Needs, Workspace, dof_blocks};
use super::{Gpu, cuda};
use crate::cpu::Stats;
use crate::error::{Error, Result};
use crate::islands::Islands;
use crate::model::Model;
use crate::quotient::{Events, Policy, Quotient};
use crate::rows::{Capacity, Input};
use buffers::QBufs;
use graphs::{GRAPHS, GraphKey};
use invalidation::GuardFinding;
use kernels::{Kernel, Loaded, Warps};
use node_tables::NodeTables;
use rules::{
    aside_cap, aside_from_env, guard_warps_from_env, masked_for_blocks_from_env, masked_share_set,
    warp_worlds_from_env, warps_reachable,
};
use slots::BatchSlots;
use world_lists::lists_len;

// Named in the docs only.
#[cfg(doc)]
use world_lists::lists_array;

pub use programs::{
    block_program, block_program_source, capped_program, capped_program_source, warp_program,
    warp_program_source,
};
pub use rules::{ASIDE_SHARE, MASKED_FOR_BLOCKS};

/// The GPU quotient solver: host cache and tracker, device mirror, one fused kernel per step.
pub struct QuotientSolver {
    quotient: Quotient,
    ws: Workspace,
    bufs: QBufs,
    /// The programs, kernels and launch shapes loaded for the capacity.
    loaded: Loaded,
    /// For loading the warp program after construction.
    gpu: Gpu,
    /// [`QuotientSolver::set_warp_worlds`].
    warp_worlds: Option<bool>,
    guard_warps: Option<bool>,
    /// What the slots of the batch's worlds allow (None: the slots changed since).
    slots: Option<BatchSlots>,
    /// The device's multiprocessors: a batch of no more worlds has one to each world.
    sm_count: usize,
    stream: Arc<CudaStream>,
    stale: PinnedVec<i32>,
    /// The worlds the last downloaded step masked (flag 2), less those reported woken whole
    /// since, with those a sleep reported since masks.
    masked: Vec<u32>,
    /// Of those, the ones not mapped by their hint (flag 64), and those a sleep reported since
    /// masks: the worlds the aside blocks may take at the next step.
    walked: Vec<u32>,
    /// Per world, what [`follow_sleep_events`](Self::follow_sleep_events) found of this step's
    /// events: 0 not looked at, 1 looked at, 2 woken whole (all 0 between uploads).
    followed: Vec<u8>,
    /// Whether the device holds the whole of the last upload: after one that failed or was
    /// refused once past its capacity and events checks (the batch copied, the tables or lists
    /// not, say) nothing is launched or downloaded until an upload succeeds; events or a
    /// capacity refused leave the last one whole.
    uploaded: bool,
    /// The worlds a reported sleep masks at this upload, and the merge's scratch (see
    /// [`follow_sleep_events`](Self::follow_sleep_events)).
    fallen: Vec<u32>,
    merged: Vec<u32>,
    /// Whether worlds that a reported sleep masks join the masked ones at the upload
    /// (`ARCHIPELAGO_Q_FELL=0`: not, as before session 66).
    take_fallen: bool,
    /// Whether the masked twins may set worlds aside (`ARCHIPELAGO_Q_ASIDE=0`: never) and
    /// whether even past one wave (`=1`); unset, within one wave only.
    aside_on: Option<bool>,
    /// The lists of worlds ([`lists_array`]) as uploaded, and the next ones.
    lists_on_device: Vec<u32>,
    lists_next: Vec<u32>,
    /// What the lists were made for (worlds; aside, listed and rest blocks), and whether the
    /// masked worlds changed since: a launch makes them again only then (the host's O(worlds)
    /// pass would otherwise come before every launch, the device idle meanwhile).
    lists_for: Option<[usize; 4]>,
    lists_stale: bool,
    /// The last step but one's masked and walked worlds (to tell whether they changed).
    masked_before: Vec<u32>,
    walked_before: Vec<u32>,
    /// The plain kernels' worlds beside the masked twins at the last launch.
    rest: Vec<u32>,
    /// Whether every launch that takes the warp kernels takes their masked twins for every
    /// world (`ARCHIPELAGO_Q_TWINS=1`, for measuring what the twins cost the replayed worlds).
    twins_always: bool,
    /// The worlds set aside on the device now, in order.
    aside_on_device: Vec<u32>,
    /// The worlds listed for the masked twins' warps on the device now, in order.
    listed_on_device: Vec<u32>,
    /// Whether the last launch had aside blocks, and whether it listed worlds.
    last_aside: bool,
    last_listed: bool,
    /// The stream of the masked twins' launch beside the plain kernels', and the events that
    /// fork it from the solver's stream and join it back.
    side: Arc<CudaStream>,
    fork: CudaEvent,
    join: CudaEvent,
    contracted: Vec<u32>,
    /// The world → slot map as last uploaded (uploaded again only when it changes; empty
    /// before the first upload, when the kernel reads none).
    slots_on_device: Vec<u32>,
    /// The graphs of the last [`GRAPHS`] keys, and the capture of a launch made without one
    /// ([`replay`](QuotientSolver::replay)).
    graphs: KeptGraphs<GraphKey, GRAPHS>,
    /// The world count of the last launch, while every world's row-level outputs are where it
    /// wrote them (see [`c_rowadr`](QBufs::c_rowadr)).
    placed_nworld: Option<usize>,
    /// Whether the reuse cache describes the outputs in place (see `before_launch`).
    cache_valid: bool,
    reuse: bool,
    node_maps: bool,
    cap: Capacity,
    last: StepCounts,
    /// How long the last upload's host half took ([`last_host_half`](Self::last_host_half)).
    host_half_took: Duration,
    /// The share of a step's worlds masked past which the next takes a block a world instead
    /// of a warp, where one is set ([`set_masked_for_blocks`](Self::set_masked_for_blocks),
    /// `ARCHIPELAGO_Q_MASKED`); else the rule's ([`MASKED_FOR_BLOCKS`]).
    masked_for_blocks: Option<f64>,
    node_tables: Option<NodeTables>,
    /// Phase marks (`ARCHIPELAGO_Q_TRACE`): the device's marks and their sums.
    trace: Option<(DevBuf, PhaseTrace)>,
}

impl std::fmt::Debug for QuotientSolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuotientSolver")
            .field("capacity", &self.cap)
            .field("reuse", &self.reuse)
            .field("register_cap", &self.loaded.register_cap)
            .field("warp_kernels", &self.loaded.warps.is_some())
            .finish_non_exhaustive()
    }
}

/// How the worlds of the last device step were solved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepCounts {
    /// Worlds whose static rows replayed the contracted stream exactly.
    pub replayed: usize,
    /// Worlds solved over their quotient with at least one node masked as asleep (or with the
    /// static rows in another order).
    pub masked: usize,
    /// Worlds solved directly (their quotient did not fit; rebuilt on the host for the next
    /// step).
    pub direct: usize,
    /// Worlds whose hyperedges equal those of the last step they were solved in: that step's
    /// outputs are reused (see [`QuotientSolver::set_reuse`]).
    pub reused: usize,
    /// Of the other worlds, those whose partition of trees equals their last solved step's:
    /// their tree- and dof-level outputs were kept, only the row-level ones computed.
    pub rows_only: usize,
    /// Of the other worlds, those whose outputs were computed from their quotient's nodes
    /// (slots of at most 32 nodes; see [`QuotientSolver::set_node_maps`]).
    pub by_nodes: usize,
    /// Of the reused worlds, those whose row-level outputs were still where they belong (no
    /// earlier world's row count moved them): nothing was written for them.
    pub in_place: usize,
    /// Of the masked worlds, those solved by their own warp (the warp kernels' masked twins,
    /// see [`QuotientSolver::set_warp_worlds`]); the others by a block.
    pub masked_by_warps: usize,
    /// Of those, the worlds mapped as replayed ones without their asleep nodes' rows: their
    /// static rows were their slot's stream without the runs of the nodes their warp found
    /// asleep at their last masked step (the hint, checked row by row first), so their warp
    /// (or, for a world set aside, its block's first warp) did not walk every row. The others
    /// were walked by their warp or solved by a block, and left the hint for their next step.
    pub masked_by_hint: usize,
}

impl QuotientSolver {
    /// Builds the solver for batches within `cap` on `model`, classifying rows by `policy`:
    /// compiles and loads its programs (the warp program only where a batch may take it: see
    /// [`set_warp_worlds`](Self::set_warp_worlds)) and allocates every host and device buffer.
    /// On a machine whose kernel cache lacks them NVRTC builds them here, once per machine and
    /// build ([`super::kernel_cache`]).
    pub fn new(gpu: &Gpu, cap: Capacity, model: &Model, policy: Policy) -> Result<QuotientSolver> {
        let ctx = gpu.ctx();
        let warp_worlds = warp_worlds_from_env();
        let sm_count = gpu.info().sm_count.max(1) as usize;
        let loaded = Loaded::load(gpu, &cap, model, warp_worlds)?;
        let needs = Needs {
            fallback: loaded.shape.smem == 0,
            dense: false,
        };
        let ws = Workspace::new(ctx, cap, model, needs)?;
        let quotient = Quotient::new(&cap.sized_for(model), policy);
        let bufs = QBufs::new(gpu, &cap, model)?;
        let (w, ms) = (cap.nworld, cap.njmax + cap.nedge);
        let nodes = dof_blocks(model);
        let event = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(cuda("cuEventCreate"))
        };
        Ok(QuotientSolver {
            quotient,
            ws,
            bufs,
            loaded,
            gpu: gpu.clone(),
            warp_worlds,
            guard_warps: guard_warps_from_env(),
            slots: None,
            sm_count,
            stream: gpu.stream().clone(),
            stale: PinnedVec::new(ctx, w),
            masked: Vec::with_capacity(w),
            walked: Vec::with_capacity(w),
            followed: vec![0; w],
            uploaded: false,
            fallen: Vec::with_capacity(w),
            merged: Vec::with_capacity(w),
            take_fallen: env_choice("ARCHIPELAGO_Q_FELL") != Some(false),
            aside_on: aside_from_env(),
            lists_on_device: Vec::with_capacity(lists_len(w)),
            lists_next: Vec::with_capacity(lists_len(w)),
            rest: Vec::with_capacity(w),
            lists_for: None,
            lists_stale: false,
            masked_before: Vec::with_capacity(w),
            walked_before: Vec::with_capacity(w),
            twins_always: env_choice("ARCHIPELAGO_Q_TWINS") == Some(true),
            aside_on_device: Vec::with_capacity(aside_cap(w)),
            listed_on_device: Vec::with_capacity(w),
            last_aside: false,
            last_listed: false,
            side: ctx.new_stream().map_err(cuda("cuStreamCreate"))?,
            fork: event()?,
            join: event()?,
            contracted: Vec::with_capacity(w),
            slots_on_device: Vec::with_capacity(w),
            graphs: KeptGraphs::default(),
            placed_nworld: None,
            cache_valid: true,
            reuse: true,
            node_maps: true,
            cap,
            last: StepCounts::default(),
            host_half_took: Duration::ZERO,
            masked_for_blocks: masked_for_blocks_from_env(),
            node_tables: nodes.then(|| NodeTables::new(model, w, ms)),
            trace: match phase_trace::requested() {
                true => Some((
                    DevBuf::new(ctx, "q_trace", w * phase_trace::MARKS * 8)?,
                    PhaseTrace::new(w),
                )),
                false => None,
            },
        })
    }

    /// The host half: cache, tracker, decision, counters.
    pub fn quotient(&self) -> &Quotient {
        &self.quotient
    }

    /// The host half, to record events beside another solve (the engine's `auto`).
    pub(crate) fn quotient_mut(&mut self) -> &mut Quotient {
        &mut self.quotient
    }

    /// The workspace (its byte report).
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    /// Device bytes of the quotient's own buffers.
    pub fn quotient_bytes(&self) -> usize {
        let b = &self.bufs;
        [
            &b.row_id,
            &b.world_slot,
            &b.nnode,
            &b.tree_node,
            &b.node_mintree,
            &b.node_rows,
            &b.node_sum,
            &b.node_treeadr,
            &b.node_trees,
            &b.node_dofpre,
            &b.node_head,
            &b.tree_place,
            &b.node_efc,
            &b.row_node,
            &b.runs,
            &b.nstatic,
            &b.nstatic_rows,
            &b.stream_kind,
            &b.stream_adr,
            &b.stream_support,
            &b.stale,
            &b.c_count,
            &b.c_rowadr,
            &b.c_type,
            &b.c_adr,
            &b.c_support,
            &b.c_out,
            &b.c_node,
            &b.lists,
        ]
        .iter()
        .map(|x| x.bytes())
        .sum()
    }

    /// Whether a world whose hyperedges (row types and supports) equal those of the last step it
    /// was solved in keeps that step's outputs instead of being solved again (on by default);
    /// and whether a world that changed but whose partition of trees did not keeps its tree-
    /// and dof-level outputs, computing only the row-level ones. Every output is a function of
    /// those hyperedges alone, and the tree- and dof-level ones of the partition alone, so
    /// reuse is exact; it costs a comparison with a per-world cache each step, and a write of
    /// the cache for each world solved. Off, every world is checked against its quotient and
    /// solved every step.
    ///
    /// The warp kernel has no reuse check of hyperedges: where it runs
    /// ([`set_warp_worlds`](Self::set_warp_worlds), by default past seven worlds a
    /// multiprocessor, twelve for worlds of more than 1,024 rows, or past one with a second warp
    /// a world for the guard) unchanged worlds are replayed, as a warp replays a world for about
    /// what the check costs; it keeps the partition check of the node-level maps (reuse on). A
    /// launch with the reuse check after launches without it (reuse off, or the warp kernel)
    /// starts from an empty cache.
    pub fn set_reuse(&mut self, on: bool) -> Result<()> {
        self.reuse = on;
        Ok(())
    }

    /// Whether unchanged worlds reuse their outputs ([`set_reuse`](Self::set_reuse)).
    pub fn reuse(&self) -> bool {
        self.reuse
    }

    /// Whether the next launch runs the reuse check: reuse on, and a block per world (the warp
    /// kernel has none; see [`set_warp_worlds`](Self::set_warp_worlds)).
    pub fn reuse_active(&self) -> bool {
        self.reuse && !self.kernel_choice().by_warps()
    }

    /// Turns the node-level maps on (the default) or off. On, a world whose quotient has at
    /// most 32 nodes gets every output from its nodes: the islands are unions of nodes, so
    /// their counts are sums over nodes, and a tree's place in its island is its place in its
    /// node plus a popcount over the island's one-tree nodes below it and a binary search in
    /// each of its other nodes of several trees below it, with no scatter or scan over trees.
    /// They need trees that own consecutive dof blocks in tree order (MuJoCo's layout); other
    /// models always take the tree-level maps. Off, every world takes the tree-level maps (for
    /// comparison).
    pub fn set_node_maps(&mut self, on: bool) {
        self.node_maps = on;
    }

    /// Whether worlds of few nodes may take the node-level maps: switched on
    /// ([`set_node_maps`](Self::set_node_maps)) and the model's dof layout allows them.
    pub fn node_maps(&self) -> bool {
        self.node_maps && self.node_tables.is_some()
    }

    /// Chooses when replayed worlds take one warp each (`quotient_warp_kernel`): `None` (the
    /// default) for batches of more than seven worlds a multiprocessor, twelve for worlds of
    /// more than 1,024 rows (see `warp_pays`), and of more worlds than multiprocessors where
    /// each world's second warp for its guard fits too and worlds have at most 1,024 rows (see
    /// `pairs_pay` and [`set_guard_warps`](Self::set_guard_warps)), but not after a step with
    /// more masked worlds than the rule allows them (by default every share:
    /// [`MASKED_FOR_BLOCKS`], [`masked_for_blocks`](Self::masked_for_blocks)),
    /// `Some(true)` for every batch,
    /// `Some(false)` never. Either way only where it applies: every world's quotient has
    /// at most 32 nodes, the node-level maps are on and the model has at most 512 trees. A
    /// world that does not replay (its static rows changed, a component asleep, no quotient
    /// yet) is then solved by its block of four warps as in the other kernels; after a step with
    /// masked worlds the kernels' masked twins solve a masked world in its warp
    /// ([`StepCounts::masked_by_warps`], flag 32; mapped as a replayed one where the nodes it
    /// found asleep at its last masked step hold, [`StepCounts::masked_by_hint`]) or, masked
    /// and walked at the step before, by a block of its own
    /// ([`aside_worlds`](Self::aside_worlds)), so the outputs are the same. The
    /// warp kernel has no reuse check of hyperedges (it keeps the node-level partition check),
    /// so where it runs unchanged worlds are replayed ([`reuse_active`](Self::reuse_active)):
    /// past the default threshold a warp replays a world for about what the block kernels'
    /// check alone costs (8,192 worlds of mechanism-90%: 47.9 µs against 44.7 with every world
    /// unchanged), and on sequences whose contacts change it was faster than reuse at every
    /// share of worlds at rest measured (see `warp_pays`). `Some(false)` keeps the block kernels
    /// and reuse. `ARCHIPELAGO_Q_WARP=0` or `=1` sets `Some(false)` or `Some(true)` at
    /// construction (for measurements).
    ///
    /// The warp kernels are a program of their own: a solver for no more worlds than
    /// multiprocessors, which the default never gives a warp a world, loads it only when a
    /// choice here may take it, so this may compile and load it (the errors of
    /// [`QuotientSolver::new`]).
    pub fn set_warp_worlds(&mut self, choice: Option<bool>) -> Result<()> {
        let (fits, nworld) = (self.loaded.warp_fits, self.cap.nworld);
        if self.loaded.warps.is_none() && warps_reachable(fits, choice, nworld, self.sm_count) {
            self.loaded.warps = Some(Warps::load(&self.gpu, self.loaded.warp_smem)?);
        }
        self.warp_worlds = choice;
        Ok(())
    }

    /// Whether this solver has loaded the warp program (see
    /// [`set_warp_worlds`](Self::set_warp_worlds)): only where a batch may take it.
    pub fn warp_kernels_loaded(&self) -> bool {
        self.loaded.warps.is_some()
    }

    /// Whether the next launch takes one warp per world
    /// ([`set_warp_worlds`](Self::set_warp_worlds)).
    pub fn warp_worlds(&self) -> bool {
        self.kernel_choice().by_warps()
    }

    /// Chooses when a world that takes one warp ([`set_warp_worlds`](Self::set_warp_worlds))
    /// has its guard (the comparison of its static rows with its slot's) done by a second warp
    /// of its own, while the first maps it (`quotient_pair_kernel`): `None` (the default) where
    /// every world's two warps are resident at once (on the H200 up to 2,112 worlds: 16 a
    /// multiprocessor), `Some(true)` for every such batch, `Some(false)` never. Below a wave a
    /// world's step is its warp's chain of loads, and the guard's loads are a long part of it;
    /// past a wave the second warps would take the place of other worlds'. A world whose guard
    /// finds a change is solved again by its block over what its first warp wrote, as when the
    /// block's last warp finds one after its tree and dof maps, so the outputs and flags are the
    /// same.
    /// `ARCHIPELAGO_Q_PAIR=0` or `=1` sets `Some(false)` or `Some(true)` at construction (for
    /// measurements).
    pub fn set_guard_warps(&mut self, choice: Option<bool>) {
        self.guard_warps = choice;
    }

    /// Sets the share of a step's worlds masked past which the next step of a batch the rule
    /// gives the warp kernels takes a block a world instead (`Some(0.0)`: after any masked
    /// world; `Some(1.0)`: never; clamped to that range, NaN read as `None`); `None` (the
    /// default) keeps the rule's, [`MASKED_FOR_BLOCKS`]. The outputs are the same either way.
    /// `ARCHIPELAGO_Q_MASKED=<share>` sets one at construction (for measurements).
    ///
    /// ```no_run
    /// # fn demo(s: &mut archipelago::gpu::quotient::QuotientSolver) {
    /// s.set_masked_for_blocks(Some(1.0 / 16.0)); // blocks past a sixteenth masked
    /// # }
    /// ```
    pub fn set_masked_for_blocks(&mut self, share: Option<f64>) {
        self.masked_for_blocks = masked_share_set(share);
    }

    /// Whether the next launch gives each world a second warp for its guard
    /// ([`set_guard_warps`](Self::set_guard_warps)).
    pub fn guard_warps(&self) -> bool {
        self.kernel_choice() == Kernel::Pair
    }

    /// Registers a thread of the kernels when they are capped copies (a batch of many waves:
    /// [`regcap`](super::regcap)); `None` for the quotient program's own.
    pub fn register_cap(&self) -> Option<u32> {
        self.loaded.register_cap
    }

    /// Changes the classification policy; every world is rebuilt at the next step.
    pub fn set_policy(&mut self, policy: Policy) {
        self.quotient.set_policy(policy);
    }

    /// Records `events` without stepping (while another mode solves), so the quotients they
    /// invalidate are rebuilt before they are used again.
    pub fn record(&mut self, events: &Events) -> Result<()> {
        self.quotient.record(events)
    }

    /// How the worlds of the last downloaded step were solved.
    pub fn last_counts(&self) -> StepCounts {
        self.last
    }

    /// One step: every output of `input` into `out`, with `events` reported since the last step
    /// (upload, graph replay, download).
    pub fn step(&mut self, input: &Input<'_>, events: &Events, out: &mut Islands) -> Result<Stats> {
        self.upload(input, events)?;
        self.replay()?;
        self.download(input, out)
    }

    /// The host half and the copies: copies `input` to the device and, while it crosses the
    /// bus, records `events`, rebuilds the quotients they invalidate, takes the worlds they wake
    /// whole out of the masked ones ([`masked_worlds`](Self::masked_worlds)) and adds those a
    /// reported sleep masks, mirrors new slots and the world → slot map, and makes the next
    /// launch's lists of worlds ([`listed_worlds`](Self::listed_worlds)); then waits for every
    /// copy. An error in `events` is found before anything is copied. The host half runs
    /// beside the copy where `input`'s rows are page-locked ([`PinnedBatch`](super::PinnedBatch));
    /// from pageable memory the driver stages the whole copy before the call returns.
    pub fn upload(&mut self, input: &Input<'_>, events: &Events) -> Result<()> {
        // One capacity check (O(nworld)) for the host half and the workspace's upload.
        let input = &input.fitted(&self.quotient.capacity())?;
        self.quotient.check(events)?;
        // Refused before this, the last upload is still whole; from here it may be overwritten.
        self.uploaded = false;
        // The batch first: a step's host half (a cloth falling asleep in 256 worlds reports
        // 10^5 events) then runs beside its largest copy.
        self.host_half_took = Duration::ZERO;
        let r = match self.ws.enqueue_upload(input, &self.stream) {
            Ok(()) => self.host_half(input, events),
            // The events stay recorded (they are checked), as they were when the host half ran
            // before the copy: the next upload rebuilds what they invalidate.
            Err(e) => self.quotient.record(events).and(Err(e)),
        };
        // The batch's copy reads `input` until it is done, so the wait comes also after an
        // error (a model the workspace was not built for fails before the host half records
        // anything).
        super::wait_after(&self.stream, r)?;
        self.uploaded = true;
        Ok(())
    }

    /// Refuses a launch or a download after an upload that did not complete.
    fn check_uploaded(&self) -> Result<()> {
        super::uploaded_whole(self.uploaded, "gpu-quotient")
    }

    /// How long the host's own work in the last [`upload`](Self::upload) took: the events
    /// recorded, the quotients they invalidated rebuilt, the sleep events followed (zero if the
    /// upload failed before it). It runs beside the batch's copy, so a step's wall time grows by
    /// it only where it outlasts the copy; this is the cost of a rebuild. The copies of the
    /// tables that follow it are left out: from pageable memory they may wait for the batch's.
    pub fn last_host_half(&self) -> Duration {
        self.host_half_took
    }

    /// What [`upload`](Self::upload) does beside the batch's copy.
    fn host_half(&mut self, input: &Input<'_>, events: &Events) -> Result<()> {
        let t = Instant::now();
        self.quotient.prepare(input, events)?;
        self.follow_sleep_events();
        self.host_half_took = t.elapsed();
        self.upload_tables()?;
        self.upload_row_ids(input)?;
        let nworld = self.ws.nworld();
        if self.slots.is_none_or(|b| b.nworld != nworld) {
            self.slots = Some(BatchSlots::of(&self.quotient.cache().tables(), nworld));
        }
        self.prepare_lists()
    }

    /// Runs the kernel on the uploaded batch by replaying its graph. A launch whose key none of
    /// the kept graphs has ([`captures`](Self::captures) says when) is made directly instead,
    /// and its graph captured while the device runs it: at the [`download`](Self::download)
    /// that follows, before its wait, or at the next replay of the same key, whichever comes
    /// first. A capture (its instantiation and upload, 100–300 µs on the H200) then no longer
    /// holds the device up; a direct launch costs a few µs more than a replay.
    pub fn replay(&mut self) -> Result<()> {
        self.check_uploaded()?;
        let nworld = self.ws.nworld();
        if nworld == 0 {
            return Ok(());
        }
        let key = self.graph_key();
        let stream = self.stream.clone();
        self.before_launch()?;
        let mut graphs = std::mem::take(&mut self.graphs);
        let r = graphs.replay(&stream, key, nworld, |s| self.launch(s));
        self.graphs = graphs;
        if r.is_err() {
            self.placed_nworld = None;
        }
        r
    }

    /// How many step graphs have been captured: once after the first step, then after each
    /// launch whose world count or captured scalars (the classification, reuse, the kernel,
    /// the masked twins' blocks) took a value none of the last eight graphs has (see
    /// [`replay`](Self::replay)).
    pub fn captures(&self) -> u64 {
        self.graphs.captures()
    }

    /// Runs the kernel on the uploaded batch with a direct launch (no graph).
    pub fn launch_direct(&mut self) -> Result<()> {
        self.check_uploaded()?;
        let stream = self.stream.clone();
        self.before_launch()?;
        let r = self.launch(&stream);
        if r.is_err() {
            self.placed_nworld = None;
        }
        r
    }

    /// Waits for the device, copies every output into `out`, and rebuilds on the host the
    /// quotients of the worlds the device had to solve directly. Before its wait it captures
    /// the graph of a launch that [`replay`](Self::replay) made directly, while the device runs
    /// that launch. As for the full rebuilds'
    /// [`Solver::download`](super::Solver::download), `out` is best a
    /// [`PinnedIslands`](super::PinnedIslands): into pageable memory each output's copy goes
    /// through the driver's staging.
    pub fn download(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
        self.check_uploaded()?;
        let nworld = input.batch().nworld();
        if nworld != self.ws.nworld() {
            return Err(Error::Refused {
                mode: "gpu-quotient",
                reason: format!(
                    "download of {nworld} worlds after an upload of {}",
                    self.ws.nworld()
                ),
            });
        }
        // The outputs and the per-world flags, then one wait, the graph of a launch made
        // directly captured before it.
        let enqueued = self.enqueue_downloads(input, out, nworld);
        // A failed capture is reported only once the copies into `out` are done.
        let captured = if enqueued.is_ok() {
            self.capture_pending()
        } else {
            Ok(())
        };
        super::wait_after(&self.stream, enqueued)?;
        captured?;
        if let Some((_, t)) = &mut self.trace {
            t.record(&self.stale[..nworld]);
        }
        let mut counts = StepCounts::default();
        std::mem::swap(&mut self.masked, &mut self.masked_before);
        std::mem::swap(&mut self.walked, &mut self.walked_before);
        self.masked.clear();
        self.walked.clear();
        for w in 0..nworld {
            let flag = self.stale[w];
            if flag & 3 == 2 {
                self.masked.push(w as u32);
                if flag & 64 == 0 {
                    self.walked.push(w as u32);
                }
            }
            counts.rows_only += usize::from(flag & 4 != 0);
            counts.by_nodes += usize::from(flag & 8 != 0);
            counts.in_place += usize::from(flag & 16 != 0);
            counts.masked_by_warps += usize::from(flag & 32 != 0);
            counts.masked_by_hint += usize::from(flag & 64 != 0);
            match flag & 3 {
                0 => counts.replayed += 1,
                2 => counts.masked += 1,
                3 => counts.reused += 1,
                _ => {
                    counts.direct += 1;
                    self.quotient
                        .rebuild_stale(input, w, GuardFinding::Unmatched);
                }
            }
        }
        self.lists_stale |= self.masked != self.masked_before || self.walked != self.walked_before;
        self.quotient
            .note_device_step(nworld as u64, counts.masked as u64, counts.reused as u64);
        self.last = counts;
        Ok(Stats {
            rounds: 0,
            scratch_bytes: self.quotient_bytes(),
        })
    }

    /// Enqueues every copy of a download of `nworld` worlds: the outputs, the per-world flags,
    /// the phase marks where traced.
    fn enqueue_downloads(
        &mut self,
        input: &Input<'_>,
        out: &mut Islands,
        nworld: usize,
    ) -> Result<()> {
        self.ws.enqueue_download(input, out, &self.stream)?;
        self.bufs
            .stale
            .download(&mut self.stale[..nworld], &self.stream)?;
        if let Some((buf, t)) = &mut self.trace {
            buf.download(&mut t.marks[..nworld * phase_trace::MARKS], &self.stream)?;
        }
        Ok(())
    }

    /// Waits for the stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))
    }

    /// Device time of `n` graph replays of the uploaded batch, each between two CUDA events, in
    /// microseconds (after `warmup` untimed replays). The host half is not included; the
    /// replay's own host work is, as the device waits for it between the events: remaking the
    /// lists of worlds where they changed, and capturing a graph for a new key.
    pub fn time_replays(&mut self, warmup: usize, n: usize) -> Result<Vec<f64>> {
        let (ctx, stream) = (self.ws.ctx().clone(), self.stream.clone());
        super::graph::time_replays_us(&ctx, &stream, warmup, n, || self.replay())
    }

    /// Device time per replay of `n` graph replays of the uploaded batch enqueued back to back
    /// between one pair of CUDA events, in microseconds (after `warmup` untimed replays).
    pub fn time_back_to_back(&mut self, warmup: usize, n: usize) -> Result<f64> {
        let (ctx, stream) = (self.ws.ctx().clone(), self.stream.clone());
        super::graph::time_back_to_back_us(&ctx, &stream, warmup, n, || self.replay())
    }

    /// The share of a step's worlds masked past which the next step of a batch like the
    /// uploaded one takes a block a world: where the rule gives it the warp kernels, the share
    /// set ([`set_masked_for_blocks`](Self::set_masked_for_blocks)) or the rule's
    /// ([`MASKED_FOR_BLOCKS`]: 1, never; 0 for two warps a world without the aside blocks);
    /// 1 where the rule never gives it the warp kernels, or where a choice of
    /// [`set_warp_worlds`](Self::set_warp_worlds) overrides the rule.
    pub fn masked_for_blocks(&self) -> f64 {
        match self.warp_terms() {
            Some((true, pairs)) if self.few_launch() && self.warp_worlds.is_none() => {
                self.masked_share(pairs)
            }
            _ => 1.0,
        }
    }

    /// The worlds the uploaded batch's launch lists for the masked twins' warps (made at the
    /// upload; the worlds the step before
    /// masked, less those set aside), while the plain kernels took every other world beside
    /// them (`…_rest_kernel`; the twins on a stream forked in the step's graph): a replayed world
    /// runs the plain kernels' code, and only a masked world pays for the twins'. A world that a
    /// sleep reported at this step masks is taken in at the upload; one that falls asleep
    /// unreported is left by its plain warp to its block, as at a step after none masked, and
    /// listed at the next. Measured on the H200: see `kernels/quotient_warp.cu`.
    pub fn listed_worlds(&self) -> &[u32] {
        match self.last_listed {
            true => &self.listed_on_device,
            false => &[],
        }
    }

    /// The worlds the last downloaded step solved with a node masked (flag 2: a component
    /// asleep), ascending, less those reported woken whole at the upload since and with those a
    /// sleep reported since masks (`Quotient::static_node`): the worlds the next launch takes as
    /// masked.
    pub fn masked_worlds(&self) -> &[u32] {
        &self.masked
    }

    /// Of [`masked_worlds`](Self::masked_worlds), those not mapped by their hint
    /// ([`StepCounts::masked_by_hint`]): walked row by row by their warp, or solved by a block;
    /// and those a sleep reported at the upload since masks, which have no hint yet.
    pub fn walked_worlds(&self) -> &[u32] {
        &self.walked
    }

    /// The worlds the uploaded batch's launch sets aside (made at the upload), each with a block
    /// of its own beside the warp
    /// kernels' warps (its first warp maps the world where its hint holds, else the block
    /// solves it): those the step before masked and walked, or masked by a sleep reported since
    /// ([`walked_worlds`](Self::walked_worlds)), where they were no more than [`ASIDE_SHARE`] of
    /// the batch (see [`MASKED_FOR_BLOCKS`]) and the launch with their blocks stays within one
    /// wave ([`blocks_a_wave`](Self::blocks_a_wave)); none where the launch took the block
    /// kernels.
    pub fn aside_worlds(&self) -> &[u32] {
        match self.last_aside {
            true => &self.aside_on_device,
            false => &[],
        }
    }

    /// Blocks of the warp kernels (one warp a world, four worlds a block) that the device holds
    /// at once, once their program is loaded: a launch of more spans two waves, and no world is
    /// set aside ([`aside_worlds`](Self::aside_worlds)) where that would make it so.
    pub fn blocks_a_wave(&self) -> Option<usize> {
        self.loaded.warps.as_ref().map(|w| w.warp_wave)
    }

    /// The one slot every world of the last prepared batch has, if they all have one: the warp
    /// kernel then takes it and its counts from its arguments instead of loading them.
    pub fn batch_slot(&self) -> Option<u32> {
        self.slots.and_then(|b| b.one).map(|o| o.slot)
    }
}

/// Prints the phase marks' summary (`ARCHIPELAGO_Q_TRACE`) to standard error.
impl Drop for QuotientSolver {
    fn drop(&mut self) {
        if let Some((_, t)) = &self.trace {
            eprint!("{}", t.report(self.reuse, self.node_maps));
        }
    }
}
