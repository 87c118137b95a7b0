//! Baidu's link push (普通收录 API 提交): `POST {endpoint}/urls?site=…&token=…`
//! with one URL a line (`text/plain`), at most 2,000 a push. The token
//! travels in the query string, so every URL and error that could carry it
//! is redacted before it is formatted. A success names the URLs it did not
//! take (`not_same_site`, `not_valid`): each gets a verdict of its own, the
//! rest the push's. Baidu has no way to read the quota without pushing, so
//! `remain` in each answer is the engine's only statement of what is left:
//! a batch goes in turns, the first of Baidu's least quota and each next no
//! larger than the last `remain` (`push_within_remain`).

use super::{digest, exchange, network_answer, Answer, Batch, Engine, Halt, Sent};
use crate::classify::{self, BaiduContext, Verdict};
use crate::config::{ConfigError, Secret, Settings};
use crate::model::{Class, GroupKey, Period, QuotaReason, StoredResponse};
use crate::redact::Redactor;
use async_trait::async_trait;
use chrono::NaiveDate;
use std::collections::HashMap;
use std::sync::Mutex;
use url::Url;

/// Baidu's quota day (`tz`: the property's `quota_timezone`, China's) by
/// this machine's clock.
fn quota_day(tz: chrono_tz::Tz) -> NaiveDate {
    chrono::Utc::now().with_timezone(&tz).date_naive()
}

/// Baidu's documented limit of URLs per push.
pub const MAX_BATCH: usize = 2_000;

/// The first push of a batch: Baidu's least daily quota for a site (its
/// range is 10 to 100,000), so that a batch pushed before any answer has
/// said what is left today cannot be refused whole as `over quota` while
/// some of the day is left.
pub const FIRST_PUSH: usize = 10;

pub struct Baidu {
    client: reqwest::Client,
    endpoint: Url,
    token: Secret,
    /// Property name → the `site` Baidu knows it by.
    sites: HashMap<String, String>,
    /// When Baidu's quota day begins.
    tz: chrono_tz::Tz,
    /// Site → what Baidu last said is left, and its quota day then (by this
    /// machine's clock): the room of the next push that day.
    said: Mutex<HashMap<String, (NaiveDate, u64)>>,
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
        let tables = settings.properties.iter().filter_map(|p| Some((p, p.baidu.as_ref()?)));
        let tz = tables.clone().next().map_or(chrono_tz::Asia::Shanghai, |(_, b)| b.quota_timezone);
        let sites = tables.map(|(p, b)| (p.name.clone(), b.site.clone())).collect();
        Ok(Baidu {
            client,
            endpoint: settings.baidu.endpoint.clone(),
            token,
            sites,
            tz,
            said: Mutex::new(HashMap::new()),
            redactor: redactor.clone(),
        })
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
        let request = self
            .client
            .post(self.url(site))
            .header(reqwest::header::CONTENT_TYPE, "text/plain")
            .body(urls.join("\n"));
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

    /// Pushes `urls` in turns, each no larger than what Baidu last said is
    /// left: the first [`FIRST_PUSH`] at most (what no site's quota is
    /// below, unless spent) unless an answer of this process said today
    /// what is left, then what each answer's `remain` allows. Once
    /// it says nothing is left — or refuses a push — the rest is not pushed
    /// and waits for the next quota day (its budget given back). Each push
    /// costs nothing beyond its URLs, and none goes over what was said.
    async fn push_within_remain(&self, site: &str, urls: &[String], halt: &Halt) -> Sent {
        let mut sent = Sent { answers: Vec::new(), per_url: vec![0; urls.len()] };
        let mut next = 0;
        // What Baidu said is left today, if it said so in this process;
        // else (or spent) a first push no site's quota is below.
        let known = self.said.lock().expect("not poisoned").get(site).copied();
        let mut room = match known {
            Some((day, left)) if day == quota_day(self.tz) && left > 0 => left as usize,
            _ => FIRST_PUSH,
        };
        while next < urls.len() {
            if halt.stopping() {
                sent.answers.push(Answer::not_sent_on_stop());
                sent.per_url[next..].fill(sent.answers.len() - 1);
                return sent;
            }
            let end = urls.len().min(next + room);
            let Some((whole, refused)) = halt.within_grace(self.push(site, &urls[next..end])).await else {
                sent.answers.push(Answer::unanswered_on_stop());
                sent.per_url[next..].fill(sent.answers.len() - 1);
                return sent;
            };
            let taken = whole.verdict.class() == Class::Accepted;
            let said = whole.verdict.reported.map(|(_, left)| left);
            if let Some(left) = said {
                self.said.lock().expect("not poisoned").insert(site.to_string(), (quota_day(self.tz), left));
            }
            let verdict = whole.verdict.clone();
            sent.answers.push(whole);
            sent.per_url[next..end].fill(sent.answers.len() - 1);
            for (i, answer) in refused {
                sent.answers.push(answer);
                sent.per_url[next + i] = sent.answers.len() - 1;
            }
            next = end;
            match said {
                Some(left) if taken && left > 0 => room = left as usize,
                // Spent, refused, or no statement: the rest is not pushed.
                _ if next < urls.len() => {
                    let rest = if taken { spent(site) } else { verdict };
                    let answer = Answer { verdict: rest, response: StoredResponse::default(), reached: false, skipped: false };
                    sent.answers.push(answer);
                    sent.per_url[next..].fill(sent.answers.len() - 1);
                    return sent;
                }
                _ => {}
            }
        }
        sent
    }
}

/// The verdict on URLs of a batch left out because Baidu's last answer
/// said nothing is left today (or did not say what is left): they wait for
/// the next quota day. (Left out after a refused push, they take its verdict.)
fn spent(site: &str) -> Verdict {
    let mut verdict = Verdict::new(
        QuotaReason::DailyQuota,
        format!(
            "not pushed: Baidu's last answer said nothing is left of today's push quota for {site}. indexq waits \
             for midnight China time (Asia/Shanghai)."
        ),
    );
    verdict.reported = Some((Period::Day, 0));
    verdict
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

    async fn send(&self, group: &GroupKey, batch: &Batch, halt: &Halt) -> Sent {
        let urls = &batch.urls;
        let Some(site) = self.sites.get(&group.property) else {
            return Sent::unconfigured("Baidu", &group.property, urls.len());
        };
        self.push_within_remain(site, urls, halt).await
    }
}
