//! The quotient's device buffers and the argument block that hands them to its kernels. Apart
//! so that the layout the device code relies on (`struct QArgs` in `kernels/quotient.cu`)
//! reads in one place.

use super::node_tables::{NODE_CACHE_WORDS, NODE_HEAD, NODE_MAPS_MAX, run_bytes};
use super::world_lists::lists_len;
use crate::error::Result;
use crate::gpu::Gpu;
use crate::gpu::workspace::{DevBuf, dof_blocks};
use crate::model::Model;
use crate::rows::Capacity;

// Named in the docs only.
#[cfg(doc)]
use super::{StepCounts, world_lists::lists_array};

/// The quotient's argument block; field order and types match `struct QArgs` in
/// `kernels/quotient.cu` exactly.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct QArgs {
    pub(super) row_id: u64,
    pub(super) world_slot: u64,
    pub(super) nnode: u64,
    pub(super) tree_node: u64,
    pub(super) node_mintree: u64,
    pub(super) node_rows: u64,
    pub(super) node_sum: u64,
    pub(super) node_treeadr: u64,
    pub(super) node_trees: u64,
    pub(super) node_dofpre: u64,
    pub(super) node_head: u64,
    pub(super) tree_place: u64,
    pub(super) node_efc: u64,
    pub(super) row_node: u64,
    pub(super) runs: u64,
    pub(super) nstatic: u64,
    pub(super) nstatic_rows: u64,
    pub(super) stream_kind: u64,
    pub(super) stream_adr: u64,
    pub(super) stream_support: u64,
    pub(super) stale: u64,
    pub(super) c_count: u64,
    pub(super) c_rowadr: u64,
    pub(super) c_type: u64,
    pub(super) c_adr: u64,
    pub(super) c_support: u64,
    pub(super) c_node: u64,
    pub(super) trace: u64,
    pub(super) lists: u64,
    pub(super) eq_ids: i32,
    pub(super) eq_lo: i32,
    pub(super) eq_hi: i32,
    pub(super) eq_static: i32,
    pub(super) friction_static: i32,
    pub(super) flex_static: i32,
    pub(super) max_static: i32,
    pub(super) max_entries: i32,
    pub(super) reuse: i32,
    pub(super) reuse_nodes: i32,
    pub(super) cap_rows: i32,
    pub(super) cap_hyper: i32,
    pub(super) cap_entries: i32,
    pub(super) node_maps: i32,
    pub(super) run_bytes: i32,
    pub(super) one_slot: i32,
    pub(super) one_nnode: i32,
    pub(super) one_k: i32,
    pub(super) one_nstatic: i32,
    pub(super) aside_blocks: i32,
    pub(super) asleep: u64,
}

/// Device buffers of the quotient, in `QArgs` order.
pub(super) struct QBufs {
    /// Row ids, uploaded only while equalities are classified by id
    /// ([`Classifier::eqs_by_id`](crate::quotient::classify::Classifier::eqs_by_id); no other
    /// use of an id on the device: see `invalidation::signature`).
    pub(super) row_id: DevBuf,
    pub(super) world_slot: DevBuf,
    pub(super) nnode: DevBuf,
    pub(super) tree_node: DevBuf,
    pub(super) node_mintree: DevBuf,
    pub(super) node_rows: DevBuf,
    pub(super) node_sum: DevBuf,
    pub(super) node_treeadr: DevBuf,
    pub(super) node_trees: DevBuf,
    pub(super) node_dofpre: DevBuf,
    pub(super) node_head: DevBuf,
    pub(super) tree_place: DevBuf,
    pub(super) node_efc: DevBuf,
    pub(super) row_node: DevBuf,
    pub(super) runs: DevBuf,
    pub(super) nstatic: DevBuf,
    pub(super) nstatic_rows: DevBuf,
    pub(super) stream_kind: DevBuf,
    pub(super) stream_adr: DevBuf,
    pub(super) stream_support: DevBuf,
    pub(super) stale: DevBuf,
    /// The reuse cache: each world's hyperedges and row-level outputs at its last solved step.
    pub(super) c_count: DevBuf,
    /// Per world, the first row where its row-level outputs were last written: a reused world
    /// found there needs no copy (forgotten when the world count changes).
    pub(super) c_rowadr: DevBuf,
    pub(super) c_type: DevBuf,
    pub(super) c_adr: DevBuf,
    pub(super) c_support: DevBuf,
    pub(super) c_out: DevBuf,
    /// The node-level partition check's cache (per world [`NODE_CACHE_WORDS`] words: a
    /// contraction number, then [`NODE_MAPS_MAX`] node islands as bytes).
    pub(super) c_node: DevBuf,
    /// The lists of worlds of the launches after a step with masked worlds ([`lists_array`]):
    /// the plain kernels' (`…_rest_kernel`), then the masked twins' (their aside blocks', then
    /// their warps').
    pub(super) lists: DevBuf,
    /// Per world the nodes its last masked solve (by its warp or by a block) found asleep: the
    /// masked twins' hint ([`StepCounts::masked_by_hint`]), verified before use, so never stale
    /// in effect.
    pub(super) asleep: DevBuf,
}

impl QBufs {
    /// Every buffer for `cap`'s worlds of `model`, nothing cached yet (rows = −1, no
    /// contraction, no node found asleep).
    pub(super) fn new(gpu: &Gpu, cap: &Capacity, model: &Model) -> Result<QBufs> {
        let (w, t) = (cap.nworld, model.ntree());
        let (ms, me) = (cap.njmax + cap.nedge, cap.nsupport);
        let ctx = gpu.ctx();
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
        Ok(bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::QArgs;
    use crate::gpu::{self, module, quotient::programs};

    /// The host's `QArgs` has the size and every field offset of `struct QArgs` in
    /// `kernels/quotient.cu`, as NVRTC lays it out (no GPU needed).
    #[test]
    fn the_quotient_argument_block_matches_the_kernels() {
        if !gpu::nvrtc_present() {
            println!("skipped: no CUDA device (no NVRTC)");
            return;
        }
        #[rustfmt::skip]
        let host = crate::field_offsets!(QArgs;
            row_id, world_slot, nnode, tree_node, node_mintree, node_rows, node_sum, node_treeadr,
            node_trees, node_dofpre, node_head, tree_place, node_efc, row_node, runs, nstatic,
            nstatic_rows, stream_kind, stream_adr, stream_support, stale, c_count, c_rowadr, c_type,
            c_adr, c_support, c_node, trace, lists, eq_ids, eq_lo, eq_hi, eq_static,
            friction_static, flex_static, max_static, max_entries, reuse, reuse_nodes, cap_rows,
            cap_hyper, cap_entries, node_maps, run_bytes, one_slot, one_nnode, one_k, one_nstatic,
            aside_blocks, asleep,
        );
        let size = std::mem::size_of::<QArgs>();
        assert_eq!(host[host.len() - 1].1 + 8, size, "asleep ends the block");
        let names: Vec<&str> = host.iter().map(|f| f.0).collect();
        let src = programs::block_program_source();
        let device = module::device_layout(&src, "QArgs", size, &names).unwrap();
        assert_eq!(
            device, host,
            "(field, offset) on the device and on the host"
        );
    }
}
