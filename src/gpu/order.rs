//! Deterministic mode on the device: the canonical order of each world's rows (the order of
//! [`crate::order::Canonicalizer`]), inside the solver's captured step.
//!
//! The solver uploads the batch as usual into its [`Workspace`]; [`DeviceOrder`] uploads the
//! row keys ([`RowKeys`] and the row ids) and the key layout, then its kernel (one block per
//! world, `kernels/order.cu`) sorts the world's rows and writes the permutation both ways. No
//! row data moves: discovery reads the rows as uploaded (connectivity does not depend on row
//! order) and the row-level maps place each row's island at its canonical index (the
//! workspace's `Args::rank`). Every buffer is allocated once from the [`Capacity`]; the
//! layout is data in device memory, so a new layout per step needs no new graph.
//!
//! Worlds of at most [`SMALL_MAX`] rows sort in one block: from [`BLOCK_MIN`] rows up with a
//! stable LSD radix sort in shared memory, in digits of up to 8 bits over the bits in which the
//! world's keys differ (32-bit keys when the key fits, else 64-bit), below that with a bitonic
//! network over packed `(key, row)` values in registers.
//! Larger worlds take a stable LSD radix sort in global scratch: a block per chunk of
//! [`RADIX_CHUNK`] rows, so that a few large worlds still fill the device, in a chain of
//! launches (keys, then a count and a scatter per 8-bit digit, then the permutation).

use cudarc::driver::{CudaFunction, CudaStream};

use super::Gpu;
use super::module::{self, Kernels, Program, Split};
use super::pinned::PinnedVec;
use super::workspace::{DevBuf, Workspace};
use crate::error::{Error, Result};
use crate::order::{Bounds, KeyBounds, KeyLayout, KeyWidth, RowKeys};
use crate::rows::{Capacity, Input};

/// Most rows per world that the shared-memory sorts take (their tile is the next power of two),
/// provided the tile fits the device's shared memory (8192 rows: 128 KiB with 64-bit keys).
pub const SMALL_MAX: usize = 8192;

/// Smallest tile [`Sort::Auto`] sorts with the shared-memory radix sort. Below it, and when key
/// and row index pack into 32 bits, the bitonic network is faster (H200, order stage alone,
/// `bench --deterministic --sort`, 2026-11-30: 100-row worlds ×2048 8.7 µs bitonic, 10.0
/// radix; 228 rows ×2048 13.8 against 16.8). From 1024 the radix sort wins: 693-row worlds
/// ×256 (tile 1024) 11.0 bitonic, 9.8 radix; 3,168 rows with 64-bit packing 83.5 against 44.8.
pub const BLOCK_MIN: usize = 1024;

/// Which sort a deterministic solver uses for worlds that fit one block (at most
/// [`SMALL_MAX`] rows; larger worlds always take the radix sort in global scratch).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Sort {
    /// The shared-memory radix sort from [`BLOCK_MIN`] rows up or when key and row index need
    /// more than 32 bits, else the bitonic network.
    #[default]
    Auto,
    /// The bitonic network whenever key and row index pack into 64 bits (for measurements).
    Bitonic,
    /// The shared-memory radix sort for every tile.
    Block,
}

/// Threads of the radix kernels; must match `ORDER_RADIX_THREADS` in `kernels/order.cu`.
const RADIX_THREADS: u32 = 256;

/// Rows of a world that one block of the global radix sort takes (`ORDER_CHUNK` in
/// `kernels/order.cu`: 8 per thread).
pub const RADIX_CHUNK: usize = RADIX_THREADS as usize * 8;

/// Bytes of `OrderChunk` in `kernels/order.cu`.
const CHUNK_BYTES: usize = 24;

/// `OrderLayout` of `kernels/order.cu`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct LayoutArg {
    id_min: i32,
    id_max: i32,
    geom_min: i32,
    geom_max: i32,
    colid_min: i32,
    colid_max: i32,
    id_bits: u32,
    geom_bits: u32,
    colid_bits: u32,
    payload_bits: u32,
    bits: u32,
    pad: u32,
}

impl LayoutArg {
    fn new(layout: &KeyLayout) -> LayoutArg {
        // An empty range (min > max) for a field without rows: any row needing it is flagged.
        let range = |b: Option<Bounds>| b.map_or((1, 0), |b| (b.min, b.max));
        let bounds = layout.bounds();
        let (id, geom, colid) = (range(bounds.id), range(bounds.geom), range(bounds.colid));
        let (id_bits, geom_bits, colid_bits) = layout.field_bits();
        LayoutArg {
            id_min: id.0,
            id_max: id.1,
            geom_min: geom.0,
            geom_max: geom.1,
            colid_min: colid.0,
            colid_max: colid.1,
            id_bits,
            geom_bits,
            colid_bits,
            payload_bits: layout.payload_bits(),
            bits: layout.bits(),
            pad: 0,
        }
    }
}

/// `OrderArgs` of `kernels/order.cu`: device pointers, then two 32-bit fields.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct OrderArgs {
    world_rowadr: u64,
    row_type: u64,
    row_id: u64,
    geom: u64,
    colid: u64,
    layout: u64,
    order: u64,
    rank: u64,
    status: u64,
    keys_a: u64,
    keys_b: u64,
    vals_a: u64,
    vals_b: u64,
    chunks: u64,
    counts: u64,
    nworld: i32,
    idx_bits: u32,
    pass: u32,
    nchunk: u32,
}

/// How a step is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Plan {
    /// Radix sort of a world's keys in shared memory: 64-bit keys when `wide`.
    Block {
        /// 64-bit keys (else 32-bit).
        wide: bool,
    },
    /// Bitonic sort of packed values in a block: 64-bit values when `wide`.
    Small {
        /// 64-bit packed values (else 32-bit).
        wide: bool,
    },
    /// Stable LSD radix sort of keys in global scratch: 64-bit keys when `wide`, in `passes`
    /// launches of an 8-bit digit each (the most the layout's bits have needed at this width;
    /// a world whose keys differ in fewer bits skips the rest on the device).
    Radix {
        /// 64-bit keys (else 32-bit).
        wide: bool,
        /// Digit passes launched.
        passes: u32,
    },
}

// Buffer indices.
const ROW_ID: usize = 0;
const GEOM: usize = 1;
const COLID: usize = 2;
const LAYOUT: usize = 3;
const ORDER: usize = 4;
const RANK: usize = 5;
const STATUS: usize = 6;
const KEYS_A: usize = 7;
const KEYS_B: usize = 8;
const VALS_A: usize = 9;
const VALS_B: usize = 10;
const CHUNKS: usize = 11;
const COUNTS: usize = 12;

/// The canonical-order step of a deterministic [`super::Solver`].
pub struct DeviceOrder {
    sorts: Sorts,
    /// Whether each radix launch after the first is a programmatic dependent of the one
    /// before (compute capability 9.0 and later).
    radix_chain: bool,
    bufs: Vec<DevBuf>,
    args: OrderArgs,
    fixed: Option<KeyLayout>,
    layout: Option<KeyLayout>,
    host_layout: [LayoutArg; 1],
    plan: Option<Plan>,
    sort: Sort,
    /// Host copy of the per-world bounds status, reused by every step.
    status_host: std::cell::RefCell<PinnedVec<i32>>,
    tiling: Tiling,
    nworld: usize,
    nrow: usize,
}

/// The order step's program: the shared definitions, then `kernels/order.cu`; compiled and
/// loaded by the first [`DeviceOrder`] of a process (see [`super::module::SOURCES`]).
pub fn program_source() -> String {
    super::module::concat(&[
        ("common.cu", include_str!("../../kernels/common.cu")),
        ("order.cu", include_str!("../../kernels/order.cu")),
    ])
}

/// The order step's program ([`program_source`]).
pub const PROGRAM: Program = Program {
    name: "order",
    source: program_source,
    split: Split::Off,
};

impl std::fmt::Debug for DeviceOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceOrder")
            .field("plan", &self.plan)
            .field("layout", &self.layout)
            .field("tile", &self.tiling.tile)
            .finish()
    }
}

/// Dynamic shared memory of the bitonic sort: two tiles of packed values.
fn small_smem(tile: usize, wide: bool) -> usize {
    2 * tile * if wide { 8 } else { 4 }
}

/// Dynamic shared memory of the shared-memory radix sort (`order_block` in
/// `kernels/order.cu`) with `threads` holding `per_thread` values each: 256 digit counters per
/// warp, the keys and two buffers of row indices.
fn block_smem(threads: u32, per_thread: usize, wide: bool) -> usize {
    let threads = threads as usize;
    256 * 4 * (threads / 32) + threads * per_thread * (if wide { 8 } else { 4 } + 8)
}

fn checked(parts: &[usize]) -> Result<usize> {
    parts
        .iter()
        .try_fold(1usize, |acc, &p| acc.checked_mul(p))
        .ok_or_else(|| Error::Refused {
            mode: "deterministic",
            reason: "capacity overflows the address space".into(),
        })
}

/// The order program's kernels.
struct Sorts {
    /// The bitonic network, per key width and values per thread (1, 2, 4, 8).
    small: [[CudaFunction; 4]; 2],
    /// The shared-memory radix sort, the same way.
    block: [[CudaFunction; 4]; 2],
    /// Per key width: keys, count, scatter; then the place kernel of both widths.
    radix: [[CudaFunction; 3]; 2],
    radix_place: CudaFunction,
}

impl Sorts {
    fn load(module: &std::sync::Arc<cudarc::driver::CudaModule>) -> Result<Sorts> {
        let f = |name: String| module::function(module, &name);
        let per_width = |kind: &str, w: &str| -> Result<[CudaFunction; 4]> {
            Ok([
                f(format!("order_{kind}_{w}_e1"))?,
                f(format!("order_{kind}_{w}_e2"))?,
                f(format!("order_{kind}_{w}_e4"))?,
                f(format!("order_{kind}_{w}_e8"))?,
            ])
        };
        let radix = |w: &str| -> Result<[CudaFunction; 3]> {
            Ok([
                f(format!("order_radix_keys_{w}"))?,
                f(format!("order_radix_count_{w}"))?,
                f(format!("order_radix_scatter_{w}"))?,
            ])
        };
        Ok(Sorts {
            small: [per_width("small", "u32")?, per_width("small", "u64")?],
            block: [per_width("block", "u32")?, per_width("block", "u64")?],
            radix: [radix("u32")?, radix("u64")?],
            radix_place: f("order_radix_place".into())?,
        })
    }

    /// Lets the shared-memory sorts take the dynamic shared memory `tiling`'s worlds need, and
    /// prefer shared memory to L1.
    fn allow_smem(&self, tiling: &Tiling) -> Result<()> {
        for wide in [false, true] {
            for func in &self.small[usize::from(wide)] {
                Kernels::allow_smem(func, small_smem(tiling.tile, wide))?;
                Kernels::prefer_smem(func)?;
            }
            for func in &self.block[usize::from(wide)] {
                let bytes = block_smem(tiling.radix_threads, tiling.per_thread, wide);
                Kernels::allow_smem(func, bytes)?;
                Kernels::prefer_smem(func)?;
            }
        }
        Ok(())
    }
}

/// How worlds of at most a given number of rows are cut into threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tiling {
    /// Values per thread of the shared-memory sorts (1, 2, 4 or 8).
    per_thread: usize,
    /// Tile of the bitonic sort (a power of two, at least 32) and its threads.
    tile: usize,
    threads: u32,
    /// Threads of the shared-memory radix sort: the fewest multiple of 32 whose
    /// `per_thread` values cover a world (the radix sort needs no power of two).
    radix_threads: u32,
    /// Whether the tile fits one block's shared memory (else the global radix sort).
    one_block: bool,
}

impl Tiling {
    /// For worlds of at most `njmax` rows on a device whose blocks may opt in to `smem_optin`
    /// bytes of shared memory.
    fn for_rows(njmax: usize, smem_optin: usize) -> Tiling {
        let tile = njmax.max(32).next_power_of_two();
        // Values per thread: more of them keeps more exchanges in registers and amortizes the
        // per-thread work of a radix pass, fewer keeps more threads in flight (at most 1024
        // threads, and 8 values: the kernels' register bounds). For the radix sort both
        // directions measured slower on the H200: 8 values at every size (1,090-row worlds
        // 17.2 -> 19.8 µs, 256-row worlds 15.5 -> 17.0) and half of these for more threads
        // where a batch still fits the device at once (17.2 -> 20.7, 1,024 rows 11.3 -> 17.9;
        // benches/results/gpu-h200-notes.md, session 5).
        let per_thread = match tile {
            0..=32 => 1,
            33..=512 => 2,
            513..=2048 => 4,
            _ => 8,
        };
        let radix_threads = (njmax.max(1).div_ceil(32 * per_thread) * 32) as u32;
        let one_block = tile <= SMALL_MAX
            && small_smem(tile, true).max(block_smem(radix_threads, per_thread, true)) + 1024
                <= smem_optin;
        Tiling {
            per_thread,
            tile,
            threads: (tile / per_thread).min(1024) as u32,
            radix_threads,
            one_block,
        }
    }
}

/// Every buffer's name and bytes, in the order of the buffer indices: the keys, the layout, the
/// permutation both ways and the status; then the global radix sort's scratch (keys and row
/// indices per row, and per chunk its key summary and digit counts), empty when every world
/// fits one block (the other sorts work in shared memory).
fn buffer_sizes(
    cap: &Capacity,
    one_block: bool,
    nchunk: usize,
) -> Result<[(&'static str, usize); 13]> {
    let rows = checked(&[cap.nworld, cap.njmax])?;
    let chunks = checked(&[cap.nworld, nchunk])?;
    let scratch = if one_block { 0 } else { rows };
    Ok([
        ("order_row_id", rows * 4),
        ("order_geom", rows * 8),
        ("order_colid", rows * 4),
        ("order_layout", std::mem::size_of::<LayoutArg>()),
        ("order_order", rows * 4),
        ("order_rank", rows * 4),
        ("order_status", cap.nworld * 4),
        ("order_keys_a", scratch * 8),
        ("order_keys_b", scratch * 8),
        ("order_vals_a", scratch * 4),
        ("order_vals_b", scratch * 4),
        ("order_chunks", checked(&[chunks, CHUNK_BYTES])?),
        ("order_counts", checked(&[chunks, 256 * 4])?),
    ])
}

impl OrderArgs {
    /// The kernels' arguments over `bufs` ([`buffer_sizes`]), reading the rows from `ws`.
    fn over(bufs: &[DevBuf], ws: &Workspace, tiling: &Tiling, nchunk: u32) -> OrderArgs {
        let p = |i: usize| bufs[i].ptr();
        let w = ws.args();
        OrderArgs {
            world_rowadr: w.world_rowadr,
            row_type: w.row_type,
            row_id: p(ROW_ID),
            geom: p(GEOM),
            colid: p(COLID),
            layout: p(LAYOUT),
            order: p(ORDER),
            rank: p(RANK),
            status: p(STATUS),
            keys_a: p(KEYS_A),
            keys_b: p(KEYS_B),
            vals_a: p(VALS_A),
            vals_b: p(VALS_B),
            chunks: p(CHUNKS),
            counts: p(COUNTS),
            nworld: 0,
            idx_bits: tiling.tile.trailing_zeros(),
            pass: 0,
            nchunk,
        }
    }
}

impl DeviceOrder {
    /// Allocates every buffer for `cap`, reading its input rows from `ws` (which must be sized
    /// for the same capacity). With `bounds`, every step uses that key layout (rows outside it
    /// are reported by [`status`](Self::status)); without, each step gets the narrowest layout
    /// of its rows. `sort` picks the sort of worlds that fit one block.
    pub fn new(
        gpu: &Gpu,
        cap: &Capacity,
        ws: &Workspace,
        bounds: Option<KeyBounds>,
        sort: Sort,
    ) -> Result<DeviceOrder> {
        let module = gpu.program(&PROGRAM)?;
        let sorts = Sorts::load(&module)?;
        let tiling = Tiling::for_rows(cap.njmax, gpu.info().smem_optin);
        if tiling.one_block {
            sorts.allow_smem(&tiling)?;
        }
        // The global radix sort's chunks of a world; none when every world fits one block.
        // They are the launch grid's y dimension (at most 65,535 blocks): a world too large
        // for it is refused before any buffer is allocated.
        let nchunk = match tiling.one_block {
            true => 0,
            false => cap.njmax.div_ceil(RADIX_CHUNK),
        };
        let grid_y = u32::try_from(nchunk)
            .ok()
            .filter(|&n| n <= 65_535)
            .ok_or_else(|| Error::Refused {
                mode: "deterministic",
                reason: format!(
                    "{} rows per world are too many to sort on the device (at most {})",
                    cap.njmax,
                    65_535 * RADIX_CHUNK
                ),
            })?;
        let ctx = ws.ctx();
        let bufs = buffer_sizes(cap, tiling.one_block, nchunk)?
            .into_iter()
            .map(|(name, bytes)| DevBuf::new(ctx, name, bytes))
            .collect::<Result<Vec<_>>>()?;
        let args = OrderArgs::over(&bufs, ws, &tiling, grid_y);
        Ok(DeviceOrder {
            sorts,
            radix_chain: gpu.info().capability.0 >= 9,
            bufs,
            args,
            fixed: bounds.map(KeyLayout::new),
            layout: None,
            host_layout: [LayoutArg::default()],
            plan: None,
            sort,
            status_host: std::cell::RefCell::new(PinnedVec::new(ctx, cap.nworld)),
            tiling,
            nworld: 0,
            nrow: 0,
        })
    }

    /// Device address of the inverse permutation (input global row → canonical global row),
    /// which the row-level maps follow.
    pub fn rank_ptr(&self) -> u64 {
        self.bufs[RANK].ptr()
    }

    /// The plan of the uploaded step (`None` before the first upload).
    pub fn plan(&self) -> Option<Plan> {
        self.plan
    }

    /// The key layout of the uploaded step.
    pub fn layout(&self) -> Option<KeyLayout> {
        self.layout
    }

    /// Every buffer with its bytes.
    pub fn report(&self) -> Vec<(&'static str, usize)> {
        self.bufs.iter().map(|b| (b.name(), b.bytes())).collect()
    }

    /// Total device bytes held.
    pub fn bytes(&self) -> usize {
        self.bufs.iter().map(DevBuf::bytes).sum()
    }

    /// The key layout of `keys` for `input`'s batch, changing nothing: refused where the keys
    /// do not fit the batch or are wider than 64 bits. A caller takes it before it copies the
    /// batch, then hands it to the keys' upload.
    pub(crate) fn layout_for(&self, input: &Input<'_>, keys: &RowKeys) -> Result<KeyLayout> {
        let batch = input.batch();
        keys.check(batch)?;
        let layout = self.fixed.unwrap_or_else(|| KeyLayout::fit(batch, keys));
        if layout.width() == KeyWidth::Split {
            return Err(Error::Refused {
                mode: "deterministic",
                reason: format!(
                    "a {}-bit row key is wider than the device sort's 64 bits",
                    layout.bits()
                ),
            });
        }
        Ok(layout)
    }

    /// Queues the copies of the step's row ids, contact keys and key layout to the device on
    /// `stream`, without waiting: the caller synchronizes `stream` before `input` or `keys`
    /// change and before the next upload (the layout copy reads a buffer of this order).
    /// Returns whether the plan changed (a captured step must then be captured again).
    /// `layout` is [`layout_for`](Self::layout_for)'s for these keys.
    pub(crate) fn enqueue_upload(
        &mut self,
        input: &Input<'_>,
        keys: &RowKeys,
        layout: KeyLayout,
        stream: &CudaStream,
    ) -> Result<bool> {
        let batch = input.batch();
        let packed = layout.bits() + self.args.idx_bits;
        let wide = layout.width() == KeyWidth::Wide;
        let bitonic = packed <= 64
            && match self.sort {
                Sort::Auto => self.tiling.tile < BLOCK_MIN && packed <= 32,
                Sort::Bitonic => true,
                Sort::Block => false,
            };
        let plan = if !self.tiling.one_block {
            // At least the passes launched before at this width: a world skips the passes its
            // keys do not need, and a count that only grows recaptures the graph a few times
            // at most, where one following each step's key bits could recapture every step.
            let need = layout.bits().div_ceil(8);
            let passes = match self.plan {
                Some(Plan::Radix { wide: w, passes }) if w == wide => passes.max(need),
                _ => need,
            };
            Plan::Radix { wide, passes }
        } else if bitonic {
            Plan::Small { wide: packed > 32 }
        } else {
            Plan::Block { wide }
        };
        self.host_layout = [LayoutArg::new(&layout)];
        self.bufs[ROW_ID].upload(&batch.row_id, stream)?;
        self.bufs[GEOM].upload(keys.geom.as_flattened(), stream)?;
        self.bufs[COLID].upload(&keys.colid, stream)?;
        self.bufs[LAYOUT].upload(&self.host_layout, stream)?;
        self.nworld = batch.nworld();
        self.nrow = batch.nrow();
        self.args.nworld = batch.nworld() as i32;
        self.layout = Some(layout);
        let changed = self.plan != Some(plan);
        self.plan = Some(plan);
        Ok(changed)
    }

    /// Enqueues the order step for the uploaded batch on `stream` (capturable): one launch, or
    /// the global radix sort's chain.
    pub(crate) fn enqueue(&self, stream: &CudaStream) -> Result<()> {
        if self.nworld == 0 {
            return Ok(());
        }
        let grid = (self.nworld as u32, 1, 1);
        match self.plan {
            None => Ok(()),
            Some(Plan::Small { wide }) => {
                let e = self.tiling.per_thread.trailing_zeros() as usize;
                let bytes = small_smem(self.tiling.tile, wide);
                let f = &self.sorts.small[usize::from(wide)][e];
                let block = (self.tiling.threads, bytes as u32);
                Self::launch(&self.args, f, grid, block, false, stream)
            }
            Some(Plan::Block { wide }) => {
                let e = self.tiling.per_thread.trailing_zeros() as usize;
                let bytes = block_smem(self.tiling.radix_threads, self.tiling.per_thread, wide);
                let f = &self.sorts.block[usize::from(wide)][e];
                let block = (self.tiling.radix_threads, bytes as u32);
                Self::launch(&self.args, f, grid, block, false, stream)
            }
            Some(Plan::Radix { wide, passes }) => {
                let [keys, count, scatter] = &self.sorts.radix[usize::from(wide)];
                let grid = (self.nworld as u32, self.args.nchunk, 1);
                let step = |f, pass, first: bool| {
                    let args = OrderArgs { pass, ..self.args };
                    let dependent = self.radix_chain && !first;
                    Self::launch(&args, f, grid, (RADIX_THREADS, 0), dependent, stream)
                };
                step(keys, 0, true)?;
                for pass in 0..passes {
                    step(count, pass, false)?;
                    step(scatter, pass, false)?;
                }
                step(&self.sorts.radix_place, 0, false)
            }
        }
    }

    /// Launches the order kernel `f` with `args` (a programmatic dependent of the kernel
    /// before it when `dependent`).
    fn launch(
        args: &OrderArgs,
        f: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32),
        dependent: bool,
        stream: &CudaStream,
    ) -> Result<()> {
        let mut params = [args as *const OrderArgs as *mut std::ffi::c_void];
        // SAFETY: every order kernel takes one `OrderArgs` by value (the driver copies it at
        // the launch); its pointers are buffers of this order and of the solver's workspace,
        // which outlive every launch and graph. Each radix kernel waits for the grids before
        // it (`griddepcontrol.wait`) before it reads anything, as `dependent` asks.
        unsafe { super::maps::launch_with(f, grid, block, stream, &mut params, dependent) }
    }

    /// Enqueues the copy of the step's per-world bounds status into a host buffer the order
    /// keeps; read it with [`status`](Self::status) after synchronizing `stream`.
    pub(crate) fn enqueue_status(&self, stream: &CudaStream) -> Result<()> {
        let mut host = self.status_host.borrow_mut();
        self.bufs[STATUS].download(&mut host[..self.nworld], stream)
    }

    /// After a step's status copy and a synchronization:
    /// [`Error::KeyBounds`] when a row lay outside a fixed layout.
    pub fn status(&self) -> Result<()> {
        let host = self.status_host.borrow();
        // Each world wrote its own first bad row + 1 (0: none); report the first overall.
        if let Some(&first) = host[..self.nworld].iter().find(|&&s| s > 0) {
            return Err(Error::KeyBounds {
                row: first as usize - 1,
                detail: format!("{:?}", self.layout.map(|l| l.bounds())),
            });
        }
        Ok(())
    }

    /// Copies the permutation of the last step: `order[k]` = input row of canonical row `k`,
    /// `rank[r]` = canonical row of input row `r` (global rows).
    pub fn download(
        &self,
        order: &mut Vec<u32>,
        rank: &mut Vec<u32>,
        stream: &CudaStream,
    ) -> Result<()> {
        order.clear();
        order.resize(self.nrow, 0);
        rank.clear();
        rank.resize(self.nrow, 0);
        let enqueued = self
            .enqueue_status(stream)
            .and_then(|()| self.bufs[ORDER].download(order.as_mut_slice(), stream))
            .and_then(|()| self.bufs[RANK].download(rank.as_mut_slice(), stream));
        super::wait_after(stream, enqueued)?;
        self.status()
    }
}

#[cfg(test)]
mod tests {
    use super::{OrderArgs, SMALL_MAX, Tiling, program_source};
    use crate::gpu::{self, module};

    /// The H200's opt-in shared memory a block (227 KiB).
    const H200_OPTIN: usize = 232_448;

    /// Every world size gets threads whose values cover its rows, within a block's 1,024
    /// threads; worlds fit one block up to [`SMALL_MAX`] rows where the shared memory allows.
    #[test]
    fn the_tiling_covers_every_row_within_a_block() {
        for njmax in (0..=9000).chain([16_384, 100_000]) {
            let t = Tiling::for_rows(njmax, H200_OPTIN);
            assert!(
                t.tile.is_power_of_two() && t.tile >= 32.max(njmax),
                "{njmax}: {t:?}"
            );
            assert!([1, 2, 4, 8].contains(&t.per_thread), "{njmax}: {t:?}");
            assert!(t.threads <= 1024 && t.radix_threads <= 1024 || !t.one_block);
            assert_eq!(t.threads as usize, (t.tile / t.per_thread).min(1024));
            assert_eq!(t.radix_threads % 32, 0);
            assert!(t.radix_threads as usize * t.per_thread >= njmax.max(1));
            assert!(
                (t.radix_threads as usize - 32) * t.per_thread < njmax.max(1),
                "the fewest warps: {njmax}: {t:?}"
            );
            assert_eq!(t.one_block, njmax <= SMALL_MAX, "{njmax}: {t:?}");
        }
        // As measured: 228-row worlds two values a thread, 1,090-row worlds four.
        let t = Tiling::for_rows(228, H200_OPTIN);
        assert_eq!(
            (t.tile, t.per_thread, t.threads, t.radix_threads),
            (256, 2, 128, 128)
        );
        let t = Tiling::for_rows(1090, H200_OPTIN);
        assert_eq!(
            (t.tile, t.per_thread, t.threads, t.radix_threads),
            (2048, 4, 512, 288)
        );
        // A device of 48 KiB a block sorts the big worlds in global scratch instead.
        assert!(Tiling::for_rows(1024, 49_152).one_block);
        assert!(!Tiling::for_rows(2048, 49_152).one_block);
    }

    /// The host's `OrderArgs` has the size and every field offset of `struct OrderArgs` in
    /// `kernels/order.cu`, as NVRTC lays it out (no GPU needed).
    #[test]
    fn the_order_argument_block_matches_the_kernels() {
        if !gpu::nvrtc_present() {
            println!("skipped: no CUDA device (no NVRTC)");
            return;
        }
        #[rustfmt::skip]
        let host = crate::field_offsets!(OrderArgs;
            world_rowadr, row_type, row_id, geom, colid, layout, order, rank, status, keys_a,
            keys_b, vals_a, vals_b, chunks, counts, nworld, idx_bits, pass, nchunk,
        );
        let size = std::mem::size_of::<OrderArgs>();
        assert_eq!(host[host.len() - 1].1 + 4, size, "nchunk ends the block");
        let names: Vec<&str> = host.iter().map(|f| f.0).collect();
        let device = module::device_layout(&program_source(), "OrderArgs", size, &names).unwrap();
        assert_eq!(
            device, host,
            "(field, offset) on the device and on the host"
        );
    }
}
