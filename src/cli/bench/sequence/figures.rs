//! What a run over a sequence measured ([`Figures`]), and the report it writes: the markdown
//! tables, the replays again, the phases, and the auto Engine against the best full rebuild.

use std::fmt::Write as _;

use archipelago::gpu::Mode;

use super::steps::{Phase, Sequence};

/// Mean device time per step of every contender over a sequence.
pub(in crate::cli::bench) struct Figures {
    /// Per full-rebuild mode: mean device µs per step, or why it could not run.
    pub full: Vec<(Mode, Result<f64, String>)>,
    /// The quotient with reuse: mean device µs per step.
    pub quotient: f64,
    /// The quotient without reuse (every world checked and solved): mean device µs per step.
    pub quotient_off: f64,
    /// Per full-rebuild mode and the quotient without reuse (by name), the same steps
    /// replayed again: [`Again`].
    pub again: Vec<(String, Again)>,
    /// World-steps the quotient reused, replayed, masked and solved directly (timed steps).
    pub counts: [usize; 4],
    /// Of the world-steps reused, those whose row-level outputs were still in place (no copy).
    pub in_place: usize,
    /// Of the world-steps not reused, those whose partition stayed (row-level outputs only).
    pub rows_only: usize,
    /// Of the world-steps not reused, those mapped from their quotient's nodes.
    pub by_nodes: usize,
    /// Timed steps on which the quotient with reuse took a warp a replayed world, which has no
    /// reuse check (`QuotientSolver::reuse_active` false).
    pub warp_steps: usize,
    /// The quotient with reuse and the tree-level maps only (node-level maps off), when the
    /// model allows node-level maps: mean device µs per step.
    pub quotient_trees: Option<f64>,
    /// The quotient with reuse under the sequence's other policies ([`Sequence::policies`]).
    pub policies: Vec<PolicyFigures>,
    /// A sleeping sequence's figures by [`Phase`] (empty for other sequences).
    pub by_phase: Vec<PhaseFigures>,
    /// Graphs the quotient captured over the timed steps, with reuse off (its replays again
    /// included) and on (`QuotientSolver::captures`): each at the download of a step whose
    /// launch went directly (a new launch shape), while the device ran it.
    pub captures: [u64; 2],
    /// Whether every contender equalled the CPU at every step.
    pub ok: bool,
    /// The first mismatch, if any.
    pub mismatch: Option<String>,
    /// Median wall µs per whole step (upload, replay, download) of every contender, the
    /// quotient's with reuse on, and of an `auto` Engine stepping the same sequence.
    pub wall: Vec<(String, f64)>,
    /// The `auto` Engine's mean wall µs per step, its trials and its one-time choice of a
    /// full-rebuild mode included.
    pub auto_mean: f64,
    /// Steps the `auto` Engine ran the quotient.
    pub auto_quotient_steps: usize,
    /// The full-rebuild mode the `auto` Engine chose for its other steps.
    pub auto_full: Option<Mode>,
    /// Over the timed steps outside the `auto` Engine's trials (what a long run is made of:
    /// a trial is 10 steps of every 1,024, but 9 of a 32-step sequence's 31): their count, the
    /// Engine's median wall µs and that of the full rebuild it ran, over the same steps.
    pub auto_between: Option<(usize, f64, f64)>,
}

/// A sequence step replayed again, mean device µs per step of each replay. A step's first
/// replay follows its upload and the host's work since the last replay (the device idle
/// meanwhile) and finds in L2 whatever the other contenders left there. Once it is downloaded
/// and checked, the step is replayed again: after the check, with the device idle as before but
/// the step's data in L2; then after an L2 flush (`gpu::graph::L2Flush`), with the device busy
/// until the replay and none of the step's data in L2. Against a steady step (replays with
/// little idle time between them, the data in L2), the first tells what the idle device costs
/// and the second what the L2 does.
pub(in crate::cli::bench) struct Again {
    pub after_check: f64,
    pub flushed: f64,
}

/// A sleeping sequence's steps of one [`Phase`]: their count, and the mean device µs a step of
/// every full-rebuild mode that ran and of the quotient with reuse off and on.
pub(in crate::cli::bench) struct PhaseFigures {
    pub phase: Phase,
    pub steps: usize,
    pub full: Vec<(Mode, f64)>,
    pub quotient_off: f64,
    pub quotient: f64,
}

/// A quotient contender with reuse on and another classification policy.
pub(in crate::cli::bench) struct PolicyFigures {
    pub label: &'static str,
    /// Mean device µs per step.
    pub device: f64,
    /// Median wall µs per whole step (its host half, with the rebuilds it makes, included).
    pub wall: f64,
    /// World-steps it solved directly (its device found a quotient stale).
    pub direct: usize,
}

impl Figures {
    /// The fastest full-rebuild mode over the sequence.
    pub fn best(&self) -> Option<(Mode, f64)> {
        self.full
            .iter()
            .filter_map(|(m, r)| r.as_ref().ok().map(|&us| (*m, us)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The report's lines for this sequence.
    pub fn report(&self, seq: &Sequence, out: &mut String) {
        let timed = seq.len.saturating_sub(1);
        self.device_table(seq, timed, out);
        self.phase_table(out);
        if !self.again.is_empty() {
            out.push_str("\n(again: once the step is downloaded and checked, its batch replayed once more, then once more after an L2 flush; neither checked nor in the wall times; with reuse on a replay again would reuse every world, so those rows have none)\n");
        }
        self.counts_lines(out);
        self.walls_line(timed, out);
    }

    /// The sequence's header and its table of device µs a step, mode by mode.
    fn device_table(&self, seq: &Sequence, timed: usize, out: &mut String) {
        let _ = writeln!(
            out,
            "\nstep sequence: {}; mean device µs per step over the {timed} steps after the first, each stepped once in order (upload, one timed graph replay, download, compared with the CPU)\n",
            seq.label
        );
        out.push_str("| mode | device µs/step (sequence) | again after its check (device idle) | again after an L2 flush (device busy) |\n|---|---|---|---|\n");
        let again = |who: &str| {
            self.again
                .iter()
                .find(|(w, _)| w == who)
                .map_or("— | —".to_string(), |(_, a)| {
                    format!("{:.1} | {:.1}", a.after_check, a.flushed)
                })
        };
        for (m, r) in &self.full {
            match r {
                Ok(us) => writeln!(out, "| {m} | {us:.1} | {} |", again(m.name())),
                Err(e) => writeln!(out, "| {m} | {e} | — | — |"),
            }
            .expect("writing to a String");
        }
        let _ = writeln!(
            out,
            "| quotient (reuse off) | {:.1} | {} |\n| quotient (reuse on) | {:.1} | — | — |",
            self.quotient_off,
            again("quotient (reuse off)"),
            self.quotient
        );
        if let Some(us) = self.quotient_trees {
            let _ = writeln!(
                out,
                "| quotient (reuse on, tree-level maps only) | {us:.1} | — | — |"
            );
        }
        for p in &self.policies {
            let _ = writeln!(
                out,
                "| quotient (reuse on, {}) | {:.1} | — | — |",
                p.label, p.device
            );
        }
    }

    /// Where the sequence has its sleepers' turn: the device µs a step by phase.
    fn phase_table(&self, out: &mut String) {
        if self.by_phase.is_empty() {
            return;
        }
        out.push_str(
            "\nby phase of the sleepers' turn, mean device µs a step:\n\n| phase | steps |",
        );
        for (m, _) in &self.by_phase[0].full {
            let _ = write!(out, " {m} |");
        }
        out.push_str(" quotient (reuse off) | quotient (reuse on) |\n|---|---|");
        out.push_str(&"---|".repeat(self.by_phase[0].full.len() + 2));
        out.push('\n');
        for p in &self.by_phase {
            let _ = write!(out, "| {} | {} |", p.phase.label(), p.steps);
            for (_, us) in &p.full {
                let _ = write!(out, " {us:.1} |");
            }
            let _ = writeln!(out, " {:.1} | {:.1} |", p.quotient_off, p.quotient);
        }
    }

    /// The quotient's world-steps, graph captures, kernels and directly solved worlds, the
    /// first mismatch, and the quotient against the best full rebuild.
    fn counts_lines(&self, out: &mut String) {
        let [reused, replayed, masked, direct] = self.counts;
        let all = (reused + replayed + masked + direct).max(1);
        let _ = writeln!(
            out,
            "\nquotient (reuse on) world-steps: {reused} reused ({:.1}%; {} with their row-level outputs in place), {replayed} replayed, {masked} masked, {direct} solved directly; of the {} not reused, {} mapped from their nodes, {} kept their partition (row-level outputs only); every step equals the CPU: {}",
            100.0 * reused as f64 / all as f64,
            self.in_place,
            all - reused,
            self.by_nodes,
            self.rows_only,
            if self.ok { "yes" } else { "NO" }
        );
        let [off, on] = self.captures;
        let included = match self.again.is_empty() {
            true => "",
            false => ", its replays again included",
        };
        let _ = writeln!(
            out,
            "\ngraphs captured over the timed steps: quotient (reuse off) {off}{included}; quotient (reuse on) {on}"
        );
        if self.warp_steps > 0 {
            let _ = writeln!(
                out,
                "\nquotient (reuse on): a warp a replayed world on {} of the timed steps, where only the partition check applies (that kernel has no reuse check of rows)",
                self.warp_steps
            );
        }
        for p in &self.policies {
            let _ = writeln!(
                out,
                "\nquotient (reuse on, {}): {} world-steps solved directly",
                p.label, p.direct
            );
        }
        if let Some(m) = &self.mismatch {
            let _ = writeln!(out, "\nfirst mismatch: {m}");
        }
        if let Some((mode, us)) = self.best() {
            let _ = writeln!(
                out,
                "\nsequence vs best full rebuild ({mode}): {:.2}x",
                us / self.quotient
            );
        }
    }

    /// Every contender's median wall µs a step, and the `auto` Engine's against the best and
    /// its own full rebuild.
    fn walls_line(&self, timed: usize, out: &mut String) {
        out.push_str("\nwall µs per whole step (host half, upload, replay, download), median over the same steps: ");
        let walls: Vec<String> = self
            .wall
            .iter()
            .map(|(who, us)| format!("{who} {us:.0}"))
            .collect();
        out.push_str(&walls.join(", "));
        if let (Some(auto), Some(best)) = (self.auto_wall(), self.best_full_wall()) {
            let _ = writeln!(
                out,
                "; the auto Engine ran the quotient on {} of {timed} steps and took {:.3}x the best full rebuild's median wall time ({}){}{}; its mean, with its trials and its one-time timing of every full-rebuild mode, {:.0}",
                self.auto_quotient_steps,
                auto / best.1,
                best.0,
                self.auto_full_wall()
                    .map_or(String::new(), |(m, us)| format!(
                        " and {:.3}x that of the full rebuild it ran ({m})",
                        auto / us
                    )),
                self.auto_between_ratio()
                    .map_or(String::new(), |(n, r)| format!(
                        ", {r:.3}x that one's over the {n} steps between its trials"
                    )),
                self.auto_mean
            );
        } else {
            out.push('\n');
        }
    }

    /// The `auto` Engine's median wall µs per step (over the same steps as every contender's).
    pub fn auto_wall(&self) -> Option<f64> {
        self.wall.iter().find(|(w, _)| w == "auto").map(|w| w.1)
    }

    /// The full-rebuild mode the `auto` Engine ran, and its median wall time as a contender: the
    /// reference that is not the smallest of several noisy medians (walls are host-bound, so
    /// the full modes' differ by noise more than by their device times).
    pub fn auto_full_wall(&self) -> Option<(Mode, f64)> {
        let mode = self.auto_full?;
        let wall = self.wall.iter().find(|(w, _)| w == mode.name())?;
        Some((mode, wall.1))
    }

    /// Over the steps between the `auto` Engine's trials ([`Figures::auto_between`]): their
    /// count and the Engine's median wall over that of the full rebuild it ran.
    pub fn auto_between_ratio(&self) -> Option<(usize, f64)> {
        self.auto_between.map(|(n, auto, full)| (n, auto / full))
    }

    /// The full-rebuild mode with the lowest median wall time, and that time.
    pub fn best_full_wall(&self) -> Option<(String, f64)> {
        self.wall
            .iter()
            .filter(|(w, _)| Mode::ALL.iter().any(|m| m.name() == w))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use archipelago::{Batch, Model};

    #[test]
    fn auto_is_compared_with_the_luckiest_full_mode_and_with_its_own() {
        let model = Model::from_dofnum(&[1; 2]).unwrap();
        let seq = Sequence::synthetic(model, vec![Batch::default()], 0.0);
        let figures = Figures {
            full: vec![(Mode::Labelprop, Ok(20.0)), (Mode::Tiled, Ok(25.0))],
            quotient: 30.0,
            quotient_off: 31.0,
            again: vec![(
                "tiled".into(),
                Again {
                    after_check: 21.0,
                    flushed: 22.5,
                },
            )],
            counts: [0, 10, 0, 0],
            in_place: 0,
            rows_only: 0,
            by_nodes: 0,
            warp_steps: 0,
            quotient_trees: None,
            policies: Vec::new(),
            by_phase: Vec::new(),
            captures: [1, 0],
            ok: true,
            mismatch: None,
            wall: vec![
                ("labelprop".into(), 2600.0),
                ("tiled".into(), 2340.0),
                ("quotient".into(), 2800.0),
                ("auto".into(), 2574.0),
            ],
            auto_mean: 3000.0,
            auto_quotient_steps: 4,
            auto_full: Some(Mode::Labelprop),
            auto_between: Some((22, 2550.0, 2500.0)),
        };
        assert_eq!(figures.best_full_wall(), Some(("tiled".into(), 2340.0)));
        assert_eq!(figures.auto_full_wall(), Some((Mode::Labelprop, 2600.0)));
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(
            out.contains("took 1.100x the best full rebuild's median wall time (tiled) and 0.990x that of the full rebuild it ran (labelprop), 1.020x that one's over the 22 steps between its trials;"),
            "{out}"
        );
        assert!(!out.contains("a warp a replayed world"), "{out}");
        assert!(
            out.contains("graphs captured over the timed steps: quotient (reuse off) 1, its replays again included; quotient (reuse on) 0"),
            "{out}"
        );
        // The replays again, where a contender has them.
        assert!(out.contains("| tiled | 25.0 | 21.0 | 22.5 |"), "{out}");
        assert!(out.contains("| labelprop | 20.0 | — | — |"), "{out}");
        assert!(
            out.contains("| quotient (reuse on) | 30.0 | — | — |"),
            "{out}"
        );
        let figures = Figures {
            warp_steps: 9,
            ..figures
        };
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(
            out.contains(
                "a warp a replayed world on 9 of the timed steps, where only the partition check"
            ),
            "{out}"
        );
        // Without replays again (`--no-again`), neither their columns nor their notes.
        let figures = Figures {
            again: Vec::new(),
            ..figures
        };
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(out.contains("| tiled | 25.0 | — | — |"), "{out}");
        assert!(!out.contains("(again:"), "{out}");
        assert!(
            out.contains("graphs captured over the timed steps: quotient (reuse off) 1; quotient (reuse on) 0"),
            "{out}"
        );
        // A full mode that was not a contender has no wall of its own to compare with.
        let figures = Figures {
            auto_full: Some(Mode::Block),
            ..figures
        };
        assert_eq!(figures.auto_full_wall(), None);
        // A sleeping sequence's figures by phase: a row a phase, a column a contender.
        let figures = Figures {
            by_phase: Phase::ALL
                .into_iter()
                .map(|phase| PhaseFigures {
                    phase,
                    steps: 8,
                    full: vec![(Mode::Warp, 50.0)],
                    quotient_off: 30.0,
                    quotient: if phase == Phase::FallsAsleep {
                        45.0
                    } else {
                        31.0
                    },
                })
                .collect(),
            ..figures
        };
        let mut out = String::new();
        figures.report(&seq, &mut out);
        assert!(
            out.contains("| phase | steps | warp | quotient (reuse off) | quotient (reuse on) |\n|---|---|---|---|---|\n| awake | 8 | 50.0 | 30.0 | 31.0 |\n| falling asleep | 8 | 50.0 | 30.0 | 45.0 |"),
            "{out}"
        );
    }
}
