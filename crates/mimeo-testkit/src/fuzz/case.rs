//! One cp case: a place (a directory) holding a generated source tree, a destination in
//! one of its states, and a command line. Everything is drawn from the case's seed, so the
//! place can be built twice, identically: once for GNU cp and once for mimeo.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Gid, Mode, Timespec, Timestamps, Uid};

use super::opts::{self, Drawn};
use crate::rng::Rng;
use crate::treegen::{GenOptions, generate};

/// The times of everything the case makes outside the generated tree (2017-07-14).
pub const FIXED_TIME: i64 = 1_500_000_000;

/// What is at the destination before the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestState {
    Absent,
    File,
    /// A directory, empty or holding an entry named like the first source.
    Dir,
    SymlinkToFile,
    SymlinkToDir,
    Dangling,
    SymlinkLoop,
    /// A hard link of the first source (a file): another name of the same inode.
    HardLinkOfSource,
    Fifo,
    /// The destination is the first source itself.
    SourceItself,
    /// The destination is inside the source tree.
    InsideSource,
}

const DEST_STATES: &[DestState] = &[
    DestState::Absent,
    DestState::Absent,
    DestState::File,
    DestState::Dir,
    DestState::Dir,
    DestState::SymlinkToFile,
    DestState::SymlinkToDir,
    DestState::Dangling,
    DestState::SymlinkLoop,
    DestState::HardLinkOfSource,
    DestState::Fifo,
    DestState::SourceItself,
    DestState::InsideSource,
];

/// A built case: what to run, and what the run needs around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The replaced tool, as the command lines name it.
    pub tool: &'static str,
    pub seed: u64,
    pub args: Vec<OsString>,
    /// Environment besides `PATH` and `LC_ALL=C`.
    pub env: Vec<(String, String)>,
    pub opts: Vec<&'static str>,
    pub dest: DestState,
    /// The destination as given: the last operand, or `-t`'s directory.
    pub target: OsString,
    /// The operands naming sources, as given.
    pub sources: Vec<OsString>,
    /// A FIFO (relative to the place) that a writer feeds once, for runs that read it.
    pub feed: Option<PathBuf>,
    /// FIFOs (relative) that a reader drains, so that writing into them never blocks.
    pub drains: Vec<PathBuf>,
    /// The source tree has a directory its owner cannot list or search.
    pub odd_dirs: bool,
    /// Where the case was built: an absolute operand (and cp's message about it) starts
    /// with it.
    pub place: PathBuf,
}

impl Plan {
    /// The destination's path, relative to the place, without a trailing slash or `./`.
    pub fn target_path(&self) -> PathBuf {
        Path::new(&self.target).components().as_path().to_path_buf()
    }

    /// The directory the destination is, or leads to (through the symlink `d` to `td`, or
    /// the case's `ls` to `s`).
    pub fn target_dir(&self) -> PathBuf {
        match self.dest {
            DestState::SymlinkToDir => PathBuf::from("td"),
            _ if self.target_path() == Path::new("ls") => PathBuf::from("s"),
            _ => self.target_path(),
        }
    }

    /// `name` relative to the place where it is an absolute name in it, so that it compares
    /// with the names the operands give relatively; else `name` itself.
    pub fn in_place(&self, name: &Path) -> PathBuf {
        match name.strip_prefix(&self.place) {
            Ok(rel) if !self.place.as_os_str().is_empty() => rel.to_path_buf(),
            _ => name.to_path_buf(),
        }
    }

    pub fn has(&self, id: &str) -> bool {
        self.opts.contains(&id)
    }

    /// The command line, shell-quoted, for messages and reproduction.
    pub fn command(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.env {
            s.push_str(&format!("{k}={} ", quote(OsStr::new(v))));
        }
        s.push_str(self.tool);
        for a in &self.args {
            s.push(' ');
            s.push_str(&quote(a));
        }
        s
    }
}

/// Shell quoting in the `$'...'` form for anything unusual.
pub fn quote(s: &OsStr) -> String {
    let b = s.as_bytes();
    let plain = |c: &u8| c.is_ascii_alphanumeric() || b"-_./=,~:+@%".contains(c);
    if !b.is_empty() && b.iter().all(plain) {
        return s.to_string_lossy().into_owned();
    }
    let mut out = String::from("$'");
    for &c in b {
        match c {
            b'\'' | b'\\' => out.push_str(&format!("\\{}", c as char)),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Builds the case `seed` in `place` (which must not exist) and returns its plan. With
/// `user`, the place is handed to that user (most entries; some stay root's).
pub fn build(place: &Path, seed: u64, user: Option<u32>) -> io::Result<Plan> {
    let mut rng = Rng::new(seed);
    fs::create_dir(place)?;
    let copy_contents = rng.chance(6);
    let tree = GenOptions {
        seed: rng.next_u64(),
        entries: rng.range(0, 9) as usize,
        devices: !copy_contents && rng.chance(15),
        foreign_owners: rng.chance(30),
        locked_modes: rng.chance(30),
        max_file_size: 64 << 10,
        fifos: !copy_contents,
        hostile: true,
    };
    generate(&place.join("s"), &tree)?;
    let mut data = vec![0u8; *rng.pick(&[0, 1, 100, 5000, 70000])];
    rng.fill(&mut data);
    fs::write(place.join("f"), &data)?;
    let fifo = rng.chance(12);
    if fifo {
        mkfifo(&place.join("p"))?;
    }
    symlink("s", place.join("ls"))?;
    symlink("f", place.join("lf"))?;
    let entries = readable_entries(place, Path::new("s"));
    let odd_dirs = odd_dirs(&place.join("s"));
    let sources = pick_sources(&mut rng, place, &entries, fifo);
    let (dest, state) = make_dest(&mut rng, place, &sources, &entries)?;
    let target = rng.chance(12).then(|| dest.clone());
    let drawn = opts::draw(&mut rng, copy_contents, target.as_ref());
    let args = assemble(
        &mut rng,
        drawn.clone(),
        &sources,
        target.is_none().then_some(&dest),
    );
    let env = draw_env(&mut rng);
    for name in ["f", "ls", "lf", "p", "t", "td", "td/x"] {
        fix_times(&place.join(name));
    }
    fix_dest_times(place, &dest);
    if let Some(uid) = user {
        give_away(&mut rng, place, uid)?;
    }
    fix_times(place);
    let mut drains = Vec::new();
    fifos_below(place, Path::new(""), &mut drains);
    drains.retain(|p| p != Path::new("p"));
    Ok(Plan {
        tool: "cp",
        seed,
        args,
        env,
        opts: drawn.ids,
        dest: state,
        target: dest,
        sources,
        feed: fifo.then(|| PathBuf::from("p")),
        drains,
        odd_dirs,
        place: place.to_path_buf(),
    })
}

/// Whether a directory below `root` (or `root`) lacks the owner's read or search bit.
fn odd_dirs(root: &Path) -> bool {
    let Ok(m) = fs::symlink_metadata(root) else {
        return false;
    };
    if !m.is_dir() {
        return false;
    }
    if m.mode() & 0o500 != 0o500 {
        return true;
    }
    fs::read_dir(root).is_ok_and(|list| list.flatten().any(|e| odd_dirs(&e.path())))
}

fn mkfifo(path: &Path) -> io::Result<()> {
    rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o644), 0)?;
    Ok(())
}

/// Sets the fixed times on `path` (not following a symlink), if it exists.
fn fix_times(path: &Path) {
    let t = Timespec {
        tv_sec: FIXED_TIME,
        tv_nsec: 0,
    };
    let times = Timestamps {
        last_access: t,
        last_modification: t,
    };
    let _ = rustix::fs::utimensat(CWD, path, &times, AtFlags::SYMLINK_NOFOLLOW);
}

/// Fixed times on the destination and, for a directory made by the case, what it holds.
fn fix_dest_times(place: &Path, dest: &OsStr) {
    let dest = place.join(dest);
    if let Ok(list) = fs::read_dir(&dest) {
        for e in list.flatten() {
            fix_times(&e.path());
        }
    }
    if !dest.starts_with(place.join("s")) {
        fix_times(&dest);
    }
}

/// Entries below `rel` (relative to `place`, sorted), except those that lead to a FIFO or
/// a device: naming one of those would make cp read it.
fn readable_entries(place: &Path, rel: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(list) = fs::read_dir(place.join(rel)) else {
        return out;
    };
    let mut names: Vec<OsString> = list.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let path = rel.join(&name);
        let Ok(m) = fs::symlink_metadata(place.join(&path)) else {
            continue;
        };
        let followed = fs::metadata(place.join(&path)).map(|m| m.file_type());
        let special = followed.is_ok_and(|t| {
            use std::os::unix::fs::FileTypeExt;
            t.is_fifo() || t.is_char_device() || t.is_block_device()
        });
        if !special {
            out.push(path.clone());
        }
        if m.is_dir() {
            out.extend(readable_entries(place, &path));
        }
    }
    out
}

/// One to three source operands, sometimes one of them twice.
fn pick_sources(rng: &mut Rng, place: &Path, entries: &[PathBuf], fifo: bool) -> Vec<OsString> {
    let n = *rng.pick(&[1, 1, 1, 1, 1, 1, 2, 2, 2, 3]);
    let mut out: Vec<OsString> = Vec::new();
    for _ in 0..n {
        let mut s: OsString = match rng.below(16) {
            0..=3 => "s".into(),
            4 => "s/".into(),
            5 => "s/.".into(),
            6 | 7 => "f".into(),
            8 => "ls".into(),
            9 => "lf".into(),
            10 => "missing".into(),
            11 if fifo && !out.iter().any(|o| o == "p") => "p".into(),
            _ if !entries.is_empty() => {
                let e = rng.pick(entries);
                let mut s = e.clone().into_os_string();
                if place.join(e).is_dir() && rng.chance(30) {
                    s.push("/");
                }
                s
            }
            _ => "f".into(),
        };
        if rng.chance(5) {
            s = place.join(s).into_os_string();
        }
        out.push(s);
    }
    if rng.chance(5) && out[0] != "p" {
        out.push(out[0].clone());
    }
    out
}

/// Makes the destination's state; returns the destination operand and the state.
fn make_dest(
    rng: &mut Rng,
    place: &Path,
    sources: &[OsString],
    entries: &[PathBuf],
) -> io::Result<(OsString, DestState)> {
    let state = *rng.pick(DEST_STATES);
    let mut name: OsString = match rng.below(12) {
        0 => OsString::from_vec(b"d\x1b]0;x\x07".to_vec()),
        1 => "d\nx".into(),
        2 => OsString::from_vec(b"d\xff".to_vec()),
        _ => "d".into(),
    };
    let at = place.join(&name);
    match state {
        DestState::Absent => {}
        DestState::File => {
            fs::write(&at, b"old dest\n")?;
            let mode = *rng.pick(&[0o644, 0o600, 0o444, 0o000, 0o4755]);
            fs::set_permissions(&at, fs::Permissions::from_mode(mode))?;
        }
        DestState::Dir => {
            fs::create_dir(&at)?;
            if rng.chance(60) {
                occupy(rng, &at, &sources[0])?;
            }
        }
        DestState::SymlinkToFile => {
            fs::write(place.join("t"), b"symlink target\n")?;
            symlink("t", &at)?;
        }
        DestState::SymlinkToDir => {
            fs::create_dir(place.join("td"))?;
            if rng.chance(50) {
                occupy(rng, &place.join("td"), &sources[0])?;
            }
            symlink("td", &at)?;
        }
        DestState::Dangling => symlink("nowhere", &at)?,
        DestState::SymlinkLoop => symlink(&name, &at)?,
        DestState::HardLinkOfSource => {
            let src = place.join(&sources[0]);
            match fs::symlink_metadata(&src) {
                Ok(m) if m.is_file() => fs::hard_link(&src, &at)?,
                _ => fs::write(&at, b"old dest\n")?,
            }
        }
        DestState::Fifo => mkfifo(&at)?,
        DestState::SourceItself => name = sources[0].clone(),
        DestState::InsideSource => {
            name = match entries {
                [] => "s/d".into(),
                _ if rng.chance(50) => rng.pick(entries).clone().into_os_string(),
                _ => rng.pick(entries).join("d").into_os_string(),
            };
        }
    }
    if rng.chance(8) {
        name.push("/");
    }
    Ok((name, state))
}

/// Puts an entry named like `source`'s last component into `dir`: a file, a directory, a
/// symlink or a FIFO, so that the copy meets something there.
fn occupy(rng: &mut Rng, dir: &Path, source: &OsStr) -> io::Result<()> {
    let Some(base) = Path::new(source).file_name() else {
        return Ok(());
    };
    let at = dir.join(base);
    match rng.below(5) {
        0 | 1 => fs::write(&at, b"in the way\n")?,
        2 => {
            fs::create_dir(&at)?;
            fs::write(at.join("old"), b"old\n")?;
        }
        3 => symlink("../f", &at)?,
        _ => mkfifo(&at)?,
    }
    fix_times(&at);
    Ok(())
}

/// Options and operands in one random order: options may come before, between or after
/// the operands (GNU getopt permutes), or all before a `--`.
fn assemble(
    rng: &mut Rng,
    drawn: Drawn,
    sources: &[OsString],
    dest: Option<&OsString>,
) -> Vec<OsString> {
    let mut groups = drawn.groups;
    // Shuffle (Fisher-Yates).
    for i in (1..groups.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        groups.swap(i, j);
    }
    let groups = opts::bundle(rng, groups);
    let mut operands: Vec<OsString> = sources.to_vec();
    operands.extend(dest.cloned());
    let dashed = operands.iter().any(|o| o.as_bytes().starts_with(b"-"));
    if dashed || rng.chance(5) {
        let mut out: Vec<OsString> = groups.into_iter().flatten().collect();
        out.push("--".into());
        out.extend(operands);
        return out;
    }
    let mut out = Vec::new();
    let mut slots: Vec<Vec<Vec<OsString>>> = vec![Vec::new(); operands.len() + 1];
    for g in groups {
        let at = if rng.chance(75) {
            0
        } else {
            rng.below(slots.len() as u64) as usize
        };
        slots[at].push(g);
    }
    for (i, slot) in slots.into_iter().enumerate() {
        out.extend(slot.into_iter().flatten());
        if let Some(o) = operands.get(i) {
            out.push(o.clone());
        }
    }
    out
}

fn draw_env(rng: &mut Rng) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if rng.chance(10) {
        let v = *rng.pick(&["none", "simple", "numbered", "existing", "t", "bogus"]);
        env.push(("VERSION_CONTROL".into(), v.into()));
    }
    if rng.chance(8) {
        let v = *rng.pick(&[".orig", "~~", ""]);
        env.push(("SIMPLE_BACKUP_SUFFIX".into(), v.into()));
    }
    env
}

/// Hands the place to `uid` (and the group of the same number): every entry but about one
/// in ten, keeping modes (chown clears set-id bits) and times.
fn give_away(rng: &mut Rng, place: &Path, uid: u32) -> io::Result<()> {
    let mut all = vec![place.to_path_buf()];
    let mut i = 0;
    while i < all.len() {
        let p = all[i].clone();
        i += 1;
        if fs::symlink_metadata(&p)?.is_dir() {
            let mut names: Vec<PathBuf> = fs::read_dir(&p)?.flatten().map(|e| e.path()).collect();
            names.sort();
            all.extend(names);
        }
    }
    for (n, p) in all.iter().enumerate() {
        if n > 0 && rng.chance(10) {
            continue;
        }
        let m = fs::symlink_metadata(p)?;
        let (u, g) = (Some(Uid::from_raw(uid)), Some(Gid::from_raw(uid)));
        rustix::fs::chownat(CWD, p, u, g, AtFlags::SYMLINK_NOFOLLOW)?;
        if !m.file_type().is_symlink() {
            fs::set_permissions(p, fs::Permissions::from_mode(m.mode() & 0o7777))?;
        }
    }
    Ok(())
}

/// The FIFOs below `rel` (relative to `place`).
fn fifos_below(place: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    use std::os::unix::fs::FileTypeExt;
    let Ok(list) = fs::read_dir(place.join(rel)) else {
        return;
    };
    let mut names: Vec<OsString> = list.flatten().map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let path = rel.join(&name);
        match fs::symlink_metadata(place.join(&path)) {
            Ok(m) if m.file_type().is_fifo() => out.push(path),
            Ok(m) if m.is_dir() => fifos_below(place, &path, out),
            _ => {}
        }
    }
}
