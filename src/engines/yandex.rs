//! Yandex Webmaster API v4's recrawl queue: `POST
//! {endpoint}/v4/user/{user-id}/hosts/{host-id}/recrawl/queue` with
//! `{"url": …}`, one URL a request, `Authorization: OAuth <token>`. The user
//! id comes from `GET /v4/user`, the host id from the property's
//! `yandex.host_id` or from `GET /v4/user/{user-id}/hosts` by the property's
//! site; both are read once a run. `GET …/recrawl/quota` says what is left
//! without spending any, and every answer's `quota_remainder` says it again.

use super::{digest, exchange, network_answer, Answer, Batch, Engine, Received, Sent, StopSignal};
use crate::classify::{self, Verdict, YandexContext};
use crate::config::{ConfigError, Secret, Settings};
use crate::model::{Check, GroupKey, MisconfiguredReason, Period, StoredResponse, TransientReason};
use crate::redact::Redactor;
use async_trait::async_trait;
use serde::Deserialize;
use std::collections::HashMap;
use tokio::sync::Mutex;
use url::Url;

/// One URL a request: the recrawl queue takes a single `url`.
pub const MAX_BATCH: usize = 1;

/// What a property is known by: its site, and its host id when configured.
struct Site {
    site: Url,
    host_id: Option<String>,
}

/// `GET /v4/user`: `{"user_id": …}`.
#[derive(Deserialize)]
struct User {
    user_id: serde_json::Value,
}

/// `GET /v4/user/{user-id}/hosts`: `{"hosts": [{"host_id", "ascii_host_url", "verified", …}]}`.
#[derive(Deserialize)]
struct Hosts {
    hosts: Vec<Host>,
}

#[derive(Deserialize)]
struct Host {
    host_id: String,
    ascii_host_url: String,
    verified: bool,
}

/// Where a property's requests go, once found.
#[derive(Clone)]
struct Target {
    user_id: String,
    host_id: String,
}

pub struct Yandex {
    client: reqwest::Client,
    endpoint: Url,
    token: Secret,
    sites: HashMap<String, Site>,
    /// The token's user, once read.
    user: Mutex<Option<String>>,
    /// Property name → its target, once found.
    targets: Mutex<HashMap<String, Target>>,
    redactor: Redactor,
}

/// Why a property's target could not be found: the verdict, and the
/// response that said it (if any).
type NoTarget = (Verdict, Option<Received>);

impl Yandex {
    /// Reads the token (a missing token is a configuration error: nothing is sent).
    pub fn new(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Result<Yandex, ConfigError> {
        let source = settings.yandex.token.as_ref().ok_or_else(|| ConfigError {
            place: format!("{}: `yandex`", settings.file.display()),
            message: "a property uses Yandex but [yandex] has no token_env or token_file".into(),
            hint: Some("add token_env = \"YANDEX_OAUTH_TOKEN\" to [yandex] and export the OAuth token".into()),
        })?;
        let token = source.read()?;
        redactor.add(token.expose());
        let sites = settings
            .properties
            .iter()
            .filter_map(|p| {
                let y = p.yandex.as_ref()?;
                Some((p.name.clone(), Site { site: p.site.clone(), host_id: y.host_id.clone() }))
            })
            .collect();
        Ok(Yandex {
            client,
            endpoint: settings.yandex.endpoint.clone(),
            token,
            sites,
            user: Mutex::new(None),
            targets: Mutex::new(HashMap::new()),
            redactor: redactor.clone(),
        })
    }

    /// `{endpoint}/v4/{path}`.
    fn url(&self, path: &str) -> Url {
        let mut url = self.endpoint.clone();
        let joined = format!("{}/v4/{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
        url
    }

    fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.client
            .request(method, url)
            .header(reqwest::header::AUTHORIZATION, format!("OAuth {}", self.token.expose()))
    }

    /// GETs `url` and reads it as `T`; a refusal is classified as a send's.
    async fn read<T: for<'de> Deserialize<'de>>(&self, url: Url, ctx: &YandexContext<'_>) -> Result<T, NoTarget> {
        let r = match exchange(self.request(reqwest::Method::GET, url)).await {
            Ok(r) => r.redacted(&self.redactor),
            Err(e) => return Err((network_answer(&e, &self.redactor).verdict, None)),
        };
        if r.status == 200 {
            if let Ok(value) = serde_json::from_str::<T>(r.body.trim()) {
                return Ok(value);
            }
            let verdict = Verdict::new(
                TransientReason::ServerError,
                format!(
                    "Yandex answered HTTP 200 with a body indexq cannot read (response: {}); nothing was sent, \
                     indexq retries with backoff.",
                    classify::excerpt(&r.body)
                ),
            );
            return Err((verdict, Some(r)));
        }
        let verdict = classify::yandex(&r.response(), ctx);
        Err((verdict, Some(r)))
    }

    /// The token's user id (`GET /v4/user`), read once.
    async fn user_id(&self) -> Result<String, NoTarget> {
        let mut user = self.user.lock().await;
        if let Some(id) = user.as_ref() {
            return Ok(id.clone());
        }
        let ctx = YandexContext { user_id: "?", host_id: "?" };
        let read: User = self.read(self.url("user"), &ctx).await?;
        let id = read.user_id.to_string().trim_matches('"').to_string();
        *user = Some(id.clone());
        Ok(id)
    }

    /// Where `property`'s requests go: its host id as configured, else the
    /// host of the user's list whose `ascii_host_url` is the site's origin
    /// (verified, or the answer says it is not).
    async fn target(&self, property: &str) -> Result<Target, NoTarget> {
        if let Some(t) = self.targets.lock().await.get(property) {
            return Ok(t.clone());
        }
        let site = &self.sites[property];
        let user_id = self.user_id().await?;
        let host_id = match &site.host_id {
            Some(id) => id.clone(),
            None => {
                let ctx = YandexContext { user_id: &user_id, host_id: "?" };
                let hosts: Hosts = self.read(self.url(&format!("user/{user_id}/hosts")), &ctx).await?;
                let origin = site.site.origin();
                let found =
                    hosts.hosts.into_iter().find(|h| Url::parse(&h.ascii_host_url).is_ok_and(|u| u.origin() == origin));
                let origin = origin.ascii_serialization();
                match found {
                    None => {
                        return Err((
                            Verdict::misconfigured(
                                MisconfiguredReason::HostNotVerified,
                                format!(
                                    "Yandex lists no site {origin} among the hosts of this token's user {user_id}."
                                ),
                                format!(
                                    "Add and verify {origin} in Yandex Webmaster for the user of the OAuth token, \
                                     or set the property's `yandex.host_id` to the host as Yandex lists it \
                                     (`https:example.com:443`)."
                                ),
                            ),
                            None,
                        ))
                    }
                    Some(h) if !h.verified => {
                        return Err((
                            Verdict::misconfigured(
                                MisconfiguredReason::HostNotVerified,
                                format!("Yandex lists {} ({origin}) as not verified for this token's user.", h.host_id),
                                format!(
                                    "Verify {origin} in Yandex Webmaster (the site → Settings → Access rights) \
                                     for the user of the OAuth token."
                                ),
                            ),
                            None,
                        ))
                    }
                    Some(h) => h.host_id,
                }
            }
        };
        let target = Target { user_id, host_id };
        self.targets.lock().await.insert(property.to_string(), target.clone());
        Ok(target)
    }

    fn host_path(t: &Target, rest: &str) -> String {
        format!("user/{}/hosts/{}/{rest}", t.user_id, t.host_id)
    }

    /// What Yandex says of the property's recrawl day, `(daily_quota,
    /// quota_remainder)`, spending none of it: the user and the host found
    /// (the host verified), or the verdict on what kept it from being read.
    pub async fn quota(&self, property: &str) -> Result<(u64, u64), Verdict> {
        let t = self.target(property).await.map_err(|(v, _)| v.redacted_with(&self.redactor))?;
        let ctx = YandexContext { user_id: &t.user_id, host_id: &t.host_id };
        let url = self.url(&Self::host_path(&t, "recrawl/quota"));
        let r = match exchange(self.request(reqwest::Method::GET, url)).await {
            Ok(r) => r.redacted(&self.redactor),
            Err(e) => return Err(network_answer(&e, &self.redactor).verdict),
        };
        classify::yandex_quota(&r.response(), &ctx).map_err(|v| v.redacted_with(&self.redactor))
    }

    async fn recrawl(&self, property: &str, url: &str) -> Answer {
        let t = match self.target(property).await {
            Ok(t) => t,
            Err((verdict, r)) => {
                // Nothing went to the queue: its budget is given back.
                let response = r.map_or_else(StoredResponse::default, |r| StoredResponse {
                    http_status: Some(r.status),
                    body: Some(r.body).filter(|b| !b.is_empty()),
                });
                let verdict = verdict.redacted_with(&self.redactor);
                return Answer { verdict, response, reached: false, skipped: false };
            }
        };
        let body = serde_json::json!({ "url": url });
        let request = self
            .request(reqwest::Method::POST, self.url(&Self::host_path(&t, "recrawl/queue")))
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
            .body(body.to_string());
        tracing::debug!(host = t.host_id, "POST Yandex recrawl/queue");
        match exchange(request).await {
            Err(e) => network_answer(&e, &self.redactor),
            Ok(r) => {
                let r = r.redacted(&self.redactor);
                let verdict =
                    classify::yandex(&r.response(), &YandexContext { user_id: &t.user_id, host_id: &t.host_id });
                Answer::received(verdict, &r, &self.redactor)
            }
        }
    }
}

#[async_trait]
impl Engine for Yandex {
    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn fingerprint(&self, group: &GroupKey) -> String {
        let host = self.sites.get(&group.property).and_then(|s| s.host_id.as_deref()).unwrap_or_default();
        digest(&[self.token.expose(), host, self.endpoint.as_str()])
    }

    fn credential(&self, _group: &GroupKey) -> Option<String> {
        None
    }

    async fn send(&self, group: &GroupKey, batch: &Batch, stop_signal: &StopSignal) -> Sent {
        let urls = &batch.urls;
        if !self.sites.contains_key(&group.property) {
            return Sent::unconfigured("Yandex", &group.property, urls.len());
        }
        let mut sent = Sent { answers: Vec::new(), per_url: Vec::new() };
        for url in urls {
            let answer = if stop_signal.stopping() {
                Answer::not_sent_on_stop()
            } else {
                stop_signal
                    .within_grace(self.recrawl(&group.property, url))
                    .await
                    .unwrap_or_else(Answer::unanswered_on_stop)
            };
            sent.per_url.push(sent.answers.len());
            sent.answers.push(answer);
        }
        sent
    }

    async fn reported_quota(&self, group: &GroupKey) -> Option<Result<Vec<(Period, u64)>, String>> {
        self.sites.get(&group.property)?;
        Some(self.quota(&group.property).await.map(|(_, left)| vec![(Period::Day, left)]).map_err(|v| v.message))
    }

    async fn check(&self, group: &GroupKey, check: Check) -> Option<Result<String, String>> {
        if check != Check::ApiKey {
            return None;
        }
        self.sites.get(&group.property)?;
        // A fix is read again from Yandex, not from what this run found.
        *self.user.lock().await = None;
        self.targets.lock().await.remove(&group.property);
        Some(match self.quota(&group.property).await {
            Ok((daily, left)) => Ok(format!(
                "Yandex takes the token, the user and the host now (its recrawl quota was read: {left} of {daily} left)"
            )),
            Err(verdict) => Err(verdict.message),
        })
    }
}
