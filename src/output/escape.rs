//! Terminal control characters in human output, shown escaped.
//!
//! Much of what indexq prints comes from outside: an engine's answer (`log`
//! shows its body, `status` and `queue list` its message), a URL list line
//! or a sitemap `<loc>` that is not a URL (`submit` names it), a key file's
//! content (`doctor`). Printed raw, an ESC or C1 sequence in it could retitle
//! the terminal, clear the screen or hide a line; a `\r` could overwrite what
//! came before. So every control character — C0 (U+0000–U+001F) but the
//! line feed and the tab, DEL (U+007F) and C1 (U+0080–U+009F), i.e. Unicode's
//! `Cc` — is written in Rust's escape form (`\u{1b}`, `\u{d}`, `\u{9b}`), and
//! a byte that is not UTF-8 as `\x9b` (an 8-bit terminal reads a lone 0x9B
//! as CSI).
//!
//! Where: in one place, the writers human text goes through — `Printer`'s
//! stdout (unless `--json`) and stderr (warnings, notes), the error that
//! ends a run, and the log lines of `-v` (`escape::stderr`) — rather than at
//! each place untrusted text is formatted: a value formatted anywhere, now
//! or later, is covered, and human text of indexq's own never holds a
//! control character (a line break stays a line break). The writer keeps a
//! UTF-8 sequence split across two writes (a `BufWriter` above it cuts
//! anywhere) until its end comes.
//!
//! Not through it: documents in formats with their own escaping, written
//! through `Printer::document` — JSON (serde escapes C0 controls; the rest
//! is valid in a JSON string), the HTML report (its `esc` shows controls
//! the same way) and the Prometheus text (label values come from the
//! configuration) — and the progress bar, which indicatif draws on stderr
//! with escape codes of its own (its messages, counts and configured names,
//! are escaped with `controls` first).

use std::borrow::Cow;
use std::io::{self, Write};

/// `text` with its control characters (but `\n` and `\t`) escaped.
pub fn controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is shown escaped: a control character other than the line
/// feed and the tab.
fn escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// A writer that escapes control characters (`controls`) in what passes
/// through it, when `on`; else it passes everything as is.
pub struct Escaping<W: Write> {
    inner: W,
    on: bool,
    /// The start of a UTF-8 sequence whose end has not been written yet.
    pending: Vec<u8>,
}

impl<W: Write> Escaping<W> {
    pub fn new(inner: W, on: bool) -> Self {
        Escaping { inner, on, pending: Vec::new() }
    }

    /// Writes `bytes` escaped; keeps an unfinished UTF-8 sequence at the
    /// end for the next write.
    fn escape(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let mut out = Vec::with_capacity(bytes.len() + 16);
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    push_escaped(text, &mut out);
                    break;
                }
                Err(e) => {
                    let (valid, rest) = bytes.split_at(e.valid_up_to());
                    push_escaped(std::str::from_utf8(valid).expect("valid up to here"), &mut out);
                    match e.error_len() {
                        // The sequence may end in the next write.
                        None => {
                            self.pending.extend_from_slice(rest);
                            break;
                        }
                        Some(n) => {
                            push_bytes(&rest[..n], &mut out);
                            bytes = &rest[n..];
                        }
                    }
                }
            }
        }
        self.inner.write_all(&out)
    }
}

fn push_escaped(text: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(controls(text).as_bytes());
}

/// Bytes that are not UTF-8, as `\xNN`.
fn push_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    for b in bytes {
        out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
    }
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.on {
            return self.inner.write(buf);
        }
        if self.pending.is_empty() {
            self.escape(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(buf);
            self.escape(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Escaping<W> {
    /// A sequence that never ended is no character: its bytes, escaped.
    fn drop(&mut self) {
        if !self.pending.is_empty() {
            let mut out = Vec::new();
            push_bytes(&std::mem::take(&mut self.pending), &mut out);
            let _ = self.inner.write_all(&out);
            let _ = self.inner.flush();
        }
    }
}

/// Standard error for human text: escaped.
pub fn stderr() -> Escaping<io::StderrLock<'static>> {
    Escaping::new(io::stderr().lock(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(chunks: &[&[u8]]) -> String {
        let mut out = Vec::new();
        {
            let mut w = Escaping::new(&mut out, true);
            for chunk in chunks {
                w.write_all(chunk).unwrap();
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escape_sequences_bel_and_carriage_returns_are_shown_escaped() {
        assert_eq!(controls("\x1b]0;pwned\x07\x1b[2J"), "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J");
        assert_eq!(controls("100%\rdone"), "100%\\u{d}done");
        assert_eq!(controls("a\u{7f}b\u{0}c"), "a\\u{7f}b\\u{0}c");
        assert_eq!(through(&[b"title \x1b]0;x\x07 end\r\n"]), "title \\u{1b}]0;x\\u{7} end\\u{d}\n");
    }

    #[test]
    fn c1_controls_are_shown_escaped_even_split_across_writes() {
        assert_eq!(controls("a\u{9b}31mb\u{85}"), "a\\u{9b}31mb\\u{85}");
        // U+009B is C2 9B in UTF-8: cut between its two bytes.
        assert_eq!(through(&[b"x\xc2", b"\x9b2J"]), "x\\u{9b}2J");
        // Cut at every place of a multi-byte text, one byte at a time.
        let text = "é—\u{9b}ok 🙂";
        let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        assert_eq!(through(&bytes), "é—\\u{9b}ok 🙂");
    }

    #[test]
    fn text_without_controls_is_untouched() {
        let text = "Straße — é, 東京, tab\there\nnext line 🙂";
        assert!(matches!(controls(text), Cow::Borrowed(_)));
        assert_eq!(through(&[text.as_bytes()]), text);
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_as_bytes() {
        // A lone 0x9B is CSI on an 8-bit terminal.
        assert_eq!(through(&[b"a\x9b2Jb"]), "a\\x9b2Jb");
        // A sequence that never ends.
        assert_eq!(through(&[b"end\xe2\x80"]), "end\\xe2\\x80");
    }

    #[test]
    fn off_passes_everything_as_is() {
        let mut out = Vec::new();
        Escaping::new(&mut out, false).write_all(b"\x1b[1m{\"a\": 1}\x1b[0m").unwrap();
        assert_eq!(out, b"\x1b[1m{\"a\": 1}\x1b[0m");
    }
}
