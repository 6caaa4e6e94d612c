//! The min-root union-find shared by contraction, the node solve and the direct fallback: the
//! same primitive as the CPU `dsu` mode (the larger root is hooked under the smaller, so every
//! root is its component's minimum).

pub(crate) use crate::cpu::dsu::{find, join, union};
