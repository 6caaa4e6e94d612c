//! The min-root union-find shared by the CPU `dsu` mode, the quotient's contraction, its node
//! solve and its direct fallback: the union hooks the larger root under the smaller, so every
//! root is its component's smallest tree and parents stay smaller than their children. A parent
//! of −1 marks a tree no hyperedge touched yet.

/// Root of `t`, halving the path behind it (each visited node skips to its grandparent: one
/// pass, and parents stay smaller than their children).
#[inline]
pub fn find(parent: &mut [i32], t: i32) -> i32 {
    let mut t = t;
    loop {
        let p = parent[t as usize];
        if p == t {
            return t;
        }
        let grand = parent[p as usize];
        parent[t as usize] = grand;
        t = grand;
    }
}

/// Root of `t`, activating it first if no hyperedge touched it yet (−1).
#[inline]
fn activate_find(parent: &mut [i32], t: i32) -> i32 {
    if parent[t as usize] == -1 {
        parent[t as usize] = t;
        return t;
    }
    find(parent, t)
}

/// Activates every tree of `support` and joins them into one component under the smallest root.
/// The running root is carried along, so each tree costs at most one find.
#[inline]
pub fn join(parent: &mut [i32], support: &[i32]) {
    join_map(parent, support, |t| t);
}

/// [`join`] over the elements `element(t)` gives for the trees of `support` ([`join_by`], for a
/// map that cannot fail).
#[inline]
pub fn join_map(parent: &mut [i32], support: &[i32], mut element: impl FnMut(i32) -> i32) {
    let Ok(()) = join_by(parent, support, |t| {
        Ok::<i32, std::convert::Infallible>(element(t))
    });
}

/// [`join`] over the elements `element(t)` gives for the trees of `support` (the quotient's:
/// each tree's node), or the first error it gives. Runs of trees of one element cost one find:
/// a wide support over a contracted body joins its node once.
#[inline]
pub fn join_by<E>(
    parent: &mut [i32],
    support: &[i32],
    mut element: impl FnMut(i32) -> Result<i32, E>,
) -> Result<(), E> {
    let Some((&first, rest)) = support.split_first() else {
        return Ok(()); // a rowless hyperedge whose trees all sleep
    };
    let mut last = element(first)?;
    let mut root = activate_find(parent, last);
    for &t in rest {
        let e = element(t)?;
        if e == last {
            continue;
        }
        last = e;
        let r = activate_find(parent, e);
        if r != root {
            parent[r.max(root) as usize] = r.min(root);
            root = r.min(root);
        }
    }
    Ok(())
}
