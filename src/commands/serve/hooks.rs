//! The webhook adapters, each reading its platform's documented payload
//! (`tests/fixtures/webhooks/` holds one of each, with where it is
//! documented):
//! - publish hooks put a URL in the ledger exactly as `POST /v1/urls` does:
//!   Ghost (`/v1/hooks/ghost/{event}`: `post.published`,
//!   `post.published.edited`, `page.published`, `page.published.edited` →
//!   updated, with the post's `updated_at` as its lastmod; `post.unpublished`,
//!   `post.deleted`, `page.unpublished`, `page.deleted` → deleted, the URL
//!   the post had), and a generic `{"url": …}` (`/v1/hooks/url`);
//! - deploy hooks read the configured sources with `--changed` (Netlify's
//!   deploy notification, Vercel's `deployment.succeeded`, a Cloudflare
//!   Pages notification) for `?property=NAME`, or every property the token
//!   writes: what a production deploy changed goes, the rest is a 304.
//!
//! Reads of the configured sources (`POST /v1/sources` too) are handed to
//! the worker, which reads them as an unattended `submit` does, and are
//! answered once what they hold is in the ledger.

use super::auth::Caller;
use super::commit::take_urls;
use super::intake::{Admitted, Submission};
use super::limits::Taken;
use super::refusal::{body_refusal, ErrorCode, Refusal};
use super::{SourcesJob, State};
use crate::commands::submit::SourcesRead;
use crate::model::{Action, Position};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Path;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::oneshot;

type St = axum::extract::State<Arc<State>>;

/// A hook's answer when it took URLs.
type Took = (StatusCode, Extension<Taken>, Json<Admitted>);

/// The JSON of a hook's body.
fn json_body(state: &State, body: Result<Bytes, BytesRejection>, what: &str) -> Result<Value, Refusal> {
    let body = body.map_err(|r| body_refusal(&r, state))?;
    serde_json::from_slice(&body)
        .map_err(|e| Refusal::bad_request(format!("the body is not JSON ({what}'s payload): {e}")))
}

/// A payload that lacks what the adapter reads.
fn unreadable(what: &str, message: String) -> Refusal {
    Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::UnreadablePayload, message)
        .hint(format!("point {what}'s webhook at this endpoint unchanged; its payload is read as documented"))
}

/// `POST /v1/hooks/url`: `{"url": "…", "action": "updated"|"deleted"}`.
pub(super) async fn url(
    axum::extract::State(state): St,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Took, Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    let json = json_body(&state, body, "the generic hook")?;
    let Some(url) = json.get("url").and_then(Value::as_str) else {
        return Err(unreadable("the generic hook", "no `url` string in the payload".into()));
    };
    let action = match json.get("action").and_then(Value::as_str) {
        None | Some("updated") => Action::Updated,
        Some("deleted") => Action::Deleted,
        Some(other) => {
            return Err(unreadable("the generic hook", format!("`action` is `{other}`: updated or deleted")));
        }
    };
    let submission = Submission { urls: vec![(url.to_string(), Position::of("url"))], action, lastmod: None };
    take_urls(&state, &caller, submission).await
}

/// `POST /v1/hooks/ghost/{event}`: a Ghost webhook, one per event (Ghost
/// says the event only by where it sends).
pub(super) async fn ghost(
    axum::extract::State(state): St,
    Extension(caller): Extension<Caller>,
    Path(event): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Took, Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    let (kind, action) = match event.as_str() {
        "post.published" | "post.published.edited" => ("post", Action::Updated),
        "page.published" | "page.published.edited" => ("page", Action::Updated),
        "post.unpublished" | "post.deleted" => ("post", Action::Deleted),
        "page.unpublished" | "page.deleted" => ("page", Action::Deleted),
        other => {
            return Err(Refusal::new(
                StatusCode::NOT_FOUND,
                ErrorCode::NotFound,
                format!("`{other}` is not a Ghost event indexq takes"),
            )
            .hint(
                "use post.published, post.published.edited, page.published, page.published.edited (updated) or \
                 post.unpublished, post.deleted, page.unpublished, page.deleted (deleted)",
            ));
        }
    };
    let json = json_body(&state, body, "Ghost")?;
    let (url, place, lastmod) = ghost_url(&json, kind, action).ok_or_else(|| {
        unreadable("Ghost", format!("no `{kind}.current.url` or `{kind}.previous.url` in the payload"))
    })?;
    let submission = Submission {
        urls: vec![(url, Position::of(place))],
        action,
        lastmod: lastmod.filter(|_| action == Action::Updated),
    };
    take_urls(&state, &caller, submission).await
}

/// The URL a Ghost payload is about: for an update, the post as it is
/// now (`current.url`, with its `updated_at`); for a removal, the URL it had
/// (`previous.url`: an unpublished post's current URL is its preview, a
/// deleted one has none), else `current.url`.
fn ghost_url(json: &Value, kind: &str, action: Action) -> Option<(String, String, Option<DateTime<Utc>>)> {
    let object = json.get(kind)?;
    let field = |state: &str| {
        let url = object.get(state)?.get("url")?.as_str()?.to_string();
        let updated = object.get(state)?.get("updated_at").and_then(Value::as_str).and_then(|t| t.parse().ok());
        Some((url, format!("{kind}.{state}.url"), updated))
    };
    match action {
        Action::Updated => field("current"),
        Action::Deleted => field("previous").or_else(|| field("current")),
    }
}

/// A deploy hook's answer: a read of the sources, or why there was none.
async fn deploy(
    state: &Arc<State>,
    caller: &Caller,
    uri: &Uri,
    production: Result<(), String>,
) -> Result<Response, Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    if let Err(why) = production {
        #[derive(serde::Serialize)]
        struct Ignored {
            ignored: String,
        }
        return Ok((StatusCode::OK, Json(Ignored { ignored: why })).into_response());
    }
    let property = uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "property").map(|(_, v)| v.into_owned())
    });
    let read = read_sources(state, caller, property).await?;
    Ok((StatusCode::ACCEPTED, Json(read)).into_response())
}

/// `POST /v1/hooks/netlify`: Netlify's deploy notification (the deploy
/// object); a production deploy that is `ready` reads the sources.
pub(super) async fn netlify(
    axum::extract::State(state): St,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Refusal> {
    let json = json_body(&state, body, "Netlify")?;
    let Some(deploy_state) = json.get("state").and_then(Value::as_str) else {
        return Err(unreadable("Netlify", "no deploy `state` in the payload".into()));
    };
    let context = json.get("context").and_then(Value::as_str).unwrap_or("production");
    let production = match (deploy_state, context) {
        ("ready", "production") => Ok(()),
        ("ready", other) => Err(format!("a {other} deploy: only production deploys read the sources")),
        (other, _) => Err(format!("the deploy is `{other}`, not ready")),
    };
    deploy(&state, &caller, &uri, production).await
}

/// `POST /v1/hooks/vercel`: Vercel's webhook; `deployment.succeeded` (or
/// `deployment.ready`) of the production target reads the sources.
pub(super) async fn vercel(
    axum::extract::State(state): St,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Refusal> {
    let json = json_body(&state, body, "Vercel")?;
    let Some(kind) = json.get("type").and_then(Value::as_str) else {
        return Err(unreadable("Vercel", "no event `type` in the payload".into()));
    };
    let target = json.get("payload").and_then(|p| p.get("target")).and_then(Value::as_str);
    let production = match (kind, target) {
        ("deployment.succeeded" | "deployment.ready", Some("production")) => Ok(()),
        ("deployment.succeeded" | "deployment.ready", other) => {
            Err(format!("a deployment to {}: only production reads the sources", other.unwrap_or("a preview")))
        }
        (other, _) => Err(format!("`{other}` is not a deployment that succeeded")),
    };
    deploy(&state, &caller, &uri, production).await
}

/// `POST /v1/hooks/cloudflare-pages`: a Cloudflare notification (the
/// generic webhook's schema: `name`, `text`, `data`, `ts`, `alert_type`);
/// point a Pages deployment-success notification here. An alert of another
/// product is ignored.
pub(super) async fn cloudflare_pages(
    axum::extract::State(state): St,
    Extension(caller): Extension<Caller>,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Refusal> {
    let json = json_body(&state, body, "Cloudflare")?;
    if json.get("text").and_then(Value::as_str).is_none() || json.get("ts").is_none() {
        return Err(unreadable("Cloudflare", "not a Cloudflare notification (no `text` and `ts`)".into()));
    }
    let production = match json.get("alert_type").and_then(Value::as_str) {
        None => Ok(()),
        Some(t) if t.starts_with("pages") => Ok(()),
        Some(other) => Err(format!("a `{other}` alert, not a Pages deployment")),
    };
    deploy(&state, &caller, &uri, production).await
}

/// Has the worker read the sources of `property` (or of every property
/// the caller may write), and says what it put in the ledger.
pub(super) async fn read_sources(
    state: &Arc<State>,
    caller: &Caller,
    property: Option<String>,
) -> Result<SourcesRead, Refusal> {
    let properties = match property {
        Some(p) if state.settings.property(&p).is_none() => {
            let known: Vec<&str> = state.settings.properties.iter().map(|p| p.name.as_str()).collect();
            return Err(Refusal::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::UnknownProperty,
                format!("no [[property]] is named `{p}`"),
            )
            .hint(format!("the configured properties: {}", known.join(", "))));
        }
        Some(p) if !caller.may_write(&p) => {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                ErrorCode::Forbidden,
                format!("token `{}` may not write property `{p}`", caller.id()),
            )
            .hint("use the token of that property, or add the property to this token's `properties`"));
        }
        Some(p) => Some(vec![p]),
        None => match caller {
            Caller::Anyone => None,
            Caller::Token { properties, .. } => Some(properties.clone()),
        },
    };
    let (reply, answer) = oneshot::channel();
    if state.sources.send(SourcesJob { properties, reply }).await.is_err() {
        return Err(Refusal::shutting_down());
    }
    match answer.await {
        Ok(Ok(read)) => Ok(read),
        Ok(Err(why)) => Err(Refusal::ledger(&anyhow::anyhow!(why))),
        // The worker stopped before it read them.
        Err(_) => Err(Refusal::shutting_down()),
    }
}
