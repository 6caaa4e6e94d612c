//! The kernel module: every `kernels/*.cu` source, embedded in the binary, compiled by NVRTC for
//! the device's compute capability (e.g. `sm_90`) and cached per process, keyed by the source
//! and the capability, so that opening a device twice compiles once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, sys};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx, compile_ptx_with_opts};

use super::cuda;
use crate::error::{Error, Result};

/// The CUDA C sources, in the order they are concatenated into one program.
pub const SOURCES: [(&str, &str); 8] = [
    ("common.cu", include_str!("../../kernels/common.cu")),
    ("dense.cu", include_str!("../../kernels/dense.cu")),
    ("dsu.cu", include_str!("../../kernels/dsu.cu")),
    ("block.cu", include_str!("../../kernels/block.cu")),
    ("labelprop.cu", include_str!("../../kernels/labelprop.cu")),
    ("tiled.cu", include_str!("../../kernels/tiled.cu")),
    ("warp.cu", include_str!("../../kernels/warp.cu")),
    ("order.cu", include_str!("../../kernels/order.cu")),
];

/// The whole program: every source, each preceded by a `#line` so NVRTC's log names the file.
pub fn program_source() -> String {
    let mut src = String::new();
    for (name, text) in SOURCES {
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
    let mut options = vec![
        format!("--gpu-architecture=sm_{}{}", cc.0, cc.1),
        "-std=c++17".into(),
    ];
    // Line tables for profilers (Nsight Compute's source view); the code itself is unchanged.
    if std::env::var_os("ARCHIPELAGO_LINEINFO").is_some() {
        options.push("--generate-line-info".into());
    }
    let opts = CompileOptions {
        options,
        name: Some("archipelago.cu".into()),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(src, opts).map_err(compile_error)?;
    let ptx = Arc::new(ptx.to_src());
    let secs = start.elapsed().as_secs_f64();
    if let Ok(mut c) = cache().lock() {
        c.insert(key, ptx.clone());
    }
    Ok((ptx, secs))
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
}

impl Kernels {
    /// Compiles (or takes from the cache) and loads the module into `ctx`; also the seconds
    /// NVRTC took.
    pub fn load(ctx: &Arc<CudaContext>, cc: (i32, i32)) -> Result<(Kernels, f64)> {
        let (ptx, secs) = compile_cached(&program_source(), cc)?;
        let module = ctx
            .load_module(Ptx::from_src(ptx.as_str()))
            .map_err(cuda("cuModuleLoadData"))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(cuda("cuModuleGetFunction"))
        };
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
            warp_dsu: f("warp_dsu_kernel")?,
            _module: module,
        };
        Ok((kernels, secs))
    }

    /// Any kernel of the module by name (for example deterministic mode's `order_*`).
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        self._module
            .load_function(name)
            .map_err(cuda("cuModuleGetFunction"))
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
