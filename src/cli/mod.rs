//! The subcommands, a module each (`bench` with its own folder), and what they share: stdout
//! writes, mode lists (`modes`), size checks (`memory`) and how a policy is named.

/// `print!` to stdout, ending the process as a closed pipe would (`archipelago replay … | head`)
/// where `print!` panics: [`write_out`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!($($arg)*), "") };
}

/// `println!`, as [`out!`] is `print!`.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::write_out(format_args!($($arg)*), "\n") };
}

/// What ends a command of the tool: the library's errors, and the tool's own refusals.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An error of the library (a device, a trace, a batch, a mode's refusal).
    #[error(transparent)]
    Lib(#[from] archipelago::Error),
    /// A command was asked for something it cannot do (an unknown shape, an option that needs a
    /// device, sizes no batch can have, a file it cannot write into).
    #[error("{command}: {reason}")]
    Usage {
        /// The subcommand (`bench`, `replay`, `kernels`, `demo`).
        command: &'static str,
        /// What is wrong, and what to do instead where there is something.
        reason: String,
    },
    /// An output file (a report the command was asked to write) could not be written.
    #[error("cannot write {path}: {detail}")]
    Write {
        /// The file.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

/// The tool's result.
pub type Result<T> = std::result::Result<T, Error>;

pub mod bench;
pub mod demo;
pub mod kernels;
mod memory;
mod modes;
pub mod replay;

use archipelago::Batch;
use archipelago::quotient::{EqPolicy, Policy};

/// How the tools name a quotient policy of `--eq-dynamic`: the ids (sorted, once each) and the
/// static run they leave on `batch` (`Classifier::static_eqs`, weighed); "default policy" for
/// the default.
fn describe_policy(policy: &Policy, batch: &Batch) -> String {
    if !matches!(policy.eq, EqPolicy::DynamicIds(_)) {
        return "default policy".into();
    }
    let c = policy.classifier_for(batch);
    format!(
        "equalities {:?} dynamic, the static ones {}",
        c.dynamic_eqs(),
        say_run(c.static_eqs())
    )
}

/// A run of equality ids as the tools say it: "0 to 2", "3 alone", "4 and above" (to the end
/// of `i32`: every id from the start), "none".
fn say_run(run: std::ops::Range<i32>) -> String {
    match (run.start, run.end) {
        (start, i32::MAX) => format!("{start} and above"),
        (start, end) if end <= start => "none".into(),
        (start, end) if end == start + 1 => format!("{start} alone"),
        (start, end) => format!("{start} to {}", end - 1),
    }
}

/// `--eq-dynamic`'s parser: an equality id, which MuJoCo counts from 0 (the tracker refuses a
/// negative one too, and a policy would only ignore it). The option takes values that start
/// with a hyphen (`-1,2` is a list, whose `-1` this refuses), so an option given where its
/// list should be arrives here too, and is said so.
fn equality_id(s: &str) -> std::result::Result<i32, String> {
    let t = s.trim();
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    let looks_like_option = t.starts_with("--")
        || t.strip_prefix('-')
            .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_alphabetic()));
    if t.is_empty() {
        return Err("an empty item in the list: give equality ids, e.g. 0,3".into());
    }
    match t.parse::<i32>() {
        Ok(id) if id >= 0 => Ok(id),
        // A negative number, also one past i32's range.
        _ if t.strip_prefix('-').is_some_and(digits) => {
            Err(format!("{t} is no equality id: MuJoCo's ids count from 0"))
        }
        Err(_) if looks_like_option => Err(format!(
            "{t:?} is no equality id: give the ids (e.g. 0,3) right after --eq-dynamic"
        )),
        Err(e) => Err(format!("{t:?} is no equality id: {e}")),
        Ok(id) => Err(format!("{id} is no equality id: MuJoCo's ids count from 0")),
    }
}

/// Writes `args` and `end` to stdout. A closed stdout ends the process with the status a
/// process killed by SIGPIPE reports (141), as a Unix tool does, rather than a panic; any other
/// write error is reported and ends it with status 2, as the tool's errors do.
pub fn write_out(args: std::fmt::Arguments<'_>, end: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(end.as_bytes()))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => {
            eprintln!("error: writing to stdout: {e}");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{equality_id, say_run};

    #[test]
    fn runs_of_equality_ids_are_said_in_words() {
        assert_eq!(say_run(0..3), "0 to 2");
        assert_eq!(say_run(3..4), "3 alone");
        assert_eq!(say_run(4..i32::MAX), "4 and above");
        assert_eq!(say_run(0..0), "none");
    }

    #[test]
    fn equality_ids_count_from_0() {
        assert_eq!(equality_id(" 3"), Ok(3));
        assert_eq!(equality_id("-0"), Ok(0));
        let err = |s: &str| equality_id(s).unwrap_err();
        assert_eq!(err("-1"), "-1 is no equality id: MuJoCo's ids count from 0");
        assert_eq!(
            err("-99999999999"),
            "-99999999999 is no equality id: MuJoCo's ids count from 0"
        );
        assert!(err("").contains("an empty item"));
        assert!(err(" ").contains("an empty item"));
        // An option where the list should be (the option takes values that start with '-').
        for option in ["--mode", "-h", "--"] {
            assert!(err(option).contains("right after --eq-dynamic"), "{option}");
        }
        // Anything else that is no number is said as the parse says it.
        for (s, says) in [
            ("x", "\"x\" is no equality id: invalid digit"),
            ("-1.5", "\"-1.5\" is no equality id: invalid digit"),
            ("-", "\"-\" is no equality id: invalid digit"),
            (
                "99999999999",
                "\"99999999999\" is no equality id: number too large",
            ),
        ] {
            assert!(err(s).starts_with(says), "{s}: {}", err(s));
        }
    }
}
