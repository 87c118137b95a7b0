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

/// The form a URL is submitted and stored in: scheme and host lower-cased
/// and IDN hosts in punycode (the `url` crate does both), the default port
/// and the fragment removed, percent-escapes of unreserved characters
/// decoded (`%7E` → `~`) and the others upper-cased (`%2f` → `%2F`). The
/// path and query are otherwise kept as the site wrote them.
pub fn normalize(mut url: Url) -> Url {
    url.set_fragment(None);
    let path = normalize_escapes(url.path());
    if path != url.path() {
        url.set_path(&path);
    }
    if let Some(query) = url.query() {
        let normalized = normalize_escapes(query);
        if normalized != query {
            url.set_query(Some(&normalized));
        }
    }
    url
}

fn normalize_escapes(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = &text[i + 1..i + 3];
            if let Ok(byte) = u8::from_str_radix(hex, 16) {
                if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                    out.push(byte as char);
                } else {
                    out.push('%');
                    out.push_str(&hex.to_ascii_uppercase());
                }
                i += 3;
                continue;
            }
        }
        // `text` is ASCII here (a URL's serialization), so each byte is a char.
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

/// Parses a URL given on the command line (e.g. `log --url`) into its
/// stored form; text that is not a URL is returned as it is.
pub fn stored_form(text: &str) -> String {
    parse_url(text.trim()).map_or_else(|_| text.trim().to_string(), |u| u.to_string())
}

/// Checks that a line is an absolute http(s) URL, in its normalized form.
pub fn parse_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => "not an absolute URL (it needs http:// or https://)".to_string(),
        other => format!("not a valid URL: {other}"),
    })?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(normalize(url)),
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
    fn normalization_table() {
        let table = [
            ("https://Example.COM/a", "https://example.com/a"),
            ("HTTPS://example.com/a", "https://example.com/a"),
            ("https://example.com:443/a", "https://example.com/a"),
            ("http://example.com:80/a", "http://example.com/a"),
            ("http://example.com:8080/a", "http://example.com:8080/a"),
            ("https://example.com/a#section", "https://example.com/a"),
            ("https://example.com/%7euser", "https://example.com/~user"),
            ("https://example.com/~user", "https://example.com/~user"),
            ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
            ("https://example.com/%41%42c", "https://example.com/ABc"),
            ("https://example.com/?q=%7e&r=a%2bb", "https://example.com/?q=~&r=a%2Bb"),
            ("https://example.com", "https://example.com/"),
            ("https://example.com/a/", "https://example.com/a/"),
            ("https://example.com/a", "https://example.com/a"),
            ("https://bücher.example/straße", "https://xn--bcher-kva.example/stra%C3%9Fe"),
            ("https://example.com/a b", "https://example.com/a%20b"),
            ("https://example.com/a?b=1&a=2", "https://example.com/a?b=1&a=2"),
            ("https://example.com/%", "https://example.com/%"),
            ("https://example.com/%zz", "https://example.com/%zz"),
            ("https://EXAMPLE.com/Path/Case", "https://example.com/Path/Case"),
        ];
        for (input, expected) in table {
            assert_eq!(parse_url(input).map(|u| u.to_string()), Ok(expected.to_string()), "{input}");
        }
        assert_eq!(stored_form("https://Example.com/%7ex#f"), "https://example.com/~x");
        assert_eq!(stored_form("not a url"), "not a url");
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
                .filter(|l| l.text.starts_with("https://good.example/"))
                .map(|l| (l.place.clone(), l.url.as_ref().map(|u| u.to_string()).unwrap_or_default()))
                .collect();
            proptest::prop_assert_eq!(valid, expected);
        }
    }
}
