//! The min-root union-find shared by contraction, the node solve and the direct fallback:
//! the larger root is hooked under the smaller, so every root is its component's minimum.

/// Root of `x`, compressing the path behind it.
#[inline]
pub fn find(parent: &mut [i32], x: i32) -> i32 {
    let mut root = x;
    while parent[root as usize] != root {
        root = parent[root as usize];
    }
    let mut x = x;
    while parent[x as usize] != root {
        let next = parent[x as usize];
        parent[x as usize] = root;
        x = next;
    }
    root
}

/// Activates `a` and `b` (−1 = untouched) and joins them under the smaller root.
#[inline]
pub fn union(parent: &mut [i32], a: i32, b: i32) {
    for x in [a, b] {
        if parent[x as usize] == -1 {
            parent[x as usize] = x;
        }
    }
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb) as usize] = ra.min(rb);
    }
}
