//! The lists of worlds of the launches after a step with masked worlds: which worlds the
//! masked twins and the plain kernels beside them take, laid out as `kernels/quotient_warp.cu`
//! reads them, and how many blocks each list takes.

use super::kernels::WARP_PER_BLOCK;
use super::rules::aside_cap;

/// The lists of worlds of the launches after a step with masked worlds into `out`, as
/// `quotient_warp.cu` reads them: for `rest_blocks` blocks of the plain kernels the worlds of
/// `rest`, four a block; then for the masked twins each of their `aside_blocks` aside blocks'
/// worlds (those of `set`), then for `list_blocks` blocks the worlds of `listed`, four a block.
/// `u32::MAX` where a block has no world.
pub(super) fn lists_array(
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
pub(super) fn lists_len(nworld: usize) -> usize {
    2 * nworld.div_ceil(WARP_PER_BLOCK) * WARP_PER_BLOCK + aside_cap(nworld)
}

/// Splits worlds `0..nworld` between the masked twins and the plain kernels beside them: the
/// twins take those of `twins` (ascending; every world where `None`), and of those, the ones
/// not in `set` (ascending, among them: the worlds set aside, one to each aside block) go to
/// `listed`; the other worlds go to `rest`.
pub(super) fn split_worlds(
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

/// Merges `add` into `list`, both ascending and without a world in common, through `scratch`
/// (which then holds the list before): one pass, no allocation past the lists' capacity.
pub(super) fn merge_ascending(list: &mut Vec<u32>, add: &[u32], scratch: &mut Vec<u32>) {
    scratch.clear();
    let (mut a, mut b) = (list.iter().peekable(), add.iter().peekable());
    while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
        let next = if x < y { a.next() } else { b.next() };
        scratch.extend(next);
    }
    scratch.extend(a.chain(b));
    std::mem::swap(list, scratch);
}

/// The blocks of a launch over a list of `n` worlds of a batch of `nworld` (four a block),
/// rounded up so that a step's graph is captured again only when the count moves by much: to a
/// power of two or to a sixteenth of the batch's blocks, whichever is fewer (blocks past the
/// list's last world return at once), at most the batch's.
pub(super) fn list_blocks(n: usize, nworld: usize) -> usize {
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

#[cfg(test)]
mod tests {
    use super::{list_blocks, lists_array, merge_ascending, split_worlds};

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
    fn worlds_merge_in_ascending_order() {
        let (mut list, mut scratch) = (vec![1, 4, 9], Vec::new());
        merge_ascending(&mut list, &[0, 5, 10, 11], &mut scratch);
        assert_eq!(list, [0, 1, 4, 5, 9, 10, 11]);
        merge_ascending(&mut list, &[], &mut scratch);
        assert_eq!(list, [0, 1, 4, 5, 9, 10, 11]);
        let mut empty = Vec::new();
        merge_ascending(&mut empty, &[2, 3], &mut scratch);
        assert_eq!(empty, [2, 3]);
    }
}
