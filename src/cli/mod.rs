//! One file per subcommand.

pub mod bench;
pub mod demo;
pub mod kernels;
pub mod replay;

use archipelago::Batch;
use archipelago::quotient::{EqPolicy, Policy};

/// How the tools name a quotient policy of `--eq-dynamic`: the ids and the static run they
/// leave on `batch` (`Classifier::static_eqs`, weighed); "default policy" for the default.
fn describe_policy(policy: &Policy, batch: &Batch) -> String {
    let EqPolicy::DynamicIds(ids) = &policy.eq else {
        return "default policy".into();
    };
    let run = policy.classifier_for(batch).static_eqs();
    let static_ones = match run.end {
        i32::MAX => format!("{} and above", run.start),
        end => format!("{}..{end}", run.start),
    };
    format!("equalities {ids:?} dynamic, the static ones {static_ones}")
}
