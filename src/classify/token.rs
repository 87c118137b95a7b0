//! Google's OAuth2 token endpoint: RFC 6749 §5.2 error codes (`invalid_grant`,
//! …) are misconfigured with that code as reason, naming the key id and the
//! service account, never key material; 429 and 5xx are `token_server_error`.
//! The table is on [`google_token`].

use super::{excerpt, http_status, transient_answered, Response, Verdict};
use crate::model::{AcceptedReason, MisconfiguredReason, TokenError, TokenHttpStatus, TransientReason};

/// What indexq knows about a token request.
#[derive(Debug, Clone, Copy)]
pub struct GoogleTokenContext<'a> {
    /// The service account's `client_email` from the key file.
    pub client_email: &'a str,
    /// The key file's `private_key_id`: names the key, is no key material.
    pub key_id: &'a str,
}

/// Classifies an OAuth2 token endpoint answer (RFC 6749 §5.2 errors). 200 → accepted "ok" (the caller parses the token).
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx | accepted | `ok` (the body, which holds the token, is never quoted) |
/// | 429, 5xx, 408 | transient | `token_server_error` (`Retry-After` honoured) |
/// | 4xx with `error` `invalid_grant`, `invalid_client`, `unauthorized_client`, `access_denied`, `invalid_scope` | misconfigured | that code |
/// | anything else (another code such as `invalid_request`, 3xx, no JSON) | misconfigured | `token_http_<status>` |
///
/// Messages name the key by its id and the service account by its email, quote
/// Google's `error_description`, and never hold key material.
pub fn google_token(resp: &Response, ctx: &GoogleTokenContext) -> Verdict {
    let status = resp.status;
    let (email, key_id) = (ctx.client_email, ctx.key_id);
    if (200..=299).contains(&status) {
        return Verdict::new(
            AcceptedReason::Ok,
            format!("Google's token endpoint issued an access token for {email} ({}).", http_status(status)),
        );
    }
    let value: Option<serde_json::Value> = serde_json::from_str(resp.body.trim()).ok();
    let field = |key: &str| value.as_ref().and_then(|v| v.get(key)).and_then(|t| t.as_str()).map(excerpt);
    let code = field("error");
    let said = match (&code, field("error_description").filter(|d| !d.is_empty())) {
        (Some(code), Some(description)) => format!("{code}: {description}"),
        (Some(code), None) => code.clone(),
        (None, _) => excerpt(resp.body),
    };
    let answered = if said.is_empty() {
        format!("Google's token endpoint answered {}", http_status(status))
    } else {
        format!("Google's token endpoint answered {} ({said})", http_status(status))
    };
    if status == 429 || status == 408 || (500..=599).contains(&status) {
        return transient_answered(
            resp,
            &answered,
            TransientReason::TokenServerError,
            "it failed to issue an access token",
        );
    }
    // The OAuth2 error codes (RFC 6749 §5.2) that a service-account key or its JWT causes.
    let known = code.as_deref().and_then(|c| c.parse::<TokenError>().ok());
    match known {
        Some(code) if (400..=499).contains(&status) => {
            let specific = match code {
                TokenError::InvalidScope => "indexq asks for the scope https://www.googleapis.com/auth/indexing; ",
                TokenError::UnauthorizedClient | TokenError::AccessDenied => "The service account may be disabled; ",
                TokenError::InvalidGrant | TokenError::InvalidClient => "",
            };
            Verdict::misconfigured(
                MisconfiguredReason::Token(code),
                format!("{answered}: it refused the service-account key {key_id} of {email}."),
                format!(
                    "{specific}The service-account key {key_id} was revoked, deleted or is wrong: create a new JSON \
                     key for {email} (Google Cloud console → IAM & Admin → Service accounts → Keys) and point \
                     `credentials` in `[google]` at it. Or the machine's clock is off by minutes (the JWT's iat/exp): \
                     synchronise it."
                ),
            )
        }
        _ => Verdict::misconfigured(
            MisconfiguredReason::TokenHttp(TokenHttpStatus(status)),
            format!("{answered}: it did not issue an access token for {email} (key {key_id})."),
            "Check `token_uri` in the key file (https://oauth2.googleapis.com/token) and that the file is an \
             unchanged service-account JSON key; if both are right, report this response.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::RetryAfter;
    use super::*;
    use crate::model::{Class, Reason};

    #[test]
    fn google_token_errors() {
        let err =
            |code: &str, description: &str| format!(r#"{{"error": "{code}", "error_description": "{description}"}}"#);
        type Row = (u16, Vec<(&'static str, &'static str)>, String, Class, &'static str, Option<RetryAfter>);
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            (200, vec![], r#"{"access_token": "ya29.secret-token", "expires_in": 3599, "token_type": "Bearer"}"#.into(), Class::Accepted, "ok", None),
            (400, vec![], err("invalid_grant", "Invalid JWT Signature."), Class::Misconfigured, "invalid_grant", None),
            (400, vec![], err("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."), Class::Misconfigured, "invalid_grant", None),
            (401, vec![], err("invalid_client", "The OAuth client was not found."), Class::Misconfigured, "invalid_client", None),
            (401, vec![], err("unauthorized_client", "Client is unauthorized to retrieve access tokens using this method."), Class::Misconfigured, "unauthorized_client", None),
            (403, vec![], err("access_denied", "Account disabled."), Class::Misconfigured, "access_denied", None),
            (400, vec![], err("invalid_scope", "Invalid OAuth scope."), Class::Misconfigured, "invalid_scope", None),
            (400, vec![], r#"{"error": "invalid_grant"}"#.into(), Class::Misconfigured, "invalid_grant", None),
            (400, vec![], err("invalid_request", "Missing required parameter: assertion"), Class::Misconfigured, "token_http_400", None),
            (404, vec![], "<html>Not Found</html>".into(), Class::Misconfigured, "token_http_404", None),
            (500, vec![], err("internal_failure", "Backend Error"), Class::Transient, "token_server_error", None),
            (503, vec![("Retry-After", "30")], "".into(), Class::Transient, "token_server_error", Some(RetryAfter::Seconds(30))),
            (429, vec![], "".into(), Class::Transient, "token_server_error", None),
        ];
        for (status, headers, body, class, reason, retry) in &table {
            let v = google_token_verdict(*status, headers, body);
            assert_eq!(
                (v.class(), v.reason.to_string().as_str(), v.retry_after),
                (*class, *reason, *retry),
                "HTTP {status} {body}: {}",
                v.message
            );
            assert!(!v.message.contains("ya29"), "{}", v.message);
            if v.class() == Class::Misconfigured {
                assert!(v.message.contains(GOOGLE_TOKEN_CTX.key_id), "{}", v.message);
                assert!(v.message.contains(GOOGLE_TOKEN_CTX.client_email), "{}", v.message);
            }
            if matches!(v.reason, Reason::Misconfigured(MisconfiguredReason::Token(_))) {
                let hint = v.hint.as_deref().expect("hint");
                assert!(hint.contains("new JSON key") && hint.contains(GOOGLE_TOKEN_CTX.client_email), "{hint}");
                assert!(hint.contains("clock"), "{hint}");
            }
        }
        let grant = google_token_verdict(400, &[], &err("invalid_grant", "Invalid JWT Signature."));
        assert!(grant.message.contains("Invalid JWT Signature."), "{}", grant.message);
    }
}
