//! `cat` through shared reads: writes each FILE to standard output, reading it with
//! [`mimeo::SharedFile`], so that the ranges a file shares with its origin (named by an
//! origin record, `mimeo --record-origin`) or with a file read earlier by this process come
//! out of that file's page cache. The bytes are those of a plain read.
//!
//! Usage: `shared_cat [-v] FILE...`
//!
//! With `-v`, one JSON line per file on standard error says how many bytes were read
//! through a canonical file. (`mimeo-cat` reads its parts this way too, where their bytes
//! must be read.)

use mimeo::SharedFile;
use std::io::Write;
use std::process::ExitCode;

/// Bytes read per call: each shared range read costs one set of checks, so reads are large.
const BUF: usize = 8 << 20;

fn main() -> ExitCode {
    let mut verbose = false;
    let mut files = Vec::new();
    for a in std::env::args_os().skip(1) {
        if a == "-v" {
            verbose = true;
        } else {
            files.push(a);
        }
    }
    if files.is_empty() {
        eprintln!("usage: shared_cat [-v] FILE...");
        return ExitCode::from(2);
    }
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; BUF];
    // Every file stays open to the end, so that later ones find it in the registry.
    let mut open = Vec::new();
    let mut status = ExitCode::SUCCESS;
    for path in files {
        let f = match SharedFile::open(&path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("shared_cat: {}: {e}", path.to_string_lossy());
                status = ExitCode::FAILURE;
                continue;
            }
        };
        let mut off = 0u64;
        loop {
            match f.read_at(&mut buf, off) {
                Ok(0) => break,
                Ok(n) => {
                    if let Err(e) = out.write_all(&buf[..n]) {
                        eprintln!("shared_cat: write: {e}");
                        return ExitCode::FAILURE;
                    }
                    off += n as u64;
                }
                Err(e) => {
                    eprintln!("shared_cat: {}: {e}", path.to_string_lossy());
                    status = ExitCode::FAILURE;
                    break;
                }
            }
        }
        if verbose {
            let s = f.stats();
            eprintln!(
                "{{\"file\":{:?},\"bytes\":{off},\"canonical_bytes\":{},\"own_bytes\":{},\"rejected_bytes\":{}}}",
                path.to_string_lossy(),
                s.canonical_bytes,
                s.own_bytes,
                s.rejected_bytes
            );
        }
        open.push(f);
    }
    if out.flush().is_err() {
        return ExitCode::FAILURE;
    }
    status
}
