//! The command line refuses what it cannot do, with the reason, before any work.

use std::process::Command;

fn archipelago(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_archipelago"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bench_refuses_unknown_modes_and_shapes() {
    let (ok, err) = archipelago(&["bench", "--modes", "block,fastest"]);
    assert!(!ok);
    assert!(err.contains("unknown mode `fastest`"), "{err}");
    assert!(
        err.contains("dsu, labelprop"),
        "the known modes are listed: {err}"
    );
    let (ok, err) = archipelago(&["bench", "--shapes", "aloha-2048x22,nope"]);
    assert!(!ok);
    assert!(err.contains("unknown shape `nope`"), "{err}");
    let (ok, err) = archipelago(&["bench", "--quotient", "--shapes", "8192x64"]);
    assert!(!ok, "8192x64 is not a quotient shape");
    assert!(err.contains("unknown shape `8192x64`"), "{err}");
}

#[test]
fn bench_lists_its_shapes() {
    let out = Command::new(env!("CARGO_BIN_EXE_archipelago"))
        .args(["bench", "--shapes", "list"])
        .output()
        .expect("the binary runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l == "trace:aloha_clutterx2048"),
        "{text}"
    );
}
