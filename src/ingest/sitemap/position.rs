//! Line and column of what the XML parser reads, for the places of entries
//! and problems.

use std::io::{self, BufRead, BufReader, Read};

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// A `BufRead` that knows the line:column of what the XML parser has consumed. Columns count characters.
///
/// quick-xml consumes exactly the bytes of each event, except that after a text event it has already taken the
/// `<` that follows, which its `buffer_position` leaves out; so `mark` accepts a parser position at most one byte
/// behind what was consumed, and positions up to the end of the next event are found from the bytes since the mark.
pub(super) struct Tracked<R> {
    inner: BufReader<R>,
    consumed: u64,
    line: u64,
    col: u64,
    /// Line:col before the last consumed byte, and that byte.
    before_last: (u64, u64),
    last: Option<u8>,
    mark_pos: u64,
    mark_line: u64,
    mark_col: u64,
    since_mark: Vec<u8>,
}

impl<R: Read> Tracked<R> {
    pub(super) fn new(inner: R) -> io::Result<Tracked<R>> {
        let mut inner = BufReader::with_capacity(64 * 1024, inner);
        // A byte-order mark is neither shown by editors nor counted by quick-xml: drop it before counting.
        if inner.fill_buf()?.starts_with(UTF8_BOM) {
            inner.consume(UTF8_BOM.len());
        }
        Ok(Tracked {
            inner,
            consumed: 0,
            line: 1,
            col: 1,
            before_last: (1, 1),
            last: None,
            mark_pos: 0,
            mark_line: 1,
            mark_col: 1,
            since_mark: Vec::new(),
        })
    }

    /// Called with the parser's position before each event.
    pub(super) fn mark(&mut self, pos: u64) {
        self.since_mark.clear();
        match (self.consumed.checked_sub(pos), self.last) {
            (Some(1), Some(byte)) => {
                (self.mark_line, self.mark_col) = self.before_last;
                self.since_mark.push(byte);
            }
            _ => (self.mark_line, self.mark_col) = (self.line, self.col),
        }
        self.mark_pos = pos;
    }

    pub(super) fn mark_place(&self) -> (u64, u64) {
        (self.mark_line, self.mark_col)
    }

    /// Line:col of a parser position at or after the last mark.
    pub(super) fn place_of(&self, pos: u64) -> (u64, u64) {
        let ahead = pos.saturating_sub(self.mark_pos).min(self.since_mark.len() as u64) as usize;
        advance((self.mark_line, self.mark_col), &self.since_mark[..ahead])
    }
}

fn advance((mut line, mut col): (u64, u64), bytes: &[u8]) -> (u64, u64) {
    for &byte in bytes {
        if byte == b'\n' {
            line += 1;
            col = 1;
        } else if byte & 0xC0 != 0x80 {
            col += 1;
        }
    }
    (line, col)
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Tracked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        let buffered = self.inner.buffer();
        let bytes = &buffered[..amt.min(buffered.len())];
        if let Some((&last, init)) = bytes.split_last() {
            self.before_last = advance((self.line, self.col), init);
            (self.line, self.col) = advance(self.before_last, &[last]);
            self.last = Some(last);
            self.consumed += bytes.len() as u64;
            self.since_mark.extend_from_slice(bytes);
        }
        self.inner.consume(amt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quick_xml::events::Event;

    #[test]
    fn columns_count_characters_and_follow_text_before_markup() {
        let text = "<a>\nxé<b/>  &amp;<c>\r\n</c></a>";
        let mut xml = quick_xml::Reader::from_reader(Tracked::new(text.as_bytes()).unwrap());
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        loop {
            let pos = xml.buffer_position();
            xml.get_mut().mark(pos);
            let event = xml.read_event_into(&mut buf).unwrap();
            let (line, col) = xml.get_ref().mark_place();
            let name = match &event {
                Event::Eof => break,
                Event::Start(e) | Event::Empty(e) => format!("<{}>", String::from_utf8_lossy(e.name().as_ref())),
                Event::End(e) => format!("</{}>", String::from_utf8_lossy(e.name().as_ref())),
                Event::Text(_) => "text".to_string(),
                Event::GeneralRef(_) => "ref".to_string(),
                _ => "other".to_string(),
            };
            seen.push(format!("{name}@{line}:{col}"));
            buf.clear();
        }
        assert_eq!(
            seen,
            vec![
                "<a>@1:1",
                "text@1:4",
                "<b>@2:3",
                "text@2:7",
                "ref@2:9",
                "<c>@2:14",
                "text@2:17",
                "</c>@3:1",
                "</a>@3:5"
            ]
        );
    }
}
