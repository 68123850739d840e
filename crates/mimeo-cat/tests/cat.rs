//! `mimeo-cat` against GNU `cat`, run the same way on the same parts: the output must be byte
//! for byte the same for every kind of part and output (a file on the parts' filesystem or
//! another one, a pipe, an `O_APPEND` file, a file written from an offset). Where the output
//! can share the parts' extents, FIEMAP must show that it does.

use mimeo_testkit::extents::extents;
use mimeo_testkit::rng::Rng;
use mimeo_testkit::{FsKind, LoopFs};
use serde_json::Value;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const B: u64 = 4096;
const MIB: u64 = 1 << 20;

fn scratch(kind: FsKind) -> Option<LoopFs> {
    LoopFs::try_new(kind, kind.min_size_mib().max(300))
}

fn random_file(path: &Path, len: u64, seed: u64) {
    let mut v = vec![0u8; len as usize];
    Rng::new(seed).fill(&mut v);
    std::fs::write(path, v).unwrap();
}

/// Parts of every awkward size, and a sparse one, in `dir`. Returns their paths.
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (i, len) in [0, 1, B - 1, B, B + 1, MIB, MIB + 7, 3 * MIB]
        .into_iter()
        .enumerate()
    {
        let p = dir.join(format!("p{i}"));
        random_file(&p, len, i as u64 + 1);
        out.push(p);
    }
    let sparse = dir.join("sparse");
    let f = File::create(&sparse).unwrap();
    f.write_all_at(&[7u8; B as usize], MIB).unwrap();
    f.set_len(3 * MIB).unwrap();
    out.push(sparse);
    out
}

fn mimeo_cat() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mimeo-cat"))
}

/// Runs `cmd` with stdout to `stdout` (a pipe when None) and stdin from `stdin`.
fn run(mut cmd: Command, stdout: Option<File>, stdin: Option<Stdio>) -> Output {
    cmd.stdin(stdin.unwrap_or(Stdio::null()));
    match stdout {
        Some(f) => cmd.stdout(f),
        None => cmd.stdout(Stdio::piped()),
    };
    cmd.stderr(Stdio::piped());
    cmd.output().unwrap()
}

fn json_summary(text: &str) -> Value {
    let last = text
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no JSON: {text}"));
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["type"], "summary", "{text}");
    v
}

/// A file opened for writing as a shell would for `>` (truncated), `>>` (append) or `1<>`
/// (neither), with `prefix` written first so that the offset is past it.
fn output(path: &Path, how: &str, prefix: &[u8]) -> File {
    let mut o = OpenOptions::new();
    match how {
        ">" => o.write(true).create(true).truncate(true),
        ">>" => o.append(true).create(true),
        _ => o.read(true).write(true).create(true),
    };
    let mut f = o.open(path).unwrap();
    f.write_all(prefix).unwrap();
    f
}

/// Runs cat and mimeo-cat on the same arguments with the same kind of output, and checks
/// that the outputs, exit statuses and error lines match.
fn same_as_cat(what: &str, args: &[PathBuf], out_dir: &Path, how: &str, prefix: &[u8]) {
    let cat_out = out_dir.join("cat.out");
    let ours_out = out_dir.join("mimeo.out");
    for p in [&cat_out, &ours_out] {
        let _ = std::fs::remove_file(p);
        if how == "1<>" {
            random_file(p, 20 * MIB, 99);
        }
    }
    let mut cat = Command::new("cat");
    cat.args(args);
    let mut ours = mimeo_cat();
    ours.args(args);
    let (c, o) = if how == "|" {
        (run(cat, None, None), run(ours, None, None))
    } else {
        (
            run(cat, Some(output(&cat_out, how, prefix)), None),
            run(ours, Some(output(&ours_out, how, prefix)), None),
        )
    };
    assert_eq!(
        o.status.code(),
        c.status.code(),
        "{what}: exit status; mimeo-cat said {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (cat_err, our_err) = (
        String::from_utf8_lossy(&c.stderr).lines().count(),
        String::from_utf8_lossy(&o.stderr).lines().count(),
    );
    assert_eq!(our_err, cat_err, "{what}: one message per failed part");
    if how == "|" {
        assert!(
            o.stdout == c.stdout,
            "{what}: piped output differs from cat's"
        );
    } else {
        assert!(
            std::fs::read(&ours_out).unwrap() == std::fs::read(&cat_out).unwrap(),
            "{what}: output differs from cat's"
        );
    }
}

#[test]
fn output_is_byte_equal_to_cats_on_every_kind_of_output() {
    let (Some(xfs), Some(btrfs), Some(ext4)) = (
        scratch(FsKind::Xfs),
        scratch(FsKind::Btrfs),
        scratch(FsKind::Ext4),
    ) else {
        return;
    };
    for fs in [&xfs, &btrfs] {
        let kind = fs.kind();
        let dir = fs.path().join("parts");
        std::fs::create_dir(&dir).unwrap();
        let p = parts(&dir);
        let missing = dir.join("missing");
        let subdir = dir.join("subdir");
        std::fs::create_dir(&subdir).unwrap();
        let proc_file = PathBuf::from("/proc/version");
        let cases: Vec<(&str, Vec<PathBuf>)> = vec![
            ("every part", p.clone()),
            ("every part backwards", p.iter().rev().cloned().collect()),
            (
                "aligned parts",
                vec![p[3].clone(), p[5].clone(), p[7].clone()],
            ),
            (
                "unaligned first",
                vec![p[2].clone(), p[5].clone(), p[6].clone()],
            ),
            ("one part twice", vec![p[6].clone(), p[6].clone()]),
            (
                "the sparse part",
                vec![p[8].clone(), p[3].clone(), p[8].clone()],
            ),
            (
                "a /proc file",
                vec![p[3].clone(), proc_file.clone(), p[5].clone()],
            ),
            (
                "missing and a directory",
                vec![p[5].clone(), missing.clone(), subdir.clone(), p[4].clone()],
            ),
            ("empty only", vec![p[0].clone()]),
        ];
        let elsewhere = ext4.path().join(format!("from-{kind}"));
        std::fs::create_dir(&elsewhere).unwrap();
        for (what, args) in &cases {
            for (how, prefix) in [
                (">", &b""[..]),
                (">", b"hdr"),
                (">", &[1u8; B as usize][..]),
                (">>", b"old content\n"),
                ("1<>", b""),
                ("|", b""),
            ] {
                let w = format!("{kind}: {what}, output {how} after {} bytes", prefix.len());
                same_as_cat(&w, args, fs.path(), how, prefix);
            }
            // The output on another filesystem: nothing can be cloned.
            same_as_cat(
                &format!("{kind} to ext4: {what}"),
                args,
                &elsewhere,
                ">",
                b"",
            );
        }
    }
}

#[test]
fn standard_input_and_fifos_are_read_like_cat_reads_them() {
    let Some(fs) = scratch(FsKind::Xfs) else {
        return;
    };
    let dir = fs.path();
    let p = parts(dir);
    // "-" twice: the second read finds standard input at its end, as cat does.
    let args: Vec<PathBuf> = vec![p[5].clone(), "-".into(), p[2].clone(), "-".into()];
    for from_pipe in [false, true] {
        let outputs: Vec<Vec<u8>> = [Command::new("cat"), mimeo_cat()]
            .into_iter()
            .map(|mut cmd| {
                cmd.args(&args)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let input = if from_pipe {
                    let mut feeder = Command::new("cat")
                        .arg(&p[6])
                        .stdout(Stdio::piped())
                        .spawn()
                        .unwrap();
                    let out = cmd
                        .stdin(Stdio::from(feeder.stdout.take().unwrap()))
                        .output()
                        .unwrap();
                    feeder.wait().unwrap();
                    out
                } else {
                    // A regular file as standard input, read from an offset past its start.
                    let mut f = File::open(&p[6]).unwrap();
                    f.seek(SeekFrom::Start(100)).unwrap();
                    cmd.stdin(Stdio::from(f)).output().unwrap()
                };
                assert!(input.status.success(), "{input:?}");
                input.stdout
            })
            .collect();
        assert!(
            outputs[0] == outputs[1],
            "standard input from a pipe: {from_pipe}"
        );
    }
    // A FIFO as a part: read until its writer closes it.
    let fifo = dir.join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let want = std::fs::read(&p[6]).unwrap();
    let writer = {
        let (fifo, want) = (fifo.clone(), want.clone());
        std::thread::spawn(move || std::fs::write(fifo, want).unwrap())
    };
    let out = mimeo_cat().arg(&p[3]).arg(&fifo).output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let mut expected = std::fs::read(&p[3]).unwrap();
    expected.extend_from_slice(&want);
    assert!(out.stdout == expected, "a FIFO part");
}

/// Bytes of the file that FIEMAP calls shared, in `[from, to)`.
fn shared_in(path: &Path, from: u64, to: u64) -> u64 {
    File::open(path).unwrap().sync_all().unwrap();
    extents(path)
        .unwrap()
        .iter()
        .filter(|e| e.is_shared())
        .map(|e| {
            (e.logical + e.length)
                .min(to)
                .saturating_sub(e.logical.max(from))
        })
        .sum()
}

#[test]
fn aligned_parts_are_cloned_and_share_their_extents() {
    for kind in [FsKind::Xfs, FsKind::Btrfs] {
        let Some(fs) = scratch(kind) else { continue };
        let dir = fs.path();
        // Eight aligned pieces, the last one short: what `split -b 1M` leaves.
        let whole = dir.join("whole");
        random_file(&whole, 8 * MIB - 1000, 5);
        let out = Command::new("split")
            .args(["-b", "1M", "-d"])
            .arg(&whole)
            .arg(dir.join("piece."))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let pieces: Vec<PathBuf> = (0..8).map(|i| dir.join(format!("piece.{i:02}"))).collect();
        let joined = dir.join("joined");
        let run = mimeo_cat()
            .arg("--json")
            .arg("-o")
            .arg(&joined)
            .args(&pieces)
            .output()
            .unwrap();
        assert!(run.status.success(), "{run:?}");
        assert!(std::fs::read(&joined).unwrap() == std::fs::read(&whole).unwrap());
        let s = json_summary(&String::from_utf8_lossy(&run.stdout));
        let size = 8 * MIB - 1000;
        assert_eq!(
            s["cloned"], size,
            "{kind}: every piece cloned, the short one too"
        );
        assert_eq!(s["copied"], 0, "{kind}");
        assert_eq!(s["parts"], 8, "{kind}");
        let block_end = size.div_ceil(B) * B;
        assert_eq!(
            shared_in(&joined, 0, block_end),
            block_end,
            "{kind}: FIEMAP"
        );

        // Through standard output redirected to a file, the same.
        let redirected = dir.join("redirected");
        let run = mimeo_cat()
            .args(&pieces)
            .stdout(File::create(&redirected).unwrap())
            .output()
            .unwrap();
        assert!(run.status.success());
        assert_eq!(
            shared_in(&redirected, 0, block_end),
            block_end,
            "{kind}: via stdout"
        );

        // A part of unaligned length in the middle: it starts aligned and ends at the
        // output's end, so it is cloned whole, its EOF block too; the part after it lands at
        // an unaligned offset and is copied.
        let odd = dir.join("odd");
        random_file(&odd, MIB + 100, 6);
        let mixed = dir.join("mixed");
        let run = mimeo_cat()
            .arg("--json")
            .arg("-o")
            .arg(&mixed)
            .args([&pieces[0], &odd, &pieces[1]])
            .output()
            .unwrap();
        assert!(run.status.success());
        let s = json_summary(&String::from_utf8_lossy(&run.stdout));
        assert_eq!(
            s["cloned"],
            2 * MIB + 100,
            "{kind}: first piece and the odd one"
        );
        assert_eq!(s["copied"], MIB, "{kind}: the last piece");
        assert_eq!(shared_in(&mixed, 0, 2 * MIB), 2 * MIB, "{kind}");
        let mut want = std::fs::read(&pieces[0]).unwrap();
        want.extend(std::fs::read(&odd).unwrap());
        want.extend(std::fs::read(&pieces[1]).unwrap());
        let mut got = Vec::new();
        File::open(&mixed).unwrap().read_to_end(&mut got).unwrap();
        assert!(got == want, "{kind}: mixed bytes");
    }
}

#[test]
fn errors_and_usage_are_worded_as_cp_words_them() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = mimeo_cat().arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "mimeo-cat: {}: No such file or directory\n",
            missing.display()
        )
    );
    let out = mimeo_cat().arg("--bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("mimeo-cat: "), "{err}");
    assert!(
        err.ends_with("Try 'mimeo-cat --help' for more information.\n"),
        "{err}"
    );
    // A part that is the output itself is refused, and the rest written.
    let a = dir.path().join("a");
    std::fs::write(&a, b"a").unwrap();
    let o = dir.path().join("o");
    std::fs::write(&o, b"").unwrap();
    let out = mimeo_cat()
        .args([&a, &o, &a])
        .stdout(OpenOptions::new().append(true).open(&o).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("mimeo-cat: {}: input file is output file\n", o.display())
    );
    assert_eq!(std::fs::read(&o).unwrap(), b"aa");
    // A reader that goes away ends the run quietly, as SIGPIPE ends cat.
    let big = dir.path().join("big");
    random_file(&big, 8 * MIB, 1);
    let mut child = mimeo_cat()
        .args([&big, &big, &big])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut head = [0u8; 10];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `sh -c 'exec PROG ARGS REDIRECT'`, where `REDIRECT` is a shell redirection of stdout.
fn redirected(prog: &str, args: &[&Path], redirect: &str) -> Output {
    let script = format!("exec \"$0\" \"$@\" {redirect}");
    Command::new("sh")
        .env("LC_ALL", "C.UTF-8")
        .args(["-c", &script, prog])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn write_errors_on_stdout_are_reported_as_cat_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    std::fs::write(&a, b"some data\n").unwrap();
    for redirect in [">/dev/full", ">&-"] {
        let cat = redirected("/bin/cat", &[&a, &a], redirect);
        let mine = redirected(env!("CARGO_BIN_EXE_mimeo-cat"), &[&a, &a], redirect);
        let text =
            |o: &Output, prog: &str| String::from_utf8_lossy(&o.stderr).replace(prog, "PROG");
        assert_eq!(cat.status.code(), Some(1), "{cat:?}");
        assert_eq!(mine.status.code(), Some(1), "{redirect}: {mine:?}");
        assert_eq!(
            text(&mine, "mimeo-cat"),
            text(&cat, "/bin/cat"),
            "{redirect}"
        );
    }
}

#[test]
fn json_is_one_stream_of_objects_summary_last() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    std::fs::write(&a, b"a").unwrap();
    let missing = dir.path().join("missing");
    let lines = |text: &[u8]| -> Vec<Value> {
        String::from_utf8_lossy(text)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l:?}")))
            .collect()
    };
    // Without -o the JSON stream is on stderr: no plain line goes there.
    for args in [
        vec![OsStr::new("--json"), a.as_os_str(), missing.as_os_str()],
        vec![OsStr::new("--json"), OsStr::new("--bogus")],
        vec![OsStr::new("--js"), missing.as_os_str()],
    ] {
        let out = mimeo_cat()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let objects = lines(&out.stderr);
        assert_eq!(objects.len(), 2, "{args:?}: {objects:?}");
        assert_eq!(objects[0]["type"], "error", "{args:?}");
        assert_eq!(objects[1]["type"], "summary", "{args:?}");
        assert_eq!(objects[1]["errors"], 1, "{args:?}");
        assert_ne!(out.status.code(), Some(0), "{args:?}");
    }
    // With -o, on stdout, and the messages on stderr; a name that is not UTF-8 is lossless.
    let out = mimeo_cat()
        .args([
            OsStr::new("--json"),
            OsStr::new("-o"),
            dir.path().as_os_str(),
            a.as_os_str(),
        ])
        .output()
        .unwrap();
    let objects = lines(&out.stdout);
    assert_eq!(objects.len(), 2, "{objects:?}");
    assert_eq!(objects[0]["operation"], "create", "{objects:?}");
    assert_eq!(objects[1]["type"], "summary", "{objects:?}");
    let raw = dir.path().join(OsStr::from_bytes(b"x\xff\ny"));
    let out = mimeo_cat()
        .args([OsStr::new("--json"), OsStr::new("-o")])
        .arg(dir.path().join("o"))
        .arg(&raw)
        .output()
        .unwrap();
    let objects = lines(&out.stdout);
    let hex: String = raw
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        objects[0]["path"],
        serde_json::json!({ "hex": hex }),
        "{objects:?}"
    );
    assert_eq!(objects.last().unwrap()["type"], "summary");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'$'\\377\\n''y': No such file or directory"),
        "{err}"
    );
}

#[test]
fn family_options_progress_generate_and_abbreviations() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    std::fs::write(&a, b"abc").unwrap();
    for flags in [
        &["--progress"][..],
        &["--progress=never"],
        &["--prog=al", "--no-sh"],
    ] {
        let out = mimeo_cat()
            .args(flags)
            .arg(&a)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {out:?}");
        assert_eq!(out.stdout, b"abc", "{flags:?}");
    }
    let man = mimeo_cat().args(["--generate", "man"]).output().unwrap();
    let man = String::from_utf8_lossy(&man.stdout);
    for section in [
        "\\-o OUT [PART]",
        "[PART]... > OUT",
        ".SH \"EXIT STATUS\"",
        ".SH EXAMPLES",
    ] {
        assert!(man.contains(section), "{section}: {man}");
    }
    let help = mimeo_cat().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for option in [
        "--no-shared-reads",
        "--generate <WHAT>",
        "--progress[=<WHEN>]",
    ] {
        assert!(help.contains(option), "{option}: {help}");
    }
}

/// Messages about parts word for word as GNU cat's (`cat: NAME: CAUSE`, the name quoted only
/// where cat quotes it), with the program name set aside; each part is named relative to the
/// working directory, as a user names it.
#[test]
fn part_errors_are_worded_as_cat_words_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a dir")).unwrap();
    std::fs::write(dir.path().join("f"), "x").unwrap();
    let names: [&[u8]; 8] = [
        b"missing",
        b"a dir",
        b"f/",
        b"a:b",
        b"#x",
        b"x#",
        "\u{e9}".as_bytes(),
        b"it's",
    ];
    for locale in ["C", "C.UTF-8"] {
        for name in names {
            let name = OsStr::from_bytes(name);
            let run = |mut cmd: std::process::Command| {
                let out = cmd
                    .arg(name)
                    .current_dir(dir.path())
                    .env("LC_ALL", locale)
                    .output()
                    .unwrap();
                (
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                )
            };
            let (code, theirs) = run(std::process::Command::new("/bin/cat"));
            let (ours_code, ours) = run(mimeo_cat());
            assert_eq!(code, ours_code, "{name:?} in {locale}");
            let theirs = theirs.strip_prefix("/bin/cat: ").unwrap_or(&theirs);
            let ours = ours.strip_prefix("mimeo-cat: ").unwrap_or(&ours);
            assert_eq!(theirs, ours, "{name:?} in {locale}");
        }
    }
}
