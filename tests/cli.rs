//! The command line refuses what it cannot do, with the reason, before any work.

use std::process::Command;

#[path = "support/mini_trace.rs"]
mod mini;
#[path = "support/traces.rs"]
mod traces;

/// The tool run on `args`: whether it succeeded, its stdout and its stderr.
fn run(args: &[&str]) -> (bool, String, String) {
    run_with(args, false, None)
}

/// [`run`] with the device hidden (`ARCHIPELAGO_NO_GPU=1`) where `no_gpu`, in folder `dir`.
fn run_with(args: &[&str], no_gpu: bool, dir: Option<&std::path::Path>) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_archipelago"));
    command.args(args);
    if no_gpu {
        command.env("ARCHIPELAGO_NO_GPU", "1");
    }
    if let Some(dir) = dir {
        command.current_dir(dir).env_remove("ARCHIPELAGO_ROOT");
    }
    let out = command.output().expect("the binary runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// [`run`]'s success and stderr.
fn archipelago(args: &[&str]) -> (bool, String) {
    let (ok, _, err) = run(args);
    (ok, err)
}

#[test]
fn demo_says_a_gpu_mode_needs_a_device_where_none_is_usable() {
    for modes in ["gpu-dsu", "dsu,gpu"] {
        let (ok, _, err) = run_with(&["demo", "--modes", modes, "--worlds", "1"], true, None);
        assert!(!ok);
        assert!(
            err.contains("no CUDA device: disabled by ARCHIPELAGO_NO_GPU=1"),
            "{err}"
        );
    }
    let (ok, _, err) = run_with(&["demo", "--modes", "dsx"], true, None);
    assert!(!ok);
    assert!(err.contains("unknown mode `dsx`"), "{err}");
    assert!(err.contains("the groups cpu, gpu, all"), "{err}");
}

#[test]
fn demo_refuses_sizes_no_batch_can_have_before_generating() {
    for (args, said) in [
        (&["--worlds", "0"][..], "--worlds must be at least 1"),
        (&["--trees", "4294967295"], "tree ids are 32-bit"),
        (&["--worlds", "4294967295"], "invalid capacity"),
        (&["--rows", "4000000000"], "invalid capacity"),
    ] {
        let args: Vec<&str> = ["demo", "--modes", "dsu"]
            .iter()
            .chain(args)
            .copied()
            .collect();
        let (ok, out, err) = run(&args);
        assert!(!ok, "{args:?}");
        assert!(err.starts_with("error: demo: "), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(out.is_empty(), "nothing ran: {out}");
    }
}

#[test]
fn demo_fails_where_a_mode_asked_for_by_name_refused_every_batch() {
    // 128 worlds of 4,096 trees: `dense` needs 16 GiB of scratch, past its 1 GiB.
    let args = [
        "demo", "--modes", "dense", "--trees", "4096", "--worlds", "128",
    ];
    let (ok, out, err) = run(&[&args[..], &["--repeats", "1", "--rows", "4"]].concat());
    assert!(!ok);
    assert!(out.contains("refused"), "{out}");
    assert!(
        err.contains("dense was asked for by name and refused every batch"),
        "{err}"
    );
    // In a group it is reported and the run stands.
    let (ok, out, _) = run(&[
        "demo",
        "--modes",
        "cpu",
        "--trees",
        "4096",
        "--worlds",
        "128",
        "--repeats",
        "1",
        "--rows",
        "4",
    ]);
    assert!(ok, "{out}");
}

#[test]
fn bench_says_what_it_cannot_do_before_it_runs() {
    // A trace asked for by name, from a folder without the traces.
    let (ok, out, err) = run_with(
        &["bench", "--quotient", "--shapes", "trace:hammockx4"],
        true,
        Some(&std::env::temp_dir()),
    );
    assert!(!ok, "{out}");
    assert!(
        err.contains("trace:hammockx4: its trace is not in"),
        "{err}"
    );
    assert!(err.contains("ARCHIPELAGO_ROOT"), "{err}");
    // A report that cannot be written, before any shape is timed.
    let (ok, out, err) = run_with(
        &[
            "bench",
            "--out",
            "/nonexistent/dir/q.md",
            "--shapes",
            "1x4096",
        ],
        true,
        None,
    );
    assert!(!ok);
    assert!(err.contains("cannot write /nonexistent/dir/q.md"), "{err}");
    assert!(!out.contains("###"), "no shape ran: {out}");
    // An equality id below 0, before anything runs, in a list (first or not) or alone.
    for ids in ["0,-2", "-2,0", "-2"] {
        let (ok, out, err) = run_with(&["bench", "--quotient", "--eq-dynamic", ids], true, None);
        assert!(!ok);
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("-2 is no equality id"), "{err}");
    }
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
    let (ok, text, _) = run(&["bench", "--shapes", "list"]);
    assert!(ok);
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
    let (ok, err) = archipelago(&["bench", "--eq-dynamic", "0,3"]);
    assert!(!ok, "--eq-dynamic without --quotient");
    assert!(err.contains("--quotient"), "{err}");
    let (ok, err) = archipelago(&["bench", "--quotient", "--worlds", "0"]);
    assert!(!ok);
    assert!(err.contains("--worlds"), "{err}");
    let (ok, text, _) = run(&[
        "bench",
        "--quotient",
        "--worlds",
        "8192",
        "--shapes",
        "list",
    ]);
    assert!(ok);
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
    let (ok, text) = humanoid_on_the_cpu("1");
    assert!(ok);
    assert!(text.contains("nworld 3 ·"), "{text}");
}

#[test]
fn kernels_refuses_what_is_no_architecture_or_too_old() {
    let (ok, err) = archipelago(&["kernels", "--arch", "sm_9x"]);
    assert!(!ok);
    assert!(err.contains("`sm_9x` is not an architecture"), "{err}");
    if !archipelago::gpu::nvrtc_present() {
        println!("skipped the rest: no NVRTC");
        return;
    }
    let (ok, err) = archipelago(&["kernels", "--arch", "sm_75", "--cache", "/nonexistent"]);
    assert!(!ok);
    assert!(err.contains("8.0 or newer"), "{err}");
}

#[test]
fn kernels_fills_the_cache_once() {
    if !archipelago::gpu::nvrtc_present() {
        println!("skipped: no NVRTC (tools/setup_nvrtc.sh fetches it)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("archipelago-cli-kernels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_archipelago"))
            .args(["kernels", "--arch", "sm_90", "--cache"])
            .arg(&dir)
            .output()
            .expect("the binary runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    // Every program built, then, by a second process, every one found in the cache.
    let first = run();
    let second = run();
    let rows = |text: &str, was: &str| {
        text.lines()
            .filter(|l| l.ends_with(&format!("| {was} |")))
            .count()
    };
    let n = archipelago::gpu::programs().len();
    assert_eq!(rows(&first, "built"), n, "{first}");
    assert_eq!(rows(&second, "cached"), n, "{second}");
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(files, n, "one file a program, none left half-written");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_checks_a_trace_in_every_mode_there_is() {
    let trace = traces::dir().join("invalidation_island_efc.npz");
    let (ok, text, err) = run(&["replay", trace.to_str().expect("a UTF-8 path")]);
    assert!(ok, "{text}{err}");
    let modes: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    let cpu = ["dense", "dsu", "labelprop", "quotient", "oracle"];
    for m in cpu.into_iter().chain(["engine-quotient", "engine-auto"]) {
        assert!(modes.contains(&m), "{m} missing: {text}");
    }
    // The GPU modes join where a device opens, else the tool says why they are left out.
    let gpu = modes.contains(&"gpu-quotient") && modes.contains(&"gpu-auto");
    assert!(gpu || err.contains("GPU modes skipped"), "{text}{err}");
    // Every row reports zero mismatches (the fifth column).
    for l in text.lines().skip(1) {
        assert_eq!(l.split_whitespace().nth(5), Some("0"), "{l}");
    }
}

/// A policy of one's own, checked against native MuJoCo: equalities of closed_loops_mid dynamic
/// from the start (3 is the one its script switches), the static run said on stderr.
#[test]
fn replay_takes_a_policy_of_dynamic_equalities() {
    let trace = traces::dir().join("closed_loops_mid.npz");
    let trace = trace.to_str().expect("a UTF-8 path");
    // The heavier run stays static: with 0 and 3 dynamic, 4 and the friction loss outweigh 1-2.
    for (ids, statics) in [
        ("0,3", "4 and above"),
        ("3", "0 to 2"),
        ("0", "1 and above"),
    ] {
        let modes = "quotient,engine-quotient";
        let (ok, text, err) = run(&["replay", "--mode", modes, "--eq-dynamic", ids, trace]);
        assert!(ok, "{ids}: {text}{err}");
        assert!(
            err.contains(&format!(
                "on closed_loops_mid: equalities [{}] dynamic, the static ones {statics}\n",
                ids.replace(',', ", ")
            )),
            "{ids}: {err}"
        );
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(rows.len(), 2, "{text}");
        for (row, mode) in rows.into_iter().zip(modes.split(',')) {
            assert_eq!(row.split_whitespace().nth(1), Some(mode), "{row}");
            assert_eq!(row.split_whitespace().nth(5), Some("0"), "{row}");
        }
    }
}

#[test]
fn replay_says_what_its_policy_and_files_cannot_do() {
    let hammock = traces::dir().join("hammock.npz");
    let hammock = hammock.to_str().expect("a UTF-8 path");
    // Ids past the trace's equalities match none; without a quotient mode no policy is said.
    let (ok, _, err) = run(&[
        "replay",
        "--mode",
        "quotient",
        "--eq-dynamic",
        "999",
        hammock,
    ]);
    assert!(ok);
    assert!(
        err.contains("--eq-dynamic [999]: hammock has one equality, 0; it matches none"),
        "{err}"
    );
    // The note says how many equalities a trace has, none and many alike.
    let (none, many) = (
        traces::dir().join("contact_mix.npz"),
        traces::dir().join("connect_chain.npz"),
    );
    let (ok, _, err) = run(&[
        "replay",
        "--mode",
        "quotient",
        "--eq-dynamic",
        "3,40",
        none.to_str().expect("a UTF-8 path"),
        many.to_str().expect("a UTF-8 path"),
    ]);
    assert!(ok);
    assert!(
        err.contains("--eq-dynamic [3, 40]: contact_mix has no equalities; they match none"),
        "{err}"
    );
    assert!(
        err.contains("--eq-dynamic [40]: connect_chain has equalities 0 to 16; it matches none"),
        "{err}"
    );
    // An id below 0 names no equality: refused before anything runs, in a list (first or
    // not) or alone.
    for ids in ["5,-1", "-1,5", "-1"] {
        let (ok, out, err) = run(&["replay", "--mode", "quotient", "--eq-dynamic", ids, hammock]);
        assert!(!ok);
        assert!(out.is_empty(), "{out}");
        assert!(
            err.contains("-1 is no equality id: MuJoCo's ids count from 0"),
            "{err}"
        );
    }
    let (ok, _, err) = run(&["replay", "--mode", "dsu", "--eq-dynamic", "0", hammock]);
    assert!(ok);
    assert!(!err.contains("quotient modes on"), "{err}");
    // The list first, an option after it; an option where the list should be is said so.
    let (ok, _, err) = run(&["replay", "--eq-dynamic", "0", "--mode", "dsu", hammock]);
    assert!(ok, "{err}");
    let (ok, out, err) = run(&["replay", "--eq-dynamic", "--mode", "dsu", hammock]);
    assert!(!ok);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("right after --eq-dynamic"), "{err}");
    // A missing file before anything runs; one that is no trace in its turn, the rest run.
    let (ok, out, err) = run(&["replay", "--mode", "dsu", hammock, "/nonexistent.npz"]);
    assert!(!ok);
    assert!(out.is_empty(), "{out}");
    assert!(
        err.contains("trace /nonexistent.npz: no such file"),
        "{err}"
    );
    let cut = std::env::temp_dir().join(format!("archipelago-cut-{}.npz", std::process::id()));
    let bytes = std::fs::read(traces::dir().join("hammock.npz")).unwrap();
    std::fs::write(&cut, &bytes[..1000]).unwrap();
    let cut_path = cut.to_str().expect("a UTF-8 path");
    let (ok, out, err) = run(&["replay", "--mode", "dsu", cut_path, hammock]);
    let _ = std::fs::remove_file(&cut);
    assert!(!ok);
    assert!(err.contains("not a readable npz archive"), "{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("hammock")).count(),
        1,
        "{out}"
    );
}

#[test]
fn replay_refuses_unknown_modes_and_a_gpu_mode_without_a_device() {
    let trace = traces::dir().join("invalidation_island_efc.npz");
    let trace = trace.to_str().expect("a UTF-8 path");
    let (ok, err) = archipelago(&["replay", "--mode", "dsu,gpu-fastest", trace]);
    assert!(!ok);
    assert!(err.contains("unknown mode `gpu-fastest`"), "{err}");
    assert!(
        err.contains("gpu-quotient"),
        "the known modes are listed: {err}"
    );
    let (ok, err) = archipelago(&["replay", "--mode", "gpu-quotient", trace]);
    match archipelago::gpu::Gpu::open() {
        Ok(_) => assert!(ok, "{err}"),
        Err(_) => {
            assert!(!ok, "asked for by name, a GPU mode is not skipped");
            assert!(err.contains("no CUDA device"), "{err}");
        }
    }
}

/// A mode that refuses a trace checked nothing there: asked for by name, that fails the run; in
/// a group it is said and the others' verdict stands.
#[test]
fn replay_fails_where_a_mode_asked_for_by_name_refuses_a_trace() {
    // One world of 12,000 trees: `dense` needs 8 · 12,000² bytes of scratch, past its 1 GiB.
    let path = std::env::temp_dir().join(format!("archipelago-wide-{}.npz", std::process::id()));
    std::fs::write(&path, mini::npz(&mini::arrays_of(2, 12_000))).unwrap();
    let trace = path.to_str().expect("a UTF-8 path");
    let (ok, stdout, err) = run(&["replay", "--mode", "dsu,dense", trace]);
    assert!(!ok, "{stdout}{err}");
    assert!(stdout.contains("refused"), "{stdout}");
    assert!(
        err.contains("dense was asked for by name and checked nothing"),
        "{err}"
    );
    let (ok, stdout, err) = run(&["replay", "--mode", "cpu", trace]);
    assert!(ok, "{stdout}{err}");
    assert!(stdout.contains("refused"), "{stdout}");
    let checked = stdout
        .lines()
        .filter(|l| l.split_whitespace().nth(5) == Some("0"));
    assert_eq!(
        checked.count(),
        6,
        "every other CPU mode, the oracle and the engines: {stdout}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bench_takes_any_trace_by_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_archipelago"))
        .args(["bench", "--cpu", "--reps", "1", "--shapes"])
        .arg("trace:island_island_efcx8")
        .env(
            "ARCHIPELAGO_ROOT",
            traces::dir().parent().expect("a parent"),
        )
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("### trace:island_island_efcx8"), "{text}");
    assert!(text.contains("nworld 8 ·"), "{text}");
    let (ok, err) = archipelago(&["bench", "--cpu", "--shapes", "trace:island_island_efcx0"]);
    assert!(!ok);
    assert!(
        err.contains("unknown shape `trace:island_island_efcx0`"),
        "{err}"
    );
    let (ok, err) = archipelago(&["bench", "--cpu", "--shapes", "trace:no_such_tracex8"]);
    assert!(!ok);
    assert!(
        err.contains("trace:no_such_tracex8: its trace is not in"),
        "{err}"
    );
}

#[test]
fn bench_on_the_cpu_honours_its_options_or_refuses_them() {
    let (ok, err) = archipelago(&["bench", "--cpu", "--modes", "block", "--shapes", "1x4096"]);
    assert!(!ok);
    assert!(err.contains("--modes picks GPU modes"), "{err}");
    let args = ["bench", "--cpu", "--reps", "0", "--shapes", "aloha-2048x22"];
    let (ok, out, _) = run(&[&args[..], &["--dense-limit-gib", "0.001"]].concat());
    assert!(ok, "{out}");
    assert!(out.contains("1 timed steps per cell"), "{out}");
    assert!(out.contains("over the cap of 1073741 bytes"), "{out}");
}

#[test]
fn bench_refuses_deterministic_where_it_would_time_no_gpu_mode() {
    // On the CPU `--deterministic` printed the plain table as if it had been honoured.
    let (ok, err) = archipelago(&["bench", "--cpu", "--deterministic", "--shapes", "1x4096"]);
    assert!(!ok, "--deterministic on the CPU");
    assert!(
        err.contains("--deterministic") && err.contains("GPU"),
        "{err}"
    );
    // With --quotient it was ignored whatever the machine.
    let (ok, err) = archipelago(&["bench", "--quotient", "--deterministic"]);
    assert!(!ok, "--deterministic with --quotient");
    assert!(err.contains("--deterministic"), "{err}");
}

/// `bench --quotient --cpu` of humanoid-50% at 3 worlds with `reps`: success and stdout.
fn humanoid_on_the_cpu(reps: &str) -> (bool, String) {
    let (ok, text, _) = run(&[
        "bench",
        "--quotient",
        "--cpu",
        "--worlds",
        "3",
        "--reps",
        reps,
        "--shapes",
        "q:humanoid-50%",
    ]);
    (ok, text)
}

#[test]
fn bench_on_the_cpu_times_at_least_one_step() {
    let (ok, text) = humanoid_on_the_cpu("0");
    assert!(ok, "{text}");
    assert!(text.contains("| dsu |"), "{text}");
    assert!(!text.contains("NaN"), "--reps 0 timed nothing: {text}");
}

#[test]
fn a_closed_stdout_ends_the_tool_as_a_closed_pipe_does_not_as_a_panic() {
    // The reading end is closed before the tool writes its first line (`… | head` that has
    // read all it wants).
    let mut child = Command::new(env!("CARGO_BIN_EXE_archipelago"))
        .args(["replay", "--mode", "dsu", "traces/hammock.npz"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("it ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}
