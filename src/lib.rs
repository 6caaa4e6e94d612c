//! archipelago: exact, linear-memory, incremental constraint-island discovery for batched
//! MuJoCo worlds, on the GPU and the CPU.
//!
//! An integration builds one [`Engine`] from a [`Model`] (the trees and their dofs), a
//! [`Capacity`] (every buffer is allocated then; a step allocates nothing) and [`Options`] (the
//! mode, `auto` by default), then steps it with each batch of rows and the [`Events`] the
//! simulation reports (equalities switched, trees put to sleep or woken). The outputs are every
//! field of native MuJoCo 4.0.0's `mj_island`, per world:
//!
//! ```
//! use archipelago::{Batch, Capacity, Engine, Events, Model, Options, RowType};
//! // Three trees of one dof each; two worlds.
//! let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
//! let mut b = Batch::builder();
//! b.row(RowType::Equality, 0, &[0, 1]).row(RowType::ContactPyramidal, 0, &[1, 2]).end_world();
//! b.row(RowType::ContactPyramidal, 0, &[2]).end_world();
//! let batch = b.finish();
//! let mut engine = Engine::new(&model, Capacity::fit(&model, &batch), Options::default()).unwrap();
//! let islands = engine.step(&batch, &Events::new()).unwrap();
//! assert_eq!(islands.world(0).nisland, 1); // trees 0, 1 and 2 together
//! assert_eq!(islands.world(1).tree_island, [-1, -1, 0]);
//! ```
//!
//! [`Engine::with_gpu`] runs the same modes on a CUDA device; [`trace::Trace`] reads steps
//! recorded from native MuJoCo with their native outputs, to replay and compare.
//!
//! Data flows one way: rows in ([`Batch`], validated into an [`Input`]) → connectivity (a mode)
//! → canonical labels ([`labels`]) → maps ([`maps`]) → [`Islands`]. The [`oracle`] is the
//! independent reference every mode is checked against, and each mode can also be run alone:
//!
//! ```
//! use archipelago::{cpu, oracle, Batch, Input, Islands, Model, RowType};
//! let model = Model::from_dofnum(&[6, 6, 1]).unwrap();
//! let mut b = Batch::builder();
//! b.row(RowType::ContactPyramidal, 0, &[0, 1]).end_world();
//! let batch = b.finish();
//! let input = Input::new(&model, &batch).unwrap();
//! let mut out = Islands::default();
//! cpu::by_name("dsu").unwrap().solve(&input, &mut out).unwrap();
//! assert_eq!(out.world(0).nisland, 1);
//! assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
//! ```

#![warn(missing_debug_implementations)]
pub mod cpu;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod islands;
pub mod labels;
pub mod maps;
pub mod model;
pub mod oracle;
pub mod order;
pub mod quotient;
pub mod rows;
pub mod synth;
pub mod trace;
pub(crate) mod union_find;

/// The invalidation tracker's crate: the events a simulation reports ([`Events`]), the decisions
/// and causes an engine's quotient exposes ([`engine::Engine::decision`]).
pub use invalidation;
pub use invalidation::Events;

pub use engine::{Engine, Mode, Options};
pub use error::{Error, Result};
pub use islands::{Islands, Mismatch};
pub use model::Model;
pub use rows::{Batch, BatchBuilder, Capacity, EdgeKind, Input, RowType};
