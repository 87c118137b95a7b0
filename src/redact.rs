//! Redaction: secrets never reach output, logs, errors or the ledger.
//! A `Redactor` knows the secret values in use (keys, tokens) and replaces
//! them wherever they appear; query parameters that carry credentials
//! (`apikey`, `key`, `access_token`, ...) are masked whatever their value.

const MASK: &str = "[REDACTED]";
const SECRET_PARAMS: &[&str] = &["apikey", "api_key", "key", "access_token", "token", "password"];

#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Remembers a secret value; values shorter than 4 characters are not
    /// worth masking (they would mask ordinary text).
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() >= 4 && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
            // Longest first, so a secret containing another is masked whole.
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = mask_params(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), MASK);
            }
        }
        out
    }
}

/// Masks the values of credential-carrying query parameters in any URL
/// inside `text` (`?apikey=...&` or `&key=...`).
fn mask_params(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(['?', '&']) {
        let (head, tail) = rest.split_at(pos + 1);
        out.push_str(head);
        rest = tail;
        let name_end = rest.find('=').filter(|&i| rest[..i].chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        if let Some(eq) = name_end {
            if SECRET_PARAMS.iter().any(|p| rest[..eq].eq_ignore_ascii_case(p)) {
                let value_end = rest[eq + 1..]
                    .find(|c: char| c == '&' || c == '#' || c.is_whitespace() || c == '"' || c == '\'' || c == ')')
                    .map_or(rest.len(), |i| eq + 1 + i);
                out.push_str(&rest[..=eq]);
                out.push_str(MASK);
                rest = &rest[value_end..];
            }
        }
    }
    out.push_str(rest);
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

    #[test]
    fn known_secrets_are_masked_everywhere() {
        let mut r = Redactor::new();
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
    fn short_values_are_not_treated_as_secrets() {
        let mut r = Redactor::new();
        r.add("ab");
        assert_eq!(r.redact("about"), "about");
    }

    #[test]
    fn longer_secret_wins_over_its_prefix() {
        let mut r = Redactor::new();
        r.add("abcd");
        r.add("abcdefgh");
        assert_eq!(r.redact("abcdefgh"), "[REDACTED]");
    }
}
