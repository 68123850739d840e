//! `-i` through the API: the engine asks the observer before replacing an existing
//! destination, one question at a time, and leaves the destination alone on a no. Nothing is
//! read from stdin or printed by the engine.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mimeo::{CopyPair, Event, Observer, Options};

/// Says yes to destinations whose name starts with "y", and records every question.
#[derive(Default)]
struct Answers {
    asked: Mutex<Vec<PathBuf>>,
    skipped: Mutex<Vec<PathBuf>>,
}

impl Observer for Answers {
    fn event(&self, event: Event) {
        if let Event::Skipped { dst, .. } = event {
            self.skipped.lock().unwrap().push(dst);
        }
    }

    fn confirm_overwrite(&self, _src: &Path, dst: &Path) -> bool {
        self.asked.lock().unwrap().push(dst.to_path_buf());
        dst.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('y'))
    }
}

#[test]
fn the_observer_answers_before_each_replacement() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(&dst).unwrap();
    for name in ["yes", "no", "new"] {
        fs::write(src.join(name), b"new\n").unwrap();
    }
    for name in ["yes", "no"] {
        fs::write(dst.join(name), b"old\n").unwrap();
    }
    let mut opts = Options::archive();
    opts.interactive = true;
    let answers = Answers::default();
    let summary = mimeo::copy(&[CopyPair::new(&src, &dst)], &opts, &answers);
    assert_eq!(summary.errors, 0);
    let mut asked = answers.asked.lock().unwrap().clone();
    asked.sort();
    // Only existing files are asked about; the directory merges without a question.
    assert_eq!(asked, [dst.join("no"), dst.join("yes")]);
    assert_eq!(*answers.skipped.lock().unwrap(), [dst.join("no")]);
    assert_eq!(fs::read(dst.join("yes")).unwrap(), b"new\n");
    assert_eq!(fs::read(dst.join("no")).unwrap(), b"old\n");
    assert_eq!(fs::read(dst.join("new")).unwrap(), b"new\n");
    // Without -i nobody is asked.
    let quiet = Answers::default();
    mimeo::copy(&[CopyPair::new(&src, &dst)], &Options::archive(), &quiet);
    assert!(quiet.asked.lock().unwrap().is_empty());
    assert_eq!(fs::read(dst.join("no")).unwrap(), b"new\n");
}
