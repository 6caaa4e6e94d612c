//! The quotient's NVRTC programs: the block program, which every solver loads, its copy with
//! registers capped, and the warp program, which only a solver whose batches may take a warp a
//! world loads. Apart so that what is compiled, from which sources and under which name, reads
//! in one place.

use crate::gpu::module::{self, Program, Split};
use crate::gpu::phase_trace;
use crate::gpu::regcap;

/// The block program's source: the shared definitions, the quotient's device code, then its
/// block-per-world entry points (with the phase marks compiled in when
/// [`phase_trace::requested`]).
pub fn block_program_source() -> String {
    let entries = (
        "quotient_block.cu",
        include_str!("../../../kernels/quotient_block.cu"),
    );
    format!("{}{}", define(), program_source(entries))
}

/// The define that compiles the phase marks in, where they are asked for.
fn define() -> &'static str {
    if phase_trace::requested() {
        phase_trace::DEFINE
    } else {
        ""
    }
}

/// The warp program's source: the shared definitions, the quotient's device code, then its
/// warp-per-world entry points (with the phase marks compiled in when
/// [`phase_trace::requested`]).
pub fn warp_program_source() -> String {
    let entries = (
        "quotient_warp.cu",
        include_str!("../../../kernels/quotient_warp.cu"),
    );
    format!("{}{}", define(), program_source(entries))
}

/// The block program's copy with at most [`regcap::QUOTIENT`] registers a thread, for batches
/// of many waves (regcap).
pub fn capped_program_source() -> String {
    regcap::source(regcap::QUOTIENT, &block_program_source())
}

/// The block program ([`block_program_source`]), named apart with the phase marks compiled in.
pub fn block_program() -> Program {
    marked(("quotient", "quotient (phase marks)"), block_program_source)
}

/// The block program's register-capped copy ([`capped_program_source`]), named apart with the
/// phase marks compiled in.
pub fn capped_program() -> Program {
    let names = (
        "quotient (registers capped)",
        "quotient (phase marks, registers capped)",
    );
    marked(names, capped_program_source)
}

/// A program of `source` under the first of `names`, or the second where the phase
/// marks are compiled in (a different text).
fn marked(names: (&'static str, &'static str), source: fn() -> String) -> Program {
    Program {
        name: if phase_trace::requested() {
            names.1
        } else {
            names.0
        },
        source,
        split: Split::Off,
    }
}

/// The warp program ([`warp_program_source`]), named apart with the phase marks compiled in:
/// its twenty-four kernels assemble a thread each ([`Split::Kernels`]: the same machine code,
/// most of a cold start's assembly otherwise).
pub fn warp_program() -> Program {
    let names = (
        "quotient (warp kernels)",
        "quotient (phase marks, warp kernels)",
    );
    Program {
        split: Split::Kernels,
        ..marked(names, warp_program_source)
    }
}

fn program_source(entries: (&str, &str)) -> String {
    let sources = [
        ("common.cu", include_str!("../../../kernels/common.cu")),
        ("quotient.cu", include_str!("../../../kernels/quotient.cu")),
        entries,
    ];
    module::concat(&sources)
}
