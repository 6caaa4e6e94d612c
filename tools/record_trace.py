#!/usr/bin/env python3
"""Records a trace of native MuJoCo 4.0.0 island discovery (format: traces/README.md).

Steps NWORLD independent MjData of one scene (each with its own seeded perturbation of the
initial velocities and, where the scene has actuators, of the controls) and records, at every
recorded step and world, the active constraint rows with their tree supports, the rowless
hyperedges (flexes; under the discrete integrator tendons, actuators and passive flex contacts),
tree_awake, eq_active, contact identities and every native island output.

    .venv/bin/python tools/record_trace.py SCENE --out traces/NAME.npz [--worlds N] [--steps S] ...

(the venv that tools/setup_venv.sh makes, with mujoco 4.0.0).

SCENE is a folder of ../shared/scenes (its main XML is looked up) or an XML path. Scripted
events (repeatable) drive every invalidation source:
    --eq STEP:EQ:0|1        set eq_active[EQ] before STEP
    --wake STEP:TREE        push a body of TREE at STEP (a sleeping tree wakes)
    --settle STEP           zero all velocities at STEP (resting trees then fall asleep)
    --mocap STEP:BODY:X,Y,Z move mocap body BODY (0 to nmocap-1) by (X, Y, Z) at STEP: a
                            teleport of what is welded or pressed to it
each in every world, or in some only with a last field of world indices, e.g. --eq 40:5:1:0/2
(worlds 0 and 2), --settle 100:1.

--replay sets a scene up as MuJoCo Warp's benchmark runs it (aloha_clutter: sleep on, its free
bodies asleep at the start); --sleep or --no-sleep still decide sleep. Where native MuJoCo runs
short of arena memory and drops contacts or constraint rows, the recorder says so on stderr and
counts it in its summary (`constraints_dropped`): the trace is then exact about the rows it
holds, which are not the whole scene's.
"""

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np
import mujoco

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_rows import (  # noqa: E402
    DOF_FIELDS, ISLAND_FIELDS, ROW_FIELDS, TREE_FIELDS, ModelInfo, TraceError, check_partition,
    extract_rows, native_islands, rowless_edges, same_islands,
)

SCHEMA_VERSION = 1


def find_scenes():
    """The shared scenes folder: $ARCHIPELAGO_SCENES, else the first `shared/scenes` above."""
    if os.environ.get("ARCHIPELAGO_SCENES"):
        return os.environ["ARCHIPELAGO_SCENES"]
    here = os.path.dirname(os.path.abspath(__file__))
    while True:
        cand = os.path.join(here, "shared", "scenes")
        if os.path.isdir(cand) or os.path.dirname(here) == here:
            return cand
        here = os.path.dirname(here)


SCENES = find_scenes()

MAIN_XML = {
    "adhesion_active_adhesion": "active_adhesion.xml",
    "aloha_clutter": "scene_clutter.xml",
    "benchmark_humanoid200": "humanoid200.xml",
    "flex_bunny_multicell": "bunny_multicell.xml",
    "flex_bunny_quadratic": "bunny_quadratic.xml",
    "flex_bunny_shell": "bunny_shell.xml",
    "flex_cloth_sdf": "cloth_sdf.xml",
    "flex_flag": "flag.xml",
    "flex_floppy": "floppy.xml",
    "flex_jelly": "jelly.xml",
    "flex_pancake": "pancake.xml",
    "flex_poncho_edgeequality": "poncho_edgeequality.xml",
    "flex_press": "press.xml",
    "flex_pulley": "pulley.xml",
    "flex_quadratic": "quadratic.xml",
    "flex_softbox": "softbox.xml",
    "flex_sphere_full": "sphere_full.xml",
    "flex_strain": "strain.xml",
    "flex_trampoline": "trampoline.xml",
    "hammock": "hammock/hammock.xml",
    "humanoid_100_humanoids": "100_humanoids.xml",
    "island_2humanoid100": "2humanoid100.xml",
    "island_island_efc": "island_efc.xml",
    "island_tendon_wrap": "tendon_wrap.xml",
    "mjwarp_aloha_pot": "scene.xml",
    "replicate_bowl": "bowl.xml",
    "replicate_bunnies": "bunnies.xml",
    "replicate_leaves": "leaves.xml",
    "replicate_newton_cradle": "newton_cradle.xml",
    "replicate_particle": "particle.xml",
    "replicate_tendon": "tendon.xml",
    "sleep_100_humanoids": "100_humanoids.xml",
    "sleep_dominos": "dominos.xml",
}


def resolve_scene(scene):
    if scene.endswith(".xml"):
        return os.path.basename(os.path.dirname(os.path.abspath(scene))), scene
    path = scene if os.path.isdir(scene) else os.path.join(SCENES, scene)
    name = os.path.basename(os.path.normpath(path))
    if name not in MAIN_XML:
        raise SystemExit(f"unknown scene {scene!r}: pass its XML path")
    return name, os.path.join(path, MAIN_XML[name])


def parse_events(args, m):
    """Events by step: (kind, a, v, worlds), worlds None for every world; ids checked against
    the model `m`."""
    events = {}
    limits = {"eq": ("equalities", m.neq), "wake": ("trees", m.ntree),
              "mocap": ("mocap bodies", m.nmocap)}

    def shift(text):
        """A mocap displacement: three finite numbers, comma-separated."""
        v = np.array([float(x) for x in text.split(",")])
        if v.shape != (3,) or not np.isfinite(v).all():
            raise ValueError(text)
        return v

    def add(kind, spec, nfield):
        fields = spec.split(":")
        if len(fields) not in (nfield, nfield + 1):
            raise SystemExit(f"record_trace: --{kind} {spec!r}: expected {nfield} fields and "
                             "optionally worlds (W1/W2/...)")
        worlds = None
        try:
            if len(fields) > nfield:
                worlds = {int(w) for w in fields.pop().split("/")}
            value = shift if kind == "mocap" else int
            s, a, v = ([int(x) for x in fields[:2]] + [value(x) for x in fields[2:]] + [0, 0])[:3]
        except ValueError:
            what = "STEP:BODY:X,Y,Z with X, Y, Z finite numbers" if kind == "mocap" else "integers"
            raise SystemExit(f"record_trace: --{kind} {spec!r}: fields must be {what}") from None
        if worlds is not None and any(w < 0 or w >= args.worlds for w in worlds):
            raise SystemExit(f"record_trace: --{kind} {spec!r}: a world past --worlds")
        if s < 0:
            raise SystemExit(f"record_trace: --{kind} {spec!r}: a negative step")
        if kind in limits and not 0 <= a < limits[kind][1]:
            what, n = limits[kind]
            raise SystemExit(f"record_trace: --{kind} {spec!r}: id {a} is not one of the "
                             f"model's {n} {what}")
        if kind == "eq" and v not in (0, 1):
            raise SystemExit(f"record_trace: --eq {spec!r}: the value must be 0 or 1")
        events.setdefault(s, []).append((kind, a, v, worlds))

    for spec in args.eq:
        add("eq", spec, 3)
    for spec in args.wake:
        add("wake", spec, 2)
    for spec in args.settle:
        add("settle", spec, 1)
    for spec in args.mocap:
        add("mocap", spec, 3)
    return events


class World:
    """One MjData with its perturbation and control source."""

    def __init__(self, m, index, args, replay, rng):
        self.d = mujoco.MjData(m)
        self.index = index
        d = self.d
        if replay is not None:
            # aloha_clutter: the replay's pose (free joints also went into qpos0, set on the
            # model before MjData, so sleeping objects rest there); replay velocities on awake
            # trees only.
            d.qpos[:] = replay["qpos"][0]
            mujoco.mj_forward(m, d)
            awake_dof = np.asarray(d.tree_awake, bool)[np.asarray(m.dof_treeid)]
            d.qvel[awake_dof] = replay["qvel"][0][awake_dof]
        else:
            mujoco.mj_forward(m, d)
        # World 0 is the unperturbed run; others get seeded velocity noise on awake dofs.
        if index > 0 and m.nv:
            awake_dof = np.asarray(d.tree_awake, bool)[np.asarray(m.dof_treeid)]
            d.qvel[awake_dof] += args.qvel_noise * rng.standard_normal(int(awake_dof.sum()))
        self.ctrl_noise = (
            args.ctrl_noise * rng.standard_normal(m.nu) if index > 0 and m.nu else np.zeros(m.nu)
        )
        self.replay = replay

    def controls(self, m, step):
        if not m.nu:
            return
        d = self.d
        if self.replay is not None:
            ctrl = self.replay["ctrl"][min(step, len(self.replay["ctrl"]) - 1)]
        else:
            ctrl = np.zeros(m.nu)
            if self.index > 0:
                # A slow seeded sinusoid per actuator so that worlds diverge.
                ctrl = np.sin(0.01 * step + self.ctrl_noise * 7.0)
        span = m.actuator_ctrlrange[:, 1] - m.actuator_ctrlrange[:, 0]
        ctrl = ctrl + self.ctrl_noise * np.where(m.actuator_ctrllimited, span, 1.0) * 0.02
        limited = m.actuator_ctrllimited.astype(bool)
        lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
        d.ctrl[:] = np.where(limited, np.clip(ctrl, lo, hi), ctrl)

    def apply(self, m, event):
        kind, a, v, worlds = event
        if worlds is not None and self.index not in worlds:
            return
        d = self.d
        if kind == "eq":
            d.eq_active[a] = v
        elif kind == "wake":
            body = int(m.tree_bodyadr[a])
            d.xfrc_applied[body, 2] += 1e-3 * float(m.body_subtreemass[body]) + 1e-3
        elif kind == "settle":
            d.qvel[:] = 0
        elif kind == "mocap":
            d.mocap_pos[a] += v


def aloha_setup(m, replay_path):
    """aloha_clutter as MuJoCo Warp's benchmark runs it (see the scenes README)."""
    z = np.load(replay_path)
    m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    free = np.nonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE)[0]
    for j in free:
        tree = int(m.dof_treeid[m.jnt_dofadr[j]])
        m.tree_sleep_policy[tree] = mujoco.mjtSleepPolicy.mjSLEEP_INIT
        adr = int(m.jnt_qposadr[j])
        m.qpos0[adr : adr + 7] = z["qpos"][0][adr : adr + 7]
    return {"ctrl": z["ctrl"], "qpos": z["qpos"], "qvel": z["qvel"]}


class Writer:
    """Accumulates slots (step-major, then world) and writes the .npz."""

    def __init__(self, info, m):
        self.info = info
        self.m = m
        self.cols = {k: [] for k in (
            "row_type", "row_id", "row_source", "row_geom", "row_flex", "row_colid",
            "row_nsup", "row_support", "edge_kind", "edge_id", "edge_nsup", "edge_support",
            "tree_awake", "eq_active", "nisland", "nidof", *ISLAND_FIELDS, *TREE_FIELDS,
            *DOF_FIELDS, *ROW_FIELDS)}
        self.slot_nrow, self.slot_nedge = [], []
        # Recorded world-steps whose islands in the step differ from a recomputation.
        self.step_mismatch = 0

    def add(self, rows, edges, d, native):
        c = self.cols
        info = self.info
        nrow = rows["type"].size
        self.slot_nrow.append(nrow)
        c["row_type"].append(rows["type"])
        c["row_id"].append(rows["id"])
        c["row_source"].append(rows["source"])
        c["row_geom"].append(rows["geom"])
        c["row_flex"].append(rows["flex"])
        c["row_colid"].append(rows["colid"])
        c["row_nsup"].append(np.diff(rows["supadr"]))
        c["row_support"].append(rows["support"])
        self.slot_nedge.append(len(edges))
        for kind, i, trees in edges:
            c["edge_kind"].append([kind])
            c["edge_id"].append([i])
            c["edge_nsup"].append([trees.size])
            c["edge_support"].append(trees)
        c["tree_awake"].append(np.array(d.tree_awake[: info.ntree], dtype=np.uint8))
        c["eq_active"].append(np.array(d.eq_active[: self.m.neq], dtype=np.uint8))
        c["nisland"].append([native["nisland"]])
        c["nidof"].append([native["nidof"]])
        if native["nisland"] > 0:
            for f in (*ISLAND_FIELDS, *TREE_FIELDS, *DOF_FIELDS, *ROW_FIELDS):
                c[f].append(native[f])
        else:
            # Not engine data: filled with archipelago's convention (-1, identity maps).
            c["tree_island"].append(np.full(info.ntree, -1))
            c["map_itree2tree"].append(np.arange(info.ntree))
            c["dof_island"].append(np.full(info.nv, -1))
            c["map_dof2idof"].append(np.arange(info.nv))
            c["map_idof2dof"].append(np.arange(info.nv))
            for f in ROW_FIELDS:
                c[f].append(np.zeros(0))
        if native["nisland"] > 0 and native["efc_island"].size != nrow:
            raise TraceError("native efc arrays do not match nefc")

    def arrays(self, nstep, nworld, meta):
        info, m = self.info, self.m
        c = self.cols

        def cat(k, dtype, shape=None):
            parts = [np.asarray(p).reshape(-1) for p in c[k]]
            a = np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)
            if a.size and np.issubdtype(dtype, np.integer) and dtype != np.uint8:
                if a.max() > np.iinfo(np.int32).max or a.min() < np.iinfo(np.int32).min:
                    raise TraceError(f"{k} overflows int32")
            return a.reshape(shape) if shape else a

        def offsets(counts):
            return np.r_[0, np.cumsum(np.asarray(counts, dtype=np.int64))].astype(np.int32)

        i32 = np.int32
        nslot = nstep * nworld
        out = dict(
            schema_version=np.array(SCHEMA_VERSION, i32),
            scene=np.frombuffer(meta["scene"].encode(), np.uint8),
            meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8),
            jacobian=np.array(1 if info.sparse else 0, i32),
            ntree=np.array(info.ntree, i32),
            nv=np.array(info.nv, i32),
            njnt=np.array(m.njnt, i32),
            ntendon=np.array(m.ntendon, i32),
            nactuator=np.array(m.nactuator, i32),
            neq=np.array(m.neq, i32),
            nflex=np.array(m.nflex, i32),
            islands_without_rows=np.array(int(info.islands_without_rows), i32),
            nworld=np.array(nworld, i32),
            nstep=np.array(nstep, i32),
            tree_dofadr=np.asarray(m.tree_dofadr, i32),
            tree_dofnum=np.asarray(m.tree_dofnum, i32),
            dof_treeid=np.asarray(m.dof_treeid, i32),
            eq_type=np.asarray(info.eq_type, i32),
            eq_flex=np.asarray(info.eq_flex, i32),
            step_index=np.asarray(meta["step_index"], i32),
            slot_rowadr=offsets(self.slot_nrow),
            row_type=cat("row_type", np.uint8),
            row_id=cat("row_id", i32),
            row_source=cat("row_source", i32),
            row_geom=cat("row_geom", i32, (-1, 2)),
            row_flex=cat("row_flex", i32, (-1, 2)),
            row_colid=cat("row_colid", i32),
            row_supadr=offsets(cat("row_nsup", np.int64)),
            row_support=cat("row_support", i32),
            slot_edgeadr=offsets(self.slot_nedge),
            edge_kind=cat("edge_kind", np.uint8),
            edge_id=cat("edge_id", i32),
            edge_supadr=offsets(cat("edge_nsup", np.int64)),
            edge_support=cat("edge_support", i32),
            tree_awake=cat("tree_awake", np.uint8, (nslot, info.ntree)),
            eq_active=cat("eq_active", np.uint8, (nslot, int(m.neq))),
            nisland=cat("nisland", i32),
            nidof=cat("nidof", i32),
            slot_islandadr=offsets(cat("nisland", np.int64)),
        )
        for f in ISLAND_FIELDS:
            out[f] = cat(f, i32)
        for f in TREE_FIELDS:
            out[f] = cat(f, i32, (nslot, info.ntree))
        for f in DOF_FIELDS:
            out[f] = cat(f, i32, (nslot, info.nv))
        for f in ROW_FIELDS:
            out[f] = cat(f, i32)
        return out


def finite_state(m, info, d):
    """Refuses a diverged world: with autoreset off (`<flag autoreset="disable"/>`) MuJoCo keeps a
    non-finite state, whose NaN Jacobian entries native mj_island takes for nonzeros (a dense weld
    row then reaches every tree) and whose rows and islands are meaningless."""
    nefc = int(d.nefc)
    if nefc and info.sparse:
        nnz = int(d.efc_J_rowadr[nefc - 1] + d.efc_J_rownnz[nefc - 1])
    else:
        nnz = nefc * info.nv
    arrays = (d.qpos, d.qvel, d.qacc, d.efc_J[:nnz])
    if not all(np.isfinite(a).all() for a in arrays):
        raise TraceError("native MuJoCo diverged: the state or the constraint Jacobian is not finite "
                         "(autoreset is off, so MuJoCo kept it): nothing meaningful to record")


def dropped_constraints(worlds):
    """How often native MuJoCo, short of arena memory, dropped contacts or constraint rows over
    every world's steps (its warnings count them until a reset): such a trace is exact about
    the rows it holds, but they are not the scene's."""
    kinds = (mujoco.mjtWarning.mjWARN_CONTACTFULL, mujoco.mjtWarning.mjWARN_CNSTRFULL)
    return sum(int(w.d.warning[int(k)].number) for w in worlds for k in kinds)


def step_world(m, info, w, step, events, recorded, writer, time_native):
    """Steps world `w` once with the step's events; at a recorded step, writes its rows, rowless
    hyperedges and native outputs and checks them. Returns the native timings it took."""
    for ev in events.get(step, ()):
        w.apply(m, ev)
    w.controls(m, step)
    mujoco.mj_step(m, w.d)
    if any(ev[0] == "wake" for ev in events.get(step, ())):
        w.d.xfrc_applied[:] = 0
    if not recorded:
        return []
    d = w.d
    finite_state(m, info, d)
    in_step = native_islands(info, d)
    # Recompute from exactly the recorded rows and tree_awake.
    mujoco.mj_island(m, d)
    native = native_islands(info, d)
    writer.step_mismatch += not same_islands(in_step, native)
    rows = extract_rows(info, d)
    edges = rowless_edges(info, d)
    check_partition(info, rows, edges, native)
    writer.add(rows, edges, d, native)
    if not time_native:
        return []
    calls = []
    for _ in range(time_native):
        t0 = time.perf_counter_ns()
        mujoco.mj_island(m, d)
        calls.append(time.perf_counter_ns() - t0)
    return [float(np.median(calls))]


def check_args(args):
    """One-line refusals of arguments that would otherwise end in a traceback."""
    for name, low in (("worlds", 1), ("steps", 1), ("every", 1), ("start", 0), ("seed", 0)):
        if getattr(args, name) < low:
            raise SystemExit(f"record_trace: --{name} {getattr(args, name)}: must be at least {low}")
    for name in ("qvel_noise", "ctrl_noise"):
        if not np.isfinite(getattr(args, name)):
            raise SystemExit(f"record_trace: --{name.replace('_', '-')} must be finite")


def record(args, time_native=0):
    """Runs the recording; returns (arrays, summary). With time_native > 0, also times native
    mj_island (that many calls per recorded world-step) and reports it in the summary."""
    check_args(args)
    name, xml = resolve_scene(args.scene)
    try:
        m = mujoco.MjModel.from_xml_path(xml)
    except ValueError as e:
        raise SystemExit(f"record_trace: {xml}: MuJoCo did not compile it: {e}") from None
    if args.jacobian != "model":
        m.opt.jacobian = {"dense": mujoco.mjtJacobian.mjJAC_DENSE,
                          "sparse": mujoco.mjtJacobian.mjJAC_SPARSE}[args.jacobian]
    if m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_ISLAND):
        raise SystemExit("record_trace: the model disables island discovery (<flag island="
                         "\"disable\"/>): native finds no islands to record")
    replay = None
    if args.replay:
        path = args.replay if os.path.exists(args.replay) else os.path.join(os.path.dirname(xml), args.replay)
        try:
            replay = aloha_setup(m, path)
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"record_trace: --replay {args.replay!r}: {e}") from None
    # After the replay's set-up, which turns sleep on as MuJoCo Warp's benchmark runs it: the
    # flags given win.
    if args.no_sleep:
        m.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    if args.sleep:
        m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    info = ModelInfo(m)
    rng = np.random.default_rng(args.seed)
    try:
        worlds = [World(m, w, args, replay, rng) for w in range(args.worlds)]
    except mujoco.FatalError as e:
        raise SystemExit(f"record_trace: native MuJoCo stopped at the first forward: {e}") from None
    events = parse_events(args, m)
    recorded = [s for s in range(args.start, args.start + args.steps * args.every, args.every)]
    record_set = set(recorded)
    writer = Writer(info, m)
    native_ns = []
    last = recorded[-1]
    late = sorted(s for s in events if s > last)
    if late:
        raise SystemExit(f"record_trace: events at step {late[0]} and later would never fire: the "
                         f"last recorded step is {last}")
    for step in range(last + 1):
        for w in worlds:
            try:
                native_ns += step_world(m, info, w, step, events, step in record_set, writer,
                                        time_native)
            except TraceError as e:
                raise TraceError(f"step {step}, world {w.index}: {e}") from None
            except mujoco.FatalError as e:
                raise SystemExit(f"record_trace: step {step}, world {w.index}: native MuJoCo "
                                 f"stopped: {e}") from None
    dropped = dropped_constraints(worlds)
    if dropped:
        print(f"record_trace: warning: native MuJoCo ran out of arena memory {dropped} times and "
              "dropped contacts or constraint rows (mjWARN_CONTACTFULL, mjWARN_CNSTRFULL): the trace "
              "holds the rows it kept, not the scene's; a larger <size memory=...> keeps them all",
              file=sys.stderr)
    nrows = np.asarray(writer.slot_nrow, dtype=np.int64).reshape(len(recorded), args.worlds)
    meta = dict(
        scene=name,
        xml=os.path.relpath(xml, os.path.dirname(SCENES)),
        mujoco=mujoco.__version__,
        numpy=np.__version__,
        recorded=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        machine=platform.machine(),
        args={k: v for k, v in vars(args).items() if k != "out"},
        step_index=recorded,
        jacobian="sparse" if info.sparse else "dense",
        sleep=bool(m.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_SLEEP)),
        in_step_vs_recomputed_mismatches=int(writer.step_mismatch),
    )
    arrays = writer.arrays(len(recorded), args.worlds, meta)
    summary = dict(
        scene=name,
        rows_per_world_step=float(nrows.mean()),
        rows_max=int(nrows.max()),
        nisland_mean=float(arrays["nisland"].mean()),
        edges=int(arrays["edge_id"].size),
        edges_by_kind=np.bincount(arrays["edge_kind"], minlength=4).tolist(),
        islands_without_rows=bool(info.islands_without_rows),
        in_step_mismatch=int(writer.step_mismatch),
        constraints_dropped=dropped,
        native_ns_per_world_step=float(np.median(native_ns)) if native_ns else None,
        native_ns_per_step_mean=float(np.sum(native_ns) / len(recorded)) if native_ns else None,
    )
    return arrays, summary


def parser():
    class Help(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        pass

    p = argparse.ArgumentParser(description=__doc__, formatter_class=Help)
    p.add_argument("scene")
    p.add_argument("--out", required=True, default=argparse.SUPPRESS, help="the trace to write (.npz)")
    p.add_argument("--worlds", type=int, default=3, help="independent worlds, each perturbed")
    p.add_argument("--steps", type=int, default=200, help="recorded steps")
    p.add_argument("--start", type=int, default=0, help="first recorded step")
    p.add_argument("--every", type=int, default=1, help="record every K-th step")
    p.add_argument("--seed", type=int, default=0, help="seed of the perturbations")
    p.add_argument("--qvel-noise", type=float, default=0.1, help="scale of the initial velocity noise")
    p.add_argument("--ctrl-noise", type=float, default=1.0, help="scale of the control noise")
    p.add_argument("--jacobian", choices=["model", "dense", "sparse"], default="model",
                   help="the Jacobian setting (model: the scene's own)")
    sleep = p.add_mutually_exclusive_group()
    sleep.add_argument("--no-sleep", action="store_true", help="disable sleep")
    sleep.add_argument("--sleep", action="store_true", help="enable sleep")
    p.add_argument("--replay", help="control replay .npz, a path or a file of the scene folder (aloha_clutter: pick_clutter.npz); turns sleep on unless --no-sleep")
    p.add_argument("--eq", action="append", default=[], metavar="STEP:EQ:0|1[:W1/W2...]")
    p.add_argument("--wake", action="append", default=[], metavar="STEP:TREE[:W1/W2...]")
    p.add_argument("--settle", action="append", default=[], metavar="STEP[:W1/W2...]")
    p.add_argument("--mocap", action="append", default=[], metavar="STEP:BODY:X,Y,Z[:W1/W2...]")
    return p


def main():
    args = parser().parse_args()
    # Where the trace goes is checked before the recording, which can take minutes: its folder
    # (made if missing, as `mkdir -p`) must take a file.
    out_dir = os.path.dirname(os.path.abspath(args.out))
    try:
        os.makedirs(out_dir, exist_ok=True)
        if not os.access(out_dir, os.W_OK):
            raise PermissionError(f"cannot write into {out_dir}")
    except OSError as e:
        raise SystemExit(f"record_trace: --out {args.out!r}: {e}") from None
    arrays, summary = record(args)
    try:
        np.savez_compressed(args.out, **arrays)
    except OSError as e:
        raise SystemExit(f"record_trace: --out {args.out!r}: {e}") from None
    summary["bytes"] = os.path.getsize(args.out)
    print(json.dumps(summary))


if __name__ == "__main__":
    try:
        main()
    except TraceError as e:
        raise SystemExit(f"record_trace: {e}")
