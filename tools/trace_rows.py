"""Per-step extraction of constraint rows, their tree supports and native island outputs.

The support of a row is derived the way native MuJoCo 4.0.0's mj_island derives it:

* friction-dof, joint-limit, geom-geom contact, connect and weld rows use MuJoCo's per-type
  rule (dof tree, joint tree, the two geoms' body trees, the two objects' body trees with site
  semantics);
* every other row (tendon rows, joint/tendon/flex equalities, flex contacts) scans its Jacobian:
  the structural nonzeros (colind) of the sparse row, or the numerically nonzero entries of the
  dense row, mapped through dof_treeid;
* a flex contact also has the trees its structure names, whatever the dense row's values: the
  geom side's body tree, a flex vertex's tree, every vertex tree of a flex element (a vertex of
  zero weight, where the contact lies on an edge or at a vertex, included; an element whose
  other vertices are pinned may leave the dense row all zero). Native 4.0.0 with a dense
  Jacobian puts such a row in the island of those trees, as with a sparse one (a box lying on
  sheet elements' vertices: 15 islands by the rows' values where native found 7). An
  interpolated flex side names its node trees of nonzero weight, which the row's values give; on
  an elastic rod with twist hinges a contact names its edge's two vertex trees and its hinge's;
* consecutive rows with the same (type, id) are one constraint and share the trees of its first
  row, except flex equalities (mjEQ_FLEX, mjEQ_FLEXVERT, mjEQ_FLEXSTRAIN), scanned row by row.

Couplings without rows (`rowless_edges`, the hyperedges native mj_island adds to the rows'):
a flex's stiffness or passive contacts; under the discrete integrator, tendon springs and
dampers, actuators whose force depends on the state, and passive flex contacts (`d.contact`
entries without rows). With sleep on, the discrete integrator and a coupling flex, native finds
islands even in a world without rows (`islands_without_rows`).

Every rule-derived support is cross-checked against the Jacobian (sparse: equal sets; dense:
Jacobian trees within the rule's trees), tendon and joint-equality rows against the model, and
any disagreement raises TraceError. Last, `check_partition` checks that the supports and the
rowless hyperedges give native's islands (their count, every tree's island, every row's), so
that no trace is written whose rows disagree with the native outputs recorded beside them.
"""

import numpy as np
import mujoco

C = mujoco.mjtConstraint
EQUALITY = int(C.mjCNSTR_EQUALITY)
FRICTION_DOF = int(C.mjCNSTR_FRICTION_DOF)
FRICTION_TENDON = int(C.mjCNSTR_FRICTION_TENDON)
LIMIT_JOINT = int(C.mjCNSTR_LIMIT_JOINT)
LIMIT_TENDON = int(C.mjCNSTR_LIMIT_TENDON)
CONTACTS = (
    int(C.mjCNSTR_CONTACT_FRICTIONLESS),
    int(C.mjCNSTR_CONTACT_PYRAMIDAL),
    int(C.mjCNSTR_CONTACT_ELLIPTIC),
)
EQ = mujoco.mjtEq
FLEX_EQ = (int(EQ.mjEQ_FLEX), int(EQ.mjEQ_FLEXVERT), int(EQ.mjEQ_FLEXSTRAIN))
# flex_edgeequality of a flex held by a strain equality (`<edge equality="strain"/>`).
STRAIN = 3
# edge_kind of a rowless hyperedge; its edge_id is the flex, tendon, actuator or contact index.
EDGE_FLEX, EDGE_TENDON, EDGE_ACTUATOR, EDGE_PASSIVE_CONTACT = 0, 1, 2, 3
# Gain and bias types whose force depends on the state in native's metric (probe fact 14).
STATE_GAINS = {int(mujoco.mjtGain.mjGAIN_AFFINE), int(mujoco.mjtGain.mjGAIN_MUSCLE),
               int(mujoco.mjtGain.mjGAIN_DCMOTOR), int(mujoco.mjtGain.mjGAIN_SO3)}
STATE_BIASES = {int(mujoco.mjtBias.mjBIAS_AFFINE), int(mujoco.mjtBias.mjBIAS_MUSCLE),
                int(mujoco.mjtBias.mjBIAS_DCMOTOR), int(mujoco.mjtBias.mjBIAS_SO3)}
# mjContact.exclude of a passive flex contact (in d.contact, without rows).
EXCLUDE_PASSIVE = 4


class TraceError(RuntimeError):
    """The recorded rows disagree with MuJoCo's rules: never write such a trace."""


class ModelInfo:
    """Static per-model lookups used for every step."""

    def __init__(self, m):
        self.m = m
        self.ntree, self.nv = int(m.ntree), int(m.nv)
        self.sparse = bool(mujoco.mj_isSparse(m))
        self.dof_treeid = np.asarray(m.dof_treeid, dtype=np.int64)
        body_tree = np.asarray(m.body_treeid, dtype=np.int64)
        self.geom_tree = body_tree[np.asarray(m.geom_bodyid)]
        self.jnt_tree = self.dof_treeid[np.asarray(m.jnt_dofadr)] if m.njnt else np.zeros(0, np.int64)
        # Connect/weld: the trees of the two objects' bodies (site semantics resolved).
        neq = int(m.neq)
        self.eq_type = np.asarray(m.eq_type, dtype=np.int64).reshape(neq)
        self.eq_trees = np.full((neq, 2), -1, dtype=np.int64)
        self.eq_flex = np.full(neq, -1, dtype=np.int64)
        self.eq_rule = np.zeros(neq, dtype=bool)
        for e in range(neq):
            t = self.eq_type[e]
            if t in (int(EQ.mjEQ_CONNECT), int(EQ.mjEQ_WELD)):
                b1, b2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
                if m.eq_objtype[e] == mujoco.mjtObj.mjOBJ_SITE:
                    b1, b2 = int(m.site_bodyid[b1]), int(m.site_bodyid[b2])
                self.eq_trees[e] = (body_tree[b1], body_tree[b2])
                self.eq_rule[e] = True
            elif t == int(EQ.mjEQ_JOINT):
                j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
                self.eq_trees[e] = (self.jnt_tree[j1], self.jnt_tree[j2] if j2 >= 0 else -1)
            elif t in FLEX_EQ:
                self.eq_flex[e] = int(m.eq_obj1id[e])
        self.eq_flexrow = np.isin(self.eq_type, FLEX_EQ)
        # Tendons: the trees they span, when the model lists all of them (treenum <= 2).
        self.tendon_trees = []
        for k in range(int(m.ntendon)):
            n = int(m.tendon_treenum[k])
            self.tendon_trees.append(
                set(int(t) for t in m.tendon_treeid[k][:n]) if n <= 2 else None
            )
        # Each flex's trees: its nodes' for an interpolated flex, else its vertices' (static
        # ones left out); what a coupling without rows joins, and what an interpolated side of
        # a contact may reach (which of them it does is in its row).
        nflex = int(m.nflex)
        self.flex_interp = np.asarray(m.flex_interp, dtype=bool).reshape(nflex)
        flex_trees = []
        for f in range(nflex):
            if self.flex_interp[f]:
                adr, num, bodies = m.flex_nodeadr[f], m.flex_nodenum[f], m.flex_nodebodyid
            else:
                adr, num, bodies = m.flex_vertadr[f], m.flex_vertnum[f], m.flex_vertbodyid
            trees = body_tree[np.asarray(bodies[adr : adr + num])]
            flex_trees.append(np.unique(trees[trees >= 0]))
        self.node_trees = [
            set(t.tolist()) if self.flex_interp[f] else set() for f, t in enumerate(flex_trees)
        ]
        # An elastic rod (dim 1, young > 0, two edges or more) twists its edges by hinges of
        # their own, named `<flex>_twist_<k>` for the k-th edge along the rod's chain (not its
        # edge id), the last `<flex>_twist`; an end edge between two pinned vertices has none.
        # MuJoCo binds them by these names, and takes them only where each is the one joint of a
        # body right under the world, without geoms or child bodies (a rope model attached into
        # a body, or twist bodies given a geom, leave the rod without twist hinges: its compiler
        # refuses a rod where only some qualify). Per (flex, edge), the twist hinge's tree; per
        # (flex, vertex), the chain edge leaving the vertex (the last edge at the last vertex).
        jnt_body = np.asarray(m.jnt_bodyid, dtype=np.int64)
        children = np.bincount(np.asarray(m.body_parentid, dtype=np.int64)[1:], minlength=m.nbody)

        def twist_hinge(j):
            b = int(jnt_body[j])
            return (
                m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
                and m.body_parentid[b] == 0
                and m.body_jntnum[b] == 1
                and m.body_geomnum[b] == 0
                and children[b] == 0
            )

        self.twist_tree, self.vert_edge = {}, {}
        for f in range(nflex):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_FLEX, f)
            elastic_rod = m.flex_dim[f] == 1 and m.flex_bendingadr[f] >= 0
            chain = rod_chain(m, f) if elastic_rod and name else None
            if chain is None:
                continue
            edges, vert_edge = chain
            hinges = {}
            for k, e in enumerate(edges):
                last = k == len(edges) - 1
                j = mujoco.mj_name2id(
                    m, mujoco.mjtObj.mjOBJ_JOINT, f"{name}_twist" if last else f"{name}_twist_{k}"
                )
                if j >= 0:
                    hinges[e] = j
            if hinges and all(twist_hinge(j) for j in hinges.values()):
                for e, j in hinges.items():
                    self.twist_tree[(f, e)] = int(body_tree[jnt_body[j]])
                for v, e in vert_edge.items():
                    self.vert_edge[(f, v)] = e
        # Flexes that couple their trees without rows (mj_island's rule, as native 4.0.0 shows it:
        # tools/probe_native_rules.py): deformable, and a rod with bending (its vertex trees and
        # its twist hinges' trees), or of dim >= 2 with bending, an elastic stiffness block with a
        # nonzero entry, or passive contacts (`<contact passive="true"/>`, whatever its
        # elasticity; MuJoCo ignores the flag on 1-D and rigid flexes). A flex held by a strain
        # equality (edgeequality 3) has a block filled for the equality, not for elasticity (the
        # two exclude each other): it couples only by its bending, the equality switched on or
        # off. A block is allocated but all zeros for a shell whose elasticity leaves both stretch
        # and bending out (`elastic2d` "none", the default): native does not couple it. Any entry
        # decides, not the first: a stretch-only shell's first is 0 and native couples it. The
        # spring and damper flags change nothing here.
        stiffness = np.asarray(m.flex_stiffness).reshape(-1)
        starts = sorted({int(a) for a in np.asarray(m.flex_stiffnessadr).reshape(-1) if a >= 0})
        self.flex_passive = np.asarray(m.flex_passive, dtype=bool).reshape(nflex)
        # With the ipc flag on, passive contacts are solved with rows and a passive flex without
        # elasticity couples nothing without rows.
        ipc = bool(m.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_IPC))
        passive_couples = self.flex_passive & (not ipc)
        self.flex_trees = []
        for f in range(nflex):
            if m.flex_rigid[f]:
                continue
            if m.flex_dim[f] == 1:
                if m.flex_bendingadr[f] >= 0:
                    twists = [t for (g, _), t in self.twist_tree.items() if g == f]
                    trees = np.union1d(flex_trees[f], np.asarray(twists, dtype=np.int64))
                    self.flex_trees.append((f, trees[trees >= 0]))
                continue
            begin = int(m.flex_stiffnessadr[f])
            end = next((a for a in starts if a > begin), stiffness.size)
            elastic = (
                begin >= 0
                and m.flex_edgeequality[f] != STRAIN
                and bool(np.any(stiffness[begin:end]))
            )
            if m.flex_bendingadr[f] < 0 and not elastic and not passive_couples[f]:
                continue
            self.flex_trees.append((f, flex_trees[f]))
        # Flex contacts: per flex, its vertices' trees (by global vertex).
        self.flex_vertadr = np.asarray(m.flex_vertadr, dtype=np.int64).reshape(nflex)
        self.flex_dim = np.asarray(m.flex_dim, dtype=np.int64).reshape(nflex)
        self.flex_elemdataadr = np.asarray(m.flex_elemdataadr, dtype=np.int64).reshape(nflex)
        self.flex_elem = np.asarray(m.flex_elem, dtype=np.int64).reshape(-1)
        self.flex_edgeadr = np.asarray(m.flex_edgeadr, dtype=np.int64).reshape(nflex)
        self.flex_edge = np.asarray(m.flex_edge, dtype=np.int64).reshape(-1, 2)
        self.flex_elemedgeadr = np.asarray(m.flex_elemedgeadr, dtype=np.int64).reshape(nflex)
        self.flex_elemedge = np.asarray(m.flex_elemedge, dtype=np.int64).reshape(-1)
        self.vert_tree = body_tree[np.asarray(m.flex_vertbodyid, dtype=np.int64).reshape(-1)]
        self.discrete_trees = discrete_couplings(m, self.dof_treeid, body_tree, self.jnt_tree)
        self.islands_without_rows = islands_without_rows(m, self.flex_trees)

    def contact_trees(self, d, con):
        """Contact `con`'s trees by its structure on its sides that are not interpolated flexes
        (geom body, flex vertex, flex element vertices, a rod's twist hinge), and the node trees
        of its interpolated sides (the ones its row may also reach), both without static trees.

        On a rod with twist hinges a contact acts on an edge: an element's, or at vertex v the
        chain edge leaving it (the last edge at the last vertex), pinned or not; the edge's two
        vertex trees and its hinge's tree."""
        c = d.contact[con]
        named, nodes = set(), set()
        for k in range(2):
            f = int(c.flex[k])
            if f < 0:
                named.add(int(self.geom_tree[int(c.geom[k])]))
            elif self.flex_interp[f]:
                nodes |= self.node_trees[f]
            elif int(c.elem[k]) >= 0:
                n = int(self.flex_dim[f]) + 1
                at = int(self.flex_elemdataadr[f]) + int(c.elem[k]) * n
                verts = self.flex_elem[at : at + n] + self.flex_vertadr[f]
                named.update(self.vert_tree[verts].tolist())
                if n == 2:
                    edge = int(self.flex_elemedge[self.flex_elemedgeadr[f] + int(c.elem[k])])
                    named.add(self.twist_tree.get((f, edge), -1))
            elif (f, int(c.vert[k])) in self.vert_edge:
                edge = self.vert_edge[(f, int(c.vert[k]))]
                verts = self.flex_edge[self.flex_edgeadr[f] + edge] + self.flex_vertadr[f]
                named.update(self.vert_tree[verts].tolist())
                named.add(self.twist_tree.get((f, edge), -1))
            else:
                named.add(int(self.vert_tree[self.flex_vertadr[f] + int(c.vert[k])]))
        return named - {-1}, nodes - {-1}


def discrete_integrator(m):
    """Whether the discrete integrator's effective metric M + hD + h^2K is in use: integrator
    "discrete" with a primal solver (PGS leaves the metric out)."""
    return (
        m.opt.integrator == mujoco.mjtIntegrator.mjINT_DISCRETE
        and m.opt.solver != mujoco.mjtSolver.mjSOL_PGS
    )


def discrete_couplings(m, dof_tree, body_tree, jnt_tree):
    """(kind, id, trees) of every tendon and actuator whose terms in the discrete integrator's
    effective metric couple two trees or more without rows (static trees left out); none under
    another integrator.

    A tendon with stiffness (spring flag on) or damping (damper flag on), any polynomial
    coefficient, couples the trees of its Jacobian's structure (ten_J); its armature does not
    couple. An actuator whose gain or bias depends on the state (affine, muscle, dcmotor or so3,
    STATE_GAINS and STATE_BIASES; not user types; actuation flag on; its activation, control,
    saturation, sign and group do not matter) or that has damping or
    armature (damper flag on) couples its transmission's trees by the model: a joint's, a
    tendon's structure, a site's and its refsite's bodies, a slider-crank's two sites' bodies (not
    the moment's runtime structure, which drops a tree whose moment is zero). Body transmissions
    couple nothing (where one would span trees native stops: "MakeMetricLower: metric rank-1 term
    spans islands")."""
    if not discrete_integrator(m):
        return []
    disabled = int(m.opt.disableflags)
    spring = not disabled & int(mujoco.mjtDisableBit.mjDSBL_SPRING)
    damper = not disabled & int(mujoco.mjtDisableBit.mjDSBL_DAMPER)
    actuation = not disabled & int(mujoco.mjtDisableBit.mjDSBL_ACTUATION)

    def tendon_trees(k):
        a, n = int(m.ten_J_rowadr[k]), int(m.ten_J_rownnz[k])
        return dof_tree[np.asarray(m.ten_J_colind[a : a + n], dtype=np.int64)]

    out = []
    for k in range(int(m.ntendon)):
        stiff = np.any(m.tendon_stiffness[k]) or np.any(m.tendon_stiffnesspoly[k])
        damped = np.any(m.tendon_damping[k]) or np.any(m.tendon_dampingpoly[k])
        if (spring and stiff) or (damper and damped):
            out.append((EDGE_TENDON, k, tendon_trees(k)))
    T = mujoco.mjtTrn
    sites = (int(T.mjTRN_SITE), int(T.mjTRN_SO3), int(T.mjTRN_SLIDERCRANK))
    for i in range(int(m.nactuator)):
        # Native's list of state-dependent types; user gain and bias types are not in it, even
        # with callbacks whose force depends on the state (a pid gain comes with an affine bias).
        state = (
            int(m.actuator_gaintype[i]) in STATE_GAINS
            or int(m.actuator_biastype[i]) in STATE_BIASES
        )
        passive = (
            np.any(m.actuator_damping[i]) or np.any(m.actuator_dampingpoly[i])
            or np.any(m.actuator_armature[i])
        )
        if not ((actuation and state) or (damper and passive)):
            continue
        trn, ids = int(m.actuator_trntype[i]), [int(x) for x in m.actuator_trnid[i]]
        if trn in (int(T.mjTRN_JOINT), int(T.mjTRN_JOINTINPARENT)):
            trees = jnt_tree[ids[:1]]
        elif trn == int(T.mjTRN_TENDON):
            trees = tendon_trees(ids[0])
        elif trn in sites:
            trees = body_tree[np.asarray(m.site_bodyid)[[x for x in ids if x >= 0]]]
        else:
            continue
        out.append((EDGE_ACTUATOR, i, trees))
    out = [(kind, i, np.unique(trees[trees >= 0])) for kind, i, trees in out]
    return [(kind, i, trees) for kind, i, trees in out if trees.size >= 2]


def islands_without_rows(m, flex_trees):
    """Whether native mj_island finds islands in a world without rows (it returns early in one
    otherwise): with sleep on, the discrete integrator and a coupling flex with a tree of its own
    (a flex in one tree will do, one all pinned will not), whatever the state (the flex may sleep,
    the spring and damper flags be off). Such a world's islands are then its rowless
    hyperedges' components."""
    sleep = bool(m.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_SLEEP))
    return sleep and discrete_integrator(m) and any(trees.size for _, trees in flex_trees)


def rod_chain(m, f):
    """A 1-D flex's edges in chain order, and per local vertex the chain edge leaving it (the
    last vertex: the last edge); None unless its elements form one open chain of two edges or
    more. The chain starts at the first element's first vertex if that ends the chain, else at
    the end of smaller index (native 4.0.0's order, over relabelled and reordered raw rods)."""
    nelem = int(m.flex_elemnum[f])
    if nelem < 2:
        return None
    adr = int(m.flex_elemdataadr[f])
    elems = np.asarray(m.flex_elem[adr : adr + 2 * nelem], dtype=np.int64).reshape(nelem, 2)
    eadr = int(m.flex_elemedgeadr[f])
    elem_edge = np.asarray(m.flex_elemedge[eadr : eadr + nelem], dtype=np.int64)
    degree = np.bincount(elems.reshape(-1), minlength=int(m.flex_vertnum[f]))
    ends = np.flatnonzero(degree == 1)
    if len(ends) != 2 or degree.max() > 2:
        return None
    v = int(elems[0, 0]) if degree[elems[0, 0]] == 1 else int(ends[0])
    touching = {}
    for i, (a, b) in enumerate(elems.tolist()):
        touching.setdefault(a, []).append((b, i))
        touching.setdefault(b, []).append((a, i))
    edges, vert_edge, used = [], {}, set()
    while step := next(((w, i) for w, i in touching[v] if i not in used), None):
        w, i = step
        used.add(i)
        edges.append(int(elem_edge[i]))
        vert_edge[v] = edges[-1]
        v = w
    if len(edges) != nelem:
        return None
    vert_edge[v] = edges[-1]
    return edges, vert_edge


def jacobian_pairs(info, d, nefc):
    """(row, tree) pairs of every row's Jacobian, as encoded keys row * ntree + tree, unique."""
    ntree = info.ntree
    if nefc == 0:
        return np.zeros(0, dtype=np.int64)
    if info.sparse:
        rownnz = np.asarray(d.efc_J_rownnz[:nefc], dtype=np.int64)
        rowadr = np.asarray(d.efc_J_rowadr[:nefc], dtype=np.int64)
        rows = np.repeat(np.arange(nefc), rownnz)
        starts = np.repeat(rowadr, rownnz)
        within = np.arange(rows.size) - np.repeat(np.cumsum(rownnz) - rownnz, rownnz)
        cols = np.asarray(d.efc_J_colind, dtype=np.int64)[starts + within]
    else:
        J = np.asarray(d.efc_J[: nefc * info.nv]).reshape(nefc, info.nv)
        rows, cols = np.nonzero(J)
    return np.unique(rows.astype(np.int64) * ntree + info.dof_treeid[cols])


def contact_keys(d):
    """Per contact: geom pair, flex pair, and collision id (its index among the earlier contacts
    of the same geom/flex pair in d.contact order)."""
    ncon = int(d.ncon)
    geom = np.asarray(d.contact.geom[:ncon], dtype=np.int64).reshape(ncon, 2)
    flex = np.asarray(d.contact.flex[:ncon], dtype=np.int64).reshape(ncon, 2)
    colid = np.zeros(ncon, dtype=np.int64)
    if ncon:
        key = np.concatenate([geom, flex], axis=1)
        _, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        order = np.argsort(inv, kind="stable")
        sorted_inv = inv[order]
        first = np.r_[0, np.nonzero(np.diff(sorted_inv))[0] + 1]
        group_start = np.repeat(first, np.diff(np.r_[first, ncon]))
        colid[order] = np.arange(ncon) - group_start
    return geom, flex, colid


def extract_rows(info, d):
    """Rows of the current state: dict of per-row arrays and CSR supports (ascending trees)."""
    ntree = info.ntree
    nefc = int(d.nefc)
    types = np.asarray(d.efc_type[:nefc], dtype=np.int64)
    ids = np.asarray(d.efc_id[:nefc], dtype=np.int64)
    geom, flex, colid = contact_keys(d)

    is_contact = np.isin(types, CONTACTS)
    is_eq = types == EQUALITY
    row_geom = np.full((nefc, 2), -1, dtype=np.int64)
    row_flex = np.full((nefc, 2), -1, dtype=np.int64)
    row_colid = np.full(nefc, -1, dtype=np.int64)
    row_geom[is_contact] = geom[ids[is_contact]]
    row_flex[is_contact] = flex[ids[is_contact]]
    row_colid[is_contact] = colid[ids[is_contact]]

    # Static source of each row: equality id, dof id, tendon id; -1 for dynamic rows.
    row_source = np.where(is_eq | (types == FRICTION_DOF) | (types == FRICTION_TENDON), ids, -1)

    # Run starts: a row continues its predecessor's constraint when (type, id) repeat, except
    # for flex equalities.
    same = np.zeros(nefc, dtype=bool)
    if nefc > 1:
        same[1:] = (types[1:] == types[:-1]) & (ids[1:] == ids[:-1])
    flexrow = is_eq & info.eq_flexrow[np.where(is_eq, ids, 0)] if info.eq_type.size else np.zeros(nefc, bool)
    same &= ~flexrow
    run_start = np.where(same, -1, np.arange(nefc))
    run_start = np.maximum.accumulate(run_start) if nefc else run_start

    # Rule trees (two per row, -1 = none) and which rows use the rule.
    rule = np.full((nefc, 2), -1, dtype=np.int64)
    use_rule = np.zeros(nefc, dtype=bool)
    m = types == FRICTION_DOF
    rule[m, 0] = info.dof_treeid[ids[m]]
    use_rule |= m
    m = types == LIMIT_JOINT
    rule[m, 0] = info.jnt_tree[ids[m]]
    use_rule |= m
    m = is_contact & (row_geom[:, 0] >= 0) & (row_geom[:, 1] >= 0)
    rule[m] = info.geom_tree[row_geom[m]]
    use_rule |= m
    if info.eq_type.size:
        m = is_eq & info.eq_rule[np.where(is_eq, ids, 0)]
        rule[m] = info.eq_trees[ids[m]]
        use_rule |= m

    jac = jacobian_pairs(info, d, nefc)
    jac_row, jac_tree = jac // ntree, jac % ntree

    # Cross-check rule trees against the Jacobian.
    rr = np.repeat(np.arange(nefc), 2)[(rule.reshape(-1) >= 0) & np.repeat(use_rule, 2)]
    rt = rule.reshape(-1)[(rule.reshape(-1) >= 0) & np.repeat(use_rule, 2)]
    rule_pairs = np.unique(rr * ntree + rt)
    if np.any(use_rule & (rule.max(axis=1) < 0)):
        bad = int(np.nonzero(use_rule & (rule.max(axis=1) < 0))[0][0])
        raise TraceError(f"row {bad} (type {types[bad]}, id {ids[bad]}) is between two static bodies")
    jac_ruled = jac[use_rule[jac_row]]
    extra = np.setdiff1d(jac_ruled, rule_pairs)
    if extra.size:
        r = int(extra[0] // ntree)
        raise TraceError(
            f"row {r} (type {types[r]}, id {ids[r]}): Jacobian tree {extra[0] % ntree} outside the "
            f"type rule's trees {sorted(set(rule[r]) - {-1})}"
        )
    if info.sparse:
        missing = np.setdiff1d(rule_pairs, jac_ruled)
        if missing.size:
            r = int(missing[0] // ntree)
            raise TraceError(
                f"row {r} (type {types[r]}, id {ids[r]}): sparse Jacobian lacks rule tree "
                f"{missing[0] % ntree}"
            )

    # Generic rows: Jacobian trees of the run's first row; model cross-checks.
    generic = ~use_rule
    gen_src = run_start[generic]
    src_mask = np.zeros(nefc, dtype=bool)
    src_mask[gen_src] = True
    sel = src_mask[jac_row] & generic[jac_row]
    by_src = {}
    for r, t in zip(jac_row[sel].tolist(), jac_tree[sel].tolist()):
        by_src.setdefault(r, []).append(t)
    for r in np.unique(gen_src).tolist():
        if is_contact[r]:
            by_src[r] = flex_contact_support(info, d, r, int(ids[r]), by_src.get(r, []))
        trees = by_src.get(r)
        if not trees:
            raise TraceError(f"row {r} (type {types[r]}, id {ids[r]}): no tree in its Jacobian")
        t, i = int(types[r]), int(ids[r])
        allowed = None
        if t in (FRICTION_TENDON, LIMIT_TENDON) or (t == EQUALITY and info.eq_type[i] == int(EQ.mjEQ_TENDON)):
            tendons = [i] if t != EQUALITY else [k for k in (info.m.eq_obj1id[i], info.m.eq_obj2id[i]) if k >= 0]
            sets = [info.tendon_trees[k] for k in tendons]
            if all(s is not None for s in sets):
                allowed = set().union(*sets)
        elif t == EQUALITY and info.eq_type[i] == int(EQ.mjEQ_JOINT):
            allowed = set(int(x) for x in info.eq_trees[i] if x >= 0)
        if allowed is not None and not set(trees) <= allowed:
            raise TraceError(
                f"row {r} (type {t}, id {i}): Jacobian trees {sorted(set(trees))} outside the "
                f"model's {sorted(allowed)}"
            )

    # Assemble supports: (row, tree) pairs, unique and ascending per row.
    pairs = [rule_pairs[use_rule[rule_pairs // ntree]]]
    gen_rows = np.nonzero(generic)[0]
    if gen_rows.size:
        parts_r, parts_t = [], []
        for r in gen_rows.tolist():
            trees = by_src[int(run_start[r])]
            parts_r.append(np.full(len(trees), r, dtype=np.int64))
            parts_t.append(np.asarray(trees, dtype=np.int64))
        pairs.append(np.concatenate(parts_r) * ntree + np.concatenate(parts_t))
    # Rule rows continuing a run take the run's first row's trees (identical by construction:
    # same type and id).
    allp = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, np.int64)
    prow, ptree = allp // ntree, allp % ntree
    counts = np.bincount(prow, minlength=nefc) if nefc else np.zeros(0, np.int64)
    if nefc and counts.min() == 0:
        r = int(np.argmin(counts))
        raise TraceError(f"row {r} (type {types[r]}, id {ids[r]}) has an empty support")
    supadr = np.r_[0, np.cumsum(counts)]
    return dict(
        type=types,
        id=ids,
        source=row_source,
        geom=row_geom,
        flex=row_flex,
        colid=row_colid,
        supadr=supadr,
        support=ptree,
    )


def flex_contact_support(info, d, r, con, jac_trees):
    """Row r's support, the first row of flex contact `con` whose Jacobian reaches `jac_trees`:
    sparse, the structure (which must name every tree the contact's sides name); dense, the
    row's trees and the named ones. Either way within the named and the interpolated sides'
    node trees."""
    named, nodes = info.contact_trees(d, con)
    trees = set(jac_trees)
    if not trees <= named | nodes:
        raise TraceError(
            f"row {r} (contact {con}): Jacobian trees {sorted(trees)} outside the contact's "
            f"{sorted(named | nodes)}"
        )
    if info.sparse and not named <= trees:
        raise TraceError(
            f"row {r} (contact {con}): sparse Jacobian lacks the contact's trees "
            f"{sorted(named - trees)}"
        )
    return sorted(trees | named)


def check_partition(info, rows, edges, native):
    """Raises TraceError unless the rows' supports and the rowless hyperedges give native's
    islands: their count, each tree's island (numbered by smallest tree) and each row's (its
    first tree's). A world without rows has none unless the model finds islands without rows,
    and then those of its hyperedges."""
    ntree, nrow = info.ntree, rows["type"].size
    supadr, support = rows["supadr"].tolist(), rows["support"].tolist()
    groups = [support[supadr[r] : supadr[r + 1]] for r in range(nrow)]
    if nrow or info.islands_without_rows:
        groups += [trees.tolist() for _, _, trees in edges]
    island = components(ntree, groups)
    nisland = int(island.max()) + 1 if ntree else 0
    if nisland != native["nisland"]:
        raise TraceError(
            f"native found {native['nisland']} islands where the {nrow} rows' supports and "
            f"{len(edges)} rowless hyperedges give {nisland}"
            + ("" if nrow or info.islands_without_rows else
               " (a world without rows has islands only with sleep on, the discrete integrator "
               "and a coupling flex)")
        )
    if nisland == 0:
        return
    first = np.asarray([support[supadr[r]] for r in range(nrow)], dtype=np.int64)
    for name, got in (("tree_island", island), ("efc_island", island[first])):
        want = native[name]
        if not np.array_equal(got, want):
            at = int(np.nonzero(got != want)[0][0])
            raise TraceError(
                f"the rows' supports and rowless hyperedges give {name}[{at}] = {got[at]}, native "
                f"{want[at]}: a row's support or a coupling without rows is derived otherwise "
                "than native mj_island derives it"
            )


def components(ntree, groups):
    """Island of each tree (-1 for trees in no group) by union of the groups of trees, islands
    numbered in order of their smallest tree, as native numbers them."""
    parent = list(range(ntree))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    touched = np.zeros(ntree, dtype=bool)
    for trees in groups:
        touched[trees] = True
        a = find(trees[0])
        for t in trees[1:]:
            b = find(t)
            if a != b:
                parent[max(a, b)] = min(a, b)
                a = min(a, b)
    island = np.full(ntree, -1, dtype=np.int64)
    label = {}
    for t in np.nonzero(touched)[0].tolist():
        island[t] = label.setdefault(find(t), len(label))
    return island


def rowless_edges(info, d):
    """Rowless hyperedges of the current state, (kind, id, awake trees), in the format's order:
    coupling flexes by id (awake vertex or node trees, an elastic rod's awake twist-hinge trees
    with them), discrete-integrator tendons and actuators by id, passive flex contacts by index.

    Native mj_island joins only awake trees, each flex's as a star around its first one, so a
    coupling with fewer than two awake trees adds nothing at all (not even a one-tree island):
    only those with at least two are recorded."""
    awake = np.asarray(d.tree_awake, dtype=bool)
    edges = [(EDGE_FLEX, f, trees) for f, trees in info.flex_trees]
    edges += info.discrete_trees
    edges += passive_contact_edges(info, d)
    out = []
    for kind, i, trees in edges:
        live = trees[awake[trees]]
        if live.size >= 2:
            out.append((kind, i, live))
    return out


def passive_contact_edges(info, d):
    """(EDGE_PASSIVE_CONTACT, contact index, trees) of each passive flex contact: one native
    marks passive (`exclude` 4; it has no rows): of a 2-D or 3-D passive flex with a flex or
    static geometry (one with a body that can move gets rows from the constraint solver), not all
    pinned against a flex that is not passive. Native joins the trees of its sides as a contact
    row would (`ModelInfo.contact_trees`), whatever its distance (one in the gap included)."""
    if not info.flex_passive.any():
        return []
    out = []
    for c in range(int(d.ncon)):
        con = d.contact[c]
        # Native's own mark, not the flag: a 1-D or rigid flex keeps flex_passive but gets rows
        # (its gap contacts are exclude 1), as does a passive flex whose vertices are all pinned
        # against a flex that is not passive.
        if int(con.exclude) != EXCLUDE_PASSIVE:
            continue
        if con.efc_address >= 0:
            raise TraceError(f"contact {c}: marked passive (exclude 4) but has rows")
        named, nodes = info.contact_trees(d, c)
        out.append((EDGE_PASSIVE_CONTACT, c, np.asarray(sorted(named | nodes), dtype=np.int64)))
    return out


ISLAND_FIELDS = (
    "island_ntree", "island_itreeadr", "island_nv", "island_idofadr", "island_dofadr",
    "island_ne", "island_nf", "island_nefc", "island_iefcadr",
)
TREE_FIELDS = ("tree_island", "map_itree2tree")
DOF_FIELDS = ("dof_island", "map_dof2idof", "map_idof2dof")
ROW_FIELDS = ("efc_island", "map_efc2iefc", "map_iefc2efc")


def native_islands(info, d):
    """Native outputs of the current mj_island result; arrays only when nisland > 0."""
    n = int(d.nisland)
    out = dict(nisland=n, nidof=int(d.nidof))
    if n > 0:
        nefc = int(d.nefc)
        for f in ISLAND_FIELDS:
            out[f] = np.array(getattr(d, f)[:n], dtype=np.int32)
        for f in TREE_FIELDS:
            out[f] = np.array(getattr(d, f)[: info.ntree], dtype=np.int32)
        for f in DOF_FIELDS:
            out[f] = np.array(getattr(d, f)[: info.nv], dtype=np.int32)
        for f in ROW_FIELDS:
            out[f] = np.array(getattr(d, f)[:nefc], dtype=np.int32)
    return out


def same_islands(a, b):
    if a["nisland"] != b["nisland"] or a["nidof"] != b["nidof"]:
        return False
    return all(np.array_equal(a[k], b[k]) for k in a if k not in ("nisland", "nidof"))
