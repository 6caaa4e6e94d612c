//! The host's launch rules: when a batch takes a warp or two a world instead of a block, and
//! what share of masked worlds the warp kernels take, each threshold with the measurements
//! behind it; then the `ARCHIPELAGO_Q_*` switches that override them (for measurements). Pure
//! functions of counts, so they are tested without a device.

use crate::gpu::env_choice;

// Named in the docs only.
#[cfg(doc)]
use super::QuotientSolver;

/// Trees at most for the warp kernel: its scratch is 3 * ntree ints per warp, in shared memory.
/// At 400 trees eight blocks of four warps still fit an H200 multiprocessor (all its registers
/// allow), at 512 six. Measured at 400 (cloth-99%, 4,096 worlds): 63 µs a step against the
/// block kernel's 155 (benches/results/logs/h200-2026-12-01-session31-calls.md).
pub(super) const WARP_TREES_MAX: usize = 512;

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
pub(super) fn warp_pays(nworld: usize, sms: usize, njmax: usize) -> bool {
    let per_sm = if njmax <= WARP_ROWS_LARGE { 7 } else { 12 };
    nworld > per_sm * sms
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
pub(super) fn pairs_pay(nworld: usize, sms: usize, pair_worlds: usize, njmax: usize) -> bool {
    nworld > sms && nworld <= pair_worlds && njmax <= WARP_ROWS_LARGE
}

/// Whether a solver for batches of up to `nworld` worlds on `sms` multiprocessors may launch
/// the warp kernels, so that it needs their program: they fit (`fits`), and the choice
/// ([`QuotientSolver::set_warp_worlds`]) is always, or the rule's, which picks them only for
/// more worlds than multiprocessors ([`warp_pays`], [`pairs_pay`]).
pub(super) fn warps_reachable(fits: bool, choice: Option<bool>, nworld: usize, sms: usize) -> bool {
    fits && choice.unwrap_or(nworld > sms)
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
pub(super) fn aside_cap(nworld: usize) -> usize {
    nworld.div_ceil(ASIDE_PART)
}

/// The share of masked worlds the rule allows the warp kernels, with two warps a world
/// (`pairs`) or one, where the aside blocks are on (`aside`), unless one is set (`forced`:
/// [`QuotientSolver::set_masked_for_blocks`], `ARCHIPELAGO_Q_MASKED`). Without the aside blocks
/// two warps a world wait for any masked world (at 1,024 worlds: 21.2 µs a step with one
/// masked, 17.9 by blocks; session 56, call 2).
pub(super) fn masked_share(pairs: bool, aside: bool, forced: Option<f64>) -> f64 {
    forced.unwrap_or(if pairs && !aside {
        0.0
    } else {
        MASKED_FOR_BLOCKS
    })
}

/// `ARCHIPELAGO_Q_ASIDE=0` turns the aside blocks off, `=1` sets worlds aside even where the
/// launch then spans two waves (for measurements; see `QuotientSolver::aside_blocks`).
pub(super) fn aside_from_env() -> Option<bool> {
    env_choice("ARCHIPELAGO_Q_ASIDE")
}

/// `ARCHIPELAGO_Q_WARP=0|1` (see [`QuotientSolver::set_warp_worlds`]).
pub(super) fn warp_worlds_from_env() -> Option<bool> {
    env_choice("ARCHIPELAGO_Q_WARP")
}

/// `ARCHIPELAGO_Q_PAIR=0|1` (see [`QuotientSolver::set_guard_warps`]).
pub(super) fn guard_warps_from_env() -> Option<bool> {
    env_choice("ARCHIPELAGO_Q_PAIR")
}

/// `ARCHIPELAGO_Q_MASKED=<share>` (for measurements: one share for every kernel; clamped to
/// 0..=1, a value that is not a number ignored), else the rule's ([`MASKED_FOR_BLOCKS`]).
pub(super) fn masked_for_blocks_from_env() -> Option<f64> {
    let v = std::env::var("ARCHIPELAGO_Q_MASKED").ok()?;
    masked_share_set(v.trim().parse::<f64>().ok())
}

/// A share of masked worlds as set ([`QuotientSolver::set_masked_for_blocks`],
/// `ARCHIPELAGO_Q_MASKED`): clamped to 0..=1, NaN read as none set.
pub(super) fn masked_share_set(share: Option<f64>) -> Option<f64> {
    share.filter(|x| !x.is_nan()).map(|x| x.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::{
        ASIDE_SHARE, aside_cap, masked_share, masked_share_set, pairs_pay, warp_pays,
        warps_reachable,
    };

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
