//! The kernel modules: `kernels/*.cu`, embedded in the binary, compiled by NVRTC for the
//! device's compute capability (e.g. `sm_90`) and cached, so that opening a device twice
//! compiles once. The main module ([`SOURCES`]) is built when a device is opened; the order
//! step's and the quotient's when their first solver is made ([`super::Gpu`] keeps them per
//! context).
//!
//! NVRTC builds each program's machine code itself (its front end, then the assembler), and
//! the driver loads that as it is ([`load`]). The machine code is kept per process and on disk
//! ([`super::kernel_cache`]), so only the first process of a build on a machine waits for
//! NVRTC: the quotient's programs took NVRTC and the assembler most of a minute on an H200's
//! host. The quotient's warp program, twenty-four kernels of about 400 KB of machine code
//! each, is assembled a kernel a thread ([`Split::Kernels`]).
//!
//! Until session 53 NVRTC emitted PTX and the driver assembled it at load, keeping the result
//! in its own on-disk cache; NVRTC then ran in every process, and the driver's assembler on
//! one thread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, DriverError, sys};
use cudarc::nvrtc::{Ptx, result as nvrtc, sys as nvrtc_sys};

use super::cuda;
use super::kernel_cache::{self, DiskCache};
use crate::error::{Error, Result};

/// The CUDA C sources of the main module, in the order they are concatenated into one program.
/// The deterministic order step (`order.cu`, [`super::order::program_source`]) and the quotient
/// (`quotient.cu`, [`super::quotient::block_program_source`] and
/// [`super::quotient::warp_program_source`]) are programs of their own, compiled and loaded
/// only by the solvers that use them: most processes need neither, and each took NVRTC about
/// as long as the rest together.
pub const SOURCES: [(&str, &str); 7] = [
    ("common.cu", include_str!("../../kernels/common.cu")),
    ("dense.cu", include_str!("../../kernels/dense.cu")),
    ("dsu.cu", include_str!("../../kernels/dsu.cu")),
    ("block.cu", include_str!("../../kernels/block.cu")),
    ("labelprop.cu", include_str!("../../kernels/labelprop.cu")),
    ("tiled.cu", include_str!("../../kernels/tiled.cu")),
    ("warp.cu", include_str!("../../kernels/warp.cu")),
];

/// The main module's program: every source of [`SOURCES`] (see [`concat()`]).
pub fn program_source() -> String {
    concat(&SOURCES)
}

/// One program from `sources`, each preceded by a `#line` so NVRTC's log names the file.
pub fn concat(sources: &[(&str, &str)]) -> String {
    let mut src = String::new();
    for (name, text) in sources {
        src.push_str(&format!("#line 1 \"{name}\"\n"));
        src.push_str(text);
        src.push('\n');
    }
    src
}

/// Whether NVRTC assembles a program's kernels on threads of their own (`--split-compile=0`:
/// as many as the host has). The quotient's warp program does: its assembly on one thread was
/// most of a cold start, and its machine code comes out byte for byte the same (each kernel's
/// `.text` compared, NVRTC 13.0, `sm_90`). The others keep one thread: they assemble in
/// seconds, and the quotient's block program and the order step's come out different that way
/// (a function shared by two kernels is copied into each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    /// One thread.
    Off,
    /// A thread a kernel.
    Kernels,
}

/// One NVRTC program of the kernels: the name its module is kept under in a context (each
/// [`super::Gpu`] loads a program once), its text and how it assembles.
/// [`super::programs`] lists every one a process may build.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// The name its module is kept under; tells apart every text a caller may pass.
    pub name: &'static str,
    /// Its text.
    pub source: fn() -> String,
    /// Whether its kernels assemble on threads of their own.
    pub split: Split,
}

/// The main module: the full-rebuild modes' kernels, built when a device is opened.
pub const MAIN: Program = Program {
    name: "main",
    source: program_source,
    split: Split::Off,
};

/// Where a program's machine code came from, and what it cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Built {
    /// Seconds NVRTC took in this process (0 when the code came from a cache).
    pub compile_s: f64,
    /// The code came from the on-disk cache (an earlier process built it).
    pub from_disk: bool,
}

/// What NVRTC is asked for: PTX (for inspection) or machine code (what is loaded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Output {
    Ptx,
    MachineCode,
}

type Cache = Mutex<HashMap<u128, Arc<Vec<u8>>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// The lock of the build of program `key` (one a program, kept for the process).
fn building(key: u128) -> Arc<Mutex<()>> {
    static BUILDING: OnceLock<Mutex<HashMap<u128, Arc<Mutex<()>>>>> = OnceLock::new();
    let map = BUILDING.get_or_init(Mutex::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(key).or_default().clone()
}

/// NVRTC's options for `arch` (e.g. `compute_90` or `sm_90`). With `ARCHIPELAGO_LINEINFO=1`
/// the code carries line tables for profilers (Nsight Compute's source view); the code itself
/// is unchanged.
fn options(arch: &str, split: Split) -> Vec<String> {
    let mut options = vec![format!("--gpu-architecture={arch}"), "-std=c++17".into()];
    if super::env_choice("ARCHIPELAGO_LINEINFO") == Some(true) {
        options.push("--generate-line-info".into());
    }
    if split == Split::Kernels {
        options.push("--split-compile=0".into());
    }
    options
}

/// The real architecture of capability `cc` (e.g. `sm_90`): what machine code is built for.
fn sm(cc: (i32, i32)) -> String {
    format!("sm_{}{}", cc.0, cc.1)
}

/// `Ok` where libnvrtc can be loaded, else the typed error every NVRTC entry point returns:
/// cudarc panics when it has to load a library that is missing.
fn require_nvrtc() -> Result<()> {
    if super::nvrtc_present() {
        Ok(())
    } else {
        Err(Error::NoDevice(
            "the NVRTC library (libnvrtc) is not installed; the kernels cannot be compiled".into(),
        ))
    }
}

/// NVRTC's version, which the machine code depends on (part of every key); asked once.
/// Without libnvrtc, a version no build has, so that no key made then matches one made by a
/// build.
fn nvrtc_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        if require_nvrtc().is_err() {
            return "nvrtc absent".into();
        }
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two out-parameters; libnvrtc is present (checked above).
        let status = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
        match status {
            nvrtc_sys::nvrtcResult::NVRTC_SUCCESS => format!("nvrtc {major}.{minor}"),
            other => format!("nvrtc unknown ({other:?})"),
        }
    })
}

/// The key of `src` built with `options` into `output` (in both caches): everything the code
/// depends on, NVRTC's version included.
fn key(src: &str, options: &[String], output: Output) -> u128 {
    let kind: &[u8] = match output {
        Output::Ptx => b"ptx",
        Output::MachineCode => b"machine code",
    };
    let (options, version) = (options.join("\0"), nvrtc_version());
    kernel_cache::key(&[src.as_bytes(), options.as_bytes(), version.as_bytes(), kind])
}

/// Compiles `src` (or takes it from this process's cache) for `arch` into `output`; also where
/// it came from. `disk`: the on-disk cache to consult and fill (machine code only).
fn build(
    src: &str,
    arch: &str,
    split: Split,
    output: Output,
    disk: Option<&DiskCache>,
) -> Result<(Arc<Vec<u8>>, Built)> {
    require_nvrtc()?;
    let options = options(arch, split);
    let key = key(src, &options, output);
    // One build of a program at a time: threads that need it at once wait for the first build
    // and take its code from the cache instead of compiling the same source again (several
    // test threads compiling one source together once got an internal assembler error on the
    // H200: session 8, run 7). Different programs build side by side, as the tests' unlocked
    // `check_assembles` of different programs always did.
    let slot = building(key);
    let _one = slot.lock().unwrap_or_else(|e| e.into_inner());
    let cached = |from_disk| Built {
        compile_s: 0.0,
        from_disk,
    };
    if let Some(code) = cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
        // Built in this process without this disk cache (`archipelago kernels` after the
        // device's opening built the main module into another): stored there too.
        if let Some(d) = disk.filter(|d| !d.holds(key)) {
            d.put(key, &code);
        }
        return Ok((code, cached(false)));
    }
    let remember = |code: Vec<u8>| {
        let code = Arc::new(code);
        if let Ok(mut c) = cache().lock() {
            c.insert(key, code.clone());
        }
        code
    };
    if let Some(image) = disk.and_then(|d| d.get(key)) {
        return Ok((remember(image), cached(true)));
    }
    let start = Instant::now();
    let code = nvrtc_compile(src, &options, output)?;
    let compile_s = start.elapsed().as_secs_f64();
    if let Some(d) = disk {
        d.put(key, &code);
    }
    let built = Built {
        compile_s,
        from_disk: false,
    };
    Ok((remember(code), built))
}

/// Compiles `src` for compute capability `cc` to PTX, or returns this process's cached PTX;
/// also the seconds NVRTC took (0 for a cache hit). For inspecting a program (which kernels it
/// has, what they use); the solvers load [`machine_code`]. Needs libnvrtc, no device: without
/// it, [`Error::NoDevice`] (as from every function here that compiles).
pub fn compile_cached(src: &str, cc: (i32, i32)) -> Result<(Arc<String>, f64)> {
    let arch = format!("compute_{}{}", cc.0, cc.1);
    let (ptx, built) = build(src, &arch, Split::Off, Output::Ptx, None)?;
    // NVRTC's PTX is text ending in one NUL.
    let text = String::from_utf8_lossy(ptx.strip_suffix(&[0]).unwrap_or(&ptx)).into_owned();
    Ok((Arc::new(text), built.compile_s))
}

/// Each named field of a host type with its byte offset, `[(name, offset), ...]`: the host side
/// of [`device_layout`]'s comparison.
///
/// ```
/// #[repr(C)]
/// struct Pair { a: u64, b: i32 }
/// assert_eq!(archipelago::field_offsets!(Pair; a, b), [("a", 0), ("b", 8)]);
/// ```
#[macro_export]
macro_rules! field_offsets {
    ($ty:ty; $($f:ident),* $(,)?) => {
        [$((stringify!($f), ::std::mem::offset_of!($ty, $f))),*]
    };
}

/// Where the device puts each of `fields` of `struct ty` (a kernel argument block that `src`
/// defines), as `(name, offset)` pairs like [`field_offsets!`](crate::field_offsets)'s, after
/// checking that the struct is `size` bytes: for tests that a host `#[repr(C)]` mirror of it
/// matches. NVRTC alone answers (no GPU): a static assertion for the size, and for each field
/// the parameter load of a kernel that reads it, one kernel a field so that no two loads merge.
/// A size that differs is a compile error naming `sizeof`.
pub fn device_layout<'f>(
    src: &str,
    ty: &str,
    size: usize,
    fields: &[&'f str],
) -> Result<Vec<(&'f str, usize)>> {
    let mut probe = format!("\nstatic_assert(sizeof({ty}) == {size}, \"sizeof({ty})\");\n");
    for (i, f) in fields.iter().enumerate() {
        probe += &format!(
            "extern \"C\" __global__ void layout_probe_{i}({ty} a, unsigned long long* o) \
             {{ *o = (unsigned long long)a.{f}; }}\n"
        );
    }
    let (ptx, _) = compile_cached(&(src.to_string() + &probe), (9, 0))?;
    let missing = |field: &str| Error::Compile {
        source_name: "layout probe".into(),
        log: format!("no parameter load of `{field}` in the PTX"),
    };
    fields
        .iter()
        .enumerate()
        .map(|(i, field)| {
            // `ld.param.u64 %rd1, [layout_probe_3_param_0+24];` (no `+` at offset 0)
            let param = format!("[layout_probe_{i}_param_0");
            let line = ptx
                .lines()
                .find(|l| l.contains("ld.param") && l.contains(&param))
                .ok_or_else(|| missing(field))?;
            let rest = &line[line.find(&param).unwrap_or(0) + param.len()..];
            let offset = rest.trim_start_matches('+');
            let offset = &offset[..offset.find(']').ok_or_else(|| missing(field))?];
            let offset = if offset.is_empty() {
                0
            } else {
                offset.parse().map_err(|_| missing(field))?
            };
            Ok((*field, offset))
        })
        .collect()
}

/// The machine code of `src` for compute capability `cc` (e.g. `sm_90`): from this process's
/// cache, else from the on-disk cache ([`kernel_cache`]), else compiled by NVRTC and its
/// assembler and stored in both. An error carries NVRTC's log, the assembler's included.
/// Needs libnvrtc (else [`Error::NoDevice`]), no device.
///
/// ```no_run
/// # fn main() -> archipelago::Result<()> {
/// use archipelago::gpu::module::{Split, machine_code, program_source};
/// let (image, built) = machine_code(&program_source(), (9, 0), Split::Off)?;
/// println!("{} bytes, NVRTC {:.1} s", image.len(), built.compile_s);
/// # Ok(())
/// # }
/// ```
pub fn machine_code(src: &str, cc: (i32, i32), split: Split) -> Result<(Arc<Vec<u8>>, Built)> {
    machine_code_with(src, cc, split, DiskCache::from_env().as_ref())
}

/// The key [`machine_code`] keeps `src` under (for `cc` and `split`, with this process's
/// environment and NVRTC) in both caches: with it, [`DiskCache::get`] tells whether a program is
/// on disk.
pub fn disk_key(src: &str, cc: (i32, i32), split: Split) -> u128 {
    key(src, &options(&sm(cc), split), Output::MachineCode)
}

/// [`machine_code`] with the on-disk cache `disk` (none: this process's cache only) instead
/// of the one the environment names.
pub fn machine_code_with(
    src: &str,
    cc: (i32, i32),
    split: Split,
    disk: Option<&DiskCache>,
) -> Result<(Arc<Vec<u8>>, Built)> {
    build(src, &sm(cc), split, Output::MachineCode, disk)
}

/// Compiles `src` for the real architecture of capability `cc` (e.g. `sm_90`), so that NVRTC
/// also runs the assembler, and discards the result, touching no cache: that every kernel
/// assembles, checked without a device. An error carries NVRTC's log, the assembler's included.
///
/// ```no_run
/// # fn main() -> archipelago::Result<()> {
/// let src = archipelago::gpu::module::program_source();
/// archipelago::gpu::module::check_assembles(&src, (9, 0))?;
/// # Ok(())
/// # }
/// ```
pub fn check_assembles(src: &str, cc: (i32, i32)) -> Result<()> {
    nvrtc_compile(src, &options(&sm(cc), Split::Off), Output::MachineCode).map(drop)
}

/// One NVRTC compile of `src` with `options`, and its `output`.
fn nvrtc_compile(src: &str, options: &[String], output: Output) -> Result<Vec<u8>> {
    require_nvrtc()?;
    let text = std::ffi::CString::new(src).map_err(|_| Error::Compile {
        source_name: "kernels/*.cu".into(),
        log: "the program's text holds a NUL byte".into(),
    })?;
    let failed = |log: String| Error::Compile {
        source_name: "kernels/*.cu".into(),
        log,
    };
    let prog = nvrtc::create_program(&text, Some(c"archipelago.cu"))
        .map_err(|e| failed(format!("nvrtcCreateProgram: {e:?}")))?;
    // SAFETY: `prog` was created above from `text`, which outlives it, and is destroyed once,
    // at the end of this block, after the last use.
    unsafe {
        let compiled = nvrtc::compile_program(prog, options);
        let code = match compiled {
            Err(e) => {
                let log = nvrtc::get_program_log(prog)
                    .map(|l| {
                        std::ffi::CStr::from_ptr(l.as_ptr())
                            .to_string_lossy()
                            .into_owned()
                    })
                    .unwrap_or_else(|_| format!("{e:?} (no log)"));
                Err(failed(log))
            }
            Ok(()) => match output {
                Output::Ptx => nvrtc::get_ptx(prog)
                    .map(|p| p.into_iter().map(|c| c as u8).collect())
                    .map_err(|e| failed(format!("nvrtcGetPTX: {e:?}"))),
                Output::MachineCode => {
                    cubin(prog).map_err(|e| failed(format!("nvrtcGetCUBIN: {e:?}")))
                }
            },
        };
        let _ = nvrtc::destroy_program(prog);
        code
    }
}

/// The machine code NVRTC built for `prog` (a real architecture's).
///
/// # Safety
/// `prog` must be a compiled program not yet destroyed.
unsafe fn cubin(
    prog: nvrtc_sys::nvrtcProgram,
) -> std::result::Result<Vec<u8>, nvrtc_sys::nvrtcResult> {
    let ok = |r: nvrtc_sys::nvrtcResult| match r {
        nvrtc_sys::nvrtcResult::NVRTC_SUCCESS => Ok(()),
        e => Err(e),
    };
    let mut size = 0usize;
    // SAFETY: `prog` is a compiled program (the caller's contract); the buffer has `size` bytes.
    unsafe {
        ok(nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size))?;
        let mut image = vec![0u8; size];
        ok(nvrtc_sys::nvrtcGetCUBIN(prog, image.as_mut_ptr().cast()))?;
        Ok(image)
    }
}

/// Loads the machine code `image` into `ctx`; also the seconds it took. A driver too old for
/// NVRTC's machine code is [`Error::NoDevice`].
pub fn load(ctx: &Arc<CudaContext>, image: &[u8]) -> Result<(Arc<CudaModule>, f64)> {
    let start = Instant::now();
    let module = ctx
        .load_module(Ptx::from_binary(image.to_vec()))
        .map_err(|e| match e {
            // NVRTC newer than the driver: machine code the driver cannot read, so this device
            // cannot run the kernels (callers fall back as for a missing device).
            DriverError(
                sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                | sys::CUresult::CUDA_ERROR_INVALID_IMAGE
                | sys::CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU,
            ) => Error::NoDevice(format!(
                "the CUDA driver cannot load the kernels NVRTC built ({}): update the driver, \
                 or put an NVRTC no newer than the driver first on the library path",
                super::describe(e)
            )),
            e => cuda("cuModuleLoadData")(e),
        })?;
    Ok((module, start.elapsed().as_secs_f64()))
}

/// The module of program `src` in `ctx`: its machine code ([`machine_code`]) loaded. Where the
/// driver refuses code from the on-disk cache, that code is built again once (the file is
/// replaced) before the refusal counts. Also what the code cost and the seconds of the load.
pub(crate) fn build_and_load(
    ctx: &Arc<CudaContext>,
    src: &str,
    cc: (i32, i32),
    split: Split,
) -> Result<(Arc<CudaModule>, Built, f64)> {
    let (image, built) = machine_code(src, cc, split)?;
    match load(ctx, &image) {
        Err(_) if built.from_disk => {
            let key = disk_key(src, cc, split);
            if let Ok(mut c) = cache().lock() {
                c.remove(&key);
            }
            if let Some(d) = DiskCache::from_env() {
                d.remove(key);
            }
            let (image, built) = machine_code(src, cc, split)?;
            let (module, load_s) = load(ctx, &image)?;
            Ok((module, built, load_s))
        }
        loaded => loaded.map(|(module, load_s)| (module, built, load_s)),
    }
}

/// Kernel `name` of `module` (every module's kernels are looked up once, by their solver).
pub(crate) fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
    module
        .load_function(name)
        .map_err(cuda("cuModuleGetFunction"))
}

/// Handles to every kernel of the module.
pub struct Kernels {
    _module: Arc<CudaModule>,
    /// Maps from min-roots in `labels`, one block per world.
    pub maps: CudaFunction,
    /// `dense`: tree_tree matrix.
    pub dense_build: CudaFunction,
    /// `dense`: one DFS per world.
    pub dense_dfs: CudaFunction,
    /// `dsu`: unions, one thread per hyperedge.
    pub dsu_union: CudaFunction,
    /// `dsu`: roots.
    pub dsu_finalize: CudaFunction,
    /// `block`: fused shared-memory DSU + maps.
    pub block_dsu: CudaFunction,
    /// `labelprop`: fused propagation + maps.
    pub block_labelprop: CudaFunction,
    /// `tiled`: fused warp-tiled propagation + maps.
    pub block_tiled: CudaFunction,
    /// `warp`: fused warp-per-world DSU + maps.
    pub warp_dsu: CudaFunction,
    /// An empty kernel (the launch floor).
    pub noop: CudaFunction,
    /// A kernel that keeps the device busy for a given time (`graph::Busy`).
    pub spin: CudaFunction,
    /// A kernel that reads every int of some buffers once (`graph::OutputReader`).
    pub read_outputs: CudaFunction,
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernels").finish_non_exhaustive()
    }
}

impl Kernels {
    /// Builds (or takes from a cache: [`machine_code`]) and loads the module into `ctx`; also
    /// the seconds NVRTC took in this process and the seconds the module's load took.
    pub fn load(ctx: &Arc<CudaContext>, cc: (i32, i32)) -> Result<(Kernels, f64, f64)> {
        let (module, built, load_s) = build_and_load(ctx, &(MAIN.source)(), cc, MAIN.split)?;
        let compile_s = built.compile_s;
        let f = |name: &str| function(&module, name);
        let kernels = Kernels {
            maps: f("maps_kernel")?,
            dense_build: f("dense_build_kernel")?,
            dense_dfs: f("dense_dfs_kernel")?,
            dsu_union: f("dsu_union_kernel")?,
            dsu_finalize: f("dsu_finalize_kernel")?,
            block_dsu: f("block_dsu_kernel")?,
            block_labelprop: f("block_labelprop_kernel")?,
            block_tiled: f("block_tiled_kernel")?,
            noop: f("noop_kernel")?,
            spin: f("spin_kernel")?,
            read_outputs: f("read_outputs_kernel")?,
            warp_dsu: f("warp_dsu_kernel")?,
            _module: module,
        };
        Ok((kernels, compile_s, load_s))
    }

    /// Asks for the largest shared-memory carveout for `f`, so that as many of its blocks as
    /// registers and threads allow are resident at once (with the default carveout one 64 KiB
    /// block of the order sort filled a multiprocessor's shared memory).
    pub(crate) fn prefer_smem(f: &CudaFunction) -> Result<()> {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            100,
        )
        .map_err(cuda("cuFuncSetAttribute"))
    }

    /// Lets `f` use up to `bytes` of dynamic shared memory.
    pub(crate) fn allow_smem(f: &CudaFunction, bytes: usize) -> Result<()> {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(cuda("cuFuncSetAttribute"))
    }
}
