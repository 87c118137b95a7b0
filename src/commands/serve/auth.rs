//! Who is asking: the bearer tokens of `[[serve.token]]`, read once at the
//! start (from the environment or a file, never the configuration itself),
//! and compared in constant time — by their SHA-256 digests, so neither
//! the length nor the first differing byte of a guess shows in the time an
//! answer takes, and every configured token is compared whichever matches.
//! A token writes only its properties' URLs. With no token configured,
//! `serve` listens on loopback only and anyone who reaches it may write
//! every property. Only a token's id is ever said (logs, answers).

use crate::config::{ConfigError, ServeToken};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The tokens `serve` takes.
pub(super) struct Tokens {
    tokens: Vec<Held>,
}

struct Held {
    id: String,
    digest: [u8; 32],
    properties: Vec<String>,
}

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Caller {
    /// No token is configured: a loopback client, allowed every property.
    Anyone,
    /// The holder of the token with this id, allowed these properties.
    Token { id: String, properties: Vec<String> },
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
        match self {
            Caller::Anyone => true,
            Caller::Token { properties, .. } => properties.iter().any(|p| p == property),
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
    /// configuration's key and line, never the value.
    pub(super) fn read(configured: &[ServeToken]) -> Result<Tokens, ConfigError> {
        let mut tokens = Vec::new();
        for t in configured {
            let secret = t.secret.read()?;
            if secret.expose().len() < 16 {
                return Err(ConfigError {
                    place: t.secret.place().to_string(),
                    message: format!("the token of `{}` is shorter than 16 characters", t.id),
                    hint: Some("make a long random one, e.g. `openssl rand -hex 32`".into()),
                });
            }
            tokens.push(Held { id: t.id.clone(), digest: digest(secret.expose()), properties: t.properties.clone() });
        }
        Ok(Tokens { tokens })
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
        found.map(|h| Caller::Token { id: h.id.clone(), properties: h.properties.clone() }).ok_or(Unknown::Wrong)
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
        Tokens {
            tokens: vec![
                Held { id: "ghost".into(), digest: digest("ghost-token-0123456789"), properties: vec!["blog".into()] },
                Held { id: "ci".into(), digest: digest("ci-token-0123456789abc"), properties: vec!["shop".into()] },
            ],
        }
    }

    #[test]
    fn a_bearer_token_is_its_holder_and_anything_else_is_refused() {
        let t = tokens();
        let ghost = t.caller(Some(b"Bearer ghost-token-0123456789")).unwrap();
        assert_eq!(ghost.id(), "ghost");
        assert!(ghost.may_write("blog") && !ghost.may_write("shop"));
        assert_eq!(t.caller(Some(b"bearer ci-token-0123456789abc")).unwrap().id(), "ci");
        assert_eq!(t.caller(None), Err(Unknown::Missing));
        assert_eq!(t.caller(Some(b"Basic Z2hvc3Q6eA==")), Err(Unknown::Missing));
        assert_eq!(t.caller(Some(b"Bearer ")), Err(Unknown::Missing));
        assert_eq!(t.caller(Some(b"Bearer ghost-token-012345678")), Err(Unknown::Wrong));
        assert_eq!(t.caller(Some(b"Bearer \xff\xfe")), Err(Unknown::Wrong));
    }

    #[test]
    fn with_no_token_configured_anyone_writes_everything() {
        let t = Tokens { tokens: Vec::new() };
        let caller = t.caller(None).unwrap();
        assert_eq!((caller.id(), caller.may_write("any")), ("-", true));
    }
}
