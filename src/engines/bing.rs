//! Bing Webmaster URL Submission API: `SubmitUrlBatch` (at most 500 URLs a
//! request, `{"siteUrl", "urlList"}`) and `GetUrlSubmissionQuota` (what is
//! left today and this month, spending nothing). The API key travels in the
//! `apikey` query parameter, so every URL and error that could carry it is
//! redacted before it is formatted. A batch refused as `InvalidUrl` is split
//! in halves until the bad URLs are found, so one bad URL does not park the
//! rest. A sitemap group's item goes by `SubmitFeed` (`{"siteUrl",
//! "feedUrl"}`, spending none of the URL quota), and `GetFeeds` says what
//! Bing made of the site's sitemaps.

use super::{digest, exchange, network_answer, Answer, Batch, Engine, Sent, StopSignal};
use crate::classify::{self, BingContext};
use crate::config::{ConfigError, Secret, Settings};
use crate::model::Period;
use crate::model::{BingCode, Channel, Check, GroupKey, SitemapRead};
use crate::redact::Redactor;
use async_trait::async_trait;
use std::collections::HashMap;
use url::Url;

/// Bing's documented limit of URLs per `SubmitUrlBatch`.
pub const MAX_BATCH: usize = 500;

pub struct Bing {
    client: reqwest::Client,
    endpoint: Url,
    key: Secret,
    /// Property name → the `siteUrl` Bing knows it by.
    sites: HashMap<String, String>,
    redactor: Redactor,
}

impl Bing {
    /// Reads the API key (a missing key is a configuration error: nothing is sent).
    pub fn new(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Result<Bing, ConfigError> {
        let source = settings.bing.api_key.as_ref().ok_or_else(|| ConfigError {
            place: format!("{}: `bing`", settings.file.display()),
            message: "a property uses Bing but [bing] has no api_key_env or api_key_file".into(),
            hint: Some("add api_key_env = \"BING_WEBMASTER_API_KEY\" to [bing] and export the key".into()),
        })?;
        let key = crate::config::read_bing_key(source)?;
        redactor.add(key.expose());
        let sites = settings
            .properties
            .iter()
            .filter_map(|p| p.bing.as_ref().map(|b| (p.name.clone(), b.site_url.clone())))
            .collect();
        Ok(Bing { client, endpoint: settings.bing.endpoint.clone(), key, sites, redactor: redactor.clone() })
    }

    /// `{endpoint}/{method}?...&apikey=KEY`. Never format this URL unredacted.
    fn url(&self, method: &str, query: &[(&str, &str)]) -> Url {
        let mut url = self.endpoint.clone();
        let path = format!("{}/{method}", url.path().trim_end_matches('/'));
        url.set_path(&path);
        {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in query {
                pairs.append_pair(k, v);
            }
            pairs.append_pair("apikey", self.key.expose());
        }
        url
    }

    /// Submits a sitemap (`SubmitFeed`, `{"siteUrl", "feedUrl"}`).
    async fn submit_feed(&self, site_url: &str, feed: &str) -> Answer {
        let body = serde_json::json!({ "siteUrl": site_url, "feedUrl": feed });
        let request = self
            .client
            .post(self.url("SubmitFeed", &[]))
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
            .body(body.to_string());
        tracing::debug!(site = site_url, feed, "POST Bing SubmitFeed");
        match exchange(request).await {
            Err(e) => network_answer(&e, &self.redactor),
            Ok(r) => {
                let r = r.redacted(&self.redactor);
                let resp = r.response();
                let verdict = classify::bing_feed(&resp, &BingContext { site_url }, feed);
                Answer::received(verdict, &r, &self.redactor)
            }
        }
    }

    /// What Bing reports of `feeds` of `site_url` (one `GetFeeds`, read for
    /// each), or the answer that kept them from being read.
    pub async fn read_feeds(&self, site_url: &str, feeds: &[String]) -> Vec<(String, SitemapRead)> {
        let url = self.url("GetFeeds", &[("siteUrl", site_url)]);
        let r = match exchange(self.client.get(url)).await {
            Ok(r) => r.redacted(&self.redactor),
            Err(e) => {
                let answer = network_answer(&e, &self.redactor);
                let failed = super::read_failure(answer.verdict, None);
                return feeds.iter().map(|f| (f.clone(), SitemapRead::Failed(failed.clone()))).collect();
            }
        };
        let resp = r.response();
        feeds
            .iter()
            .map(|feed| {
                let read = match classify::bing_feeds(&resp, &BingContext { site_url }, feed) {
                    Ok(reading) => SitemapRead::Read(reading),
                    Err(verdict) => {
                        SitemapRead::Failed(super::read_failure(verdict.redacted_with(&self.redactor), Some(r.status)))
                    }
                };
                (feed.clone(), read)
            })
            .collect()
    }

    /// What Bing says is left of the quota of `site_url`, per period.
    async fn quota(&self, site_url: &str) -> Result<Vec<(Period, u64)>, String> {
        let url = self.url("GetUrlSubmissionQuota", &[("siteUrl", site_url)]);
        let r = match exchange(self.client.get(url)).await {
            Ok(r) => r.redacted(&self.redactor),
            Err(e) => return Err(self.redactor.redact(&network_answer(&e, &self.redactor).verdict.message)),
        };
        let parsed: Option<(u64, u64)> = serde_json::from_str::<serde_json::Value>(&r.body).ok().and_then(|v| {
            let d = v.get("d")?;
            Some((d.get("DailyQuota")?.as_u64()?, d.get("MonthlyQuota")?.as_u64()?))
        });
        match (r.status, parsed) {
            (200, Some((daily, monthly))) => Ok(vec![(Period::Day, daily), (Period::Month, monthly)]),
            _ => Err(self.redactor.redact(&format!(
                "GetUrlSubmissionQuota answered HTTP {} (response: {})",
                r.status,
                classify::excerpt(&r.body)
            ))),
        }
    }

    async fn post(&self, site_url: &str, urls: &[String]) -> Answer {
        let body = serde_json::json!({ "siteUrl": site_url, "urlList": urls });
        let request = self
            .client
            .post(self.url("SubmitUrlBatch", &[]))
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
            .body(body.to_string());
        tracing::debug!(site = site_url, urls = urls.len(), "POST Bing SubmitUrlBatch");
        match exchange(request).await {
            Err(e) => network_answer(&e, &self.redactor),
            Ok(r) => {
                let r = r.redacted(&self.redactor);
                let verdict = classify::bing(&r.response(), &BingContext { site_url });
                Answer::received(verdict, &r, &self.redactor)
            }
        }
    }
}

#[async_trait]
impl Engine for Bing {
    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn fingerprint(&self, group: &GroupKey) -> String {
        let site = self.sites.get(&group.property).map(String::as_str).unwrap_or_default();
        digest(&[self.key.expose(), site, self.endpoint.as_str(), group.channel.as_str()])
    }

    fn credential(&self, _group: &GroupKey) -> Option<String> {
        None
    }

    async fn send(&self, group: &GroupKey, batch: &Batch, stop_signal: &StopSignal) -> Sent {
        let urls = &batch.urls;
        let Some(site_url) = self.sites.get(&group.property) else {
            return Sent::unconfigured("Bing", &group.property, urls.len());
        };
        if group.channel == Channel::Sitemaps {
            // One sitemap a group: each submitted on its own, in order.
            let mut sent = Sent { answers: Vec::new(), per_url: Vec::new() };
            for feed in urls {
                let answer = if stop_signal.stopping() {
                    Answer::not_sent_on_stop()
                } else {
                    let answer = stop_signal.within_grace(self.submit_feed(site_url, feed)).await;
                    answer.unwrap_or_else(Answer::unanswered_on_stop)
                };
                sent.per_url.push(sent.answers.len());
                sent.answers.push(answer);
            }
            return sent;
        }
        // Split a batch refused as InvalidUrl until each bad URL stands alone:
        // at most 2n-1 requests, and only refused requests are repeated.
        // Once the run stops, no half goes out.
        let mut sent = Sent { answers: Vec::new(), per_url: vec![0; urls.len()] };
        let mut pending = vec![(0, urls.len())];
        while let Some((lo, hi)) = pending.pop() {
            let answer = if stop_signal.stopping() {
                Answer::not_sent_on_stop()
            } else {
                let answer = stop_signal.within_grace(self.post(site_url, &urls[lo..hi])).await;
                answer.unwrap_or_else(Answer::unanswered_on_stop)
            };
            if answer.verdict.reason().bing_code() == Some(BingCode::InvalidUrl) && hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                pending.push((mid, hi));
                pending.push((lo, mid));
                continue;
            }
            sent.answers.push(answer);
            sent.per_url[lo..hi].fill(sent.answers.len() - 1);
        }
        sent
    }

    async fn reported_quota(&self, group: &GroupKey) -> Option<Result<Vec<(Period, u64)>, String>> {
        // The quota is the URL Submission API's; a sitemap spends none of it.
        if group.channel != Channel::Urls {
            return None;
        }
        let site_url = self.sites.get(&group.property)?;
        Some(self.quota(site_url).await)
    }

    async fn sitemap_reports(&self, property: &str, sitemaps: &[String]) -> Vec<(String, SitemapRead)> {
        match self.sites.get(property) {
            Some(site_url) => self.read_feeds(site_url, sitemaps).await,
            None => Vec::new(),
        }
    }

    async fn check(&self, group: &GroupKey, check: Check) -> Option<Result<String, String>> {
        if check != Check::ApiKey {
            return None;
        }
        let site_url = self.sites.get(&group.property)?;
        Some(match self.quota(site_url).await {
            Ok(_) => Ok("Bing accepts the API key now (its quota was read)".into()),
            Err(why) => Err(why),
        })
    }
}
