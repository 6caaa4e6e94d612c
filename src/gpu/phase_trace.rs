//! Where a world's time goes inside the quotient kernels: phase marks, for the people tuning
//! them.
//!
//! With `ARCHIPELAGO_Q_TRACE=1` set when a [`QuotientSolver`](super::quotient::QuotientSolver) is
//! built, its kernels are compiled with `Q_TRACE` (`kernels/quotient.cu`, `quotient_warp.cu`):
//! thread 0 of each world's block, or lane 0 of its warp in the warp kernels, stores `clock64()`
//! at [`MARKS`] points of the kernel. Each download reads the marks back and this module sums
//! them per path the world took (its step flag: reused, replayed, masked, solved directly; rows
//! only; node-level maps; in a launch of the warp kernels, `by warps` for a world its warp
//! mapped, `by warps' blocks` for one its block solved after its warp left it), and per step
//! the slowest world, whose time is the kernel's (in a launch of the warp kernels that left
//! worlds to their blocks, less: a block's solve starts its world's marks again after the
//! block's barrier). The solver prints the summary when dropped, one `QTRACE` line per path:
//!
//! ```text
//! QTRACE nworld W reuse R node-maps N steps S slowest world C cycles (mean), its path: PATH K, ...
//! QTRACE   PATH                   worlds N mean total C | 1:C 2:C 3:C ... 9:C
//! ```
//!
//! (`bench --quotient` first prints `QTRACE shape NAME` for each shape's solvers.)
//!
//! A segment `k:c` is the mean cycles from the previous mark present to mark `k`; marks a path
//! does not pass are absent. In the block kernels (0 the start, then after each phase's
//! barrier): 1 the first barrier; 2 the reuse verdict; 3 the replay check and node solve; 4 the
//! node-level head (warp 0) and its barrier; 5 thread 0's pass over trees (no barrier: the row
//! maps follow at once); 6 the pull-back (or the direct solve); 7 the partition check; 8 before
//! the tree- or row-level maps; 9 the end (every warp done, after a barrier of its own). In the
//! warp kernels (`by warps`; the steps of `qw_world` in `kernels/quotient_warp.cu`): 0 the
//! world's start; 1 step 1, the static rows' check where the warp makes it first (and a masked
//! world's hint); 2 step 2, the dynamic rows; 3 the components and islands; 4 step 3, absent
//! on a rows-only path (whose segment 5 then holds step 3's check); 5 step 4, the trees and
//! dofs; 6 the late guard (the block's last warp; the others pass at once); 7 step 5, the
//! rows; 8 the block's barrier reached; 9 left (segment 9: the wait for the block's other
//! warps). A world its warp leaves pending is solved by its block with the block kernels'
//! marks (`by warps' blocks`). The marks are one multiprocessor's clock; the block kernels'
//! add one barrier, so totals run a little above an untraced kernel's.

use std::fmt::Write as _;

/// Marks per world (`Q_TRACE_MARKS` in `kernels/quotient.cu`).
pub const MARKS: usize = 10;

/// Whether `ARCHIPELAGO_Q_TRACE=1` asks for phase marks.
pub fn requested() -> bool {
    super::env_choice("ARCHIPELAGO_Q_TRACE") == Some(true)
}

/// The define that compiles the marks in, to put before the kernel source.
pub const DEFINE: &str = "#define Q_TRACE 1\n";

/// Sums of one path's worlds.
#[derive(Debug, Clone, Default)]
struct PathSums {
    worlds: u64,
    total: u64,
    /// Per mark: cycles from the previous mark present, and how many worlds passed it.
    segment: [u64; MARKS],
    passed: [u64; MARKS],
}

/// Step flags a world can carry (`QArgs::stale`: two bits of kind, rows-only, node-level maps).
const PATHS: usize = 16;

/// Who marked a world: a block kernel; in a launch of the warp kernels, its warp; or its block
/// after its warp left it (the block kernels' marks).
const GROUPS: usize = 3;
const GROUP_NAMES: [&str; GROUPS] = ["", " by warps", " by warps' blocks"];

/// Flag bit of a masked world mapped by its warp (`QArgs::stale`, `kernels/quotient_warp.cu`).
const BY_ITS_WARP: i32 = 32;

/// Phase marks summed over the steps of one solver.
#[derive(Debug, Clone)]
pub struct PhaseTrace {
    /// The marks of the last step, `MARKS` per world, as the device wrote them.
    pub marks: Vec<i64>,
    /// Per step flag, in a block kernels' launch, then mapped by warps, then solved by the
    /// warps' blocks (`GROUPS`): its worlds' sums, and the steps whose slowest world took that
    /// path.
    paths: [PathSums; GROUPS * PATHS],
    slowest: [u64; GROUPS * PATHS],
    slowest_total: u64,
    steps: u64,
    nworld: usize,
    /// Whether the launch of the step to record took the warp kernels ([`PhaseTrace::launched`]).
    warps: bool,
}

impl PhaseTrace {
    /// Room for the marks of `nworld` worlds.
    pub fn new(nworld: usize) -> PhaseTrace {
        PhaseTrace {
            marks: vec![0; nworld * MARKS],
            paths: std::array::from_fn(|_| PathSums::default()),
            slowest: [0; GROUPS * PATHS],
            slowest_total: 0,
            steps: 0,
            nworld,
            warps: false,
        }
    }

    /// Notes, at a launch, whether it takes the warp kernels, which map a world replayed (kind
    /// 0) or masked by its warp (flag 32) and leave the others to their blocks.
    pub fn launched(&mut self, warps: bool) {
        self.warps = warps;
    }

    /// Adds a step, of the last launch ([`PhaseTrace::launched`]): `marks` of its first
    /// `flags.len()` worlds (in [`PhaseTrace::marks`]) and each world's step flag
    /// (`QArgs::stale`). Allocates nothing.
    pub fn record(&mut self, flags: &[i32]) {
        let mut slowest: Option<(u64, usize)> = None;
        for (w, &flag) in flags.iter().enumerate() {
            let m = &self.marks[w * MARKS..(w + 1) * MARKS];
            let (start, end) = (m[0], m[MARKS - 1]);
            if end <= start {
                continue; // not reached (a world past the launch) or no clock
            }
            let group = match self.warps {
                false => 0,
                true if flag & 3 == 0 || flag & BY_ITS_WARP != 0 => 1,
                true => 2,
            };
            let path = flag as usize % PATHS + group * PATHS;
            let sums = &mut self.paths[path];
            sums.worlds += 1;
            let total = (end - start) as u64;
            sums.total += total;
            let mut prev = start;
            for (k, &t) in m.iter().enumerate().skip(1) {
                if t > 0 && t >= prev {
                    sums.segment[k] += (t - prev) as u64;
                    sums.passed[k] += 1;
                    prev = t;
                }
            }
            if slowest.is_none_or(|(c, _)| total > c) {
                slowest = Some((total, path));
            }
        }
        if let Some((cycles, path)) = slowest {
            self.steps += 1;
            self.slowest_total += cycles;
            self.slowest[path] += 1;
        }
    }

    /// The summary: one line for the solver, then one per path (see the module's docs), paths
    /// by name.
    pub fn report(&self, reuse: bool, node_maps: bool) -> String {
        let mut s = String::new();
        let mean = |sum: u64, n: u64| sum.checked_div(n).unwrap_or(0);
        let by_name = |taken: &dyn Fn(usize) -> bool| {
            let mut v: Vec<(String, usize)> = (0..GROUPS * PATHS)
                .filter(|&f| taken(f))
                .map(|f| {
                    let name = path_name((f % PATHS) as i32);
                    (format!("{name}{}", GROUP_NAMES[f / PATHS]), f)
                })
                .collect();
            v.sort();
            v
        };
        let paths: Vec<String> = by_name(&|f| self.slowest[f] > 0)
            .into_iter()
            .map(|(p, f)| format!("{p} {}", self.slowest[f]))
            .collect();
        let _ = writeln!(
            s,
            "QTRACE nworld {} reuse {reuse} node-maps {node_maps} steps {} slowest world {} cycles (mean), its path: {}",
            self.nworld,
            self.steps,
            mean(self.slowest_total, self.steps),
            paths.join(", ")
        );
        for (path, f) in by_name(&|f| self.paths[f].worlds > 0) {
            let p = &self.paths[f];
            let segments: Vec<String> = (1..MARKS)
                .filter(|&k| p.passed[k] > 0)
                .map(|k| format!("{k}:{}", mean(p.segment[k], p.passed[k])))
                .collect();
            let _ = writeln!(
                s,
                "QTRACE   {path:22} worlds {} mean total {} | {}",
                p.worlds,
                mean(p.total, p.worlds),
                segments.join(" ")
            );
        }
        s
    }
}

/// A world's path from its step flag: 0 replayed, 1 solved directly, 2 masked, 3 reused; | 4
/// only the row-level outputs; | 8 the node-level maps.
fn path_name(flag: i32) -> String {
    let kind = ["replayed", "direct", "masked", "reused"][(flag & 3) as usize];
    let mut name = kind.to_string();
    if flag & 4 != 0 {
        name.push_str(" rows-only");
    }
    if flag & 8 != 0 {
        name.push_str(" node-maps");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(marks: &[(usize, i64)]) -> [i64; MARKS] {
        let mut m = [0; MARKS];
        for &(k, t) in marks {
            m[k] = t;
        }
        m
    }

    #[test]
    fn segments_run_from_the_previous_mark_present_and_the_slowest_world_is_the_step() {
        let mut trace = PhaseTrace::new(3);
        // A reused world (marks 0, 1, 2, 9), a node-level one (0..5, 9) and an unreached one.
        let worlds = [
            world(&[(0, 1000), (1, 1100), (2, 1500), (9, 2000)]),
            world(&[
                (0, 1000),
                (1, 1200),
                (2, 1700),
                (3, 3000),
                (4, 3500),
                (5, 4000),
                (9, 6000),
            ]),
            world(&[]),
        ];
        for (w, m) in worlds.iter().enumerate() {
            trace.marks[w * MARKS..(w + 1) * MARKS].copy_from_slice(m);
        }
        trace.record(&[3, 8 | 4, 0]);
        trace.record(&[3, 8 | 4, 0]);
        // A launch of the warp kernels: a world masked by its warp (flag 2 | 8 | 32) and one
        // its block solved directly, apart.
        trace.launched(true);
        trace.record(&[2 | 8 | 32, 1, 0]);
        let report = trace.report(true, true);
        let want = [
            "QTRACE nworld 3 reuse true node-maps true steps 3 slowest world 5000 cycles (mean), its path: direct by warps' blocks 1, replayed rows-only node-maps 2",
            "QTRACE   direct by warps' blocks worlds 1 mean total 5000 | 1:200 2:500 3:1300 4:500 5:500 9:2000",
            "QTRACE   masked node-maps by warps worlds 1 mean total 1000 | 1:100 2:400 9:500",
            "QTRACE   replayed rows-only node-maps worlds 2 mean total 5000 | 1:200 2:500 3:1300 4:500 5:500 9:2000",
            "QTRACE   reused                 worlds 2 mean total 1000 | 1:100 2:400 9:500",
        ];
        assert_eq!(report.lines().collect::<Vec<_>>(), want, "{report}");
    }

    #[test]
    fn flags_name_the_paths() {
        assert_eq!(path_name(0), "replayed");
        assert_eq!(path_name(3), "reused");
        assert_eq!(path_name(2 | 8), "masked node-maps");
        assert_eq!(path_name(1 | 4), "direct rows-only");
    }
}
