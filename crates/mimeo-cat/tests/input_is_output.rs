//! A part that is the output itself (named as it is, through a hard or symbolic link, or as
//! standard input) against GNU `cat`: the same refusal, worded the same and with the same exit
//! status, and with `-o` the output left exactly as it was, since the refusal comes before
//! anything is truncated or written.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const PRECIOUS: &[u8] = b"precious\n";

/// A directory holding `x` (the output-to-be), `a`, a hard link `l` and a symlink `s` to `x`,
/// and an empty `e`.
fn setup(dir: &Path) {
    std::fs::write(dir.join("x"), PRECIOUS).unwrap();
    std::fs::write(dir.join("a"), b"A\n").unwrap();
    std::fs::write(dir.join("e"), b"").unwrap();
    std::fs::hard_link(dir.join("x"), dir.join("l")).unwrap();
    std::os::unix::fs::symlink("x", dir.join("s")).unwrap();
}

/// Runs `prog args` in `dir`, stdin from `stdin` (a file in `dir`) or nothing, stdout
/// appended to `append` (a file in `dir`) or a pipe.
fn run(prog: &str, dir: &Path, args: &[&str], stdin: Option<&str>, append: Option<&str>) -> Output {
    let mut cmd = Command::new(prog);
    cmd.current_dir(dir).args(args);
    cmd.stdin(stdin.map_or(Stdio::null(), |f| File::open(dir.join(f)).unwrap().into()));
    match append {
        Some(f) => cmd.stdout(OpenOptions::new().append(true).open(dir.join(f)).unwrap()),
        None => cmd.stdout(Stdio::piped()),
    };
    cmd.stderr(Stdio::piped()).output().unwrap()
}

fn stderr(out: &Output, prog: &str) -> String {
    String::from_utf8_lossy(&out.stderr).replace(&format!("{prog}: "), "PROG: ")
}

const MIMEO_CAT: &str = env!("CARGO_BIN_EXE_mimeo-cat");

/// Every way of naming the output among the parts, and the file that stdin reads.
const CASES: &[(&[&str], Option<&str>)] = &[
    (&["x"], None),
    (&["a", "x"], None),
    (&["x", "a"], None),
    (&["l"], None),
    (&["s"], None),
    (&["a", "s", "a", "l"], None),
    (&["-"], Some("x")),
    (&["a", "-"], Some("l")),
];

/// Writing to standard output opened for appending (`>> x`, so nothing is truncated), mimeo-cat
/// does exactly what cat does: the same bytes in `x`, messages and exit status.
#[test]
fn a_part_that_is_the_output_is_refused_as_cat_refuses_it() {
    for (args, stdin) in CASES {
        let (want, got) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        setup(want.path());
        setup(got.path());
        let cat = run("cat", want.path(), args, *stdin, Some("x"));
        let ours = run(MIMEO_CAT, got.path(), args, *stdin, Some("x"));
        let what = format!("{args:?} < {stdin:?} >> x");
        assert_eq!(ours.status.code(), cat.status.code(), "{what}");
        assert_eq!(ours.status.code(), Some(1), "{what}");
        assert_eq!(stderr(&ours, "mimeo-cat"), stderr(&cat, "cat"), "{what}");
        let read = |d: &Path| std::fs::read(d.join("x")).unwrap();
        assert_eq!(read(got.path()), read(want.path()), "{what}");
    }
}

/// With `-o x`, a part that is `x` is refused before `x` is truncated: `x` keeps its bytes
/// (and is not written at all), and the refusals read as cat's.
#[test]
fn with_o_a_part_that_is_the_output_leaves_it_untouched() {
    let missing: &[(&[&str], Option<&str>)] = &[(&["missing", "x"], None)];
    for (args, stdin) in CASES.iter().chain(missing) {
        let (want, got) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        setup(want.path());
        setup(got.path());
        let cat = run("cat", want.path(), args, *stdin, Some("x"));
        let mut with_o = vec!["-o", "x"];
        with_o.extend_from_slice(args);
        let ours = run(MIMEO_CAT, got.path(), &with_o, *stdin, None);
        let what = format!("-o x {args:?} < {stdin:?}");
        assert_eq!(ours.status.code(), Some(1), "{what}");
        assert_eq!(
            std::fs::read(got.path().join("x")).unwrap(),
            PRECIOUS,
            "{what}"
        );
        // cat also names the parts it cannot open; -o refuses the run before any is read.
        let refusals: String = stderr(&cat, "cat")
            .lines()
            .filter(|l| l.ends_with(": input file is output file"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!refusals.is_empty(), "{what}: cat refused nothing");
        assert_eq!(stderr(&ours, "mimeo-cat"), refusals, "{what}");
        assert!(ours.stdout.is_empty(), "{what}");
    }
}

/// An output that is empty holds nothing to lose: as `cat e >> e`, the run succeeds, writes
/// nothing, and a part before it is written (and then the grown part is refused, as by cat).
#[test]
fn an_empty_output_among_the_parts_is_read_as_cat_reads_it() {
    for args in [&["e"][..], &["a", "e"]] {
        let (want, got) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        setup(want.path());
        setup(got.path());
        let cat = run("cat", want.path(), args, None, Some("e"));
        let mut with_o = vec!["-o", "e"];
        with_o.extend_from_slice(args);
        let ours = run(MIMEO_CAT, got.path(), &with_o, None, None);
        let what = format!("-o e {args:?}");
        assert_eq!(ours.status.code(), cat.status.code(), "{what}");
        assert_eq!(stderr(&ours, "mimeo-cat"), stderr(&cat, "cat"), "{what}");
        let read = |d: &Path| std::fs::read(d.join("e")).unwrap();
        assert_eq!(read(got.path()), read(want.path()), "{what}");
    }
}

/// The refusal is reported in the JSON stream too, with the summary last.
#[test]
fn with_o_and_json_the_refusal_is_an_error_object_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path());
    let out = run(
        MIMEO_CAT,
        dir.path(),
        &["--json", "-o", "x", "a", "l"],
        None,
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["type"], "error", "{text}");
    assert_eq!(lines[0]["path"], "l", "{text}");
    assert_eq!(lines[1]["type"], "summary", "{text}");
    assert_eq!(lines[1]["errors"], 1, "{text}");
    assert_eq!(std::fs::read(dir.path().join("x")).unwrap(), PRECIOUS);
}
