//! `quotient` on the device: the host contracts and tracks (the same [`crate::quotient::Quotient`]
//! the CPU mode uses), the device checks and solves every world in one launch
//! (`kernels/quotient.cu`), fused with the maps.
//!
//! A step ([`QuotientSolver::upload`], [`QuotientSolver::replay`], [`QuotientSolver::download`]):
//! record the events and rebuild what they invalidate on the host; upload the slots contracted
//! since the last step and the world → slot map; upload the batch; replay the captured graph of
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
//! The kernels are NVRTC programs of their own, so a problem in them never affects the other
//! GPU modes: the block program ([`block_program_source`]: common.cu, quotient.cu,
//! quotient_block.cu), which every solver loads, and the warp program
//! ([`warp_program_source`]: common.cu, quotient.cu, quotient_warp.cu), which only a solver
//! whose batches may take a warp a world loads (see [`QuotientSolver::set_warp_worlds`]): its
//! sixteen kernels are most of the quotient's machine code, and most of what NVRTC's assembler
//! takes on a machine whose kernel cache lacks it ([`super::kernel_cache`]). The block program
//! has three entry points of one body: `quotient_kernel`; `quotient_few_kernel` for a batch
//! whose every world has a slot of at most 32 nodes, with the masked solve and the tree-level
//! path (there only for stale or partly asleep worlds) called out of line, so that the common
//! path is compact machine code; and
//! `quotient_aside_kernel`, the same for such a batch of no more worlds than multiprocessors,
//! where a world with few rows has them mapped by the warp that the pass over its trees leaves
//! idle, during that pass. A fourth, `quotient_warp_kernel` (`kernels/quotient_warp.cu`), replays
//! such worlds with one warp each, without block barriers and without the reuse check (it
//! keeps the node-level partition check), for batches of more than seven worlds a
//! multiprocessor (see [`QuotientSolver::set_warp_worlds`]); a world it cannot replay is solved
//! by its block as in the others. Where every world's two warps are resident at once, the pair
//! kernels (`quotient_pair_kernel`) give each world a second warp that compares its static rows
//! with its slot's while the first maps it, from more worlds than multiprocessors on for
//! worlds of at most 1,024 rows (see [`QuotientSolver::set_guard_warps`]). Each warp kernel
//! has a masked twin (`…_masked_kernel`) for a launch after a step with masked worlds, which
//! solves those in their warps and sets some aside for blocks of their own (see
//! [`MASKED_FOR_BLOCKS`] and [`QuotientSolver::aside_worlds`]), and a `…_rest_kernel` that maps
//! the other worlds beside it (see [`QuotientSolver::listed_worlds`]).
//!
//! Beside this file: `node_tables.rs`, what those kernels read of each slot of few nodes (made
//! on the host when the slot is contracted), and `slots.rs`, what a batch's slots allow the
//! launch (the node-level maps, one slot by value).

mod node_tables;
mod slots;

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaFunction, CudaModule, CudaStream, sys};

use super::graph::StepGraph;
use super::maps::BlockShape;
use super::module::{Program, Split, function};
use super::phase_trace::{self, PhaseTrace};
use super::pinned::PinnedVec;
use super::regcap;
use super::workspace::{Args, DevBuf, Needs, Workspace, dof_blocks};
use super::{Gpu, cuda};
use crate::cpu::Stats;
use crate::error::{Error, Result};
use crate::islands::Islands;
use crate::model::Model;
use crate::quotient::{Events, Policy, Quotient};
use crate::rows::{Capacity, Input};
use invalidation::GuardFinding;
use node_tables::{NODE_CACHE_WORDS, NODE_HEAD, NODE_MAPS_MAX, NodeTables, run_bytes};
use slots::BatchSlots;

/// The block program's source: the shared definitions, the quotient's device code, then its
/// block-per-world entry points (with the phase marks compiled in when
/// [`phase_trace::requested`]).
pub fn block_program_source() -> String {
    let define = if phase_trace::requested() {
        phase_trace::DEFINE
    } else {
        ""
    };
    let entries = (
        "quotient_block.cu",
        include_str!("../../../kernels/quotient_block.cu"),
    );
    format!("{define}{}", program_source(entries))
}

/// The warp program's source: the shared definitions, the quotient's device code, then its
/// warp-per-world entry points (no phase marks: a solver that records them takes the block
/// kernels only).
pub fn warp_program_source() -> String {
    let entries = (
        "quotient_warp.cu",
        include_str!("../../../kernels/quotient_warp.cu"),
    );
    program_source(entries)
}

/// The block program's copy with at most [`regcap::QUOTIENT`] registers a thread, for batches
/// of many waves (regcap).
pub fn capped_program_source() -> String {
    regcap::source(regcap::QUOTIENT, &block_program_source())
}

/// The block program ([`block_program_source`]), named apart with the phase marks compiled in.
pub fn block_program() -> Program {
    marked(("quotient", "quotient (phase marks)"), block_program_source)
}

/// The block program's register-capped copy ([`capped_program_source`]), named apart with the
/// phase marks compiled in.
pub fn capped_program() -> Program {
    let names = (
        "quotient (registers capped)",
        "quotient (phase marks, registers capped)",
    );
    marked(names, capped_program_source)
}

/// A block program of `source` under the first of `names`, or the second where the phase
/// marks are compiled in (a different text).
fn marked(names: (&'static str, &'static str), source: fn() -> String) -> Program {
    Program {
        name: if phase_trace::requested() {
            names.1
        } else {
            names.0
        },
        source,
        split: Split::Off,
    }
}

/// The warp program ([`warp_program_source`]): its sixteen kernels assemble a thread each
/// ([`Split::Kernels`]: the same machine code, most of a cold start's assembly otherwise).
pub const WARP_PROGRAM: Program = Program {
    name: "quotient (warp kernels)",
    source: warp_program_source,
    split: Split::Kernels,
};

fn program_source(entries: (&str, &str)) -> String {
    let sources = [
        ("common.cu", include_str!("../../../kernels/common.cu")),
        ("quotient.cu", include_str!("../../../kernels/quotient.cu")),
        entries,
    ];
    super::module::concat(&sources)
}

/// The quotient's argument block; field order and types match `struct QArgs` in
/// `kernels/quotient.cu` exactly.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct QArgs {
    row_id: u64,
    world_slot: u64,
    nnode: u64,
    tree_node: u64,
    node_mintree: u64,
    node_rows: u64,
    node_sum: u64,
    node_treeadr: u64,
    node_trees: u64,
    node_dofpre: u64,
    node_head: u64,
    tree_place: u64,
    node_efc: u64,
    row_node: u64,
    runs: u64,
    nstatic: u64,
    nstatic_rows: u64,
    stream_kind: u64,
    stream_adr: u64,
    stream_support: u64,
    stale: u64,
    c_count: u64,
    c_rowadr: u64,
    c_type: u64,
    c_adr: u64,
    c_support: u64,
    c_node: u64,
    trace: u64,
    lists: u64,
    eq_ids: i32,
    eq_lo: i32,
    eq_hi: i32,
    eq_static: i32,
    friction_static: i32,
    flex_static: i32,
    max_static: i32,
    max_entries: i32,
    reuse: i32,
    reuse_nodes: i32,
    cap_rows: i32,
    cap_hyper: i32,
    cap_entries: i32,
    node_maps: i32,
    run_bytes: i32,
    one_slot: i32,
    one_nnode: i32,
    one_k: i32,
    one_nstatic: i32,
    aside_blocks: i32,
    asleep: u64,
}

/// Device buffers of the quotient, in `QArgs` order.
struct QBufs {
    /// Row ids, uploaded only while equalities are classified by id
    /// ([`Classifier::eqs_by_id`](crate::quotient::classify::Classifier::eqs_by_id); no other
    /// use of an id on the device: see `invalidation::signature`).
    row_id: DevBuf,
    world_slot: DevBuf,
    nnode: DevBuf,
    tree_node: DevBuf,
    node_mintree: DevBuf,
    node_rows: DevBuf,
    node_sum: DevBuf,
    node_treeadr: DevBuf,
    node_trees: DevBuf,
    node_dofpre: DevBuf,
    node_head: DevBuf,
    tree_place: DevBuf,
    node_efc: DevBuf,
    row_node: DevBuf,
    runs: DevBuf,
    nstatic: DevBuf,
    nstatic_rows: DevBuf,
    stream_kind: DevBuf,
    stream_adr: DevBuf,
    stream_support: DevBuf,
    stale: DevBuf,
    /// The reuse cache: each world's hyperedges and row-level outputs at its last solved step.
    c_count: DevBuf,
    /// Per world, the first row where its row-level outputs were last written: a reused world
    /// found there needs no copy (forgotten when the world count changes).
    c_rowadr: DevBuf,
    c_type: DevBuf,
    c_adr: DevBuf,
    c_support: DevBuf,
    c_out: DevBuf,
    /// The node-level partition check's cache (per world [`NODE_CACHE_WORDS`] words: a
    /// contraction number, then [`NODE_MAPS_MAX`] node islands as bytes).
    c_node: DevBuf,
    /// The lists of worlds of the launches after a step with masked worlds ([`lists_array`]):
    /// the plain kernels' (`…_rest_kernel`), then the masked twins' (their aside blocks', then
    /// their warps').
    lists: DevBuf,
    /// Per world the nodes its last masked solve (by its warp or by a block) found asleep: the
    /// masked twins' hint ([`StepCounts::masked_by_hint`]), verified before use, so never stale
    /// in effect.
    asleep: DevBuf,
}

/// The lists of worlds of the launches after a step with masked worlds into `out`, as
/// `quotient_warp.cu` reads them: for `rest_blocks` blocks of the plain kernels the worlds of
/// `rest`, four a block; then for the masked twins each of their `aside_blocks` aside blocks'
/// worlds (those of `set`), then for `list_blocks` blocks the worlds of `listed`, four a block.
/// `u32::MAX` where a block has no world.
fn lists_array(
    (rest_blocks, rest): (usize, &[u32]),
    (aside_blocks, set): (usize, &[u32]),
    (list_blocks, listed): (usize, &[u32]),
    out: &mut Vec<u32>,
) {
    out.clear();
    for (blocks, worlds) in [
        (rest_blocks * WARP_PER_BLOCK, rest),
        (aside_blocks, set),
        (list_blocks * WARP_PER_BLOCK, listed),
    ] {
        debug_assert!(worlds.len() <= blocks, "a list longer than its blocks");
        let end = out.len() + blocks;
        out.extend_from_slice(worlds);
        out.resize(end, u32::MAX);
    }
}

/// The longest lists for batches of up to `nworld` worlds: both launches' blocks of four at most
/// for every world, and the aside blocks.
fn lists_len(nworld: usize) -> usize {
    2 * nworld.div_ceil(WARP_PER_BLOCK) * WARP_PER_BLOCK + aside_cap(nworld)
}

/// Splits worlds `0..nworld` between the masked twins and the plain kernels beside them: the
/// twins take those of `twins` (ascending; every world where `None`), and of those, the ones
/// not in `set` (ascending, among them: the worlds set aside, one to each aside block) go to
/// `listed`; the other worlds go to `rest`.
fn split_worlds(
    nworld: u32,
    twins: Option<&[u32]>,
    set: &[u32],
    listed: &mut Vec<u32>,
    rest: &mut Vec<u32>,
) {
    listed.clear();
    rest.clear();
    let mut m = twins.unwrap_or_default().iter().peekable();
    let mut a = set.iter().peekable();
    for w in 0..nworld {
        if m.next_if_eq(&&w).is_none() && twins.is_some() {
            rest.push(w);
        } else if a.next_if_eq(&&w).is_none() {
            listed.push(w);
        }
    }
}

/// The blocks of a launch over a list of `n` worlds of a batch of `nworld` (four a block),
/// rounded up so that a step's graph is captured again only when the count moves by much: to a
/// power of two or to a sixteenth of the batch's blocks, whichever is fewer (blocks past the
/// list's last world return at once), at most the batch's.
fn list_blocks(n: usize, nworld: usize) -> usize {
    let (need, all) = (n.div_ceil(WARP_PER_BLOCK), nworld.div_ceil(WARP_PER_BLOCK));
    let step = all.div_ceil(16).max(1);
    match need {
        0 => 0,
        _ => need
            .next_power_of_two()
            .min(need.div_ceil(step) * step)
            .min(all),
    }
}

/// `ARCHIPELAGO_Q_ASIDE=0` turns the aside blocks off (for measurements).
fn aside_from_env() -> bool {
    choice_from_env("ARCHIPELAGO_Q_ASIDE") != Some(false)
}

/// Worlds per block of the warp kernel (`QW_WARPS` in `kernels/quotient_warp.cu`).
const WARP_PER_BLOCK: usize = 4;

/// Trees at most for the warp kernel: its scratch is 3 * ntree ints per warp, in shared memory.
/// At 400 trees eight blocks of four warps still fit an H200 multiprocessor (all its registers
/// allow), at 512 six. Measured at 400 (cloth-99%, 4,096 worlds): 63 µs a step against the
/// block kernel's 155 (benches/results/logs/h200-2026-12-01-session31-calls.md).
const WARP_TREES_MAX: usize = 512;

/// The scalars a step's graph was captured with (kernel arguments are by value): the
/// classifier's, whether unchanged worlds reuse their outputs, whether worlds of few nodes take
/// the node-level maps, the threads per block, which kernel, the masked twins' aside and listed
/// blocks (none without the twins) and the plain kernels' blocks beside them, and the batch's
/// one slot with its counts.
type GraphKey = [i32; 17];

/// Graphs a solver keeps, one a key, the least recently replayed dropped first. A batch whose
/// worlds fall asleep and wake goes through at least three keys in turn: the plain kernels
/// (nothing masked at the step before), the masked twins with aside blocks (after the step at
/// which worlds fell asleep and were walked) and the twins with those worlds listed (after a
/// step that mapped them by their hint); their list sizes move the key again. Kept two, those
/// three keys captured a graph again at three steps of four of a sleeping sequence (session
/// 61), each capture's instantiation and upload on the step's time. A graph of a few kernel
/// nodes holds little.
const GRAPHS: usize = 8;

/// Moves the entry of `key` to the front of `kept` (the latest first), or puts a new one there
/// (its value the default), the last dropped where `kept` then holds more than `most`.
fn to_front<K: PartialEq, V: Default>(kept: &mut Vec<(K, V)>, key: K, most: usize) {
    match kept.iter().position(|(k, _)| *k == key) {
        Some(i) => kept[..=i].rotate_right(1),
        None => {
            kept.insert(0, (key, V::default()));
            kept.truncate(most);
        }
    }
}

/// The kernel of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// `quotient_kernel`: some world has a slot of many nodes, or none.
    General,
    /// `quotient_few_kernel`: every world has a slot of at most 32 nodes.
    Few,
    /// `quotient_aside_kernel`: the same, with each world a multiprocessor to itself.
    Aside,
    /// `quotient_warp_kernel`: the same, one warp per replayed world, with no reuse check
    /// (`quotient_warp_reuse_kernel` with the node-level partition check while reuse is on;
    /// each as `…_one_kernel` for a batch whose worlds all have one slot, see [`OneSlot`](slots::OneSlot)).
    Warp,
    /// `quotient_pair_kernel` (and its three siblings): `Warp` with each world's guard by a
    /// second warp, where every world's two warps are resident at once (see
    /// [`QuotientSolver::set_guard_warps`]).
    Pair,
}

impl Kernel {
    /// Whether a world takes one warp for its maps (no reuse check of hyperedges).
    fn by_warps(self) -> bool {
        matches!(self, Kernel::Warp | Kernel::Pair)
    }
}

/// Which of a family's kernels a launch takes (see `kernels/quotient_warp.cu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Every world: the launch after a step with none masked.
    Plain,
    /// Every world but those the masked twins take beside it.
    Rest,
    /// The masked twins, over the worlds the host lists (the last step's masked ones) and the
    /// aside blocks' worlds.
    Masked,
}

/// The twelve entry points of one family of warp kernels (`quotient_warp_…` or
/// `quotient_pair_…`): with the partition check (reuse on) or without, with the batch's one
/// slot as an argument or loaded per world, as the plain kernel, the plain kernel for the rest
/// of the worlds, or the masked twin (masked worlds by their warps, and aside blocks). The twins
/// are a kernel apart, so that a launch after a step with none masked runs the machine code of
/// before them, and after a step with some the worlds not masked then run the plain kernels'
/// code, beside the twins (see [`QuotientSolver::listed_worlds`]).
struct WarpKernels {
    /// Indexed by [`WarpKernels::index`].
    entries: Vec<CudaFunction>,
}

impl WarpKernels {
    /// The suffixes of the entry points, in [`WarpKernels::index`] order.
    const SUFFIXES: [&'static str; 12] = [
        "",
        "_rest",
        "_masked",
        "_one",
        "_one_rest",
        "_one_masked",
        "_reuse",
        "_reuse_rest",
        "_reuse_masked",
        "_reuse_one",
        "_reuse_one_rest",
        "_reuse_one_masked",
    ];

    fn load(module: &Arc<CudaModule>, family: &str) -> Result<WarpKernels> {
        let f = |suffix: &str| function(module, &format!("quotient_{family}{suffix}_kernel"));
        let entries = Self::SUFFIXES.iter().map(|s| f(s)).collect::<Result<_>>()?;
        Ok(WarpKernels { entries })
    }

    fn all(&self) -> &[CudaFunction] {
        &self.entries
    }

    fn index(reuse: bool, one: bool, part: Part) -> usize {
        ((reuse as usize) << 1 | one as usize) * 3 + part as usize
    }

    fn pick(&self, reuse: bool, one: bool, part: Part) -> &CudaFunction {
        &self.entries[Self::index(reuse, one, part)]
    }
}

/// The warp program's kernels, once loaded (see [`Warps::load`]).
struct Warps {
    _module: Arc<CudaModule>,
    /// One warp per replayed world (see [`Kernel::Warp`]); the partition check's kernels are
    /// launched while reuse is on, the one slot's for a batch whose worlds all have one (see
    /// [`OneSlot`](slots::OneSlot) and [`QuotientSolver::batch_slot`]).
    warp: WarpKernels,
    /// The same with a second warp a world for its guard (see [`Kernel::Pair`]).
    pair: WarpKernels,
    /// Worlds at most whose pairs of warps are all resident at once
    /// ([`QuotientSolver::set_guard_warps`]).
    pair_worlds: usize,
}

impl Warps {
    /// Compiles (or takes from the process's cache) and loads the warp program, with `smem`
    /// bytes of dynamic shared memory a block. Its kernels have fixed launch bounds, so it has
    /// no register-capped copy: the capped program's copies of them were the same machine code.
    fn load(gpu: &Gpu, smem: u32) -> Result<Warps> {
        let module = gpu.program(&WARP_PROGRAM)?;
        let warp = WarpKernels::load(&module, "warp")?;
        let pair = WarpKernels::load(&module, "pair")?;
        for f in warp.all() {
            warp_shape(1, smem).prepare(f)?;
        }
        // The pairs' blocks resident at once, the fewest of their kernels'.
        let shape = warp_shape(2, smem);
        let mut blocks = usize::MAX;
        for f in pair.all() {
            shape.prepare(f)?;
            blocks = blocks.min(shape.resident(f)?);
        }
        let pair_worlds = blocks * WARP_PER_BLOCK * gpu.info().sm_count.max(1) as usize;
        Ok(Warps {
            _module: module,
            warp,
            pair,
            pair_worlds,
        })
    }
}

/// Whether `nworld` worlds replay faster with a warp each than with a block each on `sms`
/// multiprocessors: past seven worlds a multiprocessor (the warp kernel holds 32). A lone
/// warp's world takes longer than a block's, which pays only once the worlds keep the
/// multiprocessors busy. Measured on the H200 (132 multiprocessors), a warp a world against the
/// few kernel, µs: at 1,024 worlds (7.8 a multiprocessor; session 29, benches/results/logs/
/// h200-2026-12-01-session29-calls.md, call 5, the trees and static rows placed by runs)
/// mechanism-90% 13.8–13.9 against 15.1–15.2, hammock 13.3–13.4 against 24.1, humanoid-50%
/// 14.6 against 13.5 (there the quotient loses to `block`'s 10.8 either way, so `auto` keeps
/// `block`). Before session 28's cuts the warp kernel lost at 1,024 on two shapes of three
/// (session 27: mechanism-90% 16.8–19.2 against 14.9–15.4) and was about even at 1,536
/// (session 28, call 1); from 2,048 on it won on every shape measured (8,192 worlds of
/// mechanism-90%, session 27: 47.8–47.9 against 70.2–72.1). Not measured below 1,024.
///
/// With reuse on, the same rule replaces the block kernels' reuse check: on step sequences at
/// 1,536 worlds mechanism-90% took 24.4–24.9 µs with a warp a world against 30.2–31.1 with
/// reuse (session 28, call 1); at 4,096, with 0% and 50% of the worlds at rest, session 28's
/// main took 28.5–30.2 with reuse on (its call 5) where session 27's took 58.2–69.2.
///
/// Worlds of more than [`WARP_ROWS_LARGE`] rows (`njmax`, the capacity's) need more of them a
/// multiprocessor, past twelve. Measured on the H200 (session 44, benches/results/logs/
/// h200-2026-12-02-session44-calls.md), flex_poncho (2,628 rows a world) with a warp a world and
/// a second for its guard against the few kernel, µs: 143.6 against 109.4 at 1,024 worlds (7.8 a
/// multiprocessor), 150.1 against 137.6 at 1,280, 154.9 against 150.4 at 1,536 (11.6), then
/// 159.8 against 195.7 at 1,792 (13.6) and 165.7 against 204.9 at 2,048.
fn warp_pays(nworld: usize, sms: usize, njmax: usize) -> bool {
    let per_sm = if njmax <= WARP_ROWS_LARGE { 7 } else { 12 };
    nworld > per_sm * sms
}

/// The launch shape of the warp kernels with `warps` warps a world (2: the pair kernels).
fn warp_shape(warps: u32, smem: u32) -> BlockShape {
    BlockShape {
        threads: 32 * warps * WARP_PER_BLOCK as u32,
        smem,
    }
}

/// Worlds of more rows than this (the capacity's) are large for the warp kernels: one warp
/// walks all of a world's dynamic rows, where a block spreads them. They take no second warp
/// ([`pairs_pay`]) and one warp only past twelve worlds a multiprocessor ([`warp_pays`]).
const WARP_ROWS_LARGE: usize = 1024;

/// Whether `nworld` worlds of at most `njmax` rows replay faster with two warps each (the pair
/// kernels: one maps the world, one compares its static rows) than with a block each, on `sms`
/// multiprocessors that hold `pair_worlds` such worlds at once: from more worlds than
/// multiprocessors while they are all resident, for worlds of at most [`WARP_ROWS_LARGE`] rows.
/// Measured on the H200 (session 43, benches/results/logs/h200-2026-12-02-session43-calls.md),
/// µs a step against the few kernel: at 256 worlds mechanism-90% 10.4 against 14.3, hammock 8.5
/// against 12.9, cloth-99% (768 rows a world) 10.4 against 15.7, flex_trampoline 11.3 against
/// 12.6; at 512 and 768 worlds more (cloth-99% at 768: 13.1 against 36.4). Against the aside
/// kernel, each world a multiprocessor to itself (64 worlds), flex_trampoline took 11.1 against
/// 9.5 (mechanism-90% 10.3 against 14.4); flex_poncho (2,628 rows a world, half of them
/// dynamic, which one warp scatters one by one) lost at every count (78.6 against 26.4 at 256).
/// On step sequences, whose contacts are new every step, the pairs' lead was about twice that:
/// 1.4–8.4 µs a step at 256–2,048 worlds against a block or one warp a world; forced past a wave
/// (4,096 worlds, two warps a world do not fit) they lost the replayed step by 1.55–4.45 µs on
/// three shapes of four (session 47, benches/results/logs/h200-2026-12-02-session47-calls.md).
fn pairs_pay(nworld: usize, sms: usize, pair_worlds: usize, njmax: usize) -> bool {
    nworld > sms && nworld <= pair_worlds && njmax <= WARP_ROWS_LARGE
}

/// Whether a solver for batches of up to `nworld` worlds on `sms` multiprocessors may launch
/// the warp kernels, so that it needs their program: they fit (`fits`), and the choice
/// ([`QuotientSolver::set_warp_worlds`]) is always, or the rule's, which picks them only for
/// more worlds than multiprocessors ([`warp_pays`], [`pairs_pay`]).
fn warps_reachable(fits: bool, choice: Option<bool>, nworld: usize, sms: usize) -> bool {
    fits && choice.unwrap_or(nworld > sms)
}

/// `ARCHIPELAGO_Q_WARP=0|1` (see [`QuotientSolver::set_warp_worlds`]).
fn warp_worlds_from_env() -> Option<bool> {
    choice_from_env("ARCHIPELAGO_Q_WARP")
}

/// `ARCHIPELAGO_Q_PAIR=0|1` (see [`QuotientSolver::set_guard_warps`]).
fn guard_warps_from_env() -> Option<bool> {
    choice_from_env("ARCHIPELAGO_Q_PAIR")
}

/// A world solved by the guard's path (flag 2, "masked": a component asleep, or static rows
/// present but not as one block) is one the plain warp kernels leave to its block, which solves
/// its pending worlds one after another once every warp is done: one such world makes its
/// block, and so the launch, wait for a serial solve. So after a step with masked worlds the
/// launch takes the warp kernels' masked twins (`kernels/quotient_warp.cu`), whose warps solve
/// a masked world themselves (the guard with the awake mask per node, every row walked as a
/// dynamic one, or, where the nodes it found asleep at its last masked step hold, mapped as a
/// replayed one without their rows), and which set aside the worlds the step before masked and
/// walked, where they are no more than [`ASIDE_SHARE`] of the batch, each with a block of its
/// own beside the warps: one masked world in its warp walks all its rows, the long pole of the
/// launch, where a block spreads them (and the block's first warp maps the world where its
/// hint holds: the walk and the block path both leave one, so a world that stays asleep as it
/// was is set aside at most once). With one warp a world or two (the pair kernels) the masked
/// twins are the rule at every share: this share, past which a step would take a block
/// a world instead, is 1 (never). Only without the aside blocks (`ARCHIPELAGO_Q_ASIDE=0`) do two
/// warps a world take blocks after any masked world (see `masked_share`).
///
/// Measured on the H200, µs a step at 4,096 worlds (session 57, benches/results/logs/
/// h200-2026-12-03-session57-calls.md, calls 2 and 3), tree 0's component asleep in a share of
/// the worlds, the twins' warps against a block a world (or, at 1/8 and 1/2 of mechanism-90%,
/// session 56's rule: their blocks after the warps): mechanism-90% 30.1 against 30.6 at 1/8,
/// 30.5 against 43.2 at 1/2, 34.8 against 43.8 at all; cloth-99% 65.0 against 128.8, 54.1
/// against 108.3 and 28.2 against 75.3 at 1/8, 1/2 and all; hammock 22.1 against 45.1, 17.6
/// against 44.5, 15.0 against 28.7; humanoid-50% 21.9 against 37.8, 21.8 against 41.1, 23.7
/// against 39.5; at 8,192 worlds (two waves) mechanism-90% 58.7 against 63.3 (session 56's rule)
/// at 1/8, 61.6 against 89.4 at 1/2, 68.4 against 85.7 at all. The aside blocks stay ahead up
/// to their share: with 1 and 256 of 4,096 worlds of mechanism-90% masked, 20.5 and 26.3 µs
/// with them against 29.6 and 30.4 with every masked world in its warp (session 56 measured
/// 28.2–29.8 with the blocks' serial solves after the warps, 38.1–40.3 with a block a world).
///
/// With two warps a world (below a wave) blocks took over past [`ASIDE_SHARE`] until the
/// masked twins' hint: a masked world walked by one warp was the launch's long pole there
/// (session 57, call 2: mechanism-90% at 1,024 worlds 24.0 and 25.3 µs a step with 128 and all
/// masked in their warps, against 19.2 and 19.6 by blocks). A world that stays asleep is now
/// mapped by its hint for about what a replayed world costs, and its walk comes once, at the
/// step it falls asleep. Measured (session 59, call 1, benches/results/logs/
/// h200-2026-12-03-session59-calls.md; the pair twins against blocks past a sixteenth, µs a
/// step): mechanism-90% at 1,024 worlds 15.55 against 18.95 with an eighth masked, 15.30
/// against 20.10 with half; at 2,048 with half 16.40 against 25.80; with half masked at 1,024,
/// cloth-99% 16.30 against 33.20 and hammock 11.50 against 25.40. With L2 flushed, even at an
/// eighth (20.40 against 20.10) and ahead by 1.15–14.05 µs at half.
pub const MASKED_FOR_BLOCKS: f64 = 1.0;

/// The share of a batch's worlds that the warp kernels set aside at most (see
/// [`MASKED_FOR_BLOCKS`]): a sixteenth, each with a block of its own at the launch's start.
pub const ASIDE_SHARE: f64 = 1.0 / ASIDE_PART as f64;
const ASIDE_PART: usize = 16;

/// Worlds the warp kernels set aside at most, of `nworld` ([`ASIDE_SHARE`]).
fn aside_cap(nworld: usize) -> usize {
    nworld.div_ceil(ASIDE_PART)
}

/// The share of masked worlds the rule allows the warp kernels, with two warps a world
/// (`pairs`) or one, where the aside blocks are on (`aside`), unless one is set (`forced`:
/// [`QuotientSolver::set_masked_for_blocks`], `ARCHIPELAGO_Q_MASKED`). Without the aside blocks
/// two warps a world wait for any masked world (at 1,024 worlds: 21.2 µs a step with one
/// masked, 17.9 by blocks; session 56, call 2).
fn masked_share(pairs: bool, aside: bool, forced: Option<f64>) -> f64 {
    forced.unwrap_or(if pairs && !aside {
        0.0
    } else {
        MASKED_FOR_BLOCKS
    })
}

/// `ARCHIPELAGO_Q_MASKED=<share>` (for measurements: one share for every kernel; clamped to
/// 0..=1, a value that is not a number ignored), else the rule's ([`MASKED_FOR_BLOCKS`]).
fn masked_for_blocks_from_env() -> Option<f64> {
    let v = std::env::var("ARCHIPELAGO_Q_MASKED").ok()?;
    masked_share_set(v.trim().parse::<f64>().ok())
}

/// A share of masked worlds as set ([`QuotientSolver::set_masked_for_blocks`],
/// `ARCHIPELAGO_Q_MASKED`): clamped to 0..=1, NaN read as none set.
fn masked_share_set(share: Option<f64>) -> Option<f64> {
    share.filter(|x| !x.is_nan()).map(|x| x.clamp(0.0, 1.0))
}

fn choice_from_env(name: &str) -> Option<bool> {
    match std::env::var(name).ok()?.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// The GPU quotient solver: host cache and tracker, device mirror, one fused kernel per step.
pub struct QuotientSolver {
    quotient: Quotient,
    ws: Workspace,
    bufs: QBufs,
    _module: Arc<CudaModule>,
    kernel: CudaFunction,
    /// The same kernel with its rare paths out of line, for a batch whose every world takes
    /// the node-level maps (see `few_launch`).
    few_kernel: CudaFunction,
    /// `few_kernel` for a batch of no more worlds than multiprocessors.
    aside_kernel: CudaFunction,
    /// The warp program, where a batch may take it: loaded at construction where the rule may
    /// pick it (more worlds than multiprocessors), else when
    /// [`set_warp_worlds`](Self::set_warp_worlds) asks for it.
    warps: Option<Warps>,
    /// For loading the warp program after construction.
    gpu: Gpu,
    /// Its kernels' dynamic shared memory: per world warp 3 * ntree ints, and the block path's
    /// scratch.
    warp_smem: u32,
    /// Whether the model, the device and the phase marks allow the warp kernels at all: at
    /// most 512 trees, their shared memory, the node-level tables, no marks requested.
    warp_fits: bool,
    /// [`QuotientSolver::set_warp_worlds`].
    warp_worlds: Option<bool>,
    guard_warps: Option<bool>,
    shape: BlockShape,
    /// The shape when every world takes the node-level maps (see `launch_shape`).
    node_shape: BlockShape,
    /// Registers a thread of the block kernels when they are the capped copies (regcap).
    register_cap: Option<u32>,
    /// What the slots of the batch's worlds allow (None: the slots changed since).
    slots: Option<BatchSlots>,
    /// The device's multiprocessors: a batch of no more worlds has one to each world.
    sm_count: usize,
    stream: Arc<CudaStream>,
    stale: PinnedVec<i32>,
    /// The worlds the last downloaded step masked (flag 2).
    masked: Vec<u32>,
    /// Of those, the ones not mapped by their hint (flag 64): the worlds the aside blocks
    /// may take at the next step.
    walked: Vec<u32>,
    /// Whether the masked twins may set worlds aside (not with `ARCHIPELAGO_Q_ASIDE=0`).
    aside_on: bool,
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
    /// The graphs of the last [`GRAPHS`] keys, the latest first (see [`GRAPHS`]).
    graphs: Vec<(GraphKey, StepGraph)>,
    /// Graphs captured so far (see [`QuotientSolver::captures`]).
    captures: u64,
    /// The world count of the last launch, while every world's row-level outputs are where it
    /// wrote them (see [`c_rowadr`](QBufs::c_rowadr)).
    placed_nworld: Option<usize>,
    /// Whether the reuse cache describes the outputs in place (see `before_launch`).
    cache_valid: bool,
    reuse: bool,
    node_maps: bool,
    cap: Capacity,
    last: StepCounts,
    /// The share of a step's worlds masked past which the next takes a block a world instead
    /// of a warp, where one is set ([`set_masked_for_blocks`](Self::set_masked_for_blocks),
    /// `ARCHIPELAGO_Q_MASKED`); else the rule's ([`MASKED_FOR_BLOCKS`]).
    masked_for_blocks: Option<f64>,
    node_tables: Option<NodeTables>,
    /// Phase marks (`ARCHIPELAGO_Q_TRACE`): the device's marks and their sums.
    trace: Option<(DevBuf, PhaseTrace)>,
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
        let info = gpu.info();
        let ctx = gpu.ctx();
        // Where a batch may take the warp kernels (all but their shared memory known here),
        // their program, most of the quotient's machine code, builds meanwhile: a cold start
        // waits for the longer of the two programs instead of both.
        let warp_worlds = warp_worlds_from_env();
        let sm_count = info.sm_count.max(1) as usize;
        let warps_may_fit =
            cap.ntree <= WARP_TREES_MAX && dof_blocks(model) && !phase_trace::requested();
        if warps_reachable(warps_may_fit, warp_worlds, cap.nworld, sm_count) {
            gpu.program_meanwhile(WARP_PROGRAM);
        }
        let mut module = gpu.program(&block_program())?;
        let mut kernel = function(&module, "quotient_kernel")?;
        let mut shape = BlockShape::choose(&kernel, &cap, info)?;
        let mut register_cap = None;
        // Many waves of worlds: the block kernels' copies with fewer registers, shaped anew
        // (regcap).
        if regcap::pays(&kernel, shape, cap.nworld, info)? {
            register_cap = Some(regcap::QUOTIENT);
            module = gpu.program(&capped_program())?;
            kernel = function(&module, "quotient_kernel")?;
            shape = BlockShape::choose(&kernel, &cap, info)?;
        }
        let few_kernel = function(&module, "quotient_few_kernel")?;
        let aside_kernel = function(&module, "quotient_aside_kernel")?;
        shape.prepare(&kernel)?;
        // The node-level maps write a tree's dofs in the tree's thread: the kernel's widest
        // loops are then over trees, hyperedges and support entries (flex_trampoline: 253
        // trees, 460 entries, 762 dofs). Only where each world has a multiprocessor to itself,
        // where the block's width is only its latency; more worlds keep the rule's occupancy
        // adjustments as measured.
        let node_work = cap.ntree.max(cap.njmax + cap.nedge).max(cap.nsupport);
        let node_shape = if cap.nworld <= info.sm_count as usize {
            BlockShape::choose_for(&kernel, &cap, info, node_work)?
        } else {
            shape
        };
        node_shape.prepare(&few_kernel)?;
        node_shape.prepare(&aside_kernel)?;
        // The warp kernel's scratch: its warps' tables, later the block path's (aliased: the
        // block takes its pending worlds once every warp is done); models of few trees only,
        // whose trees own consecutive dof blocks (the node-level maps), without phase marks.
        let warp_smem = (WARP_PER_BLOCK * 3 * 4 * cap.ntree).max(node_shape.smem as usize);
        let warp_fits = warps_may_fit && warp_smem + 8192 <= info.smem_optin;
        let warps = match warps_reachable(warp_fits, warp_worlds, cap.nworld, sm_count) {
            true => Some(Warps::load(gpu, warp_smem as u32)?),
            false => None,
        };
        let needs = Needs {
            fallback: shape.smem == 0,
            dense: false,
        };
        let ws = Workspace::new(ctx, cap, model, needs)?;
        let sized = Capacity {
            ntree: model.ntree(),
            nv: model.nv(),
            ..cap
        };
        let quotient = Quotient::new(&sized, policy);
        let (w, t) = (cap.nworld, model.ntree());
        let (ms, me) = (cap.njmax + cap.nedge, cap.nsupport);
        let buf = |name, bytes: usize| DevBuf::new(ctx, name, bytes);
        // The node-level maps' tables only where the model's dof layout allows them (the
        // kernel reads them only then).
        let nodes = usize::from(dof_blocks(model));
        let bufs = QBufs {
            row_id: buf("q_row_id", w * cap.njmax * 4)?,
            world_slot: buf("q_world_slot", w * 4)?,
            nnode: buf("q_nnode", w * 4)?,
            tree_node: buf("q_tree_node", w * t * 4)?,
            node_mintree: buf("q_node_mintree", w * t * 4)?,
            node_rows: buf("q_node_rows", w * t * 4)?,
            node_sum: buf("q_node_sum", w * t * 8)?,
            node_treeadr: buf("q_node_treeadr", w * (t + 1) * 4)?,
            node_trees: buf("q_node_trees", nodes * w * t * 4)?,
            node_dofpre: buf("q_node_dofpre", nodes * w * (t + 1) * 4)?,
            node_head: buf("q_node_head", nodes * w * NODE_HEAD * 16)?,
            tree_place: buf("q_tree_place", nodes * w * t * 8)?,
            node_efc: buf("q_node_efc", nodes * w * NODE_MAPS_MAX as usize * 16)?,
            row_node: buf("q_row_node", nodes * w * ms)?,
            runs: buf("q_runs", nodes * w * run_bytes(t, ms))?,
            nstatic: buf("q_nstatic", w * 4)?,
            nstatic_rows: buf("q_nstatic_rows", w * 4)?,
            stream_kind: buf("q_stream_kind", w * ms)?,
            stream_adr: buf("q_stream_adr", w * (ms + 1) * 4)?,
            stream_support: buf("q_stream_support", w * me * 4)?,
            stale: buf("q_stale", w * 4)?,
            c_count: buf("q_cache_count", w * 16)?,
            c_rowadr: buf("q_cache_rowadr", w * 4)?,
            c_type: buf("q_cache_type", w * cap.njmax)?,
            c_adr: buf("q_cache_adr", w * (ms + 1) * 4)?,
            c_support: buf("q_cache_support", w * me * 4)?,
            c_out: buf("q_cache_out", w * 3 * cap.njmax * 4)?,
            c_node: buf("q_cache_node", w * NODE_CACHE_WORDS * 8)?,
            lists: buf("q_lists", lists_len(w) * 4)?,
            asleep: buf("q_asleep", w * 4)?,
        };
        // Nothing cached yet (rows = -1, no contraction).
        bufs.c_count.fill(0xff, w * 16, gpu.stream())?;
        bufs.c_node
            .fill(0, w * NODE_CACHE_WORDS * 8, gpu.stream())?;
        bufs.asleep.fill(0, w * 4, gpu.stream())?;
        let event = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .map_err(cuda("cuEventCreate"))
        };
        Ok(QuotientSolver {
            quotient,
            ws,
            bufs,
            _module: module,
            register_cap,
            kernel,
            few_kernel,
            aside_kernel,
            warps,
            gpu: gpu.clone(),
            warp_smem: warp_smem as u32,
            warp_fits,
            warp_worlds,
            guard_warps: guard_warps_from_env(),
            shape,
            node_shape,
            slots: None,
            sm_count,
            stream: gpu.stream().clone(),
            stale: PinnedVec::new(ctx, w),
            masked: Vec::with_capacity(w),
            walked: Vec::with_capacity(w),
            aside_on: aside_from_env(),
            lists_on_device: Vec::with_capacity(lists_len(w)),
            lists_next: Vec::with_capacity(lists_len(w)),
            rest: Vec::with_capacity(w),
            lists_for: None,
            lists_stale: false,
            masked_before: Vec::with_capacity(w),
            walked_before: Vec::with_capacity(w),
            twins_always: choice_from_env("ARCHIPELAGO_Q_TWINS") == Some(true),
            aside_on_device: Vec::with_capacity(aside_cap(w)),
            listed_on_device: Vec::with_capacity(w),
            last_aside: false,
            last_listed: false,
            side: ctx.new_stream().map_err(cuda("cuStreamCreate"))?,
            fork: event()?,
            join: event()?,
            contracted: Vec::with_capacity(w),
            slots_on_device: Vec::with_capacity(w),
            graphs: Vec::with_capacity(GRAPHS),
            captures: 0,
            placed_nworld: None,
            cache_valid: true,
            reuse: true,
            node_maps: true,
            cap,
            last: StepCounts::default(),
            masked_for_blocks: masked_for_blocks_from_env(),
            node_tables: (nodes == 1).then(|| NodeTables::new(model, w, ms)),
            trace: match phase_trace::requested() {
                true => Some((
                    buf("q_trace", w * phase_trace::MARKS * 8)?,
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
    /// at most 32 nodes, the node-level maps are on, the model has at most 512 trees and no
    /// phase marks are requested (they are the block kernels'). A world that does not replay
    /// (its static rows changed, a component asleep, no quotient yet) is then solved by its
    /// block of four warps as in the other kernels; after a step with masked worlds the
    /// kernels' masked twins solve a masked world in its warp
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
        let (fits, nworld) = (self.warp_fits, self.cap.nworld);
        if self.warps.is_none() && warps_reachable(fits, choice, nworld, self.sm_count) {
            self.warps = Some(Warps::load(&self.gpu, self.warp_smem)?);
        }
        self.warp_worlds = choice;
        Ok(())
    }

    /// Whether this solver has loaded the warp program (see
    /// [`set_warp_worlds`](Self::set_warp_worlds)): only where a batch may take it.
    pub fn warp_kernels_loaded(&self) -> bool {
        self.warps.is_some()
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
    /// block's last warp finds one after its stores, so the outputs and flags are the same.
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
    /// [`regcap`]); `None` for the quotient program's own.
    pub fn register_cap(&self) -> Option<u32> {
        self.register_cap
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

    /// The host half and the copies: records `events`, rebuilds the quotients they invalidate,
    /// mirrors new slots and the world → slot map, and copies `input` to the device.
    pub fn upload(&mut self, input: &Input<'_>, events: &Events) -> Result<()> {
        // One capacity check (O(nworld)) for the host half and the workspace's upload.
        let input = &input.fitted(self.quotient.capacity())?;
        self.quotient.prepare(input, events)?;
        self.upload_tables()?;
        self.upload_batch(input)?;
        let nworld = self.ws.nworld();
        if self.slots.is_none_or(|b| b.nworld != nworld) {
            self.slots = Some(BatchSlots::of(&self.quotient.cache().tables(), nworld));
        }
        Ok(())
    }

    /// Runs the kernel on the uploaded batch by replaying its graph (captured on first use, and
    /// again as [`captures`](Self::captures) says).
    pub fn replay(&mut self) -> Result<()> {
        let c = self.quotient.classifier();
        let (one, twins) = (self.one(), self.twins_blocks());
        let key = [
            c.static_eqs().start,
            c.static_eqs().end,
            c.eq_static() as i32,
            c.friction_static() as i32,
            c.rowless_is_static() as i32,
            self.reuse_active() as i32,
            self.reuse as i32,
            self.node_maps as i32,
            self.launch_shape().threads as i32,
            self.kernel_choice() as i32,
            twins[0] as i32,
            twins[1] as i32,
            twins[2] as i32,
            one[0],
            one[1],
            one[2],
            one[3],
        ];
        to_front(&mut self.graphs, key, GRAPHS);
        let stream = self.stream.clone();
        let nworld = self.ws.nworld();
        if nworld == 0 {
            return Ok(());
        }
        self.before_launch()?;
        let mut graph = std::mem::take(&mut self.graphs[0].1);
        let mut captured = false;
        let r = graph.replay(&stream, nworld, |s| {
            captured = true;
            self.launch(s)
        });
        self.graphs[0].1 = graph;
        self.captures += captured as u64;
        if r.is_err() {
            self.graphs.remove(0);
            self.placed_nworld = None;
        }
        r
    }

    /// How many times [`replay`](Self::replay) has captured a step's graph: once at the first
    /// step, then when the world count or a captured scalar (the classification, reuse, the
    /// kernel, the masked twins' blocks) takes a value none of the last eight graphs has.
    pub fn captures(&self) -> u64 {
        self.captures
    }

    /// Runs the kernel on the uploaded batch with a direct launch (no graph).
    pub fn launch_direct(&mut self) -> Result<()> {
        let stream = self.stream.clone();
        self.before_launch()?;
        let r = self.launch(&stream);
        if r.is_err() {
            self.placed_nworld = None;
        }
        r
    }

    /// Before a launch, what of the reuse caches still holds.
    /// - The places of the worlds' row-level outputs hold only if the last launch was over as
    ///   many worlds: a world past a smaller launch wrote nothing, while the worlds before it
    ///   may have written over its rows.
    /// - The cached steps hold only while every launch since they were cleared checked and
    ///   kept them. A launch without the check (reuse off, or the warp kernel) solves worlds
    ///   without recording their hyperedges, so the next launch with the check starts from an
    ///   empty cache.
    fn before_launch(&mut self) -> Result<()> {
        let nworld = self.ws.nworld();
        let [nb, lb, rb] = self.twins_blocks();
        self.last_aside = nb > 0;
        self.last_listed = lb > 0;
        let made_for = [nworld, nb, lb, rb];
        if nb + lb > 0 && (self.lists_stale || self.lists_for != Some(made_for)) {
            self.lists_stale = false;
            self.lists_for = Some(made_for);
            // The twins take the last step's masked worlds (every world with
            // ARCHIPELAGO_Q_TWINS=1): those set aside (ascending, among them) one a block, the
            // others listed; the plain kernels take the rest.
            let set = &self.walked[..if nb > 0 { self.walked_here() } else { 0 }];
            let masked = &self.masked[..self.masked_here()];
            let (listed, rest) = (&mut self.listed_on_device, &mut self.rest);
            let twins = if self.twins_always {
                None
            } else {
                Some(masked)
            };
            split_worlds(nworld as u32, twins, set, listed, rest);
            let next = &mut self.lists_next;
            lists_array((rb, rest), (nb, set), (lb, listed), next);
            if *next != self.lists_on_device {
                self.bufs.lists.upload(next, &self.stream)?;
                std::mem::swap(&mut self.lists_on_device, next);
            }
            self.aside_on_device.clear();
            self.aside_on_device.extend_from_slice(set);
        }
        if self.placed_nworld != Some(nworld) {
            let b = &self.bufs.c_rowadr;
            b.fill(0xff, b.bytes(), &self.stream)?;
            self.placed_nworld = Some(nworld);
        }
        if !self.reuse_active() {
            self.cache_valid = false;
        } else if !self.cache_valid {
            let b = &self.bufs.c_count;
            b.fill(0xff, b.bytes(), &self.stream)?;
            self.cache_valid = true;
        }
        Ok(())
    }

    /// Waits for the device, copies every output into `out`, and rebuilds on the host the
    /// quotients of the worlds the device had to solve directly. As for the full rebuilds'
    /// [`Solver::download`](super::Solver::download), `out` is best a
    /// [`PinnedIslands`](super::PinnedIslands): into pageable memory each output's copy goes
    /// through the driver's staging.
    pub fn download(&mut self, input: &Input<'_>, out: &mut Islands) -> Result<Stats> {
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
        // The outputs and the per-world flags, then one wait.
        self.ws.enqueue_download(input, out, &self.stream)?;
        self.bufs
            .stale
            .download(&mut self.stale[..nworld], &self.stream)?;
        if let Some((buf, t)) = &mut self.trace {
            buf.download(&mut t.marks[..nworld * phase_trace::MARKS], &self.stream)?;
        }
        self.stream
            .synchronize()
            .map_err(cuda("cuStreamSynchronize"))?;
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

    /// Mirrors the slots contracted since the last step and the world → slot map.
    fn upload_tables(&mut self) -> Result<()> {
        let stream = &self.stream;
        let mut contracted = std::mem::take(&mut self.contracted);
        contracted.clear();
        self.quotient.drain_contracted(|s| contracted.push(s));
        let t = self.quotient.cache().tables();
        let b = &self.bufs;
        let (n, ms, me) = (t.ntree, t.max_static, t.max_entries);
        for &s in &contracted {
            let s = s as usize;
            b.tree_node
                .upload_at(s * n, &t.tree_node[s * n..(s + 1) * n], stream)?;
            b.node_mintree
                .upload_at(s * n, &t.node_mintree[s * n..(s + 1) * n], stream)?;
            b.node_rows
                .upload_at(s * n, &t.node_rows[s * n..(s + 1) * n], stream)?;
            b.node_sum
                .upload_at(s * n, &t.node_sum[s * n..(s + 1) * n], stream)?;
            let nnode = t.nnode[s] as usize;
            b.node_treeadr.upload_at(
                s * (n + 1),
                &t.node_treeadr[s * (n + 1)..s * (n + 1) + nnode + 1],
                stream,
            )?;
            b.nnode.upload_at(s, &t.nnode[s..=s], stream)?;
            let few = t.nnode[s] <= NODE_MAPS_MAX;
            if let Some(nt) = self.node_tables.as_mut().filter(|_| few) {
                let trees = &t.node_trees[s * n..(s + 1) * n];
                nt.fill(s, &t);
                let h = NODE_HEAD * 4;
                b.node_trees.upload_at(s * n, trees, stream)?;
                let pre = &nt.pre[s * (n + 1)..(s + 1) * (n + 1)];
                b.node_dofpre.upload_at(s * (n + 1), pre, stream)?;
                b.node_head
                    .upload_at(s * h, &nt.head[s * h..(s + 1) * h], stream)?;
                let place = &nt.place[s * n * 2..(s + 1) * n * 2];
                b.tree_place.upload_at(s * n * 2, place, stream)?;
                let m = NODE_MAPS_MAX as usize * 4;
                b.node_efc
                    .upload_at(s * m, &nt.efc[s * m..(s + 1) * m], stream)?;
                let rows = t.nstatic_rows[s] as usize;
                b.row_node
                    .upload_at(s * ms, &nt.row_node[s * ms..s * ms + rows], stream)?;
                let rb = nt.run_bytes;
                b.runs
                    .upload_at(s * rb, &nt.runs[s * rb..(s + 1) * rb], stream)?;
            }
            b.nstatic.upload_at(s, &t.nstatic[s..=s], stream)?;
            b.nstatic_rows
                .upload_at(s, &t.nstatic_rows[s..=s], stream)?;
            let k = t.nstatic[s] as usize;
            b.stream_kind
                .upload_at(s * ms, &t.stream_kind[s * ms..s * ms + k], stream)?;
            let adr = &t.stream_adr[s * (ms + 1)..s * (ms + 1) + k + 1];
            b.stream_adr.upload_at(s * (ms + 1), adr, stream)?;
            let entries = adr[k] as usize;
            let support = &t.stream_support[s * me..s * me + entries];
            b.stream_support.upload_at(s * me, support, stream)?;
        }
        let slots_changed = self.slots_on_device != t.world_slot;
        if slots_changed {
            b.world_slot.upload_at(0, t.world_slot, stream)?;
            self.slots_on_device.clear();
            self.slots_on_device.extend_from_slice(t.world_slot);
        }
        if slots_changed || !contracted.is_empty() {
            self.slots = None;
        }
        self.contracted = contracted;
        Ok(())
    }

    /// The batch (the workspace's upload synchronizes, so every copy before it is done too),
    /// with the row ids only while the kernel classifies equality rows by id: no other output
    /// or check reads them, and at 4 bytes a row they would be the step's largest extra copy.
    fn upload_batch(&mut self, input: &Input<'_>) -> Result<()> {
        if self.quotient.classifier().eqs_by_id() {
            let ids = &input.batch().row_id;
            self.bufs.row_id.upload_at(0, ids, &self.stream)?;
        }
        self.ws.upload(input, &self.stream)
    }

    /// Whether every world takes the node-level maps (a world of more nodes, or one without
    /// a slot, takes the tree-level maps, which spread dofs over threads): then the launch
    /// takes the node-level shape and `quotient_few_kernel`.
    fn few_launch(&self) -> bool {
        self.node_maps() && self.slots.is_some_and(|b| b.few_nodes)
    }

    /// The kernel for the uploaded batch: the warp kernel where
    /// [`set_warp_worlds`](Self::set_warp_worlds) allows it, else for a
    /// [`few_launch`](Self::few_launch) the aside kernel where each world has a multiprocessor
    /// to itself and the few kernel elsewhere; else the general one.
    fn kernel_choice(&self) -> Kernel {
        let nworld = self.ws.nworld();
        if !self.few_launch() {
            return Kernel::General;
        }
        // Loaded wherever the rule or the setter may pick them (warps_reachable).
        if let Some((pays, pairs)) = self.warp_terms() {
            if self
                .warp_worlds
                .unwrap_or(pays && !self.masked_heavy(pairs))
            {
                return match pairs {
                    true => Kernel::Pair,
                    false => Kernel::Warp,
                };
            }
        }
        if nworld > self.sm_count {
            Kernel::Few
        } else {
            Kernel::Aside
        }
    }

    /// The warp kernels' terms for the uploaded batch, where their program is loaded: whether
    /// the rule finds that they pay, and whether with two warps a world (the pair kernels).
    fn warp_terms(&self) -> Option<(bool, bool)> {
        let warps = self.warps.as_ref()?;
        let nworld = self.ws.nworld();
        let pays = warp_pays(nworld, self.sm_count, self.cap.njmax)
            || pairs_pay(nworld, self.sm_count, warps.pair_worlds, self.cap.njmax);
        Some((
            pays,
            self.guard_warps.unwrap_or(nworld <= warps.pair_worlds),
        ))
    }

    /// Whether the last downloaded step masked more of its worlds than the rule allows the warp
    /// kernels ([`MASKED_FOR_BLOCKS`]).
    fn masked_heavy(&self, pairs: bool) -> bool {
        let c = self.last;
        let all = c.replayed + c.masked + c.direct + c.reused;
        let share = masked_share(pairs, self.aside_on, self.masked_for_blocks);
        all > 0 && c.masked as f64 > share * all as f64
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
                masked_share(pairs, self.aside_on, self.masked_for_blocks)
            }
            _ => 1.0,
        }
    }

    /// The aside blocks of a launch that takes the masked twins (its caller,
    /// [`twins_blocks`](Self::twins_blocks), checks [`masked_twin`](Self::masked_twin)): where
    /// the last step masked some worlds but no more than [`aside_cap`] not by their hint
    /// ([`walked_worlds`](Self::walked_worlds)), that many blocks (each sets aside one of those
    /// worlds, or none); else 0. A world mapped by its
    /// hint is no long pole: it stays with its warp. A world set aside is mapped by its block's
    /// first warp where its hint holds (the walk and the block path both leave one), so it goes
    /// back to its own warp at the next step.
    fn aside_blocks(&self) -> usize {
        let cap = aside_cap(self.ws.nworld());
        let walked = self.walked_here();
        let on = self.aside_on && walked > 0 && walked <= cap;
        if on { cap } else { 0 }
    }

    /// Whether the next launch takes the warp kernels' masked twins (`…_masked_kernel`), which
    /// solve masked worlds in their warps and set aside worlds for their aside blocks: where
    /// it takes the warp kernels and the last step masked some of the uploaded batch's worlds
    /// (or at every such launch with `ARCHIPELAGO_Q_TWINS=1`).
    fn masked_twin(&self) -> bool {
        (self.twins_always || self.masked_here() > 0) && self.kernel_choice().by_warps()
    }

    /// The blocks of the next launch's lists ([`list_blocks`]), all 0 where it takes no masked
    /// twins: the twins' aside blocks, one a world set aside; their blocks for the listed worlds
    /// (the last step's masked ones, every world with `ARCHIPELAGO_Q_TWINS=1`, less those set
    /// aside); the plain kernels' blocks beside them (`…_rest_kernel`) for every other world.
    ///
    /// With two warps a world too the twins take only the listed worlds: taking every world
    /// there instead (branch `exp/pairs-twins-everywhere`, session 61, device busy, 1,024 and
    /// 2,048 worlds) was 0.5–0.8 µs a step faster on mechanism-90% and 0.65–0.9 on hammock with
    /// half masked, but 1.2 slower on hammock with a sixteenth and 3.2–4.2 on cloth-99% (a
    /// cause that fits, unmeasured: the twins compare a world's static rows, 760 there, before
    /// mapping it, while the guard's warp idles; the plain pair kernels do both at once).
    fn twins_blocks(&self) -> [usize; 3] {
        if !self.masked_twin() {
            return [0; 3];
        }
        let nworld = self.ws.nworld();
        let aside = self.aside_blocks();
        let set = if aside > 0 { self.walked_here() } else { 0 };
        let twins = match self.twins_always {
            true => nworld,
            false => self.masked_here(),
        };
        [
            aside,
            list_blocks(twins - set, nworld),
            list_blocks(nworld - twins, nworld),
        ]
    }

    /// The worlds the last launch listed for the masked twins' warps (the worlds the step before
    /// masked, less those set aside), while the plain kernels took every other world beside
    /// them (`…_rest_kernel`; the twins on a stream forked in the step's graph): a replayed world
    /// runs the plain kernels' code, and only a masked world pays for the twins'. A world that
    /// falls asleep at a step is left by its plain warp to its block, as at a step after none
    /// masked, and listed at the next. Measured on the H200: see `kernels/quotient_warp.cu`.
    pub fn listed_worlds(&self) -> &[u32] {
        match self.last_listed {
            true => &self.listed_on_device,
            false => &[],
        }
    }

    /// The worlds the last downloaded step solved with a node masked (flag 2: a component
    /// asleep), ascending.
    pub fn masked_worlds(&self) -> &[u32] {
        &self.masked
    }

    /// Of [`masked_worlds`](Self::masked_worlds), those not mapped by their hint
    /// ([`StepCounts::masked_by_hint`]): walked row by row by their warp, or solved by a block.
    pub fn walked_worlds(&self) -> &[u32] {
        &self.walked
    }

    /// The worlds the last launch set aside, each with a block of its own beside the warp
    /// kernels' warps (its first warp maps the world where its hint holds, else the block
    /// solves it): those the step before masked and walked
    /// ([`walked_worlds`](Self::walked_worlds)), where they were no more than [`ASIDE_SHARE`] of
    /// the batch (see [`MASKED_FOR_BLOCKS`]); none where the launch took the block kernels.
    pub fn aside_worlds(&self) -> &[u32] {
        match self.last_aside {
            true => &self.aside_on_device,
            false => &[],
        }
    }

    /// How many of the last step's masked worlds the uploaded batch has (they ascend).
    fn masked_here(&self) -> usize {
        let nworld = self.ws.nworld();
        self.masked.partition_point(|&w| (w as usize) < nworld)
    }

    /// How many of the last step's masked worlds not mapped by their hint the uploaded batch has.
    fn walked_here(&self) -> usize {
        let nworld = self.ws.nworld();
        self.walked.partition_point(|&w| (w as usize) < nworld)
    }

    /// The launch shape: the node-level one for a [`few_launch`](Self::few_launch), four warps
    /// for the warp kernel, eight for the pair kernels.
    fn launch_shape(&self) -> BlockShape {
        match self.kernel_choice() {
            Kernel::Warp => warp_shape(1, self.warp_smem),
            Kernel::Pair => warp_shape(2, self.warp_smem),
            Kernel::Few | Kernel::Aside => self.node_shape,
            Kernel::General => self.shape,
        }
    }

    /// The batch's one slot and its counts as the warp kernel takes them: slot -1 without one.
    fn one(&self) -> [i32; 4] {
        match self.slots.and_then(|b| b.one) {
            Some(o) => [o.slot, o.nnode, o.static_rows, o.static_hyper].map(|x| x as i32),
            None => [-1, 0, 0, 0],
        }
    }

    /// The one slot every world of the last prepared batch has, if they all have one: the warp
    /// kernel then takes it and its counts from its arguments instead of loading them.
    pub fn batch_slot(&self) -> Option<u32> {
        self.slots.and_then(|b| b.one).map(|o| o.slot)
    }

    /// Enqueues the kernel on `stream` (also inside a graph capture): every argument is a
    /// buffer of this solver or a scalar of the classifier, fixed until the graph is recaptured.
    fn launch(&self, stream: &CudaStream) -> Result<()> {
        let nworld = self.ws.nworld() as u32;
        if nworld == 0 {
            return Ok(());
        }
        let b = &self.bufs;
        let mut args: Args = self.ws.args();
        let reuse = self.reuse_active();
        if reuse {
            // The maps copy each world's row-level outputs into the cache as they write them.
            args.row_mirror = b.c_out.ptr();
            args.mirror_rows = self.cap.njmax as i32;
        }
        let c = self.quotient.classifier();
        let t = self.quotient.cache().tables();
        let one = self.one();
        let q = QArgs {
            row_id: b.row_id.ptr(),
            world_slot: b.world_slot.ptr(),
            nnode: b.nnode.ptr(),
            tree_node: b.tree_node.ptr(),
            node_mintree: b.node_mintree.ptr(),
            node_rows: b.node_rows.ptr(),
            node_sum: b.node_sum.ptr(),
            node_treeadr: b.node_treeadr.ptr(),
            node_trees: b.node_trees.ptr(),
            node_dofpre: b.node_dofpre.ptr(),
            node_head: b.node_head.ptr(),
            tree_place: b.tree_place.ptr(),
            node_efc: b.node_efc.ptr(),
            row_node: b.row_node.ptr(),
            runs: b.runs.ptr(),
            nstatic: b.nstatic.ptr(),
            nstatic_rows: b.nstatic_rows.ptr(),
            stream_kind: b.stream_kind.ptr(),
            stream_adr: b.stream_adr.ptr(),
            stream_support: b.stream_support.ptr(),
            stale: b.stale.ptr(),
            c_count: b.c_count.ptr(),
            c_rowadr: b.c_rowadr.ptr(),
            c_type: b.c_type.ptr(),
            c_adr: b.c_adr.ptr(),
            c_support: b.c_support.ptr(),
            c_node: b.c_node.ptr(),
            trace: self.trace.as_ref().map_or(0, |(buf, _)| buf.ptr()),
            lists: b.lists.ptr(),
            eq_ids: c.eqs_by_id() as i32,
            eq_lo: c.static_eqs().start,
            eq_hi: c.static_eqs().end,
            eq_static: c.eq_static() as i32,
            friction_static: c.friction_static() as i32,
            flex_static: c.rowless_is_static() as i32,
            max_static: t.max_static as i32,
            max_entries: t.max_entries as i32,
            reuse: reuse as i32,
            reuse_nodes: self.reuse as i32,
            cap_rows: self.cap.njmax as i32,
            cap_hyper: (self.cap.njmax + self.cap.nedge) as i32,
            cap_entries: self.cap.nsupport as i32,
            node_maps: self.node_maps() as i32,
            run_bytes: run_bytes(t.ntree, t.max_static) as i32,
            one_slot: one[0],
            one_nnode: one[1],
            one_k: one[2],
            one_nstatic: one[3],
            aside_blocks: self.twins_blocks()[0] as i32,
            asleep: b.asleep.ptr(),
        };
        let mut params = [
            &args as *const Args as *mut std::ffi::c_void,
            &q as *const QArgs as *mut std::ffi::c_void,
        ];
        let s = self.launch_shape();
        // Idle warps cost a world nothing where it has its multiprocessor to itself (the
        // aside kernel gives them its rows); elsewhere they would leave the rows to one warp of
        // a world competing with others.
        let (kernel, grid) = match (self.kernel_choice(), &self.warps) {
            (k @ (Kernel::Warp | Kernel::Pair), Some(warps)) => {
                let family = if k == Kernel::Pair {
                    &warps.pair
                } else {
                    &warps.warp
                };
                let one = self.batch_slot().is_some();
                if self.masked_twin() {
                    return self.launch_twins(family, stream, s, (&args, q));
                }
                let blocks = nworld.div_ceil(WARP_PER_BLOCK as u32);
                (family.pick(self.reuse, one, Part::Plain), blocks)
            }
            (Kernel::Warp | Kernel::Pair, None) => {
                unreachable!("kernel_choice picks the warp kernels only once they are loaded")
            }
            (Kernel::Aside, _) => (&self.aside_kernel, nworld),
            (Kernel::Few, _) => (&self.few_kernel, nworld),
            (Kernel::General, _) => (&self.kernel, nworld),
        };
        let grid = (grid, 1, 1);
        // SAFETY: each kernel takes exactly (Args, QArgs) by value; every pointer is a buffer
        // of this solver, which outlives the launch and every graph captured from it.
        unsafe {
            let block = (s.threads, s.smem);
            super::maps::launch_with(kernel, grid, block, stream, &mut params, false)
        }
    }

    /// The launch after a step with masked worlds: the masked twins over their worlds (the aside
    /// blocks', then the listed ones) and, beside them on a stream forked from `stream` and
    /// joined back, the plain kernels over the rest of the worlds (`…_rest_kernel`), each launch
    /// with its own list ([`lists_array`]).
    fn launch_twins(
        &self,
        family: &WarpKernels,
        stream: &CudaStream,
        s: BlockShape,
        (args, mut q): (&Args, QArgs),
    ) -> Result<()> {
        let one = self.batch_slot().is_some();
        let block = (s.threads, s.smem);
        let [nb, lb, rb] = self.twins_blocks();
        let launch = |part, blocks: usize, q: &QArgs, on: &CudaStream| {
            let mut params = [
                args as *const Args as *mut std::ffi::c_void,
                q as *const QArgs as *mut std::ffi::c_void,
            ];
            let f = family.pick(self.reuse, one, part);
            // SAFETY: as in `launch`; the two kernels write the outputs of disjoint worlds.
            unsafe {
                super::maps::launch_with(f, (blocks as u32, 1, 1), block, on, &mut params, false)
            }
        };
        let twins = nb + lb;
        let rest_q = q;
        q.lists += (rb * WARP_PER_BLOCK * 4) as u64;
        if rb == 0 {
            return launch(Part::Masked, twins, &q, stream);
        }
        self.fork.record(stream).map_err(cuda("cuEventRecord"))?;
        self.side
            .wait(&self.fork)
            .map_err(cuda("cuStreamWaitEvent"))?;
        launch(Part::Masked, twins, &q, &self.side)?;
        launch(Part::Rest, rb, &rest_q, stream)?;
        self.join
            .record(&self.side)
            .map_err(cuda("cuEventRecord"))?;
        stream.wait(&self.join).map_err(cuda("cuStreamWaitEvent"))
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

#[cfg(test)]
mod tests {
    use super::{
        ASIDE_SHARE, Part, WarpKernels, aside_cap, list_blocks, lists_array, masked_share,
        masked_share_set, pairs_pay, split_worlds, to_front, warp_pays, warps_reachable,
    };

    #[test]
    fn graphs_are_kept_by_key_the_least_recently_replayed_dropped_first() {
        let mut kept: Vec<(u8, Vec<u8>)> = Vec::new();
        for key in [1, 2, 3, 1, 2, 3] {
            to_front(&mut kept, key, 3);
            kept[0].1.push(key);
        }
        // Three keys in turn, three kept: each made once, and replayed again.
        assert_eq!(kept, [(3, vec![3, 3]), (2, vec![2, 2]), (1, vec![1, 1])]);
        to_front(&mut kept, 2, 3);
        to_front(&mut kept, 4, 3);
        assert_eq!(kept, [(4, vec![]), (2, vec![2, 2]), (3, vec![3, 3])]);
    }

    #[test]
    fn each_warp_kernel_is_picked_by_the_entry_point_that_names_its_terms() {
        let mut seen = Vec::new();
        for reuse in [false, true] {
            for one in [false, true] {
                for part in [Part::Plain, Part::Rest, Part::Masked] {
                    let i = WarpKernels::index(reuse, one, part);
                    let suffix = WarpKernels::SUFFIXES[i];
                    assert_eq!(suffix.contains("_reuse"), reuse, "{suffix}");
                    assert_eq!(suffix.contains("_one"), one, "{suffix}");
                    assert_eq!(suffix.contains("_rest"), part == Part::Rest, "{suffix}");
                    assert_eq!(suffix.contains("_masked"), part == Part::Masked, "{suffix}");
                    seen.push(i);
                }
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..WarpKernels::SUFFIXES.len()).collect::<Vec<_>>());
    }

    #[test]
    fn the_lists_hold_the_rest_then_the_aside_blocks_then_the_listed_by_block() {
        const X: u32 = u32::MAX;
        let mut a = vec![7; 3];
        // Worlds 0, 3 for the plain kernels (one block), 1 and 4 set aside (three aside
        // blocks), 2 and 5 listed for the twins' warps (one block).
        lists_array((1, &[0, 3]), (3, &[1, 4]), (1, &[2, 5]), &mut a);
        assert_eq!(a, [0, 3, X, X, 1, 4, X, 2, 5, X, X]);
        // Nothing set aside; five listed in two blocks; no rest.
        lists_array((0, &[]), (0, &[]), (2, &[0, 1, 2, 3, 5]), &mut a);
        assert_eq!(a, [0, 1, 2, 3, 5, X, X, X]);
        // Set aside only, beside the rest.
        lists_array((1, &[0]), (1, &[1]), (0, &[]), &mut a);
        assert_eq!(a, [0, X, X, X, 1]);
    }

    #[test]
    fn the_twins_take_the_masked_worlds_less_those_set_aside_and_the_plain_kernels_the_rest() {
        let (mut listed, mut rest) = (vec![9], vec![9]);
        // Worlds 1, 4 and 5 masked at the step before, 4 set aside.
        split_worlds(7, Some(&[1, 4, 5]), &[4], &mut listed, &mut rest);
        assert_eq!((&listed[..], &rest[..]), (&[1, 5][..], &[0, 2, 3, 6][..]));
        // Every world to the twins (ARCHIPELAGO_Q_TWINS=1), 0 and 2 set aside.
        split_worlds(4, None, &[0, 2], &mut listed, &mut rest);
        assert_eq!((&listed[..], &rest[..]), (&[1, 3][..], &[][..]));
        // Every masked world set aside: nothing listed.
        split_worlds(3, Some(&[2]), &[2], &mut listed, &mut rest);
        assert_eq!((&listed[..], &rest[..]), (&[][..], &[0, 1][..]));
    }

    #[test]
    fn a_list_takes_a_power_of_two_of_blocks_or_sixteenths_of_the_batch_s() {
        // 4,096 worlds: 1,024 blocks, in sixteenths of 64.
        let b = |n| list_blocks(n, 4096);
        assert_eq!([b(0), b(1), b(5), b(9), b(256)], [0, 1, 2, 4, 64]);
        assert_eq!(
            [b(2048), b(2049), b(3840), b(4095), b(4096)],
            [512, 576, 960, 1024, 1024]
        );
        // Never past a block for every four worlds of the batch.
        assert_eq!(list_blocks(1000, 1001), 251);
        assert_eq!(list_blocks(3, 3), 1);
    }

    #[test]
    fn the_masked_twins_take_every_share_unless_a_share_is_set() {
        // The masked worlds of a step that the next step's warp kernels allow, of 4,096.
        let allowed = |pairs, aside, forced| (masked_share(pairs, aside, forced) * 4096.0) as usize;
        // One warp a world or two: the masked twins' warps take every masked world.
        assert_eq!(
            (allowed(true, true, None), allowed(false, true, None)),
            (4096, 4096)
        );
        assert_eq!((aside_cap(4096), aside_cap(1061)), (256, 67));
        // Without the aside blocks (ARCHIPELAGO_Q_ASIDE=0) pairs take blocks after any.
        assert_eq!(
            (allowed(true, false, None), allowed(false, false, None)),
            (0, 4096)
        );
        // A share set (set_masked_for_blocks, ARCHIPELAGO_Q_MASKED): one for both, 0 (blocks
        // after any) to 1 (never).
        assert_eq!(
            (
                allowed(true, false, Some(1.0)),
                allowed(false, true, Some(0.0)),
                allowed(true, true, Some(ASIDE_SHARE))
            ),
            (4096, 0, 256)
        );
        // A share set is clamped to 0..=1; NaN sets none.
        let set = |x| masked_share_set(Some(x));
        assert_eq!(
            (set(-0.5), set(0.25), set(7.0)),
            (Some(0.0), Some(0.25), Some(1.0))
        );
        assert_eq!((set(f64::NAN), masked_share_set(None)), (None, None));
    }

    #[test]
    fn the_rule_takes_the_warp_kernels_only_where_a_solver_loads_them() {
        // Up to one world a multiprocessor neither warp rule pays, whatever the pairs' room or
        // the rows, so a solver for no more worlds needs no warp program unless forced.
        for sms in [1, 78, 132] {
            for nworld in 1..=sms {
                for njmax in [1, 1024, 1025, 4096] {
                    assert!(!warp_pays(nworld, sms, njmax));
                    assert!(!pairs_pay(nworld, sms, usize::MAX, njmax));
                }
                assert!(!warps_reachable(true, None, nworld, sms));
            }
            assert!(warps_reachable(true, None, sms + 1, sms));
            assert!(warps_reachable(true, Some(true), 1, sms));
            assert!(!warps_reachable(true, Some(false), 8 * sms, sms));
            assert!(!warps_reachable(false, Some(true), 8 * sms, sms));
        }
    }

    #[test]
    fn a_warp_a_world_past_seven_worlds_a_multiprocessor() {
        // The measured cases on 132 multiprocessors: faster at 1,024 worlds on the shapes
        // where the quotient wins (session 29), and from 2,048 on.
        assert!(!warp_pays(924, 132, 1024));
        assert!(warp_pays(925, 132, 1024));
        assert!(warp_pays(1024, 132, 212));
        assert!(warp_pays(2048, 132, 1024));
        assert!(warp_pays(8192, 132, 1024));
    }

    #[test]
    fn worlds_of_many_rows_past_twelve_worlds_a_multiprocessor() {
        // flex_poncho's 2,628 rows a world on 132 multiprocessors (session 44): blocks faster
        // at 1,024 to 1,536 worlds, warps from 1,792.
        assert!(!warp_pays(1024, 132, 2628));
        assert!(!warp_pays(1536, 132, 2628));
        assert!(!warp_pays(1584, 132, 2628));
        assert!(warp_pays(1585, 132, 2628));
        assert!(warp_pays(1792, 132, 2628));
        assert!(warp_pays(4096, 132, 2628));
    }

    #[test]
    fn two_warps_a_world_from_one_world_a_multiprocessor_while_they_fit() {
        // 132 multiprocessors holding 16 worlds' pairs each (2,112 worlds).
        assert!(!pairs_pay(132, 132, 2112, 768));
        assert!(pairs_pay(133, 132, 2112, 768));
        assert!(pairs_pay(2112, 132, 2112, 1024));
        assert!(!pairs_pay(2113, 132, 2112, 1024));
        // Worlds of many rows keep their blocks (flex_poncho: 2,628 rows).
        assert!(!pairs_pay(256, 132, 2112, 1025));
        // Nothing fits: no pairs.
        assert!(!pairs_pay(256, 132, 0, 64));
    }
}
