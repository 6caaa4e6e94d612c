//! The CUDA backend (cudarc, driver API + NVRTC, both loaded at run time).
//!
//! [`Gpu::open`] is the device gate: it checks that the driver and NVRTC libraries can be loaded
//! *before* touching any cudarc call that would panic without them, then creates the context,
//! a stream and the kernel module (compiled once per process, see [`module`]). Without a GPU it
//! returns [`Error::NoDevice`] and everything else in the crate keeps working.
//!
//! A [`Solver`] runs one mode over batches that fit its [`crate::Capacity`]: its
//! [`workspace::Workspace`] allocates every device buffer once, the whole per-step sequence is
//! captured once as a CUDA graph ([`graph`]) and replayed, and every output of
//! [`crate::Islands`] is produced on the device.
//!
//! ```no_run
//! use archipelago::{gpu, oracle, Batch, Capacity, Input, Islands, Model, RowType};
//! let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
//! let mut b = Batch::builder();
//! b.row(RowType::ContactPyramidal, 0, &[2, 1]).end_world();
//! let batch = b.finish();
//! let input = Input::new(&model, &batch).unwrap();
//! match gpu::Gpu::open() {
//!     Ok(gpu) => {
//!         let cap = Capacity::fit(&model, &batch);
//!         let mut solver = gpu::Solver::new(&gpu, gpu::Mode::Block, cap, &model).unwrap();
//!         let mut out = Islands::default();
//!         solver.solve(&input, &mut out).unwrap();
//!         assert_eq!(out.first_mismatch(&oracle::solve(&input)), None);
//!     }
//!     Err(e) => println!("skipped: {e}"),
//! }
//! ```

pub mod auto;
pub mod block;
pub(crate) mod dense;
pub(crate) mod dsu;
pub mod kernel_cache;
pub(crate) mod labelprop;
pub(crate) mod maps;
pub mod module;
pub mod order;
pub mod pinned;
pub mod quotient;
pub mod solver;
pub(crate) mod tiled;
pub(crate) mod warp;

// The backend's internals: public for the command-line tool's benches and the device tests
// (timers, launch shapes, argument blocks, register caps, phase marks), not for users.
#[doc(hidden)]
pub mod graph;
#[doc(hidden)]
pub mod phase_trace;
#[doc(hidden)]
pub mod regcap;
#[doc(hidden)]
pub mod workspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaModule, CudaStream, DriverError, result, sys};

use crate::error::{Error, Result};

pub use pinned::{PinnedBatch, PinnedIslands};
pub use solver::{Mode, Solver};

/// An open CUDA device: context, the stream every solver works on, and the compiled kernels.
/// Cloning shares them (every handle is reference-counted), the stream included: the solvers
/// and engines built on one `Gpu` or its clones are stepped from one thread at a time (a step
/// captures its graph from that stream, which another thread's work would join); a thread of
/// its own opens a `Gpu` of its own.
#[derive(Clone)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: Arc<module::Kernels>,
    /// Further programs' modules loaded into this context (the order step's, the quotient's),
    /// by name: a second solver reuses the first one's (see [`Gpu::program`]).
    modules: Arc<Mutex<HashMap<&'static str, Arc<CudaModule>>>>,
    info: DeviceInfo,
}

/// What the solvers need to know about the device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// Device name, as the driver reports it.
    pub name: String,
    /// Compute capability (major, minor).
    pub capability: (i32, i32),
    /// Multiprocessors.
    pub sm_count: i32,
    /// Dynamic shared memory a block may opt in to, in bytes.
    pub smem_optin: usize,
    /// Total device memory in bytes.
    pub total_mem: usize,
    /// The CUDA version the driver supports, as `cuDriverGetVersion` gives it (13000: 13.0).
    pub driver_version: i32,
    /// Seconds NVRTC took for the main kernel module in this process, its assembler included
    /// (0 when the machine code came from this process's or the on-disk cache:
    /// [`kernel_cache`]).
    pub compile_s: f64,
    /// Seconds the driver took to load the module's machine code.
    pub load_s: f64,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

/// A switch set in the environment: `Some(true)` for `1`, `Some(false)` for `0` (spaces around
/// either ignored), `None` when unset or anything else. Every `ARCHIPELAGO_*` switch reads so,
/// so that `=0` never turns one on; tests that skip a check under a switch ask the same.
///
/// ```
/// // Unset (or any value but 0 and 1): the engine's own rule decides.
/// assert_eq!(archipelago::gpu::env_choice("ARCHIPELAGO_NO_SUCH_SWITCH"), None);
/// ```
pub fn env_choice(name: &str) -> Option<bool> {
    match std::env::var(name).ok()?.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

/// Whether the CUDA driver and NVRTC libraries can be loaded at all. Checked before any other
/// cudarc call: cudarc panics when it has to load a library that is missing.
pub fn libraries_present() -> std::result::Result<(), String> {
    if env_choice("ARCHIPELAGO_NO_GPU") == Some(true) {
        return Err("disabled by ARCHIPELAGO_NO_GPU=1".into());
    }
    // SAFETY: these only try to dlopen the libraries by their usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("the CUDA driver library (libcuda) is not installed".into());
    }
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err("the NVRTC library (libnvrtc) is not installed".into());
    }
    Ok(())
}

/// The oldest compute capability the kernels compile for: they use the warp reductions
/// (`__reduce_add_sync`) of Ampere (8.0) and later.
pub const MIN_CAPABILITY: (i32, i32) = (8, 0);

/// Whether the device `name`, of compute capability `cc`, can run the kernels; if not, why
/// (reported as no usable device, as a missing one: callers fall back to the CPU).
///
/// ```
/// use archipelago::gpu::supports;
/// assert!(supports("NVIDIA H200", (9, 0)).is_ok());
/// assert!(supports("Tesla T4", (7, 5)).unwrap_err().contains("8.0 or newer"));
/// ```
pub fn supports(name: &str, cc: (i32, i32)) -> std::result::Result<(), String> {
    if cc >= MIN_CAPABILITY {
        return Ok(());
    }
    let (major, minor) = MIN_CAPABILITY;
    Err(format!(
        "{name} has compute capability {}.{}; the kernels need {major}.{minor} or newer",
        cc.0, cc.1
    ))
}

/// The oldest CUDA version a driver must support, in `cuDriverGetVersion`'s encoding (1000 ×
/// major plus 10 × minor). The build's driver bindings are CUDA 13.0's, which cudarc resolves
/// one entry point at a time on first use, and it would panic on one that an older driver lacks.
pub const MIN_DRIVER_VERSION: i32 = 13000;

/// Whether a driver supporting CUDA `version` (`cuDriverGetVersion`'s encoding) can run this
/// build; if not, why (reported as no usable device).
///
/// ```
/// use archipelago::gpu::driver_supports;
/// assert!(driver_supports(13000).is_ok());
/// assert!(driver_supports(12080).unwrap_err().contains("CUDA 12.8"));
/// ```
pub fn driver_supports(version: i32) -> std::result::Result<(), String> {
    if version >= MIN_DRIVER_VERSION {
        return Ok(());
    }
    let cuda = |v: i32| format!("CUDA {}.{}", v / 1000, v % 1000 / 10);
    Err(format!(
        "the CUDA driver supports {}; this build needs {} or newer (driver 580 or later)",
        cuda(version),
        cuda(MIN_DRIVER_VERSION)
    ))
}

/// Whether NVRTC alone can be loaded (enough to compile the kernels, not to run them).
pub fn nvrtc_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

impl Gpu {
    /// Opens device 0: checks the libraries, creates the context and stream, and compiles (or
    /// takes from the per-process cache) the kernel module for the device's compute capability.
    pub fn open() -> Result<Gpu> {
        libraries_present().map_err(Error::NoDevice)?;
        // A driver that lacks a symbol cudarc expects would panic inside cudarc: report it as
        // no usable device instead.
        let opened = std::panic::catch_unwind(|| -> Result<(Arc<CudaContext>, DeviceInfo)> {
            result::init()
                .map_err(|e| Error::NoDevice(format!("cuInit failed: {}", describe(e))))?;
            let mut driver_version = 0;
            // SAFETY: one out-parameter; the driver is initialised.
            unsafe { sys::cuDriverGetVersion(&mut driver_version) }
                .result()
                .map_err(|e| Error::NoDevice(describe(e)))?;
            driver_supports(driver_version).map_err(Error::NoDevice)?;
            let count = result::device::get_count().map_err(|e| Error::NoDevice(describe(e)))?;
            if count < 1 {
                return Err(Error::NoDevice("the driver reports no CUDA device".into()));
            }
            let ctx = CudaContext::new(0).map_err(|e| Error::NoDevice(describe(e)))?;
            // Every buffer is used on one stream through raw pointers: no event tracking.
            // SAFETY: called before any allocation or launch on this context.
            unsafe { ctx.disable_event_tracking() };
            let attr = |a| ctx.attribute(a).map_err(cuda("cuDeviceGetAttribute"));
            use sys::CUdevice_attribute as A;
            let info = DeviceInfo {
                name: ctx.name().map_err(cuda("cuDeviceGetName"))?,
                capability: ctx
                    .compute_capability()
                    .map_err(cuda("cuDeviceGetAttribute"))?,
                sm_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
                smem_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
                    as usize,
                total_mem: ctx.total_mem().map_err(cuda("cuDeviceTotalMem"))?,
                driver_version,
                compile_s: 0.0,
                load_s: 0.0,
            };
            Ok((ctx, info))
        });
        let (ctx, mut info) = match opened {
            Ok(r) => r?,
            Err(_) => {
                return Err(Error::NoDevice(
                    "the CUDA driver library lacks a required entry point".into(),
                ));
            }
        };
        // Before NVRTC: on an older device the compile would fail on the first Ampere intrinsic.
        supports(&info.name, info.capability).map_err(Error::NoDevice)?;
        let stream = ctx.new_stream().map_err(cuda("cuStreamCreate"))?;
        let (kernels, compile_s, load_s) = module::Kernels::load(&ctx, info.capability)?;
        info.compile_s = compile_s;
        info.load_s = load_s;
        Ok(Gpu {
            ctx,
            stream,
            kernels: Arc::new(kernels),
            modules: Arc::default(),
            info,
        })
    }

    /// The device's description.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Free and total device memory in bytes, as the driver reports them now.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().map_err(cuda("cuMemGetInfo"))
    }

    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    pub(crate) fn kernels(&self) -> &Arc<module::Kernels> {
        &self.kernels
    }

    /// The module of `program` in this context: on first use built ([`module::machine_code`]:
    /// from this process's cache, the on-disk one, or NVRTC) and loaded, then shared. So only
    /// the first solver of a kind waits, and the next ones neither build nor hash the
    /// program's text (hashing it per solver once doubled the whole-corpus determinism test,
    /// which makes a solver per case and mode).
    pub(crate) fn program(&self, program: &module::Program) -> Result<Arc<CudaModule>> {
        let mut loaded = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = loaded.get(program.name) {
            return Ok(m.clone());
        }
        let cc = self.info.capability;
        let (m, _, _) = module::build_and_load(&self.ctx, &(program.source)(), cc, program.split)?;
        loaded.insert(program.name, m.clone());
        Ok(m)
    }

    /// Starts building `program`'s machine code on a thread of its own, unless this context
    /// has its module already, so that a later [`program`](Gpu::program) finds it built, or
    /// waits for the build in progress instead of starting its own ([`module::machine_code`]
    /// builds a program once at a time). A failure is left for that later call to report.
    pub(crate) fn program_meanwhile(&self, program: module::Program) {
        let loaded = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if loaded.contains_key(program.name) {
            return;
        }
        let cc = self.info.capability;
        std::thread::spawn(move || {
            module::machine_code(&(program.source)(), cc, program.split).map(drop)
        });
    }
}

/// Every program a process may build for its environment (the quotient's with phase marks
/// where [`phase_trace::requested`]): what `archipelago kernels` builds ahead of time.
pub fn programs() -> [module::Program; 6] {
    [
        module::MAIN,
        order::PROGRAM,
        block::CAPPED_PROGRAM,
        quotient::block_program(),
        quotient::capped_program(),
        quotient::warp_program(),
    ]
}

/// A driver error as text: its name and description.
pub(crate) fn describe(e: DriverError) -> String {
    let name = e
        .error_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{name}: {text}")
}

/// Refuses a launch or a download of `mode`'s solver after an upload that did not complete
/// (`uploaded` false): the device's batch and its tables or keys may be out of step.
pub(crate) fn uploaded_whole(uploaded: bool, mode: &'static str) -> Result<()> {
    match uploaded {
        true => Ok(()),
        false => Err(Error::Refused {
            mode,
            reason: "no batch is uploaded whole (the last upload was refused or failed)".into(),
        }),
    }
}

/// Waits for `stream` whatever `enqueued` (the enqueueing of copies on it) returned, and then
/// returns its error first: copies enqueued before a failed one still read or write the host's
/// memory until the stream is done, so no caller may take that memory back before.
pub(crate) fn wait_after(stream: &CudaStream, enqueued: Result<()>) -> Result<()> {
    let waited = stream.synchronize().map_err(cuda("cuStreamSynchronize"));
    enqueued.and(waited)
}

/// Maps a driver error of `call` to [`Error::Cuda`].
pub(crate) fn cuda(call: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Cuda {
        call: call.to_string(),
        detail: describe(e),
    }
}
