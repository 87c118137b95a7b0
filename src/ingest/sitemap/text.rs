//! A text sitemap (sitemaps.org's "Text file"): one URL a line, UTF-8, at
//! most 50,000 of them. Blank lines are passed over; a line is read up to
//! [`MAX_URL_BYTES`] and the rest of a longer one skipped, never held. No
//! lastmod: a text sitemap has none.

use memchr::memchr;
use std::io::{BufRead, BufReader, Read};

use super::body::io_problem;
use super::{Entry, Problem};
use crate::ingest::{human_size, MAX_URL_BYTES};
use crate::model::Position;

/// The most URLs a text sitemap holds (sitemaps.org); the lines past them are not read.
pub(super) const MAX_TEXT_URLS: usize = 50_000;

/// Reads a text sitemap's lines (its bytes uncompressed and capped), each URL to `each`.
pub(super) fn parse_text(
    raw: Box<dyn Read + Send>,
    name: &str,
    cap: u64,
    each: &mut dyn FnMut(Entry),
    problems: &mut Vec<Problem>,
) {
    let mut source = crate::ingest::ahead::SourceName::new(name);
    let mut reader = BufReader::with_capacity(64 * 1024, raw);
    let mut line = Vec::new();
    let (mut number, mut urls) = (0u64, 0usize);
    let mut not_utf8: Option<(Position, usize)> = None;
    let before = problems.len();
    loop {
        let length = match read_line(&mut reader, &mut line) {
            Ok(Some(length)) => length,
            Ok(None) => break,
            Err(e) => {
                problems.push(io_problem(name, &e, cap));
                return finish(not_utf8, problems);
            }
        };
        number += 1;
        let mut bytes = line.as_slice();
        if number == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        let start = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let trimmed = bytes[start..].trim_ascii_end();
        if trimmed.is_empty() {
            continue;
        }
        let shown_end = trimmed.len().min(MAX_URL_BYTES + 1);
        let column = 1 + start as u64;
        let place = |source: &mut crate::ingest::ahead::SourceName| Position::at(source.next_value(), number, column);
        if trimmed.contains(&0) {
            let message = "binary data, not a text sitemap (a NUL byte in this line): the rest is not read".to_string();
            problems.push(Problem { place: place(&mut source), message });
            break;
        }
        let Ok(text) = std::str::from_utf8(&trimmed[..shown_end]) else {
            match not_utf8.as_mut() {
                Some((_, count)) => *count += 1,
                None => not_utf8 = Some((place(&mut source), 1)),
            }
            continue;
        };
        // A line cut as it was read is longer than any URL; another is as long as its text.
        let full = if length > line.len() { length } else { trimmed.len() };
        if full > MAX_URL_BYTES {
            let message = format!(
                "the line is {} long; a URL is at most {} here (URLs stay under 2 KiB, and engines refuse longer \
                 ones): `{}…` is skipped",
                human_size(full as u64),
                human_size(MAX_URL_BYTES as u64),
                text.chars().take(80).collect::<String>()
            );
            problems.push(Problem { place: place(&mut source), message });
            continue;
        }
        urls += 1;
        if urls > MAX_TEXT_URLS {
            let message = format!(
                "more than {MAX_TEXT_URLS} URLs: a text sitemap holds at most {MAX_TEXT_URLS} (sitemaps.org); \
                 this line and the rest are not read"
            );
            problems.push(Problem { place: place(&mut source), message });
            break;
        }
        each(Entry { loc: text.to_string(), lastmod: None, place: place(&mut source) });
    }
    if urls == 0 && not_utf8.is_none() && problems.len() == before {
        problems.push(Problem { place: Position::of(name), message: "empty: no URL in it".to_string() });
    }
    finish(not_utf8, problems);
}

/// Reads the next line into `line`, kept to a little more than the longest
/// URL (a longer line is skipped, and its start is all it shows), and
/// returns the line's whole length without its newline; `None` at the end.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<usize>> {
    line.clear();
    let mut length = 0usize;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok((length > 0).then_some(length));
        }
        let (take, newline) = match memchr(b'\n', available) {
            Some(i) => (i, true),
            None => (available.len(), false),
        };
        let room = (MAX_URL_BYTES + 2).saturating_sub(line.len());
        line.extend_from_slice(&available[..take.min(room)]);
        length += take;
        reader.consume(take + usize::from(newline));
        if newline {
            return Ok(Some(length));
        }
    }
}

fn finish(not_utf8: Option<(Position, usize)>, problems: &mut Vec<Problem>) {
    if let Some((place, count)) = not_utf8 {
        let message = match count {
            1 => "not UTF-8: a text sitemap is UTF-8 (sitemaps.org); the line is skipped".to_string(),
            n => format!("{n} lines are not UTF-8 (this one first): a text sitemap is UTF-8; those lines are skipped"),
        };
        problems.push(Problem { place, message });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: impl Into<Vec<u8>>) -> (Vec<String>, Vec<String>) {
        let mut entries = Vec::new();
        let mut problems = Vec::new();
        let raw: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(text.into()));
        parse_text(raw, "s.txt", u64::MAX, &mut |e| entries.push(format!("{} {}", e.place, e.loc)), &mut problems);
        (entries, problems.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn one_url_a_line_with_its_place() {
        let (entries, problems) = read("\u{feff}https://e.com/a\r\n\n   https://e.com/b  \r\n\thttps://e.com/c");
        assert_eq!(entries, ["s.txt:1:1 https://e.com/a", "s.txt:3:4 https://e.com/b", "s.txt:4:2 https://e.com/c"]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(read("\n \n"), (vec![], vec!["s.txt: empty: no URL in it".to_string()]));
        assert_eq!(read("").1, ["s.txt: empty: no URL in it"]);
    }

    #[test]
    fn bad_lines_are_said_and_the_rest_goes_on() {
        let long = format!("https://e.com/{}", "x".repeat(MAX_URL_BYTES));
        let mut bytes = format!("{long}\n").into_bytes();
        bytes.extend_from_slice(b"https://e.com/\xff\nhttps://e.com/ok\n\xfe\n");
        let (entries, problems) = read(bytes);
        assert_eq!(entries, ["s.txt:3:1 https://e.com/ok"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("s.txt:1:1: the line is 8.0 KiB long"), "{problems:?}");
        assert!(problems[1].starts_with("s.txt:2:1: 2 lines are not UTF-8"), "{problems:?}");
        let (entries, problems) = read(b"https://e.com/a\n\x00\x01\nhttps://e.com/b\n".to_vec());
        assert_eq!(entries, ["s.txt:1:1 https://e.com/a"]);
        assert_eq!(
            problems,
            ["s.txt:2:1: binary data, not a text sitemap (a NUL byte in this line): the rest is not read"]
        );
    }

    #[test]
    fn at_most_fifty_thousand_urls() {
        let text: String = (0..=MAX_TEXT_URLS).map(|i| format!("https://e.com/{i}\n")).collect();
        let (entries, problems) = read(text);
        assert_eq!(entries.len(), MAX_TEXT_URLS);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("s.txt:50001:1: more than 50000 URLs"), "{problems:?}");
    }
}
