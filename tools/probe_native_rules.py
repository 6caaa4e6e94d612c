#!/usr/bin/env python3
"""Probes what native MuJoCo 4.0.0's mj_island does with rowless flex couplings.

Prints eight facts (each asserted):
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
   the last `<flex>_twist`).
"""

import os
import sys
import tempfile

import mujoco
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record_trace import resolve_scene  # noqa: E402

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


def body_tree_of(m, bodies):
    return np.asarray(m.body_treeid)[np.asarray(bodies)].tolist()


if __name__ == "__main__":
    main()
