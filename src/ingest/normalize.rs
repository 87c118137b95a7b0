//! The form a URL is submitted and stored in, and the check that a text is
//! such a URL: every source of URLs (lists, sitemaps, `log --url`) goes
//! through [`parse_url`], so the ledger holds one form of each URL.

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
}
