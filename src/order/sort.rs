//! Stable LSD radix sort of (key, value) pairs: 8-bit digits, least significant first, one
//! counting pass per digit, ping-ponging between the caller's arrays and preallocated scratch.
//!
//! The GPU sort (`kernels/order.cu`) runs the same algorithm — histogram, exclusive scan,
//! stable scatter per digit — so both produce the same permutation. Only the digits a key
//! layout actually uses are sorted ([`passes`]), and a digit on which every key agrees is
//! skipped: it would be an identity pass.

use crate::error::{Error, Result};

/// Bits per radix digit.
pub const DIGIT_BITS: u32 = 8;
/// Buckets per digit.
pub const RADIX: usize = 1 << DIGIT_BITS;

/// Digit passes a key of `bits` bits needs.
pub fn passes(bits: u32) -> u32 {
    bits.div_ceil(DIGIT_BITS)
}

/// An unsigned key the radix sort can take apart.
pub trait RadixKey: Copy + Ord + Default {
    /// The 8-bit digit starting at bit `shift`.
    fn digit(self, shift: u32) -> usize;
}

impl RadixKey for u32 {
    fn digit(self, shift: u32) -> usize {
        ((self >> shift) & 0xff) as usize
    }
}

impl RadixKey for u64 {
    fn digit(self, shift: u32) -> usize {
        ((self >> shift) & 0xff) as usize
    }
}

/// Sorts `keys` ascending by their low `bits` bits, moving `vals` along, stably: pairs with equal
/// keys keep their input order. `tmp_keys` and `tmp_vals` are scratch at least as long as `keys`;
/// `vals` must be as long as `keys` (otherwise [`Error::Offsets`] and nothing moves).
/// Allocates nothing.
///
/// ```
/// use archipelago::order::sort::sort_pairs;
/// let (mut keys, mut vals) = (vec![3u32, 1, 3, 0], vec![0u32, 1, 2, 3]);
/// let (mut tk, mut tv) = (vec![0u32; 4], vec![0u32; 4]);
/// sort_pairs(&mut keys, &mut vals, 2, &mut tk, &mut tv).unwrap();
/// assert_eq!((keys, vals), (vec![0, 1, 3, 3], vec![3, 1, 0, 2]));
/// ```
pub fn sort_pairs<K: RadixKey>(
    keys: &mut [K],
    vals: &mut [u32],
    bits: u32,
    tmp_keys: &mut [K],
    tmp_vals: &mut [u32],
) -> Result<()> {
    let n = keys.len();
    if vals.len() != n || tmp_keys.len() < n || tmp_vals.len() < n {
        return Err(Error::Offsets {
            array: "sort_pairs",
            detail: format!(
                "{n} keys, {} values, scratch for {} keys and {} values",
                vals.len(),
                tmp_keys.len(),
                tmp_vals.len()
            ),
        });
    }
    let (tmp_keys, tmp_vals) = (&mut tmp_keys[..n], &mut tmp_vals[..n]);
    // One read of the keys counts every digit (at most 8 of them).
    let npass = passes(bits).min(8) as usize;
    let mut counts = [[0u32; RADIX]; 8];
    for &k in keys.iter() {
        for (p, count) in counts[..npass].iter_mut().enumerate() {
            count[k.digit(p as u32 * DIGIT_BITS)] += 1;
        }
    }
    // false: the current order lives in (keys, vals); true: in the scratch.
    let mut in_tmp = false;
    for (p, count) in counts[..npass].iter_mut().enumerate() {
        // A digit every key shares would be an identity pass.
        if n == 0 || count[keys[0].digit(p as u32 * DIGIT_BITS)] as usize == n {
            continue;
        }
        let (src_k, src_v, dst_k, dst_v) = if in_tmp {
            (&*tmp_keys, &*tmp_vals, &mut *keys, &mut *vals)
        } else {
            (&*keys, &*vals, &mut *tmp_keys, &mut *tmp_vals)
        };
        scatter_digit(src_k, src_v, dst_k, dst_v, p as u32 * DIGIT_BITS, count);
        in_tmp = !in_tmp;
    }
    if in_tmp {
        keys.copy_from_slice(tmp_keys);
        vals.copy_from_slice(tmp_vals);
    }
    Ok(())
}

/// One counting pass on the digit at `shift`, from its histogram `count`: exclusive scan, then
/// stable scatter.
fn scatter_digit<K: RadixKey>(
    src_k: &[K],
    src_v: &[u32],
    dst_k: &mut [K],
    dst_v: &mut [u32],
    shift: u32,
    count: &mut [u32; RADIX],
) {
    let mut sum = 0;
    for c in count.iter_mut() {
        (*c, sum) = (sum, sum + *c);
    }
    for (&k, &v) in src_k.iter().zip(src_v) {
        let slot = &mut count[k.digit(shift)];
        dst_k[*slot as usize] = k;
        dst_v[*slot as usize] = v;
        *slot += 1;
    }
}

/// Owned scratch for [`sort_pairs`], sized once.
#[derive(Debug, Clone, Default)]
pub struct RadixSorter {
    keys32: Vec<u32>,
    keys64: Vec<u64>,
    vals: Vec<u32>,
}

impl RadixSorter {
    /// Scratch for sorting up to `n` pairs at a time.
    pub fn new(n: usize) -> RadixSorter {
        RadixSorter {
            keys32: vec![0; n],
            keys64: vec![0; n],
            vals: vec![0; n],
        }
    }

    /// Pairs one call can sort without growing the scratch.
    pub fn capacity(&self) -> usize {
        self.vals.len()
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.keys32.capacity() * 4 + self.keys64.capacity() * 8 + self.vals.capacity() * 4
    }

    /// Stable sort of 32-bit keys by their low `bits` bits, `vals` moved along (see
    /// [`sort_pairs`]). Grows the scratch only past [`capacity`](Self::capacity).
    pub fn sort_u32(&mut self, keys: &mut [u32], vals: &mut [u32], bits: u32) -> Result<()> {
        self.reserve(keys.len());
        sort_pairs(keys, vals, bits, &mut self.keys32, &mut self.vals)
    }

    /// Stable sort of 64-bit keys by their low `bits` bits, `vals` moved along.
    pub fn sort_u64(&mut self, keys: &mut [u64], vals: &mut [u32], bits: u32) -> Result<()> {
        self.reserve(keys.len());
        sort_pairs(keys, vals, bits, &mut self.keys64, &mut self.vals)
    }

    fn reserve(&mut self, n: usize) {
        if n > self.capacity() {
            *self = RadixSorter::new(n);
        }
    }
}
