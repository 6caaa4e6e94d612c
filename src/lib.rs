//! archipelago: exact, linear-memory, incremental constraint-island discovery for batched
//! MuJoCo worlds, on the GPU and the CPU.
//!
//! Data flows one way: rows in ([`Batch`], validated into an [`Input`]) → connectivity (a mode)
//! → canonical labels ([`labels`]) → maps ([`maps`]) → [`Islands`], every field of MuJoCo
//! 4.0.0's island outputs. The [`oracle`] is the independent reference every mode is checked
//! against.
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

pub use engine::{Engine, Mode, Options};
pub use error::{Error, Result};
pub use islands::{Islands, Mismatch};
pub use model::Model;
pub use rows::{Batch, BatchBuilder, Capacity, EdgeKind, Input, RowType};
