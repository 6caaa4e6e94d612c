//! How a launch is decided and enqueued: which kernel and shape the uploaded batch takes, the
//! masked twins' blocks and lists of worlds, what of the reuse caches holds before a launch,
//! and the launch itself (one kernel, or the twins beside the plain kernels on a forked
//! stream).

use cudarc::driver::CudaStream;

use super::QuotientSolver;
use super::buffers::QArgs;
use super::kernels::{Kernel, Part, WARP_PER_BLOCK, WarpKernels, warp_shape};
use super::node_tables::run_bytes;
use super::rules::{aside_cap, masked_share, pairs_pay, warp_pays};
use super::world_lists::{list_blocks, lists_array, merge_ascending, split_worlds};
use crate::error::Result;
use crate::gpu::cuda;
use crate::gpu::maps::{self, BlockShape};
use crate::gpu::workspace::Args;

// Named in the docs only.
#[cfg(doc)]
use super::MASKED_FOR_BLOCKS;

impl QuotientSolver {
    /// Before a launch, its lists of worlds ([`prepare_lists`](Self::prepare_lists)) and what of
    /// the reuse caches still holds.
    /// - The places of the worlds' row-level outputs hold only if the last launch was over as
    ///   many worlds: a world past a smaller launch wrote nothing, while the worlds before it
    ///   may have written over its rows.
    /// - The cached steps hold only while every launch since they were cleared checked and
    ///   kept them. A launch without the check (reuse off, or the warp kernel) solves worlds
    ///   without recording their hyperedges, so the next launch with the check starts from an
    ///   empty cache.
    pub(super) fn before_launch(&mut self) -> Result<()> {
        self.prepare_lists()?;
        // Phase marks: which kernels this launch takes (their marks mean other steps); the
        // choice is worked out only while tracing.
        let warps = self.trace.as_ref().map(|_| self.kernel_choice().by_warps());
        if let (Some(warps), Some((_, t))) = (warps, &mut self.trace) {
            t.launched(warps);
        }
        let nworld = self.ws.nworld();
        if self.placed_nworld != Some(nworld) {
            let b = &self.bufs.c_rowadr;
            b.fill(0xff, b.bytes(), &self.stream)?;
            self.placed_nworld = Some(nworld);
        }
        if !self.reuse_active() {
            self.cache_valid = false;
        } else if !self.cache_valid {
            let b = &self.bufs.c_count;
            b.fill(0xff, b.bytes(), &self.stream)?;
            self.cache_valid = true;
        }
        Ok(())
    }

    /// The lists of worlds of the next launch ([`lists_array`]), made and copied to the device
    /// where they changed. [`upload`](Self::upload) makes them with the batch, so that a step's
    /// launch finds them in place; [`before_launch`](Self::before_launch) again, for a replay
    /// after a download without an upload (a no-op where they hold). Made in the launch only, the
    /// lists' host work and copy fell between a sleeping step's events: 10–13 µs of an asleep
    /// step of the bench's sleeping sequences at 4,096 worlds with reuse on, whose steps have no
    /// replay again to make them ahead (session 64).
    pub(super) fn prepare_lists(&mut self) -> Result<()> {
        let nworld = self.ws.nworld();
        let [nb, lb, rb] = self.twins_blocks();
        self.last_aside = nb > 0;
        self.last_listed = lb > 0;
        let made_for = [nworld, nb, lb, rb];
        if nb + lb > 0 && (self.lists_stale || self.lists_for != Some(made_for)) {
            self.lists_stale = false;
            self.lists_for = Some(made_for);
            // The twins take the last step's masked worlds (every world with
            // ARCHIPELAGO_Q_TWINS=1): those set aside (ascending, among them) one a block, the
            // others listed; the plain kernels take the rest.
            let set = &self.walked[..if nb > 0 { self.walked_here() } else { 0 }];
            let masked = &self.masked[..self.masked_here()];
            let (listed, rest) = (&mut self.listed_on_device, &mut self.rest);
            let twins = if self.twins_always {
                None
            } else {
                Some(masked)
            };
            split_worlds(nworld as u32, twins, set, listed, rest);
            let next = &mut self.lists_next;
            lists_array((rb, rest), (nb, set), (lb, listed), next);
            if *next != self.lists_on_device {
                self.bufs.lists.upload(next, &self.stream)?;
                std::mem::swap(&mut self.lists_on_device, next);
            }
            self.aside_on_device.clear();
            self.aside_on_device.extend_from_slice(set);
        }
        Ok(())
    }

    /// Whether every world takes the node-level maps (a world of more nodes, or one without
    /// a slot, takes the tree-level maps, which spread dofs over threads): then the launch
    /// takes the node-level shape and `quotient_few_kernel`.
    pub(super) fn few_launch(&self) -> bool {
        self.node_maps() && self.slots.is_some_and(|b| b.few_nodes)
    }

    /// The kernel for the uploaded batch: the warp kernel where
    /// [`set_warp_worlds`](Self::set_warp_worlds) allows it, else for a
    /// [`few_launch`](Self::few_launch) the aside kernel where each world has a multiprocessor
    /// to itself and the few kernel elsewhere; else the general one.
    pub(super) fn kernel_choice(&self) -> Kernel {
        let nworld = self.ws.nworld();
        if !self.few_launch() {
            return Kernel::General;
        }
        // Loaded wherever the rule or the setter may pick them (warps_reachable).
        if let Some((pays, pairs)) = self.warp_terms()
            && self
                .warp_worlds
                .unwrap_or(pays && !self.masked_heavy(pairs))
        {
            return match pairs {
                true => Kernel::Pair,
                false => Kernel::Warp,
            };
        }
        if nworld > self.sm_count {
            Kernel::Few
        } else {
            Kernel::Aside
        }
    }

    /// The warp kernels' terms for the uploaded batch, where their program is loaded: whether
    /// the rule finds that they pay, and whether with two warps a world (the pair kernels).
    pub(super) fn warp_terms(&self) -> Option<(bool, bool)> {
        let warps = self.loaded.warps.as_ref()?;
        let nworld = self.ws.nworld();
        let pays = warp_pays(nworld, self.sm_count, self.cap.njmax)
            || pairs_pay(nworld, self.sm_count, warps.pair_worlds, self.cap.njmax);
        Some((
            pays,
            self.guard_warps.unwrap_or(nworld <= warps.pair_worlds),
        ))
    }

    /// Whether the last downloaded step masked more of its worlds than the rule allows the warp
    /// kernels ([`MASKED_FOR_BLOCKS`]), not counting those reported woken whole since
    /// ([`follow_sleep_events`](Self::follow_sleep_events)): they are not masked at this step.
    fn masked_heavy(&self, pairs: bool) -> bool {
        let c = self.last;
        let all = c.replayed + c.masked + c.direct + c.reused;
        all > 0 && self.masked_here() as f64 > self.masked_share(pairs) * all as f64
    }

    /// [`masked_share`] for this solver: the aside blocks count as on unless turned off
    /// (`ARCHIPELAGO_Q_ASIDE=0`), whether or not a given launch fits them in one wave.
    pub(super) fn masked_share(&self, pairs: bool) -> f64 {
        masked_share(pairs, self.aside_on != Some(false), self.masked_for_blocks)
    }

    /// The aside blocks of a launch that takes the masked twins over `twins` worlds beside
    /// `rest` blocks of the plain kernels (its caller, [`twins_blocks`](Self::twins_blocks),
    /// checks [`masked_twin`](Self::masked_twin)): where
    /// the last step masked some worlds but no more than [`aside_cap`] not by their hint
    /// ([`walked_worlds`](Self::walked_worlds)), that many blocks (each sets aside one of those
    /// worlds, or none); else 0. A world mapped by its
    /// hint is no long pole: it stays with its warp. A world set aside is mapped by its block's
    /// first warp where its hint holds (the walk and the block path both leave one), so it goes
    /// back to its own warp at the next step.
    ///
    /// Only where the launch then stays within one wave of blocks: a world set aside at the
    /// step after it fell asleep finds the hint its block left and is mapped by it, so its
    /// block's other warps idle; past a wave of blocks, the plain kernels' last blocks wait for
    /// them. At 4,096 worlds with a sixteenth asleep (256 aside blocks beside 960 plain ones,
    /// 1,056 a wave on the H200), the step after the sleepers fell asleep took 7.5–11.5 µs more
    /// than an awake step on mechanism-90% under this rule, 12.3–16.1 with them; cloth-99%
    /// 6.3–7.6 against 6.3–11.1 (session 65, call 4, two runs each, reuse off and on).
    fn aside_blocks(&self, twins: usize, rest: usize) -> usize {
        let nworld = self.ws.nworld();
        let (cap, walked) = (aside_cap(nworld), self.walked_here());
        if walked == 0 || walked > cap {
            return 0;
        }
        let on = match self.aside_on {
            Some(on) => on,
            // Within one wave: the aside blocks, the twins' listed blocks and the plain
            // kernels' beside them, against what the kernels' multiprocessors hold at once.
            None => self.loaded.warps.as_ref().is_some_and(|warps| {
                let wave = match self.kernel_choice() {
                    Kernel::Pair => warps.pair_wave,
                    _ => warps.warp_wave,
                };
                cap + list_blocks(twins.saturating_sub(walked), nworld) + rest <= wave
            }),
        };
        if on { cap } else { 0 }
    }

    /// Whether the next launch takes the warp kernels' masked twins (`…_masked_kernel`), which
    /// solve masked worlds in their warps and set aside worlds for their aside blocks: where
    /// it takes the warp kernels and the last step masked some of the uploaded batch's worlds
    /// (or at every such launch with `ARCHIPELAGO_Q_TWINS=1`).
    fn masked_twin(&self) -> bool {
        (self.twins_always || self.masked_here() > 0) && self.kernel_choice().by_warps()
    }

    /// The blocks of the next launch's lists ([`list_blocks`]), all 0 where it takes no masked
    /// twins: the twins' aside blocks, one a world set aside; their blocks for the listed worlds
    /// (the last step's masked ones, every world with `ARCHIPELAGO_Q_TWINS=1`, less those set
    /// aside); the plain kernels' blocks beside them (`…_rest_kernel`) for every other world.
    ///
    /// With two warps a world too the twins take only the listed worlds: taking every world
    /// there instead (branch `exp/pairs-twins-everywhere`, session 61, device busy, 1,024 and
    /// 2,048 worlds) was 0.5–0.8 µs a step faster on mechanism-90% and 0.65–0.9 on hammock with
    /// half masked, but 1.2 slower on hammock with a sixteenth and 3.2–4.2 on cloth-99% (a
    /// cause that fits, unmeasured: the twins compare a world's static rows, 760 there, before
    /// mapping it, while the guard's warp idles; the plain pair kernels do both at once).
    pub(super) fn twins_blocks(&self) -> [usize; 3] {
        if !self.masked_twin() {
            return [0; 3];
        }
        let nworld = self.ws.nworld();
        let twins = match self.twins_always {
            true => nworld,
            false => self.masked_here(),
        };
        let rest = list_blocks(nworld - twins, nworld);
        let aside = self.aside_blocks(twins, rest);
        let set = if aside > 0 { self.walked_here() } else { 0 };
        [aside, list_blocks(twins - set, nworld), rest]
    }

    /// Follows this step's reported sleep and wake into the launch's masked worlds. A world
    /// reported woken whole (a wake event, every tree awake) leaves them, so that the plain
    /// kernels replay it at once rather than its masked twin at this step and the plain kernels
    /// only from the next. A world in which a reported sleep leaves a whole node of static
    /// hyperedges asleep (which masks it on the device) joins them as one masked and walked
    /// (set aside where the rule allows, else listed for the masked twins' warps) rather than
    /// being left by its plain warp to its block, which made the launch wait for the blocks'
    /// serial solves. The events are a hint, never the answer: a sleep not reported is found by
    /// the plain warp, which leaves the world to its block, and a world taken in that is not
    /// masked after all (its node's rows still there) is solved by its twin as any.
    ///
    /// Measured on the H200 (session 66, calls 2 and 3; the sleeping sequences of
    /// mechanism-90% without replays again, the step at which worlds fall asleep less the awake
    /// one, reuse off / on, µs): with a sixteenth of 4,096 worlds asleep +11.3 / +10.9 and
    /// +11.6 / +11.7 against +18.4 / +18.5 and +18.3 / +17.7 left to their blocks; with half
    /// +9.4 / +7.2 and +7.9 / +6.9 against +36.7 / +34.4 and +33.5 / +35.4; a sixteenth of
    /// 1,024 and 2,048 worlds +12.7 / +10.3 and +12.3 / +11.9 against +20.0 / +18.0 and +17.5 /
    /// +19.4 (means of four runs). sleep_toggles' sleepers are trees of no static hyperedge,
    /// which mask nothing: taken in all the same (before the check of their nodes), its
    /// recorded steps at 2,048 worlds took 36.7 / 34.2 µs against 37.1 / 34.7 set aside where
    /// few enough, 36.2–43.0 / 34.1–39.8 listed (call 2: 39.2 / 37.2 and 40.8 / 38.7 against
    /// 37.4–37.7 / 35.0–35.1). `ARCHIPELAGO_Q_FELL=0` leaves the sleep events out, as before.
    pub(super) fn follow_sleep_events(&mut self) {
        const SEEN: u8 = 1;
        const WOKEN: u8 = 2;
        let tracker = self.quotient.tracker();
        let nworld = self.ws.nworld();
        let mut woken = false;
        self.fallen.clear();
        // Each world's trees are scanned once, however many of its trees the step touched. A
        // world past the batch is followed at the step that has it again: its events stay listed.
        for &(w, t) in tracker.sleep_events() {
            if w as usize >= nworld {
                continue;
            }
            let state = &mut self.followed[w as usize];
            if *state != 0 {
                continue;
            }
            *state = if !tracker.awake(w as usize, t as usize) {
                // Only a node that masks the world: one of static hyperedges, every tree of it
                // asleep (a partly asleep one in the batch had the world rebuilt at `prepare`).
                // A tree of no static hyperedge sleeps without changing what the world replays;
                // its world is looked at again at its next event.
                let Some(trees) = self.quotient.static_node(w as usize, t as usize) else {
                    continue;
                };
                let whole = trees
                    .iter()
                    .all(|&u| !tracker.awake(w as usize, u as usize));
                if self.take_fallen && whole && self.masked.binary_search(&w).is_err() {
                    self.fallen.push(w);
                }
                SEEN
            } else if tracker.world_awake(w as usize) {
                WOKEN
            } else {
                SEEN
            };
            woken |= *state == WOKEN;
        }
        let states = &self.followed;
        if woken {
            let before = self.masked.len();
            self.masked.retain(|&w| states[w as usize] != WOKEN);
            self.walked.retain(|&w| states[w as usize] != WOKEN);
            self.lists_stale |= self.masked.len() != before;
        }
        if !self.fallen.is_empty() {
            // Each world once (its state set), in the events' order: merged into both lists,
            // ascending, where they were not.
            self.fallen.sort_unstable();
            merge_ascending(&mut self.walked, &self.fallen, &mut self.merged);
            merge_ascending(&mut self.masked, &self.fallen, &mut self.merged);
            self.lists_stale = true;
        }
        for &(w, _) in tracker.sleep_events() {
            self.followed[w as usize] = 0;
        }
    }

    /// How many of the last step's masked worlds the uploaded batch has (they ascend).
    fn masked_here(&self) -> usize {
        let nworld = self.ws.nworld();
        self.masked.partition_point(|&w| (w as usize) < nworld)
    }

    /// How many of the last step's masked worlds not mapped by their hint the uploaded batch has.
    fn walked_here(&self) -> usize {
        let nworld = self.ws.nworld();
        self.walked.partition_point(|&w| (w as usize) < nworld)
    }

    /// The launch shape: the node-level one for a [`few_launch`](Self::few_launch), four warps
    /// for the warp kernel, eight for the pair kernels.
    pub(super) fn launch_shape(&self) -> BlockShape {
        match self.kernel_choice() {
            Kernel::Warp => warp_shape(1, self.loaded.warp_smem),
            Kernel::Pair => warp_shape(2, self.loaded.warp_smem),
            Kernel::Few | Kernel::Aside => self.loaded.node_shape,
            Kernel::General => self.loaded.shape,
        }
    }

    /// The batch's one slot and its counts as the warp kernel takes them: slot -1 without one.
    pub(super) fn one(&self) -> [i32; 4] {
        match self.slots.and_then(|b| b.one) {
            Some(o) => [o.slot, o.nnode, o.static_rows, o.static_hyper].map(|x| x as i32),
            None => [-1, 0, 0, 0],
        }
    }

    /// The quotient's kernel arguments besides the workspace's ([`Args`]): its buffers and the
    /// classifier's, the cache's and the batch's scalars; `reuse`, whether unchanged worlds
    /// keep their outputs this launch.
    fn qargs(&self, reuse: bool) -> QArgs {
        let b = &self.bufs;
        let c = self.quotient.classifier();
        let t = self.quotient.cache().tables();
        let one = self.one();
        QArgs {
            row_id: b.row_id.ptr(),
            world_slot: b.world_slot.ptr(),
            nnode: b.nnode.ptr(),
            tree_node: b.tree_node.ptr(),
            node_mintree: b.node_mintree.ptr(),
            node_rows: b.node_rows.ptr(),
            node_sum: b.node_sum.ptr(),
            node_treeadr: b.node_treeadr.ptr(),
            node_trees: b.node_trees.ptr(),
            node_dofpre: b.node_dofpre.ptr(),
            node_head: b.node_head.ptr(),
            tree_place: b.tree_place.ptr(),
            node_efc: b.node_efc.ptr(),
            row_node: b.row_node.ptr(),
            runs: b.runs.ptr(),
            nstatic: b.nstatic.ptr(),
            nstatic_rows: b.nstatic_rows.ptr(),
            stream_kind: b.stream_kind.ptr(),
            stream_adr: b.stream_adr.ptr(),
            stream_support: b.stream_support.ptr(),
            stale: b.stale.ptr(),
            c_count: b.c_count.ptr(),
            c_rowadr: b.c_rowadr.ptr(),
            c_type: b.c_type.ptr(),
            c_adr: b.c_adr.ptr(),
            c_support: b.c_support.ptr(),
            c_node: b.c_node.ptr(),
            trace: self.trace.as_ref().map_or(0, |(buf, _)| buf.ptr()),
            lists: b.lists.ptr(),
            eq_ids: c.eqs_by_id() as i32,
            eq_lo: c.static_eqs().start,
            eq_hi: c.static_eqs().end,
            eq_static: c.eq_static() as i32,
            friction_static: c.friction_static() as i32,
            flex_static: c.rowless_is_static() as i32,
            max_static: t.max_static as i32,
            max_entries: t.max_entries as i32,
            reuse: reuse as i32,
            reuse_nodes: self.reuse as i32,
            cap_rows: self.cap.njmax as i32,
            cap_hyper: (self.cap.njmax + self.cap.nedge) as i32,
            cap_entries: self.cap.nsupport as i32,
            node_maps: self.node_maps() as i32,
            run_bytes: run_bytes(t.ntree, t.max_static) as i32,
            one_slot: one[0],
            one_nnode: one[1],
            one_k: one[2],
            one_nstatic: one[3],
            aside_blocks: self.twins_blocks()[0] as i32,
            asleep: b.asleep.ptr(),
        }
    }

    /// Enqueues the kernel on `stream` (also inside a graph capture): every argument is a
    /// buffer of this solver or a scalar of the classifier, fixed until the graph is recaptured.
    pub(super) fn launch(&self, stream: &CudaStream) -> Result<()> {
        let nworld = self.ws.nworld() as u32;
        if nworld == 0 {
            return Ok(());
        }
        let b = &self.bufs;
        let mut args: Args = self.ws.args();
        let reuse = self.reuse_active();
        if reuse {
            // The maps copy each world's row-level outputs into the cache as they write them.
            args.row_mirror = b.c_out.ptr();
            args.mirror_rows = self.cap.njmax as i32;
        }
        let q = self.qargs(reuse);
        let mut params = [
            &args as *const Args as *mut std::ffi::c_void,
            &q as *const QArgs as *mut std::ffi::c_void,
        ];
        let s = self.launch_shape();
        // Idle warps cost a world nothing where it has its multiprocessor to itself (the
        // aside kernel gives them its rows); elsewhere they would leave the rows to one warp of
        // a world competing with others.
        let (kernel, grid) = match (self.kernel_choice(), &self.loaded.warps) {
            (k @ (Kernel::Warp | Kernel::Pair), Some(warps)) => {
                let family = if k == Kernel::Pair {
                    &warps.pair
                } else {
                    &warps.warp
                };
                let one = self.batch_slot().is_some();
                if self.masked_twin() {
                    return self.launch_twins(family, stream, s, (&args, q));
                }
                let blocks = nworld.div_ceil(WARP_PER_BLOCK as u32);
                (family.pick(self.reuse, one, Part::Plain), blocks)
            }
            (Kernel::Warp | Kernel::Pair, None) => {
                unreachable!("kernel_choice picks the warp kernels only once they are loaded")
            }
            (Kernel::Aside, _) => (&self.loaded.aside_kernel, nworld),
            (Kernel::Few, _) => (&self.loaded.few_kernel, nworld),
            (Kernel::General, _) => (&self.loaded.kernel, nworld),
        };
        let grid = (grid, 1, 1);
        // SAFETY: each kernel takes exactly (Args, QArgs) by value; every pointer is a buffer
        // of this solver, which outlives the launch and every graph captured from it.
        unsafe {
            let block = (s.threads, s.smem);
            maps::launch_with(kernel, grid, block, stream, &mut params, false)
        }
    }

    /// The launch after a step with masked worlds: the masked twins over their worlds (the aside
    /// blocks', then the listed ones) and, beside them on a stream forked from `stream` and
    /// joined back, the plain kernels over the rest of the worlds (`…_rest_kernel`), each launch
    /// with its own list ([`lists_array`]).
    fn launch_twins(
        &self,
        family: &WarpKernels,
        stream: &CudaStream,
        s: BlockShape,
        (args, mut q): (&Args, QArgs),
    ) -> Result<()> {
        let one = self.batch_slot().is_some();
        let block = (s.threads, s.smem);
        let [nb, lb, rb] = self.twins_blocks();
        let launch = |part, blocks: usize, q: &QArgs, on: &CudaStream| {
            let mut params = [
                args as *const Args as *mut std::ffi::c_void,
                q as *const QArgs as *mut std::ffi::c_void,
            ];
            let f = family.pick(self.reuse, one, part);
            // SAFETY: as in `launch`; the two kernels write the outputs of disjoint worlds.
            unsafe { maps::launch_with(f, (blocks as u32, 1, 1), block, on, &mut params, false) }
        };
        let twins = nb + lb;
        let rest_q = q;
        q.lists += (rb * WARP_PER_BLOCK * 4) as u64;
        if rb == 0 {
            return launch(Part::Masked, twins, &q, stream);
        }
        self.fork.record(stream).map_err(cuda("cuEventRecord"))?;
        self.side
            .wait(&self.fork)
            .map_err(cuda("cuStreamWaitEvent"))?;
        let launched = launch(Part::Masked, twins, &q, &self.side)
            .and_then(|()| launch(Part::Rest, rb, &rest_q, stream));
        // Joined after a failed launch too: the twins may still run on the side stream, reading
        // buffers the next upload writes, and a capture must not end with it forked.
        let joined = self
            .join
            .record(&self.side)
            .map_err(cuda("cuEventRecord"))
            .and_then(|()| stream.wait(&self.join).map_err(cuda("cuStreamWaitEvent")));
        launched.and(joined)
    }
}
