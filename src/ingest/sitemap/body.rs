//! What is read from a sitemap body: a local file or a download, its gzip
//! undone (found by its magic bytes, not by a name or a Content-Type), and
//! never more than the cap of uncompressed bytes; past the cap a read fails
//! with [`OverCap`], which [`io_problem`] words.

use flate2::read::MultiGzDecoder;
use std::fmt;
use std::fs::File;
use std::io::{self, Cursor, Read};

use super::Problem;
use crate::ingest::exact_size;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// An opened body: a local file, or a download in an anonymous temporary file.
pub(super) struct Body {
    file: File,
    /// The download was stopped at the cap: reaching its end means the cap was passed.
    truncated: bool,
}

impl Body {
    /// A local file, read to its end (the cap is held while parsing).
    pub(super) fn whole(file: File) -> Body {
        Body { file, truncated: false }
    }

    /// A download; `truncated`: it was stopped at the cap.
    pub(super) fn new(file: File, truncated: bool) -> Body {
        Body { file, truncated }
    }

    pub(super) fn reader(self) -> Box<dyn Read + Send> {
        Box::new(self)
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        if n == 0 && self.truncated && !buf.is_empty() {
            return Err(io::Error::other(OverCap));
        }
        Ok(n)
    }
}

/// The error a capped read returns past the cap.
#[derive(Debug)]
struct OverCap;

impl fmt::Display for OverCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("over the size cap")
    }
}

impl std::error::Error for OverCap {}

fn is_over_cap(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<OverCap>())
}

/// The problem a failed read of `name` is: past the cap, or an I/O error.
pub(super) fn io_problem(name: &str, error: &io::Error, cap: u64) -> Problem {
    let message = if is_over_cap(error) {
        let cap = exact_size(cap);
        format!("larger than the {cap} cap (sitemap.max_bytes); nothing past the first {cap} was read")
    } else {
        format!("cannot read: {error}")
    };
    Problem { place: crate::model::Position::of(name), message }
}

/// Passes at most `left` bytes; asked for more while more exist, it fails with [`OverCap`].
pub(super) struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return loop {
                match self.inner.read(&mut probe) {
                    Ok(0) => break Ok(0),
                    Ok(_) => break Err(io::Error::other(OverCap)),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => break Err(e),
                }
            };
        }
        let max = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The uncompressed bytes of a body, at most `cap` of them.
pub(super) fn uncompressed(raw: Box<dyn Read + Send>, cap: u64) -> io::Result<Capped<Box<dyn Read + Send>>> {
    decoded(raw).map(|inner| Capped { inner, left: cap })
}

/// Undoes gzip found by its magic bytes, twice at most (a `.gz` file served with `Content-Encoding: gzip`).
pub(super) fn decoded(mut reader: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
    for _ in 0..2 {
        let (gzip, replay) = sniff_gzip(reader)?;
        if !gzip {
            return Ok(replay);
        }
        reader = Box::new(MultiGzDecoder::new(replay));
    }
    Ok(reader)
}

/// Reads the first two bytes and gives them back in front of the rest.
fn sniff_gzip(mut reader: Box<dyn Read + Send>) -> io::Result<(bool, Box<dyn Read + Send>)> {
    let mut head = [0u8; 2];
    let got = read_head(&mut reader, &mut head)?;
    let gzip = got == 2 && head == GZIP_MAGIC;
    Ok((gzip, Box::new(Cursor::new(head[..got].to_vec()).chain(reader))))
}

/// Fills `head` as far as the reader goes; returns how many bytes it got.
pub(super) fn read_head(reader: &mut dyn Read, head: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
