//! Inputs: URL lists from files or standard input, read as a stream (one
//! line at a time, never the whole list in memory). Comments (`#`), blank
//! lines, CRLF endings and a UTF-8 byte-order mark are accepted; a bad line
//! is reported with its file and line and the rest still goes through.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;
use url::Url;

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
    pub fn open(&self) -> io::Result<Box<dyn BufRead>> {
        match self {
            Source::Stdin => Ok(Box::new(BufReader::new(io::stdin()))),
            Source::File(p) => File::open(p)
                .map(|f| Box::new(BufReader::new(f)) as Box<dyn BufRead>)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot read {}: {e}", p.display()))),
        }
    }
}

/// One non-blank, non-comment line of an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// `file:line`.
    pub place: String,
    pub text: String,
    pub url: Result<Url, String>,
}

/// Checks that a line is an absolute http(s) URL.
pub fn parse_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => "not an absolute URL (it needs http:// or https://)".to_string(),
        other => format!("not a valid URL: {other}"),
    })?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" | "https" => Err("the URL has no host".into()),
        other => Err(format!("scheme `{other}` is not http or https")),
    }
}

/// Reads `reader` line by line, calling `each` for every URL line.
pub fn read_lines(name: &str, reader: impl Read, mut each: impl FnMut(Line)) -> io::Result<()> {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let mut number = 0usize;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        number += 1;
        let place = format!("{name}:{number}");
        let mut bytes = buf.as_slice();
        if number == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t.trim(),
            Err(_) => {
                let shown = String::from_utf8_lossy(bytes).trim().to_string();
                each(Line { place, text: shown, url: Err("the line is not valid UTF-8".into()) });
                continue;
            }
        };
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let url = if text.contains(char::is_whitespace) {
            Err("the line has spaces in it; write one URL per line".to_string())
        } else {
            parse_url(text)
        };
        each(Line { place, text: text.to_string(), url });
    }
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
        let places: Vec<_> = got.iter().map(|l| l.place.as_str()).collect();
        assert_eq!(places, ["urls.txt:1", "urls.txt:4", "urls.txt:5"]);
        assert!(got.iter().all(|l| l.url.is_ok()));
        assert_eq!(got[0].url.as_ref().unwrap().as_str(), "https://a.example/1");
    }

    #[test]
    fn bad_lines_are_reported_and_the_rest_kept() {
        let got = lines(
            b"https://a.example/ok\nnot a url\nftp://a.example/x\n/relative\nhttps://a.example/also-ok\n\xff\xfe\n",
        );
        let bad: Vec<_> = got.iter().filter(|l| l.url.is_err()).map(|l| l.place.as_str()).collect();
        assert_eq!(bad, ["urls.txt:2", "urls.txt:3", "urls.txt:4", "urls.txt:6"]);
        assert_eq!(got.iter().filter(|l| l.url.is_ok()).count(), 2);
        assert!(got[2].url.as_ref().unwrap_err().contains("ftp"));
    }
}
