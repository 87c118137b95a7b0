//! indexq's own refusals: each with a distinct status, a machine-readable
//! `error`, a message and hint for a person and — where waiting helps —
//! `Retry-After`; and the reading of a request's body and media type that
//! every route shares.

use super::auth::Caller;
use super::limits::{Charged, Limit};
use super::State;
use crate::ledger::RateDecision;
use crate::model::Position;
use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

/// How long a client is told to wait when the process is stopping (a
/// restart is expected to take about that long).
const SHUTDOWN_RETRY_SECS: u64 = 10;

/// How long a client is told to wait when the ledger does not answer.
const LEDGER_RETRY_SECS: u64 = 5;

/// What indexq's refusals say in `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ErrorCode {
    /// 401: no token, or one that is not configured.
    Unauthorized,
    /// 403: a property the token may not write (waiting never fixes it).
    Forbidden,
    /// 400: a body that cannot be read (not JSON, not UTF-8, no URLs).
    BadRequest,
    /// 422: URLs that are not URLs, or of no property: each with its reason.
    InvalidUrls,
    /// 413: over `[serve] max_body`.
    PayloadTooLarge,
    /// 415: neither JSON nor text.
    UnsupportedMediaType,
    /// 429: over a token's rate (`limit` names the rule).
    RateLimited,
    /// 503: the process is stopping.
    ShuttingDown,
    /// 503: the ledger does not answer.
    LedgerUnavailable,
    /// 422: a property that is not configured.
    UnknownProperty,
    /// 422: a webhook payload without what its adapter reads.
    UnreadablePayload,
    /// 503: every connection is taken, or this address holds its
    /// `[serve] max_connections_per_address` (`listen`).
    TooManyConnections,
    /// 408: a body slower than `[serve] min_body_rate` (`listen`).
    BodyTooSlow,
    /// 404.
    NotFound,
    /// 405.
    MethodNotAllowed,
}

/// One of indexq's own refusals.
#[derive(Debug, Serialize)]
pub(super) struct Refusal {
    #[serde(skip)]
    pub status: StatusCode,
    pub error: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// `rate_limited`: the rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<&'static str>,
    /// What a rate rule made of the request, for the RateLimit fields.
    #[serde(skip)]
    pub taken: Option<Box<Charged>>,
    /// Per URL: why it was refused (`invalid_urls`, `forbidden`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<Refused>,
}

impl Refusal {
    pub(super) fn new(status: StatusCode, error: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            error,
            message: message.into(),
            hint: None,
            retry_after: None,
            limit: None,
            taken: None,
            urls: Vec::new(),
        }
    }

    pub(super) fn hint(mut self, hint: impl Into<String>) -> Refusal {
        self.hint = Some(hint.into());
        self
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Refusal {
        Refusal::new(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, message)
    }

    /// 503 while the process stops.
    pub(super) fn shutting_down() -> Refusal {
        let mut r = Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::ShuttingDown,
            "indexq serve is stopping: nothing more is taken",
        )
        .hint("send it again once indexq serve is back (a restart takes seconds)");
        r.retry_after = Some(SHUTDOWN_RETRY_SECS);
        r
    }

    /// 503 when the ledger does not answer (`error` says why).
    pub(super) fn ledger(error: &anyhow::Error) -> Refusal {
        tracing::warn!("the ledger did not answer: {error:#}");
        let mut r = Refusal::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::LedgerUnavailable,
            format!("the ledger did not answer: {error:#}"),
        );
        r.retry_after = Some(LEDGER_RETRY_SECS);
        r
    }
}

impl IntoResponse for Refusal {
    fn into_response(mut self) -> Response {
        let status = self.status;
        let retry_after = self.retry_after;
        let unauthorized = self.error == ErrorCode::Unauthorized;
        let taken = self.taken.take();
        let mut response = (status, Json(self)).into_response();
        if let Some(taken) = taken {
            response.extensions_mut().insert(*taken);
        }
        let headers = response.headers_mut();
        if let Some(secs) = retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if unauthorized {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"indexq\""));
        }
        response
    }
}

/// The media type of a request (`type/subtype`, lower case), if it says one.
pub(super) fn content_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
}

/// A body that could not be read: over the cap (413), or cut off.
pub(super) fn body_refusal(rejection: &BytesRejection, state: &State) -> Refusal {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("the body is over {} bytes ([serve] max_body)", state.settings.serve.max_body),
        )
        .hint("send the URLs in several requests");
    }
    Refusal::bad_request(format!("the body could not be read: {rejection}"))
}

/// A property the caller may not read, or that is not configured: one
/// answer for both, naming only the caller's own properties.
pub(super) fn unknown_property(state: &State, caller: &Caller, name: &str) -> Refusal {
    let known: Vec<&str> = match caller.properties() {
        Some(own) => own.iter().map(String::as_str).collect(),
        None => state.settings.properties.iter().map(|p| p.name.as_str()).collect(),
    };
    let whose = match caller {
        Caller::Anyone => "the configured properties".to_string(),
        Caller::Token { id, .. } => format!("the properties of token `{id}`"),
    };
    Refusal::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        ErrorCode::UnknownProperty,
        match caller {
            Caller::Anyone => format!("no [[property]] is named `{name}`"),
            Caller::Token { id, .. } => format!("token `{id}` has no property `{name}`"),
        },
    )
    .hint(format!("{whose}: {}", known.join(", ")))
}

/// Why a URL of a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RefusedReason {
    /// Not an http(s) URL.
    InvalidUrl,
    /// Under no configured property's site.
    NoProperty,
    /// Of a property the token may not write.
    NotAllowed,
}

/// A URL the request was refused for.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Refused {
    pub url: String,
    pub source: Position,
    pub reason: RefusedReason,
    pub message: String,
}

/// What a rule's decision makes of a request: taken, or its refusal.
pub(super) fn answer_for(
    state: &State,
    caller: &str,
    limit: Limit,
    cost: u32,
    decision: RateDecision,
) -> Result<Charged, Refusal> {
    let taken = Charged { limit, decision };
    if decision.allowed {
        return Ok(taken);
    }
    let rule = limit.rule(state);
    let mut refusal = match decision.retry_after {
        Some(wait) => {
            let secs = u64::try_from((wait.num_milliseconds() + 999) / 1000).unwrap_or(0).max(1);
            let mut r = Refusal::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!(
                    "over {}'s limit of {} {} (at most {} at once): send again in {secs} s",
                    caller_name(caller),
                    rule.per,
                    match limit {
                        Limit::RequestsPerSecond => "requests a second",
                        Limit::UrlsPerMinute => "URLs a minute",
                    },
                    rule.burst
                ),
            );
            r.retry_after = Some(secs);
            r
        }
        None => Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("{cost} URLs in one request: a token's burst is {} ([serve] url_burst)", rule.burst),
        )
        .hint("send them in several requests"),
    };
    refusal.limit = Some(limit.as_str());
    refusal.taken = Some(Box::new(taken));
    Err(refusal)
}

fn caller_name(id: &str) -> String {
    if id == "-" {
        "the intake".to_string()
    } else {
        format!("token `{id}`")
    }
}
