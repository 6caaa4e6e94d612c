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
use std::time::{Duration, Instant};

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

/// Timed steps of each contender in an `auto` trial, and steps between trials.
const TRIAL_STEPS: usize = 4;
const RETRIAL_EVERY: u32 = 1024;
/// The step (within [`RETRIAL_EVERY`]) after a trial's last.
const TRIAL_END: u32 = 2 + 2 * TRIAL_STEPS as u32;
/// Steps of the kept contender watched for drift ([`DRIFT`]), a ring of the latest.
const WATCH_STEPS: usize = 8;
/// A kept contender whose median over its last [`WATCH_STEPS`] steps exceeds this multiple of
/// the other's median in the last trial starts a trial at once instead of at the next
/// [`RETRIAL_EVERY`]: the input changed under it (on `passive_contacts`, bodies landing on
/// passive flexes after a quiet start, the guard then rebuilt worlds every step and `auto` ran
/// a quotient 3.9× slower than `dsu` for the rest of the trace), or a noisy trial chose wrong.
/// Well above the trial's margin, so that timing noise does not start trial after trial.
const DRIFT: f64 = 1.25;
/// The quotient is kept only when its median is below this share of the full rebuild's: a
/// wrong choice of the quotient costs up to its whole overhead, a wrong choice of the full
/// rebuild at most this margin, and whole-step wall times are noisy (PCIe, host).
const QUOTIENT_MARGIN: f64 = 0.97;

/// `auto`'s rule: whether a quotient step of `quotient` (any unit) is kept over a full
/// rebuild's of `full` (the same unit), that is, faster by 3 % (below 0.97 of it). What a
/// trial decides by, and what a benchmark that says which mode `auto` picks must apply too.
///
/// ```
/// use archipelago::engine::auto_keeps_quotient;
/// assert!(auto_keeps_quotient(96.0, 100.0));
/// assert!(!auto_keeps_quotient(98.0, 100.0), "faster, but within the margin");
/// ```
pub fn auto_keeps_quotient(quotient: f64, full: f64) -> bool {
    quotient < QUOTIENT_MARGIN * full
}

/// `auto`'s measurements. A trial runs each contender once untimed (the quotient may build its
/// quotients; the full rebuild's first step on a GPU times every mode to choose one), then the
/// two in turns, [`TRIAL_STEPS`] timed steps each, so that both see the same stretch of the
/// input; the one with the lower median (the quotient by [`QUOTIENT_MARGIN`]) runs until the
/// next trial. The turns go quotient, full, full, quotient and again, so that each contender
/// takes odd and even steps alike: taken one by one, on a sequence whose sleep and wake events
/// came every other step the quotient's timed steps were all those without events, and `auto`
/// kept a quotient 1.28× slower by median wall (session 64). (Taking each contender's
/// best of consecutive steps instead let a quiet stretch of the input decide: on the hammock
/// sequence it chose a quotient 9% slower by median. Timing the full rebuild's first step, as
/// the next version did, biases its median upwards; with it, two sequences of another run chose
/// a quotient 7% and 15% slower by median.)
#[derive(Debug, Clone, Default)]
struct Auto {
    step: u32,
    quotient: [Duration; TRIAL_STEPS],
    full: [Duration; TRIAL_STEPS],
    use_quotient: bool,
    /// The median of the contender the last trial did not keep, and the kept one's latest
    /// steps since.
    other_median: Duration,
    watch: [Duration; WATCH_STEPS],
    watched: usize,
}

impl Auto {
    /// Whether this step runs the quotient, and whether it is timed (a trial's steps, and the
    /// kept contender's, watched for drift).
    fn plan(&self) -> (bool, bool) {
        match self.step % RETRIAL_EVERY {
            k @ (0 | 1) => (k == 0, false),
            // Each pair of timed steps holds one of each, in turn q f, f q.
            k if k < TRIAL_END => (k % 2 != (k / 2) % 2, true),
            _ => (self.use_quotient, true),
        }
    }

    /// Whether the last recorded step was one of a trial's (before any step: false).
    fn in_trial(&self) -> bool {
        self.step > 0 && (self.step - 1) % RETRIAL_EVERY < TRIAL_END
    }

    fn record(&mut self, quotient: bool, timed: Option<Duration>) {
        let k = self.step % RETRIAL_EVERY;
        match timed {
            Some(t) if k < TRIAL_END => {
                let i = ((k - 2) / 2) as usize;
                let times = if quotient {
                    &mut self.quotient
                } else {
                    &mut self.full
                };
                times[i] = t;
            }
            Some(t) => {
                self.watch[self.watched % WATCH_STEPS] = t;
                self.watched += 1;
            }
            None => {}
        }
        self.step = self.step.wrapping_add(1);
        if self.step % RETRIAL_EVERY == TRIAL_END {
            let (q, f) = (median(&mut self.quotient), median(&mut self.full));
            self.use_quotient = auto_keeps_quotient(q.as_secs_f64(), f.as_secs_f64());
            self.other_median = if self.use_quotient { f } else { q };
            self.watched = 0;
        } else if self.watched >= WATCH_STEPS
            && median(&mut self.watch.clone()).as_secs_f64()
                > DRIFT * self.other_median.as_secs_f64()
        {
            // The next step starts a trial (the one at a multiple of RETRIAL_EVERY, which
            // divides 2^32: past the last, step 0).
            self.step = self
                .step
                .checked_next_multiple_of(RETRIAL_EVERY)
                .unwrap_or(0);
            self.watched = 0;
        }
    }
}

/// The median of some times (the mean of the middle two); sorts them.
fn median<const N: usize>(times: &mut [Duration; N]) -> Duration {
    times.sort_unstable();
    (times[N / 2 - 1] + times[N / 2]) / 2
}

/// A full rebuild's step on the device, with `keys` for deterministic mode: its events are
/// recorded into `quotient` (so that its next step rebuilds what they invalidate) in the
/// download's wait, while the device runs the step. The tracker takes about 3 ns an event, and
/// a cloth of 400 trees falling asleep in 256 worlds reports 102,400: recorded before the solve,
/// they took `auto` to 1.039-1.087x the median wall of the full rebuild it ran, in the wait
/// 0.966-0.974x (session 65, calls 1, 2 and 5). The engine checked the events first
/// ([`Quotient::check`]), so recording them cannot fail here; a solve that fails before its
/// wait still records them.
fn solve_recording(
    full: &mut gpu::Solver,
    quotient: &mut Quotient,
    events: &Events,
    (input, keys): (&Input<'_>, Option<&RowKeys>),
    out: &mut Islands,
) -> Result<()> {
    let mut recorded = None;
    let solved = match keys {
        Some(keys) => full.upload_keyed(input, keys),
        None => full.upload(input),
    }
    .and_then(|()| full.replay())
    .and_then(|()| full.download_while(input, out, || recorded = Some(quotient.record(events))));
    let recorded = recorded.unwrap_or_else(|| quotient.record(events));
    solved.and(recorded)
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

/// The device half of an engine built with [`Engine::with_gpu`].
///
/// Every step binds its context to the calling thread first ([`Device::bind`]), so that an
/// engine moved to another thread steps there as on the one that built it.
struct Device {
    gpu: Gpu,
    /// The full-rebuild solver (for `auto`, chosen on the first batch).
    full: Option<gpu::Solver>,
    /// For `auto`: why no full-rebuild mode could be built on the device (its memory taken, for
    /// one), after which the quotient solves every step rather than every other step failing.
    full_refused: Option<String>,
    /// The device quotient (its host half tracks every event).
    quotient: QuotientSolver,
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
    Dense::check_scratch(capacity.nworld, model.ntree(), dense::DEFAULT_CAP_BYTES).map(drop)
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

// SAFETY: the members that are not `Send` are cudarc's CUDA graphs, driver handles that any
// thread may launch (cudarc binds the context first) or destroy (which needs no current
// context); the engine's own raw launches run only after `Device::bind` made the context current
// on the stepping thread.
unsafe impl Send for Device {}

impl Device {
    /// Makes the device's context current on the calling thread, as a step's raw launches need.
    fn bind(&self) -> Result<()> {
        self.gpu
            .ctx()
            .bind_to_thread()
            .map_err(gpu::cuda("cuCtxSetCurrent"))
    }

    /// One step on the device: the quotient, or the full rebuild (choosing it first for `auto`)
    /// while the quotient's tracker records the events. Says whether the quotient solved it.
    fn step(
        &mut self,
        input: &Input<'_>,
        events: &Events,
        use_quotient: bool,
        out: &mut Islands,
    ) -> Result<bool> {
        if use_quotient || self.full_refused.is_some() {
            self.quotient.step(input, events, out)?;
            return Ok(true);
        }
        let cap = self.quotient.workspace().capacity();
        let Device {
            gpu,
            full,
            full_refused,
            quotient,
        } = self;
        let full = match full {
            Some(s) => s,
            None => {
                let opts = gpu::solver::Options::default();
                match gpu::auto::choose(gpu, cap, input.model(), input, opts) {
                    Ok((solver, _)) => full.insert(solver),
                    // Every mode refused (or short of device memory): the quotient is the one left.
                    Err(Error::Refused { reason, .. }) => {
                        *full_refused = Some(reason);
                        quotient.step(input, events, out)?;
                        return Ok(true);
                    }
                    // Nothing solved, nothing lost: the events are still recorded.
                    Err(e) => return quotient.quotient_mut().record(events).and(Err(e)),
                }
            }
        };
        let quotient = quotient.quotient_mut();
        solve_recording(full, quotient, events, (input, None), out).map(|()| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs one trial with the given times (ms) and returns the choice and the plan it followed.
    fn trial(quotient: [u64; TRIAL_STEPS], full: [u64; TRIAL_STEPS]) -> (bool, Vec<(bool, bool)>) {
        let mut auto = Auto::default();
        let (mut q, mut f) = (quotient.iter(), full.iter());
        let mut plans = Vec::new();
        for _ in 0..TRIAL_END {
            let (use_quotient, timed) = auto.plan();
            plans.push((use_quotient, timed));
            let t = timed.then(|| {
                let ms = if use_quotient { q.next() } else { f.next() };
                Duration::from_millis(*ms.unwrap())
            });
            auto.record(use_quotient, t);
        }
        assert_eq!(q.next(), None, "the trial times every quotient step given");
        assert_eq!(f.next(), None, "the trial times every full step given");
        (auto.plan().0, plans)
    }

    #[test]
    fn a_trial_takes_turns_q_f_f_q_after_an_untimed_step_of_each() {
        let (_, plans) = trial([1; TRIAL_STEPS], [1; TRIAL_STEPS]);
        assert_eq!(plans[0], (true, false));
        assert_eq!(plans[1], (false, false));
        let quotient: Vec<bool> = plans[2..].iter().map(|&(q, _)| q).collect();
        assert_eq!(
            quotient,
            [true, false, false, true, true, false, false, true]
        );
        assert!(plans[2..].iter().all(|&(_, timed)| timed));
    }

    #[test]
    fn steps_that_cost_more_every_other_step_do_not_decide() {
        // Every odd step costs 4 ms more (events every other step); the full rebuild is 1 ms
        // faster at every step. Taken one by one, the quotient's timed steps were all even.
        let mut auto = Auto::default();
        for k in 0..TRIAL_END {
            let (quotient, timed) = auto.plan();
            let ms = u64::from(quotient) + 3 + 4 * u64::from(k % 2 == 1);
            auto.record(quotient, timed.then(|| Duration::from_millis(ms)));
        }
        assert!(!auto.plan().0, "the quotient was kept");
    }

    #[test]
    fn the_median_decides_not_the_best_step() {
        // One fast quotient step (a quiet stretch) does not win against a steadily faster full
        // rebuild, nor one slow full step lose it the trial.
        assert!(!trial([1, 5, 5, 5], [3, 3, 3, 3]).0);
        assert!(!trial([5, 5, 5, 5], [900, 3, 3, 3]).0);
        assert!(trial([2, 2, 2, 2], [3, 3, 1, 3]).0);
        assert!(
            !trial([3, 3, 3, 3], [3, 3, 3, 3]).0,
            "a tie keeps the full rebuild"
        );
        // Within the margin the full rebuild stays; past it the quotient wins.
        assert!(!trial([98, 98, 98, 98], [100, 100, 100, 100]).0);
        assert!(trial([96, 96, 96, 96], [100, 100, 100, 100]).0);
    }

    #[test]
    fn the_choice_holds_until_the_next_trial() {
        let mut auto = Auto::default();
        assert!(!auto.in_trial(), "no step yet");
        for k in 0..RETRIAL_EVERY {
            let (q, timed) = auto.plan();
            let ms = if q { 1 } else { 2 };
            auto.record(q, timed.then(|| Duration::from_millis(ms)));
            // The trial's steps are the untimed pair and the timed ones, none after them.
            assert_eq!(auto.in_trial(), k < TRIAL_END, "step {k}");
            if auto.step >= TRIAL_END && auto.step < RETRIAL_EVERY {
                assert_eq!(auto.plan(), (true, true), "the kept quotient is watched");
            }
        }
        assert_eq!(
            auto.plan(),
            (true, false),
            "the next trial starts with the quotient"
        );
        auto.record(true, None);
        assert!(auto.in_trial());
    }

    /// Runs a trial that keeps the quotient (1 ms against 2), then `steps` quotient steps of
    /// `ms` each; returns the auto and the step at which a new trial started, if one did.
    fn kept_then(ms: &[u64]) -> (Auto, Option<usize>) {
        let mut auto = Auto::default();
        for _ in 0..TRIAL_END {
            let (q, timed) = auto.plan();
            auto.record(
                q,
                timed.then(|| Duration::from_millis(if q { 1 } else { 2 })),
            );
        }
        assert_eq!(auto.plan(), (true, true));
        for (i, &t) in ms.iter().enumerate() {
            let (q, timed) = auto.plan();
            if !q || !timed {
                return (auto, Some(i));
            }
            auto.record(q, Some(Duration::from_millis(t)));
        }
        let retrial = (auto.step % RETRIAL_EVERY == 0).then_some(ms.len());
        (auto, retrial)
    }

    #[test]
    fn a_kept_quotient_that_drifts_past_the_full_rebuild_is_tried_again_at_once() {
        // The input changed: the quotient now costs 4 ms a step against the trial's 2 ms full
        // rebuild. After a window of such steps a trial starts, not 1,024 steps later.
        let (auto, retrial) = kept_then(&[4; 20]);
        assert_eq!(retrial, Some(WATCH_STEPS));
        assert_eq!(
            auto.step % RETRIAL_EVERY,
            0,
            "the next step is a trial's first"
        );
        // Up to DRIFT times the full rebuild (noise, or a small loss) waits for the next trial,
        // and so do a few slow steps among fast ones (the median decides).
        assert_eq!(kept_then(&[2; 100]).1, None);
        let mut bursts = [1; 100];
        for t in bursts.iter_mut().step_by(3) {
            *t = 9;
        }
        assert_eq!(kept_then(&bursts).1, None);
    }

    #[test]
    fn a_kept_full_rebuild_that_drifts_past_the_quotient_is_tried_again_at_once() {
        // The trial kept the full rebuild (1 ms against the quotient's 3); then its steps cost
        // 5 ms, past DRIFT times the quotient's: a trial starts after a window of them.
        let mut auto = Auto::default();
        for _ in 0..TRIAL_END {
            let (q, timed) = auto.plan();
            auto.record(
                q,
                timed.then(|| Duration::from_millis(if q { 3 } else { 1 })),
            );
        }
        assert_eq!(
            auto.plan(),
            (false, true),
            "the kept full rebuild is watched"
        );
        for _ in 0..WATCH_STEPS {
            auto.record(false, Some(Duration::from_millis(5)));
        }
        assert_eq!(
            auto.step % RETRIAL_EVERY,
            0,
            "the next step is a trial's first"
        );
    }
}
