//! Redaction: secrets never reach output, logs, errors or the ledger.
//! A `Redactor` knows the secret values in use (keys, tokens, signed
//! assertions) and replaces them wherever they appear, in any letter case
//! and in every encoding text can give them: percent-encoded (`%2B`, `+`
//! for a space), HTML-escaped (`&amp;`, `&#43;`, `&#x2b;`) and JSON-escaped
//! (`\u002b`, `\/`), mixed freely. Whatever their value, it also masks
//! query parameters that carry credentials (`apikey`, `key`,
//! `access_token`, ..., also behind `&amp;` or percent-encoded), a
//! `Bearer <token>`, and anything shaped like a signed JWT (`eyJ….….…`).
//!
//! Clones of a `Redactor` share one list of secrets: a secret learnt by
//! any of them (an access token obtained in the middle of a run) is masked
//! by all of them from then on.

use std::fmt;
use std::sync::{Arc, RwLock};

/// What replaces a secret, wherever indexq masks one (the `Redactor` and
/// [`mask`] alike).
pub const MASK: &str = "[REDACTED]";
const SECRET_PARAMS: &[&str] = &[
    "apikey",
    "api_key",
    "key",
    "access_token",
    "token",
    "password",
    "assertion",
    "client_secret",
    "refresh_token",
    "id_token",
];
/// Secrets shorter than this are not masked (they would mask ordinary text).
const MIN_SECRET: usize = 4;

#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so a secret containing another is masked whole.
    secrets: Arc<RwLock<Vec<String>>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} secrets)", self.read().len())
    }
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<String>> {
        // A panic while adding cannot leave the list half-written (a push
        // and a sort of owned strings): its contents stay usable.
        self.secrets.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers a secret value, for this redactor and every clone of it.
    /// Values shorter than 4 characters are not worth masking (they would
    /// mask ordinary text).
    pub fn add(&self, secret: &str) {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET || self.read().iter().any(|s| s.eq_ignore_ascii_case(secret)) {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(|e| e.into_inner());
        secrets.push(secret.to_string());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` with the secrets this redactor knows masked, and nothing
    /// else: no query parameter or bearer pattern is touched, so what is
    /// masked is exactly a secret (a URL taken into the ledger keeps its
    /// other parameters, `?key=` and `?token=` included).
    pub fn mask_known(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.read().iter() {
            out = mask(&out, secret);
        }
        out
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.read().iter() {
            out = mask(&out, secret);
        }
        mask_jwts(&mask_bearer(&mask_params(&out)))
    }
}

/// `text` with every occurrence of `secret` replaced by [`MASK`]: in any
/// ASCII letter case, and with any of its bytes percent-encoded,
/// HTML-escaped or JSON-escaped. An empty secret changes nothing. The one
/// masking function: the `Redactor` applies it to every secret it knows,
/// `classify` to the IndexNow key of the answer it reads.
pub fn mask(text: &str, secret: &str) -> String {
    let (hay, needle) = (text.as_bytes(), secret.as_bytes());
    if needle.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i < hay.len() {
        let end = could_start(hay[i], needle[0]).then(|| match_at(hay, i, needle)).flatten();
        match end {
            // Both ends fall on char boundaries (a match starts with an ASCII
            // byte or the secret's own first byte, and ends after an ASCII
            // byte or the secret's last); checked all the same.
            Some(end) if text.is_char_boundary(i) && text.is_char_boundary(end) => {
                out.push_str(&text[copied..i]);
                out.push_str(MASK);
                copied = end;
                i = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether a form of `first` could begin with the byte `b`.
fn could_start(b: u8, first: u8) -> bool {
    b.eq_ignore_ascii_case(&first) || matches!(b, b'%' | b'&' | b'\\' | b'+')
}

/// Where a form of `needle` that starts at `hay[at]` ends.
fn match_at(hay: &[u8], at: usize, needle: &[u8]) -> Option<usize> {
    let mut p = at;
    for (k, &b) in needle.iter().enumerate() {
        let s = &hay[p..];
        let literal = s.first().is_some_and(|c| c.eq_ignore_ascii_case(&b)).then_some(1);
        match (literal, encoded_form(s, b)) {
            // `%25`, `&amp;`, `\\`: a `%`, `&` or `\` as is, or the start of
            // its own encoding. Rare (never in a key indexq accepts), so
            // the two readings are simply both tried.
            (Some(one), Some(len)) => {
                let rest = &needle[k + 1..];
                return match_at(hay, p + len, rest).or_else(|| match_at(hay, p + one, rest));
            }
            (Some(len), None) | (None, Some(len)) => p += len,
            (None, None) => return None,
        }
    }
    Some(p)
}

/// The length of an encoded form of the byte `b` at the start of `s`:
/// `%HH`, `+` for a space, an HTML character reference (`&#43;`, `&#x2B;`,
/// `&amp;`...), or a JSON escape (`\u002B`, `\/`, `\"`, `\\`).
fn encoded_form(s: &[u8], b: u8) -> Option<usize> {
    match *s.first()? {
        b'+' if b == b' ' => Some(1),
        b'%' => (s.len() >= 3 && hex_value(&s[1..3]) == Some(u32::from(b))).then_some(3),
        b'\\' if b.is_ascii() => match s.get(1)? {
            b'u' | b'U' => (s.len() >= 6 && hex_value(&s[2..6]) == Some(u32::from(b))).then_some(6),
            &c if c == b && matches!(b, b'/' | b'"' | b'\\') => Some(2),
            _ => None,
        },
        b'&' if b.is_ascii() => {
            let semi = s.iter().take(10).position(|&c| c == b';')?;
            let value = match &s[1..semi] {
                [b'#', b'x' | b'X', hex @ ..] => hex_value(hex),
                [b'#', dec @ ..] => dec_value(dec),
                name => named_entity(name).map(u32::from),
            };
            (value == Some(u32::from(b))).then_some(semi + 1)
        }
        _ => None,
    }
}

fn named_entity(name: &[u8]) -> Option<u8> {
    let name = name.to_ascii_lowercase();
    Some(match name.as_slice() {
        b"amp" => b'&',
        b"lt" => b'<',
        b"gt" => b'>',
        b"quot" => b'"',
        b"apos" => b'\'',
        b"sol" => b'/',
        b"colon" => b':',
        b"equals" => b'=',
        b"plus" => b'+',
        b"percnt" => b'%',
        _ => return None,
    })
}

fn hex_value(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 6 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

fn dec_value(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || digits.len() > 7 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The length of the form of `literal` (ASCII) at the start of `s`, in any
/// case and encoding, if there is one.
fn form_len(s: &[u8], literal: &[u8]) -> Option<usize> {
    match_at(s, 0, literal)
}

/// A query-string separator at the start of `s`: `?` or `&`, also as
/// `&amp;` (any number of times over), percent-encoded or JSON-escaped.
/// Returns its length and whether it was encoded.
fn separator(s: &[u8]) -> Option<(usize, bool)> {
    let (mut len, encoded) = match s.first()? {
        b'?' | b'&' => (1, false),
        _ => (form_len(s, b"?").or_else(|| form_len(s, b"&"))?, true),
    };
    // `&amp;amp;...`: what HTML escaping (once or more) makes of `&`.
    while s[len..].len() >= 4 && s[len..len + 4].eq_ignore_ascii_case(b"amp;") {
        len += 4;
    }
    Some((len, encoded))
}

/// Masks the values of credential-carrying query parameters in any URL
/// inside `text` (`?apikey=...&`, `&key=...`, `&amp;apikey=...`,
/// `%26apikey%3D...`).
fn mask_params(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i < b.len() {
        let Some((sep, sep_encoded)) = separator(&b[i..]) else {
            i += 1;
            continue;
        };
        let name_start = i + sep;
        let name_len = b[name_start..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
        let name = &text[name_start..name_start + name_len];
        i = name_start;
        if name_len == 0 || !SECRET_PARAMS.iter().any(|p| name.eq_ignore_ascii_case(p)) {
            continue;
        }
        let after_name = name_start + name_len;
        let Some(eq) = form_len(&b[after_name..], b"=") else { continue };
        let encoded = sep_encoded || eq > 1;
        let value_start = after_name + eq;
        let value_len = value_length(&b[value_start..], encoded);
        if value_len == 0 {
            continue;
        }
        // The value ends before an ASCII byte: a char boundary.
        out.push_str(&text[copied..value_start]);
        out.push_str(MASK);
        copied = value_start + value_len;
        i = copied;
    }
    out.push_str(&text[copied..]);
    out
}

/// How long a parameter's value at the start of `s` is: up to the next
/// separator, fragment, quote, bracket, backslash or white space (and, in
/// an encoded URL, an encoded `&`, `#`, quote or space).
fn value_length(s: &[u8], encoded: bool) -> usize {
    let mut n = 0;
    while n < s.len() {
        let c = s[n];
        if c.is_ascii_whitespace() || matches!(c, b'&' | b'#' | b'"' | b'\'' | b')' | b'<' | b'>' | b'\\') {
            break;
        }
        if encoded && c == b'%' && s.len() >= n + 3 {
            let code = hex_value(&s[n + 1..n + 3]);
            if matches!(code, Some(0x20 | 0x22 | 0x23 | 0x26 | 0x27)) {
                break;
            }
        }
        n += 1;
    }
    // Never split a character (the loop stops only at ASCII bytes, or at the end).
    n
}

/// Bytes of a token68 (RFC 7235): what follows `Bearer`.
fn is_token68(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Masks `Bearer <token>` (any case; after a space, a tab, `%20` or `+`)
/// when the token looks like one: at least 8 characters, not only letters
/// ("Bearer authentication" stays).
fn mask_bearer(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i + 6 < b.len() {
        // A word of its own (after `%20` too: a digit may precede it).
        let word = b[i..i + 6].eq_ignore_ascii_case(b"bearer") && (i == 0 || !b[i - 1].is_ascii_alphabetic());
        if !word {
            i += 1;
            continue;
        }
        let mut start = i + 6;
        loop {
            match b.get(start) {
                Some(b' ' | b'\t' | b'+') => start += 1,
                Some(b'%') if b.get(start + 1..start + 3) == Some(b"20") => start += 3,
                _ => break,
            }
        }
        let run = b[start..].iter().take_while(|c| is_token68(**c)).count();
        // A full stop after the token ends a sentence, it is not part of it.
        let token = b[start..start + run].strip_suffix(b".").unwrap_or(&b[start..start + run]);
        let looks_like_one = start > i + 6 && token.len() >= 8 && token.iter().any(|c| !c.is_ascii_alphabetic());
        if looks_like_one {
            out.push_str(&text[copied..start]);
            out.push_str(MASK);
            copied = start + token.len();
            i = copied;
        } else {
            i += 6;
        }
    }
    out.push_str(&text[copied..]);
    out
}

fn is_base64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// Masks anything shaped like a signed JWT: `eyJ` (base64 of `{"`), then
/// three base64url segments joined by dots, the last a signature.
fn mask_jwts(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut i) = (0, 0);
    while i + 3 <= b.len() {
        if &b[i..i + 3] != b"eyJ" || (i > 0 && is_base64url(b[i - 1])) {
            i += 1;
            continue;
        }
        let segment = |from: usize| b[from..].iter().take_while(|c| is_base64url(**c)).count();
        let header = segment(i);
        let payload_at = i + header + 1;
        let jwt = (b.get(i + header) == Some(&b'.')).then(|| segment(payload_at)).and_then(|payload| {
            let signature_at = payload_at + payload + 1;
            let signature = (b.get(payload_at + payload) == Some(&b'.')).then(|| segment(signature_at))?;
            (header >= 10 && payload >= 10 && signature >= 16).then_some(signature_at + signature)
        });
        match jwt {
            Some(end) => {
                out.push_str(&text[copied..i]);
                out.push_str(MASK);
                copied = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The URL without its password (in the user part or in the query), for
/// every message that names the database.
pub fn connection_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                let _ = parsed.set_password(None);
            }
            let query: Vec<(String, String)> = parsed
                .query_pairs()
                .filter(|(k, _)| k != "password")
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            if query.is_empty() {
                parsed.set_query(None);
            } else {
                parsed.query_pairs_mut().clear().extend_pairs(query);
            }
            parsed.to_string()
        }
        Err(_) => "postgres://(unparsable URL)".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::Strategy;

    #[test]
    fn known_secrets_are_masked_everywhere() {
        let r = Redactor::new();
        r.add("0f1e2d3c4b5a6978");
        assert_eq!(
            r.redact("key 0f1e2d3c4b5a6978 rejected (0f1e2d3c4b5a6978)"),
            "key [REDACTED] rejected ([REDACTED])"
        );
        assert_eq!(r.redact("nothing secret"), "nothing secret");
    }

    #[test]
    fn credential_query_parameters_are_masked_whatever_their_value() {
        let r = Redactor::new();
        assert_eq!(
            r.redact("error sending request for url (https://ssl.bing.com/x/SubmitUrlBatch?apikey=abc123def&siteUrl=https://e.com/)"),
            "error sending request for url (https://ssl.bing.com/x/SubmitUrlBatch?apikey=[REDACTED]&siteUrl=https://e.com/)"
        );
        assert_eq!(r.redact("GET /q?siteUrl=a&APIKEY=zzz"), "GET /q?siteUrl=a&APIKEY=[REDACTED]");
        assert_eq!(r.redact("a & b ? c"), "a & b ? c");
        assert_eq!(r.redact("https://e.com/?page=2&monkey=1"), "https://e.com/?page=2&monkey=1");
    }

    #[test]
    fn escaped_and_encoded_parameters_are_masked_too() {
        let r = Redactor::new();
        assert_eq!(
            r.redact(r#"<a href="/SubmitUrlBatch?siteUrl=x&amp;apikey=zz9&amp;y=1">"#),
            r#"<a href="/SubmitUrlBatch?siteUrl=x&amp;apikey=[REDACTED]&amp;y=1">"#
        );
        assert_eq!(r.redact("?a=1&amp;amp;key=k3y5"), "?a=1&amp;amp;key=[REDACTED]");
        assert_eq!(
            r.redact("next=https%3A%2F%2Fe.com%2Fq%3Fapikey%3Dzz%2B9%26x%3D1"),
            "next=https%3A%2F%2Fe.com%2Fq%3Fapikey%3D[REDACTED]%26x%3D1"
        );
        assert_eq!(
            r.redact(r#"{"url":"/q?x=1\u0026apikey=zz9\u0026y=2"}"#),
            r#"{"url":"/q?x=1\u0026apikey=[REDACTED]\u0026y=2"}"#
        );
        assert_eq!(r.redact("grant_type=jwt&assertion=abc.def.ghi"), "grant_type=jwt&assertion=[REDACTED]");
        // Ordinary text and empty values stay.
        assert_eq!(r.redact("AT&amp;T and ?key= nothing"), "AT&amp;T and ?key= nothing");
    }

    #[test]
    fn a_secret_is_masked_in_any_case_and_encoding() {
        let r = Redactor::new();
        r.add("Ab+c/D=e&f g");
        for (form, why) in [
            ("Ab+c/D=e&f g", "as is"),
            ("AB+C/D=E&F G", "upper-cased"),
            ("ab+c/d=e&f g", "lower-cased"),
            ("Ab%2Bc%2FD%3De%26f%20g", "percent-encoded"),
            ("Ab%2bc%2fD%3de%26f+g", "form-encoded, lower-case hex"),
            ("Ab+c/D=e&amp;f g", "HTML-escaped"),
            ("Ab&#43;c&#x2F;D&#61;e&amp;f&#32;g", "HTML character references"),
            (r"Ab+c\/D=e&f g", "JSON-escaped"),
            (r"Ab\u002bc\u002FD\u003de\u0026f\u0020g", "JSON \\u escapes"),
            ("%41%62%2B%63%2F%44%3D%65%26%66%20%67", "every byte percent-encoded"),
        ] {
            assert_eq!(r.redact(&format!("<{form}>")), "<[REDACTED]>", "{why}: {form}");
        }
        assert_eq!(r.redact("Ab+c/D=e&f"), "Ab+c/D=e&f", "a prefix is not the secret");
    }

    #[test]
    fn mask_keeps_the_rest_and_any_text() {
        assert_eq!(mask("a KEY b key c", "key"), "a [REDACTED] b [REDACTED] c");
        assert_eq!(mask("naïve key", "KEY"), "naïve [REDACTED]");
        assert_eq!(mask("nothing", ""), "nothing");
        assert_eq!(mask("ünïcödé %zz &#; \\u12 &amp", "secret"), "ünïcödé %zz &#; \\u12 &amp");
        assert_eq!(
            mask("clé: ünï, %C3%BCn%C3%AF", "ünï"),
            "clé: [REDACTED], [REDACTED]",
            "non-ASCII bytes, as is or encoded"
        );
    }

    #[test]
    fn bearer_tokens_are_masked_whatever_their_value() {
        let r = Redactor::new();
        assert_eq!(
            r.redact("Authorization: Bearer ya29.a0AfB_byC-1x2y3z\nnext"),
            "Authorization: Bearer [REDACTED]\nnext"
        );
        assert_eq!(r.redact("AUTHORIZATION: BEARER YA29.A0AFB_BYC"), "AUTHORIZATION: BEARER [REDACTED]");
        assert_eq!(r.redact("authorization%3A%20Bearer%20ya29.abc123"), "authorization%3A%20Bearer%20[REDACTED]");
        assert_eq!(r.redact(r#""Bearer ya29.tok3n-value.""#), r#""Bearer [REDACTED].""#);
        assert_eq!(r.redact("a Bearer token is missing"), "a Bearer token is missing");
        assert_eq!(r.redact("Bearer authentication."), "Bearer authentication.");
        assert_eq!(r.redact("Bearer"), "Bearer");
    }

    #[test]
    fn jwt_shaped_strings_are_masked() {
        let r = Redactor::new();
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4QHkuY29tIn0.c2lnbmF0dXJlLXNpZ25hdHVyZS1zaWduYXR1cmU";
        assert_eq!(r.redact(&format!("Invalid JWT: {jwt}.")), "Invalid JWT: [REDACTED].");
        assert_eq!(r.redact(&format!(r#"{{"assertion":"{jwt}"}}"#)), r#"{"assertion":"[REDACTED]"}"#);
        // Not a JWT: too short, no signature, or inside a longer word.
        assert_eq!(r.redact("eyJ.eyJ.abc"), "eyJ.eyJ.abc");
        assert_eq!(r.redact("eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0."), "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.");
    }

    #[test]
    fn a_secret_added_to_a_clone_is_masked_by_all() {
        let r = Redactor::new();
        let engine = r.clone();
        engine.add("ya29.obtained-mid-run");
        assert_eq!(r.redact("token ya29.obtained-mid-run"), "token [REDACTED]");
        assert_eq!(format!("{r:?}"), "Redactor(1 secrets)", "Debug never shows a secret");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// No text, however made of half-encodings, panics the redactor, and
        /// a secret inserted in it never comes out, in any case.
        #[test]
        fn any_text_is_redacted_without_panic_and_without_the_secret(
            pieces in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<String>(),
                    proptest::sample::select(vec![
                        "%", "%2", "%2B", "&", "&#", "&#x", "&amp;", ";", "\\", "\\u00", "\\u002", "+", "?key=",
                        "&apikey", "=", "%3D", "%26", "Bearer ", "bearer%20", "eyJ", ".", "ünï", "€",
                    ]).prop_map(str::to_string),
                ],
                0..40,
            ),
            secret in "[A-Za-z0-9._~+/=& -]{4,24}",
            at in 0usize..40,
        ) {
            let r = Redactor::new();
            r.add(&secret);
            let mut pieces = pieces;
            let at = at.min(pieces.len());
            pieces.insert(at, secret.clone());
            let out = r.redact(&pieces.concat());
            let secret = secret.trim().to_ascii_lowercase();
            proptest::prop_assume!(secret.chars().count() >= MIN_SECRET && !MASK.to_ascii_lowercase().contains(&secret));
            proptest::prop_assert!(!out.to_ascii_lowercase().contains(&secret), "{:?} in {:?}", secret, out);
        }
    }

    #[test]
    fn short_values_are_not_treated_as_secrets() {
        let r = Redactor::new();
        r.add("ab");
        assert_eq!(r.redact("about"), "about");
    }

    #[test]
    fn longer_secret_wins_over_its_prefix() {
        let r = Redactor::new();
        r.add("abcd");
        r.add("abcdefgh");
        assert_eq!(r.redact("abcdefgh"), "[REDACTED]");
    }
}
