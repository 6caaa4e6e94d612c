//! The timing loop on the GPU: every contender steps a sequence in lockstep, each step timed,
//! checked against the CPU and replayed again, into [`Figures`].

use std::time::Instant;

use archipelago::gpu::graph::{L2Flush, LaunchTimer};
use archipelago::gpu::quotient::QuotientSolver;
use archipelago::gpu::{Gpu, Mode, PinnedBatch, PinnedIslands, Solver};
use archipelago::quotient::Policy;
use archipelago::{Engine, Input, Islands, Options, cpu};
use invalidation::Events;

use super::figures::{Again, Figures, PhaseFigures, PolicyFigures};
use super::steps::{Phase, Sequence};

/// A full-rebuild mode in a sequence: its solver (or why it could not be made), the device µs
/// of each step's first replay and of its replays again ([`Again`]).
type Contender = (Mode, Result<Solver, String>, Vec<f64>, Vec<[f64; 2]>);

/// Steps `seq` through every mode in `modes`, the quotient under `policy` (reuse off, then on)
/// and an `auto` Engine under it, in lockstep, and under the default policy the sequence's other
/// policies ([`Sequence::policies`]). With `again`, each step is replayed again after its check
/// ([`Again`]), the second time after `again` evicts L2; without, no step is.
pub(in crate::cli::bench) fn run(
    g: &Gpu,
    seq: &mut Sequence,
    modes: &[Mode],
    policy: &Policy,
    again: Option<&L2Flush>,
) -> archipelago::Result<Figures> {
    let cap = seq.capacity;
    let model = seq.model.clone();
    let mut full: Vec<Contender> = modes
        .iter()
        .map(|&m| {
            let s = Solver::new(g, m, cap, &model).map_err(|e| e.to_string());
            (m, s, Vec::new(), Vec::new())
        })
        .collect();
    let mut q = QuotientSolver::new(g, cap, &model, policy.clone())?;
    q.set_reuse(true)?;
    let mut q_off = QuotientSolver::new(g, cap, &model, policy.clone())?;
    q_off.set_reuse(false)?;
    let (mut quotient_off, mut quotient_off_again) = (Vec::new(), Vec::new());
    // The quotient with reuse on and the node-level maps off, where the model has them.
    let mut q_trees = if q.node_maps() {
        let mut t = QuotientSolver::new(g, cap, &model, policy.clone())?;
        t.set_node_maps(false);
        Some(t)
    } else {
        None
    };
    let mut quotient_trees = Vec::new();
    // The sequence's other policies, reuse on: (label, solver, device µs, walls, direct).
    let mut policies = Vec::new();
    let others = match *policy == Policy::default() {
        true => seq.policies(),
        false => Vec::new(),
    };
    for (label, other) in others {
        let mut s = QuotientSolver::new(g, cap, &model, other)?;
        s.set_reuse(true)?;
        policies.push((label, s, Vec::new(), Vec::new(), 0));
    }
    let options = Options {
        mode: archipelago::Mode::Auto,
        policy: policy.clone(),
        ..Options::default()
    };
    let mut auto = Engine::with_gpu(g, &model, cap, options)?;
    let (mut auto_quotient_steps, mut auto_wall, mut auto_trial) = (0, Vec::new(), Vec::new());
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); full.len() + 1];
    let mut reference_mode = cpu::by_name("dsu").expect("the CPU dsu exists");
    // Page-locked rows and outputs, as a user who wants the fastest walls would have them.
    let (mut batch, mut events) = (PinnedBatch::new(g, &cap), Events::new());
    let (mut reference, mut out) = (Islands::default(), PinnedIslands::new(g, &cap));
    let (mut quotient, mut counts) = (Vec::new(), [0usize; 4]);
    let (mut in_place, mut rows_only, mut by_nodes, mut warp_steps) = (0, 0, 0, 0);
    let (mut mismatch, mut phases) = (None, Vec::new());
    let mut captured_first = [0; 2];
    // Device times read after each step's own wait, so that every contender's wall is that of
    // a step as the `auto` Engine takes it (its copies enqueued while the device runs).
    let timer = LaunchTimer::new(g)?;
    for k in 0..seq.len {
        batch.build(|b| seq.step(k, b, &mut events));
        let input = Input::new(&model, &batch)?;
        reference_mode.solve(&input, &mut reference)?;
        let mut check = |who: &str, out: &Islands| {
            if mismatch.is_none()
                && let Some(m) = out.first_mismatch(&reference)
            {
                mismatch = Some(format!("{who} at step {k}: {m:?}"));
            }
        };
        // Whoever runs first after the CPU reference finds the input where it left it: on all
        // 19 sequences of sessions 29 and 30 (4,096 and 8,192 worlds) the first full mode,
        // always `dsu`, had the lowest median wall of every mode, 30-70 µs below modes faster
        // on the device. So the full modes take turns at the front, and `auto` runs first on
        // odd steps and last on even ones.
        let auto_first = k % 2 == 1;
        let mut auto_us = None;
        if auto_first {
            auto_us = Some(auto_once(&mut auto, &input, &events, &mut check)?);
        }
        let nfull = full.len();
        for j in 0..nfull {
            let i = (j + k) % nfull;
            let (m, solver, times, replays) = &mut full[i];
            let Ok(s) = solver else { continue };
            let t = Instant::now();
            s.upload(&input)?;
            timer.around(|| s.replay())?;
            out.fill(&input, |o| s.download(&input, o))?;
            let wall = t.elapsed().as_secs_f64() * 1e6;
            let us = timer.elapsed_us()?;
            check(m.name(), &out);
            if k > 0 {
                times.push(us);
                walls[i].push(wall);
                if let Some(flush) = again {
                    replays.push(replayed_again(
                        s,
                        flush,
                        Solver::time_replays,
                        Solver::replay,
                    )?);
                }
            }
        }
        let (us, _) = replay_once(&mut q_off, &input, &events, &mut out, &timer)?;
        check("quotient (reuse off)", &out);
        if k > 0 {
            quotient_off.push(us);
            if let Some(flush) = again {
                quotient_off_again.push(replayed_again(
                    &mut q_off,
                    flush,
                    QuotientSolver::time_replays,
                    QuotientSolver::replay,
                )?);
            }
        }
        // The tree-level maps run before the quotient on even steps and after it on odd ones,
        // so that neither always finds the caches as the other left them.
        let mut trees = |out: &mut PinnedIslands, check: &mut dyn FnMut(&str, &Islands)| {
            if let Some(t) = &mut q_trees {
                let (us, _) = replay_once(t, &input, &events, out, &timer)?;
                check("quotient (tree-level maps)", out);
                if k > 0 {
                    quotient_trees.push(us);
                }
            }
            archipelago::Result::Ok(())
        };
        if k % 2 == 0 {
            trees(&mut out, &mut check)?;
        }
        let t = Instant::now();
        let (us, by_warps) = replay_once(&mut q, &input, &events, &mut out, &timer)?;
        let wall = t.elapsed().as_secs_f64() * 1e6;
        check("quotient", &out);
        if k % 2 == 1 {
            trees(&mut out, &mut check)?;
        }
        for (label, s, times, walls, direct) in &mut policies {
            let t = Instant::now();
            let (us, _) = replay_once(s, &input, &events, &mut out, &timer)?;
            let wall = t.elapsed().as_secs_f64() * 1e6;
            check(label, &out);
            if k > 0 {
                times.push(us);
                walls.push(wall);
                *direct += s.last_counts().direct;
            }
        }
        let auto_us = match auto_us {
            Some(us) => us,
            None => auto_once(&mut auto, &input, &events, &mut check)?,
        };
        if k == 0 {
            captured_first = [q_off.captures(), q.captures()];
        }
        if k > 0 {
            phases.extend(seq.phase(k));
            walls[full.len()].push(wall);
            auto_wall.push(auto_us);
            auto_trial.push(auto.auto_in_trial());
            auto_quotient_steps += usize::from(auto.last_mode() == archipelago::Mode::Quotient);
            quotient.push(us);
            let c = q.last_counts();
            in_place += c.in_place;
            rows_only += c.rows_only;
            by_nodes += c.by_nodes;
            warp_steps += usize::from(by_warps);
            for (n, v) in counts
                .iter_mut()
                .zip([c.reused, c.replayed, c.masked, c.direct])
            {
                *n += v;
            }
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let median = |v: &[f64]| archipelago::gpu::graph::median_us(v.to_vec());
    let again_of = |v: &[[f64; 2]]| Again {
        after_check: v.iter().map(|a| a[0]).sum::<f64>() / v.len().max(1) as f64,
        flushed: v.iter().map(|a| a[1]).sum::<f64>() / v.len().max(1) as f64,
    };
    // Only the contenders replayed again (none without `again`).
    let replayed_again: Vec<(String, Again)> = full
        .iter()
        .filter(|(_, s, _, a)| s.is_ok() && !a.is_empty())
        .map(|(m, _, _, a)| (m.name().to_string(), again_of(a)))
        .chain(
            (!quotient_off_again.is_empty())
                .then(|| ("quotient (reuse off)".into(), again_of(&quotient_off_again))),
        )
        .collect();
    let mut wall: Vec<(String, f64)> = full
        .iter()
        .zip(&walls)
        .filter(|((_, s, _, _), _)| s.is_ok())
        .map(|((m, _, _, _), w)| (m.name().to_string(), median(w)))
        .collect();
    wall.push(("quotient".into(), median(&walls[full.len()])));
    let policies: Vec<PolicyFigures> = policies
        .into_iter()
        .map(|(label, _, times, walls, direct)| PolicyFigures {
            label,
            device: mean(&times),
            wall: median(&walls),
            direct,
        })
        .collect();
    for p in &policies {
        wall.push((format!("quotient ({})", p.label), p.wall));
    }
    wall.push(("auto".into(), median(&auto_wall)));
    let auto_mean = mean(&auto_wall);
    // The full rebuild the Engine ran, over the steps it ran between trials (walls of the
    // contenders that ran: the same timed steps as the Engine's).
    let auto_full = auto.gpu_full_mode();
    let between = |w: &[f64]| -> Vec<f64> {
        w.iter()
            .zip(&auto_trial)
            .filter(|&(_, &trial)| !trial)
            .map(|(&us, _)| us)
            .collect()
    };
    let own = full
        .iter()
        .position(|(m, s, _, _)| s.is_ok() && Some(*m) == auto_full);
    let auto_between = own.and_then(|i| {
        let (a, f) = (between(&auto_wall), between(&walls[i]));
        (!a.is_empty() && a.len() == f.len()).then(|| (a.len(), median(&a), median(&f)))
    });
    // A sleeping sequence's timed steps by phase (each contender's times are of the same steps).
    let of_phase = |times: &[f64], phase: Phase| -> Vec<f64> {
        let steps = times.iter().zip(&phases).filter(|&(_, &p)| p == phase);
        steps.map(|(&us, _)| us).collect()
    };
    let by_phase = match phases.is_empty() {
        true => Vec::new(),
        false => Phase::ALL
            .into_iter()
            .map(|phase| PhaseFigures {
                phase,
                steps: phases.iter().filter(|&&p| p == phase).count(),
                full: full
                    .iter()
                    .filter(|(_, s, _, _)| s.is_ok())
                    .map(|(m, _, t, _)| (*m, mean(&of_phase(t, phase))))
                    .collect(),
                quotient_off: mean(&of_phase(&quotient_off, phase)),
                quotient: mean(&of_phase(&quotient, phase)),
            })
            .collect(),
    };
    Ok(Figures {
        full: full
            .into_iter()
            .map(|(m, s, t, _)| (m, s.map(|_| mean(&t))))
            .collect(),
        quotient: mean(&quotient),
        quotient_off: mean(&quotient_off),
        again: replayed_again,
        counts,
        in_place,
        rows_only,
        by_nodes,
        warp_steps,
        quotient_trees: q_trees.is_some().then(|| mean(&quotient_trees)),
        policies,
        by_phase,
        captures: [
            q_off.captures() - captured_first[0],
            q.captures() - captured_first[1],
        ],
        ok: mismatch.is_none(),
        mismatch,
        wall,
        auto_mean,
        auto_quotient_steps,
        auto_full,
        auto_between,
    })
}

/// A step replayed again ([`Again`]): device µs of one replay after its check, then of one after
/// `flush` evicts L2. Either solver, by its `time_replays` and `replay`.
fn replayed_again<S>(
    s: &mut S,
    flush: &L2Flush,
    time_replays: fn(&mut S, usize, usize) -> archipelago::Result<Vec<f64>>,
    replay: fn(&mut S) -> archipelago::Result<()>,
) -> archipelago::Result<[f64; 2]> {
    let after_check = time_replays(s, 0, 1)?[0];
    Ok([after_check, flush.time_replays(1, || replay(s))?[0]])
}

/// One step of the `auto` Engine over `input` (validated once for every contender: the Engine
/// takes it as is), checked; returns its wall µs.
fn auto_once(
    auto: &mut Engine,
    input: &Input<'_>,
    events: &Events,
    check: &mut dyn FnMut(&str, &Islands),
) -> archipelago::Result<f64> {
    let t = Instant::now();
    let got = auto.step_input(input, events)?;
    let us = t.elapsed().as_secs_f64() * 1e6;
    check("auto", got);
    Ok(us)
}

/// One step of a quotient solver over `input`: upload, one graph replay timed by `timer`,
/// download into `out`. Returns the replay's device µs and whether it took a warp a world
/// (chosen at the upload from the batch and the last step's counts, so named before the
/// download).
fn replay_once(
    s: &mut QuotientSolver,
    input: &Input<'_>,
    events: &Events,
    out: &mut PinnedIslands,
    timer: &LaunchTimer,
) -> archipelago::Result<(f64, bool)> {
    s.upload(input, events)?;
    let by_warps = s.warp_worlds();
    timer.around(|| s.replay())?;
    out.fill(input, |o| s.download(input, o))?;
    Ok((timer.elapsed_us()?, by_warps))
}
