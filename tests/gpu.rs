//! Every GPU mode against the CPU oracle: generated cases covering the corner cases (no trees,
//! worlds without rows, rowless-only worlds, empty and wide hyperedges, long chains, duplicate
//! rows, shared-memory fallback), graph replays against direct launches, reuse of one solver
//! across batches, the bench's reader of every output, and the typed errors. Without a CUDA
//! device every test prints `skipped: no CUDA device` and passes.

#[path = "support/gpu.rs"]
mod device;
#[path = "support/traces.rs"]
mod traces;

use device::{assert_reader_reads, open};

use archipelago::gpu::kernel_cache::DiskCache;
use archipelago::gpu::module::Split;
use archipelago::gpu::{self, Gpu, Mode, Solver};
use archipelago::synth::Rng;
use archipelago::{Batch, Capacity, Error, Input, Islands, Model, RowType, oracle};
use cudarc::driver::PushKernelArg;

#[derive(Clone, Copy, Debug)]
enum Shape {
    Random,
    Chain,
    Star,
    Wide,
    Singles,
    Mixed,
}

struct Case {
    name: String,
    model: Model,
    batch: Batch,
}

fn world(
    rng: &mut Rng,
    b: &mut archipelago::BatchBuilder,
    ntree: usize,
    rows: usize,
    shape: Shape,
    rowless: usize,
) {
    let types = RowType::ALL;
    let pick = |rng: &mut Rng| types[rng.below(types.len())];
    if ntree > 0 {
        let perm: Vec<i32> = {
            let mut p: Vec<i32> = (0..ntree as i32).collect();
            rng.shuffle(&mut p);
            p
        };
        for k in 0..rows {
            let shape = if let Shape::Mixed = shape {
                [
                    Shape::Random,
                    Shape::Chain,
                    Shape::Star,
                    Shape::Wide,
                    Shape::Singles,
                ][rng.below(5)]
            } else {
                shape
            };
            let support: Vec<i32> = match shape {
                Shape::Random => {
                    let n = 1 + rng.below(3);
                    (0..n).map(|_| rng.below(ntree) as i32).collect()
                }
                Shape::Chain => {
                    let i = k % ntree.max(2).saturating_sub(1).max(1);
                    if ntree == 1 {
                        vec![0]
                    } else {
                        vec![perm[i], perm[(i + 1) % ntree]]
                    }
                }
                Shape::Star => vec![perm[0], rng.below(ntree) as i32],
                Shape::Wide => {
                    let n = 1 + rng.below(ntree.min(300));
                    (0..n).map(|_| rng.below(ntree) as i32).collect()
                }
                Shape::Singles | Shape::Mixed => vec![rng.below(ntree) as i32],
            };
            let t = pick(rng);
            b.row(t, k as i32, &support);
            if rng.below(8) == 0 {
                b.row(t, k as i32, &support); // duplicate row
            }
        }
        for e in 0..rowless {
            let n = rng.below(ntree.min(80) + 1); // may be empty
            let support: Vec<i32> = (0..n).map(|_| rng.below(ntree) as i32).collect();
            b.rowless(e as i32, &support);
        }
    }
    b.end_world();
}

fn case(seed: u64, nworld: usize, ntree: usize, rows: usize, shape: Shape, rowless: usize) -> Case {
    let mut rng = Rng::new(seed);
    let dofnum: Vec<i32> = (0..ntree).map(|_| 1 + rng.below(6) as i32).collect();
    let model = Model::from_dofnum(&dofnum).unwrap();
    let mut b = Batch::builder();
    for w in 0..nworld {
        // Some worlds have no rows (maybe rowless hyperedges alone), others vary in size.
        let r = match w % 5 {
            0 if nworld > 1 => 0,
            1 => rows / 3,
            _ => rows,
        };
        world(&mut rng, &mut b, ntree, r, shape, rowless);
    }
    Case {
        name: format!("seed {seed} {nworld}x{ntree} rows {rows} {shape:?} rowless {rowless}"),
        model,
        batch: b.finish(),
    }
}

fn corpus() -> Vec<Case> {
    let mut cases = vec![
        case(1, 1, 0, 0, Shape::Random, 0),
        case(2, 3, 0, 0, Shape::Random, 0),
        case(3, 1, 1, 1, Shape::Singles, 0),
        case(4, 4, 5, 6, Shape::Random, 2),
        case(5, 1, 4096, 4095, Shape::Chain, 0),
        case(6, 2, 700, 699, Shape::Chain, 3),
        case(7, 8, 64, 64, Shape::Random, 0),
        case(8, 5, 300, 200, Shape::Wide, 4),
        case(9, 6, 22, 100, Shape::Random, 1),
        case(10, 3, 100, 50, Shape::Star, 2),
        case(11, 7, 40, 40, Shape::Singles, 3),
        case(12, 2, 10_000, 3000, Shape::Mixed, 2), // scratch beyond shared memory
        case(13, 33, 1, 3, Shape::Random, 1),
        case(14, 9, 1200, 1500, Shape::Mixed, 5),
    ];
    for seed in 100..130u64 {
        let mut r = Rng::new(seed);
        let ntree = r.below(200);
        let shape = [
            Shape::Random,
            Shape::Chain,
            Shape::Star,
            Shape::Wide,
            Shape::Singles,
            Shape::Mixed,
        ][r.below(6)];
        cases.push(case(
            seed,
            1 + r.below(12),
            ntree,
            r.below(3 * ntree + 2),
            shape,
            r.below(4),
        ));
    }
    cases
}

/// The same trees with their dof blocks laid out in reverse tree order (valid for MuJoCo's
/// arrays, but not "consecutive in tree order"), to exercise the serial dof scatter.
fn reversed_dofs(model: &Model) -> Model {
    let n = model.ntree();
    let num = model.tree_dofnum().to_vec();
    let mut adr = vec![0; n];
    let mut next = 0;
    for t in (0..n).rev() {
        adr[t] = next;
        next += num[t];
    }
    let mut owner = vec![0; next as usize];
    for t in 0..n {
        for d in adr[t]..adr[t] + num[t] {
            owner[d as usize] = t as i32;
        }
    }
    Model::from_parts(adr, num, owner).unwrap()
}

#[test]
fn dof_blocks_is_detected() {
    let m = Model::from_dofnum(&[3, 1, 6]).unwrap();
    assert!(gpu::workspace::dof_blocks(&m));
    assert!(!gpu::workspace::dof_blocks(&reversed_dofs(&m)));
    assert!(gpu::workspace::dof_blocks(
        &Model::from_dofnum(&[]).unwrap()
    ));
}

#[test]
fn dof_layouts_out_of_tree_order_use_the_serial_dof_maps() {
    let Some(gpu) = open() else { return };
    for seed in [60, 61, 62] {
        let mut c = case(seed, 4, 90, 120, Shape::Mixed, 2);
        c.model = reversed_dofs(&c.model);
        c.name.push_str(" reversed dofs");
        for mode in Mode::ALL {
            check(&gpu, mode, &c);
        }
    }
}

#[test]
fn auto_picks_a_measured_mode_that_is_exact() {
    let Some(gpu) = open() else { return };
    let c = case(70, 16, 64, 64, Shape::Random, 1);
    let input = Input::new(&c.model, &c.batch).unwrap();
    let cap = Capacity::fit(&c.model, &c.batch);
    let (mut solver, choice) =
        gpu::auto::choose(&gpu, cap, &c.model, &input, Default::default()).unwrap();
    assert_eq!(solver.mode(), choice.mode);
    assert_eq!(choice.measured.len(), Mode::ALL.len());
    let mut got = Islands::default();
    solver.solve(&input, &mut got).unwrap();
    assert_eq!(got.first_mismatch(&oracle::solve(&input)), None);
}

fn check(gpu: &Gpu, mode: Mode, c: &Case) {
    let input = Input::new(&c.model, &c.batch).unwrap();
    check_against(gpu, mode, c, &oracle::solve(&input), true);
}

/// `mode` on `c` equals `want` (the oracle's outputs): the first step, launched directly (its
/// graph captured at the download), and the second, a replay of that graph; with `thorough`,
/// direct launches and a third step give the same outputs again.
fn check_against(gpu: &Gpu, mode: Mode, c: &Case, want: &Islands, thorough: bool) {
    let input = Input::new(&c.model, &c.batch).unwrap();
    let cap = Capacity::fit(&c.model, &c.batch);
    let mut solver = match Solver::new(gpu, mode, cap, &c.model) {
        Ok(s) => s,
        Err(Error::Refused { .. }) if mode == Mode::Dense => return,
        Err(e) => panic!("{mode} on {}: {e}", c.name),
    };
    let mut got = Islands::default();
    solver.solve(&input, &mut got).unwrap();
    if let Some(m) = got.first_mismatch(want) {
        panic!("{mode} (first step, launched directly) on {}: {m}", c.name);
    }
    assert!(
        solver.is_captured(),
        "{mode}: no graph after the first download"
    );
    solver.solve(&input, &mut got).unwrap();
    if let Some(m) = got.first_mismatch(want) {
        panic!("{mode} (graph) on {}: {m}", c.name);
    }
    if !thorough {
        return;
    }
    let mut direct = Islands::default();
    solver.solve_direct(&input, &mut direct).unwrap();
    assert!(
        direct == got,
        "{mode}: direct launches differ from graph replay on {}",
        c.name
    );
    // A replay of the same graph gives the same outputs again.
    let mut again = Islands::default();
    solver.solve(&input, &mut again).unwrap();
    assert!(again == got, "{mode}: second replay differs on {}", c.name);
}

#[test]
fn every_mode_equals_the_oracle_on_the_corpus() {
    let Some(gpu) = open() else { return };
    let cases = corpus();
    for mode in Mode::ALL {
        for c in &cases {
            check(&gpu, mode, c);
        }
        println!("{mode}: {} cases equal to the oracle", cases.len());
    }
}

#[test]
fn every_mode_equals_the_oracle_on_the_generated_corpus() {
    let Some(gpu) = open() else { return };
    let range = device::corpus_range();
    let start = std::time::Instant::now();
    // One oracle per case for every mode; the first 600 cases also check direct launches and
    // repeated replays, the rest (with ARCHIPELAGO_GPU_CORPUS) only the graph's outputs.
    let cases = archipelago::synth::conformance().enumerate();
    for (k, c) in cases.skip(range.start).take(range.len()) {
        let case = Case {
            name: format!("conformance case {k}, seed {:#x} {:?}", c.seed, c.spec),
            model: c.model,
            batch: c.batch,
        };
        let want = oracle::solve(&Input::new(&case.model, &case.batch).unwrap());
        for mode in Mode::ALL {
            check_against(&gpu, mode, &case, &want, k < 600);
        }
        if k % 2000 == 0 {
            eprintln!("case {k} at {:.1} s", start.elapsed().as_secs_f64());
        }
    }
    println!(
        "every GPU mode equal to the oracle on conformance corpus cases {range:?} ({:.1} s)",
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn one_solver_serves_many_batches_within_its_capacity() {
    let Some(gpu) = open() else { return };
    let a = case(40, 6, 120, 200, Shape::Mixed, 2);
    let mut rng = Rng::new(41);
    let mut b = Batch::builder();
    for _ in 0..3 {
        world(&mut rng, &mut b, 120, 150, Shape::Chain, 1);
    }
    let b = b.finish();
    let cap = Capacity {
        nworld: 6,
        ntree: 120,
        nv: a.model.nv(),
        njmax: 600,
        nsupport: 600 * 300,
        nedge: 4,
    };
    for mode in Mode::ALL {
        let mut solver = Solver::new(&gpu, mode, cap, &a.model).unwrap();
        for batch in [&a.batch, &b, &a.batch] {
            let input = Input::with_capacity(&a.model, batch, &cap).unwrap();
            let want = oracle::solve(&input);
            let mut got = Islands::default();
            // A new world count: launched directly, captured at the download; then replayed.
            solver.upload(&input).unwrap();
            solver.replay().unwrap();
            assert!(!solver.is_captured(), "{mode}");
            solver.download(&input, &mut got).unwrap();
            assert!(solver.is_captured(), "{mode}");
            assert_eq!(got.first_mismatch(&want), None, "{mode}");
            solver.solve(&input, &mut got).unwrap();
            assert_eq!(got.first_mismatch(&want), None, "{mode}");
        }
        // Replayed twice before a download, a direct launch's graph is captured at the second.
        let input = Input::with_capacity(&a.model, &b, &cap).unwrap();
        let mut got = Islands::default();
        solver.upload(&input).unwrap();
        solver.replay().unwrap();
        solver.replay().unwrap();
        assert!(solver.is_captured(), "{mode}");
        solver.download(&input, &mut got).unwrap();
        assert_eq!(got.first_mismatch(&oracle::solve(&input)), None, "{mode}");
    }
}

#[test]
fn page_locked_outputs_follow_buffers_that_grow() {
    let Some(gpu) = open() else { return };
    let a = case(42, 6, 120, 200, Shape::Mixed, 2);
    let cap = Capacity::fit(&a.model, &a.batch);
    // Registered for one world with one row: the first fill must move (and re-register) buffers.
    let tiny = Capacity {
        nworld: 1,
        njmax: 1,
        ..cap
    };
    let mut out = gpu::PinnedIslands::new(&gpu, &tiny);
    let mut solver = Solver::new(&gpu, Mode::Block, cap, &a.model).unwrap();
    let input = Input::new(&a.model, &a.batch).unwrap();
    let want = oracle::solve(&input);
    for _ in 0..3 {
        out.fill(&input, |o| solver.solve(&input, o)).unwrap();
        assert_eq!(out.first_mismatch(&want), None);
    }
    let used: usize = [&out.tree_island, &out.map_dof2idof, &out.efc_island]
        .iter()
        .map(|v| v.len() * 4)
        .sum();
    assert!(
        out.pinned_bytes() >= used,
        "{} < {used}",
        out.pinned_bytes()
    );
    let kept = out.into_inner();
    assert_eq!(kept.first_mismatch(&want), None);
}

#[test]
fn page_locked_batches_are_rebuilt_in_place_and_follow_growth() {
    let Some(gpu) = open() else { return };
    let a = case(43, 6, 120, 200, Shape::Mixed, 2);
    let b = case(44, 6, 120, 400, Shape::Chain, 1);
    let cap = Capacity {
        nworld: 6,
        ntree: 120,
        nv: a.model.nv(),
        njmax: 1200,
        nsupport: 1200 * 120,
        nedge: 4,
    };
    // Room for one small world only: the first builds must grow (and re-register) the arrays.
    let tiny = Capacity {
        nworld: 1,
        njmax: 1,
        nsupport: 2,
        nedge: 0,
        ..cap
    };
    let mut rows = gpu::PinnedBatch::new(&gpu, &tiny);
    let mut solver = Solver::new(&gpu, Mode::Block, cap, &a.model).unwrap();
    let mut out = gpu::PinnedIslands::new(&gpu, &cap);
    for src in [&a.batch, &b.batch, &a.batch, &b.batch] {
        rows.build(|builder| {
            builder.worlds_from(src);
        });
        assert_eq!(&*rows, src);
        let input = Input::with_capacity(&a.model, &rows, &cap).unwrap();
        out.fill(&input, |o| solver.solve(&input, o)).unwrap();
        assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
    }
    assert!(rows.pinned_bytes() >= rows.row_support.len() * 4);
}

#[test]
fn over_capacity_is_refused_not_run() {
    let Some(gpu) = open() else { return };
    let c = case(50, 2, 30, 40, Shape::Random, 0);
    let mut cap = Capacity::fit(&c.model, &c.batch);
    cap.njmax -= 1;
    let mut solver = Solver::new(&gpu, Mode::Block, cap, &c.model).unwrap();
    let input = Input::new(&c.model, &c.batch).unwrap();
    let err = solver.solve(&input, &mut Islands::default()).unwrap_err();
    assert!(matches!(err, Error::OverCapacity { .. }), "{err}");
}

#[test]
fn a_model_of_another_dof_layout_is_refused() {
    // As many trees and dofs, the dof blocks in reverse tree order: every mode's dof-level
    // outputs would follow the layout its solver was built with, so the step is refused; a
    // solver built for that model is exact.
    let Some(gpu) = open() else { return };
    let c = case(51, 2, 12, 20, Shape::Random, 0);
    let other = reversed_dofs(&c.model);
    assert_ne!(other, c.model);
    let cap = Capacity::fit(&c.model, &c.batch);
    let input = Input::new(&other, &c.batch).unwrap();
    let want = oracle::solve(&input);
    for mode in Mode::ALL {
        let mut built = Solver::new(&gpu, mode, cap, &c.model).unwrap();
        let err = built.solve(&input, &mut Islands::default()).unwrap_err();
        assert!(
            matches!(err, Error::Refused { mode: "gpu", .. }),
            "{mode}: {err}"
        );
        let mut out = Islands::default();
        Solver::new(&gpu, mode, cap, &other)
            .unwrap()
            .solve(&input, &mut out)
            .unwrap();
        assert_eq!(out.first_mismatch(&want), None, "{mode}");
    }
}

#[test]
fn the_floor_bandwidth_is_measured_on_the_device() {
    let Some(gpu) = open() else { return };
    let bw = gpu::graph::copy_bandwidth(&gpu, 256 << 20, 10).unwrap();
    // Runs of 3 and of 10 copies give one rate: the time is divided by the copies, not the runs.
    let fewer = gpu::graph::copy_bandwidth(&gpu, 256 << 20, 3).unwrap();
    assert!(
        (fewer / bw - 1.0).abs() < 0.2,
        "{fewer} against {bw} bytes/s"
    );
    // Against the memory's peak (from the driver's clock and bus width; 1.1 leaves room for a
    // driver that reports them a little low): a copy counted one way only would read about half
    // of it, one served from L2 more than all of it.
    match gpu::graph::peak_bandwidth(&gpu) {
        Some(peak) => {
            println!(
                "copies: {bw:.3e} bytes/s, {:.2} of the peak {peak:.3e}",
                bw / peak
            );
            assert!(
                bw > 0.55 * peak && bw < 1.1 * peak,
                "{bw} against a peak of {peak}"
            );
        }
        None => {
            println!("no memory clock or bus width reported: {bw:.3e} bytes/s, not checked");
            assert!(bw.is_finite() && bw > 1e9, "{bw} bytes/s");
        }
    }
    // Buffers no device holds are a typed error, not a panic.
    match gpu::graph::copy_bandwidth(&gpu, 1 << 42, 1) {
        Err(Error::OutOfMemory { asked, free }) => assert!(asked > free, "{asked} <= {free}"),
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(bw) => panic!("copied 4 TiB at {bw} bytes/s"),
    }
}

#[test]
fn out_of_memory_is_a_typed_error() {
    let Some(gpu) = open() else { return };
    // 2^22 worlds of 2^16 trees: ~1 TiB of labels alone, more than any device has.
    let cap = Capacity {
        nworld: 1 << 22,
        ntree: 1 << 16,
        nv: 1 << 16,
        njmax: 1,
        nsupport: 1,
        nedge: 0,
    };
    let model_big = Model::from_dofnum(&vec![1; 1 << 16]).unwrap();
    match Solver::new(&gpu, Mode::Dsu, cap, &model_big) {
        Err(Error::OutOfMemory { asked, free }) => assert!(asked > free, "{asked} <= {free}"),
        Err(e) => panic!("expected OutOfMemory, got {e}"),
        Ok(_) => panic!("a 1 TiB workspace was allocated"),
    }
    // Dense refuses before allocating when its matrix would not fit.
    let cap = Capacity {
        nworld: 1 << 14,
        ntree: 1 << 12,
        nv: 1 << 12,
        njmax: 1,
        nsupport: 1,
        nedge: 0,
    };
    let m = Model::from_dofnum(&vec![1; 1 << 12]).unwrap();
    assert!(matches!(
        Solver::new(&gpu, Mode::Dense, cap, &m),
        Err(Error::Refused { mode: "dense", .. })
    ));
}

#[test]
fn a_compile_failure_carries_the_nvrtc_log() {
    if !gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    let err =
        gpu::module::compile_cached("extern \"C\" __global__ void k() { undeclared(); }", (9, 0))
            .unwrap_err();
    match err {
        Error::Compile { log, .. } => assert!(log.contains("undeclared"), "{log}"),
        e => panic!("expected a compile error, got {e}"),
    }
}

/// Without libnvrtc every function that compiles returns [`Error::NoDevice`] (cudarc itself
/// would panic on loading it). Where NVRTC is on the loader's path through `LD_LIBRARY_PATH`
/// (CI fetches it so), the test runs itself again in a child process without it.
#[test]
fn without_nvrtc_the_compile_functions_are_typed_errors() {
    const CHILD: &str = "ARCHIPELAGO_TEST_NO_NVRTC_CHILD";
    let name = "without_nvrtc_the_compile_functions_are_typed_errors";
    if gpu::nvrtc_present() {
        if std::env::var_os(CHILD).is_some() || std::env::var_os("LD_LIBRARY_PATH").is_none() {
            println!("skipped: NVRTC is on the loader's default path");
            return;
        }
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env_remove("LD_LIBRARY_PATH")
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        return;
    }
    let src = "extern \"C\" __global__ void k(int* o) { *o = 1; }";
    let no_device = |r: archipelago::Result<()>| match r {
        Err(Error::NoDevice(why)) => assert!(why.contains("NVRTC"), "{why}"),
        other => panic!("expected no device, got {other:?}"),
    };
    no_device(gpu::module::compile_cached(src, (9, 0)).map(drop));
    no_device(gpu::module::check_assembles(src, (9, 0)));
    no_device(gpu::module::machine_code_with(src, (9, 0), Split::Off, None).map(drop));
    no_device(gpu::module::device_layout(src, "int", 4, &[]).map(drop));
    // The key of a program is still made (no build will ever match it).
    gpu::module::disk_key(src, (9, 0), Split::Off);
}

/// A kernel the front end accepts and the assembler rejects: more static shared memory than a
/// block may have.
const TOO_MUCH_SHARED: &str = "extern \"C\" __global__ void k(int* o) {
    __shared__ int s[1 << 20];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    o[threadIdx.x] = s[threadIdx.x ^ 1];
}";

#[test]
fn an_assembler_failure_is_a_compile_error_and_nothing_is_kept() {
    if !gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    // The PTX compiles; the assembler refuses it, without a device, whether asked to check it
    // or to build the machine code that a solver would load.
    gpu::module::compile_cached(TOO_MUCH_SHARED, (9, 0)).unwrap();
    match gpu::module::check_assembles(TOO_MUCH_SHARED, (9, 0)) {
        Err(Error::Compile { log, .. }) => assert!(log.contains("shared"), "{log}"),
        other => panic!("expected a compile error, got {other:?}"),
    }
    let disk = scratch_cache("refused");
    let built = gpu::module::machine_code_with(TOO_MUCH_SHARED, (9, 0), Split::Off, Some(&disk));
    match built {
        Err(Error::Compile { log, .. }) => assert!(log.contains("shared"), "{log}"),
        other => panic!("expected a compile error, got {other:?}"),
    }
    assert!(
        !disk.dir().exists(),
        "a refused program left a file in the kernel cache"
    );
}

/// An empty kernel cache of this test's own.
fn scratch_cache(name: &str) -> DiskCache {
    let dir = std::env::temp_dir().join(format!(
        "archipelago-test-kernels-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    DiskCache::at(dir)
}

#[test]
fn machine_code_is_kept_on_disk_and_loads() {
    if !gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    // A program no other test builds, so that neither cache holds it yet.
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let src = format!(
        "// {stamp}\nextern \"C\" __global__ void twice(int* o) {{ o[threadIdx.x] *= 2; }}\n"
    );
    let disk = scratch_cache("kept");
    let (image, built) =
        gpu::module::machine_code_with(&src, (9, 0), Split::Off, Some(&disk)).unwrap();
    assert!(!built.from_disk);
    assert!(image.starts_with(b"\x7fELF"), "not machine code");
    // One whole file, holding the image; no temporary one left.
    let files: Vec<_> = std::fs::read_dir(disk.dir())
        .unwrap()
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let stored = std::fs::read(&files[0]).unwrap();
    assert!(stored.ends_with(&image), "the file does not hold the image");
    // Asked again in this process: the same image, without NVRTC.
    let (again, built) =
        gpu::module::machine_code_with(&src, (9, 0), Split::Off, Some(&disk)).unwrap();
    assert_eq!((again, built.compile_s), (image.clone(), 0.0));
    std::fs::remove_dir_all(disk.dir()).unwrap();
    // Asked with another disk cache: stored there too, though this process had it already
    // (as `archipelago kernels` asks for the main module the device's opening built).
    let other = scratch_cache("kept-other");
    gpu::module::machine_code_with(&src, (9, 0), Split::Off, Some(&other)).unwrap();
    let key = gpu::module::disk_key(&src, (9, 0), Split::Off);
    assert_eq!(other.get(key).as_deref(), Some(&image[..]));
    std::fs::remove_dir_all(other.dir()).unwrap();
    // On a device: the driver loads it as it is, and the kernel runs.
    let Some(gpu) = open() else { return };
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    let (module, _) = gpu::module::load(&ctx, &image).unwrap();
    let f = module.load_function("twice").unwrap();
    let stream = ctx.default_stream();
    let mut o = stream.clone_htod(&[1i32, 2, 3, 4]).unwrap();
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut o);
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (4, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `twice` takes one int pointer, and `o` has the four ints its four threads touch.
    unsafe { launch.launch(cfg) }.unwrap();
    assert_eq!(stream.clone_dtoh(&o).unwrap(), [2, 4, 6, 8]);
    println!("{}", gpu.info().name);
}

#[test]
fn without_a_device_opening_reports_no_device() {
    match Gpu::open() {
        Ok(gpu) => println!("device present: {}", gpu.info().name),
        Err(Error::NoDevice(why)) => println!("skipped: no CUDA device ({why})"),
        Err(e) => panic!("expected NoDevice or a device, got {e}"),
    }
}

#[test]
fn the_kernels_compile_for_hopper() {
    if !gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    let src = gpu::module::program_source();
    let (ptx, _) = gpu::module::compile_cached(&src, (9, 0)).unwrap();
    // The assembler, which builds the machine code that a solver loads, accepts every kernel.
    gpu::module::check_assembles(&src, (9, 0)).unwrap();
    for k in [
        "maps_kernel",
        "block_dsu_kernel",
        "block_tiled_kernel",
        "dsu_union_kernel",
        "dense_dfs_kernel",
    ] {
        assert!(ptx.contains(k), "{k} missing from the PTX");
    }
}

#[test]
fn every_trace_in_every_mode_matches_native_and_the_oracle() {
    let Some(gpu) = open() else { return };
    use archipelago::trace::{self, Trace};
    let paths = traces::paths();
    assert!(!paths.is_empty(), "no committed traces found");
    let mut batch = Batch::default();
    let mut native = Islands::default();
    let mut got = Islands::default();
    for path in &paths {
        let tr = Trace::open(path).unwrap();
        // One capacity for every step of the trace.
        let mut cap: Option<Capacity> = None;
        for step in 0..tr.nstep() {
            tr.batch(step, &mut batch);
            let c = Capacity::fit(tr.model(), &batch);
            cap = Some(match cap {
                None => c,
                Some(m) => Capacity {
                    nworld: m.nworld.max(c.nworld),
                    ntree: m.ntree.max(c.ntree),
                    nv: m.nv.max(c.nv),
                    njmax: m.njmax.max(c.njmax),
                    nsupport: m.nsupport.max(c.nsupport),
                    nedge: m.nedge.max(c.nedge),
                },
            });
        }
        let Some(cap) = cap else { continue };
        for mode in Mode::ALL {
            let mut solver = match Solver::new(&gpu, mode, cap, tr.model()) {
                Ok(s) => s,
                Err(Error::Refused { .. }) if mode == Mode::Dense => continue,
                Err(e) => panic!("{mode} on {}: {e}", path.display()),
            };
            for step in 0..tr.nstep() {
                tr.batch(step, &mut batch);
                tr.native(step, &mut native);
                let input = Input::new(tr.model(), &batch).unwrap();
                solver.solve(&input, &mut got).unwrap();
                if let Some(m) = trace::compare(&got, &native) {
                    panic!(
                        "{mode} on {} step {step}: {m} (against native)",
                        path.display()
                    );
                }
                if let Some(m) = got.first_mismatch(&oracle::solve(&input)) {
                    panic!(
                        "{mode} on {} step {step}: {m} (against the oracle)",
                        path.display()
                    );
                }
            }
        }
        println!(
            "{}: {} steps x {} worlds, every mode equals native",
            path.display(),
            tr.nstep(),
            tr.nworld()
        );
    }
}

/// `Args` is passed to every kernel by value: the host's `#[repr(C)]` block must have the size
/// and field offsets of `struct Args` in `kernels/common.cu`, or a kernel would read one field
/// for another. NVRTC alone tells the device's layout (`gpu::module::device_layout`).
#[test]
fn the_argument_block_matches_the_kernels() {
    if !gpu::nvrtc_present() {
        println!("skipped: no CUDA device (no NVRTC)");
        return;
    }
    use archipelago::gpu::workspace::Args;
    #[rustfmt::skip]
    let host = archipelago::field_offsets!(Args;
        world_rowadr, world_edgeadr, supadr, support, row_type, rank, dof_treeid, tree_dofadr,
        tree_dofnum, labels, fallback, rounds, dense_mat, dense_stack, nisland, nidof, tree_island,
        island_ntree, island_itreeadr, map_itree2tree, dof_island, island_nv, island_idofadr,
        island_dofadr, map_dof2idof, map_idof2dof, efc_island, island_ne, island_nf, island_nefc,
        island_iefcadr, map_efc2iefc, map_iefc2efc, row_mirror, nworld, ntree, nv, use_smem,
        dof_blocks, mirror_rows, rowless_islands,
    );
    // Every field listed: the last one ends the block, up to its alignment.
    let size = std::mem::size_of::<Args>();
    assert_eq!((host[host.len() - 1].1 + 4).next_multiple_of(8), size);
    let names: Vec<&str> = host.iter().map(|f| f.0).collect();
    let src = gpu::module::program_source();
    let device = gpu::module::device_layout(&src, "Args", size, &names).unwrap();
    assert_eq!(
        device, host,
        "(field, offset) on the device and on the host"
    );
}

/// The bench's reader of every output after a step (`bench --quotient`'s read column) reads
/// exactly the outputs each mode's step wrote, on batches of one world and of many: its spans
/// are the outputs' sizes, and the XOR of what it read equals the host's over the downloaded
/// outputs (see `assert_reader_reads` for what that XOR can and cannot show).
#[test]
fn the_output_reader_reads_every_output_each_mode_wrote() {
    let Some(gpu) = open() else { return };
    for c in [
        case(70, 1, 12, 20, Shape::Random, 1),
        case(71, 37, 90, 160, Shape::Mixed, 3),
    ] {
        let input = Input::new(&c.model, &c.batch).unwrap();
        let cap = Capacity::fit(&c.model, &c.batch);
        for mode in Mode::ALL {
            let mut solver = Solver::new(&gpu, mode, cap, &c.model).unwrap();
            let mut out = Islands::default();
            solver.solve(&input, &mut out).unwrap();
            assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
            assert_reader_reads(
                &gpu,
                solver.workspace(),
                &out,
                &format!("{} {mode:?}", c.name),
            );
        }
    }
}
