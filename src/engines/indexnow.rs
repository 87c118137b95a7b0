//! IndexNow: one POST per host and endpoint with up to 10,000 URLs, JSON
//! `{host, key, keyLocation, urlList}`. A 403 is never guessed: indexq
//! fetches the key location itself and lets `classify` decide between
//! `key_pending` and `misconfigured`.

use super::{digest, exchange, network_answer, Answer, Batch, Engine, Sent, StopSignal};
use crate::classify::{self, IndexNowContext, KeyFileCheck};
use crate::config::{self, ConfigError, Settings};
use crate::error::error_chain;
use crate::model::{Check, Class, GroupKey};
use crate::redact::Redactor;
use async_trait::async_trait;
use std::collections::HashMap;
use url::Url;

pub const MAX_BATCH: usize = 10_000;

struct Site {
    key: config::Secret,
    key_location: Url,
    host: String,
}

pub struct IndexNow {
    client: reqwest::Client,
    sites: HashMap<String, Site>,
    redactor: Redactor,
}

impl IndexNow {
    /// Reads every IndexNow key of the configured properties (a missing or
    /// invalid key is a configuration error: nothing is sent).
    pub fn new(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Result<IndexNow, ConfigError> {
        let mut sites = HashMap::new();
        for property in &settings.properties {
            let Some(table) = &property.indexnow else { continue };
            let key = config::read_indexnow_key(table)?;
            redactor.add(key.expose());
            let key_location =
                table.key_location.clone().unwrap_or_else(|| default_key_location(&property.site, key.expose()));
            let host = property.site.host_str().unwrap_or_default().to_string();
            sites.insert(property.name.clone(), Site { key, key_location, host });
        }
        Ok(IndexNow { client, sites, redactor: redactor.clone() })
    }

    async fn check_key_file(&self, site: &Site) -> KeyFileCheck {
        match exchange(self.client.get(site.key_location.clone())).await {
            Ok(r) => KeyFileCheck::Fetched { status: r.status, body: r.body },
            Err(e) => KeyFileCheck::Failed { error: self.redactor.redact(&error_chain(&e)) },
        }
    }
}

impl IndexNow {
    /// `doctor`: fetches a property's key file and says what the engine will
    /// make of it (`key_pending` means it serves exactly the key), without
    /// submitting anything. Also returns the key location checked.
    pub async fn check_property(&self, property: &str) -> Option<(classify::Verdict, String)> {
        let site = self.sites.get(property)?;
        let check = self.check_key_file(site).await;
        let verdict = classify::key_file(site.key.expose(), site.key_location.as_str(), &check);
        let location = self.redactor.redact(site.key_location.as_str());
        Some((verdict.redacted_with(&self.redactor), location))
    }

    /// Whether the key location is on the property's own host, as IndexNow requires.
    pub fn key_location_on_host(&self, property: &str) -> Option<bool> {
        let site = self.sites.get(property)?;
        Some(site.key_location.host_str() == Some(site.host.as_str()))
    }
}

/// `https://HOST/KEY.txt` on the site's own origin.
pub fn default_key_location(site: &Url, key: &str) -> Url {
    let mut url = site.clone();
    url.set_path(&format!("/{key}.txt"));
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// The folder a key location below its host's root vouches for: with the key
/// file at `https://HOST/static/k.txt`, IndexNow takes only URLs under
/// `https://HOST/static/` (indexnow.org documentation, the key file's
/// second option: a key file elsewhere than the root covers only the URLs
/// that start with its folder; Bing answers any other 422 "One or more URLs
/// are not related to your site verified through the keylocation
/// parameter", fixture `indexnow-422-outside-key-location`). `None` when
/// the key is at the root, every URL of the host being covered, or on
/// another host, which `doctor` reports as wrong in itself.
pub fn key_scope(site: &Url, key_location: &Url) -> Option<Url> {
    if key_location.host_str() != site.host_str() {
        return None;
    }
    let path = key_location.path();
    let folder = &path[..=path.rfind('/')?];
    if folder == "/" {
        return None;
    }
    let mut scope = key_location.clone();
    scope.set_path(folder);
    scope.set_query(None);
    scope.set_fragment(None);
    Some(scope)
}

/// Whether `url` is under `scope`, a key location's folder ([`key_scope`]):
/// on its host, its path under the folder's.
pub fn in_key_scope(scope: &Url, host: &str, path: &str) -> bool {
    scope.host_str() == Some(host) && path.starts_with(scope.path())
}

/// Whether a site reaches outside its key location's folder `scope`: some
/// of its URLs are then out of the key's reach.
pub fn site_wider_than(scope: &Url, site: &Url) -> bool {
    !in_key_scope(scope, site.host_str().unwrap_or_default(), site.path())
}

#[async_trait]
impl Engine for IndexNow {
    fn max_batch(&self) -> usize {
        MAX_BATCH
    }

    fn fingerprint(&self, group: &GroupKey) -> String {
        match self.sites.get(&group.property) {
            Some(site) => digest(&[site.key.expose(), site.key_location.as_str(), &group.target]),
            None => String::new(),
        }
    }

    fn credential(&self, group: &GroupKey) -> Option<String> {
        let site = self.sites.get(&group.property)?;
        Some(format!("indexnow:{}", digest(&[site.key.expose(), &site.host])))
    }

    async fn send(&self, group: &GroupKey, batch: &Batch, stop_signal: &StopSignal) -> Sent {
        let urls = &batch.urls;
        let Some(site) = self.sites.get(&group.property) else {
            return Sent::unconfigured("IndexNow", &group.property, urls.len());
        };
        if stop_signal.stopping() {
            return Sent::whole(Answer::not_sent_on_stop(), urls.len());
        }
        let answer = stop_signal.within_grace(self.post(group, site, urls)).await;
        Sent::whole(answer.unwrap_or_else(Answer::unanswered_on_stop), urls.len())
    }

    async fn check(&self, group: &GroupKey, check: Check) -> Option<Result<String, String>> {
        if check != Check::KeyFile {
            return None;
        }
        let (verdict, location) = self.check_property(&group.property).await?;
        // Exactly the key: what a 403 would call `key_pending`.
        Some(if verdict.class() == Class::KeyPending {
            Ok(format!("the key file at {location} serves the key now"))
        } else {
            Err(verdict.message)
        })
    }
}

/// The body IndexNow's protocol gives (`{host, key, keyLocation,
/// urlList}`), serialized from the batch's own strings: a `json!` value
/// copied each of the batch's URLs first.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Submission<'a> {
    host: &'a str,
    key: &'a str,
    key_location: &'a str,
    url_list: &'a [String],
}

impl IndexNow {
    /// POSTs the URLs of one site to the group's endpoint, and classifies
    /// the answer (a 403 after checking the key file).
    async fn post(&self, group: &GroupKey, site: &Site, urls: &[String]) -> Answer {
        let body = Submission {
            host: &site.host,
            key: site.key.expose(),
            key_location: site.key_location.as_str(),
            url_list: urls,
        };
        // A struct of strings always serializes.
        let body = serde_json::to_vec(&body).expect("strings serialize");
        let request = self
            .client
            .post(group.target.as_str())
            .header(reqwest::header::CONTENT_TYPE, "application/json; charset=utf-8")
            .body(body);
        tracing::debug!(endpoint = %group.target, urls = urls.len(), "POST IndexNow");
        match exchange(request).await {
            Err(e) => network_answer(&e, &self.redactor),
            Ok(r) => {
                let r = r.redacted(&self.redactor);
                let key_file = if r.status == 403 { Some(self.check_key_file(site).await) } else { None };
                let ctx = IndexNowContext {
                    key: site.key.expose(),
                    key_location: site.key_location.as_str(),
                    key_file: key_file.as_ref(),
                };
                let verdict = classify::indexnow(&r.response(), &ctx);
                Answer::received(verdict, &r, &self.redactor)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    /// Whether the URL `text` is in `scope`, as a list's URL is checked.
    fn in_scope(scope: &Url, text: &str) -> bool {
        let url = crate::ingest::parse_url(text).unwrap();
        in_key_scope(scope, url.host_str(), url.path())
    }

    #[test]
    fn a_key_below_the_root_vouches_for_its_folder_only() {
        let site = url("https://site.example/");
        assert_eq!(key_scope(&site, &url("https://site.example/k.txt")), None, "at the root: the whole host");
        assert_eq!(key_scope(&site, &url("https://other.example/static/k.txt")), None, "another host");
        let scope = key_scope(&site, &url("https://site.example/static/k.txt?v=1#x")).unwrap();
        assert_eq!(scope.as_str(), "https://site.example/static/");
        assert!(in_scope(&scope, "https://site.example/static/a.html"));
        assert!(in_scope(&scope, "https://site.example/static/deep/er"));
        assert!(in_scope(&scope, "http://site.example/static/a"), "IndexNow mixes http and https");
        assert!(!in_scope(&scope, "https://site.example/staticx/a"), "a folder, not a prefix");
        assert!(!in_scope(&scope, "https://site.example/static"), "the folder's name without its slash");
        assert!(!in_scope(&scope, "https://site.example/blog/a"));
        assert!(!in_scope(&scope, "https://www.site.example/static/a"));
        assert!(site_wider_than(&scope, &site));
        assert!(!site_wider_than(&scope, &url("https://site.example/static/")));
        assert!(!site_wider_than(&scope, &url("https://site.example/static/docs/")));
        let nested = key_scope(&site, &url("https://site.example/a/b/k.txt")).unwrap();
        assert_eq!(nested.path(), "/a/b/");
    }
}
