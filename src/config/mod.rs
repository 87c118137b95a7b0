//! Configuration: finds the TOML file (the README's lookup order), parses it with
//! every key checked (unknown keys, timezones, URLs, durations are errors with
//! file, line and column), and resolves it into one `Settings` that commands
//! receive. Secrets are not read here: `SecretSource` says where a secret
//! lives and `read` fetches it when a command needs it, so `status` works
//! without credentials. This module knows nothing of the ledger or HTTP.
//!
//! Here: `Settings` and its parts, and finding and loading the file. Beside
//! it: `raw.rs` (the tables as serde reads them), `resolve/` (one function
//! per table), `defaults.rs` (every default, in one table), `ledger.rs`
//! (where the ledger lives), `secret.rs` (secret sources and the key rules)
//! and `error.rs` (a problem and its place).

mod defaults;
mod error;
mod ledger;
mod raw;
mod resolve;
mod secret;

use crate::model::SubmitOrder;
use chrono_tz::Tz;
use std::path::{Path, PathBuf};
use std::time::Duration;
use url::Url;

pub use error::ConfigError;
pub use ledger::{check_schema_name, LedgerLocation};
pub use secret::{read_bing_key, read_indexnow_key, Secret, SecretSource};

use error::line_col;
use raw::RawConfig;

// ---------------------------------------------------------------------------
// What commands receive.

/// How a PostgreSQL ledger is used (the SQLite ledger reads only `lease`).
#[derive(Debug, Clone)]
pub struct LedgerOptions {
    /// The schema that holds the tables.
    pub schema: String,
    /// How long a reservation is trusted when its owner cannot be checked.
    pub lease: Duration,
    /// Connect, statement and lock timeout.
    pub timeout: Duration,
    /// `ledger_password_env` / `ledger_password_file`.
    pub password: Option<SecretSource>,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// The config file in use.
    pub file: PathBuf,
    pub ledger: LedgerLocation,
    pub ledger_options: LedgerOptions,
    pub indexnow: IndexNowSettings,
    pub bing: BingSettings,
    pub google: GoogleSettings,
    pub baidu: BaiduSettings,
    pub yandex: YandexSettings,
    pub submit: SubmitSettings,
    pub retry: RetrySettings,
    pub http: HttpSettings,
    pub sitemap: SitemapSettings,
    pub serve: ServeSettings,
    pub notify: NotifySettings,
    pub properties: Vec<Property>,
    /// The properties these settings were narrowed to (`narrowed`: what a
    /// `serve` token sees), `None` for the whole configuration. The
    /// ledger's groups of the other properties are then not "stranded"
    /// (no longer configured) but out of sight.
    pub narrowed_to: Option<Vec<String>>,
}

/// `[notify]`: where what needs a human is sent, once per group and reason
/// per `[submit] remind`, and once when it is resolved.
#[derive(Debug, Clone, Default)]
pub struct NotifySettings {
    /// A command and its arguments, split as a POSIX shell splits words
    /// but run without a shell.
    pub command: Option<Vec<String>>,
    /// A chat webhook's URL, itself a secret.
    pub webhook: Option<Webhook>,
    /// How long a notification may take.
    pub timeout: Duration,
}

/// Where a chat webhook's URL is: written in the file, or a secret kept
/// elsewhere. Its `Debug` never shows the URL.
#[derive(Debug, Clone)]
pub enum Webhook {
    Written { url: Secret, place: String },
    Kept(SecretSource),
}

impl Webhook {
    /// The URL: https, or http on a loopback host (tests). Errors name the
    /// config key and line, never the URL.
    pub fn url(&self) -> Result<(Url, Secret), ConfigError> {
        let (secret, place) = match self {
            Webhook::Written { url, place } => (url.clone(), place.as_str()),
            Webhook::Kept(source) => (source.read()?, source.place()),
        };
        let refused = |message: &str| ConfigError {
            place: place.to_string(),
            message: message.to_string(),
            hint: Some("write the webhook's URL as the chat service gives it, https://…".to_string()),
        };
        let url = Url::parse(secret.expose()).map_err(|_| refused("the webhook is not a URL"))?;
        match url.scheme() {
            "https" => Ok((url, secret)),
            "http" if crate::net::is_loopback(&url) => Ok((url, secret)),
            _ => Err(refused("the webhook must be an https:// URL (http:// only on loopback, for tests)")),
        }
    }
}

/// `[serve]`: `indexq serve`'s intake.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    /// Where it listens.
    pub listen: std::net::SocketAddr,
    /// The largest request body taken, in bytes.
    pub max_body: u64,
    /// How often the worker reads the configured sources (`None`: never).
    pub sources_every: Option<Duration>,
    /// Each token's rate limits.
    pub requests: RateRule,
    pub urls: RateRule,
    /// Connections open at once.
    pub max_connections: u32,
    /// A connection that sends and takes nothing this long is closed.
    pub idle_timeout: Duration,
    /// How slow clients may be, and how many connections one address holds.
    pub connections: ConnectionLimits,
    /// Whether `/metrics` answers a request without a token when tokens
    /// are configured (every series then).
    pub metrics_public: bool,
    /// Who may write (`[[serve.token]]`); none: anyone who reaches a loopback address.
    pub tokens: Vec<ServeToken>,
    /// Whether it speaks the IndexNow protocol at `/indexnow`.
    pub indexnow: bool,
    /// The signing secrets of the webhooks that must be signed.
    pub webhooks: ServeWebhooks,
}

/// `[serve.webhooks]`: each platform whose secret is set has its hooks
/// signed, and unsigned ones refused.
#[derive(Debug, Clone, Default)]
pub struct ServeWebhooks {
    pub ghost: Option<SecretSource>,
    pub vercel: Option<SecretSource>,
    pub netlify: Option<SecretSource>,
}

/// `[serve]`'s limits on a connection (`serve::listen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's headers must be whole this long after their first byte.
    pub header_timeout: Duration,
    /// The slowest a body may arrive, in bytes a second (after an allowance
    /// of `header_timeout`).
    pub min_body_rate: u32,
    /// Connections one client address may hold open at once.
    pub per_address: u32,
    /// Connections beyond `max_connections` that only `/healthz`, `/readyz`
    /// and requests with a valid token may use.
    pub reserved: u32,
}

/// A rate as GCRA keeps it: `per` units every `period`, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateRule {
    pub per: u32,
    pub period: Duration,
    pub burst: u32,
}

/// A bearer token `serve` takes, by its id (never its value) and where it lives.
#[derive(Debug, Clone)]
pub struct ServeToken {
    pub id: String,
    pub secret: SecretSource,
    /// The properties whose URLs it may write (or only read), and the
    /// only ones whose items, budgets and series it sees.
    pub properties: Vec<String>,
    /// What it may do with them.
    pub scope: TokenScope,
}

/// What a `[[serve.token]]` may do with its properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenScope {
    /// Read their queue, budgets and metrics only.
    Read,
    /// Read them, and write their URLs (the default).
    Write,
}

impl TokenScope {
    /// As the configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Write => "write",
        }
    }
}

#[derive(Debug, Clone)]
pub struct SitemapSettings {
    /// The most uncompressed bytes read from one sitemap.
    pub max_bytes: u64,
    /// How often an engine's report on a sitemap submitted to it is read.
    pub read_interval: Duration,
    /// How long after a submission the engine has to download the sitemap
    /// before a human is told it has not.
    pub download_deadline: Duration,
}

#[derive(Debug, Clone)]
pub struct IndexNowSettings {
    pub endpoints: Vec<Url>,
    pub daily_quota: Option<u64>,
    pub quota_timezone: Tz,
}

#[derive(Debug, Clone)]
pub struct BingSettings {
    pub api_key: Option<SecretSource>,
    pub endpoint: Url,
    pub quota_timezone: Tz,
    pub daily_quota: Option<u64>,
    pub monthly_quota: Option<u64>,
    /// Whether properties submit their sitemaps to Bing (`SubmitFeed`),
    /// unless their own table says.
    pub sitemaps: bool,
}

/// `[baidu]`: what every property pushing to Baidu shares.
#[derive(Debug, Clone)]
pub struct BaiduSettings {
    /// The push token (`token_env` / `token_file`).
    pub token: Option<SecretSource>,
    pub endpoint: Url,
}

/// `[yandex]`: what every property using Yandex's recrawl queue shares.
#[derive(Debug, Clone)]
pub struct YandexSettings {
    /// The OAuth token (`token_env` / `token_file`).
    pub token: Option<SecretSource>,
    pub endpoint: Url,
}

#[derive(Debug, Clone)]
pub struct GoogleSettings {
    /// The service-account key file; `$GOOGLE_APPLICATION_CREDENTIALS` when unset.
    pub credentials: Option<PathBuf>,
    pub endpoint: Url,
    pub inspection_endpoint: Url,
    pub quota_timezone: Tz,
    pub daily_quota: u64,
    pub requests_per_minute: u32,
    /// Whether properties submit their sitemaps to Search Console
    /// (`sitemaps.submit`), unless their own table says.
    pub sitemaps: bool,
}

#[derive(Debug, Clone)]
pub struct SubmitSettings {
    pub max_wait: Duration,
    pub dedupe_window: Duration,
    /// How often a run says again that a group's items are parked.
    pub remind: Duration,
    /// After SIGINT/SIGTERM, how long requests in flight may take to be answered.
    pub stop_grace: Duration,
    /// Which due URLs of an engine with a daily quota go first.
    pub order: SubmitOrder,
}

#[derive(Debug, Clone)]
pub struct RetrySettings {
    pub transient_first: Duration,
    pub transient_cap: Duration,
    pub transient_deadline: Duration,
    pub key_pending_first: Duration,
    pub key_pending_deadline: Duration,
}

#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub connect_timeout: Duration,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct Property {
    pub name: String,
    pub site: Url,
    /// The site's own timezone: the day a `lastmod` written as a date
    /// names begins and ends at its midnights.
    pub timezone: Tz,
    pub indexnow: Option<PropertyIndexNow>,
    pub bing: Option<PropertyBing>,
    pub google: Option<PropertyGoogle>,
    pub baidu: Option<PropertyBaidu>,
    pub yandex: Option<PropertyYandex>,
    /// Where its URLs come from when `submit` is given no input.
    pub sources: Vec<PropertySource>,
    /// Hosts its sitemaps may fetch from beyond its site's and its
    /// sources' own (an index child, a redirect).
    pub fetch_hosts: Vec<crate::net::HostPattern>,
}

/// One of a property's `sources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropertySource {
    /// A sitemap, sitemap index or robots.txt: an http(s) URL, or a file
    /// (an absolute path), as `submit --sitemap` reads it.
    Sitemap(String),
    /// A file of URLs, one a line, as `submit FILE` reads it.
    List(PathBuf),
    /// A file read by its content when a run reads it: a sitemap when it
    /// is XML (gzipped or not), else a URL list.
    File(PathBuf),
}

impl PropertySource {
    /// As messages name it.
    pub fn name(&self) -> String {
        match self {
            PropertySource::Sitemap(s) => s.clone(),
            PropertySource::List(p) | PropertySource::File(p) => p.display().to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct PropertyIndexNow {
    pub key: SecretSource,
    /// Where the key file is served; `https://HOST/KEY.txt` when unset.
    pub key_location: Option<Url>,
    pub daily_quota: Option<u64>,
    pub quota_timezone: Tz,
}

#[derive(Debug, Clone)]
pub struct PropertyBing {
    pub site_url: String,
    pub daily_quota: Option<u64>,
    pub monthly_quota: Option<u64>,
    pub quota_timezone: Tz,
    /// Its remote sitemaps are submitted to Bing (`SubmitFeed`) when they change.
    pub sitemaps: bool,
}

#[derive(Debug, Clone)]
pub struct PropertyGoogle {
    pub site_url: String,
    pub daily_quota: u64,
    pub skip_indexed: bool,
    pub quota_timezone: Tz,
    /// Its URLs go to the Indexing API (`urlNotifications:publish`).
    pub indexing: bool,
    /// Its remote sitemaps are submitted to Search Console
    /// (`sitemaps.submit`) when they change.
    pub sitemaps: bool,
}

/// A property's `baidu` table.
#[derive(Debug, Clone)]
pub struct PropertyBaidu {
    /// The `site` parameter of the push: the property's scheme and host
    /// unless `baidu.site` says otherwise.
    pub site: String,
    pub daily_quota: Option<u64>,
    /// Always Asia/Shanghai: Baidu's quota day.
    pub quota_timezone: Tz,
}

/// A property's `yandex` table.
#[derive(Debug, Clone)]
pub struct PropertyYandex {
    /// The host id as Yandex writes it (`https:example.com:443`), when set;
    /// otherwise found in the user's hosts by the property's site.
    pub host_id: Option<String>,
    pub daily_quota: Option<u64>,
    /// Europe/Moscow (assumed; see `defaults::YANDEX_QUOTA_TIMEZONE`).
    pub quota_timezone: Tz,
}

impl Property {
    /// The hosts its sources may fetch from: its site's, its remote
    /// sources' own, and its `fetch_hosts` — each the configuration's word.
    pub fn fetch_reach(&self) -> Vec<crate::net::HostPattern> {
        let own = |s: &str| Url::parse(s).ok().and_then(|u| crate::net::HostPattern::of_url(&u));
        let sources = self.sources.iter().filter_map(|s| match s {
            PropertySource::Sitemap(s) => own(s),
            PropertySource::List(_) | PropertySource::File(_) => None,
        });
        crate::net::HostPattern::of_url(&self.site).into_iter().chain(sources).chain(self.fetch_hosts.clone()).collect()
    }

    /// Whether `url` lies under this property's site.
    pub fn contains(&self, url: &str) -> bool {
        url.starts_with(self.site.as_str())
    }

    /// The remote sitemaps (and indexes) among its sources, as configured:
    /// those an engine can be given. A `robots.txt` is not one (the engines
    /// read its `Sitemap:` lines themselves), nor a file.
    pub fn remote_sitemaps(&self) -> Vec<&str> {
        let remote = |s: &str| {
            Url::parse(s).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https") && !u.path().to_ascii_lowercase().ends_with("/robots.txt")
            })
        };
        let mut sitemaps: Vec<&str> = Vec::new();
        for source in &self.sources {
            if let PropertySource::Sitemap(s) = source {
                if remote(s) && !sitemaps.contains(&s.as_str()) {
                    sitemaps.push(s);
                }
            }
        }
        sitemaps
    }

    /// The sitemaps the property submits to `engine` (none when its table
    /// for it is missing or says `sitemaps = false`).
    pub fn submitted_sitemaps(&self, engine: crate::model::EngineKind) -> Vec<&str> {
        use crate::model::EngineKind::{Baidu, Bing, Google, IndexNow, Yandex};
        let on = match engine {
            IndexNow => false,
            Bing => self.bing.as_ref().is_some_and(|b| b.sitemaps),
            Google => self.google.as_ref().is_some_and(|g| g.sitemaps),
            // Neither takes a sitemap by an API.
            Baidu | Yandex => false,
        };
        if on {
            self.remote_sitemaps()
        } else {
            Vec::new()
        }
    }

    pub fn uses(&self, engine: crate::model::EngineKind) -> bool {
        use crate::model::EngineKind::{Baidu, Bing, Google, IndexNow, Yandex};
        match engine {
            IndexNow => self.indexnow.is_some(),
            Bing => self.bing.is_some(),
            Google => self.google.is_some(),
            Baidu => self.baidu.is_some(),
            Yandex => self.yandex.is_some(),
        }
    }
}

impl Settings {
    /// These settings with only the properties named in `properties`: what
    /// reads the configured groups (status, metrics) then tells only theirs.
    pub fn narrowed(&self, properties: &[String]) -> Settings {
        let mut narrowed = self.clone();
        narrowed.properties.retain(|p| properties.contains(&p.name));
        narrowed.narrowed_to = Some(properties.to_vec());
        narrowed
    }

    /// Whether the ledger's items of `property` are within these settings'
    /// sight (every property, unless `narrowed`).
    pub fn sees(&self, property: &str) -> bool {
        self.narrowed_to.as_ref().is_none_or(|own| own.iter().any(|p| p == property))
    }

    /// The property a URL belongs to: the one whose site is the longest prefix.
    pub fn property_for(&self, url: &str) -> Option<&Property> {
        self.properties.iter().filter(|p| p.contains(url)).max_by_key(|p| p.site.as_str().len())
    }

    pub fn property(&self, name: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.name == name)
    }
}

// ---------------------------------------------------------------------------
// Finding and loading.

/// The config file named rather than looked for: `--config`, else
/// `$INDEXQ_CONFIG` (when set and not empty). `init` writes it.
pub fn named(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("INDEXQ_CONFIG").filter(|v| !v.is_empty()).map(PathBuf::from))
}

/// The config file to use: `--config`, `$INDEXQ_CONFIG`, `./indexq.toml`,
/// `$XDG_CONFIG_HOME/indexq/config.toml`, in that order.
pub fn find(explicit: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(path) = named(explicit) {
        return Ok(path);
    }
    let mut tried = vec![PathBuf::from("indexq.toml")];
    if let Some(dir) = dirs::config_dir() {
        tried.push(dir.join("indexq").join("config.toml"));
    }
    tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| ConfigError {
        place: "configuration".into(),
        message: format!(
            "no configuration found (looked for --config, $INDEXQ_CONFIG, {})",
            tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
        hint: Some(
            "run `indexq init --site https://YOUR.SITE/` to write a commented starter ./indexq.toml (--global: \
             the user's configuration), or pass --config FILE"
                .into(),
        ),
    })
}

/// Reads and validates the config file.
pub fn load(path: &Path) -> Result<Settings, ConfigError> {
    let problem = |message: String, hint: Option<&str>| ConfigError {
        place: path.display().to_string(),
        message,
        hint: hint.map(str::to_string),
    };
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if size > MAX_CONFIG_BYTES {
        return Err(problem(
            format!("the configuration is {size} bytes; a configuration file is at most {MAX_CONFIG_BYTES}"),
            Some("is --config pointing at the right file?"),
        ));
    }
    let source =
        std::fs::read_to_string(path).map_err(|err| problem(format!("cannot read the configuration: {err}"), None))?;
    let settings = parse(path, &source)?;
    if settings.properties.is_empty() {
        return Err(problem(
            "the configuration has no [[property]]".into(),
            Some(
                "add a [[property]] with a name, a site and an engine table (`indexq init --site URL --config \
                 NEW.toml` writes a commented example)",
            ),
        ));
    }
    Ok(settings)
}

/// The largest configuration file read (a bigger one is a mistake).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Parses config text; `path` names it in errors and anchors relative paths.
pub fn parse(path: &Path, source: &str) -> Result<Settings, ConfigError> {
    let raw: RawConfig = toml::from_str(source).map_err(|err| {
        let (line, column) = err.span().map_or((1, 1), |s| line_col(source, s.start));
        ConfigError {
            place: format!("{}:{line}:{column}", path.display()),
            message: err.message().trim().to_string(),
            hint: None,
        }
    })?;
    resolve::resolve(path, source, raw)
}

/// What the tests of this module and its parts share.
#[cfg(test)]
mod testing {
    use super::{parse, ConfigError, Settings};
    use std::path::Path;

    pub(super) fn parse_str(text: &str) -> Result<Settings, ConfigError> {
        parse(Path::new("indexq.toml"), text)
    }

    pub(super) fn error_of(text: &str) -> ConfigError {
        match parse_str(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{error_of, parse_str};
    use super::*;

    const MINIMAL: &str = r#"
[[property]]
name = "example.com"
site = "https://example.com/"
indexnow = { key_env = "INDEXNOW_KEY" }
"#;

    #[test]
    fn minimal_config_gets_defaults() {
        let s = parse_str(MINIMAL).unwrap();
        assert_eq!(s.indexnow.endpoints[0].as_str(), defaults::INDEXNOW_ENDPOINT);
        assert_eq!(s.google.daily_quota, 200);
        assert_eq!(s.google.quota_timezone, chrono_tz::America::Los_Angeles);
        assert_eq!(s.submit.max_wait, Duration::from_secs(90));
        assert_eq!(s.retry.transient_deadline, Duration::from_secs(3 * 86400));
        let p = &s.properties[0];
        assert_eq!(p.indexnow.as_ref().unwrap().quota_timezone, Tz::UTC);
        assert!(p.bing.is_none());
    }

    #[test]
    fn the_design_example_parses() {
        let text = include_str!("../../config.example.toml");
        let s = parse_str(text).unwrap();
        assert!(!s.properties.is_empty());
    }

    #[test]
    fn unknown_key_names_line_and_column() {
        let e = error_of("[indexnow]\nendpoints = []\ncolour = 1\n");
        assert_eq!(e.place, "indexq.toml:3:1");
        assert!(e.message.contains("unknown field `colour`"), "{}", e.message);
    }

    #[test]
    fn longest_site_prefix_wins() {
        let text = "[[property]]\nname = \"root\"\nsite = \"https://a.example/\"\n[[property]]\nname = \"blog\"\nsite = \"https://a.example/blog/\"\n";
        let s = parse_str(text).unwrap();
        assert_eq!(s.property_for("https://a.example/blog/post").unwrap().name, "blog");
        assert_eq!(s.property_for("https://a.example/about").unwrap().name, "root");
        assert!(s.property_for("https://b.example/").is_none());
    }
}
