//! `archipelago kernels`: builds every kernel program's machine code into the kernel cache
//! ahead of time (`gpu::kernel_cache`), with NVRTC alone: no GPU or driver is needed. A process
//! whose cache holds them then starts without compiling: a container image built with the
//! cache in it, say, whose machines would otherwise each wait for NVRTC at their first solver
//! (about half a minute for the quotient's programs on an H200's host).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use super::{Error, Result};
use archipelago::gpu::kernel_cache::DiskCache;
use archipelago::gpu::{self, module};

/// Arguments of `archipelago kernels`.
#[derive(clap::Args, Debug, Default)]
pub struct KernelsArgs {
    /// The architecture to build for: `sm_90`, `90` or `9.0` (Hopper); by default device 0's.
    #[arg(long)]
    pub arch: Option<String>,
    /// The kernel cache folder to fill; by default the one every process uses
    /// (`ARCHIPELAGO_KERNEL_CACHE`, else `$XDG_CACHE_HOME/archipelago/kernels` or
    /// `~/.cache/archipelago/kernels`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

/// `sm_90`, `90` or `9.0` as a compute capability (major, minor).
pub fn parse_arch(arch: &str) -> Result<(i32, i32)> {
    let bad = || Error::Usage {
        command: "kernels",
        reason: format!("`{arch}` is not an architecture (e.g. sm_90, 90 or 9.0)"),
    };
    let digits = arch.trim().trim_start_matches("sm_");
    let (major, minor) = match digits.split_once('.') {
        Some((major, minor)) => (major, minor),
        None if digits.len() >= 2 => digits.split_at(digits.len() - 1),
        None => return Err(bad()),
    };
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i32>().ok())
            .flatten()
    };
    match (number(major), number(minor)) {
        (Some(major), Some(minor)) if minor < 10 => Ok((major, minor)),
        _ => Err(bad()),
    }
}

/// Runs the subcommand: builds every program (`gpu::programs`) side by side and checks that
/// each is in the cache.
pub fn run(args: &KernelsArgs) -> Result<ExitCode> {
    let arch = args.arch.as_deref().map(parse_arch).transpose()?;
    if !gpu::nvrtc_present() {
        return Err(usage(
            "NVRTC (libnvrtc), which builds the kernels, is not on the loader's path; \
             `tools/setup_nvrtc.sh` fetches it and prints its folder: \
             LD_LIBRARY_PATH=$(tools/setup_nvrtc.sh) archipelago kernels ..."
                .into(),
        ));
    }
    let cc = capability(arch)?;
    gpu::supports(&format!("sm_{}{}", cc.0, cc.1), cc).map_err(usage)?;
    let disk = cache(args)?;
    let programs = gpu::programs();
    outln!(
        "building {} programs for sm_{}{} into {}",
        programs.len(),
        cc.0,
        cc.1,
        disk.dir().display()
    );
    let start = Instant::now();
    let built = build_all(&programs, cc, &disk);
    outln!("| program | bytes | NVRTC s | was |");
    outln!("|---|---|---|---|");
    let mut missing = Vec::new();
    for (p, result) in programs.iter().zip(built) {
        let (built, key) = result.map_err(|_| usage(format!("building `{}` panicked", p.name)))?;
        let (image, built) = built?;
        // Without --arch the device's opening built the main module a moment before.
        let was = match (built.from_disk, built.compile_s > 0.0) {
            (true, _) => "cached",
            (false, true) => "built",
            (false, false) => "built opening the device",
        };
        outln!(
            "| {} | {} | {:.1} | {was} |",
            p.name,
            image.len(),
            built.compile_s
        );
        if disk.get(key).is_none() {
            missing.push(p.name);
        }
    }
    if !missing.is_empty() {
        return Err(usage(format!(
            "could not write {} into {}",
            missing.join(", "),
            disk.dir().display()
        )));
    }
    outln!("done in {:.1} s", start.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// The subcommand's usage error.
fn usage(reason: String) -> Error {
    Error::Usage {
        command: "kernels",
        reason,
    }
}

/// The capability to build for: `arch`, else device 0's (whose absence then says to give
/// `--arch`).
fn capability(arch: Option<(i32, i32)>) -> Result<(i32, i32)> {
    if let Some(cc) = arch {
        return Ok(cc);
    }
    let gpu = gpu::Gpu::open().map_err(|e| match e {
        archipelago::Error::NoDevice(why) => {
            archipelago::Error::NoDevice(format!("{why}; give --arch to build without a device"))
        }
        e => e,
    })?;
    Ok(gpu.info().capability)
}

/// The cache to fill (`--cache`, else the one every process uses), checked to take files
/// before minutes of NVRTC.
fn cache(args: &KernelsArgs) -> Result<DiskCache> {
    let disk = match &args.cache {
        Some(dir) => DiskCache::at(dir.clone()),
        None => DiskCache::from_env().ok_or_else(|| {
            usage(
                "no kernel cache: ARCHIPELAGO_KERNEL_CACHE turns it off, or neither \
                 XDG_CACHE_HOME nor HOME is set; give --cache DIR"
                    .into(),
            )
        })?,
    };
    disk.writable()
        .map_err(|e| usage(format!("cannot write into {}: {e}", disk.dir().display())))?;
    Ok(disk)
}

/// What building a program gave (its machine code and how it was built) and its cache key, or
/// the panic of the thread that built it.
type Built = std::thread::Result<(archipelago::Result<(Arc<Vec<u8>>, module::Built)>, u128)>;

/// Builds every program of `programs` for `cc` into `disk`, each on a thread of its own.
fn build_all(programs: &[module::Program], cc: (i32, i32), disk: &DiskCache) -> Vec<Built> {
    std::thread::scope(|s| {
        let handles: Vec<_> = programs
            .iter()
            .map(|p| {
                s.spawn(move || {
                    let src = (p.source)();
                    let built = module::machine_code_with(&src, cc, p.split, Some(disk));
                    (built, module::disk_key(&src, cc, p.split))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_parse_in_three_spellings() {
        assert_eq!(parse_arch("sm_90").unwrap(), (9, 0));
        assert_eq!(parse_arch("90").unwrap(), (9, 0));
        assert_eq!(parse_arch("9.0").unwrap(), (9, 0));
        assert_eq!(parse_arch("sm_100").unwrap(), (10, 0));
        assert_eq!(parse_arch("86").unwrap(), (8, 6));
        for bad in ["", "sm_", "9", "sm_90a", "compute_90", "9.10", "x.0", "-90"] {
            assert!(parse_arch(bad).is_err(), "{bad}");
        }
    }
}
