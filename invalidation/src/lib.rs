//! The invalidation tracker for archipelago's static quotient.
//!
//! Filled in by the quotient work (DESIGN.md §5): sources, epochs per source and world, and a
//! per-step decision (reuse, rebuild some worlds, rebuild all).
