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

#[test]
fn bench_worlds_scales_the_quotient_shapes_only() {
    let (ok, err) = archipelago(&["bench", "--worlds", "8192"]);
    assert!(!ok, "--worlds without --quotient");
    assert!(err.contains("--quotient"), "{err}");
    let (ok, err) = archipelago(&["bench", "--quotient", "--worlds", "0"]);
    assert!(!ok);
    assert!(err.contains("--worlds"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_archipelago"))
        .args([
            "bench",
            "--quotient",
            "--worlds",
            "8192",
            "--shapes",
            "list",
        ])
        .output()
        .expect("the binary runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "q:mechanism-90%",
        "trace:hammockx8192",
        "trace:flex_trampolinex8192",
    ] {
        assert!(text.lines().any(|l| l == name), "{name} in {text}");
    }
    assert!(
        !text.contains("x1024"),
        "every trace at 8192 worlds: {text}"
    );
    // A synthetic shape generated at that count (on the CPU, whatever the machine).
    let out = Command::new(env!("CARGO_BIN_EXE_archipelago"))
        .args([
            "bench",
            "--quotient",
            "--cpu",
            "--worlds",
            "3",
            "--reps",
            "1",
        ])
        .args(["--shapes", "q:humanoid-50%"])
        .output()
        .expect("the binary runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nworld 3 ·"), "{text}");
}
