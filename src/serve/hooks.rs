//! The webhook adapters, each reading its platform's documented payload
//! (`tests/fixtures/webhooks/` holds one of each, with where it is
//! documented):
//! - publish hooks put a URL in the ledger exactly as `POST /v1/urls` does:
//!   Ghost (`/v1/hooks/ghost/{event}`: `post.published`,
//!   `post.published.edited`, `page.published`, `page.published.edited` →
//!   updated, with the post's `updated_at` as its lastmod, its public URL
//!   remembered; `post.unpublished`, `post.deleted`, `page.unpublished`,
//!   `page.deleted` → deleted, the public URL remembered, else the slug's),
//!   and a generic `{"url": …}` (`/v1/hooks/url`);
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
use super::intake::{Admitted, Submission, UrlFrom};
use super::limits::Charged;
use super::refusal::{body_refusal, ErrorCode, Refusal};
use super::{SourcesJob, State};
use crate::ledger::{GhostUrl, Ledger};
use crate::model::{Action, Position};
use crate::pipeline::SourcesRead;
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
type Took = (StatusCode, Extension<Charged>, Json<Admitted>);

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
/// says the event only by where it sends). What Ghost sends (its own test
/// snapshots, `tests/fixtures/webhooks/`): `published` and
/// `published.edited` carry the public URL in `current.url`; `unpublished`
/// carries only the draft preview there (`/p/<uuid>/`) and no URL in
/// `previous`; `deleted` has an empty `current` and a `previous` without
/// a URL. So the public URL of each post is remembered in the ledger when
/// it is published or edited, and its removal announces that URL; with
/// none remembered, the site's URL and the slug (Ghost's default permalink)
/// — and the answer says so (`url_from`). A preview URL is never announced.
pub(super) async fn ghost(
    axum::extract::State(state): St,
    Extension(caller): Extension<Caller>,
    Path(event): Path<String>,
    uri: Uri,
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
    let post = GhostPost::read(&json, kind)?;
    let (url, place, from) = match action {
        Action::Updated => published_url(&state, &caller, &post).await?,
        Action::Deleted => removed_url(&state, &caller, &uri, &post).await?,
    };
    let submission = Submission {
        urls: vec![(url, Position::of(place))],
        action,
        lastmod: post.updated_at.filter(|_| action == Action::Updated),
    };
    let mut took = take_urls(&state, &caller, submission).await?;
    took.2 .0.url_from = Some(from);
    Ok(took)
}

/// What a Ghost payload says of its post or page.
struct GhostPost {
    kind: &'static str,
    /// Ghost's id (`current.id`, else `previous.id`).
    id: String,
    /// `current.url`: the public URL of a published post, the preview of
    /// a draft.
    url: Option<String>,
    /// `current.slug`, else `previous.slug`, and where it was read.
    slug: Option<(String, String)>,
    updated_at: Option<DateTime<Utc>>,
}

impl GhostPost {
    fn read(json: &Value, kind: &'static str) -> Result<GhostPost, Refusal> {
        let object = json.get(kind);
        let side = |state: &str| object.and_then(|o| o.get(state)).filter(|s| s.is_object());
        let text = |state: &str, field: &str| {
            side(state).and_then(|s| s.get(field)).and_then(Value::as_str).filter(|t| !t.is_empty())
        };
        let Some(id) = text("current", "id").or_else(|| text("previous", "id")) else {
            return Err(unreadable("Ghost", format!("no `{kind}.current.id` or `{kind}.previous.id` in the payload")));
        };
        let slug = ["current", "previous"]
            .into_iter()
            .find_map(|state| text(state, "slug").map(|s| (s.to_string(), format!("{kind}.{state}.slug"))));
        Ok(GhostPost {
            kind,
            id: id.to_string(),
            url: text("current", "url").map(String::from),
            slug,
            updated_at: text("current", "updated_at").and_then(|t| t.parse().ok()),
        })
    }
}

/// A published (or edited) post's public URL, remembered for its removal.
async fn published_url(
    state: &Arc<State>,
    caller: &Caller,
    post: &GhostPost,
) -> Result<(String, String, UrlFrom), Refusal> {
    let kind = post.kind;
    let Some(url) = post.url.as_deref().map(|u| state.tokens.mask(u)) else {
        return Err(unreadable("Ghost", format!("no `{kind}.current.url` in the payload")));
    };
    let place = format!("{kind}.current.url");
    // A URL of no property, or of one the caller may not write, is refused
    // by the intake's check, as any URL is: nothing is remembered of it.
    let property = state.settings.property_for(&url).filter(|p| caller.may_write(&p.name));
    if let (Some(property), Ok(parsed)) = (property, url::Url::parse(&url)) {
        if is_preview(&property.site, &parsed) {
            return Err(unreadable("Ghost", format!("`{place}` is the draft preview {url}, not a public URL")));
        }
        let remembered = GhostUrl {
            property: property.name.clone(),
            ghost_id: post.id.clone(),
            url: url.clone(),
            announced_at: state.clock.now(),
        };
        with_ledger(state, move |ledger| ledger.record_ghost_url(&remembered)).await?;
    }
    Ok((url, place, UrlFrom::Payload))
}

/// An unpublished or deleted post's public URL: the one remembered, else
/// the site's URL and the slug.
async fn removed_url(
    state: &Arc<State>,
    caller: &Caller,
    uri: &Uri,
    post: &GhostPost,
) -> Result<(String, String, UrlFrom), Refusal> {
    let kind = post.kind;
    let property = ghost_property(state, caller, uri, post)?;
    let (name, id) = (property.name.clone(), post.id.clone());
    if let Some(url) = with_ledger(state, move |ledger| ledger.ghost_url(&name, &id)).await? {
        return Ok((url, format!("the public URL remembered for Ghost {kind} {}", post.id), UrlFrom::Remembered));
    }
    let Some((slug, place)) = &post.slug else {
        return Err(unreadable(
            "Ghost",
            format!("no public URL is remembered for {kind} {} and the payload has no slug", post.id),
        ));
    };
    match slug_url(&property.site, slug) {
        Some(url) => Ok((url.to_string(), place.clone(), UrlFrom::Slug)),
        None => Err(unreadable("Ghost", format!("`{place}` is `{slug}`, not a slug"))),
    }
}

/// The property a removal is of: `?property=NAME`, else that of the URL
/// the payload has (an unpublished post's preview is on its site), else
/// the only one the caller writes.
fn ghost_property<'s>(
    state: &'s State,
    caller: &Caller,
    uri: &Uri,
    post: &GhostPost,
) -> Result<&'s crate::config::Property, Refusal> {
    let settings = &state.settings;
    let named = query_property(uri);
    let property = match &named {
        Some(name) => settings
            .property(name)
            .filter(|p| caller.may_read(&p.name))
            .ok_or_else(|| unknown_property(state, caller, name))?,
        None => {
            let of_url = post.url.as_deref().and_then(|u| settings.property_for(u));
            let writable: Vec<&crate::config::Property> =
                settings.properties.iter().filter(|p| caller.may_write(&p.name)).collect();
            match (of_url, writable.as_slice()) {
                (Some(p), _) => p,
                (None, [only]) => only,
                (None, _) => {
                    return Err(unreadable(
                        "Ghost",
                        format!("the payload does not say which property {} {} is of", post.kind, post.id),
                    )
                    .hint("add ?property=NAME to the webhook's URL in Ghost"))
                }
            }
        }
    };
    if !caller.may_write(&property.name) {
        return Err(forbidden(caller, &property.name));
    }
    Ok(property)
}

/// Whether `url` is a Ghost draft's preview on `site`: `/p/<uuid>/` under
/// the site's path. It is never a public URL, and never announced.
fn is_preview(site: &url::Url, url: &url::Url) -> bool {
    if url.origin() != site.origin() {
        return false;
    }
    let Some(rest) = url.path().strip_prefix(site.path()) else { return false };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    match rest.split_once('/') {
        Some(("p", uuid)) => is_uuid(uuid),
        _ => false,
    }
}

/// Whether `text` is a UUID as Ghost writes them (8-4-4-4-12 hex digits).
fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups.iter().zip([8, 4, 4, 4, 12]).all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Ghost's default permalink of `slug` on `site` (`/{slug}/` under its
/// path), if `slug` is one (no path, query or fragment in it).
fn slug_url(site: &url::Url, slug: &str) -> Option<url::Url> {
    let plain = !slug.is_empty() && slug != "." && slug != ".." && !slug.contains(['/', '\\', '?', '#']);
    plain.then(|| site.join(&format!("{slug}/")).ok()).flatten()
}

/// Runs `f` on the intake's ledger connection, off the async runtime.
async fn with_ledger<T: Send + 'static>(
    state: &Arc<State>,
    f: impl FnOnce(&mut dyn Ledger) -> crate::ledger::Result<T> + Send + 'static,
) -> Result<T, Refusal> {
    let state = state.clone();
    let done = tokio::task::spawn_blocking(move || {
        let mut ledger = state.ledger.lock().map_err(|_| anyhow::anyhow!("the intake's ledger connection failed"))?;
        f(ledger.as_mut()).map_err(anyhow::Error::from)
    })
    .await;
    match done {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(Refusal::ledger(&e)),
        Err(e) => Err(Refusal::ledger(&anyhow::anyhow!("{e}"))),
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
    let read = read_sources(state, caller, query_property(uri)).await?;
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

/// The `alert_type` of Cloudflare's Pages notifications.
const PAGES_ALERT: &str = "pages_event_alert";

/// `POST /v1/hooks/cloudflare-pages`: a Cloudflare notification (the
/// generic webhook's schema: `name`, `text`, `data`, `ts`, `alert_type`).
/// Cloudflare documents the envelope but not what a Pages alert's `data`
/// holds, so nothing in the payload says which event or environment it
/// was: the notification policy does, with its filters (event
/// `EVENT_DEPLOYMENT_SUCCESS`, environment `ENVIRONMENT_PRODUCTION`). An
/// alert of another type is ignored; one without `alert_type` (which
/// Cloudflare says some notifications lack) is taken.
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
        Some(PAGES_ALERT) => Ok(()),
        Some(other) => Err(format!("a `{other}` alert, not a Pages deployment ({PAGES_ALERT})")),
    };
    deploy(&state, &caller, &uri, production).await
}

/// The `?property=NAME` of a hook's URL.
fn query_property(uri: &Uri) -> Option<String> {
    uri.query().and_then(|q| {
        url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "property").map(|(_, v)| v.into_owned())
    })
}

/// A `?property=` that names no property, or one the caller may not see
/// (one answer for both, naming only the caller's own).
fn unknown_property(state: &State, caller: &Caller, name: &str) -> Refusal {
    super::refusal::unknown_property(state, caller, name)
}

/// A property the caller may not write (named only when the caller may
/// read it: a token never learns the names of others' properties).
fn forbidden(caller: &Caller, property: &str) -> Refusal {
    Refusal::new(
        StatusCode::FORBIDDEN,
        ErrorCode::Forbidden,
        format!("token `{}` may not write {}", caller.id(), super::intake::property_named(caller, property)),
    )
    .hint("use the token of that property, or add the property to this token's `properties`")
}

/// Has the worker read the sources of `property` (or of every property
/// the caller may write), and says what it put in the ledger.
pub(super) async fn read_sources(
    state: &Arc<State>,
    caller: &Caller,
    property: Option<String>,
) -> Result<SourcesRead, Refusal> {
    let properties = match property {
        Some(p) if state.settings.property(&p).is_none() || !caller.may_read(&p) => {
            return Err(unknown_property(state, caller, &p))
        }
        Some(p) if !caller.may_write(&p) => return Err(forbidden(caller, &p)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preview_is_p_and_a_uuid_under_the_site() {
        let site = url::Url::parse("https://a.example/blog/").unwrap();
        let preview = |u: &str| is_preview(&site, &url::Url::parse(u).unwrap());
        assert!(preview("https://a.example/blog/p/1f4a2e8b-5c9d-4f3b-8e72-8a6b3d4c0f21/"));
        assert!(preview("https://a.example/blog/p/1F4A2E8B-5C9D-4F3B-8E72-8A6B3D4C0F21"));
        for public in [
            "https://a.example/blog/p/",
            "https://a.example/blog/p/not-a-uuid/",
            "https://a.example/blog/hello/",
            "https://a.example/p/1f4a2e8b-5c9d-4f3b-8e72-8a6b3d4c0f21/",
            "https://b.example/blog/p/1f4a2e8b-5c9d-4f3b-8e72-8a6b3d4c0f21/",
            "https://a.example/blog/p/1f4a2e8b-5c9d-4f3b-8e72-8a6b3d4c0f21/more/",
        ] {
            assert!(!preview(public), "{public}");
        }
    }

    #[test]
    fn a_slug_is_ghosts_default_permalink_under_the_site() {
        let site = url::Url::parse("https://a.example/blog/").unwrap();
        assert_eq!(slug_url(&site, "hello-world").unwrap().as_str(), "https://a.example/blog/hello-world/");
        for bad in ["", ".", "..", "a/b", "a?b", "a#b", "a\\b"] {
            assert_eq!(slug_url(&site, bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_ghost_payload_gives_its_id_url_and_slug() {
        let deleted = serde_json::json!({"post": {"current": {}, "previous": {"id": "a1", "slug": "gone"}}});
        let post = GhostPost::read(&deleted, "post").unwrap();
        assert_eq!((post.id.as_str(), post.url), ("a1", None));
        assert_eq!(post.slug, Some(("gone".into(), "post.previous.slug".into())));
        let unpublished = serde_json::json!({"page": {"current": {"id": "b2", "slug": "about", "url": "https://a.example/p/x/"}, "previous": {"status": "published"}}});
        let page = GhostPost::read(&unpublished, "page").unwrap();
        assert_eq!((page.id.as_str(), page.url.as_deref()), ("b2", Some("https://a.example/p/x/")));
        assert_eq!(page.slug, Some(("about".into(), "page.current.slug".into())));
        for none in [serde_json::json!({"post": {}}), serde_json::json!({"page": {"current": {"id": "c"}}})] {
            assert_eq!(GhostPost::read(&none, "post").err().map(|r| r.status.as_u16()), Some(422), "{none}");
        }
    }
}
