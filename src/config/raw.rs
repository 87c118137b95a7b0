//! The file as written: the TOML tables as serde reads them, every value
//! with its span (for the place an error names) and every table strict
//! (`deny_unknown_fields`: a misspelt key is an error, not a silent default).

use serde::Deserialize;
use toml::Spanned;

pub(super) type S<T> = Spanned<T>;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) ledger: Option<S<String>>,
    pub(super) ledger_schema: Option<S<String>>,
    pub(super) ledger_lease: Option<S<String>>,
    pub(super) ledger_timeout: Option<S<String>>,
    pub(super) ledger_password_env: Option<S<String>>,
    pub(super) ledger_password_file: Option<S<String>>,
    #[serde(default)]
    pub(super) indexnow: RawIndexNow,
    #[serde(default)]
    pub(super) bing: RawBing,
    #[serde(default)]
    pub(super) google: RawGoogle,
    #[serde(default)]
    pub(super) baidu: RawBaidu,
    #[serde(default)]
    pub(super) yandex: RawYandex,
    #[serde(default)]
    pub(super) submit: RawSubmit,
    #[serde(default)]
    pub(super) retry: RawRetry,
    #[serde(default)]
    pub(super) http: RawHttp,
    #[serde(default)]
    pub(super) sitemap: RawSitemap,
    #[serde(default)]
    pub(super) serve: RawServe,
    #[serde(default)]
    pub(super) notify: RawNotify,
    #[serde(default)]
    pub(super) property: Vec<S<RawProperty>>,
}

/// `[notify]`: where what needs a human is sent.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNotify {
    pub(super) command: Option<S<String>>,
    pub(super) webhook: Option<S<String>>,
    pub(super) webhook_env: Option<S<String>>,
    pub(super) webhook_file: Option<S<String>>,
    pub(super) timeout: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServe {
    pub(super) listen: Option<S<String>>,
    pub(super) max_body: Option<S<u64>>,
    pub(super) sources_every: Option<S<String>>,
    pub(super) requests_per_second: Option<S<u32>>,
    pub(super) request_burst: Option<S<u32>>,
    pub(super) urls_per_minute: Option<S<u32>>,
    pub(super) url_burst: Option<S<u32>>,
    pub(super) max_connections: Option<S<u32>>,
    pub(super) idle_timeout: Option<S<String>>,
    pub(super) header_timeout: Option<S<String>>,
    pub(super) min_body_rate: Option<S<u32>>,
    pub(super) max_connections_per_address: Option<S<u32>>,
    pub(super) reserved_connections: Option<S<u32>>,
    pub(super) metrics_public: Option<S<bool>>,
    pub(super) indexnow: Option<S<bool>>,
    #[serde(default)]
    pub(super) webhooks: RawServeWebhooks,
    #[serde(default)]
    pub(super) token: Vec<S<RawServeToken>>,
}

/// `[serve.webhooks]`: where each platform's signing secret lives.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServeWebhooks {
    pub(super) ghost_secret_env: Option<S<String>>,
    pub(super) vercel_secret_env: Option<S<String>>,
    pub(super) netlify_secret_env: Option<S<String>>,
}

/// One `[[serve.token]]`: who may write to `serve`'s intake, and what.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServeToken {
    pub(super) id: S<String>,
    pub(super) token_env: Option<S<String>>,
    pub(super) token_file: Option<S<String>>,
    pub(super) properties: Option<S<Vec<S<String>>>>,
    pub(super) scope: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIndexNow {
    pub(super) endpoints: Option<Vec<S<String>>>,
    pub(super) daily_quota: Option<u64>,
    pub(super) quota_timezone: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBing {
    pub(super) api_key_env: Option<S<String>>,
    pub(super) api_key_file: Option<S<String>>,
    pub(super) endpoint: Option<S<String>>,
    pub(super) quota_timezone: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
    pub(super) monthly_quota: Option<u64>,
    pub(super) sitemaps: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGoogle {
    pub(super) credentials: Option<S<String>>,
    pub(super) endpoint: Option<S<String>>,
    pub(super) inspection_endpoint: Option<S<String>>,
    pub(super) quota_timezone: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
    pub(super) requests_per_minute: Option<S<u32>>,
    pub(super) sitemaps: Option<bool>,
}

/// `[baidu]`: the link push's token and endpoint.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBaidu {
    pub(super) token_env: Option<S<String>>,
    pub(super) token_file: Option<S<String>>,
    pub(super) endpoint: Option<S<String>>,
}

/// `[yandex]`: the Webmaster API's OAuth token and endpoint.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawYandex {
    pub(super) token_env: Option<S<String>>,
    pub(super) token_file: Option<S<String>>,
    pub(super) endpoint: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSubmit {
    pub(super) max_wait: Option<S<String>>,
    pub(super) dedupe_window: Option<S<String>>,
    pub(super) remind: Option<S<String>>,
    pub(super) stop_grace: Option<S<String>>,
    pub(super) order: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetry {
    pub(super) transient_first: Option<S<String>>,
    pub(super) transient_cap: Option<S<String>>,
    pub(super) transient_deadline: Option<S<String>>,
    pub(super) key_pending_first: Option<S<String>>,
    pub(super) key_pending_deadline: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    pub(super) connect_timeout: Option<S<String>>,
    pub(super) timeout: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSitemap {
    pub(super) max_bytes: Option<S<u64>>,
    pub(super) read_interval: Option<S<String>>,
    pub(super) download_deadline: Option<S<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProperty {
    pub(super) name: S<String>,
    pub(super) site: S<String>,
    pub(super) timezone: Option<S<String>>,
    pub(super) indexnow: Option<S<RawPropIndexNow>>,
    pub(super) bing: Option<S<RawPropBing>>,
    pub(super) google: Option<S<RawPropGoogle>>,
    pub(super) baidu: Option<S<RawPropBaidu>>,
    pub(super) yandex: Option<S<RawPropYandex>>,
    pub(super) sources: Option<Vec<S<RawSource>>>,
    pub(super) fetch_hosts: Option<Vec<S<String>>>,
}

/// One of a property's `sources`: a string (a sitemap URL, or a file whose
/// name says what it is), or a table that says it (`{ sitemap = "…" }`,
/// `{ list = "…" }`).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawSource {
    Text(String),
    Table(RawSourceTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSourceTable {
    pub(super) sitemap: Option<String>,
    pub(super) list: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPropIndexNow {
    pub(super) key_env: Option<S<String>>,
    pub(super) key_file: Option<S<String>>,
    pub(super) key_location: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
    pub(super) quota_timezone: Option<S<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPropBing {
    pub(super) site_url: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
    pub(super) monthly_quota: Option<u64>,
    pub(super) quota_timezone: Option<S<String>>,
    pub(super) sitemaps: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPropGoogle {
    pub(super) site_url: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
    pub(super) skip_indexed: Option<bool>,
    pub(super) quota_timezone: Option<S<String>>,
    pub(super) indexing: Option<bool>,
    pub(super) sitemaps: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPropBaidu {
    pub(super) site: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPropYandex {
    pub(super) host_id: Option<S<String>>,
    pub(super) daily_quota: Option<u64>,
}
