//! `mimeo-dedupe --help` against the committed copy in `tests/golden/help.txt` (see
//! `mimeo_testkit::golden`): `MIMEO_UPDATE_GOLDEN=1 cargo test -p mimeo-dedupe --test help`.

use mimeo_testkit::golden::{assert_golden, help};
use std::path::Path;

#[test]
fn help_matches_the_committed_copy() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/help.txt");
    assert_golden(&golden, &help(env!("CARGO_BIN_EXE_mimeo-dedupe")));
}
