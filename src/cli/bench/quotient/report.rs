//! The quotient bench's page: a shape's lines below its table of modes (the quotient's steady
//! step, floor, bound and speedups) and the summary tables over every shape.

use std::fmt::Write as _;

use super::super::floor_bandwidth;
use super::super::sequence::{self, PolicyFigures, Sequence};
use super::timing::{QuotientFigures, REBUILD_ALL_REPS, REBUILD_REPS, Timed};
use archipelago::Input;
use archipelago::engine::auto_keeps_quotient;
use archipelago::gpu::graph::{Busy, L2Flush};
use archipelago::gpu::{Gpu, Mode};

/// One summary line per shape, for the table at the end.
pub(in super::super) struct Summary {
    pub(super) shape: String,
    pub(super) static_rows: f64,
    /// Static support entries (rows' and rowless couplings'): flex scenes contract couplings
    /// without rows.
    pub(super) static_entries: f64,
    pub(super) best: Option<(String, f64, f64)>,
    pub(super) quotient: Option<(f64, f64)>,
    /// The quotient's device µs per step with every world unchanged (reuse on).
    pub(super) unchanged: Option<f64>,
    /// The least device µs any step can take on the shape: the empty replay plus the floor
    /// bytes at the measured copy bandwidth.
    pub(super) bound: Option<f64>,
    /// With an L2 flush before each step: the best full rebuild (mode, device µs) and the
    /// quotient's device µs.
    pub(super) cold: Option<(String, f64, f64)>,
    /// The same with the device kept busy before each step instead (L2 warm).
    pub(super) busy: Option<(String, f64, f64)>,
    pub(super) sequences: Vec<SequenceLine>,
}

/// A step sequence's summary: its label, the best full rebuild over it, the quotient's mean
/// device µs per step, the share of world-steps reused.
pub(super) struct SequenceLine {
    label: String,
    best: Option<(Mode, f64)>,
    quotient: f64,
    quotient_off: f64,
    reused: f64,
    /// The `auto` Engine's wall time over the best full rebuild's, and its quotient steps.
    auto: Option<(f64, usize)>,
    /// The `auto` Engine's wall time over that of the full rebuild it chose.
    auto_own: Option<f64>,
    /// The same over the steps between its trials only.
    auto_between: Option<f64>,
    /// On a toggling sequence, the equality policies against the best full rebuild.
    toggles: Option<Toggles>,
}

/// A toggling sequence's figures: the best full rebuild's median wall, and per equality policy
/// (static, the default, first) its mean device µs and median wall µs per step.
struct Toggles {
    best_wall: Option<(String, f64)>,
    policies: Vec<PolicyFigures>,
}

/// A mode's row of the shape's table.
pub(super) fn row(out: &mut String, t: &Timed) {
    let _ = writeln!(
        out,
        "| {} | {:.1} | {:.1} | {:.1} | {} | {:.1} | {:.1} | {:.1} | {:.1} ({:+.1}) |",
        t.name,
        t.construct_ms,
        t.device_us,
        t.wall_us,
        if t.ok { "yes" } else { "NO" },
        t.back_us,
        t.cold_us,
        t.busy_us,
        t.read_us,
        t.read_us - t.device_us
    );
}

/// The full rebuilds' figures that the quotient's lines set it against: the fastest exact mode
/// warm (device and wall µs), with L2 flushed, with the device busy and with a reader of its
/// outputs after it (that time and the step's own).
pub(super) struct FullRebuilds {
    pub(super) best: Option<(String, f64, f64)>,
    pub(super) best_cold: Option<(String, f64)>,
    pub(super) best_busy: Option<(String, f64)>,
    pub(super) best_read: Option<(String, f64, f64)>,
    /// The maps stage alone, where a mode timed it.
    pub(super) maps_us: Option<f64>,
    /// The modes whose kernels were capped for many waves, and at how many registers.
    pub(super) capped: Vec<String>,
    /// Whether every mode was exact or refused the shape.
    pub(super) ok: bool,
}

/// The quotient's lines below the table: its solver and steady step, its floor, the bound of
/// any step, and its speedups over the best full rebuild warm, cold and busy; the same figures
/// into `summary`.
pub(super) fn quotient_lines(
    g: &Gpu,
    input: &Input<'_>,
    f: &QuotientFigures,
    full: &FullRebuilds,
    timers: (&L2Flush, &Busy),
    summary: &mut Summary,
    out: &mut String,
) -> archipelago::Result<()> {
    summary.quotient = Some((f.timed.device_us, f.timed.wall_us));
    summary.unchanged = f.unchanged_us;
    // The launch under every step's device time, measured beside the shape's figures; the
    // bandwidth is the process's one measurement (the report's header).
    let launch_us = archipelago::gpu::graph::empty_graph_us(g, 50)?;
    let (bandwidth, _) = floor_bandwidth(g)?;
    let bound = launch_us + f.floor_bytes as f64 / bandwidth * 1e6;
    summary.bound = bound.is_finite().then_some(bound);
    steady_step_line(input, f, out);
    if !full.capped.is_empty() {
        let _ = writeln!(
            out,
            "\nfull-rebuild kernels capped for many waves (registers a thread): {}",
            full.capped.join(", ")
        );
    }
    floor_and_maps_lines(f, full, out);
    if let Some(bound) = summary.bound {
        bound_line(bound, launch_us, bandwidth, f, full, out);
    }
    speedup_lines(g, f, full, timers, summary, out)
}

/// The quotient's first line: its slots and memory, how its steady step solved the worlds, and
/// the host's part of a step, of the first step and of rebuilds.
fn steady_step_line(input: &Input<'_>, f: &QuotientFigures, out: &mut String) {
    let _ = writeln!(
        out,
        "\nquotient: {} slot(s) for {} worlds, {:.1} MiB on the device{}; steady step: {} replayed, {} masked ({} by their warps, {} of them by their hint), {} solved directly; host half {:.1} µs/step, beside the batch's copy (upload {:.1} µs/step); first step (contract every world) {:.2} ms; rebuild of every world {:.2} ms, of one world {:.1} µs (host, beyond a steady step: the median of {} and of {} such pairs)",
        f.slots,
        input.batch().nworld(),
        f.bytes as f64 / (1 << 20) as f64,
        f.timed.register_cap.map_or(String::new(), |n| format!(
            ", kernels of at most {n} registers a thread (many waves)"
        )) + match (f.warp_worlds, f.guard_warps) {
            (true, true) => ", one warp a replayed world and one for its guard",
            (true, false) => ", one warp a replayed world",
            _ => "",
        },
        f.counts.replayed,
        f.counts.masked,
        f.counts.masked_by_warps,
        f.counts.masked_by_hint,
        f.counts.direct,
        f.host_us,
        f.upload_us,
        f.first_ms,
        f.rebuild_all_ms,
        f.rebuild_one_us,
        REBUILD_ALL_REPS,
        REBUILD_REPS
    );
}

/// The parts of a step: the quotient's floor (every world unchanged), its step with the
/// tree-level maps only, and the maps alone, where they were measured.
fn floor_and_maps_lines(f: &QuotientFigures, full: &FullRebuilds, out: &mut String) {
    match f.unchanged_us {
        Some(us) => {
            let _ = writeln!(
                out,
                "\nquotient, every world unchanged since its last step (reuse on: the reuse check only, every output in place; a block a world, as the warp kernel has no reuse check): {us:.1} µs/step — the floor of a quotient step on this shape"
            );
        }
        None => out
            .push_str("\nquotient, every world unchanged: not measured (a world was not reused)\n"),
    }
    if let Some(us) = f.tree_maps_us {
        let _ = writeln!(
            out,
            "\nquotient (reuse off) with the tree-level maps only (node-level maps off): {us:.1} µs/step; with them: {} of {} worlds mapped from their nodes",
            f.counts.by_nodes,
            f.counts.replayed + f.counts.masked + f.counts.direct
        );
    }
    if let Some(maps) = full.maps_us {
        let _ = writeln!(
            out,
            "\nmaps alone (dsu's maps launch over its labels, replayed by itself): {maps:.1} µs/step — the share of a step that every mode pays to write every output"
        );
    }
}

/// The bound of any step (`bound` µs: the empty replay's `launch_us` and the floor's bytes at
/// `bandwidth`), and the most a mode could gain over the best full rebuild.
fn bound_line(
    bound: f64,
    launch_us: f64,
    bandwidth: f64,
    f: &QuotientFigures,
    full: &FullRebuilds,
    out: &mut String,
) {
    let _ = writeln!(
        out,
        "\nbound of any step on this shape: {bound:.1} µs/step — the empty replay ({launch_us:.1} µs) and {:.1} MB (every support and offset read once, every output written once) at {:.2} TB/s, from device memory (with L2 warm a step may beat it){}",
        f.floor_bytes as f64 / 1e6,
        bandwidth / 1e12,
        full.best
            .as_ref()
            .map_or(String::new(), |(mode, d, _)| format!(
                "; from device memory no mode can be more than {:.2}x faster than the best full rebuild ({mode})",
                d / bound
            ))
    );
}

/// The quotient against the best full rebuild warm, with L2 flushed and with the device busy;
/// the latter two into `summary`.
fn speedup_lines(
    g: &Gpu,
    f: &QuotientFigures,
    full: &FullRebuilds,
    timers: (&L2Flush, &Busy),
    summary: &mut Summary,
    out: &mut String,
) -> archipelago::Result<()> {
    if let Some((mode, d, w)) = &full.best {
        let _ = writeln!(
            out,
            "\nvs best full rebuild ({mode}): device {:.2}x, wall {:.2}x; auto picks {}",
            d / f.timed.device_us,
            w / f.timed.wall_us,
            auto_pick(f.timed.wall_us, mode, *w)
        );
    }
    if let Some((mode, d)) = &full.best_cold {
        summary.cold = Some((mode.clone(), *d, f.timed.cold_us));
        let _ = writeln!(
            out,
            "\nwith L2 flushed before each step ({:.0} MB written over, not timed; every mode's rows, tables and outputs then come from device memory, as after the rest of a simulation's step): vs best full rebuild ({mode}) device {:.2}x",
            timers.0.bytes() as f64 / 1e6,
            d / f.timed.cold_us
        );
    }
    if let Some((mode, d)) = &full.best_busy {
        summary.busy = Some((mode.clone(), *d, f.timed.busy_us));
        let _ = writeln!(
            out,
            "\nwith the device kept busy before each step (the step enqueued before the device reaches it, as when a simulation's host runs ahead: no host launch latency; L2 warm; an empty replay {:.1} µs so): vs best full rebuild ({mode}) device {:.2}x",
            timers.1.empty_graph_us(g, 50)?,
            d / f.timed.busy_us
        );
    }
    if let Some((mode, r, d)) = &full.best_read {
        let q = &f.timed;
        let _ = writeln!(
            out,
            "\nwith a reader of every output after each step (one kernel reading the {:.1} MB of outputs once, as a solver reading the islands right after the step; what it adds to the step in brackets: the full rebuilds store their maps evict-first, the quotient plainly): best full rebuild ({mode}) {r:.1} µs ({:+.1}), quotient {:.1} ({:+.1}): device {:.2}x",
            q.read_bytes as f64 / 1e6,
            r - d,
            q.read_us,
            q.read_us - q.device_us,
            r / q.read_us
        );
    }
    Ok(())
}

/// A step sequence's line of the summary table.
pub(super) fn sequence_line(seq: &Sequence, f: sequence::Figures) -> SequenceLine {
    let [reused, ..] = f.counts;
    let all = f.counts.iter().sum::<usize>().max(1);
    SequenceLine {
        label: seq.label.clone(),
        best: f.best(),
        quotient: f.quotient,
        quotient_off: f.quotient_off,
        auto: f
            .auto_wall()
            .zip(f.best_full_wall())
            .map(|(a, b)| (a / b.1, f.auto_quotient_steps)),
        auto_own: f.auto_wall().zip(f.auto_full_wall()).map(|(a, b)| a / b.1),
        auto_between: f.auto_between_ratio().map(|(_, r)| r),
        reused: reused as f64 / all as f64,
        toggles: (!f.policies.is_empty()).then(|| {
            let quotient_wall = f.wall.iter().find(|(w, _)| w == "quotient");
            let best_wall = f.best_full_wall();
            let default = PolicyFigures {
                label: sequence::default_eq_label(),
                device: f.quotient,
                wall: quotient_wall.map_or(f64::NAN, |w| w.1),
                direct: f.counts[3],
            };
            // In the table's order (static, dynamic, learned), whichever is the default.
            let order = sequence::eq_policies().map(|(label, _)| label);
            let mut policies: Vec<PolicyFigures> =
                std::iter::once(default).chain(f.policies).collect();
            policies.sort_by_key(|p| order.iter().position(|&l| l == p.label));
            Toggles {
                best_wall,
                policies,
            }
        }),
    }
}

/// Which mode the `auto` Engine keeps where the quotient's whole step takes `quotient_wall`
/// and the full rebuild `mode`'s `full_wall`: the Engine's own rule, the quotient only where
/// it is faster by the margin (`engine::auto_keeps_quotient`), not merely faster.
fn auto_pick(quotient_wall: f64, mode: &str, full_wall: f64) -> &str {
    if auto_keeps_quotient(quotient_wall, full_wall) {
        "quotient"
    } else {
        mode
    }
}

/// The summary table over every shape.
pub(in super::super) fn summary(rows: &[Summary]) -> String {
    let mut out = String::from(
        "### Summary: quotient vs the best full-rebuild GPU mode\n\n| shape | static rows / entries | best full (device µs) | quotient device µs | device speedup | best full wall µs | quotient wall µs | wall speedup | auto | quotient, every world unchanged (device µs) | best full ÷ that | bound of any step (device µs) | best full ÷ bound | L2 flushed before each step: best full, quotient (device µs) | speedup there | device busy before each step: best full, quotient (device µs) | speedup there |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in rows {
        let best = s
            .best
            .as_ref()
            .map_or("—".into(), |(m, d, _)| format!("{m} {d:.1}"));
        let (q, speed, bw, qw, wspeed, auto) = match (&s.best, s.quotient) {
            (Some((m, d, w)), Some((qd, qw))) => (
                format!("{qd:.1}"),
                format!("{:.2}x", d / qd),
                format!("{w:.1}"),
                format!("{qw:.1}"),
                format!("{:.2}x", w / qw),
                auto_pick(qw, m, *w).to_string(),
            ),
            (_, Some((qd, qw))) => (
                format!("{qd:.1}"),
                "—".into(),
                "—".into(),
                format!("{qw:.1}"),
                "—".into(),
                "quotient".into(),
            ),
            _ => (
                "failed".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
                "—".into(),
            ),
        };
        // A step time and the best full rebuild over it, as two cells.
        let over = |us: Option<f64>| match (us, &s.best) {
            (Some(u), Some((_, d, _))) => (format!("{u:.1}"), format!("{:.2}x", d / u)),
            (Some(u), None) => (format!("{u:.1}"), "—".into()),
            _ => ("—".into(), "—".into()),
        };
        // The floor of this quotient's step (every world unchanged; a step with any world
        // changed costs more), and the bound of any step (launch and bytes at full bandwidth):
        // over the latter, the most any mode could gain.
        let ((floor, ceiling), (bound, most)) = (over(s.unchanged), over(s.bound));
        let pair = |x: &Option<(String, f64, f64)>| {
            x.as_ref().map_or(("—".into(), "—".into()), |(m, d, q)| {
                (format!("{m} {d:.1}, {q:.1}"), format!("{:.2}x", d / q))
            })
        };
        let ((cold, cold_speed), (busy, busy_speed)) = (pair(&s.cold), pair(&s.busy));
        let _ = writeln!(
            out,
            "| {} | {:.1}% / {:.1}% | {best} | {q} | {speed} | {bw} | {qw} | {wspeed} | {auto} | {floor} | {ceiling} | {bound} | {most} | {cold} | {cold_speed} | {busy} | {busy_speed} |",
            s.shape,
            100.0 * s.static_rows,
            100.0 * s.static_entries
        );
    }
    // Without sequences (`--no-sequences`) neither sequence table.
    if rows.iter().all(|s| s.sequences.is_empty()) {
        return out;
    }
    out.push_str(
        "\n### Summary: step sequences, quotient (reuse on) vs the best full-rebuild GPU mode over the same steps\n\n| shape | static rows / entries | sequence | best full (device µs/step) | quotient, reuse off | quotient, reuse on | speedup (reuse on) | world-steps reused | auto Engine median wall / best full median wall (quotient steps) | auto Engine median wall / its own full mode's | the same between its trials |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for s in rows {
        for line in &s.sequences {
            let (label, q, reused) = (&line.label, line.quotient, line.reused);
            let (b, speed) = line.best.map_or(("—".into(), "—".into()), |(m, us)| {
                (format!("{m} {us:.1}"), format!("{:.2}x", us / q))
            });
            let _ = writeln!(
                out,
                "| {} | {:.1}% / {:.1}% | {label} | {b} | {:.1} | {q:.1} | {speed} | {:.1}% | {} | {} | {} |",
                s.shape,
                100.0 * s.static_rows,
                100.0 * s.static_entries,
                line.quotient_off,
                100.0 * reused,
                line.auto
                    .map_or("—".into(), |(r, n)| format!("{r:.3}x ({n})")),
                line.auto_own.map_or("—".into(), |r| format!("{r:.3}x")),
                line.auto_between.map_or("—".into(), |r| format!("{r:.3}x"))
            );
        }
    }
    toggle_summary(rows, &mut out);
    out
}

/// The toggling sequences' table: equalities static against dynamic and learned, by device
/// time and by wall time (where a static equality's switch costs a rebuild on the host).
fn toggle_summary(rows: &[Summary], out: &mut String) {
    let lines: Vec<(&Summary, &SequenceLine, &Toggles)> = rows
        .iter()
        .flat_map(|s| {
            let toggling = s
                .sequences
                .iter()
                .filter_map(|l| Some((l, l.toggles.as_ref()?)));
            toggling.map(move |(l, t)| (s, l, t))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    out.push_str(
        "\n### Summary: toggle-heavy worlds, equalities static (a switch rebuilds the world's quotient on the host) against dynamic and learned (dynamic once switched twice), quotient with reuse on\n\n",
    );
    let _ = writeln!(
        out,
        "The default policy: {}.\n",
        sequence::default_eq_label()
    );
    out.push_str(
        "| shape | sequence | best full (device µs/step) | device µs/step: static / dynamic / learned | best full (median wall µs) | median wall µs: static / dynamic / learned | fastest wall |\n|---|---|---|---|---|---|---|\n",
    );
    for (
        s,
        line,
        Toggles {
            best_wall,
            policies,
        },
    ) in lines
    {
        let best = line
            .best
            .map_or("—".into(), |(m, us)| format!("{m} {us:.1}"));
        let join = |f: fn(&PolicyFigures) -> f64, digits: usize| {
            let v: Vec<String> = policies
                .iter()
                .map(|p| format!("{:.digits$}", f(p)))
                .collect();
            v.join(" / ")
        };
        let mut walls: Vec<(&str, f64)> = policies.iter().map(|p| (p.label, p.wall)).collect();
        if let Some((m, us)) = best_wall {
            walls.push((m.as_str(), *us));
        }
        let fastest = walls
            .iter()
            .filter(|w| w.1.is_finite())
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("—", |w| w.0);
        let _ = writeln!(
            out,
            "| {} | {} | {best} | {} | {} | {} | {fastest} |",
            s.shape,
            line.label,
            join(|p| p.device, 1),
            best_wall
                .as_ref()
                .map_or("—".into(), |(m, us)| format!("{m} {us:.0}")),
            join(|p| p.wall, 0)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_sets_the_best_full_rebuild_against_the_quotient_floor_and_the_bound() {
        let row = Summary {
            shape: "q:mechanism-90%".into(),
            static_rows: 0.906,
            static_entries: 0.906,
            best: Some(("block".into(), 16.0, 1700.0)),
            quotient: Some((16.0, 1800.0)),
            unchanged: Some(8.0),
            bound: Some(5.0),
            cold: Some(("warp".into(), 20.0, 12.5)),
            busy: Some(("block".into(), 14.0, 4.0)),
            sequences: Vec::new(),
        };
        let text = summary(&[row]);
        let line = text
            .lines()
            .find(|l| l.starts_with("| q:mechanism-90%"))
            .expect("a row for the shape");
        assert!(
            line.ends_with(
                "| block | 8.0 | 2.00x | 5.0 | 3.20x | warp 20.0, 12.5 | 1.60x | block 14.0, 4.0 | 3.50x |"
            ),
            "{line}"
        );
        let header = text.lines().nth(2).expect("a header");
        assert_eq!(header.matches('|').count(), line.matches('|').count());
        assert!(
            !text.contains("toggle-heavy"),
            "no toggling sequence, no table"
        );
        assert!(
            !text.contains("Summary: step sequences"),
            "no sequence (--no-sequences), no sequence table"
        );
    }

    #[test]
    fn auto_is_said_to_pick_the_quotient_only_past_its_margin() {
        let row = |quotient_wall: f64| Summary {
            shape: "q:hammock".into(),
            static_rows: 0.97,
            static_entries: 0.99,
            best: Some(("warp".into(), 63.0, 1000.0)),
            quotient: Some((21.0, quotient_wall)),
            unchanged: None,
            bound: None,
            cold: None,
            busy: None,
            sequences: Vec::new(),
        };
        let auto_cell = |quotient_wall: f64| {
            let text = summary(&[row(quotient_wall)]);
            let line = text
                .lines()
                .find(|l| l.starts_with("| q:hammock"))
                .expect("a row for the shape")
                .to_string();
            line.split(" | ").nth(8).expect("the auto cell").to_string()
        };
        // 1.02x faster by wall: the Engine keeps the full rebuild (3 % margin).
        assert_eq!(auto_cell(980.0), "warp");
        // 1.05x: the quotient.
        assert_eq!(auto_cell(952.0), "quotient");
        assert_eq!(auto_pick(980.0, "warp", 1000.0), "warp");
        assert_eq!(auto_pick(952.0, "warp", 1000.0), "quotient");
    }

    #[test]
    fn the_toggle_table_names_the_fastest_wall_among_the_policies_and_the_best_full_mode() {
        let line = |label: &str, walls: [f64; 3], best: f64| SequenceLine {
            label: label.into(),
            best: Some((Mode::Block, 30.0)),
            quotient: 20.0,
            quotient_off: 25.0,
            reused: 0.0,
            auto: Some((1.02, 4)),
            auto_own: Some(1.01),
            auto_between: Some(0.99),
            toggles: Some(Toggles {
                best_wall: Some(("block".into(), best)),
                policies: [
                    "equalities static",
                    "equalities dynamic",
                    "equalities learned",
                ]
                .into_iter()
                .zip(walls)
                .map(|(label, wall)| PolicyFigures {
                    label,
                    device: 20.0,
                    wall,
                    direct: 0,
                })
                .collect(),
            }),
        };
        let row = Summary {
            shape: "q:cloth-99%".into(),
            static_rows: 0.99,
            static_entries: 0.99,
            best: None,
            quotient: None,
            unchanged: None,
            bound: None,
            cold: None,
            busy: None,
            sequences: vec![
                line("ten", [900.0, 500.0, 400.0], 450.0),
                line("all", [9000.0, 500.0, 600.0], 450.0),
            ],
        };
        let text = summary(&[row]);
        // The sequence table: auto against the best full rebuild, its own, and its own between
        // its trials; as many cells as its header.
        let mut sequences = text
            .lines()
            .skip_while(|l| !l.contains("Summary: step sequences"));
        let header = sequences
            .find(|l| l.starts_with("| shape"))
            .expect("a header");
        let first = sequences
            .find(|l| l.starts_with("| q:cloth-99% | "))
            .expect("a row");
        assert!(
            first.ends_with("| 1.020x (4) | 1.010x | 0.990x |"),
            "{first}"
        );
        assert_eq!(header.matches('|').count(), first.matches('|').count());
        let table = text.lines().skip_while(|l| !l.contains("toggle-heavy"));
        let rows: Vec<&str> = table
            .filter(|l| l.starts_with("| q:cloth-99% | "))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(
            rows[0].ends_with("| 900 / 500 / 400 | equalities learned |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].ends_with("| block 450 | 9000 / 500 / 600 | block |"),
            "{}",
            rows[1]
        );
        let mut table = text.lines().skip_while(|l| !l.contains("toggle-heavy"));
        assert!(
            table.any(|l| l == "The default policy: equalities learned."),
            "{text}"
        );
        let header = table.find(|l| l.starts_with("| shape")).expect("a header");
        assert_eq!(header.matches('|').count(), rows[0].matches('|').count());
    }
}
