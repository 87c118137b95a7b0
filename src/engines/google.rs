//! Google Indexing API: an OAuth2 service account (RS256 JWT exchanged at
//! the key file's `token_uri`; one token per run, refreshed before expiry,
//! held in memory only; the assertion and every token are given to the
//! shared `Redactor` before they are sent or used),
//! `urlNotifications:publish` one URL a request with at most 4 in flight at
//! the paced slots the ledger handed out, a 401 answered by one token
//! refresh, and — for properties with `skip_indexed` — the URL Inspection
//! API first for a `URL_UPDATED` (never for a `URL_DELETED`: a removal is
//! always announced), so an indexed URL spends no publish quota. An
//! inspection's answer is classified like any answer and kept for the run
//! (`Engine::inspections`); whatever it is, the URL is published unless
//! Google said it is indexed, and a quota or a refusal stops the property's
//! inspections for the rest of the run. A token endpoint that refuses the
//! key makes every Google item of the run `misconfigured`, and nothing is
//! sent. A sitemap group's item goes to Search Console instead
//! (`sitemaps.submit`: a PUT without a body at `inspection_endpoint`, the
//! property's `site_url` and the sitemap each one percent-encoded path
//! segment), unpaced; `sitemaps.get` reads what Search Console made of it
//! and `sitemaps.list` (`doctor`) what the property has. The token asks for
//! the scopes the properties' channels need (`scopes`).

use super::{digest, exchange, network_answer, Answer, Batch, Engine, Inspected, Sent, StopSignal};
use crate::classify::{self, GoogleContext, GoogleTokenContext, InspectionContext, SitemapsContext, Verdict};
use crate::config::{ConfigError, Settings};
use crate::model::{AcceptedReason, Class, MisconfiguredReason, Reason, TransientReason};
use crate::model::{Action, Channel, Check, GroupKey, SitemapRead, SitemapReading, StoredResponse};
use crate::redact::Redactor;
use async_trait::async_trait;
use chrono::TimeDelta;
use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use url::Url;

pub const SCOPE_INDEXING: &str = "https://www.googleapis.com/auth/indexing";
pub const SCOPE_INSPECTION: &str = "https://www.googleapis.com/auth/webmasters.readonly";
/// Search Console read and write: `sitemaps.submit` needs it (and it covers
/// what the read-only scope allows: URL inspection, `sitemaps.get`).
pub const SCOPE_WEBMASTERS: &str = "https://www.googleapis.com/auth/webmasters";
/// Requests in flight at once.
pub const IN_FLIGHT: usize = 4;
/// A token is refreshed this long before it expires.
const REFRESH_MARGIN: Duration = Duration::from_secs(120);

/// The fields indexq reads from a service-account key file.
#[derive(Deserialize)]
struct RawKeyFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    project_id: Option<String>,
    private_key_id: Option<String>,
    private_key: Option<String>,
    client_email: Option<String>,
    token_uri: Option<String>,
}

/// A parsed service-account key. Its `Debug` never shows the key.
pub struct ServiceAccount {
    pub project_id: String,
    pub client_email: String,
    pub key_id: String,
    pub token_uri: Url,
    key: jsonwebtoken::EncodingKey,
}

impl fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("project_id", &self.project_id)
            .field("client_email", &self.client_email)
            .field("key_id", &self.key_id)
            .field("token_uri", &self.token_uri.as_str())
            .finish_non_exhaustive()
    }
}

/// The key file in use: `[google] credentials`, else `$GOOGLE_APPLICATION_CREDENTIALS`.
pub fn key_file_path(settings: &Settings) -> Result<std::path::PathBuf, ConfigError> {
    settings
        .google
        .credentials
        .clone()
        .or_else(|| std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS").filter(|v| !v.is_empty()).map(Into::into))
        .ok_or_else(|| ConfigError {
            place: format!("{}: `google.credentials`", settings.file.display()),
            message: "a property uses Google but no service-account key file is configured".into(),
            hint: Some(
                "set `credentials = \"service-account.json\"` under [google], or export GOOGLE_APPLICATION_CREDENTIALS"
                    .into(),
            ),
        })
}

impl ServiceAccount {
    /// Reads and checks a key file. Errors name the file and the field,
    /// never the key.
    pub fn load(path: &Path) -> Result<ServiceAccount, ConfigError> {
        let err = |field: &str, message: String, hint: &str| ConfigError {
            place: if field.is_empty() { path.display().to_string() } else { format!("{}: `{field}`", path.display()) },
            message,
            hint: Some(hint.to_string()),
        };
        let fresh_key =
            "create a JSON key for the service account in the Google Cloud console (IAM → Service accounts → Keys)";
        let text = std::fs::read_to_string(path)
            .map_err(|e| err("", format!("cannot read the service-account key file: {e}"), fresh_key))?;
        let raw: RawKeyFile = serde_json::from_str(&text).map_err(|e| {
            err(
                "",
                format!("the service-account key file is not JSON (line {}, column {})", e.line(), e.column()),
                fresh_key,
            )
        })?;
        match raw.kind.as_deref() {
            Some("service_account") => {}
            other => {
                return Err(err(
                    "type",
                    format!("the key file is of type {other:?}, not \"service_account\""),
                    "the Indexing API needs a service-account key, not a user or external-account credential",
                ))
            }
        }
        let need = |value: Option<String>, field: &str| {
            value.filter(|v| !v.trim().is_empty()).ok_or_else(|| err(field, format!("`{field}` is missing"), fresh_key))
        };
        let private_key = need(raw.private_key, "private_key")?;
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(private_key.as_bytes())
            .map_err(|_| err("private_key", "the private key is not an RSA key in PEM form".into(), fresh_key))?;
        let token_uri_text = need(raw.token_uri, "token_uri")?;
        let token_uri = Url::parse(&token_uri_text)
            .map_err(|e| err("token_uri", format!("`{token_uri_text}` is not a URL: {e}"), fresh_key))?;
        if !(token_uri.scheme() == "https" || (token_uri.scheme() == "http" && crate::net::is_loopback(&token_uri))) {
            return Err(err(
                "token_uri",
                format!("`{token_uri}` must be https:// (http:// only on loopback, for tests)"),
                "use Google's https://oauth2.googleapis.com/token",
            ));
        }
        Ok(ServiceAccount {
            project_id: need(raw.project_id, "project_id")?,
            client_email: need(raw.client_email, "client_email")?,
            key_id: need(raw.private_key_id, "private_key_id")?,
            token_uri,
            key,
        })
    }

    /// The signed assertion for the token request.
    fn assertion(&self, scope: &str) -> Result<String, String> {
        #[derive(serde::Serialize)]
        struct Claims<'a> {
            iss: &'a str,
            scope: &'a str,
            aud: &'a str,
            iat: i64,
            exp: i64,
        }
        let iat = crate::clock::wall_now().timestamp();
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(self.key_id.clone());
        let claims = Claims { iss: &self.client_email, scope, aud: self.token_uri.as_str(), iat, exp: iat + 3600 };
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(|e| format!("cannot sign the token request: {e}"))
    }
}

struct Token {
    value: String,
    refresh_at: Instant,
}

/// The token, or why there is none.
enum TokenState {
    None,
    Valid(Token),
    /// The token endpoint refused the key: every Google item of the run gets this.
    Refused(Verdict, StoredResponse),
}

struct Site {
    site_url: String,
    skip_indexed: bool,
}

/// The scopes a token needs for what the properties use: the Indexing API
/// for properties that publish URLs, Search Console read-write for those
/// that submit sitemaps (which covers URL inspection), else read-only for
/// those that inspect URLs (`skip_indexed`).
pub fn scopes(settings: &Settings) -> String {
    let tables: Vec<&crate::config::PropertyGoogle> =
        settings.properties.iter().filter_map(|p| p.google.as_ref()).collect();
    let sitemaps =
        settings.properties.iter().any(|p| !p.submitted_sitemaps(crate::model::EngineKind::Google).is_empty());
    let mut scopes = Vec::new();
    if tables.iter().any(|g| g.indexing) {
        scopes.push(SCOPE_INDEXING);
    }
    if sitemaps {
        scopes.push(SCOPE_WEBMASTERS);
    } else if tables.iter().any(|g| g.skip_indexed) {
        scopes.push(SCOPE_INSPECTION);
    }
    scopes.join(" ")
}

/// A path segment of a Search Console URL: every byte but RFC 3986's
/// unreserved characters percent-encoded, as Google's client libraries
/// send `siteUrl` and `feedpath` (`https%3A%2F%2Fexample.com%2F`,
/// `sc-domain%3Aexample.com`).
pub fn path_segment(text: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    percent_encoding::utf8_percent_encode(text, SEGMENT).to_string()
}

pub struct Google {
    client: reqwest::Client,
    account: ServiceAccount,
    endpoint: Url,
    inspection_endpoint: Url,
    scope: String,
    interval: TimeDelta,
    sites: HashMap<String, Site>,
    token: Mutex<TokenState>,
    redactor: Redactor,
    /// Per property: the inspections of this run not taken yet by
    /// `Engine::inspections`, and the answer (a quota, a refusal) that
    /// stopped its inspections for the rest of the run, if one did.
    inspections: std::sync::Mutex<HashMap<String, PropertyInspections>>,
    /// Held by an inspection of a property none of whose inspections has
    /// been answered yet in this run (see [`Google::inspected_first`]).
    first_inspection: Mutex<()>,
}

#[derive(Default)]
struct PropertyInspections {
    made: Vec<Inspected>,
    stopped: Option<(Verdict, Option<u16>)>,
    /// An inspection of this run was answered without a refusal: the
    /// property's inspections may go side by side.
    answered: bool,
}

/// An answer without an HTTP response of its own (token failures).
fn unsent(verdict: Verdict, response: StoredResponse) -> Answer {
    Answer { verdict, response, reached: false, skipped: false }
}

impl Google {
    pub fn new(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Result<Google, ConfigError> {
        let account = ServiceAccount::load(&key_file_path(settings)?)?;
        let sites: HashMap<String, Site> = settings
            .properties
            .iter()
            .filter_map(|p| {
                p.google
                    .as_ref()
                    .map(|g| (p.name.clone(), Site { site_url: g.site_url.clone(), skip_indexed: g.skip_indexed }))
            })
            .collect();
        let scope = scopes(settings);
        let per_minute = i64::from(settings.google.requests_per_minute.max(1));
        Ok(Google {
            client,
            account,
            endpoint: settings.google.endpoint.clone(),
            inspection_endpoint: settings.google.inspection_endpoint.clone(),
            scope,
            interval: TimeDelta::milliseconds(60_000 / per_minute),
            sites,
            token: Mutex::new(TokenState::None),
            redactor: redactor.clone(),
            inspections: std::sync::Mutex::new(HashMap::new()),
            first_inspection: Mutex::new(()),
        })
    }

    fn api(&self, base: &Url, path: &str) -> Url {
        let mut url = base.clone();
        let joined = format!("{}{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
        url
    }

    /// A valid token: the one held, or a new one (`refresh` forces it).
    async fn token(&self, refresh: bool) -> Result<String, Answer> {
        let mut state = self.token.lock().await;
        match &*state {
            TokenState::Refused(verdict, response) => return Err(unsent(verdict.clone(), response.clone())),
            TokenState::Valid(t) if !refresh && Instant::now() < t.refresh_at => return Ok(t.value.clone()),
            _ => {}
        }
        let assertion = match self.account.assertion(&self.scope) {
            Ok(a) => a,
            Err(why) => {
                let verdict = Verdict::misconfigured(
                    MisconfiguredReason::BadKey,
                    why,
                    "create a new JSON key for the service account",
                );
                *state = TokenState::Refused(verdict.clone(), StoredResponse::default());
                return Err(unsent(verdict, StoredResponse::default()));
            }
        };
        // A signed assertion is a credential for about an hour: whatever
        // echoes it (a token endpoint's error) is masked from now on.
        self.redactor.add(&assertion);
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion.as_str())];
        tracing::debug!(token_uri = %self.account.token_uri, "requesting a Google access token");
        let r = match exchange(self.client.post(self.account.token_uri.clone()).form(&form)).await {
            Ok(r) => r,
            Err(e) => {
                let mut answer = network_answer(&e, &self.redactor);
                answer.reached = false;
                answer.verdict.message = format!("getting a Google access token: {}", answer.verdict.message);
                return Err(answer);
            }
        };
        #[derive(Deserialize)]
        struct TokenBody {
            access_token: String,
            expires_in: Option<u64>,
        }
        let token = serde_json::from_str::<TokenBody>(&r.body);
        // Every token obtained is masked — in this engine's redactor and in
        // every clone of it — before it is used, or anything is quoted.
        if let Ok(body) = &token {
            self.redactor.add(&body.access_token);
        }
        let r = r.redacted(&self.redactor);
        let ctx = GoogleTokenContext { client_email: &self.account.client_email, key_id: &self.account.key_id };
        let verdict = classify::google_token(&r.response(), &ctx).redacted_with(&self.redactor);
        let response = StoredResponse { http_status: Some(r.status), body: Some(r.body.clone()) };
        match (verdict.class(), token) {
            (Class::Accepted, Ok(body)) => {
                let lifetime = Duration::from_secs(body.expires_in.unwrap_or(3600));
                let value = body.access_token;
                *state = TokenState::Valid(Token {
                    value: value.clone(),
                    refresh_at: Instant::now() + lifetime.saturating_sub(REFRESH_MARGIN),
                });
                Ok(value)
            }
            (Class::Accepted, Err(_)) => Err(unsent(
                Verdict::new(TransientReason::TokenUnreadable, "the token endpoint answered 200 without a token"),
                StoredResponse { http_status: Some(r.status), body: None },
            )),
            (Class::Misconfigured, _) => {
                *state = TokenState::Refused(verdict.clone(), response.clone());
                Err(unsent(verdict, response))
            }
            _ => Err(unsent(verdict, StoredResponse { http_status: Some(r.status), body: None })),
        }
    }

    /// `doctor`: obtains a token (no publish, no inspection). The error is
    /// the verdict every Google item would get.
    pub async fn check_token(&self) -> Result<(), Verdict> {
        self.token(false).await.map(|_| ()).map_err(|answer| answer.verdict)
    }

    /// The service account in use (for `doctor`).
    pub fn account(&self) -> &ServiceAccount {
        &self.account
    }

    /// POSTs JSON with the bearer token; a 401 refreshes the token once and
    /// retries. The response comes back redacted.
    async fn call(&self, url: &Url, body: &serde_json::Value) -> Result<super::Received, Answer> {
        self.request(reqwest::Method::POST, url, Some(body)).await
    }

    /// Sends `method` to `url` with the bearer token (and `body` as JSON, if
    /// any; none is an empty body); a 401 refreshes the token once and
    /// retries. The response comes back redacted.
    async fn request(
        &self,
        method: reqwest::Method,
        url: &Url,
        body: Option<&serde_json::Value>,
    ) -> Result<super::Received, Answer> {
        let mut refreshed = false;
        loop {
            let token = self.token(refreshed).await?;
            let request = self.client.request(method.clone(), url.clone()).bearer_auth(&token);
            let request = match body {
                Some(body) => request
                    .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
                    .body(body.to_string()),
                // Search Console's PUT takes no body: an explicit empty one.
                None => request.header(reqwest::header::CONTENT_LENGTH, "0"),
            };
            match exchange(request).await {
                Ok(r) if r.status == 401 && !refreshed => refreshed = true,
                Ok(r) => return Ok(r.redacted(&self.redactor)),
                Err(e) => return Err(network_answer(&e, &self.redactor)),
            }
        }
    }

    /// `…/webmasters/v3/sites/{siteUrl}/sitemaps[/{feedpath}]` on the Search
    /// Console endpoint (`inspection_endpoint`, which serves both APIs),
    /// each encoded as one path segment.
    fn sitemaps_url(&self, site_url: &str, sitemap: Option<&str>) -> Url {
        let mut path = format!("/webmasters/v3/sites/{}/sitemaps", path_segment(site_url));
        if let Some(sitemap) = sitemap {
            path.push('/');
            path.push_str(&path_segment(sitemap));
        }
        self.api(&self.inspection_endpoint, &path)
    }

    fn sitemaps_context<'a>(&'a self, site_url: &'a str, sitemap: &'a str) -> SitemapsContext<'a> {
        SitemapsContext {
            sitemap,
            site_url,
            client_email: &self.account.client_email,
            project_id: &self.account.project_id,
        }
    }

    /// Submits `sitemap` to Search Console for `site_url` (`sitemaps.submit`:
    /// a PUT without a body).
    async fn submit_sitemap(&self, site_url: &str, sitemap: &str) -> Answer {
        let url = self.sitemaps_url(site_url, Some(sitemap));
        tracing::debug!(site_url, sitemap, "PUT Search Console sitemaps.submit");
        let r = match self.request(reqwest::Method::PUT, &url, None).await {
            Ok(r) => r,
            Err(answer) => return answer,
        };
        let verdict = classify::search_console_submit(&r.response(), &self.sitemaps_context(site_url, sitemap));
        Answer::received(verdict, &r, &self.redactor)
    }

    /// Search Console's report on `sitemap` of `site_url` (`sitemaps.get`),
    /// or what kept it from being read.
    pub async fn sitemap_report(&self, site_url: &str, sitemap: &str) -> SitemapRead {
        let url = self.sitemaps_url(site_url, Some(sitemap));
        match self.request(reqwest::Method::GET, &url, None).await {
            Ok(r) => {
                let resp = r.response();
                match classify::search_console_report(&resp, &self.sitemaps_context(site_url, sitemap)) {
                    Ok(reading) => SitemapRead::Read(reading),
                    Err(verdict) => {
                        SitemapRead::Failed(super::read_failure(verdict.redacted_with(&self.redactor), Some(r.status)))
                    }
                }
            }
            Err(answer) => SitemapRead::Failed(super::read_failure(answer.verdict, answer.response.http_status)),
        }
    }

    /// The sitemaps Search Console lists for `site_url` (`sitemaps.list`;
    /// `doctor`: it needs what `sitemaps.submit` needs of the property, and
    /// submits nothing), or the answer that refused them.
    pub async fn list_sitemaps(&self, site_url: &str) -> Result<Vec<(String, SitemapReading)>, Verdict> {
        let url = self.sitemaps_url(site_url, None);
        match self.request(reqwest::Method::GET, &url, None).await {
            Ok(r) => {
                let resp = r.response();
                classify::search_console_list(&resp, &self.sitemaps_context(site_url, ""))
                    .map_err(|v| v.redacted_with(&self.redactor))
            }
            Err(answer) => Err(answer.verdict),
        }
    }

    /// The URL Inspection API's answer for `url` in `site_url`, classified.
    pub async fn inspect(&self, site_url: &str, url: &str) -> Inspected {
        let endpoint = self.api(&self.inspection_endpoint, "/v1/urlInspection/index:inspect");
        let body = serde_json::json!({ "inspectionUrl": url, "siteUrl": site_url });
        let (verdict, http_status, reached) = match self.call(&endpoint, &body).await {
            Ok(r) => {
                let ctx = InspectionContext {
                    url,
                    site_url,
                    client_email: &self.account.client_email,
                    project_id: &self.account.project_id,
                };
                let resp = r.response();
                (classify::google_inspection(&resp, &ctx).redacted_with(&self.redactor), Some(r.status), true)
            }
            Err(answer) => (answer.verdict, answer.response.http_status, answer.reached),
        };
        tracing::debug!(url, class = %verdict.class(), reason = %verdict.reason(), "URL inspection");
        Inspected { verdict, http_status, asked: true, reached }
    }

    /// Inspects `url` first, unless an answer of this run stopped the
    /// property's inspections; keeps what came of it for the run. Whether
    /// Google says the URL is indexed.
    ///
    /// Publishes go side by side, and so would their inspections: until one
    /// inspection of the property is answered in this run, they go one at a
    /// time, so that a refusal of the first (a wrong site, no access, the
    /// day's quota) stops the others before they are asked rather than
    /// after every request already in flight has spent an inspection.
    async fn inspected_first(&self, property: &str, site: &Site, url: &str) -> bool {
        let first = !self.with_inspections(property, |p| p.answered);
        let alone = if first { Some(self.first_inspection.lock().await) } else { None };
        let stopped = self.with_inspections(property, |p| p.stopped.clone());
        let inspected = match stopped {
            Some((verdict, http_status)) => Inspected { verdict, http_status, asked: false, reached: false },
            None => self.inspect(&site.site_url, url).await,
        };
        let indexed = inspected.verdict.reason() == Reason::Accepted(AcceptedReason::AlreadyIndexed);
        self.with_inspections(property, |p| {
            // A quota or a refusal: asking again this run only spends requests.
            if inspected.asked && matches!(inspected.verdict.class(), Class::Quota | Class::Misconfigured) {
                p.stopped.get_or_insert((inspected.verdict.clone(), inspected.http_status));
            }
            p.answered |= inspected.asked && inspected.verdict.class() == Class::Accepted;
            p.made.push(inspected);
        });
        drop(alone);
        indexed
    }

    fn with_inspections<T>(&self, property: &str, f: impl FnOnce(&mut PropertyInspections) -> T) -> T {
        let mut all = self.inspections.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(all.entry(property.to_string()).or_default())
    }

    /// Publishes `url`; a `URL_UPDATED` allowed an inspection (`inspect`)
    /// is inspected first, and not published if Google has indexed it.
    async fn publish(&self, property: &str, site: &Site, url: &str, action: Action, inspect: bool) -> Answer {
        if inspect && action == Action::Updated && self.inspected_first(property, site, url).await {
            return Answer {
                verdict: Verdict::new(
                    AcceptedReason::AlreadyIndexed,
                    "the URL Inspection API says Google has indexed it; not published",
                ),
                response: StoredResponse::default(),
                reached: false,
                skipped: true,
            };
        }
        let kind = match action {
            Action::Updated => "URL_UPDATED",
            Action::Deleted => "URL_DELETED",
        };
        let endpoint = self.api(&self.endpoint, "/v3/urlNotifications:publish");
        let r = match self.call(&endpoint, &serde_json::json!({ "url": url, "type": kind })).await {
            Ok(r) => r,
            Err(answer) => return answer,
        };
        let ctx = GoogleContext {
            url,
            action,
            client_email: &self.account.client_email,
            project_id: &self.account.project_id,
        };
        let verdict = classify::google(&r.response(), &ctx);
        Answer::received(verdict, &r, &self.redactor)
    }
}

#[async_trait]
impl Engine for Google {
    fn max_batch(&self) -> usize {
        // One URL a request; a claim is limited by the pace, this only caps it.
        1_000
    }

    fn fingerprint(&self, group: &GroupKey) -> String {
        let site = self.sites.get(&group.property).map(|s| s.site_url.as_str()).unwrap_or_default();
        // A sitemap's submission depends on the Search Console endpoint, not the Indexing API's.
        let endpoint = match group.channel {
            Channel::Urls => self.endpoint.as_str(),
            Channel::Sitemaps => self.inspection_endpoint.as_str(),
        };
        digest(&[&self.account.key_id, &self.account.client_email, site, endpoint])
    }

    fn credential(&self, _group: &GroupKey) -> Option<String> {
        None
    }

    fn pace(&self, group: &GroupKey) -> Option<(String, TimeDelta, u32)> {
        // The pace is the Indexing API's; Search Console's limit is a rule.
        (group.channel == Channel::Urls)
            .then(|| (format!("google:{}", self.account.project_id), self.interval, IN_FLIGHT as u32 - 1))
    }

    fn pool(&self) -> Option<String> {
        Some(self.account.project_id.clone())
    }

    fn inspects(&self, group: &GroupKey) -> bool {
        group.channel == Channel::Urls && self.sites.get(&group.property).is_some_and(|s| s.skip_indexed)
    }

    fn inspections(&self, group: &GroupKey) -> Vec<Inspected> {
        self.with_inspections(&group.property, |p| std::mem::take(&mut p.made))
    }

    async fn send(&self, group: &GroupKey, batch: &Batch, stop_signal: &StopSignal) -> Sent {
        let Some(site) = self.sites.get(&group.property) else {
            return Sent::unconfigured("Google", &group.property, batch.urls.len());
        };
        // A refused key refuses every URL: ask for the token once, up front.
        // (Nothing is published before it: a stop meanwhile sends nothing.)
        let token = if stop_signal.stopping() { None } else { stop_signal.within_grace(self.token(false)).await };
        match token {
            None => return Sent::whole(Answer::not_sent_on_stop(), batch.urls.len()),
            Some(Err(answer)) => return Sent::whole(answer, batch.urls.len()),
            Some(Ok(_)) => {}
        }
        if group.channel == Channel::Sitemaps {
            // One sitemap a group: each submitted on its own, in order.
            let mut sent = Sent { answers: Vec::new(), per_url: Vec::new() };
            for url in &batch.urls {
                let answer = if stop_signal.stopping() {
                    Answer::not_sent_on_stop()
                } else {
                    let answer = stop_signal.within_grace(self.submit_sitemap(&site.site_url, url)).await;
                    answer.unwrap_or_else(Answer::unanswered_on_stop)
                };
                sent.per_url.push(sent.answers.len());
                sent.answers.push(answer);
            }
            return sent;
        }
        let started = Instant::now();
        let requests: Vec<BoxFuture<'_, (usize, Answer)>> = batch
            .urls
            .iter()
            .enumerate()
            .map(|(i, url)| {
                let delay = batch.delays.get(i).copied().unwrap_or_default();
                let action = batch.actions.get(i).copied().unwrap_or_default();
                let inspect = batch.inspect.get(i).copied().unwrap_or(false);
                let property = group.property.as_str();
                Box::pin(async move {
                    // A slot the run's stop comes before is not used.
                    if !stop_signal.sleep(delay.saturating_sub(started.elapsed())).await {
                        return (i, Answer::not_sent_on_stop());
                    }
                    let answer = stop_signal.within_grace(self.publish(property, site, url, action, inspect)).await;
                    (i, answer.unwrap_or_else(Answer::unanswered_on_stop))
                }) as BoxFuture<'_, (usize, Answer)>
            })
            .collect();
        let answers: Vec<(usize, Answer)> = stream::iter(requests).buffer_unordered(IN_FLIGHT).collect().await;
        let mut sent = Sent { answers: Vec::with_capacity(answers.len()), per_url: vec![0; batch.urls.len()] };
        for (i, answer) in answers {
            sent.per_url[i] = sent.answers.len();
            sent.answers.push(answer);
        }
        sent
    }

    async fn sitemap_reports(&self, property: &str, sitemaps: &[String]) -> Vec<(String, SitemapRead)> {
        let Some(site) = self.sites.get(property) else { return Vec::new() };
        let mut reads = Vec::with_capacity(sitemaps.len());
        for sitemap in sitemaps {
            reads.push((sitemap.clone(), self.sitemap_report(&site.site_url, sitemap).await));
        }
        reads
    }

    async fn check(&self, _group: &GroupKey, check: Check) -> Option<Result<String, String>> {
        if check != Check::Token {
            return None;
        }
        Some(match self.check_token().await {
            Ok(()) => Ok(format!("Google issues access tokens for {} again", self.account.client_email)),
            Err(verdict) => Err(verdict.message),
        })
    }
}

/// The Cloud project of the configured key file, for `status` (which needs
/// no token): `None` if the file cannot be read.
pub fn project_id(settings: &Settings) -> Option<String> {
    let path = key_file_path(settings).ok()?;
    let text = std::fs::read_to_string(path).ok()?;
    let raw: RawKeyFile = serde_json::from_str(&text).ok()?;
    raw.project_id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Search Console's `siteUrl` and `feedpath` each travel as one path
    /// segment: everything but the unreserved characters encoded.
    #[test]
    fn site_urls_and_feedpaths_are_one_path_segment_each() {
        assert_eq!(path_segment("https://example.com/"), "https%3A%2F%2Fexample.com%2F");
        assert_eq!(path_segment("sc-domain:example.com"), "sc-domain%3Aexample.com");
        assert_eq!(
            path_segment("https://example.com/sitemaps/a b.xml?page=2&x=é"),
            "https%3A%2F%2Fexample.com%2Fsitemaps%2Fa%20b.xml%3Fpage%3D2%26x%3D%C3%A9"
        );
        assert_eq!(path_segment("A-Za-z0-9._~"), "A-Za-z0-9._~");
    }
}
