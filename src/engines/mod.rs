//! Engines: how a batch of URLs is sent to one search engine and how its
//! answer is turned into verdicts (through `classify`). Every engine
//! implements the same small `Engine` trait; engines know nothing of the
//! ledger, budgets or retries — the submit command plans, engines send.

pub mod baidu;
pub mod bing;
pub mod google;
pub mod indexnow;
mod stop_signal;
pub mod yandex;

pub use stop_signal::StopSignal;

use crate::classify::{self, NetworkFailure, Response, Verdict};
use crate::config::HttpSettings;
use crate::model::Period;
use crate::model::{
    Action, Check, GroupKey, MisconfiguredReason, ReadFailure, Reason, SitemapRead, StoredResponse, TransientReason,
};
use crate::redact::Redactor;
use async_trait::async_trait;

/// Response bodies are read up to this many bytes; the rest is dropped.
pub const READ_CAP: usize = 1024 * 1024;

/// What to send: the URLs of one group, what each announces, when each may
/// go (delays from now, for paced engines; empty otherwise), and which of
/// them may first be inspected (Google `skip_indexed`: a `URL_UPDATED`
/// within the inspection budget; empty otherwise).
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub urls: Vec<String>,
    pub actions: Vec<Action>,
    pub delays: Vec<std::time::Duration>,
    pub inspect: Vec<bool>,
}

/// A URL a send was to inspect before publishing (Google `skip_indexed`):
/// the verdict on the inspection's answer — classified like any answer —
/// or, when no inspection was asked, the verdict that stopped inspections
/// earlier in the run (a quota, a refusal).
#[derive(Debug, Clone)]
pub struct Inspected {
    pub verdict: Verdict,
    pub http_status: Option<u16>,
    /// Whether an inspection was asked for this URL.
    pub asked: bool,
    /// Whether the request may have reached the engine (it counts against
    /// the inspection budget); false when not asked, or the connection was
    /// refused.
    pub reached: bool,
}

/// One answer and the verdict on it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub verdict: Verdict,
    pub response: StoredResponse,
    /// False when the request provably never reached the engine (the
    /// connection was refused, or indexq had nothing to send): its budget
    /// is given back.
    pub reached: bool,
    /// The URL needs nothing (Google: already indexed): `skipped`.
    pub skipped: bool,
}

impl Answer {
    /// The answer to a request that got a response: the verdict's texts and
    /// the stored body redacted.
    pub fn received(verdict: Verdict, r: &Received, redactor: &Redactor) -> Answer {
        Answer {
            verdict: verdict.redacted_with(redactor),
            response: StoredResponse {
                http_status: Some(r.status),
                body: Some(redactor.redact(&r.body)).filter(|b| !b.is_empty()),
            },
            reached: true,
            skipped: false,
        }
    }

    /// A request the run's stop kept from going out (a paced slot not come,
    /// Bing's next half): nothing reached the engine, so its budget is given
    /// back and the item is due again.
    pub fn not_sent_on_stop() -> Answer {
        let verdict = Verdict::new(
            TransientReason::Interrupted,
            "not sent: the run was stopped (SIGINT/SIGTERM) before this request went out; its budget is given \
             back and the next run sends it",
        );
        Answer { verdict, response: StoredResponse::default(), reached: false, skipped: false }
    }

    /// A request sent before the run's stop whose answer did not come within
    /// `[submit] stop_grace`: the engine may have it, so it stays counted
    /// against the budget.
    pub fn unanswered_on_stop() -> Answer {
        let verdict = Verdict::new(
            TransientReason::Interrupted,
            "no answer: the run was stopped (SIGINT/SIGTERM) and the answer did not come within `[submit] \
             stop_grace`; the request counts against the budget (the engine may have received it) and is sent \
             again once its reservation's lease has ended",
        );
        Answer { verdict, response: StoredResponse::default(), reached: true, skipped: false }
    }

    /// Whether the run's stop cut this request (`not_sent_on_stop`,
    /// `unanswered_on_stop`): no engine's answer is ever classified so.
    pub fn cut_by_stop(&self) -> bool {
        self.verdict.reason() == Reason::Transient(TransientReason::Interrupted)
    }
}

/// What a send produced: the answers, and for each URL (in the order given)
/// the index of its answer. A batch API answers once for all its URLs.
#[derive(Debug, Clone)]
pub struct Sent {
    pub answers: Vec<Answer>,
    pub per_url: Vec<usize>,
}

impl Sent {
    /// One answer for every URL of the batch.
    pub fn whole(answer: Answer, urls: usize) -> Sent {
        Sent { answers: vec![answer], per_url: vec![0; urls] }
    }

    /// Nothing was sent: the property has no configuration for the engine
    /// (it changed while items were queued).
    pub fn unconfigured(engine: &str, property: &str, urls: usize) -> Sent {
        let verdict = Verdict::misconfigured(
            MisconfiguredReason::NotConfigured,
            format!("property `{property}` has no {engine} configuration"),
            format!("add the {engine} table to the property, or `indexq queue drop --property {property}`"),
        );
        Sent::whole(Answer { verdict, response: StoredResponse::default(), reached: false, skipped: false }, urls)
    }
}

#[async_trait]
pub trait Engine: Send + Sync {
    /// The most URLs one request may carry.
    fn max_batch(&self) -> usize;

    /// A digest of the configuration a `misconfigured` answer depends on:
    /// when it changes, parked items of the group are retried.
    fn fingerprint(&self, group: &GroupKey) -> String;

    /// The credential whose first use starts the `key_pending` clock.
    fn credential(&self, group: &GroupKey) -> Option<String>;

    /// Sends a batch (all of `group`) and classifies what came back. Once
    /// `stop_signal` says the run stops, no request starts (`Answer::not_sent_on_stop`)
    /// and one in flight is waited for only until the grace deadline
    /// (`Answer::unanswered_on_stop`).
    async fn send(&self, group: &GroupKey, batch: &Batch, stop_signal: &StopSignal) -> Sent;

    /// The engine's shared rate, if it has one: the pace key, one send per
    /// interval, and the burst allowed ahead of it.
    fn pace(&self, _group: &GroupKey) -> Option<(String, chrono::TimeDelta, u32)> {
        None
    }

    /// The pool the engine's credentials share (Google: the Cloud project).
    fn pool(&self) -> Option<String> {
        None
    }

    /// Whether URLs of the group are inspected before they are sent (Google `skip_indexed`).
    fn inspects(&self, _group: &GroupKey) -> bool {
        false
    }

    /// The inspections the sends of `group` were to make since this was
    /// last called (Google `skip_indexed`), taken: the run records them.
    fn inspections(&self, _group: &GroupKey) -> Vec<Inspected> {
        Vec::new()
    }

    /// What the engine says is left of its quota for the group, per period,
    /// read without spending any (Bing). `None`: the engine does not say.
    async fn reported_quota(&self, _group: &GroupKey) -> Option<Result<Vec<(Period, u64)>, String>> {
        None
    }

    /// What the engine reports of `sitemaps` of `property` submitted to it
    /// (Search Console's `sitemaps.get`, Bing's `GetFeeds`), each read, or
    /// what kept it from being read; spends no submission. Empty: the
    /// engine takes no sitemaps.
    async fn sitemap_reports(&self, _property: &str, _sitemaps: &[String]) -> Vec<(String, SitemapRead)> {
        Vec::new()
    }

    /// Checks, without spending quota, whether a cause of parked items
    /// (`check`) still holds for the group: `Ok(what was found)` when it is
    /// fixed, `Err(what still fails)`. `None`: the engine cannot check it.
    async fn check(&self, _group: &GroupKey, _check: Check) -> Option<Result<String, String>> {
        None
    }
}

/// The engine of `kind`, its credentials read (a missing or unreadable one
/// is a configuration error) and added to `redactor`: the one place an
/// engine kind is matched to its file.
pub fn build(
    kind: crate::model::EngineKind,
    settings: &crate::config::Settings,
    client: reqwest::Client,
    redactor: &mut Redactor,
) -> Result<Box<dyn Engine>, crate::config::ConfigError> {
    use crate::model::EngineKind;
    Ok(match kind {
        EngineKind::IndexNow => Box::new(indexnow::IndexNow::new(settings, client, redactor)?),
        EngineKind::Bing => Box::new(bing::Bing::new(settings, client, redactor)?),
        EngineKind::Google => Box::new(google::Google::new(settings, client, redactor)?),
        EngineKind::Baidu => Box::new(baidu::Baidu::new(settings, client, redactor)?),
        EngineKind::Yandex => Box::new(yandex::Yandex::new(settings, client, redactor)?),
    })
}

/// The HTTP client every engine uses: rustls, connect and total timeouts,
/// no redirects (a submission endpoint that redirects is misconfigured; a
/// key file must answer at the key location itself, so no redirect is
/// followed there either — and none can lead from https to http).
pub fn client(http: &HttpSettings) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(http.connect_timeout)
        .timeout(http.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("indexq/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The client sitemaps are fetched with, before the reader adds its own
/// resolver: the same timeouts and no redirects followed by the client —
/// the reader follows them itself (up to [`crate::net::MAX_REDIRECTS`],
/// never from https to plain http), each hop held to the hosts the
/// configuration allows (`ingest::sitemap::Reach`).
pub fn fetch_client_builder(http: &HttpSettings) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(http.connect_timeout)
        .timeout(http.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("indexq/", env!("CARGO_PKG_VERSION")))
}

/// A received response: status, headers and the body up to `READ_CAP`.
pub struct Received {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    /// The response with its body and header values redacted: what is
    /// classified, quoted and stored, so that no excerpt can cut a secret
    /// in half and keep the half.
    pub fn redacted(self, redactor: &Redactor) -> Received {
        Received {
            status: self.status,
            headers: self.headers.into_iter().map(|(k, v)| (k, redactor.redact(&v))).collect(),
            body: redactor.redact(&self.body),
        }
    }

    /// The response as `classify` reads it.
    pub fn response(&self) -> Response<'_> {
        Response { status: self.status, headers: &self.headers, body: &self.body }
    }
}

/// Sends `request` and reads its answer (`receive`): a failure either way
/// is a network failure.
pub async fn exchange(request: reqwest::RequestBuilder) -> Result<Received, reqwest::Error> {
    receive(request.send().await?).await
}

/// Reads a response, body capped; a failure while reading is a network failure.
pub async fn receive(mut resp: reqwest::Response) -> Result<Received, reqwest::Error> {
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = READ_CAP.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= READ_CAP {
            break;
        }
    }
    Ok(Received { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() })
}

/// A read of an engine's report that got no report: the verdict on its
/// answer (or on its absence), as the ledger keeps it.
pub fn read_failure(verdict: Verdict, http_status: Option<u16>) -> ReadFailure {
    ReadFailure {
        class: verdict.class(),
        reason: verdict.reason(),
        message: verdict.message,
        hint: verdict.hint,
        http_status,
    }
}

/// The verdict on a request that got no answer, with secrets masked.
pub fn network_answer(err: &reqwest::Error, redactor: &Redactor) -> Answer {
    let failure = if err.is_timeout() {
        NetworkFailure::Timeout
    } else if err.is_connect() {
        NetworkFailure::Connect
    } else {
        NetworkFailure::Other
    };
    let detail = redactor.redact(&crate::error::error_chain(err));
    Answer {
        verdict: classify::network(failure, &detail),
        response: StoredResponse { http_status: None, body: None },
        reached: failure != NetworkFailure::Connect,
        skipped: false,
    }
}

/// A short stable digest (hex) of some text, for fingerprints. Never
/// reversible to a key worth anything.
pub fn digest(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
}
