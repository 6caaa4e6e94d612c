//! A trace written from scratch, for the tests: `ntree` trees of one dof each, one world, `nstep`
//! steps of one friction-loss row each on tree 0 (its own island, every other tree in none), so
//! that sizes and arrays can be set at will.

#![allow(dead_code)]

use std::io::Write;

/// Every array of the trace by name: shape, dtype (`<i4` or `|u1`) and little-endian data.
pub type Arrays = Vec<(String, Vec<usize>, &'static str, Vec<u8>)>;

fn i32s(name: &str, shape: &[usize], v: &[i32]) -> (String, Vec<usize>, &'static str, Vec<u8>) {
    let data = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    (name.into(), shape.to_vec(), "<i4", data)
}

fn u8s(name: &str, shape: &[usize], v: &[u8]) -> (String, Vec<usize>, &'static str, Vec<u8>) {
    (name.into(), shape.to_vec(), "|u1", v.to_vec())
}

/// The trace of one tree.
pub fn arrays(nstep: usize) -> Arrays {
    arrays_of(nstep, 1)
}

/// The trace of `ntree` trees (at least one).
pub fn arrays_of(nstep: usize, ntree: usize) -> Arrays {
    assert!(ntree >= 1, "the row needs tree 0");
    let (n, t) = (nstep, ntree);
    let adr: Vec<i32> = (0..=n as i32).collect();
    let (zeros, ones, minus) = (vec![0; n], vec![1; n], vec![-1; n]);
    let mut a = vec![
        i32s("schema_version", &[], &[1]),
        u8s("scene", &[4], b"mini"),
        u8s("meta", &[2], b"{}"),
    ];
    for (name, v) in [("jacobian", 1), ("ntree", t), ("nv", t), ("nworld", 1)] {
        a.push(i32s(name, &[], &[v as i32]));
    }
    for name in ["njnt", "ntendon", "neq", "nflex"] {
        a.push(i32s(name, &[], &[0]));
    }
    let trees: Vec<i32> = (0..t as i32).collect();
    a.push(i32s("nstep", &[], &[n as i32]));
    a.push(i32s("tree_dofadr", &[t], &trees));
    a.push(i32s("tree_dofnum", &[t], &vec![1; t]));
    a.push(i32s("dof_treeid", &[t], &trees));
    a.push(i32s("eq_type", &[0], &[]));
    a.push(i32s("eq_flex", &[0], &[]));
    a.push(i32s("step_index", &[n], &(0..n as i32).collect::<Vec<_>>()));
    a.push(i32s("slot_rowadr", &[n + 1], &adr));
    a.push(u8s("row_type", &[n], &vec![1; n]));
    for name in ["row_id", "row_source"] {
        a.push(i32s(name, &[n], &zeros));
    }
    a.push(i32s("row_geom", &[n, 2], &vec![-1; 2 * n]));
    a.push(i32s("row_flex", &[n, 2], &vec![-1; 2 * n]));
    a.push(i32s("row_colid", &[n], &minus));
    a.push(i32s("row_supadr", &[n + 1], &adr));
    a.push(i32s("row_support", &[n], &zeros));
    a.push(i32s("slot_edgeadr", &[n + 1], &vec![0; n + 1]));
    a.push(i32s("edge_id", &[0], &[]));
    a.push(i32s("edge_supadr", &[1], &[0]));
    a.push(i32s("edge_support", &[0], &[]));
    a.push(u8s("tree_awake", &[n, t], &vec![1; n * t]));
    a.push(u8s("eq_active", &[n, 0], &[]));
    a.push(i32s("nisland", &[n], &ones));
    a.push(i32s("nidof", &[n], &ones));
    a.push(i32s("slot_islandadr", &[n + 1], &adr));
    for (name, v) in [
        ("island_ntree", &ones),
        ("island_itreeadr", &zeros),
        ("island_nv", &ones),
        ("island_idofadr", &zeros),
        ("island_dofadr", &zeros),
        ("island_ne", &zeros),
        ("island_nf", &ones),
        ("island_nefc", &ones),
        ("island_iefcadr", &zeros),
    ] {
        a.push(i32s(name, &[n], v));
    }
    // Tree (and dof) 0 in island 0, the others in none; the island's first, so every map is
    // the identity.
    let island: Vec<i32> = (0..n * t)
        .map(|i| if i % t == 0 { 0 } else { -1 })
        .collect();
    let identity: Vec<i32> = (0..n * t).map(|i| (i % t) as i32).collect();
    for (name, v) in [
        ("tree_island", &island),
        ("map_itree2tree", &identity),
        ("dof_island", &island),
        ("map_dof2idof", &identity),
        ("map_idof2dof", &identity),
    ] {
        a.push(i32s(name, &[n, t], v));
    }
    for name in ["efc_island", "map_efc2iefc", "map_iefc2efc"] {
        a.push(i32s(name, &[n], &zeros));
    }
    a
}

/// `arrays` as an npz archive.
pub fn npz(arrays: &Arrays) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, shape, descr, data) in arrays {
        let dims: Vec<String> = shape.iter().map(|d| format!("{d},")).collect();
        let mut h = format!(
            "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}",
            dims.join(" ")
        );
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        out.start_file(
            format!("{name}.npy"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        out.write_all(b"\x93NUMPY\x01\x00").unwrap();
        out.write_all(&(h.len() as u16).to_le_bytes()).unwrap();
        out.write_all(h.as_bytes()).unwrap();
        out.write_all(data).unwrap();
    }
    out.finish().unwrap().into_inner()
}
