//! Typed errors. Every bad input is reported before any mode runs; no input may panic.

use thiserror::Error;

/// Everything that can go wrong in archipelago, with enough context to act on.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// The model topology is inconsistent (dof ranges, dof→tree map).
    #[error("invalid model: {0}")]
    Model(String),

    /// A CSR offset array is malformed (wrong length, not starting at 0, decreasing, past the end).
    #[error("inconsistent offsets in `{array}`: {detail}")]
    Offsets {
        /// The offset array's name.
        array: &'static str,
        /// What is wrong with it.
        detail: String,
    },

    /// The batch's world count does not match what it was paired with.
    #[error("world count mismatch: {what} has {got} worlds, expected {expected}")]
    WorldCount {
        /// What has the wrong count.
        what: &'static str,
        /// Its world count.
        got: usize,
        /// The world count it was paired with.
        expected: usize,
    },

    /// A support entry names a tree outside `0..ntree` (other than −1, reported separately).
    #[error("world {world}, {kind} {index}: tree id {tree} out of range 0..{ntree}")]
    TreeOutOfRange {
        /// The world.
        world: usize,
        /// `row` or `rowless hyperedge`.
        kind: &'static str,
        /// The row's or hyperedge's index in the batch.
        index: usize,
        /// The tree id given.
        tree: i32,
        /// The model's tree count.
        ntree: usize,
    },

    /// A support lists −1: a static body has no tree and never appears in a support.
    #[error("world {world}, {kind} {index}: support lists the static tree −1")]
    StaticInSupport {
        /// The world.
        world: usize,
        /// `row` or `rowless hyperedge`.
        kind: &'static str,
        /// The row's or hyperedge's index in the batch.
        index: usize,
    },

    /// A row with no trees (MuJoCo: "constraint between two static bodies").
    #[error("world {world}, row {row}: empty support (a constraint between two static bodies)")]
    EmptySupport {
        /// The world.
        world: usize,
        /// The row's index in the batch.
        row: usize,
    },

    /// A capacity larger than any batch could need ([`Capacity::check_sizes`]).
    ///
    /// [`Capacity::check_sizes`]: crate::Capacity::check_sizes
    #[error("invalid capacity: {0}")]
    Capacity(String),

    /// A count exceeds the capacity the engine was sized for.
    #[error("{}{what} {got} exceeds capacity {cap}", in_world(.world))]
    OverCapacity {
        /// The world, for a per-world count (`None` for counts of the model or of the whole
        /// batch).
        world: Option<usize>,
        /// What exceeds it (`nworld`, `ntree`, `nv`, `rows`, `support entries`, …).
        what: &'static str,
        /// The count asked for.
        got: usize,
        /// The capacity.
        cap: usize,
    },

    /// A mode refused to run, with the reason (for example `dense` over its memory cap).
    #[error("mode `{mode}` refused: {reason}")]
    Refused {
        /// The mode (or tool) that refused.
        mode: &'static str,
        /// Why.
        reason: String,
    },

    /// A mode name that no runner answers to.
    #[error("unknown mode `{name}` (known: {known})")]
    UnknownMode {
        /// The name given.
        name: String,
        /// The names known, comma-separated.
        known: String,
    },

    /// No CUDA device (or driver / NVRTC library) is available.
    #[error("no CUDA device: {0}")]
    NoDevice(String),

    /// NVRTC failed to compile a kernel source; the log says why.
    #[error("NVRTC failed to compile `{source_name}`:\n{log}")]
    Compile {
        /// The kernel source's name.
        source_name: String,
        /// NVRTC's log.
        log: String,
    },

    /// A device allocation failed.
    #[error("device out of memory: asked for {asked} bytes with {free} bytes free")]
    OutOfMemory {
        /// Bytes asked for.
        asked: usize,
        /// Bytes free on the device.
        free: usize,
    },

    /// Any other CUDA driver error, with the call that failed.
    #[error("CUDA error in {call}: {detail}")]
    Cuda {
        /// The driver call.
        call: String,
        /// The driver's error.
        detail: String,
    },

    /// A row's canonical key does not fit the key layout it was sorted with.
    #[error("row {row}: canonical key field outside the layout's bounds ({detail})")]
    KeyBounds {
        /// The row (global index).
        row: usize,
        /// The layout's bounds.
        detail: String,
    },

    /// A reported invalidation event names a world or tree outside the capacity, or a source by a
    /// negative id.
    #[error("invalid event: {0}")]
    Event(#[from] invalidation::TrackerError),

    /// A trace file could not be read or is malformed.
    #[error("trace {path}: {detail}")]
    Trace {
        /// The file.
        path: String,
        /// What went wrong.
        detail: String,
    },
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// "world W: " where a count is one world's.
fn in_world(world: &Option<usize>) -> String {
    world.map_or(String::new(), |w| format!("world {w}: "))
}
