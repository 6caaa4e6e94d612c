#!/usr/bin/env python3
"""Probes what native MuJoCo 4.0.0's mj_island does with couplings without rows.

Prints thirteen facts (each asserted):
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
   flex that does not couple (elastic2d "none") or whose vertices are all pinned.
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
    <flag sleep="{sleep}" spring="{spring}" damper="{spring}"/>
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
         spring=True, steps=5):
    """Steps the PAIR model; returns (model, data) after mj_island."""
    xml = PAIR.format(
        integrator=integrator, solver=solver, gravity="0 0 -9.81" if rows else "0 0 0",
        sleep="enable" if sleep else "disable", spring="enable" if spring else "disable",
        box=BOX if rows else "", body=body, extra=extra)
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    d.qvel[:] = 0.01
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


SCENES_OWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "traces", "scenes")


def flex_vertex_trees(m, f):
    bodies = m.flex_vertbodyid[m.flex_vertadr[f]:][: m.flex_vertnum[f]]
    return sorted(set(body_tree_of(m, bodies)) - {-1})


def body_tree_of(m, bodies):
    return np.asarray(m.body_treeid)[np.asarray(bodies)].tolist()


if __name__ == "__main__":
    main()
