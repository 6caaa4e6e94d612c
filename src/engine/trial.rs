//! `auto`'s trials: which of the quotient and the full rebuild an `auto` engine runs, step by
//! step, from the whole-step times of both measured in turns ([`Auto`]), and the rule a trial
//! decides by ([`auto_keeps_quotient`]).

use std::time::Duration;

/// Timed steps of each contender in an `auto` trial, and steps between trials.
const TRIAL_STEPS: usize = 4;
const RETRIAL_EVERY: u32 = 1024;
/// The step (within [`RETRIAL_EVERY`]) after a trial's last.
const TRIAL_END: u32 = 2 + 2 * TRIAL_STEPS as u32;
/// Steps of the kept contender watched for drift ([`DRIFT`]), a ring of the latest.
const WATCH_STEPS: usize = 8;
/// A kept contender whose median over its last [`WATCH_STEPS`] steps exceeds this multiple of
/// the other's median in the last trial starts a trial at once instead of at the next
/// [`RETRIAL_EVERY`]: the input changed under it (on `passive_contacts`, bodies landing on
/// passive flexes after a quiet start, the guard then rebuilt worlds every step and `auto` ran
/// a quotient 3.9× slower than `dsu` for the rest of the trace), or a noisy trial chose wrong.
/// Well above the trial's margin, so that timing noise does not start trial after trial.
const DRIFT: f64 = 1.25;
/// The quotient is kept only when its median is below this share of the full rebuild's: a
/// wrong choice of the quotient costs up to its whole overhead, a wrong choice of the full
/// rebuild at most this margin, and whole-step wall times are noisy (PCIe, host).
const QUOTIENT_MARGIN: f64 = 0.97;

/// `auto`'s rule: whether a quotient step of `quotient` (any unit) is kept over a full
/// rebuild's of `full` (the same unit), that is, faster by 3 % (below 0.97 of it). What a
/// trial decides by, and what a benchmark that says which mode `auto` picks must apply too.
///
/// ```
/// use archipelago::engine::auto_keeps_quotient;
/// assert!(auto_keeps_quotient(96.0, 100.0));
/// assert!(!auto_keeps_quotient(98.0, 100.0), "faster, but within the margin");
/// ```
pub fn auto_keeps_quotient(quotient: f64, full: f64) -> bool {
    quotient < QUOTIENT_MARGIN * full
}

/// `auto`'s measurements. A trial runs each contender once untimed (the quotient may build its
/// quotients; the full rebuild's first step on a GPU times every mode to choose one), then the
/// two in turns, [`TRIAL_STEPS`] timed steps each, so that both see the same stretch of the
/// input; the one with the lower median (the quotient by [`QUOTIENT_MARGIN`]) runs until the
/// next trial. The turns go quotient, full, full, quotient and again, so that each contender
/// takes odd and even steps alike: taken one by one, on a sequence whose sleep and wake events
/// came every other step the quotient's timed steps were all those without events, and `auto`
/// kept a quotient 1.28× slower by median wall (session 64). (Taking each contender's
/// best of consecutive steps instead let a quiet stretch of the input decide: on the hammock
/// sequence it chose a quotient 9% slower by median. Timing the full rebuild's first step, as
/// the next version did, biases its median upwards; with it, two sequences of another run chose
/// a quotient 7% and 15% slower by median.)
#[derive(Debug, Clone, Default)]
pub(super) struct Auto {
    step: u32,
    quotient: [Duration; TRIAL_STEPS],
    full: [Duration; TRIAL_STEPS],
    use_quotient: bool,
    /// The median of the contender the last trial did not keep, and the kept one's latest
    /// steps since.
    other_median: Duration,
    watch: [Duration; WATCH_STEPS],
    watched: usize,
}

impl Auto {
    /// Whether this step runs the quotient, and whether it is timed (a trial's steps, and the
    /// kept contender's, watched for drift).
    pub(super) fn plan(&self) -> (bool, bool) {
        match self.step % RETRIAL_EVERY {
            k @ (0 | 1) => (k == 0, false),
            // Each pair of timed steps holds one of each, in turn q f, f q.
            k if k < TRIAL_END => (k % 2 != (k / 2) % 2, true),
            _ => (self.use_quotient, true),
        }
    }

    /// Whether the last recorded step was one of a trial's (before any step: false).
    pub(super) fn in_trial(&self) -> bool {
        self.step > 0 && (self.step - 1) % RETRIAL_EVERY < TRIAL_END
    }

    pub(super) fn record(&mut self, quotient: bool, timed: Option<Duration>) {
        let k = self.step % RETRIAL_EVERY;
        match timed {
            Some(t) if k < TRIAL_END => {
                let i = ((k - 2) / 2) as usize;
                let times = if quotient {
                    &mut self.quotient
                } else {
                    &mut self.full
                };
                times[i] = t;
            }
            Some(t) => {
                self.watch[self.watched % WATCH_STEPS] = t;
                self.watched += 1;
            }
            None => {}
        }
        self.step = self.step.wrapping_add(1);
        if self.step % RETRIAL_EVERY == TRIAL_END {
            let (q, f) = (median(&mut self.quotient), median(&mut self.full));
            self.use_quotient = auto_keeps_quotient(q.as_secs_f64(), f.as_secs_f64());
            self.other_median = if self.use_quotient { f } else { q };
            self.watched = 0;
        } else if self.watched >= WATCH_STEPS
            && median(&mut self.watch.clone()).as_secs_f64()
                > DRIFT * self.other_median.as_secs_f64()
        {
            // The next step starts a trial (the one at a multiple of RETRIAL_EVERY, which
            // divides 2^32: past the last, step 0).
            self.step = self
                .step
                .checked_next_multiple_of(RETRIAL_EVERY)
                .unwrap_or(0);
            self.watched = 0;
        }
    }
}

/// The median of some times (the mean of the middle two); sorts them.
fn median<const N: usize>(times: &mut [Duration; N]) -> Duration {
    times.sort_unstable();
    (times[N / 2 - 1] + times[N / 2]) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one trial with the given times (ms) and returns the choice and the plan it followed.
    fn trial(quotient: [u64; TRIAL_STEPS], full: [u64; TRIAL_STEPS]) -> (bool, Vec<(bool, bool)>) {
        let mut auto = Auto::default();
        let (mut q, mut f) = (quotient.iter(), full.iter());
        let mut plans = Vec::new();
        for _ in 0..TRIAL_END {
            let (use_quotient, timed) = auto.plan();
            plans.push((use_quotient, timed));
            let t = timed.then(|| {
                let ms = if use_quotient { q.next() } else { f.next() };
                Duration::from_millis(*ms.unwrap())
            });
            auto.record(use_quotient, t);
        }
        assert_eq!(q.next(), None, "the trial times every quotient step given");
        assert_eq!(f.next(), None, "the trial times every full step given");
        (auto.plan().0, plans)
    }

    #[test]
    fn a_trial_takes_turns_q_f_f_q_after_an_untimed_step_of_each() {
        let (_, plans) = trial([1; TRIAL_STEPS], [1; TRIAL_STEPS]);
        assert_eq!(plans[0], (true, false));
        assert_eq!(plans[1], (false, false));
        let quotient: Vec<bool> = plans[2..].iter().map(|&(q, _)| q).collect();
        assert_eq!(
            quotient,
            [true, false, false, true, true, false, false, true]
        );
        assert!(plans[2..].iter().all(|&(_, timed)| timed));
    }

    #[test]
    fn steps_that_cost_more_every_other_step_do_not_decide() {
        // Every odd step costs 4 ms more (events every other step); the full rebuild is 1 ms
        // faster at every step. Taken one by one, the quotient's timed steps were all even.
        let mut auto = Auto::default();
        for k in 0..TRIAL_END {
            let (quotient, timed) = auto.plan();
            let ms = u64::from(quotient) + 3 + 4 * u64::from(k % 2 == 1);
            auto.record(quotient, timed.then(|| Duration::from_millis(ms)));
        }
        assert!(!auto.plan().0, "the quotient was kept");
    }

    #[test]
    fn the_median_decides_not_the_best_step() {
        // One fast quotient step (a quiet stretch) does not win against a steadily faster full
        // rebuild, nor one slow full step lose it the trial.
        assert!(!trial([1, 5, 5, 5], [3, 3, 3, 3]).0);
        assert!(!trial([5, 5, 5, 5], [900, 3, 3, 3]).0);
        assert!(trial([2, 2, 2, 2], [3, 3, 1, 3]).0);
        assert!(
            !trial([3, 3, 3, 3], [3, 3, 3, 3]).0,
            "a tie keeps the full rebuild"
        );
        // Within the margin the full rebuild stays; past it the quotient wins.
        assert!(!trial([98, 98, 98, 98], [100, 100, 100, 100]).0);
        assert!(trial([96, 96, 96, 96], [100, 100, 100, 100]).0);
    }

    #[test]
    fn the_choice_holds_until_the_next_trial() {
        let mut auto = Auto::default();
        assert!(!auto.in_trial(), "no step yet");
        for k in 0..RETRIAL_EVERY {
            let (q, timed) = auto.plan();
            let ms = if q { 1 } else { 2 };
            auto.record(q, timed.then(|| Duration::from_millis(ms)));
            // The trial's steps are the untimed pair and the timed ones, none after them.
            assert_eq!(auto.in_trial(), k < TRIAL_END, "step {k}");
            if auto.step >= TRIAL_END && auto.step < RETRIAL_EVERY {
                assert_eq!(auto.plan(), (true, true), "the kept quotient is watched");
            }
        }
        assert_eq!(
            auto.plan(),
            (true, false),
            "the next trial starts with the quotient"
        );
        auto.record(true, None);
        assert!(auto.in_trial());
    }

    /// Runs a trial that keeps the quotient (1 ms against 2), then `steps` quotient steps of
    /// `ms` each; returns the auto and the step at which a new trial started, if one did.
    fn kept_then(ms: &[u64]) -> (Auto, Option<usize>) {
        let mut auto = Auto::default();
        for _ in 0..TRIAL_END {
            let (q, timed) = auto.plan();
            auto.record(
                q,
                timed.then(|| Duration::from_millis(if q { 1 } else { 2 })),
            );
        }
        assert_eq!(auto.plan(), (true, true));
        for (i, &t) in ms.iter().enumerate() {
            let (q, timed) = auto.plan();
            if !q || !timed {
                return (auto, Some(i));
            }
            auto.record(q, Some(Duration::from_millis(t)));
        }
        let retrial = (auto.step % RETRIAL_EVERY == 0).then_some(ms.len());
        (auto, retrial)
    }

    #[test]
    fn a_kept_quotient_that_drifts_past_the_full_rebuild_is_tried_again_at_once() {
        // The input changed: the quotient now costs 4 ms a step against the trial's 2 ms full
        // rebuild. After a window of such steps a trial starts, not 1,024 steps later.
        let (auto, retrial) = kept_then(&[4; 20]);
        assert_eq!(retrial, Some(WATCH_STEPS));
        assert_eq!(
            auto.step % RETRIAL_EVERY,
            0,
            "the next step is a trial's first"
        );
        // Up to DRIFT times the full rebuild (noise, or a small loss) waits for the next trial,
        // and so do a few slow steps among fast ones (the median decides).
        assert_eq!(kept_then(&[2; 100]).1, None);
        let mut bursts = [1; 100];
        for t in bursts.iter_mut().step_by(3) {
            *t = 9;
        }
        assert_eq!(kept_then(&bursts).1, None);
    }

    #[test]
    fn a_kept_full_rebuild_that_drifts_past_the_quotient_is_tried_again_at_once() {
        // The trial kept the full rebuild (1 ms against the quotient's 3); then its steps cost
        // 5 ms, past DRIFT times the quotient's: a trial starts after a window of them.
        let mut auto = Auto::default();
        for _ in 0..TRIAL_END {
            let (q, timed) = auto.plan();
            auto.record(
                q,
                timed.then(|| Duration::from_millis(if q { 3 } else { 1 })),
            );
        }
        assert_eq!(
            auto.plan(),
            (false, true),
            "the kept full rebuild is watched"
        );
        for _ in 0..WATCH_STEPS {
            auto.record(false, Some(Duration::from_millis(5)));
        }
        assert_eq!(
            auto.step % RETRIAL_EVERY,
            0,
            "the next step is a trial's first"
        );
    }
}
