//! URL lists from files or standard input, read as a stream (one
//! line at a time, never the whole list in memory, and never more than
//! [`MAX_URL_BYTES`] of one line: whatever the input — a 1 GiB line,
//! `/dev/zero`, a binary file — memory stays bounded). Comments (`#`), blank
//! lines, CRLF endings and a UTF-8 byte-order mark are accepted; a bad line
//! is reported with its file and line and the rest still goes through, until
//! the input proves not to be text at all (see [`read_lines`]).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;

use super::{human_size, parse_line, StoredUrl, MAX_URL_BYTES};
use crate::model::Position;

/// An opened list: read on a thread of its own (`read_lines`).
pub type Input = Box<dyn BufRead + Send>;

/// Where URLs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    pub fn parse(arg: &str) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::File(PathBuf::from(arg))
        }
    }

    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::File(p) => p.display().to_string(),
        }
    }

    /// Opens the source; a missing file is an error naming it.
    pub fn open(&self) -> io::Result<Input> {
        match self {
            Source::Stdin => Ok(Box::new(BufReader::new(io::stdin()))),
            // A gzipped or UTF-16 list is read as its text (found by its bytes, not its name).
            Source::File(p) => File::open(p)
                .and_then(|f| super::sitemap::as_text(Box::new(f)))
                .map(|r| Box::new(BufReader::new(r)) as Input)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", p.display()))),
        }
    }
}

/// One non-blank, non-comment line of an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The file (or `<stdin>`) and line.
    pub place: Position,
    /// The line as read (trimmed), unless it is `url`'s own text: a URL in
    /// its stored form is not held twice.
    pub text: Option<String>,
    pub url: Result<StoredUrl, String>,
}

impl Line {
    /// The line as read (trimmed).
    pub fn text(&self) -> &str {
        match (&self.text, &self.url) {
            (Some(text), _) => text,
            (None, Ok(url)) => url.as_str(),
            (None, Err(_)) => "",
        }
    }
}

/// How the line reader bounds what it reads (the tests shrink them).
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// The longest line read as a URL ([`MAX_URL_BYTES`]); the rest of a
    /// longer line is skipped as it is read, never held.
    line: usize,
    /// A line that has not ended after this many bytes is no line of text:
    /// the reading of its input stops.
    endless: u64,
    /// Text never holds a NUL byte: after this many lines with NUL bytes...
    binary_lines: usize,
    /// ...or this many bytes of such lines, the input is binary data and
    /// its reading stops.
    binary_bytes: u64,
}

const LIMITS: Limits = Limits { line: MAX_URL_BYTES, endless: 4 << 30, binary_lines: 8, binary_bytes: 1 << 20 };

/// How many characters of a bad line its message shows.
const SHOWN_CHARS: usize = 80;

/// Reads `reader` line by line, calling `each` for every URL line.
///
/// Memory stays bounded whatever the input: a line longer than
/// [`MAX_URL_BYTES`] is reported (with its first characters) and the rest of
/// it skipped while reading; a line with NUL bytes is reported as binary,
/// and when an input proves to be binary data (8 such lines, or 1 MiB of
/// them) or holds a line that does not end within 4 GiB, one last line
/// reports it and the reading of that input stops (`Ok`): the lines before
/// it were all given to `each`.
///
/// The lines are read and their URLs parsed on a thread of their own, up to
/// about 14,000 ahead of `each` (which writes them to the ledger on the
/// caller's: `ahead`).
pub fn read_lines(name: &str, reader: impl Read + Send, each: impl FnMut(Line)) -> io::Result<()> {
    read_lines_with(name, reader, LIMITS, each)
}

fn read_lines_with(name: &str, reader: impl Read + Send, limits: Limits, each: impl FnMut(Line)) -> io::Result<()> {
    super::ahead::read_ahead(
        |emit| {
            read_raw_lines(name, reader, limits, &mut |(mut line, wanted)| {
                if wanted {
                    (line.text, line.url) = parse_line(line.text.take().unwrap_or_default());
                }
                emit(line);
            })
        },
        each,
    )
}

/// Reads the lines of `reader`, each as a `Line` and whether its URL is yet
/// to be parsed.
fn read_raw_lines(name: &str, reader: impl Read, limits: Limits, emit: &mut dyn FnMut((Line, bool))) -> io::Result<()> {
    let mut lines = RawLines::new(BufReader::with_capacity(64 * 1024, reader), limits);
    let mut number = 0usize;
    let mut binary_lines = 0usize;
    let mut binary_bytes = 0u64;
    let mut source = super::ahead::SourceName::new(name);
    while let Some(raw) = lines.next_line(binary_bytes)? {
        number += 1;
        let place = Position::line(source.next_value(), number as u64);
        let kept = lines.kept();
        match raw.stop {
            Some(Stop::Binary) => {
                emit((Line { place, text: Some(escaped(kept)), url: Err(binary_input(name)) }, false));
                return Ok(());
            }
            Some(Stop::Endless) => {
                let why = format!(
                    "the line has no end within {}: this is not a list of URLs; the rest of {name} is not read",
                    human_size(limits.endless)
                );
                emit((Line { place, text: Some(shown(kept)), url: Err(why) }, false));
                return Ok(());
            }
            None => {}
        }
        if raw.nul {
            binary_lines += 1;
            binary_bytes += raw.len;
            let stop = binary_lines >= limits.binary_lines || binary_bytes > limits.binary_bytes;
            let why = if stop {
                binary_input(name)
            } else {
                "the line holds NUL bytes: binary data, not text (save the list as UTF-8 text)".to_string()
            };
            emit((Line { place, text: Some(escaped(kept)), url: Err(why) }, false));
            if stop {
                return Ok(());
            }
            continue;
        }
        if let Some(line) = text_line(place, kept, raw.len, number == 1, limits) {
            emit(line);
        }
    }
    Ok(())
}

/// A line of text (`kept`: its bytes as kept, `len` its whole length; the
/// input's `first`): its URL, yet to be parsed, or why it has none; `None`
/// for a blank line or a comment.
fn text_line(place: Position, kept: &[u8], len: u64, first: bool, limits: Limits) -> Option<(Line, bool)> {
    let whole = len == kept.len() as u64;
    let mut bytes = kept;
    let mut len = len;
    if first {
        if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
            bytes = rest;
            len -= 3;
        }
    }
    if whole {
        if let Some(rest) = bytes.strip_suffix(b"\r") {
            bytes = rest;
            len -= 1;
        }
    }
    if len > limits.line as u64 {
        // A comment may be as long as it likes; its start says what it is.
        if bytes.trim_ascii_start().starts_with(b"#") {
            return None;
        }
        let why = format!(
            "the line is {} long; a URL is at most {} here (URLs stay under 2 KiB, and engines refuse \
             longer ones): the line is skipped",
            human_size(len),
            human_size(limits.line as u64)
        );
        return Some((Line { place, text: Some(shown(bytes)), url: Err(why) }, false));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t.trim(),
        Err(_) => {
            let shown = String::from_utf8_lossy(bytes).trim().to_string();
            return Some((Line { place, text: Some(shown), url: Err("the line is not valid UTF-8".into()) }, false));
        }
    };
    if text.is_empty() || text.starts_with('#') {
        return None;
    }
    if text.contains(char::is_whitespace) {
        let why = "the line has spaces in it; write one URL per line".to_string();
        return Some((Line { place, text: Some(text.to_string()), url: Err(why) }, false));
    }
    // Parsed later, with the lines around it.
    Some((Line { place, text: Some(text.to_string()), url: Err(String::new()) }, true))
}

fn binary_input(name: &str) -> String {
    format!(
        "binary data (NUL bytes), not a text list of URLs: a compressed file (gzip is read), or UTF-16 text \
         without a byte-order mark? Save the list as UTF-8 text; the rest of {name} is not read"
    )
}

/// Why the reading of an input stops at a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The line has not ended after `Limits::endless` bytes.
    Endless,
    /// Lines with NUL bytes passed `Limits::binary_bytes` within this line.
    Binary,
}

/// One line as read: its length (without the `\n`), whether it holds a NUL
/// byte, and whether the reading stopped inside it.
#[derive(Debug, Clone, Copy)]
struct RawLine {
    len: u64,
    nul: bool,
    stop: Option<Stop>,
}

/// Splits a stream into lines keeping at most the first `Limits::line + 4`
/// bytes of each (room for a byte-order mark and a `\r`): the rest of a
/// longer line is scanned for its end and dropped as it is read.
struct RawLines<R> {
    reader: R,
    limits: Limits,
    kept: Vec<u8>,
}

impl<R: BufRead> RawLines<R> {
    fn new(reader: R, limits: Limits) -> RawLines<R> {
        RawLines { reader, limits, kept: Vec::with_capacity(Self::keep(limits)) }
    }

    fn keep(limits: Limits) -> usize {
        limits.line + 4
    }

    /// The kept start of the last line read.
    fn kept(&self) -> &[u8] {
        &self.kept
    }

    /// Reads the next line; `binary_before` is the size of the earlier lines with NUL bytes.
    fn next_line(&mut self, binary_before: u64) -> io::Result<Option<RawLine>> {
        self.kept.clear();
        let keep = Self::keep(self.limits);
        let mut line = RawLine { len: 0, nul: false, stop: None };
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok((line.len > 0).then_some(line));
            }
            let (take, ends) = match memchr::memchr(b'\n', buf) {
                Some(at) => (at, true),
                None => (buf.len(), false),
            };
            let part = &buf[..take];
            let room = keep.saturating_sub(self.kept.len());
            self.kept.extend_from_slice(&part[..part.len().min(room)]);
            line.nul = line.nul || memchr::memchr(0, part).is_some();
            line.len += take as u64;
            self.reader.consume(take + usize::from(ends));
            if ends {
                return Ok(Some(line));
            }
            if line.nul && binary_before + line.len > self.limits.binary_bytes {
                line.stop = Some(Stop::Binary);
                return Ok(Some(line));
            }
            if line.len > self.limits.endless {
                line.stop = Some(Stop::Endless);
                return Ok(Some(line));
            }
        }
    }
}

/// The first characters of a line that goes on past what was kept, control
/// characters as U+FFFD, for a message.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String =
        text.trim_start().chars().take(SHOWN_CHARS).map(|c| if c.is_control() { '\u{FFFD}' } else { c }).collect();
    out.push('…');
    out
}

/// The first bytes of a binary line, escaped (`\x00`).
fn escaped(bytes: &[u8]) -> String {
    let cut = bytes.len().min(SHOWN_CHARS / 4);
    let mut out = bytes[..cut].escape_ascii().to_string();
    if cut < bytes.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        read_lines("urls.txt", input, |l| out.push(l)).unwrap();
        out
    }

    #[test]
    fn comments_blanks_crlf_and_bom() {
        let got = lines(b"\xEF\xBB\xBFhttps://a.example/1\r\n\r\n# note\n  https://a.example/2  \nhttps://a.example/3");
        let places: Vec<_> = got.iter().map(|l| l.place.to_string()).collect();
        assert_eq!(places, ["urls.txt:1", "urls.txt:4", "urls.txt:5"]);
        assert!(got.iter().all(|l| l.url.is_ok()));
        assert_eq!(got[0].url.as_ref().unwrap().as_str(), "https://a.example/1");
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_kept() {
        let got = lines(
            b"https://a.example/ok\nnot a url\nftp://a.example/x\n/relative\nhttps://a.example/also-ok\n\xff\xfe\n",
        );
        let bad: Vec<_> = got.iter().filter(|l| l.url.is_err()).map(|l| l.place.to_string()).collect();
        assert_eq!(bad, ["urls.txt:2", "urls.txt:3", "urls.txt:4", "urls.txt:6"]);
        assert_eq!(got.iter().filter(|l| l.url.is_ok()).count(), 2);
        assert!(got[2].url.as_ref().unwrap_err().contains("ftp"));
    }

    /// A line in its stored form is held once, as its URL; any other keeps
    /// its text as read beside its URL.
    #[test]
    fn a_line_is_held_once_when_it_is_its_url() {
        let got = lines(
            b"https://a.example/1
  HTTPS://A.example/2 
ftp://a.example/3
",
        );
        let held: Vec<_> = got.iter().map(|l| (l.text.as_deref(), l.text())).collect();
        assert_eq!(
            held,
            [
                (None, "https://a.example/1"),
                (Some("HTTPS://A.example/2"), "HTTPS://A.example/2"),
                (Some("ftp://a.example/3"), "ftp://a.example/3")
            ]
        );
        assert_eq!(got[1].url.as_ref().unwrap().as_str(), "https://a.example/2");
    }

    /// A reader of one endless line: `byte` forever, counting what was taken.
    struct Endless {
        byte: u8,
        taken: u64,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(self.byte);
            self.taken += buf.len() as u64;
            Ok(buf.len())
        }
    }

    const SMALL: Limits = Limits { line: 64, endless: 1 << 20, binary_lines: 3, binary_bytes: 4096 };

    #[test]
    fn an_endless_line_is_never_held_and_its_reading_stops() {
        // The real line cap; a shorter endless limit than the real 4 GiB keeps the test fast.
        let limits = Limits { endless: 64 << 20, ..LIMITS };
        let mut endless = Endless { byte: b'a', taken: 0 };
        let mut lines = RawLines::new(BufReader::with_capacity(1024, &mut endless), limits);
        let line = lines.next_line(0).unwrap().expect("a line");
        assert_eq!(line.stop, Some(Stop::Endless));
        assert!(line.len > limits.endless, "read to the limit: {}", line.len);
        // 64 MiB went through, and the reader never held more than the cap (and its 4 bytes of slack).
        assert_eq!(lines.kept().len(), MAX_URL_BYTES + 4);
        assert_eq!(lines.kept.capacity(), MAX_URL_BYTES + 4, "the kept buffer never grew");
        drop(lines);
        assert!(endless.taken <= limits.endless + 2048, "stopped right after the limit: {}", endless.taken);

        let mut got = Vec::new();
        read_lines_with("inf", Endless { byte: b'a', taken: 0 }, SMALL, |l| got.push(l)).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].place.to_string(), "inf:1");
        assert!(got[0].url.as_ref().unwrap_err().contains("has no end within 1 MiB"), "{:?}", got[0].url);
        // What is shown is what was kept (SMALL.line and its slack), never more than SHOWN_CHARS.
        assert_eq!(got[0].text(), format!("{}…", "a".repeat(SMALL.line + 4)));
    }

    #[test]
    fn nul_bytes_are_binary_and_enough_of_them_stop_the_input() {
        let mut got = Vec::new();
        read_lines_with("zero", Endless { byte: 0, taken: 0 }, SMALL, |l| got.push(l)).unwrap();
        assert_eq!(got.len(), 1, "one endless NUL line: one result");
        assert!(got[0].url.as_ref().unwrap_err().contains("binary data"), "{:?}", got[0].url);
        assert!(got[0].text().starts_with("\\x00\\x00"), "{}", got[0].text());

        // Below the limits each NUL line is its own invalid line, and the good ones around it are kept.
        let got = lines_with(b"https://a.example/1\n\0x\nhttps://a.example/2\n\0\0\nhttps://a.example/3\n", SMALL);
        let good: Vec<_> = got.iter().filter(|l| l.url.is_ok()).map(|l| l.place.to_string()).collect();
        assert_eq!(good, ["t:1", "t:3", "t:5"]);
        assert!(got[1].url.as_ref().unwrap_err().contains("NUL bytes"));

        // The third NUL line (SMALL.binary_lines) stops the input: line 7 is never read.
        let got =
            lines_with(b"\0\nhttps://a.example/1\n\0\n\0\0\nhttps://a.example/2\n\0\nhttps://a.example/3\n", SMALL);
        let places: Vec<_> = got.iter().map(|l| l.place.to_string()).collect();
        assert_eq!(places, ["t:1", "t:2", "t:3", "t:4"]);
        assert!(got[3].url.as_ref().unwrap_err().contains("the rest of t is not read"), "{:?}", got[3].url);

        // 4 KiB of NUL lines (SMALL.binary_bytes) stops it too, inside a line.
        let mut input = b"https://a.example/1\n".to_vec();
        input.extend(std::iter::repeat_n(0u8, 5000));
        input.extend(b"\nhttps://a.example/2\n");
        let got = lines_with(&input, SMALL);
        assert_eq!(got.len(), 2);
        assert!(got[1].url.as_ref().unwrap_err().contains("binary data"), "{:?}", got[1].url);
    }

    #[test]
    fn the_cap_counts_the_url_not_its_line_ending_or_byte_order_mark() {
        let url = |n: usize| format!("https://a.example/{}", "x".repeat(n - "https://a.example/".len()));
        let input = format!("\u{FEFF}{}\r\n{}\n{}\r\n# {}\n", url(64), url(64), url(65), "c".repeat(500));
        let got = lines_with(input.as_bytes(), SMALL);
        let verdicts: Vec<_> = got.iter().map(|l| (l.place.to_string(), l.url.is_ok())).collect();
        let t = |n: &str, ok| (format!("t:{n}"), ok);
        assert_eq!(verdicts, [t("1", true), t("2", true), t("3", false)], "a long comment is still a comment");
        let why = got[2].url.as_ref().unwrap_err();
        assert!(why.contains("65 bytes long") && why.contains("64 bytes"), "{why}");
        assert!(
            got[2].text().starts_with("https://a.example/xxx") && got[2].text().ends_with('…'),
            "{}",
            got[2].text()
        );
    }

    fn lines_with(input: &[u8], limits: Limits) -> Vec<Line> {
        let mut out = Vec::new();
        read_lines_with("t", input, limits, |l| out.push(l)).unwrap();
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// No line, however malformed (random bytes, NULs, invalid UTF-8,
        /// 100 KB lines), panics the reader or loses the valid lines around it.
        #[test]
        fn garbage_never_hides_the_good_lines(
            garbage in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 100_000..100_001),
                ],
                1..6,
            )
        ) {
            let mut input = Vec::new();
            let mut expected = Vec::new();
            let mut line = 0;
            for (i, g) in garbage.iter().enumerate() {
                let cleaned: Vec<u8> = g.iter().copied().filter(|b| *b != b'\n').collect();
                input.extend_from_slice(&cleaned);
                input.push(b'\n');
                line += 1;
                let good = format!("https://good.example/{i}");
                input.extend_from_slice(good.as_bytes());
                input.push(b'\n');
                line += 1;
                expected.push((format!("urls.txt:{line}"), good));
            }
            let got = lines(&input);
            let valid: Vec<(String, String)> = got
                .iter()
                .filter(|l| l.text().starts_with("https://good.example/"))
                .map(|l| (l.place.to_string(), l.url.as_ref().map(|u| u.to_string()).unwrap_or_default()))
                .collect();
            proptest::prop_assert_eq!(valid, expected);
        }
    }
}
