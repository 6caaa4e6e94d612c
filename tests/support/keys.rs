//! Row keys for generated batches, for the tests.

use archipelago::Batch;
use archipelago::order::RowKeys;

/// Keys for a generated batch, whose contacts carry no geoms: each contact row is named by its
/// input row (its identity travels with it when constraints are permuted).
pub fn unique_contact_keys(batch: &Batch) -> RowKeys {
    let mut keys = RowKeys::default();
    for r in 0..batch.nrow() {
        if batch.row_type[r].is_contact() {
            keys.push_contact([r as i32, 0], 0);
        } else {
            keys.push_other();
        }
    }
    keys
}
