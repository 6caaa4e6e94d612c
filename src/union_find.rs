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

/// Activates `a` and `b` (−1 = untouched) and joins their components under the smaller root.
#[inline]
pub fn union(parent: &mut [i32], a: i32, b: i32) {
    let (ra, rb) = (activate_find(parent, a), activate_find(parent, b));
    if ra != rb {
        parent[ra.max(rb) as usize] = ra.min(rb);
    }
}

/// Activates every tree of `support` and joins them into one component under the smallest root.
/// The running root is carried along, so each tree costs one find.
#[inline]
pub fn join(parent: &mut [i32], support: &[i32]) {
    let Some((&first, rest)) = support.split_first() else {
        return; // a rowless hyperedge whose trees all sleep
    };
    let mut root = activate_find(parent, first);
    for &t in rest {
        let r = activate_find(parent, t);
        if r != root {
            parent[r.max(root) as usize] = r.min(root);
            root = r.min(root);
        }
    }
}
