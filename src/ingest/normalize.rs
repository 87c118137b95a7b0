//! The form a URL is submitted and stored in, and the check that a text is
//! such a URL: every source of URLs (lists, sitemaps, `log --url`) goes
//! through [`parse_url`], so the ledger holds one form of each URL.

use std::ops::Range;
use url::Url;

/// The form a URL is submitted and stored in: scheme and host lower-cased
/// and IDN hosts in punycode (the `url` crate does both), the default port
/// and the fragment removed, percent-escapes of unreserved characters
/// decoded (`%7E` → `~`) and the others upper-cased (`%2f` → `%2F`). The
/// path and query are otherwise kept as the site wrote them.
fn normalize(mut url: Url) -> Url {
    url.set_fragment(None);
    // Most paths and queries have no escape: nothing to copy.
    if url.path().contains('%') {
        let path = normalize_escapes(url.path());
        if path != url.path() {
            url.set_path(&path);
        }
    }
    if let Some(query) = url.query().filter(|q| q.contains('%')) {
        let normalized = normalize_escapes(query);
        if normalized != query {
            url.set_query(Some(&normalized));
        }
    }
    url
}

/// Decodes the escapes of unreserved characters and upper-cases the others,
/// keeping every other character as it is. Written out here: the
/// `percent-encoding` crate decodes every escape or none, and decoding `%2F`
/// would change what the URL names.
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
    parse_url(text.trim()).map_or_else(|_| text.trim().to_string(), String::from)
}

/// A URL in the form it is submitted and stored in ([`parse_url`]): its
/// text, and where its host and its path are in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredUrl {
    text: String,
    host: Range<usize>,
    path: Range<usize>,
}

impl StoredUrl {
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The host, lower-cased, IDN hosts in punycode (never empty).
    pub fn host_str(&self) -> &str {
        &self.text[self.host.clone()]
    }

    /// The path, from its first `/`, without the query.
    pub fn path(&self) -> &str {
        &self.text[self.path.clone()]
    }

    /// A URL the `url` crate parsed, normalized.
    fn of(url: Url) -> StoredUrl {
        let at = |position| url[..position].len();
        let host = at(url::Position::BeforeHost)..at(url::Position::AfterHost);
        let path = at(url::Position::BeforePath)..at(url::Position::AfterPath);
        StoredUrl { text: url.into(), host, path }
    }
}

impl From<StoredUrl> for String {
    fn from(url: StoredUrl) -> String {
        url.text
    }
}

impl std::fmt::Display for StoredUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Checks that a line is an absolute http(s) URL, in its normalized form.
/// A line already in that form (a list or sitemap a site generates almost
/// always is) is recognised byte by byte (`already_stored`); any other is
/// parsed by the `url` crate.
pub fn parse_url(text: &str) -> Result<StoredUrl, String> {
    parse_line(text.to_string()).1
}

/// [`parse_url`] of a line given whole: a line already in its stored form
/// becomes the URL's text, not copied (`None` is given back); any other
/// line is given back beside what it parses to.
pub fn parse_line(text: String) -> (Option<String>, Result<StoredUrl, String>) {
    match already_stored(&text) {
        Some((host, path)) => (None, Ok(StoredUrl { text, host, path })),
        None => {
            let url = parse_by_the_url_crate(&text);
            (Some(text), url)
        }
    }
}

/// A URL not in its stored form, parsed and normalized by the `url` crate.
fn parse_by_the_url_crate(text: &str) -> Result<StoredUrl, String> {
    let url = Url::parse(text).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => "not an absolute URL (it needs http:// or https://)".to_string(),
        other => format!("not a valid URL: {other}"),
    })?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(StoredUrl::of(normalize(url))),
        "http" | "https" => Err("the URL has no host".into()),
        other => Err(format!("scheme `{other}` is not http or https")),
    }
}

/// Where the host and the path are in `text`, if `text` is an http(s) URL
/// the `url` crate and `normalize` would give back unchanged; `None` for any
/// other (which may still be a URL: the `url` crate decides). The check
/// refuses more than it must — a port, user info, an escape, a fragment, an
/// upper-case or non-ASCII host, an IPv4 or `xn--` host, a dot segment, any
/// character the `url` crate escapes or might — and accepts only what it
/// knows: `tests::already_stored_agrees_with_the_url_crate` holds it to that.
fn already_stored(text: &str) -> Option<(Range<usize>, Range<usize>)> {
    let bytes = text.as_bytes();
    let start = [&b"https://"[..], b"http://"].into_iter().find(|p| bytes.starts_with(p))?.len();
    // The host: lower-case labels of letters, digits and hyphens, none
    // empty, none in punycode, the last starting with a letter (a host
    // ending in a number is an IPv4 address to the `url` crate).
    let mut label = start;
    let mut at = start;
    let label_ok = |label: &[u8]| !label.is_empty() && !label.starts_with(b"xn--");
    loop {
        match *bytes.get(at)? {
            b'a'..=b'z' | b'0'..=b'9' | b'-' => {}
            b'.' if label_ok(&bytes[label..at]) => label = at + 1,
            b'/' if label_ok(&bytes[label..at]) && bytes[label].is_ascii_lowercase() => break,
            _ => return None,
        }
        at += 1;
    }
    let host = start..at;
    // The path, after its first `/`: characters the `url` crate keeps as
    // they are in a path, no escape, no `.` or `..` segment.
    at += 1;
    let mut segment = at;
    while at < bytes.len() && bytes[at] != b'?' {
        let b = bytes[at];
        if !KEPT_IN_PATH[b as usize] {
            return None;
        }
        if b == b'/' {
            if matches!(&bytes[segment..at], b"." | b"..") {
                return None;
            }
            segment = at + 1;
        }
        at += 1;
    }
    if matches!(&bytes[segment..at], b"." | b"..") {
        return None;
    }
    let path = host.end..at;
    // The query: the same characters, less `'` (escaped in a query), plus `?`.
    let query_kept = |b: &u8| *b != b'\'' && (KEPT_IN_PATH[*b as usize] || *b == b'?');
    bytes.get(at + 1..).is_none_or(|query| query.iter().all(query_kept)).then_some((host, path))
}

/// The bytes a path keeps as they are: letters, digits and
/// `-._~!$&'()*+,;=:@/`.
const KEPT_IN_PATH: [bool; 256] = {
    let mut kept = [false; 256];
    let mut b = 0;
    while b < 256 {
        kept[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let others = b"-._~!$&'()*+,;=:@/";
    let mut i = 0;
    while i < others.len() {
        kept[others[i] as usize] = true;
        i += 1;
    }
    kept
};

#[cfg(test)]
mod tests {
    use super::*;

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

    /// What the `url` crate makes of `text`, normalized, with its host and path.
    fn by_the_url_crate(text: &str) -> Option<(String, String, String)> {
        let url = Url::parse(text).ok().filter(|u| matches!(u.scheme(), "http" | "https"))?;
        let stored = StoredUrl::of(normalize(url));
        Some((stored.to_string(), stored.host_str().to_string(), stored.path().to_string()))
    }

    #[test]
    fn a_url_in_its_stored_form_is_recognised_and_any_other_parsed() {
        for text in [
            "https://example.com/page/1",
            "http://a-b.example/x/y.html?q=1&r=a:b@c/d?e",
            "https://example.com/",
            "https://www.example.co.uk/~user/(a)!$*+,;=:@/",
            "https://localhost/a",
            "https://9gag.com/a",
        ] {
            let (host, path) = already_stored(text).unwrap_or_else(|| panic!("{text} is in its stored form"));
            let parsed = by_the_url_crate(text).unwrap();
            assert_eq!((text, &text[host], &text[path]), (parsed.0.as_str(), parsed.1.as_str(), parsed.2.as_str()));
        }
        // Each valid, each left to the `url` crate: changed by it, or possibly.
        for text in [
            "https://Example.com/a",
            "HTTPS://example.com/a",
            "https://example.com:443/a",
            "https://example.com:8080/a",
            "https://user@example.com/a",
            "https://example.com",
            "https://example.com?q",
            "https://example.com/a#f",
            "https://example.com/a%7e",
            "https://example.com/a/../b",
            "https://example.com/./b",
            "https://example.com/a b",
            "https://example.com/a?b='c'",
            "https://example.com/a\\b",
            "https://xn--bcher-kva.example/a",
            "https://127.0.0.1/a",
            "https://0x7f.1/a",
            "https://a..b/a",
            "https://example.com./a",
            "https://bücher.example/a",
            "https://example.com/straße",
        ] {
            assert_eq!(already_stored(text), None, "{text}");
            assert!(parse_url(text).is_ok(), "{text}");
        }
        let url = parse_url("https://user@Example.com:8080/a/b?q#f").unwrap();
        assert_eq!(
            (url.as_str(), url.host_str(), url.path()),
            ("https://user@example.com:8080/a/b?q", "example.com", "/a/b")
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]
        /// Whatever `already_stored` takes as a URL in its stored form, the
        /// `url` crate gives back unchanged, with the same host and path.
        #[test]
        fn already_stored_agrees_with_the_url_crate(
            text in "(https?|HTTPS|ftp)://[a-z0-9.\\-]{0,6}[a-zA-Z0-9.\\-_:@%ü]{0,3}[a-z0-9.\\-]{0,6}\
                     (/[a-z0-9./]{0,6}([ -~é]|%[2-7][0-9a-fA-F]){0,3}[a-z0-9./]{0,6})?\
                     (\\?[a-z=&]{0,4}([ -~]|%[2-7][0-9a-fA-F]){0,2})?(#[a-z]{0,3})?"
        ) {
            if let Some((host, path)) = already_stored(&text) {
                let parsed = by_the_url_crate(&text);
                proptest::prop_assert_eq!(
                    Some((text.clone(), text[host].to_string(), text[path].to_string())),
                    parsed,
                    "{}", text
                );
            }
        }
    }
}
