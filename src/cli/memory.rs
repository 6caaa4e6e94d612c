//! Whether the batches a command is about to make can be held at all: a size past what the
//! machine can allocate is one line of error before anything is made, instead of the allocator
//! aborting the process after minutes of generating.
//!
//! The test is an allocation of the estimated bytes, freed at once without being touched (so
//! it costs no memory): it answers for this process's limits and the system's overcommit
//! policy, where `/proc/meminfo` can mislead (a virtual machine whose memory grows as it is
//! used reports a fraction of it at first).

use super::{Error, Result};

/// Host bytes a world holds per row and per tree while a command runs: the rows themselves
/// (type, id, offsets, support entries), each row's outputs in the oracle's and a mode's
/// outputs, and the per-tree and per-dof outputs and scratch of both. An estimate, a little
/// under the peaks measured (session 73: 0.71–2.84 GiB against 0.8–3.3 estimated), so that
/// only sizes that cannot fit are refused.
const BYTES_PER_ROW: u64 = 48;
const BYTES_PER_TREE: u64 = 240;

/// What `nworld` worlds of `ntree` trees and up to `rows` rows each take, about (`None` past
/// `u64`).
pub fn batch_bytes(nworld: usize, ntree: usize, rows: usize) -> Option<u64> {
    let per_world = (rows as u64)
        .checked_mul(BYTES_PER_ROW)?
        .checked_add((ntree as u64).checked_mul(BYTES_PER_TREE)?)?;
    per_world.checked_mul(nworld as u64)
}

/// Whether an allocation of `bytes` succeeds (it is freed at once, never touched).
fn can_allocate(bytes: u64) -> bool {
    let Ok(bytes) = usize::try_from(bytes) else {
        return false;
    };
    Vec::<u8>::new().try_reserve_exact(bytes).is_ok()
}

/// Refuses `command`'s `what` of `nworld` worlds of `ntree` trees and up to `rows` rows each
/// where the machine cannot allocate what they take.
pub fn check(
    command: &'static str,
    what: &str,
    nworld: usize,
    ntree: usize,
    rows: usize,
) -> Result<()> {
    let need = batch_bytes(nworld, ntree, rows);
    if need.is_some_and(can_allocate) {
        return Ok(());
    }
    let need = need.map_or("more than 16 EiB".into(), |b| {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    });
    Err(Error::Usage {
        command,
        reason: format!(
            "{what}: {nworld} worlds of {ntree} trees and up to {rows} rows need about {need} \
             of memory, more than this machine can allocate"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_what_can_be_allocated_are_refused_in_one_line() {
        assert_eq!(batch_bytes(2, 10, 100), Some(2 * (100 * 48 + 10 * 240)));
        assert_eq!(batch_bytes(usize::MAX, usize::MAX, 1), None);
        assert!(check("demo", "a batch", 4096, 22, 200).is_ok());
        // 2^62 bytes: past any machine's address space.
        let err = check("demo", "a batch", 1 << 40, 4096, 0)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("demo: a batch: 1099511627776 worlds"),
            "{err}"
        );
        assert!(
            err.ends_with("more than this machine can allocate"),
            "{err}"
        );
    }
}
