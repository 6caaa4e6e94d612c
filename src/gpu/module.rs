//! The kernel modules: `kernels/*.cu`, embedded in the binary, compiled by NVRTC for the device's
//! compute capability (e.g. `sm_90`) and cached per process, keyed by the source and the
//! capability, so that opening a device twice compiles once. The main module ([`SOURCES`]) is
//! built when a device is opened; the order step's and the quotient's when their first solver
//! is made ([`super::Gpu`] keeps them per context).
//!
//! NVRTC emits PTX for the capability's virtual architecture (`compute_90`): the same PTX as
//! for the real one (`sm_90`), without NVRTC also running the assembler for machine code that
//! would not be loaded. The driver assembles the PTX when the module is loaded ([`load`]) and
//! keeps the result in its own on-disk cache (`CUDA_CACHE_PATH`, by default `~/.nv`), so a
//! later process on the same machine skips that step; [`check_assembles`] runs the assembler
//! without a device, for tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, DriverError, sys};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, compile_ptx_with_opts};

use super::cuda;
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

type Key = (u64, (i32, i32));

fn cache() -> &'static Mutex<HashMap<Key, Arc<String>>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<String>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn hash(text: &str) -> u64 {
    // FNV-1a: stable, and enough to tell sources apart inside one process.
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Compiles `src` for compute capability `cc` to PTX, or returns the cached PTX; also the
/// seconds NVRTC took (0 for a cache hit). Needs libnvrtc (see [`super::libraries_present`]).
/// With `ARCHIPELAGO_LINEINFO` set, the PTX carries line tables for profilers.
pub fn compile_cached(src: &str, cc: (i32, i32)) -> Result<(Arc<String>, f64)> {
    let key = (hash(src), cc);
    // One compile at a time: threads that open devices at once wait for the first compile and
    // take its PTX from the cache instead of compiling the same source again. Concurrent
    // compiles also failed once on the H200: one of several test threads compiling this source
    // together got an internal ptxas error (session 8, run 7).
    static COMPILING: Mutex<()> = Mutex::new(());
    let _one = COMPILING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ptx) = cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok((ptx, 0.0));
    }
    let start = Instant::now();
    let ptx = compile(src, &format!("compute_{}{}", cc.0, cc.1))?;
    let ptx = Arc::new(ptx.to_src());
    let secs = start.elapsed().as_secs_f64();
    if let Ok(mut c) = cache().lock() {
        c.insert(key, ptx.clone());
    }
    Ok((ptx, secs))
}

/// Compiles `src` for the real architecture of capability `cc` (e.g. `sm_90`), so that NVRTC
/// also runs the assembler, and discards the result: what [`compile_cached`] leaves to the
/// driver, checked without a device. An error carries NVRTC's log, the assembler's included.
///
/// ```no_run
/// # fn main() -> archipelago::Result<()> {
/// let src = archipelago::gpu::module::program_source();
/// archipelago::gpu::module::check_assembles(&src, (9, 0))?;
/// # Ok(())
/// # }
/// ```
pub fn check_assembles(src: &str, cc: (i32, i32)) -> Result<()> {
    compile(src, &format!("sm_{}{}", cc.0, cc.1)).map(drop)
}

fn compile(src: &str, arch: &str) -> Result<Ptx> {
    let mut options = vec![format!("--gpu-architecture={arch}"), "-std=c++17".into()];
    // Line tables for profilers (Nsight Compute's source view); the code itself is unchanged.
    if std::env::var_os("ARCHIPELAGO_LINEINFO").is_some() {
        options.push("--generate-line-info".into());
    }
    let opts = CompileOptions {
        options,
        name: Some("archipelago.cu".into()),
        ..Default::default()
    };
    compile_ptx_with_opts(src, opts).map_err(compile_error)
}

/// Loads `ptx` into `ctx`; the driver assembles it for the device here (or takes the machine
/// code from its cache). Also the seconds it took. The assembler's failure (which
/// [`check_assembles`] would have caught) is a compile error, not a driver one; a driver too
/// old for NVRTC's PTX is [`Error::NoDevice`].
pub fn load(ctx: &Arc<CudaContext>, ptx: &str) -> Result<(Arc<CudaModule>, f64)> {
    let start = Instant::now();
    let module = ctx.load_module(Ptx::from_src(ptx)).map_err(|e| match e {
        DriverError(sys::CUresult::CUDA_ERROR_INVALID_PTX) => Error::Compile {
            source_name: "kernels/*.cu".into(),
            log: format!(
                "the driver could not assemble the PTX: {}",
                super::describe(e)
            ),
        },
        // NVRTC newer than the driver: its PTX version is one the driver cannot read, so this
        // device cannot run the kernels (callers fall back as for a missing device).
        DriverError(sys::CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION) => Error::NoDevice(format!(
            "the CUDA driver is older than the NVRTC library ({}): update the driver, or put an \
             NVRTC no newer than the driver first on the library path",
            super::describe(e)
        )),
        e => cuda("cuModuleLoadData")(e),
    })?;
    Ok((module, start.elapsed().as_secs_f64()))
}

/// Kernel `name` of `module` (every module's kernels are looked up once, by their solver).
pub(crate) fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
    module
        .load_function(name)
        .map_err(cuda("cuModuleGetFunction"))
}

fn compile_error(e: CompileError) -> Error {
    let log = match &e {
        CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => format!("{other:?}"),
    };
    Error::Compile {
        source_name: "kernels/*.cu".into(),
        log,
    }
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
}

impl Kernels {
    /// Compiles (or takes from the cache) and loads the module into `ctx`; also the seconds
    /// NVRTC took and the seconds the module's load took (see [`load`]).
    pub fn load(ctx: &Arc<CudaContext>, cc: (i32, i32)) -> Result<(Kernels, f64, f64)> {
        let (ptx, compile_s) = compile_cached(&program_source(), cc)?;
        let (module, load_s) = load(ctx, &ptx)?;
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
