//! One file per subcommand.

pub mod bench;
pub mod demo;
pub mod kernels;
pub mod replay;
