//! What `mimeo` shares with the other commands of the family, against GNU cp 9.1 where cp is
//! the oracle: names quoted as cp quotes them, write errors on standard output, JSON for runs
//! refused before they start, `--progress` without a value, and the man page.

mod util;

use mimeo_testkit::capture;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use util::{mimeo, run, run_command};

/// GNU cp in a UTF-8 locale, as the oracle.
fn cp() -> Command {
    let mut cmd = Command::new("/bin/cp");
    cmd.env("LC_ALL", "C.UTF-8");
    cmd
}

/// `text` with the program name at the start of each line replaced by `PROG`.
fn normalized(text: &str, prog: &str) -> String {
    text.lines()
        .map(|l| {
            l.strip_prefix(prog)
                .map_or(l.to_owned(), |r| format!("PROG{r}"))
        })
        .map(|l| l + "\n")
        .collect()
}

/// Names that a terminal would act on, or that are not UTF-8.
const HOSTILE: &[&[u8]] = &[
    b"x\x1b]0;pwned\x07",
    b"new\nline",
    b"tab\there",
    b"x\xff\ny",
    b"it's",
    b"it's $HOME",
    b"\x01",
    b"c1\xc2\x85",
];

#[test]
fn names_are_quoted_as_cp_quotes_them_in_v_lines_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in HOSTILE.iter().enumerate() {
        let name = OsStr::from_bytes(name);
        let src = dir.path().join(name);
        std::fs::write(&src, b"data").unwrap();
        let (by_cp, by_mimeo) = (
            dir.path().join(format!("cp{i}")),
            dir.path().join(format!("m{i}")),
        );
        std::fs::create_dir(&by_cp).unwrap();
        std::fs::create_dir(&by_mimeo).unwrap();
        // `-v` names source and copy; run in the directory, so the lines hold only the names.
        let c = capture(
            cp().current_dir(dir.path())
                .args(["-v", "--"])
                .arg(name)
                .arg(format!("cp{i}")),
        )
        .unwrap();
        let m = capture(
            mimeo()
                .current_dir(dir.path())
                .args(["-v", "--"])
                .arg(name)
                .arg(format!("m{i}")),
        )
        .unwrap();
        assert_eq!((c.code(), m.code()), (0, 0), "{c}\n{m}");
        let cp_line = c.stdout.replace(&format!("cp{i}"), "DIR");
        let mimeo_line = m.stdout.replace(&format!("m{i}"), "DIR");
        // mimeo may add how the file was copied at the end of cp's line.
        assert!(
            mimeo_line.trim_end().starts_with(cp_line.trim_end())
                && mimeo_line.lines().count() == 1,
            "{:?}: cp {cp_line:?}, mimeo {mimeo_line:?}",
            name
        );
        assert!(
            !m.stdout.bytes().any(|b| b < 0x20 && b != b'\n'),
            "{:?}",
            m.stdout
        );
        // An error message names the missing source the same way.
        let missing = Path::new(name).join("missing");
        let c = capture(cp().current_dir(dir.path()).arg(&missing).arg("x")).unwrap();
        let m = capture(mimeo().current_dir(dir.path()).arg(&missing).arg("x")).unwrap();
        assert_eq!(c.code(), m.code(), "{c}\n{m}");
        assert_eq!(
            normalized(&m.stderr, "mimeo"),
            normalized(&c.stderr, "/bin/cp")
        );
    }
}

#[test]
fn write_errors_on_stdout_are_reported_as_cp_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s");
    std::fs::write(&src, b"data").unwrap();
    for (i, redirect) in [">/dev/full", ">&-"].into_iter().enumerate() {
        let script = format!("exec \"$0\" -v \"$@\" {redirect}");
        let run_as = |prog: &str, dst: &str| {
            let dst = dir.path().join(format!("{dst}{i}"));
            capture(
                Command::new("sh")
                    .env("LC_ALL", "C.UTF-8")
                    .args(["-c", &script, prog])
                    .arg(&src)
                    .arg(&dst),
            )
            .unwrap()
        };
        let c = run_as("/bin/cp", "c");
        let m = run_as(env!("CARGO_BIN_EXE_mimeo"), "m");
        assert_eq!(c.code(), 1, "{c}");
        assert_eq!(m.code(), 1, "{redirect}: {m}");
        assert_eq!(
            normalized(&m.stderr, "mimeo"),
            normalized(&c.stderr, "/bin/cp"),
            "{redirect}"
        );
        // The copy itself is made.
        assert_eq!(
            std::fs::read(dir.path().join(format!("m{i}"))).unwrap(),
            b"data"
        );
    }
    // Without -v nothing is written, so a closed stdout is no error, as in cp.
    let quiet = capture(
        Command::new("sh")
            .args(["-c", "exec \"$0\" \"$@\" >&-", env!("CARGO_BIN_EXE_mimeo")])
            .arg(&src)
            .arg(dir.path().join("q")),
    )
    .unwrap();
    assert_eq!(quiet.code(), 0, "{quiet}");
    // --json to a full disk too.
    let json = capture(
        Command::new("sh")
            .args([
                "-c",
                "exec \"$0\" --json \"$@\" >/dev/full",
                env!("CARGO_BIN_EXE_mimeo"),
            ])
            .arg(&src)
            .arg(dir.path().join("j")),
    )
    .unwrap();
    assert_eq!(json.code(), 1, "{json}");
    assert!(
        json.stderr
            .ends_with("write error: No space left on device\n"),
        "{json}"
    );
}

#[test]
fn a_reader_that_goes_away_stops_the_run_with_141() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..2000 {
        std::fs::write(src.join(i.to_string()), b"x").unwrap();
    }
    let mut child = mimeo()
        .args(["-rv", "-j1"])
        .arg(&src)
        .arg(dir.path().join("dst"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
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

#[test]
fn json_names_are_lossless_and_refused_runs_are_error_objects() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, spelled) = (
        OsStr::from_bytes(b"x\xff\ny"),
        OsStr::from_bytes(b"x\\xff\\ny"),
    );
    for name in [raw, spelled] {
        std::fs::write(dir.path().join(name), b"1").unwrap();
    }
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let mut cmd = mimeo();
    cmd.args(["--json", "-v"])
        .arg(dir.path().join(raw))
        .arg(dir.path().join(spelled))
        .arg(&out);
    let r = run_command(&mut cmd, true);
    r.expect_code(0);
    let dsts: Vec<_> = r
        .events("copied")
        .iter()
        .map(|c| c["dst"].clone())
        .collect();
    let hex = |p: &Path| {
        p.as_os_str()
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    assert!(
        dsts.contains(&serde_json::json!({ "hex": hex(&out.join(raw)) })),
        "{dsts:?}"
    );
    assert!(
        dsts.contains(&serde_json::json!(out.join(spelled).to_str().unwrap())),
        "{dsts:?}"
    );
    // A target that is not a directory: an error object, then the summary, last.
    let a = dir.path().join(raw);
    let r = run(&[
        OsStr::new("--json"),
        a.as_os_str(),
        a.as_os_str(),
        OsStr::new("nodir"),
    ]);
    r.expect_code(1);
    assert_eq!(r.json.len(), 2, "{r:#?}");
    assert_eq!(r.json[0]["type"], "error");
    assert_eq!(r.json[0]["message"], "target 'nodir' is not a directory");
    assert_eq!(r.count("errors"), 1);
    // A usage error too.
    let r = run(&["--json", "--bogus"]);
    r.expect_code(2);
    assert_eq!(r.json[0]["operation"], "usage", "{r:#?}");
    assert_eq!(r.count("errors"), 1);
}

#[test]
fn progress_takes_an_optional_value() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("f"), b"x").unwrap();
    for (i, args) in [
        &["--progress", "-r"][..],
        &["--progress=never", "-r"],
        &["--prog=al", "-r"],
    ]
    .into_iter()
    .enumerate()
    {
        let dst = dir.path().join(format!("o{i}"));
        let mut a: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        a.extend([src.as_os_str(), dst.as_os_str()]);
        run(&a).expect_code(0);
        assert_eq!(std::fs::read(dst.join("f")).unwrap(), b"x", "{args:?}");
    }
    // The value is attached or absent: here `always` is a source, and there is no DEST.
    let r = run(&["--progress", "always", "-r"]);
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("missing destination file operand after 'always'"),
        "{r:#?}"
    );
}

#[test]
fn man_page_has_every_usage_form_exit_status_and_examples() {
    let man = run(&["--generate=man"]);
    man.expect_code(0);
    let synopsis = &man.stdout[man.stdout.find(".SH SYNOPSIS").unwrap()..];
    let synopsis = &synopsis[..synopsis.find(".SH DESCRIPTION").unwrap()];
    for form in [
        "SOURCE DEST",
        "SOURCE... DIRECTORY",
        "\\-t DIRECTORY SOURCE...",
    ] {
        assert!(synopsis.contains(form), "{form} missing from {synopsis}");
    }
    for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES", "no\\-shared\\-reads"] {
        assert!(man.stdout.contains(section), "{section} missing");
    }
    let help = run(&["--help"]);
    for option in [
        "--generate <WHAT>",
        "--no-shared-reads",
        "--progress[=<WHEN>]",
    ] {
        assert!(help.stdout.contains(option), "--help lacks {option}");
    }
    // Every option and argument has a description.
    let lines: Vec<&str> = help.stdout.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let head = l.starts_with("  -") || l.starts_with("      --") || l.starts_with("  [");
        if head && l.trim_start().split("  ").count() == 1 {
            assert!(!lines[i + 1].trim().is_empty(), "no description for {l:?}");
        }
    }
}
