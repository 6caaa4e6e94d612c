//! Whether the batches a command is about to make fit the memory at hand: a size past it is one
//! line of error before anything is made, instead of the allocator aborting the process after
//! minutes of generating.

use archipelago::Error;

/// Host bytes a world holds per row and per tree, at most, while a command runs: the rows
/// themselves (type, id, offsets, a few support entries), each row's three outputs in the
/// oracle's and a mode's outputs, and the per-tree and per-dof outputs and scratch of both (up
/// to six dofs a tree). An estimate from above, for refusing sizes that cannot fit, not an
/// account.
const BYTES_PER_ROW: u64 = 80;
const BYTES_PER_TREE: u64 = 400;

/// Bytes the machine can still give (`MemAvailable` on Linux); `None` where it does not say.
fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// What `nworld` worlds of `ntree` trees and up to `rows` rows each take, at most (`None` past
/// `u64`).
pub fn batch_bytes(nworld: usize, ntree: usize, rows: usize) -> Option<u64> {
    let per_world = (rows as u64)
        .checked_mul(BYTES_PER_ROW)?
        .checked_add((ntree as u64).checked_mul(BYTES_PER_TREE)?)?;
    per_world.checked_mul(nworld as u64)
}

/// Refuses `command`'s `what` of `nworld` worlds of `ntree` trees and up to `rows` rows each
/// where it cannot fit the memory available (where the system says how much that is).
pub fn check(
    command: &'static str,
    what: &str,
    nworld: usize,
    ntree: usize,
    rows: usize,
) -> archipelago::Result<()> {
    let need = batch_bytes(nworld, ntree, rows);
    let Some(have) = available() else {
        return Ok(());
    };
    if need.is_some_and(|n| n <= have) {
        return Ok(());
    }
    let need = need.map_or("more than 16 EiB".into(), gib);
    Err(Error::Usage {
        command,
        reason: format!(
            "{what}: {nworld} worlds of {ntree} trees and up to {rows} rows need about {need} \
             of memory, and {} is available",
            gib(have)
        ),
    })
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_past_memory_are_refused_in_one_line() {
        assert_eq!(batch_bytes(2, 10, 100), Some(2 * (100 * 80 + 10 * 400)));
        assert_eq!(batch_bytes(usize::MAX, usize::MAX, 1), None);
        let Some(have) = available() else {
            return; // not Linux: nothing to check against
        };
        assert!(check("demo", "the batch", 4, 22, 200).is_ok());
        let err = check("demo", "the batch", u32::MAX as usize, 22, 200)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("demo: the batch: 4294967295 worlds"),
            "{err}"
        );
        assert!(
            err.ends_with(&format!("{} is available", gib(have))),
            "{err}"
        );
    }
}
