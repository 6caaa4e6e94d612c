//! The kernels' machine code kept on disk between processes, so that only the first process of
//! a build on a machine waits for NVRTC and its assembler ([`super::module::machine_code`]).
//!
//! The folder is `ARCHIPELAGO_KERNEL_CACHE` when set (`0` or `off` turns the cache off), else
//! `$XDG_CACHE_HOME/archipelago/kernels`, else `$HOME/.cache/archipelago/kernels`. Each program
//! is one file named by a 128-bit hash of everything its machine code depends on: the program's
//! text, NVRTC's options (the target architecture among them) and NVRTC's version. A file is
//! written under a name of its own and then renamed into place, so that processes building the
//! same program at once never read half of one; a file that does not hold what its name says
//! (cut short, or of another format) is a miss and is built again. The cache is a shortcut,
//! never a source of errors: a folder that cannot be made, read or written only costs the build.
//!
//! Each build of the kernels adds its programs (about 13 MB for sm_90, 10 of them the warp
//! program), so the folder is kept under [`MAX_BYTES`] by removing the files used least
//! recently after each write (a read marks a file used).
//!
//! ```
//! use archipelago::gpu::kernel_cache::{DiskCache, key};
//! let dir = std::env::temp_dir().join(format!("archipelago-doc-{}", std::process::id()));
//! let cache = DiskCache::at(dir.clone());
//! let k = key(&[b"extern \"C\" __global__ void k() {}", b"--gpu-architecture=sm_90"]);
//! assert_eq!(cache.get(k), None);
//! cache.put(k, b"\x7fELF machine code");
//! assert_eq!(cache.get(k).as_deref(), Some(&b"\x7fELF machine code"[..]));
//! # std::fs::remove_dir_all(dir).unwrap();
//! ```

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first bytes of every file: the format, so that another one is a miss.
const MAGIC: &[u8; 8] = b"ARCHKC01";

/// A file's bytes before its image: the magic, the key (16 bytes) and the image's length.
const HEAD: usize = MAGIC.len() + 16 + 8;

/// The first bytes of machine code (an ELF image), checked before it is handed to the driver.
const ELF: &[u8; 4] = b"\x7fELF";

/// The bytes a cache folder keeps at most: about twenty builds' programs.
pub const MAX_BYTES: u64 = 256 << 20;

/// A folder of machine code, by key ([`key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
}

impl DiskCache {
    /// The cache where the environment puts it (see the module's documentation), or `None`
    /// where it is turned off or no folder is named.
    pub fn from_env() -> Option<DiskCache> {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = var("ARCHIPELAGO_KERNEL_CACHE") {
            return match dir.to_str().map(str::trim) {
                Some("0" | "off") => None,
                _ => Some(DiskCache::at(PathBuf::from(dir))),
            };
        }
        let base = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))?;
        Some(DiskCache::at(base.join("archipelago").join("kernels")))
    }

    /// The cache in `dir` (made on the first [`put`](Self::put)), kept under [`MAX_BYTES`].
    pub fn at(dir: PathBuf) -> DiskCache {
        DiskCache {
            dir,
            max_bytes: MAX_BYTES,
        }
    }

    /// This cache kept under `max_bytes` instead.
    pub fn with_max_bytes(self, max_bytes: u64) -> DiskCache {
        DiskCache { max_bytes, ..self }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: u128) -> PathBuf {
        self.dir.join(format!("{key:032x}.bin"))
    }

    /// The machine code stored under `key`, if a whole, well-formed file holds it.
    pub fn get(&self, key: u128) -> Option<Vec<u8>> {
        let mut bytes = fs::read(self.path(key)).ok()?;
        let (head, image) = bytes.split_at_checked(HEAD)?;
        let len = u64::from_le_bytes(head[24..32].try_into().ok()?);
        let whole = &head[..8] == MAGIC
            && u128::from_le_bytes(head[8..24].try_into().ok()?) == key
            && len == image.len() as u64
            && image.starts_with(ELF);
        if !whole {
            return None;
        }
        // The image in place of the file's bytes, without a second copy of megabytes.
        bytes.drain(..HEAD);
        // Used now: the last to go when the folder is trimmed.
        if let Ok(f) = fs::File::options().append(true).open(self.path(key)) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
        Some(bytes)
    }

    /// Stores `image` under `key`, then trims the folder to its size; any failure leaves the
    /// cache as it was.
    pub fn put(&self, key: u128, image: &[u8]) {
        if self.try_put(key, image).is_ok() {
            let _ = self.trim(key);
        }
    }

    /// Removes the files used least recently (never `keep`, just written) until the folder's
    /// files take at most `max_bytes`, and temporary files an hour old (their writer died
    /// between its write and its rename).
    fn trim(&self, keep: u128) -> std::io::Result<()> {
        let keep = self.path(keep);
        let mut files = Vec::new();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            let path = entry.path();
            let is = |ext: &str| meta.is_file() && path.extension().is_some_and(|e| e == ext);
            if is("tmp") && meta.modified()? < hour_ago {
                fs::remove_file(&path)?;
            } else if is("bin") && path != keep {
                files.push((meta.modified()?, meta.len(), path));
            }
        }
        let kept = fs::metadata(&keep).map(|m| m.len()).unwrap_or(0);
        let mut total = kept + files.iter().map(|f| f.1).sum::<u64>();
        files.sort();
        for (_, len, path) in files {
            if total <= self.max_bytes {
                break;
            }
            fs::remove_file(path)?;
            total -= len;
        }
        Ok(())
    }

    fn try_put(&self, key: u128, image: &[u8]) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        // A name no other writer uses: this process's id and a count within it.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self
            .dir
            .join(format!("{key:032x}.{}.{n}.tmp", std::process::id()));
        let written = (|| {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(MAGIC)?;
            f.write_all(&key.to_le_bytes())?;
            f.write_all(&(image.len() as u64).to_le_bytes())?;
            f.write_all(image)?;
            f.sync_all()?;
            fs::rename(&tmp, self.path(key))
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    /// Whether a file is stored under `key` (without reading it: [`get`](Self::get) checks it).
    pub fn holds(&self, key: u128) -> bool {
        self.path(key).is_file()
    }

    /// Whether files can be written into the folder (made if it is not there): a file written
    /// and removed again.
    pub fn writable(&self) -> std::io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let probe = self.dir.join(format!(".probe.{}", std::process::id()));
        fs::write(&probe, b"")?;
        fs::remove_file(&probe)
    }

    /// Removes what is stored under `key` (machine code the driver refused).
    pub fn remove(&self, key: u128) {
        let _ = fs::remove_file(self.path(key));
    }
}

/// The key of machine code built from `parts` (FNV-1a over 128 bits, each part's length mixed
/// in so that no two lists of parts run together into one).
pub fn key(parts: &[&[u8]]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let mix = |h: u128, bytes: &[u8]| {
        bytes
            .iter()
            .fold(h, |h, &b| (h ^ b as u128).wrapping_mul(PRIME))
    };
    parts.iter().fold(OFFSET, |h, part| {
        mix(mix(h, &(part.len() as u64).to_le_bytes()), part)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> DiskCache {
        let dir = std::env::temp_dir().join(format!(
            "archipelago-kernel-cache-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        DiskCache::at(dir)
    }

    #[test]
    fn what_is_put_is_got_under_its_key_only() {
        let cache = scratch("roundtrip");
        cache.writable().unwrap();
        let (a, b) = (key(&[b"a"]), key(&[b"b"]));
        assert!(!cache.holds(a));
        cache.put(a, b"\x7fELF one");
        assert!(cache.holds(a));
        assert_eq!(cache.get(a).as_deref(), Some(&b"\x7fELF one"[..]));
        assert_eq!(cache.get(b), None);
        cache.put(a, b"\x7fELF two");
        assert_eq!(cache.get(a).as_deref(), Some(&b"\x7fELF two"[..]));
        cache.remove(a);
        assert_eq!(cache.get(a), None);
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(cache.dir()).unwrap().collect();
        assert!(names.is_empty(), "{names:?}");
        fs::remove_dir_all(cache.dir()).unwrap();
    }

    #[test]
    fn a_file_cut_short_or_of_another_key_is_a_miss() {
        let cache = scratch("torn");
        let k = key(&[b"program"]);
        cache.put(k, b"\x7fELF machine code");
        let path = cache.path(k);
        let whole = fs::read(&path).unwrap();
        fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert_eq!(cache.get(k), None, "cut short");
        // Another key's file under this key's name.
        let other = key(&[b"other"]);
        cache.put(other, b"\x7fELF machine code");
        fs::rename(cache.path(other), &path).unwrap();
        assert_eq!(cache.get(k), None, "another key");
        // Not machine code.
        cache.put(k, b"PTX text");
        assert_eq!(cache.get(k), None, "not an ELF image");
        fs::remove_dir_all(cache.dir()).unwrap();
    }

    #[test]
    fn a_folder_that_cannot_be_made_costs_only_the_build() {
        // A file where the folder should be: nothing can be stored, nothing fails.
        let blocker = std::env::temp_dir().join(format!(
            "archipelago-kernel-cache-blocker-{}",
            std::process::id()
        ));
        fs::write(&blocker, b"not a folder").unwrap();
        let cache = DiskCache::at(blocker.join("kernels"));
        assert!(cache.writable().is_err());
        cache.put(1, b"\x7fELF");
        assert_eq!(cache.get(1), None);
        fs::remove_file(&blocker).unwrap();
    }

    #[test]
    fn the_folder_keeps_what_was_used_last_within_its_size() {
        // Room for two files of 100 bytes: a third removes the one used least recently.
        let cache = scratch("trim").with_max_bytes(2 * (32 + 100));
        let image = [b"\x7fELF".as_slice(), &[0u8; 96]].concat();
        let (a, b, c) = (key(&[b"a"]), key(&[b"b"]), key(&[b"c"]));
        cache.put(a, &image);
        std::thread::sleep(std::time::Duration::from_millis(20));
        cache.put(b, &image);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(cache.get(a).is_some(), "a used again: b is now the oldest");
        std::thread::sleep(std::time::Duration::from_millis(20));
        cache.put(c, &image);
        assert!(
            cache.holds(a) && cache.holds(c),
            "the last used and the new one stay"
        );
        assert!(!cache.holds(b), "the least recently used one goes");
        // A writer's leftover an hour old goes; a younger one may be a write in progress.
        let old = cache.dir().join("0.1.2.tmp");
        let young = cache.dir().join("0.1.3.tmp");
        fs::write(&old, b"half").unwrap();
        fs::write(&young, b"half").unwrap();
        let two_hours = std::time::Duration::from_secs(7200);
        let f = fs::File::options().append(true).open(&old).unwrap();
        f.set_modified(std::time::SystemTime::now() - two_hours)
            .unwrap();
        cache.put(b, &image);
        assert!(!old.exists() && young.exists());
        // One file larger than the whole limit is still kept: it was just asked for.
        let small = scratch("trim-small").with_max_bytes(10);
        small.put(a, &image);
        assert!(small.holds(a));
        fs::remove_dir_all(cache.dir()).unwrap();
        fs::remove_dir_all(small.dir()).unwrap();
    }

    #[test]
    fn keys_tell_apart_parts_that_run_together() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_ne!(key(&[b"abc"]), key(&[b"abc", b""]));
        assert_eq!(key(&[b"x", b"y"]), key(&[b"x", b"y"]));
    }
}
