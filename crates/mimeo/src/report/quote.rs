//! Names quoted for a terminal as cp quotes them (gnulib's `shell-escape-always` style): what
//! is printed can be pasted back into a shell and names the same bytes, and no control
//! character or byte that is not UTF-8 reaches the terminal raw.
//!
//! - In a locale whose character set is not UTF-8 (`C`, `POSIX`), every byte that is not
//!   ASCII is escaped, as cp escapes it there; in a UTF-8 one (`C.UTF-8`, `en_US.UTF-8`),
//!   only those that are not part of a printable character.
//! - A name is put between single quotes: `'a b'`.
//! - A control character, and each byte that is not part of valid UTF-8, is written in a
//!   `$'...'` part: `\a \b \t \n \v \f \r` by letter, anything else as three octal digits
//!   (`'x'$'\033'']0;pwned'$'\a'`). A printable character is kept as it is (`'é'`).
//! - A single quote is `'\''`. A name whose only unusual characters are single quotes,
//!   spaces and letters, digits and `%+,-./:@]_` is put between double quotes instead:
//!   `"it's"`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

/// Whether the locale's character set is UTF-8, as `setlocale(LC_ALL, "")` would find it:
/// the first of `LC_ALL`, `LC_CTYPE` and `LANG` that is set names it.
pub(crate) fn utf8_locale() -> bool {
    static UTF8: OnceLock<bool> = OnceLock::new();
    *UTF8.get_or_init(|| {
        let named = ["LC_ALL", "LC_CTYPE", "LANG"]
            .iter()
            .find_map(|k| std::env::var_os(k).filter(|v| !v.is_empty()));
        named.is_some_and(|v| {
            let v = v.to_string_lossy().to_ascii_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
    })
}

/// `name` quoted as cp quotes names in its messages and `-v` lines (module docs).
pub fn quote(name: impl AsRef<OsStr>) -> String {
    quote_in(name.as_ref().as_bytes(), utf8_locale())
}

/// [`quote`] in a UTF-8 locale (`utf8`) or another one.
fn quote_in(bytes: &[u8], utf8: bool) -> String {
    let units = units(bytes, utf8);
    if !units.contains(&Unit::Char('\'')) {
        return single(&units, false);
    }
    if units
        .iter()
        .enumerate()
        .all(|(i, u)| double_ok(u, i, bytes))
    {
        // Every unit is a printable character here, so the bytes are UTF-8.
        return format!("\"{}\"", String::from_utf8_lossy(bytes));
    }
    // gnulib scans a name with a single quote once, then writes it again without resetting
    // whether a `$'...'` part is open: when the name ends in one, the second pass starts as
    // if one were open (`'''a'\''b'$'\001'`, `'\001'\'''$'\002'`), and cp 9.1 prints that.
    let ends_escaped = units.last().is_some_and(escaped);
    single(&units, ends_escaped)
}

/// Whether `unit` is written escaped, in a `$'...'` part.
fn escaped(unit: &Unit) -> bool {
    match unit {
        Unit::Char(c) => c.is_control(),
        Unit::Byte(_) => true,
    }
}

/// `units` between single quotes; `escaping`: start as if a `$'...'` part were open.
fn single(units: &[Unit], mut escaping: bool) -> String {
    let mut out = String::with_capacity(units.len() + 2);
    out.push('\'');
    for unit in units {
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

/// An argument quoted as cp quotes one in an option's error (gnulib's `quote`, the locale
/// style, here with ASCII quotes): between single quotes, a single quote and a backslash
/// each after a backslash, and a control character, or a byte that is not part of a
/// printable character, as a backslash escape (`'nu\377'`).
pub fn quote_arg(value: impl AsRef<OsStr>) -> String {
    let mut out = String::from("'");
    for unit in units(value.as_ref().as_bytes(), utf8_locale()) {
        match unit {
            Unit::Char(c @ ('\'' | '\\')) => {
                out.push('\\');
                out.push(c);
            }
            Unit::Char(c) if !c.is_control() => out.push(c),
            Unit::Char(c) => {
                for &b in c.encode_utf8(&mut [0; 4]).as_bytes() {
                    backslashed(&mut out, b);
                }
            }
            Unit::Byte(b) => backslashed(&mut out, b),
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

fn units(mut bytes: &[u8], utf8: bool) -> Vec<Unit> {
    if !utf8 {
        let unit = |&b: &u8| {
            if b.is_ascii() {
                Unit::Char(char::from(b))
            } else {
                Unit::Byte(b)
            }
        };
        return bytes.iter().map(unit).collect();
    }
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
    backslashed(out, b);
}

/// Writes byte `b` as a backslash escape: `\a \b \t \n \v \f \r` by letter, any other as
/// three octal digits.
fn backslashed(out: &mut String, b: u8) {
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

    #[test]
    fn an_argument_is_quoted_with_backslash_escapes_as_cp_quotes_it() {
        let q = |b: &[u8]| quote_arg(OsStr::from_bytes(b));
        assert_eq!(q(b"nu\xff\x01a'b\"\\\t"), r#"'nu\377\001a\'b"\\\t'"#);
        assert_eq!(q(b"plain"), "'plain'");
    }

    fn q(bytes: &[u8]) -> String {
        quote_in(bytes, true)
    }

    /// Checked against GNU cp 9.1 run with `LC_ALL=C`.
    #[test]
    fn as_cp_quotes_in_the_c_locale() {
        for (name, quoted) in [
            ("é".as_bytes(), r"''$'\303\251'"),
            (b"x\xff", r"'x'$'\377'"),
            ("it's é".as_bytes(), r"'''it'\''s '$'\303\251'"),
            (b"a b", "'a b'"),
        ] {
            assert_eq!(quote_in(name, false), quoted, "{}", name.escape_ascii());
        }
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
            (b"a'b\x01", r"'''a'\''b'$'\001'"),
            (b"\x01'\x02", r"'\001'\'''$'\002'"),
            (b"'\x01", r"''\'''$'\001'"),
            (b"a\x01'b", r"'a'$'\001'\''b'"),
            (b"'\xc2\x85x", r"''\'''$'\302\205''x'"),
            (b"a\"'b", r#"'a"'\''b'"#),
            (b"a'b\xc3\xa9", "\"a'b\u{e9}\""),
        ] {
            assert_eq!(q(name), quoted, "{}", name.escape_ascii());
        }
    }
}
