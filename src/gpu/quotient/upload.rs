//! What a step copies to the device before its launch beside the batch: the slots contracted
//! since the last step and the world → slot map (each only when it changed), and the row ids.

use cudarc::driver::CudaStream;

use super::QuotientSolver;
use super::buffers::QBufs;
use super::node_tables::{NODE_HEAD, NODE_MAPS_MAX, NodeTables};
use crate::error::Result;
use crate::quotient::Tables;
use crate::rows::Input;

impl QuotientSolver {
    /// Mirrors the slots contracted since the last step and the world → slot map.
    pub(super) fn upload_tables(&mut self) -> Result<()> {
        let stream = &self.stream;
        // Slots of an upload that failed stay listed, first.
        let mut contracted = std::mem::take(&mut self.contracted);
        self.quotient.drain_contracted(|s| contracted.push(s));
        let t = self.quotient.cache().tables();
        let b = &self.bufs;
        for &s in &contracted {
            let copied = upload_slot(b, &t, self.node_tables.as_mut(), s as usize, stream);
            if copied.is_err() {
                // Listed again for the next upload: the slot's tables may be half copied.
                self.contracted = contracted;
                return copied;
            }
        }
        let slots_changed = self.slots_on_device != t.world_slot;
        if slots_changed || !contracted.is_empty() {
            self.slots = None;
        }
        contracted.clear();
        self.contracted = contracted;
        if slots_changed {
            // Empty until the copy succeeds: after a failed one the device may hold any mix of
            // maps, and the next upload copies the map again whatever it is then.
            self.slots_on_device.clear();
            b.world_slot.upload_at(0, t.world_slot, stream)?;
            self.slots_on_device.extend_from_slice(t.world_slot);
        }
        Ok(())
    }

    /// The row ids, only while the kernel classifies equality rows by id (known once the
    /// step's events are recorded): no other output or check reads them, and at 4 bytes a row
    /// they would be the step's largest extra copy.
    pub(super) fn upload_row_ids(&mut self, input: &Input<'_>) -> Result<()> {
        if self.quotient.classifier().eqs_by_id() {
            let ids = &input.batch().row_id;
            self.bufs.row_id.upload_at(0, ids, &self.stream)?;
        }
        Ok(())
    }
}

/// Copies slot `s`'s tables (and its node-level ones, where kept and its nodes are few).
fn upload_slot(
    b: &QBufs,
    t: &Tables<'_>,
    node_tables: Option<&mut NodeTables>,
    s: usize,
    stream: &CudaStream,
) -> Result<()> {
    let (n, ms, me) = (t.ntree, t.max_static, t.max_entries);
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
    if let Some(nt) = node_tables.filter(|_| few) {
        let trees = &t.node_trees[s * n..(s + 1) * n];
        nt.fill(s, t);
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
    Ok(())
}
