//! The IndexNow protocol, spoken by `serve` (`[serve] indexnow = true`), as
//! indexnow.org/documentation writes it: `GET /indexnow?url=…&key=…
//! [&keyLocation=…]` for one URL, `POST /indexnow` with `{"host", "key",
//! "keyLocation", "urlList"}` (JSON) for up to 10,000. An IndexNow client
//! (a CMS plugin, a library) pointed here puts its URLs under indexq's
//! budget and sends them to every engine of their property.
//!
//! A request is authenticated by the property's own IndexNow key, not by a
//! bearer token (the protocol has none): every URL must be under one
//! property's site, `key` must be that property's key (compared in constant
//! time) and a `keyLocation`, when given, must be where that property's key
//! is served. The key is public by design (its file is on the site), so it
//! proves no more than the protocol asks: the intake limits apply per
//! property, under the id `indexnow:NAME`, to every IndexNow request.
//!
//! Answers, as the protocol documents them: `202` once the URLs are in the
//! ledger, `400` for a request that is not the protocol's, `403` for a key
//! (or key location) that is not the property's, `422` for URLs not on
//! `host` or under no property and for a key outside the protocol's
//! schema, `429` with `Retry-After` over the intake limits.

use super::auth::Caller;
use super::commit::{self, take_urls};
use super::intake::{Admitted, Submission};
use super::limits::{Charged, Limit};
use super::refusal::{body_refusal, ErrorCode, Refusal};
use super::State;
use crate::config::ConfigError;
use crate::model::{Action, Position};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::{StatusCode, Uri};
use axum::{Extension, Json};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The most URLs one request carries (the protocol's own bound).
const MAX_URLS: usize = 10_000;

/// Each property's IndexNow key (its digest) and where it is served, read
/// once at the start.
pub(super) struct Keys {
    keys: Vec<PropertyKey>,
}

struct PropertyKey {
    property: String,
    digest: [u8; 32],
    location: url::Url,
}

impl Keys {
    /// The keys of every property with an `[property.indexnow]` table, when
    /// `[serve] indexnow = true` (none otherwise: nothing is read).
    pub(super) fn read(settings: &crate::config::Settings) -> Result<Keys, ConfigError> {
        let mut keys = Vec::new();
        if !settings.serve.indexnow {
            return Ok(Keys { keys });
        }
        for property in &settings.properties {
            let Some(table) = &property.indexnow else { continue };
            let key = crate::config::read_indexnow_key(table)?;
            let location = match &table.key_location {
                Some(location) => location.clone(),
                // Where the engines are told it is (the same default).
                None => crate::engines::indexnow::default_key_location(&property.site, key.expose()),
            };
            keys.push(PropertyKey {
                property: property.name.clone(),
                digest: Sha256::digest(key.expose().as_bytes()).into(),
                location,
            });
        }
        Ok(Keys { keys })
    }

    fn of(&self, property: &str) -> Option<&PropertyKey> {
        self.keys.iter().find(|k| k.property == property)
    }
}

/// What an IndexNow request asks, from either form.
struct Asked {
    host: Option<String>,
    key: String,
    key_location: Option<String>,
    urls: Vec<String>,
    /// Where each URL was read (`url`, `urlList[3]`).
    place: fn(usize) -> Position,
}

/// `POST /indexnow`'s body.
#[derive(Deserialize)]
struct PostJson {
    host: String,
    key: String,
    #[serde(rename = "keyLocation", default)]
    key_location: Option<String>,
    #[serde(rename = "urlList")]
    url_list: Vec<String>,
}

type Took = (StatusCode, Extension<Charged>, Json<Admitted>);

/// `GET /indexnow?url=…&key=…[&keyLocation=…]`: one URL.
pub(super) async fn get(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    uri: Uri,
) -> Result<Took, Refusal> {
    let (mut url, mut key, mut key_location) = (None, None, None);
    for (name, value) in url::form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "url" => url = Some(value.into_owned()),
            "key" => key = Some(value.into_owned()),
            "keyLocation" => key_location = Some(value.into_owned()),
            _ => {}
        }
    }
    let (Some(url), Some(key)) = (url, key) else {
        return Err(Refusal::bad_request("an IndexNow GET names `url` and `key`")
            .hint("GET /indexnow?url=URL&key=KEY[&keyLocation=URL], as indexnow.org/documentation writes it"));
    };
    let asked = Asked { host: None, key, key_location, urls: vec![url], place: |_| Position::of("url") };
    submit(&state, asked).await
}

/// `POST /indexnow` with `{"host", "key", "keyLocation", "urlList"}`.
pub(super) async fn post(
    axum::extract::State(state): axum::extract::State<Arc<State>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Took, Refusal> {
    let body = body.map_err(|r| body_refusal(&r, &state))?;
    let json: PostJson = serde_json::from_slice(&body).map_err(|e| {
        Refusal::bad_request(format!("the body is not IndexNow's JSON: {e}"))
            .hint(r#"send {"host": "HOST", "key": "KEY", "keyLocation": "URL", "urlList": ["https://HOST/…"]}"#)
    })?;
    let asked = Asked {
        host: Some(json.host),
        key: json.key,
        key_location: json.key_location,
        urls: json.url_list,
        place: |i| Position::of(format!("urlList[{i}]")),
    };
    submit(&state, asked).await
}

/// Checks an IndexNow request, then takes its URLs as `POST /v1/urls` does,
/// for the property whose key it holds.
async fn submit(state: &Arc<State>, asked: Asked) -> Result<Took, Refusal> {
    if state.stop.requested() {
        return Err(Refusal::shutting_down());
    }
    if asked.urls.is_empty() {
        return Err(Refusal::bad_request("`urlList` is empty"));
    }
    if asked.urls.len() > MAX_URLS {
        return Err(Refusal::bad_request(format!(
            "{} URLs: the protocol takes at most {MAX_URLS} a request",
            asked.urls.len()
        )));
    }
    if let Err(why) = crate::classify::check_indexnow_key(&asked.key) {
        return Err(Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::BadRequest, why));
    }
    let property = property_of(state, &asked)?;
    let caller = authenticate(state, &asked, &property)?;
    commit::take(state, caller.id(), Limit::RequestsPerSecond, 1).await?;
    let urls = asked.urls.into_iter().enumerate().map(|(i, u)| (u, (asked.place)(i))).collect();
    let submission = Submission { urls, action: Action::Updated, lastmod: None };
    take_urls(state, &caller, submission).await
}

/// The property whose site holds every URL (each on `host`, when given).
fn property_of(state: &State, asked: &Asked) -> Result<String, Refusal> {
    let mut found: Option<&str> = None;
    for url in &asked.urls {
        let parsed = url::Url::parse(url).map_err(|e| {
            Refusal::bad_request(format!("`{url}` is not a URL: {e}")).hint("send absolute http(s) URLs")
        })?;
        if let Some(host) = &asked.host {
            if !parsed.host_str().is_some_and(|h| h.eq_ignore_ascii_case(host.trim())) {
                return Err(not_on_host(format!("`{url}` is not on host `{host}`")));
            }
        }
        let Some(property) = state.settings.property_for(url) else {
            return Err(not_on_host(format!("`{url}` is under no site this server takes")));
        };
        match found {
            Some(name) if name != property.name => {
                return Err(not_on_host("the URLs are not all of one site".to_string())
                    .hint("send each site's URLs in a request of their own, with its key"))
            }
            _ => found = Some(&property.name),
        }
    }
    Ok(found.expect("at least one URL").to_string())
}

fn not_on_host(message: String) -> Refusal {
    Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, ErrorCode::InvalidUrls, message)
}

/// The caller an IndexNow request is taken as: the property's own, when
/// `key` (and `keyLocation`, when given) is that property's.
fn authenticate(state: &State, asked: &Asked, property: &str) -> Result<Caller, Refusal> {
    let forbidden = || {
        Refusal::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, "the key is not this site's IndexNow key")
            .hint("send the key of the property's [property.indexnow] table, and its key location or none")
    };
    let Some(held) = state.indexnow.of(property) else { return Err(forbidden()) };
    let presented: [u8; 32] = Sha256::digest(asked.key.as_bytes()).into();
    if !bool::from(held.digest.ct_eq(&presented)) {
        return Err(forbidden());
    }
    if let Some(location) = &asked.key_location {
        if url::Url::parse(location).ok().as_ref() != Some(&held.location) {
            return Err(forbidden());
        }
    }
    // The property's key lets its holder submit that property's URLs, nothing more.
    Ok(Caller::Token {
        id: format!("indexnow:{property}"),
        properties: vec![property.to_string()],
        scope: crate::config::TokenScope::Write,
    })
}
