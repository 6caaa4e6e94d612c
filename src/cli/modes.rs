//! The mode lists of `demo --modes` and `replay --mode`: single modes by name and the groups
//! `cpu`, `gpu` and `all`, resolved one way for both commands. The device is then opened only
//! where a picked mode runs on it, and its absence is an error unless only `all` asked for it.

use archipelago::{Error, Result};

/// The groups a mode list may name besides single modes.
const GROUPS: [&str; 3] = ["cpu", "gpu", "all"];

/// A mode list resolved over the modes a command knows.
#[derive(Debug, PartialEq, Eq)]
pub struct Picked {
    /// The modes picked, as indices into the known list, in the order asked (a group's in the
    /// known list's order), each once.
    pub modes: Vec<usize>,
    /// Those asked for by their own name rather than through a group: one of them that refuses
    /// every input checked nothing, which fails the run.
    pub named: Vec<usize>,
    /// Whether the device modes may be left out where no device opens: only `all` asked for
    /// them.
    pub gpu_optional: bool,
}

/// Resolves `asked` (names and groups, as given) over `known`: each mode's name and whether it
/// runs on the device. An unknown name is [`Error::UnknownMode`], with every name known.
pub fn pick(asked: &[String], known: &[(&str, bool)]) -> Result<Picked> {
    let mut p = Picked {
        modes: Vec::new(),
        named: Vec::new(),
        gpu_optional: false,
    };
    let (mut optional, mut required) = (false, false);
    for name in asked.iter().map(|n| n.trim()) {
        let group: Vec<usize> = match name {
            "all" => {
                optional = true;
                (0..known.len()).collect()
            }
            "cpu" => (0..known.len()).filter(|&i| !known[i].1).collect(),
            "gpu" => (0..known.len()).filter(|&i| known[i].1).collect(),
            _ => match known.iter().position(|&(n, _)| n == name) {
                Some(i) => {
                    if !p.named.contains(&i) {
                        p.named.push(i);
                    }
                    vec![i]
                }
                None => {
                    let names: Vec<&str> = known.iter().map(|&(n, _)| n).collect();
                    return Err(Error::UnknownMode {
                        name: name.into(),
                        known: format!(
                            "{}, and the groups {}",
                            names.join(", "),
                            GROUPS.join(", ")
                        ),
                    });
                }
            },
        };
        required |= name != "all" && group.iter().any(|&i| known[i].1);
        for i in group {
            if !p.modes.contains(&i) {
                p.modes.push(i);
            }
        }
    }
    p.gpu_optional = optional && !required;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [(&str, bool); 4] = [
        ("dsu", false),
        ("oracle", false),
        ("gpu-block", true),
        ("gpu-quotient", true),
    ];

    fn pick_of(asked: &[&str]) -> Result<Picked> {
        let asked: Vec<String> = asked.iter().map(|s| s.to_string()).collect();
        pick(&asked, &KNOWN)
    }

    #[test]
    fn all_is_every_mode_with_the_device_ones_optional() {
        let p = pick_of(&["all"]).unwrap();
        assert_eq!(p.modes, [0, 1, 2, 3]);
        assert!(p.gpu_optional && p.named.is_empty());
    }

    #[test]
    fn groups_split_by_side_and_a_device_group_is_required() {
        let cpu = pick_of(&["cpu"]).unwrap();
        assert_eq!((cpu.modes, cpu.gpu_optional), (vec![0, 1], false));
        let gpu = pick_of(&["gpu", "all"]).unwrap();
        assert_eq!(gpu.modes, [2, 3, 0, 1], "asked order, each once");
        assert!(!gpu.gpu_optional, "`gpu` asked for the device modes");
    }

    #[test]
    fn a_device_mode_named_is_required_and_modes_come_once() {
        let p = pick_of(&["dsu", " gpu-block", "dsu", "all"]).unwrap();
        assert_eq!(p.modes, [0, 2, 1, 3]);
        assert_eq!(p.named, [0, 2], "names as asked, trimmed, each once");
        assert!(!p.gpu_optional, "gpu-block was asked for by name");
        let p = pick_of(&["dsu", "cpu"]).unwrap();
        assert_eq!(
            (p.named, p.gpu_optional),
            (vec![0], false),
            "groups name no mode"
        );
    }

    #[test]
    fn unknown_modes_are_refused_with_every_name() {
        let e = pick_of(&["dsu", "gpu-fast"]).unwrap_err().to_string();
        assert!(
            e.contains("`gpu-fast`") && e.contains("gpu-quotient"),
            "{e}"
        );
        assert!(e.contains("the groups cpu, gpu, all"), "{e}");
    }
}
