//! The container: a zip archive (numpy's `savez_compressed`) of `.npy` arrays.
//!
//! The zip layer (deflate, CRC) is the `zip` crate's. The `.npy` header is parsed here: traces
//! only hold little-endian `int32` and `uint8` arrays in C order, and a dedicated parser
//! checks every size with overflow-checked arithmetic before allocating, so a corrupted header
//! is an error, never a panic or a runaway allocation.

use std::collections::HashMap;
use std::io::Read;

/// The element type of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `<i4`.
    I32,
    /// `|u1`.
    U8,
}

/// One array: its shape and its elements, flat in C order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// `int32` elements.
    I32(Vec<i32>),
    /// `uint8` elements.
    U8(Vec<u8>),
}

/// A decoded array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    /// Shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// Elements.
    pub data: Data,
}

/// Every array of an archive by name (without the `.npy` suffix).
pub type Arrays = HashMap<String, Array>;

/// Reads every `.npy` entry of a zip archive held in `bytes`. Errors are plain messages; the
/// caller attaches the path.
///
/// An archive says what its entries expand to, and it is read within that: a total this machine
/// cannot allocate is refused before anything is read, and an entry that expands past what is
/// declared is refused as it is read. No ratio to the archive's own size is asked: a trace of
/// worlds without rows compresses 265 times, a zip bomb a thousand.
pub fn read(bytes: &[u8]) -> Result<Arrays, String> {
    let mut zip = open(bytes)?;
    let mut declared = 0u64;
    for i in 0..zip.len() {
        let entry = zip
            .by_index_raw(i)
            .map_err(|e| format!("archive entry {i}: {e}"))?;
        declared = declared.saturating_add(entry.size());
    }
    let fits =
        usize::try_from(declared).is_ok_and(|n| Vec::<u8>::new().try_reserve_exact(n).is_ok());
    if !fits {
        return Err(format!(
            "the archive's arrays take {declared} bytes, more than this machine can allocate"
        ));
    }
    read_within(bytes, declared)
}

fn open(bytes: &[u8]) -> Result<zip::ZipArchive<std::io::Cursor<&[u8]>>, String> {
    zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| format!("not a readable npz archive: {e}"))
}

/// [`read`], refusing archives that expand past `budget` bytes.
fn read_within(bytes: &[u8], mut budget: u64) -> Result<Arrays, String> {
    let mut zip = open(bytes)?;
    let mut out = Arrays::new();
    for i in 0..zip.len() {
        let mut entry = zip
            .by_index(i)
            .map_err(|e| format!("archive entry {i}: {e}"))?;
        let name = entry.name().to_string();
        let Some(key) = name.strip_suffix(".npy") else {
            return Err(format!(
                "unexpected archive entry `{name}` (only .npy arrays)"
            ));
        };
        let too_large = || format!("`{name}`: the archive expands past {budget} more bytes");
        if entry.size() > budget {
            return Err(too_large());
        }
        // Sized by what is read, not by the size the archive declares.
        let mut raw = Vec::new();
        entry
            .by_ref()
            .take(budget + 1)
            .read_to_end(&mut raw)
            .map_err(|e| format!("`{name}`: {e}"))?;
        if raw.len() as u64 > budget {
            return Err(too_large());
        }
        budget -= raw.len() as u64;
        let array = parse_npy(&raw).map_err(|e| format!("`{name}`: {e}"))?;
        out.insert(key.to_string(), array);
    }
    Ok(out)
}

/// Parses one `.npy` file (format versions 1.0, 2.0, 3.0).
pub fn parse_npy(raw: &[u8]) -> Result<Array, String> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if raw.len() < 10 || &raw[..6] != MAGIC {
        return Err("not an .npy array (bad magic)".into());
    }
    let (header_len, start): (usize, usize) = match raw[6] {
        1 => (u16::from_le_bytes([raw[8], raw[9]]) as usize, 10),
        2 | 3 if raw.len() >= 12 => (
            u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= raw.len())
        .ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(&raw[start..end]).map_err(|_| "header is not text")?;
    let (dtype, shape) = parse_header(header)?;
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or("shape overflows")?;
    let body = &raw[end..];
    let width = match dtype {
        Dtype::I32 => 4,
        Dtype::U8 => 1,
    };
    if count.checked_mul(width) != Some(body.len()) {
        return Err(format!(
            "shape {shape:?} needs {count} elements of {width} bytes but {} data bytes follow",
            body.len()
        ));
    }
    let data = match dtype {
        Dtype::I32 => Data::I32(
            body.chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        Dtype::U8 => Data::U8(body.to_vec()),
    };
    Ok(Array { shape, data })
}

/// Parses numpy's header dict: `{'descr': '<i4', 'fortran_order': False, 'shape': (3, 2), }`.
fn parse_header(header: &str) -> Result<(Dtype, Vec<usize>), String> {
    let value = |key: &str| -> Result<&str, String> {
        let at = header
            .find(&format!("'{key}':"))
            .ok_or(format!("header lacks '{key}'"))?;
        Ok(header[at + key.len() + 3..].trim_start())
    };
    let descr = value("descr")?;
    let dtype = if descr.starts_with("'<i4'") {
        Dtype::I32
    } else if descr.starts_with("'|u1'") {
        Dtype::U8
    } else {
        // The quoted descr alone (`'<i8'`), not the rest of the header after it.
        let shown = descr
            .strip_prefix('\'')
            .and_then(|d| d.split_once('\''))
            .map_or_else(|| descr.chars().take(8).collect(), |(d, _)| d.to_string());
        return Err(format!("dtype {shown} is not <i4 (int32) or |u1 (uint8)"));
    };
    if !value("fortran_order")?.starts_with("False") {
        return Err("Fortran-ordered arrays are not used by traces".into());
    }
    let shape = value("shape")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split_once(')'))
        .ok_or("malformed shape")?
        .0;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| format!("bad dimension `{s}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((dtype, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str, body: &[u8]) -> Vec<u8> {
        let mut h = header.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut raw = b"\x93NUMPY\x01\x00".to_vec();
        raw.extend_from_slice(&(h.len() as u16).to_le_bytes());
        raw.extend_from_slice(h.as_bytes());
        raw.extend_from_slice(body);
        raw
    }

    #[test]
    fn parses_arrays_and_scalars() {
        let raw = npy(
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1), }",
            &[1, 0, 0, 0, 255, 255, 255, 255],
        );
        let a = parse_npy(&raw).unwrap();
        assert_eq!(a.shape, [2, 1]);
        assert_eq!(a.data, Data::I32(vec![1, -1]));
        let raw = npy(
            "{'descr': '|u1', 'fortran_order': False, 'shape': (), }",
            &[7],
        );
        assert_eq!(parse_npy(&raw).unwrap().data, Data::U8(vec![7]));
    }

    #[test]
    fn rejects_bad_headers() {
        let h = |s: &str| parse_npy(&npy(s, &[0; 8])).unwrap_err();
        assert_eq!(
            h("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"),
            "dtype <f8 is not <i4 (int32) or |u1 (uint8)"
        );
        assert!(h("{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }").contains("Fortran"));
        assert!(h("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }").contains("needs"));
        let huge = "{'descr': '<i4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }";
        assert!(h(huge).contains("overflows"));
        assert!(parse_npy(b"\x93NUMPY\x01\x00\xff\xff").is_err());
    }

    /// A zip archive of `raw` under each of `names` (compressed as `np.savez_compressed` does).
    fn zip_of(names: &[&str], raw: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for name in names {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(raw).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    /// An entry that expands past the size its archive declares for it is refused, whether the
    /// zip reader or the budget finds it.
    #[test]
    fn entries_are_read_within_their_declared_sizes() {
        let raw = npy(
            "{'descr': '|u1', 'fortran_order': False, 'shape': (4000,), }",
            &[0; 4000],
        );
        let mut bytes = zip_of(&["a.npy"], &raw);
        assert_eq!(read(&bytes).unwrap().len(), 1);
        // The entry's size fields (the local header's and the central directory's) say 100
        // bytes: every 4-byte run that holds its size.
        let size = (raw.len() as u32).to_le_bytes();
        for at in (0..bytes.len() - 4)
            .filter(|&i| bytes[i..i + 4] == size)
            .collect::<Vec<_>>()
        {
            bytes[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
        }
        assert!(read(&bytes).is_err());
    }

    /// Entries within the budget alone but past it together are refused.
    #[test]
    fn the_archive_expands_within_a_budget() {
        let raw = npy(
            "{'descr': '|u1', 'fortran_order': False, 'shape': (400,), }",
            &[0; 400],
        );
        let bytes = zip_of(&["a.npy", "b.npy", "c.npy"], &raw);
        assert_eq!(read_within(&bytes, 3 * raw.len() as u64).unwrap().len(), 3);
        let e = read_within(&bytes, 2 * raw.len() as u64 + 10).unwrap_err();
        assert!(
            e.contains("`c.npy`: the archive expands past 10 more bytes"),
            "{e}"
        );
    }
}
