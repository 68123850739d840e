//! cp's command line, drawn at random: every option of `cp --help` (GNU coreutils 9.1),
//! combined, repeated, abbreviated, bundled and in random order among the operands.

use std::ffi::OsString;

use crate::rng::Rng;

/// What an option takes.
#[derive(Debug, Clone, Copy)]
pub enum Takes {
    Nothing,
    /// `--name[=VALUE]`: only in the `=` form.
    Optional(&'static [&'static str]),
    /// `--name=VALUE`, `--name VALUE`, `-xVALUE` or `-x VALUE`.
    Required(&'static [&'static str]),
    /// A comma-separated list of attributes, optional or required.
    Attrs {
        optional: bool,
    },
    /// The destination directory (`-t`).
    Target,
}

/// One option of `cp --help`.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// How the allowlist and the report name it: the long name, or the letter.
    pub id: &'static str,
    pub shorts: &'static str,
    pub long: Option<&'static str>,
    pub takes: Takes,
    /// Relative frequency.
    pub weight: u64,
}

const fn spec(
    id: &'static str,
    shorts: &'static str,
    long: Option<&'static str>,
    takes: Takes,
    weight: u64,
) -> Spec {
    Spec {
        id,
        shorts,
        long,
        takes,
        weight,
    }
}

const BACKUPS: &[&str] = &[
    "none", "off", "simple", "never", "existing", "nil", "numbered", "t", "bogus",
];
const WHEN: &[&str] = &["auto", "always", "never"];
const SUFFIXES: &[&str] = &["~", ".bak", "", ".~1~", "-"];
const ATTRS: &[&str] = &[
    "mode",
    "ownership",
    "timestamps",
    "links",
    "xattr",
    "context",
    "all",
    "bogus",
];

use Takes::*;

/// Every option of `cp --help`, in its order.
pub const OPTIONS: &[Spec] = &[
    spec("archive", "a", Some("archive"), Nothing, 12),
    spec("attributes-only", "", Some("attributes-only"), Nothing, 4),
    spec("backup", "", Some("backup"), Optional(BACKUPS), 5),
    spec("b", "b", None, Nothing, 5),
    spec("copy-contents", "", Some("copy-contents"), Nothing, 0),
    spec("d", "d", None, Nothing, 5),
    spec("force", "f", Some("force"), Nothing, 6),
    spec("interactive", "i", Some("interactive"), Nothing, 4),
    spec("H", "H", None, Nothing, 4),
    spec("link", "l", Some("link"), Nothing, 4),
    spec("dereference", "L", Some("dereference"), Nothing, 5),
    spec("no-clobber", "n", Some("no-clobber"), Nothing, 5),
    spec("no-dereference", "P", Some("no-dereference"), Nothing, 4),
    spec("p", "p", None, Nothing, 8),
    spec(
        "preserve",
        "",
        Some("preserve"),
        Attrs { optional: true },
        7,
    ),
    spec(
        "no-preserve",
        "",
        Some("no-preserve"),
        Attrs { optional: false },
        5,
    ),
    spec("parents", "", Some("parents"), Nothing, 4),
    spec("recursive", "rR", Some("recursive"), Nothing, 6),
    spec("reflink", "", Some("reflink"), Optional(WHEN), 4),
    spec(
        "remove-destination",
        "",
        Some("remove-destination"),
        Nothing,
        4,
    ),
    spec("sparse", "", Some("sparse"), Required(WHEN), 4),
    spec(
        "strip-trailing-slashes",
        "",
        Some("strip-trailing-slashes"),
        Nothing,
        3,
    ),
    spec("symbolic-link", "s", Some("symbolic-link"), Nothing, 3),
    spec("suffix", "S", Some("suffix"), Required(SUFFIXES), 4),
    spec("target-directory", "t", Some("target-directory"), Target, 0),
    spec(
        "no-target-directory",
        "T",
        Some("no-target-directory"),
        Nothing,
        4,
    ),
    spec("update", "u", Some("update"), Nothing, 5),
    spec("verbose", "v", Some("verbose"), Nothing, 6),
    spec("one-file-system", "x", Some("one-file-system"), Nothing, 3),
    spec("Z", "Z", None, Nothing, 1),
    spec(
        "context",
        "",
        Some("context"),
        Optional(&["system_u:object_r:tmp_t:s0"]),
        1,
    ),
    spec("help", "", Some("help"), Nothing, 0),
    spec("version", "", Some("version"), Nothing, 0),
];

fn find(id: &str) -> &'static Spec {
    OPTIONS.iter().find(|s| s.id == id).expect("a cp option")
}

/// The options of one command line, each as the arguments it is spelled with.
#[derive(Debug, Clone, Default)]
pub struct Drawn {
    /// Option ids in command-line order (repeats included), for the allowlist.
    pub ids: Vec<&'static str>,
    /// The spelled option groups (one or two arguments each).
    pub groups: Vec<Vec<OsString>>,
}

impl Drawn {
    pub fn has(&self, id: &str) -> bool {
        self.ids.contains(&id)
    }

    fn push(&mut self, rng: &mut Rng, spec: &'static Spec, target: Option<&OsString>) {
        self.ids.push(spec.id);
        self.groups.push(spell(rng, spec, target));
    }
}

/// Draws the options: `copy_contents` adds `--copy-contents`, `target` (the destination)
/// adds `-t` in some spelling, and `help` adds `--help` or `--version`.
pub fn draw(rng: &mut Rng, copy_contents: bool, target: Option<&OsString>) -> Drawn {
    let mut out = Drawn::default();
    if rng.chance(55) {
        out.push(rng, find("recursive"), None);
    }
    if copy_contents {
        out.push(rng, find("copy-contents"), None);
    }
    if let Some(t) = target {
        out.push(rng, find("target-directory"), Some(t));
    }
    if rng.chance(1) {
        let id = if rng.chance(50) { "help" } else { "version" };
        out.push(rng, find(id), None);
    }
    let total: u64 = OPTIONS.iter().map(|s| s.weight).sum();
    let count = *rng.pick(&[0, 1, 1, 2, 2, 2, 3, 3, 4, 5, 6]);
    for _ in 0..count {
        let mut at = rng.below(total);
        let spec = OPTIONS
            .iter()
            .find(|s| {
                let hit = at < s.weight;
                at = at.saturating_sub(s.weight);
                hit
            })
            .expect("weights add up");
        out.push(rng, spec, None);
        // Sometimes the same option twice, maybe spelled another way.
        if rng.chance(8) {
            out.push(rng, spec, None);
        }
    }
    out
}

/// One spelling of `spec`: short or long, abbreviated, with its value attached or apart.
fn spell(rng: &mut Rng, spec: &'static Spec, target: Option<&OsString>) -> Vec<OsString> {
    let short = spec.shorts.as_bytes();
    let use_short = !short.is_empty() && (spec.long.is_none() || rng.chance(50));
    let value: Option<OsString> = match spec.takes {
        Nothing => None,
        Optional(values) => rng.chance(60).then(|| abbreviate_value(rng, values).into()),
        Required(values) => Some(abbreviate_value(rng, values).into()),
        Attrs { optional } => (!optional || rng.chance(60)).then(|| attrs(rng).into()),
        Target => target.cloned(),
    };
    if use_short {
        let mut flag = OsString::from(format!("-{}", *rng.pick(short) as char));
        return match value {
            None => vec![flag],
            Some(v) if rng.chance(50) => {
                flag.push(v);
                vec![flag]
            }
            Some(v) => vec![flag, v],
        };
    }
    let long = spec
        .long
        .expect("an option without a letter has a long name");
    let mut flag = OsString::from(format!("--{}", abbreviate(rng, long)));
    let separate = matches!(spec.takes, Required(_) | Target)
        || matches!(spec.takes, Attrs { optional: false });
    match value {
        None => vec![flag],
        Some(v) if separate && rng.chance(40) => vec![flag, v],
        Some(v) => {
            flag.push("=");
            flag.push(v);
            vec![flag]
        }
    }
}

/// `long` cut to a random length at which it is still a unique prefix, as getopt allows.
fn abbreviate(rng: &mut Rng, long: &'static str) -> &'static str {
    if rng.chance(70) {
        return long;
    }
    let names: Vec<&str> = OPTIONS.iter().filter_map(|s| s.long).collect();
    let shortest = unique_prefix(long, &names);
    &long[..rng.range(shortest as u64, long.len() as u64) as usize]
}

/// A value, sometimes cut to a unique prefix (cp's argmatch accepts those too).
fn abbreviate_value(rng: &mut Rng, values: &'static [&'static str]) -> &'static str {
    let v = *rng.pick(values);
    if v.is_empty() || rng.chance(80) {
        return v;
    }
    let shortest = unique_prefix(v, values);
    &v[..rng.range(shortest as u64, v.len() as u64) as usize]
}

/// The length of the shortest prefix of `name` that no other of `names` starts with.
pub fn unique_prefix(name: &str, names: &[&str]) -> usize {
    (1..=name.len())
        .find(|&k| {
            !names
                .iter()
                .any(|o| *o != name && o.starts_with(&name[..k]))
        })
        .unwrap_or(name.len())
}

/// An attribute list: one to three names, sometimes with a bogus one or an empty item.
fn attrs(rng: &mut Rng) -> String {
    let n = rng.range(1, 3);
    let picked: Vec<&str> = (0..n).map(|_| *rng.pick(ATTRS)).collect();
    picked.join(",")
}

/// Bundles adjacent single-letter flags (`-r -v` → `-rv`) now and then.
pub fn bundle(rng: &mut Rng, groups: Vec<Vec<OsString>>) -> Vec<Vec<OsString>> {
    let is_flag = |g: &[OsString]| {
        g.len() == 1 && {
            let b = g[0].as_encoded_bytes();
            b.len() == 2 && b[0] == b'-' && b[1] != b'-' && !b"St".contains(&b[1])
        }
    };
    let mut out: Vec<Vec<OsString>> = Vec::new();
    for g in groups {
        match out.last_mut() {
            Some(last)
                if is_flag(&g) && last.len() == 1 && rng.chance(40) && {
                    let b = last[0].as_encoded_bytes();
                    b.len() >= 2
                        && b[0] == b'-'
                        && b[1] != b'-'
                        && b[1..]
                            .iter()
                            .all(|c| c.is_ascii_alphabetic() && !b"St".contains(c))
                } =>
            {
                let letter = &g[0].as_encoded_bytes()[1..];
                last[0].push(std::str::from_utf8(letter).expect("an ASCII letter"));
            }
            _ => out.push(g),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_unique_among_long_options() {
        let names: Vec<&str> = OPTIONS.iter().filter_map(|s| s.long).collect();
        assert_eq!(unique_prefix("recursive", &names), 3);
        assert_eq!(unique_prefix("archive", &names), 2);
        assert_eq!(unique_prefix("no-preserve", &names), 4);
        assert_eq!(unique_prefix("always", WHEN), 2);
    }
}
