//! Model topology: kinematic trees and the dofs each one owns.

use crate::error::{Error, Result};

/// The topology island discovery needs from a MuJoCo model: `ntree` kinematic trees, `nv` dofs,
/// and for each tree a contiguous dof range `tree_dofadr[t] .. tree_dofadr[t] + tree_dofnum[t]`.
///
/// Every world of a batch shares one model (as in MuJoCo Warp).
///
/// ```
/// use archipelago::Model;
/// let model = Model::from_dofnum(&[6, 1, 1]).unwrap(); // a free body and two hinges
/// assert_eq!((model.ntree(), model.nv()), (3, 8));
/// assert_eq!(model.dof_treeid()[6], 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    tree_dofadr: Vec<i32>,
    tree_dofnum: Vec<i32>,
    dof_treeid: Vec<i32>,
    /// Tree ids ascend with their dofs (always so in MuJoCo): derived from the arrays above.
    trees_in_dof_order: bool,
    /// Native finds islands in a world without rows (see [`Model::islands_without_rows`]).
    islands_without_rows: bool,
}

impl Model {
    /// Builds a model whose trees own consecutive dof blocks of the given sizes (each ≥ 1).
    pub fn from_dofnum(tree_dofnum: &[i32]) -> Result<Model> {
        // Check everything before allocating: a huge count must be an error, not an abort.
        if let Some(t) = tree_dofnum.iter().position(|&n| n < 1) {
            let n = tree_dofnum[t];
            return Err(Error::Model(format!(
                "tree {t} has {n} dofs (each tree owns ≥ 1)"
            )));
        }
        let nv: i64 = tree_dofnum.iter().map(|&n| n as i64).sum();
        if nv > i32::MAX as i64 {
            return Err(Error::Model(format!("{nv} dofs: more than i32::MAX")));
        }
        let mut tree_dofadr = Vec::with_capacity(tree_dofnum.len());
        let mut dof_treeid = Vec::new();
        for (t, &n) in tree_dofnum.iter().enumerate() {
            tree_dofadr.push(dof_treeid.len() as i32);
            dof_treeid.extend(std::iter::repeat_n(t as i32, n as usize));
        }
        Ok(Model {
            tree_dofadr,
            tree_dofnum: tree_dofnum.to_vec(),
            dof_treeid,
            trees_in_dof_order: true,
            islands_without_rows: false,
        })
    }

    /// Builds a model from MuJoCo's three arrays, checking that they agree: every tree owns a
    /// non-empty contiguous range, and `dof_treeid` maps each dof to the tree whose range holds it.
    pub fn from_parts(
        tree_dofadr: Vec<i32>,
        tree_dofnum: Vec<i32>,
        dof_treeid: Vec<i32>,
    ) -> Result<Model> {
        let ntree = tree_dofadr.len();
        if tree_dofnum.len() != ntree {
            return Err(Error::Model(format!(
                "tree_dofadr has {ntree} entries but tree_dofnum has {}",
                tree_dofnum.len()
            )));
        }
        let nv = dof_treeid.len();
        // Dof ids are i32 (and so are the ranges' ends below): checked before allocating.
        if nv > i32::MAX as usize {
            return Err(Error::Model(format!("{nv} dofs: more than i32::MAX")));
        }
        let mut owner = vec![-1i32; nv];
        for t in 0..ntree {
            let (adr, num) = (tree_dofadr[t], tree_dofnum[t]);
            if num < 1 || adr < 0 || adr as i64 + num as i64 > nv as i64 {
                return Err(Error::Model(format!(
                    "tree {t}: dof range {adr}+{num} is empty or outside 0..{nv}"
                )));
            }
            for slot in &mut owner[adr as usize..(adr + num) as usize] {
                if *slot != -1 {
                    return Err(Error::Model(format!(
                        "tree {t}: dof range overlaps tree {slot}"
                    )));
                }
                *slot = t as i32;
            }
        }
        // Every dof belongs to a tree: the maps walk the dofs tree by tree.
        if let Some(dof) = owner.iter().position(|&t| t == -1) {
            return Err(Error::Model(format!("dof {dof} is in no tree's dof range")));
        }
        if let Some(dof) = (0..nv).find(|&d| owner[d] != dof_treeid[d]) {
            return Err(Error::Model(format!(
                "dof_treeid[{dof}] = {} but the dof ranges give {}",
                dof_treeid[dof], owner[dof]
            )));
        }
        let trees_in_dof_order = tree_dofadr.windows(2).all(|p| p[0] < p[1]);
        Ok(Model {
            tree_dofadr,
            tree_dofnum,
            dof_treeid,
            trees_in_dof_order,
            islands_without_rows: false,
        })
    }

    /// This model, finding islands in worlds without rows or not (the default: not).
    ///
    /// Native MuJoCo 4.0.0's `mj_island` returns before discovery in a world without constraint
    /// rows, except with sleep enabled under the discrete integrator where a flex couples trees
    /// in its metric: then the rowless hyperedges alone make islands. The trace format records
    /// which (`islands_without_rows`); a model that sets it must be given every rowless coupling.
    ///
    /// ```
    /// use archipelago::{Batch, Input, Model, oracle};
    /// let mut b = Batch::builder();
    /// b.rowless(0, &[0, 1]).end_world(); // a world without rows, two trees coupled
    /// let batch = b.finish();
    /// let plain = Model::from_dofnum(&[1, 1, 1]).unwrap();
    /// let sleepy = plain.clone().with_islands_without_rows(true);
    /// let islands = |m: &Model| oracle::solve(&Input::new(m, &batch).unwrap()).nisland[0];
    /// assert_eq!((islands(&plain), islands(&sleepy)), (0, 1));
    /// ```
    #[must_use]
    pub fn with_islands_without_rows(mut self, on: bool) -> Model {
        self.islands_without_rows = on;
        self
    }

    /// Whether a world without rows can have islands ([`Model::with_islands_without_rows`]).
    pub fn islands_without_rows(&self) -> bool {
        self.islands_without_rows
    }

    /// Number of kinematic trees.
    pub fn ntree(&self) -> usize {
        self.tree_dofadr.len()
    }

    /// Number of dofs.
    pub fn nv(&self) -> usize {
        self.dof_treeid.len()
    }

    /// First dof of each tree.
    pub fn tree_dofadr(&self) -> &[i32] {
        &self.tree_dofadr
    }

    /// Number of dofs of each tree.
    pub fn tree_dofnum(&self) -> &[i32] {
        &self.tree_dofnum
    }

    /// The tree that owns each dof.
    pub fn dof_treeid(&self) -> &[i32] {
        &self.dof_treeid
    }

    /// Whether tree ids ascend with their dofs (true for every MuJoCo model): then consecutive
    /// trees own consecutive dof ranges.
    pub fn trees_in_dof_order(&self) -> bool {
        self.trees_in_dof_order
    }

    /// Every tree with its dof range, in ascending order of first dof (whatever the tree ids).
    ///
    /// The ranges are contiguous and cover `0..nv`, so walking them visits every dof once, in
    /// order, with one step per tree instead of one per dof.
    pub fn trees_by_dof(&self) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
        let mut dof = 0;
        std::iter::from_fn(move || {
            let tree = *self.dof_treeid.get(dof)? as usize;
            let range = dof..dof + self.tree_dofnum[tree] as usize;
            dof = range.end;
            Some((tree, range))
        })
    }
}
