//! The user-facing [`Engine`]: one model, one capacity, a mode, and — for the quotient — the
//! cache and the invalidation tracker.
//!
//! ```
//! use archipelago::engine::{Engine, Mode, Options};
//! use archipelago::{Batch, Capacity, Model, RowType};
//! use archipelago::Events;
//! use archipelago::invalidation::Verdict;
//! let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
//! let capacity = Capacity { nworld: 2, ntree: 3, nv: 3, njmax: 8, nsupport: 16, nedge: 1 };
//! let mut engine = Engine::new(&model, capacity, Options { mode: Mode::Quotient, ..Options::default() }).unwrap();
//! let mut b = Batch::builder();
//! b.row(RowType::Equality, 0, &[0, 1]).end_world();
//! b.row(RowType::ContactPyramidal, 0, &[2]).end_world();
//! let batch = b.finish();
//! let mut events = Events::new();
//! assert_eq!(engine.step(&batch, &events).unwrap().world(0).nisland, 1);
//! events.eq_active(0, 0, false); // world 0 switches equality 0 off…
//! let mut b = Batch::builder();
//! b.end_world(); // …so its row is gone
//! b.row(RowType::ContactPyramidal, 0, &[2]).end_world();
//! let islands = engine.step(&b.finish(), &events).unwrap();
//! assert_eq!(islands.world(0).nisland, 0);
//! assert_eq!(engine.decision().verdict(), Verdict::Rebuild);
//! ```
//!
//! On a GPU ([`Engine::with_gpu`]) the same modes run on the device: `dense`, `dsu`,
//! `labelprop` as the GPU modes of those names, `quotient` as [`gpu::quotient::QuotientSolver`],
//! and `auto` as the fastest full-rebuild GPU mode, measured on the first batch that `auto`
//! gives the full rebuild (its second step; [`gpu::auto::choose`]), against the device
//! quotient, trial by trial like on the CPU. A GPU
//! engine keeps its outputs in page-locked memory ([`gpu::PinnedIslands`]), so that a step's
//! downloads run at the link's speed; a caller that builds each step's rows in a
//! [`gpu::PinnedBatch`] gets the same for the uploads, and with the quotient the step's host
//! half (its events, the rebuilds they cause) runs while the rows cross the link.
//!
//! An engine is `Send`: a simulation's worker thread may own one and step it (a GPU engine makes
//! its context current on the thread that steps it). GPU engines built on one [`Gpu`] (or its
//! clones) share its stream, so they are stepped from one thread at a time: a worker thread of
//! its own builds its engine on a `Gpu::open` of its own.
//!
//! With [`Options::reuse`] (the default) the quotient, on either side, gives a world whose rows
//! are unchanged since the last step it solved the outputs of that step without solving it.

use std::sync::Arc;
use std::time::Instant;

use invalidation::{Decision, Events};

use crate::cpu::dense::{self, Dense};
use crate::cpu::{CpuMode, dsu::Dsu, labelprop::LabelProp};
use crate::error::{Error, Result};
use crate::gpu::pinned::PinnedOrder;
use crate::gpu::{self, Gpu, PinnedIslands, quotient::QuotientSolver};
use crate::islands::Islands;
use crate::model::Model;
use crate::order::{Canonicalizer, RowKeys};
use crate::quotient::{Policy, Quotient};
use crate::rows::{Batch, Capacity, Input};

mod device;
mod trial;

use device::{Device, solve_recording};
use trial::Auto;
pub use trial::auto_keeps_quotient;

/// How the engine finds islands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// MuJoCo Warp's former dense kernel.
    Dense,
    /// Min-root union-find rebuilt every step (native MuJoCo 3.11+, MuJoCo Warp 4.0.0).
    Dsu,
    /// Min-label propagation.
    Labelprop,
    /// The static quotient with explicit invalidation.
    Quotient,
    /// Measures the quotient against a full rebuild (`dsu` on the CPU, the fastest full-rebuild
    /// mode on a GPU) and keeps the faster: measured again every 1,024 steps, and at once when
    /// the kept one's steps grow well past the other's.
    #[default]
    Auto,
}

impl Mode {
    /// Every mode.
    pub const ALL: [Mode; 5] = [
        Mode::Dense,
        Mode::Dsu,
        Mode::Labelprop,
        Mode::Quotient,
        Mode::Auto,
    ];

    /// The mode's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Dense => "dense",
            Mode::Dsu => "dsu",
            Mode::Labelprop => "labelprop",
            Mode::Quotient => "quotient",
            Mode::Auto => "auto",
        }
    }

    /// The engine mode a full-rebuild GPU mode reports as (the block-per-world variants are
    /// union-find or propagation too).
    fn of_gpu(mode: gpu::Mode) -> Mode {
        match mode {
            gpu::Mode::Dense => Mode::Dense,
            gpu::Mode::Labelprop | gpu::Mode::Tiled => Mode::Labelprop,
            gpu::Mode::Dsu | gpu::Mode::Block | gpu::Mode::Warp => Mode::Dsu,
        }
    }

    /// The mode called `name`.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode by name, as [`gpu::Mode`] parses: `"quotient".parse::<Mode>()`.
///
/// ```
/// use archipelago::Mode;
/// assert_eq!("auto".parse::<Mode>().unwrap(), Mode::Auto);
/// assert!("fastest".parse::<Mode>().unwrap_err().to_string().contains("known: dense"));
/// ```
impl std::str::FromStr for Mode {
    type Err = Error;
    fn from_str(name: &str) -> Result<Mode> {
        Mode::from_name(name).ok_or_else(|| Error::UnknownMode {
            name: name.to_string(),
            known: Mode::ALL.map(Mode::name).join(", "),
        })
    }
}

/// How an engine is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The mode.
    pub mode: Mode,
    /// Which rows the quotient treats as static (default: equalities, friction loss and flex
    /// couplings, an equality turning dynamic once it has been reported switched twice).
    pub policy: Policy,
    /// Put each world's rows in canonical order before discovery (DESIGN.md §6), so that every
    /// output is bitwise identical across runs and input row orders. Steps then need the rows'
    /// keys: [`Engine::step_keyed`].
    pub deterministic: bool,
    /// Let the quotient reuse the outputs of worlds whose rows are unchanged since their last
    /// solved step (exact either way; see [`Quotient::set_reuse`]), and on a GPU also the tree-
    /// and dof-level outputs of worlds whose partition is unchanged
    /// (`gpu::quotient::QuotientSolver::set_reuse`). On by default; off, every world is solved
    /// every step, which takes a few percent less device time where worlds never repeat. Where
    /// the GPU quotient gives each world a warp (many worlds of few trees), only the partition
    /// check applies (`gpu::quotient::QuotientSolver::set_warp_worlds`).
    pub reuse: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            mode: Mode::default(),
            policy: Policy::default(),
            deterministic: false,
            reuse: true,
        }
    }
}

/// Where an engine's steps run: on the host, or on a device. Each holds only its own state, so
/// that a GPU engine allocates no host quotient nor CPU scratch it would never use.
enum Backend {
    /// The CPU: the quotient and the full rebuild (`dsu`, or `dense` or `labelprop` by name).
    Host {
        quotient: Box<Quotient>,
        full: Box<dyn CpuMode>,
        /// `full`'s mode, as [`Engine::last_mode`] names it.
        full_mode: Mode,
    },
    /// A device ([`Engine::with_gpu`]).
    Device(Box<Device>),
}

/// The island engine: built once from a model, a capacity and options; each
/// [`step`](Engine::step) takes one batch of rows and the events reported since the last step.
pub struct Engine {
    model: Arc<Model>,
    capacity: Capacity,
    options: Options,
    backend: Backend,
    /// Page-locked on a GPU engine, so that a step's downloads run at the link's speed.
    out: PinnedIslands,
    auto: Auto,
    last_mode: Mode,
    /// Deterministic mode's host-side sort (scratch sized once from the capacity).
    canon: Option<Canonicalizer>,
    /// Deterministic mode on a GPU engine with a full-rebuild mode: the order is computed on the
    /// device, inside the solver's captured step, and read back here.
    device_order: PinnedOrder,
    order_on_device: bool,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("capacity", &self.capacity)
            .field("options", &self.options)
            .field("last_mode", &self.last_mode)
            .field("gpu", &self.device().map(|d| d.gpu.info().name.clone()))
            .finish_non_exhaustive()
    }
}

/// Refuses a capacity no batch could fill ([`Capacity::check_sizes`]) or with fewer trees or
/// dofs than `model` ([`Capacity::holds`]).
fn holds_model(capacity: &Capacity, model: &Model) -> Result<()> {
    capacity.check_sizes()?;
    capacity.holds(model)
}

/// Refuses a CPU `dense` engine whose capacity needs more scratch than the mode's cap, as the
/// GPU's `dense` refuses at construction: otherwise every step of a full batch would be refused,
/// after its events were recorded.
fn dense_fits(capacity: &Capacity, model: &Model) -> Result<()> {
    match Dense::check_scratch(capacity.nworld, model.ntree(), dense::DEFAULT_CAP_BYTES) {
        Ok(_) => Ok(()),
        // A capacity, not a batch, is at fault.
        Err(Error::Refused { mode, reason }) => Err(Error::Refused {
            mode,
            reason: format!("the capacity's {reason}"),
        }),
        Err(e) => Err(e),
    }
}

impl Engine {
    /// An engine for `model` with room for `capacity`; all buffers are allocated here. `dense`
    /// is refused where the capacity's `8·nworld·ntree²` bytes of scratch exceed its cap (1 GiB).
    pub fn new(model: &Model, capacity: Capacity, options: Options) -> Result<Engine> {
        holds_model(&capacity, model)?;
        if options.mode == Mode::Dense {
            dense_fits(&capacity, model)?;
        }
        let backend = Engine::host_backend(model, &capacity, &options);
        Ok(Engine::assemble(model, capacity, options, backend))
    }

    /// The host's quotient and full rebuild for `model` at `capacity`, every buffer a step
    /// needs allocated, the full rebuild's scratch too.
    fn host_backend(model: &Model, capacity: &Capacity, options: &Options) -> Backend {
        let (full_mode, mut full): (Mode, Box<dyn CpuMode>) = match options.mode {
            Mode::Dense => (Mode::Dense, Box::new(Dense::default())),
            Mode::Labelprop => (Mode::Labelprop, Box::new(LabelProp::default())),
            _ => (Mode::Dsu, Box::new(Dsu::default())),
        };
        full.reserve(model);
        let mut quotient = Quotient::new(&capacity.sized_for(model), options.policy.clone());
        quotient.set_reuse(options.reuse);
        Backend::Host {
            quotient: quotient.into(),
            full,
            full_mode,
        }
    }

    /// The engine around `backend`: its outputs and, in deterministic mode, the host's sorter.
    fn assemble(model: &Model, capacity: Capacity, options: Options, backend: Backend) -> Engine {
        // Until a step: the mode that will solve the first (`auto` starts with the quotient).
        let last_mode = match options.mode {
            Mode::Auto => Mode::Quotient,
            mode => mode,
        };
        let canon = options
            .deterministic
            .then(|| Canonicalizer::new(&capacity.sized_for(model)));
        Engine {
            model: Arc::new(model.clone()),
            capacity,
            options,
            backend,
            out: PinnedIslands::unpinned(Islands::default(), &capacity),
            auto: Auto::default(),
            last_mode,
            canon,
            device_order: PinnedOrder::default(),
            order_on_device: false,
        }
    }

    /// An engine whose modes run on `gpu` (see the module documentation); every device buffer is
    /// allocated here, except `auto`'s full-rebuild solver, chosen by timing on the first batch
    /// it solves (the engine's second step).
    pub fn with_gpu(
        gpu: &Gpu,
        model: &Model,
        capacity: Capacity,
        options: Options,
    ) -> Result<Engine> {
        holds_model(&capacity, model)?;
        let full = match options.mode {
            Mode::Dense => Some(gpu::Mode::Dense),
            Mode::Dsu => Some(gpu::Mode::Dsu),
            Mode::Labelprop => Some(gpu::Mode::Labelprop),
            Mode::Quotient | Mode::Auto => None,
        }
        .map(|m| {
            // Deterministic full rebuilds sort on the device, in the same captured step.
            let opts = gpu::solver::Options {
                deterministic: options.deterministic,
                ..gpu::solver::Options::default()
            };
            gpu::Solver::with_options(gpu, m, capacity, model, opts)
        })
        .transpose()?;
        let mut quotient = QuotientSolver::new(gpu, capacity, model, options.policy.clone())?;
        quotient.set_reuse(options.reuse)?;
        let device = Device {
            gpu: gpu.clone(),
            full,
            full_refused: None,
            quotient,
        };
        let mut engine = Engine::assemble(model, capacity, options, Backend::Device(device.into()));
        if engine.options.deterministic {
            engine.device_order = PinnedOrder::new(gpu, capacity.nworld * capacity.njmax);
        }
        // Page-locked outputs: a step's downloads run at the link's speed.
        engine.out.pin_to(gpu);
        Ok(engine)
    }

    /// The device half, on a GPU engine.
    fn device(&self) -> Option<&Device> {
        match &self.backend {
            Backend::Device(d) => Some(d),
            Backend::Host { .. } => None,
        }
    }

    /// Whether the engine runs on a GPU.
    pub fn on_gpu(&self) -> bool {
        self.device().is_some()
    }

    /// The full-rebuild GPU mode in use (for `auto`, once chosen).
    pub fn gpu_full_mode(&self) -> Option<gpu::Mode> {
        self.device()
            .and_then(|d| d.full.as_ref())
            .map(|s| s.mode())
    }

    /// For `auto` on a GPU: why no full-rebuild mode could be built on the device, once that
    /// happened (every mode refused, its memory taken by the quotient's, say); the quotient then
    /// solves every step.
    pub fn gpu_full_refused(&self) -> Option<&str> {
        self.device()?.full_refused.as_deref()
    }

    /// The device quotient, on a GPU engine.
    pub fn gpu_quotient(&self) -> Option<&QuotientSolver> {
        self.device().map(|d| &d.quotient)
    }

    /// Validates `batch` (structure and capacity), then finds every island output. A
    /// deterministic engine refuses: it needs the rows' keys ([`step_keyed`](Engine::step_keyed)).
    pub fn step(&mut self, batch: &Batch, events: &Events) -> Result<&Islands> {
        if self.options.deterministic {
            return Err(Error::Refused {
                mode: "deterministic",
                reason: "a deterministic engine needs each row's key: call step_keyed".into(),
            });
        }
        // A second handle on the model (no copy), so the input can borrow it while `self` steps.
        let model = Arc::clone(&self.model);
        let input = Input::with_capacity(&model, batch, &self.capacity)?;
        self.step_input(&input, events)
    }

    /// [`step`](Engine::step) with each row's canonical-order key (contact geoms and collision
    /// id; see [`RowKeys`]). With `deterministic` on, the rows are first put in canonical order
    /// and every output — row-level maps included — refers to that order; [`order`](Engine::order)
    /// gives the input row of each canonical row. With it off, `keys` is ignored.
    ///
    /// ```
    /// use archipelago::engine::{Engine, Mode, Options};
    /// use archipelago::order::RowKeys;
    /// use archipelago::{Batch, Capacity, Model, RowType};
    /// let model = Model::from_dofnum(&[1, 1, 1]).unwrap();
    /// let capacity = Capacity { nworld: 1, ntree: 3, nv: 3, njmax: 4, nsupport: 8, nedge: 0 };
    /// let options = Options { mode: Mode::Dsu, deterministic: true, ..Options::default() };
    /// let mut engine = Engine::new(&model, capacity, options).unwrap();
    /// let (mut b, mut keys) = (Batch::builder(), RowKeys::default());
    /// b.row(RowType::ContactPyramidal, 0, &[1, 2]); keys.push_contact([7, 8], 0);
    /// b.row(RowType::ContactPyramidal, 1, &[0]);    keys.push_contact([3, 8], 0);
    /// b.end_world();
    /// let islands = engine.step_keyed(&b.finish(), &keys, &Default::default()).unwrap();
    /// assert_eq!(islands.world(0).efc_island, &[0, 1]); // canonical order: geom pair (3, 8) first
    /// assert_eq!(engine.order(), &[1, 0]);
    /// ```
    pub fn step_keyed(
        &mut self,
        batch: &Batch,
        keys: &RowKeys,
        events: &Events,
    ) -> Result<&Islands> {
        let model = Arc::clone(&self.model);
        let input = Input::with_capacity(&model, batch, &self.capacity)?;
        // Refused events fail the step before any output or the order is touched.
        self.quotient().check(events)?;
        if let Backend::Device(device) = &self.backend {
            device.bind()?;
        }
        if let Backend::Device(device) = &mut self.backend
            && let Some(full) = device.full.as_mut().filter(|s| s.deterministic())
        {
            let quotient = device.quotient.quotient_mut();
            self.out.fill(&input, |o| {
                solve_recording(full, quotient, events, (&input, Some(keys)), o)
            })?;
            self.device_order
                .fill(batch.nrow(), |order, rank| full.download_order(order, rank))?;
            self.order_on_device = true;
            self.last_mode = Mode::of_gpu(full.mode());
            return Ok(&self.out);
        }
        // Otherwise (CPU, the quotient, or `auto`'s full rebuild) the rows are sorted here.
        let Some(mut canon) = self.canon.take() else {
            return self.step_input(&input, events);
        };
        self.order_on_device = false;
        // The sorter lends the canonical batch while the engine steps, then goes back in place.
        let result = match canon.canonicalize(&input, keys) {
            Ok((sorted, _)) => Input::new(&model, sorted).and_then(|sorted| {
                self.step_input(&sorted, events)?;
                Ok(())
            }),
            Err(e) => Err(e),
        };
        self.canon = Some(canon);
        result.map(|()| &*self.out)
    }

    /// Deterministic mode: for each canonical row of the last [`step_keyed`](Engine::step_keyed),
    /// the input row it came from (`canonical[k] = input[order[k]]`); empty otherwise.
    pub fn order(&self) -> &[u32] {
        if self.order_on_device {
            return self.device_order.order();
        }
        self.canon.as_ref().map_or(&[], |c| c.order())
    }

    /// [`step`](Engine::step) for an input already validated against this engine's model.
    pub fn step_input(&mut self, input: &Input<'_>, events: &Events) -> Result<&Islands> {
        if !std::ptr::eq(input.model(), &*self.model) && input.model() != &*self.model {
            return Err(Error::Model(
                "the input's model is not the engine's model".into(),
            ));
        }
        // Checked once here, against the capacity with the model's own tree and dof counts (the
        // same check, since the model fits), so that every stage after it that checks against
        // that capacity or a larger one does so for free.
        let tight = self.capacity.sized_for(&self.model);
        let fitted = input.fitted(&tight)?;
        let input = &fitted;
        // Refused events fail the step before any output is touched (`fill` resizes them
        // first); every mode records them.
        self.quotient().check(events)?;
        let (use_quotient, timed) = match self.options.mode {
            Mode::Quotient => (true, false),
            Mode::Auto => self.auto.plan(),
            _ => (false, false),
        };
        let start = timed.then(Instant::now);
        self.last_mode = match &mut self.backend {
            Backend::Device(device) => {
                device.bind()?;
                let by_quotient = self
                    .out
                    .fill(input, |o| device.step(input, events, use_quotient, o))?;
                match (by_quotient, device.full.as_ref()) {
                    (true, _) => Mode::Quotient,
                    (false, Some(full)) => Mode::of_gpu(full.mode()),
                    (false, None) => Mode::Dsu,
                }
            }
            Backend::Host { quotient, .. } if use_quotient => {
                self.out.fill(input, |o| quotient.step(input, events, o))?;
                Mode::Quotient
            }
            Backend::Host {
                quotient,
                full,
                full_mode,
            } => {
                // Keep the tracker current so a later quotient step rebuilds what changed.
                quotient.record(events)?;
                self.out.fill(input, |o| full.solve(input, o))?;
                *full_mode
            }
        };
        if self.options.mode == Mode::Auto {
            self.auto.record(use_quotient, start.map(|s| s.elapsed()));
        }
        Ok(&self.out)
    }

    /// The outputs of the last step.
    pub fn islands(&self) -> &Islands {
        &self.out
    }

    /// The mode that solved the last step (`auto` resolves to one of the others); before the
    /// first step, the mode that will solve it.
    pub fn last_mode(&self) -> Mode {
        self.last_mode
    }

    /// For `auto`: whether the last step was one of a trial's, where the quotient and the full
    /// rebuild take turns (the first steps, then a few every 1,024, or at once when the kept
    /// one's steps grow well past the other's), rather than a step of the contender the
    /// last trial kept. False for the other modes.
    pub fn auto_in_trial(&self) -> bool {
        self.options.mode == Mode::Auto && self.auto.in_trial()
    }

    /// The quotient's decision at its last step: reuse, rebuild these worlds, or rebuild all,
    /// with the cause of each rebuild.
    pub fn decision(&self) -> &Decision {
        self.quotient().decision()
    }

    /// The quotient engine (cache, tracker, counters); on a GPU engine, the device quotient's
    /// host half.
    pub fn quotient(&self) -> &Quotient {
        match &self.backend {
            Backend::Device(d) => d.quotient.quotient(),
            Backend::Host { quotient, .. } => quotient,
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The capacity.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Changes the quotient's classification policy; every world is rebuilt at the next step.
    pub fn set_policy(&mut self, policy: Policy) {
        match &mut self.backend {
            Backend::Device(d) => d.quotient.set_policy(policy.clone()),
            Backend::Host { quotient, .. } => quotient.set_policy(policy.clone()),
        }
        self.options.policy = policy;
    }

    /// Changes the capacity: every buffer is reallocated and every quotient dropped (a capacity
    /// change is an invalidation source). Call between steps. A capacity too small for the
    /// model is refused before anything changes. One the device cannot hold is refused after a
    /// GPU engine has freed its buffers (to make room for the new ones): it is then built again
    /// at its old capacity, on its device, as after a resize to it. Only if that fails too is
    /// it left on the host ([`on_gpu`](Self::on_gpu) false) at its old capacity, still exact
    /// (with `dsu` where a `dense` engine would not fit the CPU's cap).
    pub fn resize(&mut self, capacity: Capacity) -> Result<()> {
        holds_model(&capacity, self.model.as_ref())?;
        let (model, options) = (self.model.clone(), self.options.clone());
        let Some(gpu) = self.device().map(|d| d.gpu.clone()) else {
            *self = Engine::new(&model, capacity, options)?;
            return Ok(());
        };
        let old = self.capacity;
        // The device's buffers go first, to make room for the new ones: until an engine
        // replaces it, this one is an empty host engine (no world, nothing of size).
        let dsu = Options {
            mode: Mode::Dsu,
            ..options.clone()
        };
        *self = Engine::new(&model, Capacity { nworld: 0, ..old }, dsu.clone())?;
        let e = match Engine::with_gpu(&gpu, &model, capacity, options.clone()) {
            Ok(engine) => {
                *self = engine;
                return Ok(());
            }
            Err(e) => e,
        };
        *self = Engine::with_gpu(&gpu, &model, old, options.clone())
            .or_else(|_| Engine::new(&model, old, options))
            .or_else(|_| Engine::new(&model, old, dsu))?;
        Err(e)
    }

    /// Bytes of the outputs and of the host's quotient (cache, scratch, reuse copies; on a GPU
    /// engine the device quotient's host half, which tracks the events and contracts the worlds);
    /// a step never changes it. Deterministic mode's sorter, the CPU full rebuild's scratch and
    /// the device's buffers are not counted.
    pub fn held_bytes(&self) -> usize {
        let o = &self.out;
        (o.fields().iter())
            .map(|(_, v, _)| v.capacity() * 4)
            .sum::<usize>()
            + o.world_rowadr.capacity() * 4
            + self.quotient().bytes()
    }
}
