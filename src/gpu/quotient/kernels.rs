//! The quotient's loaded kernels and how a launch picks among them: what a solver loads
//! ([`Loaded`]), the kinds of launch ([`Kernel`]), the warp program's families of entry points
//! ([`WarpKernels`], [`Warps`]) and their launch shape. The rules that decide which one pays
//! are `rules.rs`.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule};

use super::programs::{block_program, capped_program, warp_program};
use super::rules::{WARP_TREES_MAX, warps_reachable};
use crate::error::Result;
use crate::gpu::maps::BlockShape;
use crate::gpu::module::function;
use crate::gpu::workspace::dof_blocks;
use crate::gpu::{Gpu, regcap};
use crate::model::Model;
use crate::rows::Capacity;

// Named in the docs only.
#[cfg(doc)]
use super::{QuotientSolver, slots};

/// Worlds per block of the warp kernel (`QW_WARPS` in `kernels/quotient_warp.cu`).
pub(super) const WARP_PER_BLOCK: usize = 4;

/// The kernel of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kernel {
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
    pub(super) fn by_warps(self) -> bool {
        matches!(self, Kernel::Warp | Kernel::Pair)
    }
}

/// Which of a family's kernels a launch takes (see `kernels/quotient_warp.cu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
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
pub(super) struct WarpKernels {
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

    pub(super) fn pick(&self, reuse: bool, one: bool, part: Part) -> &CudaFunction {
        &self.entries[Self::index(reuse, one, part)]
    }
}

/// The warp program's kernels, once loaded (see [`Warps::load`]).
pub(super) struct Warps {
    _module: Arc<CudaModule>,
    /// One warp per replayed world (see [`Kernel::Warp`]); the partition check's kernels are
    /// launched while reuse is on, the one slot's for a batch whose worlds all have one (see
    /// [`OneSlot`](slots::OneSlot) and [`QuotientSolver::batch_slot`]).
    pub(super) warp: WarpKernels,
    /// The same with a second warp a world for its guard (see [`Kernel::Pair`]).
    pub(super) pair: WarpKernels,
    /// Worlds at most whose pairs of warps are all resident at once
    /// ([`QuotientSolver::set_guard_warps`]).
    pub(super) pair_worlds: usize,
    /// Blocks of the warp kernels, and of the pair kernels, resident at once on the device:
    /// a launch of more spans two waves (see `QuotientSolver::aside_blocks`).
    pub(super) warp_wave: usize,
    pub(super) pair_wave: usize,
}

impl Warps {
    /// Compiles (or takes from the process's cache) and loads the warp program, with `smem`
    /// bytes of dynamic shared memory a block. Its kernels have fixed launch bounds, so it has
    /// no register-capped copy: the capped program's copies of them were the same machine code.
    pub(super) fn load(gpu: &Gpu, smem: u32) -> Result<Warps> {
        let module = gpu.program(&warp_program())?;
        let warp = WarpKernels::load(&module, "warp")?;
        let pair = WarpKernels::load(&module, "pair")?;
        // Each family's blocks resident at once on the device, the fewest of its kernels'.
        let sms = gpu.info().sm_count.max(1) as usize;
        let wave = |family: &WarpKernels, warps: u32| -> Result<usize> {
            let shape = warp_shape(warps, smem);
            let mut blocks = usize::MAX;
            for f in family.all() {
                shape.prepare(f)?;
                blocks = blocks.min(shape.resident(f)?);
            }
            Ok(blocks * sms)
        };
        let warp_wave = wave(&warp, 1)?;
        let pair_wave = wave(&pair, 2)?;
        Ok(Warps {
            _module: module,
            warp,
            pair,
            pair_worlds: pair_wave * WARP_PER_BLOCK,
            warp_wave,
            pair_wave,
        })
    }
}

/// What a solver loads for its capacity: the block program (or its register-capped copy) with
/// its three kernels and launch shapes, and the warp program where a batch may take it.
pub(super) struct Loaded {
    pub(super) _module: Arc<CudaModule>,
    /// Registers a thread of the block kernels when they are the capped copies (regcap).
    pub(super) register_cap: Option<u32>,
    pub(super) kernel: CudaFunction,
    /// The same kernel with its rare paths out of line, for a batch whose every world takes
    /// the node-level maps (see `few_launch`).
    pub(super) few_kernel: CudaFunction,
    /// `few_kernel` for a batch of no more worlds than multiprocessors.
    pub(super) aside_kernel: CudaFunction,
    /// `kernel`'s shape, and the shape when every world takes the node-level maps
    /// (`few_kernel`, `aside_kernel`; see `launch_shape`).
    pub(super) shape: BlockShape,
    pub(super) node_shape: BlockShape,
    /// The warp program, where a batch may take it: loaded here where the rule may pick it
    /// (more worlds than multiprocessors), else when
    /// [`set_warp_worlds`](QuotientSolver::set_warp_worlds) asks for it.
    pub(super) warps: Option<Warps>,
    /// Its kernels' dynamic shared memory: per world warp 3 * ntree ints, and the block path's
    /// scratch.
    pub(super) warp_smem: u32,
    /// Whether the model and the device allow the warp kernels at all: at most 512 trees,
    /// their shared memory, the node-level tables.
    pub(super) warp_fits: bool,
}

impl Loaded {
    /// Compiles (or takes from the caches) and loads the programs a solver within `cap` on
    /// `model` needs; `warp_worlds` is the warp kernels' forced choice, if any.
    pub(super) fn load(
        gpu: &Gpu,
        cap: &Capacity,
        model: &Model,
        warp_worlds: Option<bool>,
    ) -> Result<Loaded> {
        let info = gpu.info();
        let sm_count = info.sm_count.max(1) as usize;
        // Where a batch may take the warp kernels (all but their shared memory known here),
        // their program, most of the quotient's machine code, builds meanwhile: a cold start
        // waits for the longer of the two programs instead of both.
        let warps_may_fit = cap.ntree <= WARP_TREES_MAX && dof_blocks(model);
        if warps_reachable(warps_may_fit, warp_worlds, cap.nworld, sm_count) {
            gpu.program_meanwhile(warp_program());
        }
        let mut module = gpu.program(&block_program())?;
        let mut kernel = function(&module, "quotient_kernel")?;
        let mut shape = BlockShape::choose(&kernel, cap, info)?;
        let mut register_cap = None;
        // Many waves of worlds: the block kernels' copies with fewer registers, shaped anew
        // (regcap).
        if regcap::pays(&kernel, shape, cap.nworld, info)? {
            register_cap = Some(regcap::QUOTIENT);
            module = gpu.program(&capped_program())?;
            kernel = function(&module, "quotient_kernel")?;
            shape = BlockShape::choose(&kernel, cap, info)?;
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
            BlockShape::choose_for(&kernel, cap, info, node_work)?
        } else {
            shape
        };
        node_shape.prepare(&few_kernel)?;
        node_shape.prepare(&aside_kernel)?;
        // The warp kernel's scratch: its warps' tables, later the block path's (aliased: the
        // block takes its pending worlds once every warp is done); models of few trees only,
        // whose trees own consecutive dof blocks (the node-level maps).
        let warp_smem = (WARP_PER_BLOCK * 3 * 4 * cap.ntree).max(node_shape.smem as usize);
        let warp_fits = warps_may_fit && warp_smem + 8192 <= info.smem_optin;
        let warps = match warps_reachable(warp_fits, warp_worlds, cap.nworld, sm_count) {
            true => Some(Warps::load(gpu, warp_smem as u32)?),
            false => None,
        };
        Ok(Loaded {
            _module: module,
            register_cap,
            kernel,
            few_kernel,
            aside_kernel,
            shape,
            node_shape,
            warps,
            warp_smem: warp_smem as u32,
            warp_fits,
        })
    }
}

/// The launch shape of the warp kernels with `warps` warps a world (2: the pair kernels).
pub(super) fn warp_shape(warps: u32, smem: u32) -> BlockShape {
    BlockShape {
        threads: 32 * warps * WARP_PER_BLOCK as u32,
        smem,
    }
}

#[cfg(test)]
mod tests {
    use super::{Part, WarpKernels};

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
}
