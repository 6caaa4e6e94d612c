#!/usr/bin/env python3
"""Probes what native MuJoCo 4.0.0's mj_island does with couplings without rows.

Prints sixteen facts (each asserted):
1. a world with no efc rows has no islands, even with stiff flexes (flex_trampoline, early steps);
2. one contact on a stiff flex puts every awake vertex tree of the flex in its island
   (flex_trampoline: all 253 trees);
3. a stiff flex with two free vertex trees forms an island even though no row touches it, as
   long as the world has some row;
4. a stiff flex with a single free vertex tree forms no island (no one-tree coupling);
5. a flex held by a strain equality (its stiffness block filled for the equality) and without
   bending has no coupling: with its equalities switched off, a contact puts only the node trees
   it reaches in an island (traces/scenes/min_strain);
6. one held by a strain equality with bending couples by its bending: flex_bunny_shell with its
   equalities switched off puts every node tree in the island of its first contact;
7. a shell given a Young's modulus but neither stretch nor bending (`elastic2d` left at "none")
   has a stiffness block, all zeros, and no coupling: its two free vertex trees form no island;
8. an elastic rod (a 1-D flex with a Young's modulus) couples without rows its vertex trees and
   the trees of its edges' twist hinges (`<flex>_twist_<k>` for the k-th edge along its chain,
   the last `<flex>_twist`);
9. under integrator "discrete" a tendon spring joins its trees without a row; not under Euler,
   nor with the PGS solver, nor with the spring flag off, nor a tendon with armature only;
10. under integrator "discrete" a position servo with a site and a refsite on another tree joins
   the two trees; a motor (fixed gain, no bias) between them does not;
11. a flex with passive contacts couples its vertex trees without stiffness; without the flag it
   does not;
12. a passive flex contact, in d.contact without rows, joins the trees of its two sheets;
13. with sleep on, integrator "discrete" and a coupling flex, a world without rows has islands:
   its couplings' components (a tendon pair's, a sheet's), the pair's alone once the sheet
   sleeps; a flex in one tree or a passive flex without stiffness will do, with the spring and
   damper flags off too; no island without sleep, under Euler, with a tendon alone, with a
   flex that does not couple (elastic2d "none") or whose vertices are all pinned;
14. under integrator "discrete" an actuator couples by the state only with a gain or bias type
   that native counts as state-dependent (affine, muscle, dcmotor, so3: trace_rows.STATE_GAINS,
   STATE_BIASES): a tendon actuator between two trees with a user gain, a user bias, or both
   with callbacks whose force depends on the state, does not join them; a position servo (an
   affine bias) does;
15. with the ipc flag on, a passive flex without elasticity couples nothing without rows (its
   vertex trees stay apart while the world has rows; an elastic sheet still couples) and its
   contacts get rows (exclude 0): a passive cube on the floor, each vertex tree its own island;
   without ipc the same contacts have no rows (exclude 4) and join the cube's trees;
16. a passive flex contact is one native marks `exclude` 4, not any contact without rows of a
   flex with m.flex_passive: a 1-D rod and a rigid flex keep flex_passive 1 (MuJoCo ignores the
   attribute there) but their contacts in the gap with another flex are exclude 1, without rows,
   and join nothing; a passive board with all its vertices pinned (rigid to MuJoCo: flex_rigid 1)
   gets rows (exclude 0) and gap contacts (exclude 1) against a sheet that is not passive,
   exclude 4 against a passive one.
"""

import os
import sys
import tempfile

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_trace import resolve_scene  # noqa: E402
from trace_rows import ModelInfo, components, rowless_edges  # noqa: E402

PROBE = """
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="1 1 0.05"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
    <flexcomp type="grid" count="3 3 1" spacing=".1 .1 .1" pos="0 0 1" name="one" dim="2" radius=".01">
      <elasticity young="1e4" poisson="0.2" thickness="0.01" elastic2d="stretch"/>
      <contact contype="0" conaffinity="0"/>
      <pin id="0 1 2 3 5 6 7 8"/>
    </flexcomp>
    <flexcomp type="grid" count="3 3 1" spacing=".1 .1 .1" pos="0 1 1" name="two" dim="2" radius=".01">
      <elasticity young="1e4" poisson="0.2" thickness="0.01" elastic2d="stretch"/>
      <contact contype="0" conaffinity="0"/>
      <pin id="0 1 2 3 5 6 7"/>
    </flexcomp>
    <flexcomp type="grid" count="3 3 1" spacing=".1 .1 .1" pos="1 0 1" name="none" dim="2" radius=".01">
      <elasticity young="1e4" poisson="0.2" thickness="0.01"/>
      <contact contype="0" conaffinity="0"/>
      <pin id="0 1 2 3 5 6 7"/>
    </flexcomp>
  </worldbody>
</mujoco>
"""

ROD = """
<mujoco>
  <option><flag gravity="disable"/></option>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body pos="2 2 .049"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
    <flexcomp name="rod" type="grid" count="4 1 1" spacing=".1 .1 .1" pos="0 0 1" dim="1" radius=".01">
      <elasticity young="1e5"/>
    </flexcomp>
  </worldbody>
</mujoco>
"""


def main():
    _, xml = resolve_scene("flex_trampoline")
    m = mujoco.MjModel.from_xml_path(xml)
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d)
    assert d.nefc == 0 and d.nisland == 0
    print(f"1. flex_trampoline step 1: nefc {d.nefc}, nisland {d.nisland}")
    while d.nefc == 0:
        mujoco.mj_step(m, d)
    assert d.nisland == 1 and d.island_ntree[0] == m.ntree
    print(f"2. flex_trampoline first contact: ncon {d.ncon}, nefc {d.nefc}, "
          f"nisland {d.nisland}, island_ntree {d.island_ntree[:1].tolist()} of ntree {m.ntree}")

    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(PROBE)
    m = mujoco.MjModel.from_xml_path(f.name)
    os.unlink(f.name)
    d = mujoco.MjData(m)
    for _ in range(5):
        mujoco.mj_step(m, d)
    body_tree = np.asarray(m.body_treeid)
    trees = {
        mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_FLEX, i): [
            int(t) for t in sorted(set(body_tree[m.flex_vertbodyid[m.flex_vertadr[i]:m.flex_vertadr[i] + m.flex_vertnum[i]]]) - {-1})
        ]
        for i in range(m.nflex)
    }
    ti = d.tree_island[: m.ntree]
    two, one = trees["two"], trees["one"]
    assert d.nefc > 0 and len(two) == 2 and ti[two[0]] >= 0 and ti[two[0]] == ti[two[1]]
    print(f"3. probe: nefc {d.nefc} (box on floor, tree 0); flex 'two' trees {two} -> islands "
          f"{[int(ti[t]) for t in two]}")
    assert len(one) == 1 and ti[one[0]] == -1
    print(f"4. probe: flex 'one' tree {one} -> island {int(ti[one[0]])}; tree_island {ti.tolist()}")
    none = trees["none"]
    f = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_FLEX, "none")
    block = m.flex_stiffness[m.flex_stiffnessadr[f]:][:21 * m.flex_elemnum[f]]
    assert m.flex_stiffnessadr[f] >= 0 and m.flex_bendingadr[f] < 0 and not block.any()
    assert len(none) == 2 and all(ti[t] == -1 for t in none)
    fact7 = (f"7. probe: flex 'none' (stiffness block all zeros) trees {none} -> islands "
             f"{[int(ti[t]) for t in none]}")

    m = mujoco.MjModel.from_xml_path(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "traces", "scenes", "min_strain",
        "min_strain.xml"))
    d = mujoco.MjData(m)
    d.eq_active[:] = 0
    while d.nefc == 0:
        mujoco.mj_step(m, d)
    touched = int((d.tree_island[: m.ntree] >= 0).sum())
    assert m.flex_edgeequality[0] == 3 and m.flex_stiffness[m.flex_stiffnessadr[0]] != 0
    assert 0 < touched < m.ntree
    print(f"5. min_strain, strain equalities off, first contact: nefc {d.nefc}, "
          f"{touched} of {m.ntree} node trees in islands")

    _, xml = resolve_scene("flex_bunny_shell")
    m = mujoco.MjModel.from_xml_path(xml)
    d = mujoco.MjData(m)
    d.eq_active[:] = 0
    while d.nefc == 0:
        mujoco.mj_step(m, d)
    nodes = sorted(set(body_tree_of(m, m.flex_nodebodyid)) - {-1})
    ti = d.tree_island[: m.ntree]
    assert m.flex_edgeequality[0] == 3 and m.flex_bendingadr[0] >= 0
    assert len({int(ti[t]) for t in nodes}) == 1 and ti[nodes[0]] >= 0
    print(f"6. flex_bunny_shell, strain equalities off, first contact: nefc {d.nefc}, "
          f"all {len(nodes)} node trees in island {int(ti[nodes[0]])}")
    print(fact7)

    m = mujoco.MjModel.from_xml_string(ROD)
    d = mujoco.MjData(m)
    for _ in range(3):
        mujoco.mj_step(m, d)
    f = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_FLEX, "rod")
    verts = sorted(set(body_tree_of(m, m.flex_vertbodyid[m.flex_vertadr[f]:][:m.flex_vertnum[f]])))
    twists = [
        int(m.body_treeid[m.jnt_bodyid[j]]) for j in range(m.njnt)
        if (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or "").startswith("rod_twist")
    ]
    ti = d.tree_island[: m.ntree]
    assert d.nefc > 0 and len(twists) == m.flex_edgenum[f] and m.flex_bendingadr[f] >= 0
    assert len({int(ti[t]) for t in verts + twists}) == 1 and ti[verts[0]] >= 0
    print(f"8. rod: nefc {d.nefc} (box on floor); vertex trees {verts} and twist trees {twists} "
          f"-> island {int(ti[verts[0]])}")

    discrete_facts()


# Two spheres (trees 0, 1) with sites, a box resting on the floor (a row, tree 2) unless `rows`
# is off (gravity off then), and what a case adds.
PAIR = """
<mujoco>
  <option timestep="0.002" integrator="{integrator}" solver="{solver}" gravity="{gravity}">
    <flag sleep="{sleep}" spring="{spring}" damper="{spring}" ipc="{ipc}"/>
  </option>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="-1 0 1"><freejoint/><geom type="sphere" size=".1"/><site name="a"/></body>
    <body pos="0 0 1"><freejoint/><geom type="sphere" size=".1"/><site name="b"/></body>
    {box}{body}
  </worldbody>
  {extra}
</mujoco>
"""
BOX = '<body pos="2 2 .05"><freejoint/><geom type="box" size=".05 .05 .05"/></body>'
SPRING = '<tendon><spatial stiffness="5" springlength="1"><site site="a"/><site site="b"/></spatial></tendon>'
SHEET = """<flexcomp name="s" type="grid" count="3 3 1" spacing=".1 .1 .1" pos="0 2 1" radius=".01"
  mass=".1" dim="2">{elasticity}<contact selfcollide="none" {contact}/>{pin}</flexcomp>"""
ELASTIC = '<elasticity young="3e3" poisson=".2" thickness="3e-3" elastic2d="both"/>'
# A flex in one tree: a triangle pair over a chain of four bodies (ball joints).
CHAIN = """<body name="c0" pos="3 0 1"><freejoint/><geom type="sphere" size=".02"/>
  <body name="c1" pos=".1 0 0"><joint type="ball"/><geom type="sphere" size=".02"/>
  <body name="c2" pos="0 .1 0"><joint type="ball"/><geom type="sphere" size=".02"/>
  <body name="c3" pos="-.1 0 0"><joint type="ball"/><geom type="sphere" size=".02"/></body></body></body></body>"""
CHAIN_FLEX = """<deformable><flex name="o" dim="2" body="c0 c1 c2 c3" vertex="0 0 0 0 0 0 0 0 0 0 0 0"
  element="0 1 2 0 2 3" radius=".005">""" + ELASTIC + """<contact contype="0" conaffinity="0"/></flex>
  </deformable>"""


def pair(body="", extra="", integrator="discrete", solver="Newton", sleep=False, rows=True,
         spring=True, steps=5, ipc=False, setup=None):
    """Steps the PAIR model (`setup(m, d)` called first if given); returns (model, data) after
    mj_island."""
    xml = PAIR.format(
        integrator=integrator, solver=solver, gravity="0 0 -9.81" if rows else "0 0 0",
        sleep="enable" if sleep else "disable", spring="enable" if spring else "disable",
        ipc="enable" if ipc else "disable", box=BOX if rows else "", body=body, extra=extra)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:] = 0.01
    if setup:
        setup(m, d)
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mujoco.mj_island(m, d)
    return m, d


def joined(m, d, trees):
    ti = d.tree_island[: m.ntree]
    return ti[trees[0]] >= 0 and all(ti[t] == ti[trees[0]] for t in trees)


def sheet(elasticity=ELASTIC, contact="", pin=""):
    return SHEET.format(elasticity=elasticity, contact=contact, pin=pin)


def discrete_facts():
    m, d = pair(extra=SPRING)
    assert d.nefc > 0 and joined(m, d, [0, 1])
    others = {
        "Euler": pair(extra=SPRING, integrator="Euler"),
        "PGS": pair(extra=SPRING, solver="PGS"),
        "spring off": pair(extra=SPRING, spring=False),
        "armature only": pair(extra=SPRING.replace('stiffness="5" springlength="1"', 'armature="1"')),
    }
    assert all(not joined(*md, [0, 1]) for md in others.values())
    print(f"9. discrete: tendon spring, nefc {d.nefc} (box on floor): trees 0, 1 -> islands "
          f"{d.tree_island[:2].tolist()}; apart under {', '.join(others)}")

    servo = '<actuator><position site="a" refsite="b" gear="1 0 0 0 0 0" kp="5"/></actuator>'
    motor = '<tendon><spatial name="t"><site site="a"/><site site="b"/></spatial></tendon>' \
            '<actuator><motor tendon="t"/></actuator>'
    m, d = pair(extra=servo)
    m2, d2 = pair(extra=motor)
    assert joined(m, d, [0, 1]) and not joined(m2, d2, [0, 1])
    print(f"10. discrete: site servo with a refsite -> islands {d.tree_island[:2].tolist()}; "
          f"a motor on a tendon -> {d2.tree_island[:2].tolist()}")

    m, d = pair(body=sheet("", 'passive="true"'))
    m2, d2 = pair(body=sheet("", ""))
    verts = list(range(3, m.ntree))
    assert d.nefc > 0 and m.flex_passive[0] and joined(m, d, verts)
    assert not joined(m2, d2, verts[:2])
    print(f"11. passive sheet without elasticity, nefc {d.nefc}: its {len(verts)} vertex trees -> "
          f"island {int(d.tree_island[verts[0]])}; not passive -> "
          f"{sorted(set(d2.tree_island[verts].tolist()))}")

    m = mujoco.MjModel.from_xml_path(os.path.join(SCENES_OWN, "passive_contacts",
                                                  "passive_contacts.xml"))
    d = mujoco.MjData(m)
    low, high = (flex_vertex_trees(m, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_FLEX, n))
                 for n in ("low", "high"))
    apart = None
    for step in range(400):
        mujoco.mj_step(m, d)
        mujoco.mj_island(m, d)
        touching = [c for c in d.contact[: d.ncon] if c.efc_address < 0 and
                    sorted(int(f) for f in c.flex) == [0, 1]]
        if not touching and not joined(m, d, [low[0], high[0]]):
            apart = step
        if touching:
            break
    assert apart is not None and touching and joined(m, d, low + high)
    print(f"12. passive_contacts: sheets 'low' and 'high' apart at step {apart}; at step {step} "
          f"{len(touching)} contacts between them without rows -> one island")

    m, d = pair(body=sheet(), extra=SPRING, sleep=True, rows=False)
    info = ModelInfo(m)
    mine = components(m.ntree, [t.tolist() for _, _, t in rowless_edges(info, d)])
    assert d.nefc == 0 and d.nisland == 2 and info.islands_without_rows
    assert np.array_equal(mine, d.tree_island[: m.ntree])
    m2, d2 = pair(body=sheet(), extra=SPRING, sleep=True, rows=False, steps=1)
    d2.qvel[:] = 0
    d2.qvel[:6] = [0, 0, 0, 3, 0, 0]
    for _ in range(100):
        mujoco.mj_step(m2, d2)
    mujoco.mj_island(m2, d2)
    assert not d2.tree_awake[2:].any() and d2.nisland == 1 and joined(m2, d2, [0, 1])
    yes = {
        "one-tree flex": pair(body=CHAIN, extra=SPRING + CHAIN_FLEX, sleep=True, rows=False),
        "passive sheet": pair(body=sheet("", 'passive="true"'), extra=SPRING, sleep=True,
                              rows=False),
        "spring, damper off": pair(body=sheet(), extra=SPRING, sleep=True, rows=False,
                                   spring=False),
    }
    no = {
        "sleep off": pair(body=sheet(), extra=SPRING, rows=False),
        "Euler": pair(body=sheet(), extra=SPRING, sleep=True, rows=False, integrator="Euler"),
        "tendon alone": pair(extra=SPRING, sleep=True, rows=False),
        "elastic2d none": pair(body=sheet(ELASTIC.replace("both", "none")), extra=SPRING,
                               sleep=True, rows=False),
        "all pinned": pair(body=sheet(pin='<pin id="0 1 2 3 4 5 6 7 8"/>'), extra=SPRING,
                           sleep=True, rows=False),
    }
    for label, (mm, dd) in {**yes, **no}.items():
        assert dd.nefc == 0 and (dd.nisland > 0) == (label in yes) == ModelInfo(mm).islands_without_rows, label
    assert all(joined(mm, dd, [0, 1]) for mm, dd in yes.values() if mm.opt.disableflags == 0)
    print(f"13. sleep + discrete + elastic sheet, no rows: nisland {d.nisland}, tree_island "
          f"{d.tree_island[: m.ntree].tolist()} (the couplings' components); sheet asleep: "
          f"{d2.tree_island[: m2.ntree].tolist()}; islands too with {', '.join(yes)}; none with "
          f"{', '.join(no)}")

    user_facts()


def user_facts():
    """Facts 14-16: actuator types, the ipc flag, native's passive contact mark."""
    tendon = '<tendon><spatial name="t"><site site="a"/><site site="b"/></spatial></tendon>'
    cases = {
        "user gain": '<general tendon="t" gaintype="user"/>',
        "user bias": '<general tendon="t" biastype="user"/>',
        "affine-bias servo": '<position tendon="t" kp="5"/>',
    }
    runs = {k: pair(extra=f"{tendon}<actuator>{v}</actuator>") for k, v in cases.items()}
    # User gain and bias with callbacks whose force depends on the state (installed after
    # compiling): still no coupling.
    def callbacks(m, d):
        mujoco.set_mjcb_act_gain(lambda m, d, i: 5.0 - 2.0 * float(d.actuator_length[i]))
        mujoco.set_mjcb_act_bias(lambda m, d, i: -5.0 * float(d.actuator_length[i]))
        d.ctrl[:] = 1

    try:
        runs["user callbacks"] = pair(
            extra=f'{tendon}<actuator><general tendon="t" gaintype="user" biastype="user"/>'
                  '</actuator>', setup=callbacks)
    finally:
        mujoco.set_mjcb_act_gain(None)
        mujoco.set_mjcb_act_bias(None)
    force = float(runs["user callbacks"][1].actuator_force[0])
    for label, (m, d) in runs.items():
        assert d.nefc > 0 and joined(m, d, [0, 1]) == (label == "affine-bias servo"), label
        assert bool(ModelInfo(m).discrete_trees) == (label == "affine-bias servo"), label
    assert force != 0
    print(f"14. discrete: a tendon actuator between trees 0, 1 with "
          f"{', '.join(k for k in runs if k != 'affine-bias servo')} (force {force:.2f}) -> "
          f"islands {runs['user gain'][1].tree_island[:2].tolist()}; an affine-bias servo -> "
          f"{runs['affine-bias servo'][1].tree_island[:2].tolist()}")

    m, d = pair(body=sheet("", 'passive="true"'), ipc=True)
    m2, d2 = pair(body=sheet(), ipc=True)
    verts = list(range(3, m.ntree))
    assert d.nefc > 0 and m.flex_passive[0] and all(d.tree_island[t] == -1 for t in verts)
    assert not ModelInfo(m).flex_trees and joined(m2, d2, verts)
    cube = {ipc: pair(body=CUBE, ipc=ipc, steps=20) for ipc in (False, True)}
    marks = {ipc: [c for c in dd.contact[: dd.ncon] if c.flex[0] >= 0 or c.flex[1] >= 0]
             for ipc, (mm, dd) in cube.items()}
    corners = list(range(3, cube[True][0].ntree))
    assert marks[False] and all(c.exclude == 4 and c.efc_address < 0 for c in marks[False])
    assert marks[True] and all(c.exclude == 0 and c.efc_address >= 0 for c in marks[True])
    assert joined(*cube[False], corners) and not joined(*cube[True], corners)
    print(f"15. ipc on: passive sheet without elasticity, nefc {d.nefc}: its vertex trees -> "
          f"{sorted(set(d.tree_island[verts].tolist()))}; an elastic sheet -> island "
          f"{int(d2.tree_island[verts[0]])}; a passive cube on the floor: {len(marks[True])} "
          f"contacts with rows (exclude 0), corner trees -> "
          f"{cube[True][1].tree_island[corners].tolist()}; without ipc {len(marks[False])} "
          f"without rows (exclude 4) -> island {int(cube[False][1].tree_island[corners[0]])}")

    found = {label: gap_step(xml.format(sheet="")) for label, xml in GAPS.items()}
    m = mujoco.MjModel.from_xml_string(GAPS["all-pinned board"].format(sheet='passive="true"'))
    d = mujoco.MjData(m)
    mujoco.mj_step(m, d)
    passive = flex_contacts(m, d)
    assert m.flex_rigid[0] and not m.flex_rigid[1]
    assert passive and all(c.exclude == 4 and c.efc_address < 0 for c in passive)
    print("16. passive flag without native's mark (exclude 4): gap contacts (exclude 1, no rows) "
          "couple nothing: " + "; ".join(
              f"{k}: at step {s} {n} gap contacts, tree_island {t}; up to {r} contacts with rows "
              f"(exclude 0) by step {GAP_STEPS}" for k, (s, n, t, r) in found.items()) +
          f"; the board (flex_rigid 1) against a passive sheet: {len(passive)} contacts "
          f"without rows (exclude 4)")

# A passive cube (a 3-D flex of 8 vertex trees, no elasticity) resting on the floor.
CUBE = """<flexcomp name="v" type="grid" count="2 2 2" spacing=".1 .1 .1" pos="0 2 .06"
  radius=".01" mass=".1" dim="3"><contact passive="true" selfcollide="none"/></flexcomp>"""
# Flex pairs within each other's contact margin, passive="true" on one of them: a 1-D rod and a
# rigid flex (MuJoCo warns the attribute is ignored, m.flex_passive stays 1; gravity off, no
# rows from the box, which rests at distance 0) and an elastic board with all its vertices pinned
# (no tree) under a loose sheet that is not passive unless `sheet` says so (weak gravity, the box
# gives rows).
GAP = """<mujoco>
  <option timestep="0.002" integrator="discrete" gravity="0 0 {gravity}"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="2 2 .05"><freejoint/><geom type="box" size=".05 .05 .05"/></body>{flexes}
  </worldbody>
</mujoco>"""
GAPS = {
    "1-D rod": GAP.format(gravity=0, flexes="""
    <flexcomp name="r" type="grid" count="4 1 1" spacing=".1 .1 .1" pos="0 0 .3" radius=".01"
      mass=".1" dim="1"><contact passive="true" margin=".04" gap=".035" selfcollide="none"/>
    </flexcomp>
    <flexcomp name="r2" type="grid" count="4 1 1" spacing=".1 .1 .1" pos="0 0 .33"
      euler="0 0 90" radius=".01" mass=".1" dim="1">
      <contact margin=".04" gap=".035" selfcollide="none"/></flexcomp>"""),
    "rigid flex": GAP.format(gravity=0, flexes="""
    <body name="rb" pos="0 0 .3"><freejoint/>
      <geom type="sphere" size=".01" contype="0" conaffinity="0"/>
      <flexcomp name="r" type="grid" count="3 3 1" spacing=".1 .1 .1" radius=".01" mass=".1"
        dim="2" rigid="true">
        <contact passive="true" margin=".06" gap=".055" selfcollide="none"/></flexcomp>
    </body>
    <flexcomp name="s" type="grid" count="3 3 1" spacing=".1 .1 .1" pos=".03 .03 .345"
      radius=".01" mass=".1" dim="2"><contact margin=".06" gap=".055" selfcollide="none"/>
    </flexcomp>"""),
    "all-pinned board": GAP.format(gravity=-1, flexes="""
    <flexcomp name="b" type="grid" count="4 4 1" spacing=".1 .1 .1" pos="0 0 .3" radius=".01"
      mass=".1" dim="2">""" + ELASTIC + """<pin id="0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15"/>
      <contact passive="true" selfcollide="none" margin=".03" gap=".02"/></flexcomp>
    <flexcomp name="l" type="grid" count="3 3 1" spacing=".1 .1 .1" pos=".03 .03 .34"
      radius=".01" mass=".05" dim="2">
      <contact {sheet} selfcollide="none" margin=".03" gap=".02"/></flexcomp>"""),
}
GAP_STEPS = 150


def flex_contacts(m, d):
    """The current flex-flex contacts."""
    return [c for c in d.contact[: d.ncon] if c.flex[0] >= 0 and c.flex[1] >= 0]


def gap_step(xml):
    """Steps a GAPS scene: the first step where a flex-flex contact in the gap (exclude 1, no
    rows) has trees that native leaves apart while rows exist, how many gap contacts then, native's
    tree_island, and how many flex-flex contacts had rows by GAP_STEPS. Asserts that no contact
    is marked passive (exclude 4) and that the recorder's rules give no rowless hyperedge."""
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    info = ModelInfo(m)
    assert m.flex_passive[0] and not any(t.size for _, t in info.flex_trees)
    first, rows = None, 0
    for step in range(1, GAP_STEPS + 1):
        mujoco.mj_step(m, d)
        mujoco.mj_island(m, d)
        cons = flex_contacts(m, d)
        assert all(c.exclude != 4 for c in cons) and not rowless_edges(info, d)
        rows = max(rows, sum(c.efc_address >= 0 for c in cons))
        gap = [i for i, c in enumerate(d.contact[: d.ncon]) if c.flex[0] >= 0 and c.flex[1] >= 0
               and c.exclude == 1 and c.efc_address < 0]
        if first is None and d.nefc and any(
                not joined(m, d, sorted(info.contact_trees(d, i)[0])) for i in gap):
            first = step, len(gap), d.tree_island[: m.ntree].tolist()
    assert first is not None and rows
    return (*first, rows)


SCENES_OWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces", "scenes")


def flex_vertex_trees(m, f):
    bodies = m.flex_vertbodyid[m.flex_vertadr[f]:][: m.flex_vertnum[f]]
    return sorted(set(body_tree_of(m, bodies)) - {-1})


def body_tree_of(m, bodies):
    return np.asarray(m.body_treeid)[np.asarray(bodies)].tolist()


if __name__ == "__main__":
    main()
