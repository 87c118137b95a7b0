//! The routes and their answers: `202`/`200` documents, or indexq's own
//! refusals (`refusal`). A guard in front of every route finds the caller (a bearer token, or
//! anyone when none is configured), and writes one log line per request
//! naming the token by its id, never the token.

use super::auth::{Caller, Unknown};
use super::commit::{self, take_urls};
use super::intake;
use super::limits::{self, Charged, Limit};
use super::query::QueueQuery;
use super::refusal::{body_refusal, content_type, unknown_property, ErrorCode, Refusal};
use super::State;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Serialize;
use std::sync::Arc;

pub(super) fn router(state: Arc<State>) -> Router {
    let max_body = usize::try_from(state.settings.serve.max_body).unwrap_or(usize::MAX);
    let mut router = Router::new();
    if state.settings.serve.indexnow {
        router = router.route("/indexnow", get(super::indexnow::get).post(super::indexnow::post));
    }
    router
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/v1/urls", post(post_urls))
        .route("/v1/sources", post(post_sources))
        .route("/v1/budget", get(get_budget))
        .route("/v1/queue", get(get_queue))
        .route("/metrics", get(get_metrics))
        .route("/v1/hooks/url", post(super::hooks::url))
        .route("/v1/hooks/ghost/{event}", post(super::hooks::ghost))
        .route("/v1/hooks/netlify", post(super::hooks::netlify))
        .route("/v1/hooks/vercel", post(super::hooks::vercel))
        .route("/v1/hooks/cloudflare-pages", post(super::hooks::cloudflare_pages))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// In front of every route: the caller (401 without a good token, except
/// for `/healthz` and `/readyz`, and `/metrics` with `metrics_public`; 403
/// for a read-only token's `POST`), and a log line per request that names
/// the token by its id.
async fn guard(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    request: Request,
    next: Next,
) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let open = matches!(path.as_str(), "/healthz" | "/readyz");
    // Public metrics are every series, for a request with no token; a wrong
    // token is still refused (it is a mistake worth telling).
    let public = path == "/metrics" && state.settings.serve.metrics_public;
    // IndexNow's requests carry the property's key, not a bearer token:
    // its routes authenticate them (`indexnow`), and take their limits.
    let open = open || (path == "/indexnow" && state.settings.serve.indexnow);
    // A hook its platform signs (`[serve.webhooks]`): the signature, not a
    // token, says who sends it.
    let (mut request, signed) = match super::signed::check(&state, request).await {
        Ok(checked) => checked,
        Err(refusal) => {
            let mut response = refusal.into_response();
            limits::headers(&state, &[], response.headers_mut());
            log(&method, &path, response.status(), "-", started);
            return response;
        }
    };
    let authorization = presented_token(&request);
    let signature = signed.as_ref().map(|s| s.signature.clone());
    let caller = match signed.map(|s| s.caller).ok_or(()).or_else(|()| state.tokens.caller(authorization.as_deref())) {
        Ok(caller) => Some(caller),
        Err(_) if open => None,
        Err(Unknown::Missing) if public => None,
        Err(unknown) => {
            let mut response = unauthorized(unknown).into_response();
            limits::headers(&state, &[], response.headers_mut());
            log(&method, &path, response.status(), "-", started);
            return response;
        }
    };
    let id = caller.as_ref().map_or("-", Caller::id).to_string();
    if let (Some(caller), true) = (&caller, method == axum::http::Method::POST) {
        if !caller.writes() {
            let mut response = read_only(caller).into_response();
            limits::headers(&state, &[], response.headers_mut());
            log(&method, &path, response.status(), &id, started);
            return response;
        }
    }
    let mut taken = Vec::new();
    if let (Some(caller), false) = (&caller, open) {
        match commit::take(&state, caller.id(), Limit::RequestsPerSecond, 1).await {
            Ok(t) => taken.push(t),
            Err(refusal) => {
                if let Some(signature) = &signature {
                    // Not taken: the platform's retry of it is not a replay.
                    state.signatures.forget(signature);
                }
                taken.extend(refusal.taken.as_deref().copied());
                let mut response = refusal.into_response();
                limits::headers(&state, &taken, response.headers_mut());
                log(&method, &path, response.status(), &id, started);
                return response;
            }
        }
    }
    if let Some(caller) = caller {
        request.extensions_mut().insert(caller);
    }
    let mut response = next.run(request).await;
    if let (Some(signature), false) = (&signature, response.status().is_success()) {
        // Not taken: the platform's retry of it is not a replay.
        state.signatures.forget(signature);
    }
    taken.extend(response.extensions_mut().remove::<Charged>());
    limits::headers(&state, &taken, response.headers_mut());
    log(&method, &path, response.status(), &id, started);
    response
}

/// The token a request presents, as an `Authorization` value: its bearer
/// token, or — for the hooks of platforms that cannot send one — Cloudflare's
/// `cf-webhook-auth` secret or a `token` query parameter. (Only the path is
/// ever logged, never the query.)
fn presented_token(request: &Request) -> Option<Vec<u8>> {
    let headers = request.headers();
    if let Some(v) = headers.get(header::AUTHORIZATION) {
        return Some(v.as_bytes().to_vec());
    }
    if !request.uri().path().starts_with("/v1/hooks/") {
        return None;
    }
    if let Some(v) = headers.get("cf-webhook-auth") {
        return Some([b"Bearer ".as_slice(), v.as_bytes()].concat());
    }
    let query = request.uri().query()?;
    let (_, token) = url::form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "token")?;
    Some(format!("Bearer {token}").into_bytes())
}

fn log(method: &axum::http::Method, path: &str, status: StatusCode, id: &str, started: std::time::Instant) {
    tracing::info!("{method} {path} {} token={id} {} ms", status.as_u16(), started.elapsed().as_millis());
}

fn unauthorized(unknown: Unknown) -> Refusal {
    let message = match unknown {
        Unknown::Missing => "no bearer token: send `Authorization: Bearer TOKEN`",
        Unknown::Wrong => "the bearer token is not one of [[serve.token]]",
    };
    Refusal::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
        .hint("use the token of a [[serve.token]] of indexq's configuration")
}

fn read_only(caller: &Caller) -> Refusal {
    Refusal::new(
        StatusCode::FORBIDDEN,
        ErrorCode::Forbidden,
        format!("token `{}` has scope = \"read\": it reads its properties and writes nothing", caller.id()),
    )
    .hint("use a token of scope = \"write\" (the default) for this endpoint")
}

/// The settings as `caller` sees them: only its properties, or all of
/// them for anyone (no token configured, or public metrics).
fn seen_by(state: &State, caller: Option<&Caller>) -> Option<crate::config::Settings> {
    caller.and_then(Caller::properties).map(|own| state.settings.narrowed(own))
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Ready when the ledger answers and the process is not stopping.
async fn readyz(axum::extract::State(state): axum::extract::State<Arc<State>>) -> Result<Json<Health>, Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    let s = state.clone();
    blocking(move || {
        let mut ledger = s.ledger.lock().map_err(|_| anyhow::anyhow!("the intake's ledger connection failed"))?;
        crate::ledger::open::follow_ledger_clock(ledger.as_mut(), &s.clock, false)?;
        Ok(())
    })
    .await
    .map_err(|e| Refusal::ledger(&e))?;
    Ok(Json(Health { status: "ready" }))
}

/// `POST /v1/urls`: `202` once every URL is in the ledger, with what the
/// ledger made of each.
async fn post_urls(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Extension<Charged>, Json<intake::Admitted>), Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    let body = body.map_err(|r| body_refusal(&r, &state))?;
    let submission = intake::read(content_type(&headers).as_deref(), &body)?;
    take_urls(&state, &caller, submission).await
}

/// Runs ledger work off the runtime's threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| anyhow::anyhow!("the ledger's task failed: {e}"))?
}

async fn not_found() -> Refusal {
    Refusal::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such endpoint").hint(
        "the endpoints: POST /v1/urls, POST /v1/sources, GET /v1/budget, GET /v1/queue, GET /metrics, GET \
             /healthz, GET /readyz; the webhooks POST /v1/hooks/url, /v1/hooks/ghost/{event}, /v1/hooks/netlify, \
             /v1/hooks/vercel, /v1/hooks/cloudflare-pages; GET and POST /indexnow with `[serve] indexnow = true`",
    )
}

async fn method_not_allowed() -> Refusal {
    Refusal::new(StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed, "this endpoint does not take that method")
}

/// Runs `read` on the intake's ledger connection, on the ledger's clock.
async fn on_ledger<T: Send + 'static>(
    state: &Arc<State>,
    read: impl FnOnce(&State, &mut dyn crate::ledger::Ledger, chrono::DateTime<chrono::Utc>) -> anyhow::Result<T>
        + Send
        + 'static,
) -> Result<T, Refusal> {
    let s = state.clone();
    blocking(move || {
        let mut ledger = s.ledger.lock().map_err(|_| anyhow::anyhow!("the intake's ledger connection failed"))?;
        crate::ledger::open::follow_ledger_clock(ledger.as_mut(), &s.clock, false)?;
        let now = s.clock.now();
        read(&s, ledger.as_mut(), now)
    })
    .await
    .map_err(|e| Refusal::ledger(&e))
}

/// `GET /v1/budget`: what `status --json` says, of the caller's properties.
async fn get_budget(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, Refusal> {
    let narrowed = seen_by(&state, Some(&caller));
    let doc = on_ledger(&state, move |s, ledger, now| {
        let settings = narrowed.as_ref().unwrap_or(&s.settings);
        let (doc, _, _) = crate::documents::status::document(settings, ledger, now, s.user_tz)?;
        Ok(serde_json::to_value(doc)?)
    })
    .await?;
    Ok(Json(doc).into_response())
}

/// `GET /v1/queue`: what `queue list --json` says, with its filters as
/// query parameters (`state`, `property`, `engine`, `endpoint`, `url`, `limit`),
/// of the caller's properties.
async fn get_queue(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(caller): Extension<Caller>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    let filter = QueueQuery::parse(uri.query().unwrap_or_default())?.filter();
    if let Some(asked) = filter.property.as_deref().filter(|p| !caller.may_read(p)) {
        return Err(unknown_property(&state, &caller, asked));
    }
    let own = match filter.property {
        Some(_) => None,
        None => caller.properties().map(<[String]>::to_vec),
    };
    let doc = on_ledger(&state, move |s, ledger, now| match own {
        Some(own) => crate::documents::queue_list::document_of(ledger, &filter, &own, now, s.user_tz),
        None => crate::documents::queue_list::document(ledger, &filter, now, s.user_tz),
    })
    .await?;
    Ok(Json(doc).into_response())
}

/// `GET /metrics`: what `status --format prometheus` says, of the
/// caller's properties (every one when public and asked without a token).
async fn get_metrics(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    caller: Option<Extension<Caller>>,
) -> Result<Response, Refusal> {
    let narrowed = seen_by(&state, caller.as_ref().map(|c| &c.0));
    let text = on_ledger(&state, move |s, ledger, now| {
        let settings = narrowed.as_ref().unwrap_or(&s.settings);
        let families = crate::metrics::gather(settings, ledger, now, None)?;
        let mut out = Vec::new();
        crate::metrics::render(&families, &mut out)?;
        Ok(out)
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response())
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SourcesJson {
    #[serde(default)]
    property: Option<String>,
}

/// `POST /v1/sources`: reads the configured sources now, with `--changed`
/// (all the caller may write, or `{"property": …}`); `202` once what they
/// hold is in the ledger.
async fn post_sources(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<crate::pipeline::SourcesRead>), Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    let body = body.map_err(|r| body_refusal(&r, &state))?;
    let asked: SourcesJson = match content_type(&headers).as_deref() {
        _ if body.iter().all(u8::is_ascii_whitespace) => SourcesJson::default(),
        Some("application/json") => serde_json::from_slice(&body).map_err(|e| {
            Refusal::bad_request(format!("the body is not the JSON this endpoint takes: {e}"))
                .hint(r#"send no body (every property), or {"property": "NAME"}"#)
        })?,
        _ => {
            return Err(Refusal::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UnsupportedMediaType,
                "this endpoint takes no body, or application/json",
            ))
        }
    };
    super::hooks::read_sources(&state, &caller, asked.property).await.map(|read| (StatusCode::ACCEPTED, Json(read)))
}
