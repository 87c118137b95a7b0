//! The tables that shape a run: `[submit]`, `[retry]`, `[http]` and
//! `[sitemap]`.

use super::values::written_zero;
use super::Resolver;
use crate::config::raw::{RawHttp, RawRetry, RawSitemap, RawSubmit};
use crate::config::{defaults, ConfigError, HttpSettings, RetrySettings, SitemapSettings, SubmitSettings};

/// The smallest `[sitemap] max_bytes` accepted.
const SITEMAP_MIN_BYTES: u64 = 1024;

impl Resolver<'_> {
    /// `[submit]`: how long a run waits, for how long an accepted URL is not
    /// sent again, how often what is parked is said again, and how long a
    /// stopped run waits for answers in flight, and which URLs go first.
    pub(super) fn submit(&self, raw: &RawSubmit) -> Result<SubmitSettings, ConfigError> {
        Ok(SubmitSettings {
            max_wait: self.duration(raw.max_wait.as_ref(), "submit.max_wait", defaults::SUBMIT_MAX_WAIT)?,
            dedupe_window: self.duration(
                raw.dedupe_window.as_ref(),
                "submit.dedupe_window",
                defaults::SUBMIT_DEDUPE_WINDOW,
            )?,
            remind: self.duration(raw.remind.as_ref(), "submit.remind", defaults::SUBMIT_REMIND)?,
            stop_grace: self.duration(raw.stop_grace.as_ref(), "submit.stop_grace", defaults::SUBMIT_STOP_GRACE)?,
            order: match raw.order.as_ref() {
                None => defaults::SUBMIT_ORDER,
                Some(v) => v.get_ref().trim().parse().map_err(|why: String| {
                    self.err(v, "submit.order", why)
                        .hint("\"newest\" sends new and changed URLs first; \"oldest\" sends them as first read")
                })?,
            },
        })
    }

    /// `[retry]`: the backoff of `transient` and `key_pending` URLs.
    pub(super) fn retry(&self, raw: &RawRetry) -> Result<RetrySettings, ConfigError> {
        Ok(RetrySettings {
            transient_first: self.duration(
                raw.transient_first.as_ref(),
                "retry.transient_first",
                defaults::RETRY_TRANSIENT_FIRST,
            )?,
            transient_cap: self.duration(
                raw.transient_cap.as_ref(),
                "retry.transient_cap",
                defaults::RETRY_TRANSIENT_CAP,
            )?,
            transient_deadline: self.duration(
                raw.transient_deadline.as_ref(),
                "retry.transient_deadline",
                defaults::RETRY_TRANSIENT_DEADLINE,
            )?,
            key_pending_first: self.duration(
                raw.key_pending_first.as_ref(),
                "retry.key_pending_first",
                defaults::RETRY_KEY_PENDING_FIRST,
            )?,
            key_pending_deadline: self.duration(
                raw.key_pending_deadline.as_ref(),
                "retry.key_pending_deadline",
                defaults::RETRY_KEY_PENDING_DEADLINE,
            )?,
        })
    }

    /// `[http]`: both timeouts of every request; neither may be 0.
    pub(super) fn http(&self, raw: &RawHttp) -> Result<HttpSettings, ConfigError> {
        let http = HttpSettings {
            connect_timeout: self.duration(
                raw.connect_timeout.as_ref(),
                "http.connect_timeout",
                defaults::HTTP_CONNECT_TIMEOUT,
            )?,
            timeout: self.duration(raw.timeout.as_ref(), "http.timeout", defaults::HTTP_TIMEOUT)?,
        };
        for (value, key) in [(&raw.connect_timeout, "http.connect_timeout"), (&raw.timeout, "http.timeout")] {
            if let Some(v) = written_zero(value.as_ref()) {
                return Err(self.err(v, key, "a timeout of 0 would fail every request"));
            }
        }
        Ok(http)
    }

    /// `[sitemap]`: the cap on what one sitemap may hold, and how the
    /// engines' reports on the sitemaps submitted to them are read.
    pub(super) fn sitemap(&self, raw: &RawSitemap) -> Result<SitemapSettings, ConfigError> {
        let max_bytes = match &raw.max_bytes {
            None => defaults::SITEMAP_MAX_BYTES,
            Some(v) if *v.get_ref() < SITEMAP_MIN_BYTES => {
                let message = format!("must be at least {SITEMAP_MIN_BYTES} (bytes)");
                return Err(self.err(v, "sitemap.max_bytes", message));
            }
            Some(v) => *v.get_ref(),
        };
        Ok(SitemapSettings {
            max_bytes,
            read_interval: self.duration(
                raw.read_interval.as_ref(),
                "sitemap.read_interval",
                defaults::SITEMAP_READ_INTERVAL,
            )?,
            download_deadline: self.duration(
                raw.download_deadline.as_ref(),
                "sitemap.download_deadline",
                defaults::SITEMAP_DOWNLOAD_DEADLINE,
            )?,
        })
    }
}
