//! Signed webhooks (`[serve.webhooks]`): a platform whose signing secret is
//! configured has its hooks verified by their signature instead of a
//! bearer token, and an unsigned or badly signed one is a `401`. Each
//! format is the platform's own (`tests/fixtures/webhooks/signed.md` names
//! where each is documented):
//! - Ghost: `X-Ghost-Signature: sha256=<hex HMAC-SHA256 of the raw body
//!   followed by the timestamp>, t=<milliseconds since the epoch>`;
//! - Vercel: `x-vercel-signature: <hex HMAC-SHA1 of the raw body>`;
//! - Netlify: `X-Webhook-Signature`, a JWS (HS256) whose claims are `iss`
//!   (`netlify`) and `sha256` (the hex SHA-256 of the raw body).
//!
//! Every comparison is constant-time (ring's HMAC verification, the JWS
//! library's). A Ghost timestamp (and a Netlify `iat`, when the JWS carries
//! one: Netlify documents none) more than 5 minutes from now is refused,
//! and so is a signature already taken: the signatures of the last
//! `REMEMBERED` hooks are kept in this process's memory only (the ledger
//! has no place for them, and a signature is of no use once its timestamp
//! is stale), so two `serve` processes do not share them and a restart
//! forgets them. A hook whose answer is not a success is forgotten again,
//! so that the platform's own retry of it is taken.

use super::auth::Caller;
use super::refusal::{ErrorCode, Refusal};
use super::State;
use crate::config::{ConfigError, Secret, ServeWebhooks};
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, TimeDelta, Utc};
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use subtle::ConstantTimeEq;

/// How far a signed timestamp may be from now.
const TOLERANCE: TimeDelta = TimeDelta::minutes(5);

/// How many signatures are remembered against replays.
const REMEMBERED: usize = 10_000;

/// A platform that signs its webhooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Platform {
    Ghost,
    Vercel,
    Netlify,
}

impl Platform {
    /// The platform whose hook `path` is.
    fn of(path: &str) -> Option<Platform> {
        match path {
            _ if path.starts_with("/v1/hooks/ghost/") => Some(Platform::Ghost),
            "/v1/hooks/vercel" => Some(Platform::Vercel),
            "/v1/hooks/netlify" => Some(Platform::Netlify),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Platform::Ghost => "ghost",
            Platform::Vercel => "vercel",
            Platform::Netlify => "netlify",
        }
    }

    fn header(self) -> &'static str {
        match self {
            Platform::Ghost => "x-ghost-signature",
            Platform::Vercel => "x-vercel-signature",
            Platform::Netlify => "x-webhook-signature",
        }
    }
}

/// Why a signed hook is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Invalid {
    /// No signature header.
    Missing,
    /// A header that is not the platform's format.
    Malformed,
    /// A signature that is not of this body with the configured secret.
    Mismatch,
    /// A timestamp more than 5 minutes from now.
    Stale,
    /// A signature taken before.
    Replayed,
}

impl Invalid {
    fn says(self) -> &'static str {
        match self {
            Invalid::Missing => "no signature",
            Invalid::Malformed => "a signature header that is not the platform's format",
            Invalid::Mismatch => "a signature that does not match the body and the configured secret",
            Invalid::Stale => "a signature timestamp more than 5 minutes from now",
            Invalid::Replayed => "a signature already taken (a replay)",
        }
    }
}

/// The configured secrets, and the signatures taken.
pub(super) struct Signatures {
    ghost: Option<Secret>,
    vercel: Option<Secret>,
    netlify: Option<Secret>,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    /// Remembers `signature`; false if it was remembered already.
    fn take(&mut self, signature: &str) -> bool {
        if !self.set.insert(signature.to_string()) {
            return false;
        }
        self.order.push_back(signature.to_string());
        if self.order.len() > REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.set.remove(&oldest);
            }
        }
        true
    }

    fn forget(&mut self, signature: &str) {
        if self.set.remove(signature) {
            self.order.retain(|s| s != signature);
        }
    }
}

impl Signatures {
    /// Reads each configured secret (an error names its key and line,
    /// never the value).
    pub(super) fn read(configured: &ServeWebhooks) -> Result<Signatures, ConfigError> {
        let read = |s: &Option<crate::config::SecretSource>| s.as_ref().map(|s| s.read()).transpose();
        Ok(Signatures {
            ghost: read(&configured.ghost)?,
            vercel: read(&configured.vercel)?,
            netlify: read(&configured.netlify)?,
            seen: Mutex::new(Seen::default()),
        })
    }

    fn secret(&self, platform: Platform) -> Option<&Secret> {
        match platform {
            Platform::Ghost => self.ghost.as_ref(),
            Platform::Vercel => self.vercel.as_ref(),
            Platform::Netlify => self.netlify.as_ref(),
        }
    }

    /// Verifies a hook of `platform` signed with `secret`; the signature is
    /// remembered (what `forget` takes back).
    fn verify(
        &self,
        platform: Platform,
        secret: &Secret,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<String, Invalid> {
        let value = headers.get(platform.header()).ok_or(Invalid::Missing)?;
        let value = value.to_str().map_err(|_| Invalid::Malformed)?.trim();
        let key = secret.expose().as_bytes();
        match platform {
            Platform::Ghost => ghost(key, value, body, now)?,
            Platform::Vercel => vercel(key, value, body)?,
            Platform::Netlify => netlify(key, value, body, now)?,
        }
        let signature = format!("{}:{value}", platform.name());
        let mut seen = self.seen.lock().map_err(|_| Invalid::Replayed)?;
        if !seen.take(&signature) {
            return Err(Invalid::Replayed);
        }
        Ok(signature)
    }

    /// Forgets a signature taken, whose hook was not taken after all.
    pub(super) fn forget(&self, signature: &str) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.forget(signature);
        }
    }
}

/// A signed hook, verified.
pub(super) struct Signed {
    /// Its caller: the platform, allowed every property (whoever holds the
    /// secret is the configuration's owner's platform).
    pub caller: Caller,
    /// The signature, forgotten again if the hook is not taken.
    pub signature: String,
}

/// A request to a hook whose platform's secret is configured: its body
/// read (at most `[serve] max_body`) and its signature verified; then the
/// request, whole again, with who signed it. Any other request is left as
/// it is. A refusal is a `401` (or a `413` for a body over the limit).
pub(super) async fn check(state: &State, request: Request) -> Result<(Request, Option<Signed>), Refusal> {
    let Some(platform) = Platform::of(request.uri().path()) else { return Ok((request, None)) };
    let Some(secret) = state.signatures.secret(platform) else { return Ok((request, None)) };
    let max = usize::try_from(state.settings.serve.max_body).unwrap_or(usize::MAX);
    let (parts, body) = request.into_parts();
    let body: Bytes = axum::body::to_bytes(body, max).await.map_err(|_| {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("the body is over {} bytes ([serve] max_body), or was cut off", state.settings.serve.max_body),
        )
    })?;
    let signature =
        state.signatures.verify(platform, secret, &parts.headers, &body, state.clock.now()).map_err(|invalid| {
            Refusal::new(
                StatusCode::UNAUTHORIZED,
                ErrorCode::Unauthorized,
                format!("{}'s hook came with {}", platform.name(), invalid.says()),
            )
            .hint(format!(
                "set the webhook's secret in {} to the one [serve.webhooks] {}_secret_env names",
                platform.name(),
                platform.name()
            ))
        })?;
    let caller = Caller::Token {
        id: format!("{}-signature", platform.name()),
        properties: state.settings.properties.iter().map(|p| p.name.clone()).collect(),
        // A signed hook writes: it is a publish or a deploy.
        scope: crate::config::TokenScope::Write,
    };
    Ok((Request::from_parts(parts, Body::from(body)), Some(Signed { caller, signature })))
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `presented` is `expected` (hex, in any case), in constant time.
fn same_hex(expected: &str, presented: &str) -> bool {
    bool::from(expected.as_bytes().ct_eq(presented.to_ascii_lowercase().as_bytes()))
}

/// Ghost: `sha256=<hex>, t=<ms>`, the HMAC-SHA256 of the body followed by
/// the timestamp as written.
fn ghost(key: &[u8], value: &str, body: &[u8], now: DateTime<Utc>) -> Result<(), Invalid> {
    let (mut mac, mut t) = (None, None);
    for part in value.split(',') {
        match part.trim().split_once('=') {
            Some(("sha256", v)) => mac = Some(v.trim()),
            Some(("t", v)) => t = Some(v.trim()),
            _ => {}
        }
    }
    let (Some(mac), Some(t)) = (mac, t) else { return Err(Invalid::Malformed) };
    let ms: i64 = t.parse().map_err(|_| Invalid::Malformed)?;
    let at = DateTime::from_timestamp_millis(ms).ok_or(Invalid::Malformed)?;
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let mut signed = body.to_vec();
    signed.extend_from_slice(t.as_bytes());
    if !same_hex(&hex(ring::hmac::sign(&key, &signed).as_ref()), mac) {
        return Err(Invalid::Mismatch);
    }
    fresh(at, now)
}

/// Vercel: the hex HMAC-SHA1 of the body.
fn vercel(key: &[u8], value: &str, body: &[u8]) -> Result<(), Invalid> {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key);
    match same_hex(&hex(ring::hmac::sign(&key, body).as_ref()), value) {
        true => Ok(()),
        false => Err(Invalid::Mismatch),
    }
}

#[derive(serde::Deserialize)]
struct NetlifyClaims {
    sha256: String,
    #[serde(default)]
    iat: Option<i64>,
}

/// Netlify: a JWS (HS256) with `iss` netlify and the body's SHA-256.
fn netlify(key: &[u8], value: &str, body: &[u8], now: DateTime<Utc>) -> Result<(), Invalid> {
    use jsonwebtoken::{decode, Algorithm, DecodingKey, Validation};
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_issuer(&["netlify"]);
    validation.set_required_spec_claims(&["iss"]);
    // Netlify documents no expiry: `iat`, when there is one, is checked below.
    validation.validate_exp = false;
    let claims = decode::<NetlifyClaims>(value, &DecodingKey::from_secret(key), &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        match e.kind() {
            ErrorKind::InvalidSignature | ErrorKind::InvalidIssuer => Invalid::Mismatch,
            _ => Invalid::Malformed,
        }
    })?;
    let digest: [u8; 32] = sha2::Sha256::digest(body).into();
    if !same_hex(&hex(&digest), &claims.claims.sha256) {
        return Err(Invalid::Mismatch);
    }
    match claims.claims.iat {
        Some(secs) => fresh(DateTime::from_timestamp(secs, 0).ok_or(Invalid::Malformed)?, now),
        None => Ok(()),
    }
}

use sha2::Digest as _;

fn fresh(at: DateTime<Utc>, now: DateTime<Utc>) -> Result<(), Invalid> {
    match (now - at).abs() <= TOLERANCE {
        true => Ok(()),
        false => Err(Invalid::Stale),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"a-webhook-secret";

    #[test]
    fn ghost_signatures_are_checked_with_their_timestamp() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T09:00:00Z").unwrap().to_utc();
        let body = br#"{"post":{}}"#;
        let t = now.timestamp_millis().to_string();
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET);
        let mac = hex(ring::hmac::sign(&key, &[&body[..], t.as_bytes()].concat()).as_ref());
        assert_eq!(ghost(SECRET, &format!("sha256={mac}, t={t}"), body, now), Ok(()));
        assert_eq!(ghost(SECRET, &format!("sha256={mac}, t={t}"), b"{}", now), Err(Invalid::Mismatch));
        assert_eq!(ghost(b"another", &format!("sha256={mac}, t={t}"), body, now), Err(Invalid::Mismatch));
        let later = now + TimeDelta::minutes(6);
        assert_eq!(ghost(SECRET, &format!("sha256={mac}, t={t}"), body, later), Err(Invalid::Stale));
        assert_eq!(ghost(SECRET, &format!("sha256={mac}"), body, now), Err(Invalid::Malformed));
    }

    #[test]
    fn a_netlify_jws_holds_the_bodys_digest_from_netlify_and_a_recent_iat() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T09:00:00Z").unwrap().to_utc();
        let body = br#"{"state":"ready"}"#;
        let digest: [u8; 32] = sha2::Sha256::digest(body).into();
        let jws = |claims: serde_json::Value, secret: &[u8]| {
            let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
            jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_secret(secret)).unwrap()
        };
        let sha = hex(&digest);
        let good = jws(serde_json::json!({"iss": "netlify", "sha256": sha}), SECRET);
        assert_eq!(netlify(SECRET, &good, body, now), Ok(()));
        assert_eq!(netlify(SECRET, &good, b"{}", now), Err(Invalid::Mismatch));
        let other_issuer = jws(serde_json::json!({"iss": "someone", "sha256": sha}), SECRET);
        assert_eq!(netlify(SECRET, &other_issuer, body, now), Err(Invalid::Mismatch));
        let forged = jws(serde_json::json!({"iss": "netlify", "sha256": sha}), b"another");
        assert_eq!(netlify(SECRET, &forged, body, now), Err(Invalid::Mismatch));
        let old = (now - TimeDelta::minutes(6)).timestamp();
        let stale = jws(serde_json::json!({"iss": "netlify", "sha256": sha, "iat": old}), SECRET);
        assert_eq!(netlify(SECRET, &stale, body, now), Err(Invalid::Stale));
        let recent = jws(serde_json::json!({"iss": "netlify", "sha256": sha, "iat": now.timestamp() - 60}), SECRET);
        assert_eq!(netlify(SECRET, &recent, body, now), Ok(()));
        assert_eq!(netlify(SECRET, "not.a.jws", body, now), Err(Invalid::Malformed));
    }

    #[test]
    fn a_signature_is_taken_once_and_the_oldest_are_forgotten() {
        let mut seen = Seen::default();
        assert!(seen.take("a") && !seen.take("a"));
        seen.forget("a");
        assert!(seen.take("a"));
        for i in 0..REMEMBERED {
            seen.take(&i.to_string());
        }
        assert_eq!(seen.set.len(), REMEMBERED);
        assert!(seen.take("a"), "the oldest was forgotten");
    }
}
