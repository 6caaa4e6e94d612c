//! Marks that hold for one step: which of a fixed set of slots (a world's tree, say) a step has
//! already seen, so that work keyed by them is done once a step however many events name them.

/// One mark a slot, each set at most once a step. A new step clears them all without a pass
/// over those set: each slot holds the stamp of the last step that marked it, and the stamps
/// start over (one fill) every 255 steps. Sized at construction; marking allocates nothing.
///
/// ```
/// use invalidation::StepMarks;
/// let mut marks = StepMarks::new(4);
/// marks.next_step();
/// assert!(marks.mark(2) && !marks.mark(2));
/// marks.next_step();
/// assert!(marks.mark(2));
/// ```
#[derive(Debug, Clone)]
pub struct StepMarks {
    at: Vec<u8>,
    stamp: u8,
}

impl StepMarks {
    /// `n` slots, none marked (call [`next_step`](Self::next_step) before the first step).
    pub fn new(n: usize) -> StepMarks {
        StepMarks {
            at: vec![0; n],
            stamp: 0,
        }
    }

    /// Starts a step: every slot unmarked.
    pub fn next_step(&mut self) {
        self.stamp = match self.stamp {
            u8::MAX => {
                self.at.fill(0);
                1
            }
            k => k + 1,
        };
    }

    /// Marks slot `i`; whether it was not yet marked this step.
    pub fn mark(&mut self, i: usize) -> bool {
        std::mem::replace(&mut self.at[i], self.stamp) != self.stamp
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.at.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::StepMarks;

    #[test]
    fn a_slot_marked_at_one_step_is_unmarked_at_every_later_one() {
        let mut m = StepMarks::new(3);
        // Slot 1 marked at the first step, and again 255 steps later, when the stamps have
        // started over; slot 2 at every step in between.
        for k in 0..300 {
            m.next_step();
            if k % 255 == 0 {
                assert!(m.mark(1), "step {k}");
                assert!(!m.mark(1), "step {k}");
            }
            assert!(m.mark(2) && !m.mark(2), "step {k}");
        }
    }
}
