//! Names quoted for a terminal as cp quotes them (gnulib's `shell-escape-always` style, in a
//! UTF-8 locale): what is printed can be pasted back into a shell and names the same bytes,
//! and no control character or byte that is not UTF-8 reaches the terminal raw.
//!
//! - A name is put between single quotes: `'a b'`.
//! - A control character, and each byte that is not part of valid UTF-8, is written in a
//!   `$'...'` part: `\a \b \t \n \v \f \r` by letter, anything else as three octal digits
//!   (`'x'$'\033'']0;pwned'$'\a'`). A printable character is kept as it is (`'é'`).
//! - A single quote is `'\''`. A name whose only unusual characters are single quotes,
//!   spaces and letters, digits and `%+,-./:@]_` is put between double quotes instead:
//!   `"it's"`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// `name` quoted as cp quotes names in its messages and `-v` lines (module docs).
pub fn quote(name: impl AsRef<OsStr>) -> String {
    let bytes = name.as_ref().as_bytes();
    let units = units(bytes);
    if bytes.contains(&b'\'')
        && units
            .iter()
            .enumerate()
            .all(|(i, u)| double_ok(u, i, bytes))
    {
        // Every unit is a printable character here, so the bytes are UTF-8.
        return format!("\"{}\"", String::from_utf8_lossy(bytes));
    }
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('\'');
    // Inside a `$'...'` part, which the next plain character closes with `''`.
    let mut escaping = false;
    for unit in &units {
        match unit {
            Unit::Char('\'') => {
                out.push_str("'\\''");
                escaping = false;
            }
            Unit::Char(c) if !c.is_control() => {
                if escaping {
                    out.push_str("''");
                    escaping = false;
                }
                out.push(*c);
            }
            Unit::Char(c) => {
                let mut buf = [0; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    escape(&mut out, &mut escaping, b);
                }
            }
            Unit::Byte(b) => escape(&mut out, &mut escaping, *b),
        }
    }
    out.push('\'');
    out
}

/// A piece of a name: a UTF-8 character, or a byte that is not part of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Char(char),
    Byte(u8),
}

fn units(mut bytes: &[u8]) -> Vec<Unit> {
    let mut units = Vec::with_capacity(bytes.len());
    while !bytes.is_empty() {
        let (valid, bad) = match std::str::from_utf8(bytes) {
            Ok(s) => (s, 0),
            Err(e) => {
                let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("checked");
                // An incomplete sequence at the end: each of its bytes is a byte of its own.
                (valid, e.error_len().unwrap_or(1))
            }
        };
        units.extend(valid.chars().map(Unit::Char));
        let rest = &bytes[valid.len()..];
        units.extend(rest[..bad].iter().map(|&b| Unit::Byte(b)));
        bytes = &rest[bad..];
    }
    units
}

/// Whether `unit`, the `at`-th of `name`, may stand between double quotes as it is: the
/// characters that mean nothing to a shell there (gnulib's "c and shell quote compatible").
fn double_ok(unit: &Unit, at: usize, name: &[u8]) -> bool {
    let Unit::Char(c) = *unit else { return false };
    match c {
        '\'' | ' ' | '@' => true,
        '%' | '+' | ',' | '-' | '.' | '/' | ':' | ']' | '_' => true,
        c if c.is_ascii_alphanumeric() => true,
        // Special only where they begin a word, or stand alone.
        '#' | '~' => at == 0,
        '{' | '}' => name.len() == 1,
        c if c.is_ascii() => false,
        c => !c.is_control(),
    }
}

/// Writes byte `b` escaped, opening a `$'...'` part unless one is open.
fn escape(out: &mut String, escaping: &mut bool, b: u8) {
    if !*escaping {
        out.push_str("'$'");
        *escaping = true;
    }
    out.push('\\');
    match b {
        0x07 => out.push('a'),
        0x08 => out.push('b'),
        b'\t' => out.push('t'),
        b'\n' => out.push('n'),
        0x0b => out.push('v'),
        0x0c => out.push('f'),
        b'\r' => out.push('r'),
        _ => {
            for shift in [6, 3, 0] {
                out.push(char::from(b'0' + ((b >> shift) & 7)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(bytes: &[u8]) -> String {
        quote(OsStr::from_bytes(bytes))
    }

    /// Each one checked against GNU cp 9.1's `-v` line in a UTF-8 locale.
    #[test]
    fn as_cp_quotes() {
        for (name, quoted) in [
            (&b"x\x1b]0;pwned\x07"[..], r"'x'$'\033'']0;pwned'$'\a'"),
            (b"a\nb", r"'a'$'\n''b'"),
            (b"tab\there", r"'tab'$'\t''here'"),
            (b"it's", "\"it's\""),
            (b"x\xff\ny", r"'x'$'\377\n''y'"),
            (b"\x01", r"''$'\001'"),
            ("é ü".as_bytes(), "'é ü'"),
            (b"c1\xc2\x85x", r"'c1'$'\302\205''x'"),
            (b"a b", "'a b'"),
            (b"", "''"),
            (b"q\x7f", r"'q'$'\177'"),
            (b"'", "\"'\""),
            (b"a''b", "\"a''b\""),
            (b"\\", r"'\'"),
            (b"$x", "'$x'"),
            (b"a*", "'a*'"),
            (b"it's$", r"'it'\''s$'"),
            (b"#it's", "\"#it's\""),
            (b"it's#", r"'it'\''s#'"),
            (b"\x01'", r"''$'\001'\'''"),
            (b"\xe2\x82", r"''$'\342\202'"),
        ] {
            assert_eq!(q(name), quoted, "{}", name.escape_ascii());
        }
    }
}
