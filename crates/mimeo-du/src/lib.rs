//! What the space commands (`mimeo-du`, `mimeo-dedupe`) share beyond the family's foundation
//! (`mimeo_cli::family`): their common options, and how they report a failure and a
//! duration. The commands stay thin: they parse, call `mimeo::space`, and render.

use mimeo_cli::output;
use std::time::Duration;

/// The options both commands take.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// Do not descend into directories on other filesystems
    #[arg(short = 'x', long)]
    pub one_file_system: bool,

    /// JSON Lines on stdout, with stable field names (names that are not UTF-8 as
    /// {"hex":"…"})
    #[arg(long)]
    pub json: bool,

    /// Number of workers (default: four per CPU, from 4 to 16)
    #[arg(short = 'j', long, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,

    #[command(flatten)]
    pub family: mimeo_cli::family::FamilyOptions,
}

impl Common {
    /// Whether to draw a progress line.
    pub fn progress(&self) -> bool {
        self.family.progress()
    }

    /// The number of workers asked for, if any.
    pub fn jobs(&self) -> Option<usize> {
        self.jobs.map(usize::from)
    }
}

/// Reports an engine failure: its sentence on stderr, and its JSON object on stdout with
/// `json`.
pub fn failed(json: bool, e: &mimeo::Error) {
    if json {
        output::error_json(e).print();
    }
    output::error(&e.to_string());
}

/// A duration as `1m05s` or `4.2s`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// How du shows sizes: `-k` (KiB, rounded up: the default), `-b` (bytes), `-h` (powers of
/// 1024) or `--si` (powers of 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    Kib,
    Bytes,
    Human,
    Si,
}

impl Units {
    /// `bytes` as du shows them in these units.
    pub fn show(self, bytes: u64) -> String {
        match self {
            Units::Kib => bytes.div_ceil(1024).to_string(),
            Units::Bytes => bytes.to_string(),
            Units::Human => human(bytes, 1024),
            Units::Si => human(bytes, 1000),
        }
    }
}

/// `bytes` as `du -h` (base 1024) or `du --si` (base 1000) shows it: under one unit as is;
/// below 10 with one decimal, else whole, always rounded up (`4.0K`, `1.5M`, `10M`, `1.0G`).
pub fn human(bytes: u64, base: u64) -> String {
    const LETTERS: &[u8] = b"KMGTPEZYRQ";
    let letter = |e: usize| match (e, base) {
        (1, 1000) => 'k',
        _ => char::from(LETTERS[e - 1]),
    };
    if bytes < base {
        return bytes.to_string();
    }
    let (n, base) = (u128::from(bytes), u128::from(base));
    let (mut exp, mut scale) = (0, 1u128);
    while n >= scale * base {
        scale *= base;
        exp += 1;
    }
    let tenths = (n * 10).div_ceil(scale);
    if tenths < 100 {
        return format!("{}.{}{}", tenths / 10, tenths % 10, letter(exp));
    }
    match n.div_ceil(scale) {
        // 1023.1K rounds up to 1024K: du shows 1.0M.
        whole if whole == base => format!("1.0{}", letter(exp + 1)),
        whole => format!("{whole}{}", letter(exp)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_round_up_as_du_does() {
        for (n, h, si) in [
            (0, "0", "0"),
            (999, "999", "999"),
            (1000, "1000", "1.0k"),
            (1024, "1.0K", "1.1k"),
            (1025, "1.1K", "1.1k"),
            (4096, "4.0K", "4.1k"),
            (10 * 1024 - 1, "10K", "11k"),
            (3 << 20, "3.0M", "3.2M"),
            ((1 << 20) - 1, "1.0M", "1.1M"),
            (1_000_000, "977K", "1.0M"),
            (u64::MAX, "16E", "19E"),
        ] {
            assert_eq!(human(n, 1024), h, "{n}");
            assert_eq!(human(n, 1000), si, "{n}");
        }
    }
}
