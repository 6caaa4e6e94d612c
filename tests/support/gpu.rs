//! The device for the GPU tests, and which cases of the conformance corpus
//! (`archipelago::synth::conformance`) the GPU corpus tests run.

#![allow(dead_code)]

use archipelago::gpu::Gpu;
use archipelago::gpu::graph::OutputReader;
use archipelago::gpu::workspace::Workspace;
use archipelago::{Error, Islands};

/// The device, or `None` after printing `skipped: no CUDA device` when there is none; any other
/// failure to open one fails the test.
pub fn open() -> Option<Gpu> {
    match Gpu::open() {
        Ok(g) => Some(g),
        Err(Error::NoDevice(why)) => {
            println!("skipped: no CUDA device ({why})");
            None
        }
        Err(e) => panic!("opening the device failed with {e}"),
    }
}

/// The corpus cases selected by `ARCHIPELAGO_GPU_CORPUS` ([`corpus_range_of`]).
pub fn corpus_range() -> std::ops::Range<usize> {
    corpus_range_of(std::env::var("ARCHIPELAGO_GPU_CORPUS").ok().as_deref())
}

/// The corpus cases a value of `ARCHIPELAGO_GPU_CORPUS` selects: the first 600 without one;
/// `all` the whole corpus the CPU modes are checked on in CI; a number that many cases; `a..b` a
/// range; `i/n` the `i`-th of `n` parts of the whole corpus (0-based), so that processes side by
/// side, or device calls one after another, share it without knowing its size. A value that
/// selects nothing (unparsable, a part past the last, an empty range) panics: a typo must not
/// turn a corpus run into one that checks no case and passes.
pub fn corpus_range_of(spec: Option<&str>) -> std::ops::Range<usize> {
    const DEFAULT: usize = 600;
    let all = archipelago::synth::CONFORMANCE_CASES;
    let Some(s) = spec else { return 0..DEFAULT };
    let bad = || -> ! {
        panic!("ARCHIPELAGO_GPU_CORPUS={s:?}: want all, N, a..b or i/n (cases 0..{all})")
    };
    let num = |t: &str| t.trim().parse::<usize>().unwrap_or_else(|_| bad());
    let range = if s == "all" {
        0..all
    } else if let Some((a, b)) = s.split_once("..") {
        num(a)..num(b).min(all)
    } else if let Some((i, n)) = s.split_once('/') {
        let (i, n) = (num(i), num(n));
        if i >= n {
            bad();
        }
        all * i / n..all * (i + 1) / n
    } else {
        0..num(s).min(all)
    };
    if range.is_empty() {
        bad();
    }
    range
}

/// Asserts that the bench's reader of every output (`gpu::graph::OutputReader`) finds what `out`
/// holds, as downloaded from `workspace`: its spans are the outputs' sizes, and the XOR of what
/// it read on the device equals the host's over `out`. That XOR shows a missed or doubled int
/// only where its value does not cancel, and outputs repeat values: this checks the spans, and
/// the lib's test over random ints checks the kernel. `what` names the case in a failure.
pub fn assert_reader_reads(gpu: &Gpu, workspace: &Workspace, out: &Islands, what: &str) {
    let fields = out.fields();
    let sizes: Vec<usize> = fields.iter().map(|f| 4 * f.1.len()).collect();
    let spans: Vec<usize> = workspace.output_spans().iter().map(|s| s.1).collect();
    assert_eq!(spans, sizes, "{what}: the spans' bytes");
    let xor = fields
        .iter()
        .flat_map(|f| f.1.iter())
        .fold(0, |x, &v| x ^ v as u32);
    let reader = OutputReader::new(gpu, workspace).unwrap();
    assert_eq!(reader.xor().unwrap(), xor, "{what}");
}
