//! One file per subcommand.

pub mod bench;
pub mod demo;
pub mod kernels;
pub mod replay;

use archipelago::quotient::{EqPolicy, Policy};

/// How the tools name a quotient policy of `--eq-dynamic`: the ids and the static run they
/// leave (`Classifier::static_eqs`); "default policy" for the default.
fn describe_policy(policy: &Policy) -> String {
    let EqPolicy::DynamicIds(ids) = &policy.eq else {
        return "default policy".into();
    };
    let run = policy.classifier().static_eqs();
    let static_ones = match run.end {
        i32::MAX => format!("{} and above", run.start),
        end => format!("{}..{end}", run.start),
    };
    format!("equalities {ids:?} dynamic, the static ones {static_ones}")
}
