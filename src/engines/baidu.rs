//! Baidu's link push (普通收录 API 提交): `POST {endpoint}/urls?site=…&token=…`
//! with one URL a line (`text/plain`), at most 2,000 a push. The token
//! travels in the query string, so every URL and error that could carry it
//! is redacted before it is formatted. A success names the URLs it did not
//! take (`not_same_site`, `not_valid`): each gets a verdict of its own, the
//! rest the push's. Baidu has no way to read the quota without pushing, so
//! `remain` in each answer is the engine's only statement of what is left;
//! until one has said it in a quota day, a claim takes Baidu's least quota
//! (`budget::BAIDU_FIRST_PUSH`) and the answer bounds the next.

use super::{digest, exchange, network_answer, Answer, Batch, Engine, Sent, StopSignal};
use crate::classify::{self, BaiduContext};
use crate::config::{ConfigError, Secret, Settings};
use crate::model::GroupKey;
use crate::redact::Redactor;
use async_trait::async_trait;
use std::collections::HashMap;
use url::Url;

/// Baidu's documented limit of URLs per push.
pub const MAX_BATCH: usize = 2_000;

pub struct Baidu {
    client: reqwest::Client,
    endpoint: Url,
    token: Secret,
    /// Property name → the `site` Baidu knows it by.
    sites: HashMap<String, String>,
    redactor: Redactor,
}

impl Baidu {
    /// Reads the token (a missing token is a configuration error: nothing is sent).
    pub fn new(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Result<Baidu, ConfigError> {
        let source = settings.baidu.token.as_ref().ok_or_else(|| ConfigError {
            place: format!("{}: `baidu`", settings.file.display()),
            message: "a property uses Baidu but [baidu] has no token_env or token_file".into(),
            hint: Some("add token_env = \"BAIDU_PUSH_TOKEN\" to [baidu] and export the push token".into()),
        })?;
        let token = source.read()?;
        redactor.add(token.expose());
        let sites = settings
            .properties
            .iter()
            .filter_map(|p| p.baidu.as_ref().map(|b| (p.name.clone(), b.site.clone())))
            .collect();
        Ok(Baidu { client, endpoint: settings.baidu.endpoint.clone(), token, sites, redactor: redactor.clone() })
    }

    /// `{endpoint}/urls?site=SITE&token=TOKEN`. Never format this URL unredacted.
    fn url(&self, site: &str) -> Url {
        let mut url = self.endpoint.clone();
        let path = format!("{}/urls", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url.query_pairs_mut().append_pair("site", site).append_pair("token", self.token.expose());
        url
    }

    /// One push of `urls`: the answer to it, and the verdicts of the URLs
    /// it lists as not taken, each with its index in `urls`.
    async fn push(&self, site: &str, urls: &[String]) -> (Answer, Vec<(usize, Answer)>) {
        let request =
            self.client.post(self.url(site)).header(reqwest::header::CONTENT_TYPE, "text/plain").body(urls.join("\n"));
        tracing::debug!(site, urls = urls.len(), "POST Baidu urls");
        let r = match exchange(request).await {
            Err(e) => return (network_answer(&e, &self.redactor), Vec::new()),
            Ok(r) => r.redacted(&self.redactor),
        };
        let ctx = BaiduContext { site };
        let resp = r.response();
        let whole = Answer::received(classify::baidu(&resp, &ctx), &r, &self.redactor);
        // Baidu lists the URLs as they were pushed; one it names that was not
        // pushed (rewritten on its side) is left to the push's verdict.
        let refused = classify::baidu_refused(&resp, &ctx)
            .into_iter()
            .filter_map(|(url, verdict)| {
                let i = urls.iter().position(|u| *u == url)?;
                Some((i, Answer::received(verdict, &r, &self.redactor)))
            })
            .collect();
        (whole, refused)
    }
}

#[async_trait]
impl Engine for Baidu {
    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn fingerprint(&self, group: &GroupKey) -> String {
        let site = self.sites.get(&group.property).map(String::as_str).unwrap_or_default();
        digest(&[self.token.expose(), site, self.endpoint.as_str()])
    }

    fn credential(&self, _group: &GroupKey) -> Option<String> {
        None
    }

    async fn send(&self, group: &GroupKey, batch: &Batch, stop_signal: &StopSignal) -> Sent {
        let urls = &batch.urls;
        let Some(site) = self.sites.get(&group.property) else {
            return Sent::unconfigured("Baidu", &group.property, urls.len());
        };
        if stop_signal.stopping() {
            return Sent::whole(Answer::not_sent_on_stop(), urls.len());
        }
        let Some((whole, refused)) = stop_signal.within_grace(self.push(site, urls)).await else {
            return Sent::whole(Answer::unanswered_on_stop(), urls.len());
        };
        let mut sent = Sent::whole(whole, urls.len());
        for (i, answer) in refused {
            sent.per_url[i] = sent.answers.len();
            sent.answers.push(answer);
        }
        sent
    }
}
