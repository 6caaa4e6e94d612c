//! The invalidation tracker for archipelago's static quotient (DESIGN.md §5).
//!
//! The quotient contracts each world's *static* incidence (equalities, friction-loss rows, flex
//! stiffness couplings) once and reuses it step after step. It is exact only while that incidence
//! is unchanged, so every source that can change it is reported here as an [`Event`]:
//! per-world `eq_active` toggles, tree sleep and wake, edits to static constraints, capacity
//! changes. The [`Tracker`] keeps an epoch per source and world and turns the events of a step
//! into a [`Decision`]: reuse, rebuild these worlds, or rebuild all, each with its [`Cause`].
//!
//! Events can be forgotten, so the [`signature`] guard checks every step that the static rows
//! actually present match what was contracted, and forces a rebuild when they do not.
//!
//! ```
//! use invalidation::{Decision, Events, SourceId, Tracker, Verdict};
//! let mut tracker = Tracker::new(2, 4);
//! let mut events = Events::default();
//! let mut decision = Decision::with_capacity(2);
//! tracker.mark_all_built();
//! events.eq_active(1, 7, false); // world 1 switched equality 7 off
//! tracker.record(&events, |_: SourceId| true).unwrap();
//! tracker.decide(&mut decision);
//! assert_eq!(decision.verdict(), Verdict::Rebuild);
//! assert_eq!(decision.worlds().collect::<Vec<_>>().len(), 1);
//! ```

mod event;
pub mod signature;
mod step_marks;
mod tracker;

pub use event::{Edit, Event, Events, SourceId};
pub use signature::{GuardFinding, NodeState, Signature};
pub use step_marks::StepMarks;
pub use tracker::{Cause, Decision, Source, Tracker, TrackerError, Verdict};
