//! Checked configuration: engine options plus the (source, destination) pairs that cp's
//! target rules give.

use crate::args::{Args, AttrFlag, Update, When};
use crate::cmdline::choose;
use mimeo::{
    Backup, CopyPair, DanglingSymlink, Dereference, LinkInstead, Options, Overwrite, Preserve,
    Reflink, Sparse,
};
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// A usage error: exit status 2.
#[derive(Debug)]
pub struct Usage(pub String);

/// A fatal error found while resolving targets: exit status 1.
#[derive(Debug)]
pub struct Fatal(pub String);

#[derive(Debug)]
pub enum ConfigError {
    Usage(Usage),
    Fatal(Fatal),
}

#[derive(Debug)]
pub struct Config {
    pub options: Options,
    pub pairs: Vec<CopyPair>,
    pub verbose: bool,
    /// `--debug`: how each file was copied, after its `-v` line.
    pub debug: bool,
    pub json: bool,
    pub stats: bool,
    pub dry_run: bool,
    pub progress: bool,
}

fn usage(msg: impl Into<String>) -> ConfigError {
    ConfigError::Usage(Usage(msg.into()))
}

fn fatal(msg: impl Into<String>) -> ConfigError {
    ConfigError::Fatal(Fatal(msg.into()))
}

/// cp's attribute names, in the order its messages list them.
const PRESERVE_ITEMS: &[&str] = &[
    "mode",
    "timestamps",
    "ownership",
    "links",
    "context",
    "xattr",
    "all",
];

/// mimeo's own attributes. They are not in cp's list, so a name cp knows always means cp's,
/// and messages about a bad name list cp's names, as cp words them.
const MIMEO_ITEMS: &[&str] = &["sharing"];

/// What the attribute flags ask for: the attributes, the symlink rule (None: the default),
/// and whether `--preserve=context` was asked for by name (cp then requires SELinux; `all`
/// and `-a` only try).
struct Attributes {
    preserve: Preserve,
    dereference: Option<Dereference>,
    context_required: bool,
}

/// The attribute `item` of a `--preserve` or `--no-preserve` list (`option`) names, or cp's
/// message. Names may be abbreviated, as in cp; an empty one is ambiguous, as in cp.
pub(crate) fn preserve_item(item: &OsStr, option: &str) -> Result<&'static str, String> {
    // Bytes that are not UTF-8 name no attribute.
    let text = item.to_str().unwrap_or("\u{fffd}");
    match choose(text, PRESERVE_ITEMS) {
        Ok(i) => Ok(PRESERVE_ITEMS[i]),
        Err(bad) => match choose(text, MIMEO_ITEMS) {
            Ok(i) if !text.is_empty() => Ok(MIMEO_ITEMS[i]),
            _ => Err(bad.message(item, option, PRESERVE_ITEMS)),
        },
    }
}

/// Applies one `--preserve=LIST` (`on`) or `--no-preserve=LIST`.
fn apply_list(a: &mut Attributes, list: &str, on: bool) -> Result<(), ConfigError> {
    let p = &mut a.preserve;
    let option = if on { "--preserve" } else { "--no-preserve" };
    for item in list.split(',') {
        let name = preserve_item(OsStr::new(item), option).map_err(usage)?;
        match name {
            "mode" => {
                p.mode = on;
                p.default_mode = !on;
                p.explicit_no_mode = !on;
            }
            "ownership" => p.ownership = on,
            "timestamps" => p.timestamps = on,
            "links" => p.links = on,
            "sharing" => p.sharing = on,
            "xattr" => {
                p.xattr = on;
                p.xattr_required = on;
            }
            // SELinux contexts travel as the security.selinux xattr.
            "context" => a.context_required = on,
            "all" => {
                // xattr_required stays as it was, as in cp.
                p.mode = on;
                p.default_mode = !on;
                p.explicit_no_mode = !on;
                p.ownership = on;
                p.timestamps = on;
                p.links = on;
                p.xattr = on;
                p.sharing = on;
            }
            _ => unreachable!("{name} is not in PRESERVE_ITEMS or MIMEO_ITEMS"),
        }
    }
    Ok(())
}

fn quote(p: &Path) -> String {
    crate::output::quote(p)
}

/// What the flags give when applied in order, each overriding what an earlier one set, as
/// in cp.
fn attributes(flags: &[AttrFlag]) -> Result<Attributes, ConfigError> {
    let mut a = Attributes {
        preserve: Preserve::default(),
        dereference: None,
        context_required: false,
    };
    for flag in flags {
        match flag {
            AttrFlag::Archive => {
                // Unlike --preserve=all, -a leaves cp's explicit_no_preserve_mode set.
                let explicit = a.preserve.explicit_no_mode;
                apply_list(&mut a, "all", true)?;
                a.preserve.explicit_no_mode = explicit;
                // cp's reduced diagnostics, which nothing turns off again.
                a.preserve.xattr_quiet = true;
                a.dereference = Some(Dereference::Never);
            }
            AttrFlag::NoDerefPreserveLinks => {
                a.preserve.links = true;
                a.dereference = Some(Dereference::Never);
            }
            AttrFlag::DerefCommandLine => a.dereference = Some(Dereference::CommandLine),
            AttrFlag::DerefAlways => a.dereference = Some(Dereference::Always),
            AttrFlag::DerefNever => a.dereference = Some(Dereference::Never),
            AttrFlag::PreserveDefault => {
                // Unlike --preserve=mode, -p leaves cp's explicit_no_preserve_mode set.
                let explicit = a.preserve.explicit_no_mode;
                apply_list(&mut a, "mode,ownership,timestamps", true)?;
                a.preserve.explicit_no_mode = explicit;
            }
            AttrFlag::Preserve(list) => apply_list(&mut a, list, true)?,
            AttrFlag::NoPreserve(list) => apply_list(&mut a, list, false)?,
        }
    }
    Ok(a)
}

/// cp's backup types, with the names argmatch accepts for each.
const BACKUP_TYPES: &[(&str, BackupType)] = &[
    ("none", BackupType::None),
    ("off", BackupType::None),
    ("simple", BackupType::Simple),
    ("never", BackupType::Simple),
    ("existing", BackupType::Existing),
    ("nil", BackupType::Existing),
    ("numbered", BackupType::Numbered),
    ("t", BackupType::Numbered),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BackupType {
    None,
    Simple,
    Existing,
    Numbered,
}

/// A backup type named as argmatch reads it: exactly, or by a prefix whose every match means
/// the same type. `what` names the source in cp's message.
fn backup_type(value: &std::ffi::OsStr, what: &str) -> Result<BackupType, ConfigError> {
    let bytes = value.as_bytes();
    let exact = BACKUP_TYPES.iter().find(|(n, _)| n.as_bytes() == bytes);
    let mut begun = BACKUP_TYPES
        .iter()
        .filter(|(n, _)| n.as_bytes().starts_with(bytes));
    let found = match (exact, begun.next()) {
        (Some(&(_, t)), _) => Ok(t),
        (None, Some(&(_, t))) if begun.all(|&(_, u)| u == t) => Ok(t),
        (None, Some(_)) => Err("ambiguous"),
        (None, None) => Err("invalid"),
    };
    found.map_err(|why| {
        usage(format!(
            "{why} argument {} for '{what}'\nValid arguments are:\n  - 'none', 'off'\n  {}",
            mimeo::quote_arg(value),
            "- 'simple', 'never'\n  - 'existing', 'nil'\n  - 'numbered', 't'"
        ))
    })
}

/// `--backup[=CONTROL]`, `-b` and `-S`, as cp reads them: the last CONTROL given, else
/// `$VERSION_CONTROL`, else existing; the suffix from `-S`, else `$SIMPLE_BACKUP_SUFFIX`, else
/// `~`.
fn backup(a: &Args) -> Result<Option<Backup>, ConfigError> {
    if a.backup.is_none() && !a.backup_default && a.suffix.is_none() {
        return Ok(None);
    }
    // An empty CONTROL counts as none given, as in cp.
    // Any bytes: one that is not UTF-8 names no type, in cp's words.
    let kind = match a.backup.as_ref().and_then(Option::as_deref) {
        Some(control) if !control.is_empty() => backup_type(control, "backup type")?,
        _ => match std::env::var_os("VERSION_CONTROL") {
            Some(v) if !v.is_empty() => backup_type(&v, "$VERSION_CONTROL")?,
            _ => BackupType::Existing,
        },
    };
    let suffix = a
        .suffix
        .clone()
        .or_else(|| std::env::var_os("SIMPLE_BACKUP_SUFFIX"))
        .filter(|s| !s.is_empty() && own_last_component(s.as_bytes()))
        .unwrap_or_else(|| "~".into());
    Ok(match kind {
        BackupType::None => None,
        BackupType::Simple => Some(Backup::Simple { suffix }),
        BackupType::Existing => Some(Backup::Existing { suffix }),
        BackupType::Numbered => Some(Backup::Numbered),
    })
}

/// gnulib's test for a simple-backup suffix, `last_component (s) == s`: no slash but trailing
/// ones (`s/` is kept, and its backup then fails as the kernel's rename to that name does;
/// `a/b` and `/s` give way to `~`).
fn own_last_component(s: &[u8]) -> bool {
    let body = s.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    body > 0 && !s[..body].contains(&b'/')
}

/// Whether the running kernel has SELinux enabled (its filesystem is mounted).
fn selinux_enabled() -> bool {
    Path::new("/sys/fs/selinux/enforce").exists()
}

/// cp's warning for each --context=CTX where the kernel has no SELinux.
const CONTEXT_IGNORED: &str = "warning: ignoring --context; it requires an SELinux-enabled kernel";

/// Warnings about the options, which cp prints as it reads them, before any other message.
pub fn warnings(a: &Args) -> Vec<String> {
    // cp without SELinux ignores -Z silently, and each --context=CTX with a warning. mimeo
    // sets no contexts, so with SELinux it says so once.
    if a.context_given && selinux_enabled() {
        return vec!["warning: ignoring --context; mimeo cannot set SELinux contexts".into()];
    }
    a.context.iter().map(|_| CONTEXT_IGNORED.into()).collect()
}

/// The warnings cp has printed for the options `read` (spelled out) when a later one stops
/// it.
pub fn context_warnings(read: &[std::ffi::OsString]) -> Vec<String> {
    if selinux_enabled() {
        return Vec::new();
    }
    let options = read.iter().skip(1).take_while(|a| *a != "--");
    options
        .filter(|a| a.as_encoded_bytes().starts_with(b"--context="))
        .map(|_| CONTEXT_IGNORED.into())
        .collect()
}

impl Config {
    pub fn from_args(a: Args) -> Result<Config, ConfigError> {
        if a.target_directory.len() > 1 {
            return Err(usage("multiple target directories specified"));
        }
        let attrs = attributes(&a.attr_flags)?;
        let (preserve, dereference) = (attrs.preserve, attrs.dereference);
        let recursive = a.recursive || a.archive;
        if a.link && a.symbolic_link {
            return Err(usage("cannot make both hard and symbolic links"));
        }
        // Without -r, cp follows symlinks named as sources; with -l it follows them all,
        // also below a directory it copies (cp's DEREF_ALWAYS, as -L).
        let dereference = dereference.unwrap_or(match (recursive, a.link) {
            (true, false) => Dereference::Never,
            (true, true) => Dereference::Always,
            (false, _) => Dereference::CommandLine,
        });
        // -n wins over -f whatever their order, as in cp 9.1; of -i and -n the later counts.
        let no_clobber = a.no_clobber && !a.interactive_last;
        if no_clobber && (a.backup.is_some() || a.backup_default || a.suffix.is_some()) {
            return Err(usage(
                "options --backup and --no-clobber are mutually exclusive",
            ));
        }
        let overwrite = match a.update {
            // -n wins over -u whatever their order, as in cp 9.1.
            _ if no_clobber => Overwrite::NoClobber,
            None | Some(Update::All) => Overwrite::Replace,
            Some(Update::None) => Overwrite::NoClobber,
            Some(Update::NoneFail) => Overwrite::NoneFail,
            Some(Update::Older) => Overwrite::Update,
        };
        let when = |w: Option<When>| w.unwrap_or(When::Auto);
        let reflink = match when(a.reflink) {
            When::Auto => Reflink::Auto,
            When::Always => Reflink::Always,
            When::Never => Reflink::Never,
        };
        let sparse = match when(a.sparse) {
            When::Auto => Sparse::Auto,
            When::Always => Sparse::Always,
            When::Never => Sparse::Never,
        };
        if reflink == Reflink::Always && sparse != Sparse::Auto {
            return Err(usage("--reflink can be used only with --sparse=auto"));
        }
        // In cp's order: the backup type is read after the checks above.
        let backup = backup(&a)?;
        if attrs.context_required && !selinux_enabled() {
            return Err(fatal(
                "cannot preserve security context without an SELinux-enabled kernel",
            ));
        }
        let mut options = Options::default();
        options.reflink = reflink;
        options.sparse = sparse;
        options.preserve = preserve;
        options.dereference = dereference;
        options.overwrite = overwrite;
        options.recursive = recursive;
        options.one_file_system = a.one_file_system;
        options.clean_other_hosts = a.clean_other_hosts;
        if let Some(j) = a.jobs {
            // A fixed count: -j N is a cap, never grown.
            options.jobs = j;
            options.max_jobs = j;
        }
        if let Some(b) = a.buffer_size {
            options.buffer_size = b;
        }
        options.interactive = a.interactive_last;
        options.backup = backup;
        options.inplace = a.inplace;
        options.remove_destination = a.remove_destination;
        options.attributes_only = a.attributes_only;
        options.copy_contents = a.copy_contents;
        options.force = a.force;
        options.link = if a.link {
            Some(LinkInstead::Hard)
        } else if a.symbolic_link {
            Some(LinkInstead::Symbolic)
        } else {
            None
        };
        if let Some(size) = a.split {
            options.split = (size > 0).then_some(size);
        }
        options.verify = a.verify;
        options.nocache = a.nocache;
        options.record_origin = a.record_origin;
        options.shared_reads = !a.no_shared_reads;
        options.partial = a.partial;
        options.sync = a.sync;
        let progress = !a.quiet
            && match a.progress {
                When::Always => true,
                When::Never => false,
                When::Auto => std::io::IsTerminal::is_terminal(&std::io::stderr()),
            };
        options.parents = a.parents;
        options.keep_directory_symlink = a.keep_directory_symlink;
        let target_dir = a.target_directory.first().map(PathBuf::as_path);
        let pairs = if a.parents {
            under_parents(
                &a.operands,
                target_dir,
                a.no_target_directory,
                a.strip_trailing_slashes,
            )?
        } else {
            resolve_targets(
                &a.operands,
                target_dir,
                a.no_target_directory,
                a.strip_trailing_slashes,
            )?
        };
        let mut pairs = pairs;
        if prog_is_cp() {
            if std::env::var_os("POSIXLY_CORRECT").is_some() {
                write_through_dangling(&mut pairs);
            } else {
                options.dangling_symlink = DanglingSymlink::Refuse;
            }
        }
        if a.force && a.target_directory.is_empty() && !a.parents {
            if let Some(dst) = backup_onto_itself(&a.operands, a.no_target_directory, &options) {
                // cp's special case: `cp --force --backup F F` copies F to its backup name.
                pairs[0].dst = dst;
                options.backup = None;
            }
        }
        Ok(Config {
            options,
            pairs,
            verbose: a.verbose || a.debug,
            debug: a.debug,
            json: a.json,
            stats: a.stats,
            dry_run: a.dry_run,
            progress,
        })
    }
}

/// cp's rules: `-t DIR` or an existing directory as last operand copies into it; otherwise
/// exactly two operands copy SOURCE to DEST. With `strip`, the sources copied into a
/// directory lose their trailing slashes, as in cp (which leaves SOURCE in SOURCE DEST as
/// given).
pub fn resolve_targets(
    operands: &[PathBuf],
    target_dir: Option<&Path>,
    no_target_dir: bool,
    strip: bool,
) -> Result<Vec<CopyPair>, ConfigError> {
    let into_dir = |src: &PathBuf, dir: &Path| {
        if strip {
            into_dir(&strip_trailing_slashes(src), dir)
        } else {
            into_dir(src, dir)
        }
    };
    both_target_options(operands, target_dir, no_target_dir)?;
    if let Some(dir) = target_dir {
        if operands.is_empty() {
            return Err(usage("missing file operand"));
        }
        if !dir.is_dir() {
            return Err(not_a_directory("target directory", dir));
        }
        return Ok(operands.iter().map(|s| into_dir(s, dir)).collect());
    }
    match operands.len() {
        0 => return Err(usage("missing file operand")),
        1 => {
            return Err(usage(format!(
                "missing destination file operand after {}",
                quote(&operands[0])
            )));
        }
        _ => {}
    }
    let (dest, sources) = operands.split_last().expect("two or more operands");
    if no_target_dir {
        if sources.len() > 1 {
            return Err(usage(format!("extra operand {}", quote(&operands[2]))));
        }
        return Ok(single(&sources[0], dest));
    }
    if dest.is_dir() {
        return Ok(sources.iter().map(|s| into_dir(s, dest)).collect());
    }
    if sources.len() > 1 {
        return Err(not_a_directory("target", dest));
    }
    Ok(single(&sources[0], dest))
}

fn prog_is_cp() -> bool {
    crate::output::prog() == "cp"
}

/// With `--force` and `--backup`, SOURCE DEST naming one existing regular file by the same
/// string: the backup name it is copied to instead (cp's own rule, as in GNU's
/// tests/cp/backup-1.sh), or None.
fn backup_onto_itself(operands: &[PathBuf], no_target_dir: bool, o: &Options) -> Option<PathBuf> {
    let [src, dst] = operands else { return None };
    let backup = o.backup.as_ref()?;
    let is_file = std::fs::metadata(dst).is_ok_and(|m| m.is_file());
    if src != dst || !is_file || (!no_target_dir && dst.is_dir()) {
        return None;
    }
    let dir = dst.parent().filter(|p| !p.as_os_str().is_empty());
    let base = dst.file_name()?.as_bytes();
    let highest = std::fs::read_dir(dir.unwrap_or(Path::new(".")))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.as_bytes().strip_prefix(base)?.strip_prefix(b".~")?;
            let n = std::str::from_utf8(n.strip_suffix(b"~")?).ok()?;
            n.parse::<u64>().ok().filter(|_| !n.starts_with('0'))
        })
        .max();
    let digits = |n: u64| n.to_string().len();
    // Whether the name may be cut to fit, as gnulib's `backupfile` cuts a new one.
    let (suffix, check) = match (backup, highest) {
        (Backup::Simple { suffix }, _) => (suffix.as_bytes().to_vec(), false),
        (Backup::Existing { suffix }, None) => (suffix.as_bytes().to_vec(), true),
        (Backup::Numbered, None) => (b".~1~".to_vec(), true),
        (_, Some(n)) => (
            format!(".~{}~", n + 1).into_bytes(),
            digits(n + 1) > digits(n),
        ),
        _ => return None,
    };
    let mut name = dst.as_os_str().as_bytes().to_vec();
    let base_at = name.len() - base.len();
    name.extend_from_slice(&suffix);
    if check {
        shorten(
            &mut name,
            base_at,
            base.len(),
            dir.unwrap_or(Path::new(".")),
        );
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(name)))
}

/// gnulib's `check_extension`, as the library's backups use it: a last name longer than the
/// directory's filesystem takes less one is cut to the original name (at most that limit less
/// two bytes) and `~`.
fn shorten(path: &mut Vec<u8>, base_at: usize, base_len: usize, dir: &Path) {
    /// Below this, gnulib takes any name as fitting, without asking the filesystem.
    const NAME_MAX_MINIMUM: usize = 14;
    let len = path.len() - base_at;
    if len <= NAME_MAX_MINIMUM {
        return;
    }
    let Ok(fs) = rustix::fs::statfs(dir) else {
        return;
    };
    let max = usize::try_from(fs.f_namelen)
        .unwrap_or(usize::MAX)
        .saturating_sub(1);
    if len > max {
        path.truncate(base_at + base_len.min(max.saturating_sub(1)));
        path.push(b'~');
    }
}

/// `POSIXLY_CORRECT` under the name cp: a regular file copied onto a dangling symlink
/// named on the command line creates the file the symlink points to, as cp's historical
/// behaviour did. (Below a directory being copied, the symlink is replaced.)
fn write_through_dangling(pairs: &mut [CopyPair]) {
    for pair in pairs {
        let dangling = std::fs::symlink_metadata(&pair.dst).is_ok_and(|m| m.is_symlink())
            && std::fs::metadata(&pair.dst).is_err();
        if !dangling || !std::fs::metadata(&pair.src).is_ok_and(|m| m.is_file()) {
            continue;
        }
        if let Ok(target) = std::fs::read_link(&pair.dst) {
            let parent = pair.dst.parent().unwrap_or(Path::new(""));
            pair.dst = parent.join(target);
        }
    }
}

/// cp's message for a target that must be a directory and is not: why looking at it as
/// one fails (`target 'nod': No such file or directory`).
fn not_a_directory(what: &str, dir: &Path) -> ConfigError {
    let errno = match std::fs::metadata(dir) {
        Err(e) => e
            .raw_os_error()
            .unwrap_or(rustix::io::Errno::NOTDIR.raw_os_error()),
        Ok(_) => rustix::io::Errno::NOTDIR.raw_os_error(),
    };
    let why = std::io::Error::from_raw_os_error(errno).to_string();
    let why = why.split(" (os error").next().unwrap_or(&why).to_owned();
    fatal(format!("{what} {}: {why}", quote(dir)))
}

/// `-t` with `-T` is an error (exit 1 in cp, without the pointer to --help), after cp's check
/// that there is a file operand at all.
fn both_target_options(
    operands: &[PathBuf],
    target_dir: Option<&Path>,
    no_target_dir: bool,
) -> Result<(), ConfigError> {
    if target_dir.is_some() && no_target_dir {
        if operands.is_empty() {
            return Err(usage("missing file operand"));
        }
        return Err(fatal(
            "cannot combine --target-directory (-t) and --no-target-directory (-T)",
        ));
    }
    Ok(())
}

/// `--parents`: each SOURCE goes to DIRECTORY/SOURCE (without a leading slash), and the
/// destination must be a directory, as in cp.
fn under_parents(
    operands: &[PathBuf],
    target_dir: Option<&Path>,
    no_target_dir: bool,
    strip: bool,
) -> Result<Vec<CopyPair>, ConfigError> {
    both_target_options(operands, target_dir, no_target_dir)?;
    let (dir, sources) = match (target_dir, operands.split_last()) {
        (_, None) => return Err(usage("missing file operand")),
        (Some(dir), _) => (dir, operands),
        (None, Some((dest, sources))) => (dest.as_path(), sources),
    };
    if sources.is_empty() {
        let last = quote(&operands[0]);
        return Err(usage(format!(
            "missing destination file operand after {last}"
        )));
    }
    if no_target_dir && sources.len() > 1 {
        return Err(usage(format!("extra operand {}", quote(&operands[2]))));
    }
    // As in cp, a target that cannot be one is reported first where cp must use it as a
    // directory (-t, or several sources); the rule of --parents comes after.
    if !no_target_dir && !dir.is_dir() {
        if target_dir.is_some() {
            return Err(not_a_directory("target directory", dir));
        }
        if sources.len() > 1 {
            return Err(not_a_directory("target", dir));
        }
    }
    if no_target_dir || !dir.is_dir() {
        return Err(usage("with --parents, the destination must be a directory"));
    }
    Ok(sources
        .iter()
        .map(|src| {
            // --strip-trailing-slashes applies to every source, as in cp.
            let src = &if strip {
                strip_trailing_slashes(src)
            } else {
                src.clone()
            };
            let bytes = src.as_os_str().as_bytes();
            let start = bytes.iter().position(|&b| b != b'/').unwrap_or(bytes.len());
            let rel = Path::new(std::ffi::OsStr::from_bytes(&bytes[start..]));
            // cp names the destination after the source less its trailing slashes.
            let rel = if rel.as_os_str().is_empty() {
                rel.to_path_buf()
            } else {
                strip_trailing_slashes(rel)
            };
            CopyPair {
                src: src.clone(),
                dst: concat(dir, rel.as_os_str()),
            }
        })
        .collect())
}

/// SOURCE to DEST exactly. A "DEST/" that is not a directory is left to the copy, which
/// reports it as cp does: by the call that makes the entry there.
fn single(src: &Path, dest: &Path) -> Vec<CopyPair> {
    vec![CopyPair {
        src: src.to_path_buf(),
        dst: dest.to_path_buf(),
    }]
}

/// `path` without the slashes that end it, except a lone root ("///" is "/"). "link/" names
/// what a symlink points to, and "link" the symlink itself.
fn strip_trailing_slashes(path: &Path) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let kept = bytes.iter().rposition(|&b| b != b'/').map_or(1, |i| i + 1);
    PathBuf::from(std::ffi::OsStr::from_bytes(&bytes[..kept.min(bytes.len())]))
}

/// `dir/name` as cp joins them (gnulib's `file_name_concat`): one slash between, whatever
/// slashes end `dir` ("d//" and "f" make "d/f"); a `dir` of slashes alone is kept.
fn concat(dir: &Path, name: &std::ffi::OsStr) -> PathBuf {
    let bytes = dir.as_os_str().as_bytes();
    match bytes.iter().rposition(|&b| b != b'/') {
        Some(i) => Path::new(std::ffi::OsStr::from_bytes(&bytes[..=i])).join(name),
        None => dir.join(name),
    }
}

/// DIR/basename(SOURCE); a source ending in "." or ".." goes into DIR itself.
fn into_dir(src: &Path, dir: &Path) -> CopyPair {
    let dst = match src.file_name() {
        Some(name) if !src.as_os_str().as_bytes().ends_with(b"/.") => concat(dir, name),
        _ => concat(dir, ".".as_ref()),
    };
    CopyPair {
        src: src.to_path_buf(),
        dst,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slashes_are_stripped_down_to_the_root() {
        for (given, stripped) in [
            ("link/", "link"),
            ("a/b//", "a/b"),
            ("a", "a"),
            ("/", "/"),
            ("///", "/"),
            ("d/./", "d/."),
            ("", ""),
        ] {
            assert_eq!(
                strip_trailing_slashes(Path::new(given)),
                Path::new(stripped),
                "{given}"
            );
        }
    }

    #[test]
    fn a_suffix_is_kept_when_it_is_its_own_last_component() {
        for (suffix, kept) in [
            ("~", true),
            ("s/", true),
            ("s//", true),
            ("./", true),
            ("a/b", false),
            ("/s", false),
            ("/", false),
            ("//", false),
        ] {
            assert_eq!(own_last_component(suffix.as_bytes()), kept, "{suffix}");
        }
    }
}
