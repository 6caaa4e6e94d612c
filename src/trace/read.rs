//! Decoding and validation: every array's presence, type and shape, every offset array, every id
//! range. Nothing is trusted before it is checked, so later accessors can index freely.

use super::npz::{self, Array, Arrays, Data};
use super::{Counts, ISLAND_FIELDS, Jacobian, Native, SCHEMA_VERSION, Trace};
use crate::error::Error;
use crate::model::Model;
use crate::rows::{EdgeKind, RowType};

type R<T> = Result<T, String>;

pub(super) fn from_bytes(bytes: &[u8], path: &str) -> crate::Result<Trace> {
    let fail = |detail: String| Error::Trace {
        path: path.to_string(),
        detail,
    };
    let mut arrays = npz::read(bytes).map_err(fail)?;
    decode(&mut arrays, path).map_err(fail)
}

/// Takes a named array out of the archive.
fn take(a: &mut Arrays, name: &str) -> R<Array> {
    a.remove(name)
        .ok_or_else(|| format!("missing array `{name}`"))
}

/// Takes a named array out of the archive and checks its shape.
fn shaped(a: &mut Arrays, name: &str, shape: &[usize]) -> R<Array> {
    let arr = take(a, name)?;
    if arr.shape != shape {
        return Err(format!(
            "`{name}` has shape {:?}, expected {shape:?}",
            arr.shape
        ));
    }
    Ok(arr)
}

fn i32s(a: &mut Arrays, name: &str, shape: &[usize]) -> R<Vec<i32>> {
    match shaped(a, name, shape)?.data {
        Data::I32(v) => Ok(v),
        Data::U8(_) => Err(format!("`{name}` is uint8, expected int32")),
    }
}

fn u8s(a: &mut Arrays, name: &str, shape: &[usize]) -> R<Vec<u8>> {
    match shaped(a, name, shape)?.data {
        Data::U8(v) => Ok(v),
        Data::I32(_) => Err(format!("`{name}` is int32, expected uint8")),
    }
}

fn text(a: &mut Arrays, name: &str) -> R<String> {
    let len = a
        .get(name)
        .map_or(0, |x| x.shape.first().copied().unwrap_or(0));
    String::from_utf8(u8s(a, name, &[len])?).map_err(|_| format!("`{name}` is not UTF-8"))
}

/// `n` uint8 codes of `what` (a type, a kind), each decoded by `from_code`.
fn codes<T>(
    a: &mut Arrays,
    name: &str,
    n: usize,
    what: &str,
    from_code: fn(i32) -> Option<T>,
) -> R<Vec<T>> {
    let v = u8s(a, name, &[n])?;
    (v.iter().enumerate())
        .map(|(i, &c)| {
            from_code(c as i32).ok_or(format!("`{name}`[{i}] = {c} is not a {what} code"))
        })
        .collect()
}

/// A non-negative int32 scalar.
fn count(a: &mut Arrays, name: &str) -> R<usize> {
    let v = i32s(a, name, &[])?[0];
    usize::try_from(v).map_err(|_| format!("`{name}` = {v} is negative"))
}

/// An array that traces from before it was added lack: `None` when absent.
fn optional<T>(a: &mut Arrays, name: &str, read: impl FnOnce(&mut Arrays) -> R<T>) -> R<Option<T>> {
    if a.contains_key(name) {
        read(a).map(Some)
    } else {
        Ok(None)
    }
}

/// Offsets: `n + 1` entries from 0, non-decreasing, ending at `len`; returned as u32.
fn offsets(a: &mut Arrays, name: &str, n: usize, len: usize) -> R<Vec<u32>> {
    let v = i32s(a, name, &[n + 1])?;
    if v[0] != 0 {
        return Err(format!("`{name}` starts at {}, not 0", v[0]));
    }
    if let Some(i) = v.windows(2).position(|p| p[1] < p[0]) {
        return Err(format!("`{name}` decreases at {}", i + 1));
    }
    if v[n] as usize != len {
        return Err(format!(
            "`{name}` ends at {} but indexes {len} entries",
            v[n]
        ));
    }
    Ok(v.into_iter().map(|x| x as u32).collect())
}

/// Offsets whose final length is whatever they end at (the indexed array is read next).
fn open_offsets(a: &mut Arrays, name: &str, n: usize) -> R<(Vec<u32>, usize)> {
    let end = a
        .get(name)
        .and_then(|x| match &x.data {
            Data::I32(v) => v.last().copied(),
            Data::U8(_) => None,
        })
        .unwrap_or(0)
        .max(0) as usize;
    Ok((offsets(a, name, n, end)?, end))
}

fn in_range(name: &str, v: &[i32], lo: i32, hi: usize) -> R<()> {
    match v.iter().position(|&x| x < lo || x as i64 >= hi as i64) {
        Some(i) => Err(format!("`{name}`[{i}] = {} outside {lo}..{hi}", v[i])),
        None => Ok(()),
    }
}

fn flags(name: &str, v: &[u8]) -> R<()> {
    match v.iter().position(|&x| x > 1) {
        Some(i) => Err(format!("`{name}`[{i}] = {} is not 0 or 1", v[i])),
        None => Ok(()),
    }
}

/// Reads and checks every array of the archive: the header, the model, the rows, the rowless
/// hyperedges, the events and native's outputs; an array left over is an error.
fn decode(a: &mut Arrays, path: &str) -> R<Trace> {
    let version = i32s(a, "schema_version", &[])?[0];
    if version != SCHEMA_VERSION {
        return Err(format!(
            "schema version {version}, this reader understands {SCHEMA_VERSION}"
        ));
    }
    let scene = text(a, "scene")?;
    let meta = text(a, "meta")?;
    let jacobian = match i32s(a, "jacobian", &[])?[0] {
        0 => Jacobian::Dense,
        1 => Jacobian::Sparse,
        j => {
            return Err(format!(
                "`jacobian` = {j} is neither 0 (dense) nor 1 (sparse)"
            ));
        }
    };
    let (ntree, nv) = (count(a, "ntree")?, count(a, "nv")?);
    let counts = counts(a)?;
    let without_rows = islands_without_rows(a)?;
    nonempty(&counts)?;
    let model = Model::from_parts(
        i32s(a, "tree_dofadr", &[ntree])?,
        i32s(a, "tree_dofnum", &[ntree])?,
        i32s(a, "dof_treeid", &[nv])?,
    )
    .map_err(|e| e.to_string())?
    .with_islands_without_rows(without_rows);
    let neq = counts.neq;
    let eq_type = i32s(a, "eq_type", &[neq])?;
    let eq_flex = i32s(a, "eq_flex", &[neq])?;
    in_range("eq_flex", &eq_flex, -1, counts.nflex)?;
    let step_index = i32s(a, "step_index", &[counts.nstep])?;
    let nslot = counts
        .nstep
        .checked_mul(counts.nworld)
        .ok_or("nstep × nworld overflows")?;
    let rows = Rows::read(a, nslot, &counts, &model)?;
    let edges = Edges::read(a, nslot, &counts, ntree)?;
    let tree_awake = u8s(a, "tree_awake", &[nslot, ntree])?;
    flags("tree_awake", &tree_awake)?;
    let eq_active = u8s(a, "eq_active", &[nslot, neq])?;
    flags("eq_active", &eq_active)?;
    let native = native(a, nslot, &model, rows.row_type.len(), &rows.slot_rowadr)?;
    if let Some(name) = a.keys().next() {
        return Err(format!("unknown array `{name}`"));
    }
    Ok(Trace {
        path: path.to_string(),
        scene,
        meta,
        jacobian,
        model,
        counts,
        eq_type,
        eq_flex,
        step_index,
        rows,
        edges,
        tree_awake,
        eq_active,
        native,
    })
}

/// The model-level counts.
fn counts(a: &mut Arrays) -> R<Counts> {
    let counts = Counts {
        nworld: count(a, "nworld")?,
        nstep: count(a, "nstep")?,
        njnt: count(a, "njnt")?,
        ntendon: count(a, "ntendon")?,
        neq: count(a, "neq")?,
        nflex: count(a, "nflex")?,
        nactuator: optional(a, "nactuator", |a| count(a, "nactuator"))?.unwrap_or(0),
    };
    Ok(counts)
}

/// A trace of no world or no step would check nothing and pass: refused.
fn nonempty(counts: &Counts) -> R<()> {
    if counts.nworld == 0 {
        return Err("`nworld` is 0".into());
    }
    if counts.nstep == 0 {
        return Err("`nstep` is 0: a trace records at least one step".into());
    }
    Ok(())
}

/// Whether native found islands without rows (absent before it was recorded: no).
fn islands_without_rows(a: &mut Arrays) -> R<bool> {
    let flag = optional(a, "islands_without_rows", |a| {
        i32s(a, "islands_without_rows", &[])
    })?;
    match flag.map_or(0, |v| v[0]) {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(format!("`islands_without_rows` = {v} is not 0 or 1")),
    }
}

/// Every slot's constraint rows, as the trace's arrays of the same names.
#[derive(Debug, Clone)]
pub(crate) struct Rows {
    pub(crate) slot_rowadr: Vec<u32>,
    pub(crate) row_type: Vec<RowType>,
    pub(crate) row_id: Vec<i32>,
    pub(crate) row_source: Vec<i32>,
    pub(crate) row_geom: Vec<[i32; 2]>,
    pub(crate) row_flex: Vec<[i32; 2]>,
    pub(crate) row_colid: Vec<i32>,
    pub(crate) row_supadr: Vec<u32>,
    pub(crate) row_support: Vec<i32>,
}

impl Rows {
    fn read(a: &mut Arrays, nslot: usize, counts: &Counts, model: &Model) -> R<Rows> {
        let (slot_rowadr, nrow) = open_offsets(a, "slot_rowadr", nslot)?;
        let row_type = codes(a, "row_type", nrow, "type", RowType::from_code)?;
        let pairs =
            |v: Vec<i32>| -> Vec<[i32; 2]> { v.chunks_exact(2).map(|p| [p[0], p[1]]).collect() };
        let row_id = i32s(a, "row_id", &[nrow])?;
        let row_source = i32s(a, "row_source", &[nrow])?;
        let row_geom = pairs(i32s(a, "row_geom", &[nrow, 2])?);
        let row_flex = pairs(i32s(a, "row_flex", &[nrow, 2])?);
        let row_colid = i32s(a, "row_colid", &[nrow])?;
        let (row_supadr, nsup) = open_offsets(a, "row_supadr", nrow)?;
        let row_support = i32s(a, "row_support", &[nsup])?;
        let rows = Rows {
            slot_rowadr,
            row_type,
            row_id,
            row_source,
            row_geom,
            row_flex,
            row_colid,
            row_supadr,
            row_support,
        };
        (0..nrow).try_for_each(|r| rows.check(r, counts, model))?;
        Ok(rows)
    }

    /// Row `r`'s id within its kind's range, its source (its id for a static kind, −1 for a
    /// dynamic one), its contact data as its type has them, and its support.
    fn check(&self, r: usize, counts: &Counts, model: &Model) -> R<()> {
        let (t, id) = (self.row_type[r], self.row_id[r]);
        let limit = match t {
            RowType::Equality => counts.neq,
            RowType::FrictionDof => model.nv(),
            RowType::FrictionTendon | RowType::LimitTendon => counts.ntendon,
            RowType::LimitJoint => counts.njnt,
            _ => i32::MAX as usize,
        };
        if id < 0 || id as usize >= limit {
            return Err(format!("row {r} ({t:?}): id {id} outside 0..{limit}"));
        }
        let static_row = matches!(
            t,
            RowType::Equality | RowType::FrictionDof | RowType::FrictionTendon
        );
        let want = if static_row { id } else { -1 };
        if self.row_source[r] != want {
            return Err(format!(
                "row {r} ({t:?}): source {} but expected {want}",
                self.row_source[r]
            ));
        }
        let (geom, flex, colid) = (self.row_geom[r], self.row_flex[r], self.row_colid[r]);
        let contact = t.is_contact();
        let sides = if contact {
            contact_sides(geom, flex)
        } else {
            geom == [-1, -1] && flex == [-1, -1]
        };
        if !sides || (colid < 0) == contact {
            return Err(format!(
                "row {r} ({t:?}): contact data geom {geom:?} flex {flex:?} colid {colid} inconsistent with its type"
            ));
        }
        let sup = &self.row_support[self.row_supadr[r] as usize..self.row_supadr[r + 1] as usize];
        check_support("row", r, sup, model.ntree(), 1)
    }
}

/// Every slot's rowless hyperedges, as the trace's arrays of the same names.
#[derive(Debug, Clone)]
pub(crate) struct Edges {
    pub(crate) slot_edgeadr: Vec<u32>,
    pub(crate) edge_kind: Vec<EdgeKind>,
    pub(crate) edge_id: Vec<i32>,
    pub(crate) edge_supadr: Vec<u32>,
    pub(crate) edge_support: Vec<i32>,
}

impl Edges {
    fn read(a: &mut Arrays, nslot: usize, counts: &Counts, ntree: usize) -> R<Edges> {
        let (slot_edgeadr, nedge) = open_offsets(a, "slot_edgeadr", nslot)?;
        // Before `edge_kind` every rowless hyperedge was a flex's.
        let kinds = |a: &mut Arrays| codes(a, "edge_kind", nedge, "kind", EdgeKind::from_code);
        let edge_kind =
            optional(a, "edge_kind", kinds)?.unwrap_or_else(|| vec![EdgeKind::Flex; nedge]);
        let edge_id = i32s(a, "edge_id", &[nedge])?;
        for (e, (&kind, &id)) in edge_kind.iter().zip(&edge_id).enumerate() {
            let limit = match kind {
                EdgeKind::Flex => counts.nflex,
                EdgeKind::Tendon => counts.ntendon,
                EdgeKind::Actuator => counts.nactuator,
                EdgeKind::PassiveContact => i32::MAX as usize,
            };
            if id < 0 || id as usize >= limit {
                return Err(format!(
                    "rowless hyperedge {e} ({kind:?}): id {id} outside 0..{limit}"
                ));
            }
        }
        let (edge_supadr, nesup) = open_offsets(a, "edge_supadr", nedge)?;
        let edge_support = i32s(a, "edge_support", &[nesup])?;
        for e in 0..nedge {
            let sup = &edge_support[edge_supadr[e] as usize..edge_supadr[e + 1] as usize];
            check_support("rowless hyperedge", e, sup, ntree, 2)?;
        }
        Ok(Edges {
            slot_edgeadr,
            edge_kind,
            edge_id,
            edge_supadr,
            edge_support,
        })
    }
}

/// Each side of a contact is a geom or a flex, the other −1 (MuJoCo's `contact.geom` and
/// `contact.flex`): canonical row keys name a side by whichever it is.
fn contact_sides(geom: [i32; 2], flex: [i32; 2]) -> bool {
    (0..2).all(|k| geom[k].min(flex[k]) == -1 && geom[k].max(flex[k]) >= 0)
}

/// A support: at least `min` trees, strictly ascending, inside `0..ntree`.
fn check_support(kind: &str, index: usize, sup: &[i32], ntree: usize, min: usize) -> R<()> {
    if sup.len() < min {
        return Err(format!(
            "{kind} {index}: {} trees, expected at least {min}",
            sup.len()
        ));
    }
    if sup.windows(2).any(|p| p[1] <= p[0]) {
        return Err(format!(
            "{kind} {index}: support {sup:?} is not strictly ascending"
        ));
    }
    if sup.iter().any(|&t| t < 0 || t as usize >= ntree) {
        return Err(format!(
            "{kind} {index}: support {sup:?} outside 0..{ntree}"
        ));
    }
    Ok(())
}

fn native(
    a: &mut Arrays,
    nslot: usize,
    model: &Model,
    nrow: usize,
    slot_rowadr: &[u32],
) -> R<Native> {
    let (ntree, nv) = (model.ntree(), model.nv());
    let nisland = i32s(a, "nisland", &[nslot])?;
    let nidof = i32s(a, "nidof", &[nslot])?;
    in_range("nisland", &nisland, 0, ntree + 1)?;
    in_range("nidof", &nidof, 0, nv + 1)?;
    for s in 0..nslot {
        let rows = slot_rowadr[s + 1] - slot_rowadr[s];
        // A row makes an island; without rows only a model that finds islands there has any.
        let bad = if rows > 0 {
            nisland[s] == 0
        } else {
            nisland[s] > 0 && !model.islands_without_rows()
        };
        if bad {
            return Err(format!(
                "slot {s}: {rows} rows but native nisland {} (a world has islands exactly when it \
                 has rows, or without rows where `islands_without_rows` is 1)",
                nisland[s]
            ));
        }
    }
    let total: usize = nisland.iter().map(|&n| n as usize).sum();
    let slot_islandadr = offsets(a, "slot_islandadr", nslot, total)?;
    if let Some(s) =
        (0..nslot).find(|&s| slot_islandadr[s + 1] - slot_islandadr[s] != nisland[s] as u32)
    {
        return Err(format!(
            "`slot_islandadr` disagrees with `nisland` at slot {s}"
        ));
    }
    let mut island: [Vec<i32>; 9] = Default::default();
    for (dst, name) in island.iter_mut().zip(ISLAND_FIELDS) {
        *dst = i32s(a, name, &[total])?;
        in_range(name, dst, -1, nv.max(nrow) + 1)?;
    }
    let tree_island = i32s(a, "tree_island", &[nslot, ntree])?;
    let map_itree2tree = i32s(a, "map_itree2tree", &[nslot, ntree])?;
    let dof_island = i32s(a, "dof_island", &[nslot, nv])?;
    let map_dof2idof = i32s(a, "map_dof2idof", &[nslot, nv])?;
    let map_idof2dof = i32s(a, "map_idof2dof", &[nslot, nv])?;
    let efc_island = i32s(a, "efc_island", &[nrow])?;
    let map_efc2iefc = i32s(a, "map_efc2iefc", &[nrow])?;
    let map_iefc2efc = i32s(a, "map_iefc2efc", &[nrow])?;
    in_range("tree_island", &tree_island, -1, ntree)?;
    in_range("map_itree2tree", &map_itree2tree, 0, ntree)?;
    in_range("dof_island", &dof_island, -1, ntree)?;
    in_range("map_dof2idof", &map_dof2idof, 0, nv)?;
    in_range("map_idof2dof", &map_idof2dof, 0, nv)?;
    in_range("efc_island", &efc_island, -1, ntree)?;
    in_range("map_efc2iefc", &map_efc2iefc, 0, nrow)?;
    in_range("map_iefc2efc", &map_iefc2efc, 0, nrow)?;
    // Where native found no island its arrays are not engine data and replay compares only
    // the counts there, so those slots must hold the convention rather than anything at all.
    for s in (0..nslot).filter(|&s| nisland[s] == 0) {
        convention("tree_island", &tree_island, s, ntree, |_| -1)?;
        convention("map_itree2tree", &map_itree2tree, s, ntree, |i| i)?;
        convention("dof_island", &dof_island, s, nv, |_| -1)?;
        convention("map_dof2idof", &map_dof2idof, s, nv, |i| i)?;
        convention("map_idof2dof", &map_idof2dof, s, nv, |i| i)?;
    }
    Ok(Native {
        nisland,
        nidof,
        slot_islandadr,
        island,
        tree_island,
        map_itree2tree,
        dof_island,
        map_dof2idof,
        map_idof2dof,
        efc_island,
        map_efc2iefc,
        map_iefc2efc,
    })
}

/// Slot `s` of a per-slot field of `width` entries holds `want(i)` at each index `i`.
fn convention(name: &str, v: &[i32], s: usize, width: usize, want: fn(i32) -> i32) -> R<()> {
    let slot = &v[s * width..(s + 1) * width];
    match (0..width).find(|&i| slot[i] != want(i as i32)) {
        Some(i) => Err(format!(
            "`{name}` of slot {s} (no islands) is {} at {i}, expected {} (the convention)",
            slot[i],
            want(i as i32)
        )),
        None => Ok(()),
    }
}
