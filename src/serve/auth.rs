//! Who is asking: the bearer tokens of `[[serve.token]]`, read once at the
//! start (from the environment or a file, never the configuration itself),
//! and compared in constant time — by their SHA-256 digests, so neither
//! the length nor the first differing byte of a guess shows in the time an
//! answer takes, and every configured token is compared whichever matches.
//! A token writes only its properties' URLs. With no token configured,
//! `serve` listens on loopback only and anyone who reaches it may write
//! every property. A token sees only its own properties' items, budgets
//! and series, and a token of `scope = "read"` writes nothing. Only a
//! token's id is ever said (logs, answers); the tokens themselves are
//! masked wherever they turn up (`redactor`), a submitted URL included.

use crate::config::{ConfigError, ServeToken, TokenScope};
use crate::redact::Redactor;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The tokens `serve` takes.
pub(super) struct Tokens {
    tokens: Vec<Held>,
    /// Masks every token read.
    redactor: Redactor,
}

struct Held {
    id: String,
    digest: [u8; 32],
    properties: Vec<String>,
    scope: TokenScope,
}

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Caller {
    /// No token is configured: a loopback client, allowed every property.
    Anyone,
    /// The holder of the token with this id, allowed these properties.
    Token { id: String, properties: Vec<String>, scope: TokenScope },
}

impl Caller {
    /// As logs and answers name it: the token's id, never the token.
    pub(super) fn id(&self) -> &str {
        match self {
            Caller::Anyone => "-",
            Caller::Token { id, .. } => id,
        }
    }

    /// Whether it may write URLs of `property`.
    pub(super) fn may_write(&self, property: &str) -> bool {
        self.writes() && self.may_read(property)
    }

    /// Whether it may write at all (a token of `scope = "read"` may not).
    pub(super) fn writes(&self) -> bool {
        match self {
            Caller::Anyone => true,
            Caller::Token { scope, .. } => *scope == TokenScope::Write,
        }
    }

    /// Whether it may see the items, budgets and series of `property`.
    pub(super) fn may_read(&self, property: &str) -> bool {
        self.properties().is_none_or(|own| own.iter().any(|p| p == property))
    }

    /// The properties it sees (`None`: every one).
    pub(super) fn properties(&self) -> Option<&[String]> {
        match self {
            Caller::Anyone => None,
            Caller::Token { properties, .. } => Some(properties),
        }
    }
}

/// Why a request has no caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unknown {
    /// No `Authorization: Bearer …`.
    Missing,
    /// A token none of the configured is.
    Wrong,
}

impl Tokens {
    /// Reads each configured token from where it lives; an error names the
    /// configuration's key and line, never the value. Two entries that read
    /// the same token are an error naming both: otherwise the last would
    /// silently take the token and the first's properties would be lost.
    pub(super) fn read(configured: &[ServeToken]) -> Result<Tokens, ConfigError> {
        let mut tokens: Vec<Held> = Vec::new();
        let redactor = Redactor::new();
        for t in configured {
            let secret = t.secret.read()?;
            if secret.expose().len() < 16 {
                return Err(ConfigError {
                    place: t.secret.place().to_string(),
                    message: format!("the token of `{}` is shorter than 16 characters", t.id),
                    hint: Some("make a long random one, e.g. `openssl rand -hex 32`".into()),
                });
            }
            let held = Held {
                id: t.id.clone(),
                digest: digest(secret.expose()),
                properties: t.properties.clone(),
                scope: t.scope,
            };
            if let Some((first, place)) = tokens
                .iter()
                .zip(configured)
                .find(|(other, _)| bool::from(other.digest.ct_eq(&held.digest)))
                .map(|(other, c)| (other.id.clone(), c.secret.place().to_string()))
            {
                return Err(ConfigError {
                    place: t.secret.place().to_string(),
                    message: format!(
                        "token `{}` is the same token as `{first}` ({place}; the token is not shown)",
                        t.id
                    ),
                    hint: Some(
                        "give each [[serve.token]] a token of its own, or list all its properties in one entry".into(),
                    ),
                });
            }
            redactor.add(secret.expose());
            tokens.push(held);
        }
        Ok(Tokens { tokens, redactor })
    }

    /// `text` with every configured token masked, in any letter case and
    /// encoding, and nothing else changed: a URL pasted with its `?token=`
    /// is taken with the token masked.
    pub(super) fn mask(&self, text: &str) -> String {
        self.redactor.mask_known(text)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The caller of a request with this `Authorization` header value.
    pub(super) fn caller(&self, authorization: Option<&[u8]>) -> Result<Caller, Unknown> {
        if self.tokens.is_empty() {
            return Ok(Caller::Anyone);
        }
        let Some(presented) = authorization.and_then(bearer) else { return Err(Unknown::Missing) };
        let presented = digest_bytes(presented);
        let mut found: Option<&Held> = None;
        for held in &self.tokens {
            // Every token is compared, whichever matches.
            if bool::from(held.digest.ct_eq(&presented)) {
                found = Some(held);
            }
        }
        found
            .map(|h| Caller::Token { id: h.id.clone(), properties: h.properties.clone(), scope: h.scope })
            .ok_or(Unknown::Wrong)
    }
}

/// The token of an `Authorization: Bearer TOKEN` value (the scheme in any
/// case).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

fn digest(token: &str) -> [u8; 32] {
    digest_bytes(token.as_bytes())
}

fn digest_bytes(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        let held = |id: &str, token: &str, property: &str, scope| Held {
            id: id.into(),
            digest: digest(token),
            properties: vec![property.into()],
            scope,
        };
        Tokens {
            tokens: vec![
                held("ghost", "ghost-token-0123456789", "blog", TokenScope::Write),
                held("ci", "ci-token-0123456789abc", "shop", TokenScope::Write),
                held("dash", "dash-token-0123456789a", "shop", TokenScope::Read),
            ],
            redactor: Redactor::new(),
        }
    }

    #[test]
    fn a_bearer_token_is_its_holder_and_anything_else_is_refused() {
        let t = tokens();
        let ghost = t.caller(Some(b"Bearer ghost-token-0123456789")).unwrap();
        assert_eq!(ghost.id(), "ghost");
        assert!(ghost.may_write("blog") && !ghost.may_write("shop"));
        assert_eq!(t.caller(Some(b"bearer ci-token-0123456789abc")).unwrap().id(), "ci");
        let dash = t.caller(Some(b"Bearer dash-token-0123456789a")).unwrap();
        assert!(dash.may_read("shop") && !dash.may_read("blog"), "a token reads only its own");
        assert!(!dash.writes() && !dash.may_write("shop"), "a read token writes nothing");
        assert_eq!(t.caller(None), Err(Unknown::Missing));
        assert_eq!(t.caller(Some(b"Basic Z2hvc3Q6eA==")), Err(Unknown::Missing));
        assert_eq!(t.caller(Some(b"Bearer ")), Err(Unknown::Missing));
        assert_eq!(t.caller(Some(b"Bearer ghost-token-012345678")), Err(Unknown::Wrong));
        assert_eq!(t.caller(Some(b"Bearer \xff\xfe")), Err(Unknown::Wrong));
    }

    #[test]
    fn with_no_token_configured_anyone_writes_everything() {
        let t = Tokens { tokens: Vec::new(), redactor: Redactor::new() };
        let caller = t.caller(None).unwrap();
        assert_eq!((caller.id(), caller.may_write("any")), ("-", true));
    }
}
