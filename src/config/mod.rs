//! Configuration: finds the TOML file (DESIGN §4 lookup order), parses it with
//! every key checked (unknown keys, timezones, URLs, durations are errors with
//! file, line and column), and resolves it into one `Settings` that commands
//! receive. Secrets are not read here: `SecretSource` says where a secret
//! lives and `read` fetches it when a command needs it, so `status` works
//! without credentials. This module knows nothing of the ledger or HTTP.

use crate::clock;
use chrono_tz::Tz;
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;
use url::Url;

/// A configuration problem, located in the file. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ConfigError {
    pub place: String,
    pub message: String,
    pub hint: Option<String>,
}

impl ConfigError {
    fn at(file: &Path, source: &str, span: std::ops::Range<usize>, key: &str, message: String) -> Self {
        let (line, column) = line_col(source, span.start);
        ConfigError { place: format!("{}:{line}:{column}: `{key}`", file.display()), message, hint: None }
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, column)
}

// ---------------------------------------------------------------------------
// The file as written.

type S<T> = Spanned<T>;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    ledger: Option<S<String>>,
    ledger_schema: Option<S<String>>,
    ledger_lease: Option<S<String>>,
    ledger_timeout: Option<S<String>>,
    ledger_password_env: Option<S<String>>,
    ledger_password_file: Option<S<String>>,
    #[serde(default)]
    indexnow: RawIndexNow,
    #[serde(default)]
    bing: RawBing,
    #[serde(default)]
    google: RawGoogle,
    #[serde(default)]
    submit: RawSubmit,
    #[serde(default)]
    retry: RawRetry,
    #[serde(default)]
    http: RawHttp,
    #[serde(default)]
    sitemap: RawSitemap,
    #[serde(default)]
    property: Vec<S<RawProperty>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawIndexNow {
    endpoints: Option<Vec<S<String>>>,
    daily_quota: Option<u64>,
    quota_timezone: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawBing {
    api_key_env: Option<S<String>>,
    api_key_file: Option<S<String>>,
    endpoint: Option<S<String>>,
    quota_timezone: Option<S<String>>,
    daily_quota: Option<u64>,
    monthly_quota: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawGoogle {
    credentials: Option<S<String>>,
    endpoint: Option<S<String>>,
    inspection_endpoint: Option<S<String>>,
    quota_timezone: Option<S<String>>,
    daily_quota: Option<u64>,
    requests_per_minute: Option<S<u32>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSubmit {
    max_wait: Option<S<String>>,
    dedupe_window: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    transient_first: Option<S<String>>,
    transient_cap: Option<S<String>>,
    transient_deadline: Option<S<String>>,
    key_pending_first: Option<S<String>>,
    key_pending_deadline: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    connect_timeout: Option<S<String>>,
    timeout: Option<S<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSitemap {
    max_bytes: Option<S<u64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProperty {
    name: S<String>,
    site: S<String>,
    indexnow: Option<S<RawPropIndexNow>>,
    bing: Option<S<RawPropBing>>,
    google: Option<S<RawPropGoogle>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPropIndexNow {
    key_env: Option<S<String>>,
    key_file: Option<S<String>>,
    key_location: Option<S<String>>,
    daily_quota: Option<u64>,
    quota_timezone: Option<S<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPropBing {
    site_url: Option<S<String>>,
    daily_quota: Option<u64>,
    monthly_quota: Option<u64>,
    quota_timezone: Option<S<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPropGoogle {
    site_url: Option<S<String>>,
    daily_quota: Option<u64>,
    skip_indexed: Option<bool>,
    quota_timezone: Option<S<String>>,
}

// ---------------------------------------------------------------------------
// What commands receive.

/// Where a secret lives. Never the secret itself; `read` fetches it.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretSource {
    Env { var: String, place: String },
    File { path: PathBuf, place: String },
}

impl fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::Env { var, .. } => write!(f, "env ${var}"),
            SecretSource::File { path, .. } => write!(f, "file {}", path.display()),
        }
    }
}

/// A secret value. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

impl SecretSource {
    /// Reads the secret, trimmed of surrounding whitespace. Errors name the
    /// config key and line, never the value.
    pub fn read(&self) -> Result<Secret, ConfigError> {
        match self {
            SecretSource::Env { var, place } => match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => Ok(Secret(value.trim().to_string())),
                Ok(_) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("the environment variable ${var} is empty"),
                    hint: Some(format!("export {var}=... in the environment that runs indexq")),
                }),
                Err(_) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("the environment variable ${var} is not set"),
                    hint: Some(format!(
                        "export {var}=... in the environment that runs indexq (cron and CI have their own environment)"
                    )),
                }),
            },
            SecretSource::File { path, place } => match std::fs::read_to_string(path) {
                Ok(value) if !value.trim().is_empty() => Ok(Secret(value.trim().to_string())),
                Ok(_) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("the file {} is empty", path.display()),
                    hint: None,
                }),
                Err(err) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("cannot read {}: {err}", path.display()),
                    hint: None,
                }),
            },
        }
    }

    pub fn place(&self) -> &str {
        match self {
            SecretSource::Env { place, .. } | SecretSource::File { place, .. } => place,
        }
    }
}

/// Where the ledger lives.
#[derive(Clone, PartialEq, Eq)]
pub enum LedgerLocation {
    Sqlite(PathBuf),
    /// A `postgres://` URL as written (it may hold a password: shown only
    /// through `display`).
    Postgres(String),
}

impl LedgerLocation {
    /// The location as messages name it: a path, or the URL without its password.
    pub fn display(&self) -> String {
        match self {
            LedgerLocation::Sqlite(path) => path.display().to_string(),
            LedgerLocation::Postgres(url) => crate::redact::connection_url(url),
        }
    }

    /// A path, or a `postgres://` / `postgresql://` URL. Anything that
    /// starts with `postgres:` or `postgresql:` (any case) is meant as a
    /// database: it must be a URL with a host, or it is refused (the reason
    /// never quotes the value, which may hold a password).
    pub fn parse(value: &str) -> Result<LedgerLocation, String> {
        match postgres_location(value) {
            Some(url) => url.map(LedgerLocation::Postgres),
            None => Ok(LedgerLocation::Sqlite(expand_home(value))),
        }
    }
}

impl fmt::Debug for LedgerLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LedgerLocation({})", self.display())
    }
}

/// A `ledger` value that starts with `postgres:` or `postgresql:`, in any
/// case: `None` for anything else (a SQLite path). It must be a URL with
/// `//` and a host (or a `host=` parameter: a Unix socket); it comes back
/// with its scheme in lower case (the driver reads only that). A mistyped
/// one (`postgres:user:PW@host`) is an error, not a file named after the
/// password. Errors never quote the value: it may hold a password.
fn postgres_location(value: &str) -> Option<Result<String, String>> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(':')?;
    if !(scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")) {
        return None;
    }
    let url = format!("{}:{rest}", scheme.to_ascii_lowercase());
    // `url::ParseError` names what is wrong, never the text it parsed.
    let parsed = match Url::parse(&url) {
        Ok(parsed) => parsed,
        Err(why) => return Some(Err(format!("not a valid PostgreSQL URL ({why}); the value is not shown"))),
    };
    let host = parsed.host_str().is_some_and(|h| !h.is_empty())
        || parsed.query_pairs().any(|(k, v)| k == "host" && !v.is_empty());
    if !rest.starts_with("//") || !host {
        return Some(Err(format!(
            "starts with `{scheme}:` but is not a PostgreSQL URL with a host, such as \
             postgres://user@host:5432/db (the value is not shown: it may hold a password)"
        )));
    }
    Some(Ok(url))
}

/// The hint for a ledger URL that is not one.
const POSTGRES_URL_HINT: &str = "write postgres://user@host:5432/db (with the `//`), and give the password with \
     ledger_password_env / ledger_password_file rather than in the URL";

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
    #[allow(dead_code)] // read by the Bing engine
    pub bing: BingSettings,
    #[allow(dead_code)] // read by the Google engine
    pub google: GoogleSettings,
    pub submit: SubmitSettings,
    pub retry: RetrySettings,
    pub http: HttpSettings,
    pub sitemap: SitemapSettings,
    pub properties: Vec<Property>,
}

#[derive(Debug, Clone)]
pub struct SitemapSettings {
    /// The most uncompressed bytes read from one sitemap.
    pub max_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct IndexNowSettings {
    pub endpoints: Vec<Url>,
    pub daily_quota: Option<u64>,
    pub quota_timezone: Tz,
}

// Parsed and validated now; read by the engine that lands with its issue.
#[allow(dead_code)]
#[derive(Debug, Clone)]
pub struct BingSettings {
    pub api_key: Option<SecretSource>,
    pub endpoint: Url,
    pub quota_timezone: Tz,
    pub daily_quota: Option<u64>,
    pub monthly_quota: Option<u64>,
}

// Parsed and validated now; read by the engine that lands with its issue.
#[allow(dead_code)]
#[derive(Debug, Clone)]
pub struct GoogleSettings {
    /// The service-account key file; `$GOOGLE_APPLICATION_CREDENTIALS` when unset.
    pub credentials: Option<PathBuf>,
    pub endpoint: Url,
    pub inspection_endpoint: Url,
    pub quota_timezone: Tz,
    pub daily_quota: u64,
    pub requests_per_minute: u32,
}

#[derive(Debug, Clone)]
pub struct SubmitSettings {
    pub max_wait: Duration,
    pub dedupe_window: Duration,
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
    pub indexnow: Option<PropertyIndexNow>,
    pub bing: Option<PropertyBing>,
    pub google: Option<PropertyGoogle>,
}

#[derive(Debug, Clone)]
pub struct PropertyIndexNow {
    pub key: SecretSource,
    /// Where the key file is served; `https://HOST/KEY.txt` when unset.
    pub key_location: Option<Url>,
    pub daily_quota: Option<u64>,
    pub quota_timezone: Tz,
}

// Parsed and validated now; read by the engine that lands with its issue.
#[allow(dead_code)]
#[derive(Debug, Clone)]
pub struct PropertyBing {
    pub site_url: String,
    pub daily_quota: Option<u64>,
    pub monthly_quota: Option<u64>,
    pub quota_timezone: Tz,
}

// Parsed and validated now; read by the engine that lands with its issue.
#[allow(dead_code)]
#[derive(Debug, Clone)]
pub struct PropertyGoogle {
    pub site_url: String,
    pub daily_quota: u64,
    pub skip_indexed: bool,
    pub quota_timezone: Tz,
}

impl Property {
    /// Whether `url` lies under this property's site.
    pub fn contains(&self, url: &Url) -> bool {
        url.as_str().starts_with(self.site.as_str())
    }

    pub fn uses(&self, engine: crate::model::EngineKind) -> bool {
        use crate::model::EngineKind::*;
        match engine {
            IndexNow => self.indexnow.is_some(),
            Bing => self.bing.is_some(),
            Google => self.google.is_some(),
        }
    }
}

impl Settings {
    /// The property a URL belongs to: the one whose site is the longest prefix.
    pub fn property_for(&self, url: &Url) -> Option<&Property> {
        self.properties.iter().filter(|p| p.contains(url)).max_by_key(|p| p.site.as_str().len())
    }

    pub fn property(&self, name: &str) -> Option<&Property> {
        self.properties.iter().find(|p| p.name == name)
    }
}

// ---------------------------------------------------------------------------
// Finding and loading.

/// The config file to use: `--config`, `$INDEXQ_CONFIG`, `./indexq.toml`,
/// `$XDG_CONFIG_HOME/indexq/config.toml`, in that order.
pub fn find(explicit: Option<&Path>) -> Result<PathBuf, ConfigError> {
    if let Some(path) = explicit {
        return Ok(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("INDEXQ_CONFIG").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
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
    Resolver { path, source, base: path.parent().unwrap_or(Path::new(".")) }.resolve(raw)
}

struct Resolver<'a> {
    path: &'a Path,
    source: &'a str,
    base: &'a Path,
}

const INDEXNOW_ENDPOINT: &str = "https://api.indexnow.org/indexnow";
const BING_ENDPOINT: &str = "https://ssl.bing.com/webmaster/api.svc/json";
const GOOGLE_ENDPOINT: &str = "https://indexing.googleapis.com";
const GOOGLE_INSPECTION_ENDPOINT: &str = "https://searchconsole.googleapis.com";

impl Resolver<'_> {
    fn err<T>(&self, value: &Spanned<T>, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.source, value.span(), key, message.into())
    }

    fn timezone(&self, value: Option<&S<String>>, key: &str, default: Tz) -> Result<Tz, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) => clock::parse_timezone(v.get_ref()).map_err(|why| {
                self.err(v, key, why)
                    .hint("use an IANA name such as \"UTC\", \"Europe/Berlin\" or \"America/Los_Angeles\"")
            }),
        }
    }

    fn duration(&self, value: Option<&S<String>>, key: &str, default: Duration) -> Result<Duration, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) => clock::parse_duration(v.get_ref()).map_err(|why| self.err(v, key, why)),
        }
    }

    fn endpoint(&self, value: Option<&S<String>>, key: &str, default: &str) -> Result<Url, ConfigError> {
        match value {
            None => Ok(Url::parse(default).expect("built-in endpoints are valid URLs")),
            Some(v) => self.service_url(v, key),
        }
    }

    /// An endpoint indexq sends credentials or submissions to: https, or
    /// http on a loopback host (tests).
    fn service_url(&self, value: &S<String>, key: &str) -> Result<Url, ConfigError> {
        let url = Url::parse(value.get_ref().trim())
            .map_err(|err| self.err(value, key, format!("`{}` is not a URL: {err}", value.get_ref())))?;
        match url.scheme() {
            "https" => Ok(url),
            "http" if is_loopback(&url) => Ok(url),
            "http" => Err(self
                .err(value, key, format!("`{url}` uses http:// on a host that is not loopback"))
                .hint("use https:// (plain http is only allowed for 127.0.0.1, ::1 and localhost, for tests)")),
            other => Err(self.err(value, key, format!("`{url}` has scheme `{other}`; expected https://"))),
        }
    }

    fn site_url(&self, value: &S<String>, key: &str) -> Result<Url, ConfigError> {
        let text = value.get_ref().trim();
        let url = Url::parse(text).map_err(|err| {
            self.err(value, key, format!("`{text}` is not an absolute URL: {err}"))
                .hint("write the site with its scheme, e.g. \"https://example.com/\"")
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(self
                .err(value, key, format!("`{text}` is not an http(s) URL with a host"))
                .hint("write the site with its scheme, e.g. \"https://example.com/\""));
        }
        Ok(url)
    }

    fn path_value(&self, value: &str) -> PathBuf {
        let path = expand_home(value.trim());
        if path.is_absolute() {
            path
        } else {
            self.base.join(path)
        }
    }

    fn secret(
        &self,
        env: Option<&S<String>>,
        file: Option<&S<String>>,
        prefix: &str,
        what: &str,
    ) -> Result<Option<SecretSource>, ConfigError> {
        match (env, file) {
            (Some(e), Some(_)) => Err(self.err(
                e,
                &format!("{prefix}_env"),
                format!("both {prefix}_env and {prefix}_file are set; {what} must come from one place"),
            )),
            (Some(e), None) => {
                let var = e.get_ref().trim();
                if var.is_empty() || var.contains(['=', '\0']) || var.starts_with('$') {
                    return Err(self
                        .err(e, &format!("{prefix}_env"), format!("`{var}` is not an environment variable name"))
                        .hint(format!("{prefix}_env names the variable that holds {what}, e.g. \"INDEXNOW_KEY\"; never put the secret itself in the config")));
                }
                let (line, col) = line_col(self.source, e.span().start);
                Ok(Some(SecretSource::Env {
                    var: var.to_string(),
                    place: format!("{}:{line}:{col}: `{prefix}_env`", self.path.display()),
                }))
            }
            (None, Some(f)) => {
                let (line, col) = line_col(self.source, f.span().start);
                Ok(Some(SecretSource::File {
                    path: self.path_value(f.get_ref()),
                    place: format!("{}:{line}:{col}: `{prefix}_file`", self.path.display()),
                }))
            }
            (None, None) => Ok(None),
        }
    }

    /// A reservation's lease is not renewed while its request is in flight:
    /// a lease no longer than `[http] timeout` would let another host take
    /// the URL back and send it again while the first request may still
    /// reach the engine. Refused, at the lease if it is written, else at
    /// the timeout.
    fn check_lease(&self, raw: &RawConfig, lease: Duration, timeout: Duration) -> Result<(), ConfigError> {
        if lease > timeout {
            return Ok(());
        }
        // The error is placed at the lease if it is written, else at the
        // timeout; the other key, if written, is named with its place.
        let lease_text = match &raw.ledger_lease {
            Some(v) => v.get_ref().trim().to_string(),
            None => "10m, the default".into(),
        };
        let timeout_text = match (&raw.http.timeout, &raw.ledger_lease) {
            (Some(v), Some(_)) => {
                let (line, column) = line_col(self.source, v.span().start);
                format!("{}, {}:{line}:{column}", v.get_ref().trim(), self.path.display())
            }
            (Some(v), None) => v.get_ref().trim().to_string(),
            (None, _) => "30s, the default".into(),
        };
        let message = format!(
            "`ledger_lease` ({lease_text}) must be longer than `http.timeout` ({timeout_text}): a reservation is not \
             renewed while its request is in flight, so another host could send the same URL again while it is \
             still on the wire"
        );
        let hint = "make `ledger_lease` (top level) longer than `timeout` under [http] — the defaults, 10m and 30s, \
                    leave room for the key-file check or token refresh a request may need — or shorten the timeout";
        let error = match (&raw.ledger_lease, &raw.http.timeout) {
            (Some(v), _) => self.err(v, "ledger_lease", message),
            (None, Some(v)) => self.err(v, "http.timeout", message),
            // Unreachable with the defaults (10m > 30s); named all the same.
            (None, None) => ConfigError { place: self.path.display().to_string(), message, hint: None },
        };
        Err(error.hint(hint))
    }

    fn resolve(&self, raw: RawConfig) -> Result<Settings, ConfigError> {
        let ledger = match std::env::var("INDEXQ_LEDGER").ok().filter(|v| !v.is_empty()) {
            Some(value) => LedgerLocation::parse(&value).map_err(|why| ConfigError {
                place: "`$INDEXQ_LEDGER`".into(),
                message: why,
                hint: Some(POSTGRES_URL_HINT.into()),
            })?,
            None => match raw.ledger.as_ref().map(|v| (v, postgres_location(v.get_ref()))) {
                Some((_, Some(Ok(url)))) => LedgerLocation::Postgres(url),
                // The value is not shown: it may hold a password.
                Some((v, Some(Err(why)))) => return Err(self.err(v, "ledger", why).hint(POSTGRES_URL_HINT)),
                Some((v, None)) if v.get_ref().contains("://") => {
                    return Err(self.err(v, "ledger", "a ledger is a SQLite file path or a postgres:// URL").hint(
                        "write a file path, e.g. \"/var/lib/indexq/ledger.db\", or \"postgres://user@host:5432/db\"",
                    ));
                }
                Some((v, None)) => LedgerLocation::Sqlite(self.path_value(v.get_ref())),
                None => LedgerLocation::Sqlite(default_ledger_path()),
            },
        };
        let schema = match &raw.ledger_schema {
            None => "indexq".to_string(),
            Some(v) => {
                check_schema_name(v.get_ref()).map_err(|why| {
                    self.err(v, "ledger_schema", why)
                        .hint("use lowercase letters, digits and _, starting with a letter or _ (at most 63)")
                })?;
                v.get_ref().clone()
            }
        };
        let ledger_options = LedgerOptions {
            schema,
            lease: self.duration(raw.ledger_lease.as_ref(), "ledger_lease", Duration::from_secs(600))?,
            timeout: self.duration(raw.ledger_timeout.as_ref(), "ledger_timeout", Duration::from_secs(10))?,
            password: self.secret(
                raw.ledger_password_env.as_ref(),
                raw.ledger_password_file.as_ref(),
                "ledger_password",
                "the database password",
            )?,
        };
        for (value, key) in [(&raw.ledger_lease, "ledger_lease"), (&raw.ledger_timeout, "ledger_timeout")] {
            if let Some(v) = value.as_ref().filter(|v| clock::parse_duration(v.get_ref()).is_ok_and(|d| d.is_zero())) {
                return Err(self.err(v, key, "must be longer than 0s"));
            }
        }

        let utc = Tz::UTC;
        let endpoints = match &raw.indexnow.endpoints {
            None => vec![Url::parse(INDEXNOW_ENDPOINT).expect("built-in endpoint is a valid URL")],
            Some(list) => {
                let mut urls = Vec::new();
                for v in list {
                    let url = self.service_url(v, "indexnow.endpoints")?;
                    if urls.contains(&url) {
                        return Err(self.err(v, "indexnow.endpoints", format!("`{url}` is listed twice")));
                    }
                    urls.push(url);
                }
                urls
            }
        };
        let indexnow = IndexNowSettings {
            endpoints,
            daily_quota: raw.indexnow.daily_quota,
            quota_timezone: self.timezone(raw.indexnow.quota_timezone.as_ref(), "indexnow.quota_timezone", utc)?,
        };
        let bing = BingSettings {
            api_key: self.secret(
                raw.bing.api_key_env.as_ref(),
                raw.bing.api_key_file.as_ref(),
                "bing.api_key",
                "the Bing Webmaster API key",
            )?,
            endpoint: self.endpoint(raw.bing.endpoint.as_ref(), "bing.endpoint", BING_ENDPOINT)?,
            quota_timezone: self.timezone(raw.bing.quota_timezone.as_ref(), "bing.quota_timezone", utc)?,
            daily_quota: raw.bing.daily_quota,
            monthly_quota: raw.bing.monthly_quota,
        };
        let google_tz = chrono_tz::America::Los_Angeles;
        let google = GoogleSettings {
            credentials: raw.google.credentials.as_ref().map(|v| self.path_value(v.get_ref())),
            endpoint: self.endpoint(raw.google.endpoint.as_ref(), "google.endpoint", GOOGLE_ENDPOINT)?,
            inspection_endpoint: self.endpoint(
                raw.google.inspection_endpoint.as_ref(),
                "google.inspection_endpoint",
                GOOGLE_INSPECTION_ENDPOINT,
            )?,
            quota_timezone: self.timezone(raw.google.quota_timezone.as_ref(), "google.quota_timezone", google_tz)?,
            daily_quota: raw.google.daily_quota.unwrap_or(200),
            requests_per_minute: match &raw.google.requests_per_minute {
                None => 380,
                Some(v) if *v.get_ref() == 0 => {
                    return Err(self.err(v, "google.requests_per_minute", "must be at least 1"))
                }
                Some(v) => *v.get_ref(),
            },
        };
        let submit = SubmitSettings {
            max_wait: self.duration(raw.submit.max_wait.as_ref(), "submit.max_wait", Duration::from_secs(90))?,
            dedupe_window: self.duration(
                raw.submit.dedupe_window.as_ref(),
                "submit.dedupe_window",
                Duration::from_secs(24 * 3600),
            )?,
        };
        let r = &raw.retry;
        let retry = RetrySettings {
            transient_first: self.duration(
                r.transient_first.as_ref(),
                "retry.transient_first",
                Duration::from_secs(30),
            )?,
            transient_cap: self.duration(
                r.transient_cap.as_ref(),
                "retry.transient_cap",
                Duration::from_secs(6 * 3600),
            )?,
            transient_deadline: self.duration(
                r.transient_deadline.as_ref(),
                "retry.transient_deadline",
                Duration::from_secs(3 * 86400),
            )?,
            key_pending_first: self.duration(
                r.key_pending_first.as_ref(),
                "retry.key_pending_first",
                Duration::from_secs(60),
            )?,
            key_pending_deadline: self.duration(
                r.key_pending_deadline.as_ref(),
                "retry.key_pending_deadline",
                Duration::from_secs(86400),
            )?,
        };
        let http = HttpSettings {
            connect_timeout: self.duration(
                raw.http.connect_timeout.as_ref(),
                "http.connect_timeout",
                Duration::from_secs(10),
            )?,
            timeout: self.duration(raw.http.timeout.as_ref(), "http.timeout", Duration::from_secs(30))?,
        };
        for (value, key) in [(&raw.http.connect_timeout, "http.connect_timeout"), (&raw.http.timeout, "http.timeout")] {
            if let Some(v) = value {
                if clock::parse_duration(v.get_ref()).is_ok_and(|d| d.is_zero()) {
                    return Err(self.err(v, key, "a timeout of 0 would fail every request"));
                }
            }
        }
        self.check_lease(&raw, ledger_options.lease, http.timeout)?;

        let sitemap = SitemapSettings {
            max_bytes: match &raw.sitemap.max_bytes {
                None => 50 * 1024 * 1024,
                Some(v) if *v.get_ref() < 1024 => {
                    return Err(self.err(v, "sitemap.max_bytes", "must be at least 1024 (bytes)"));
                }
                Some(v) => *v.get_ref(),
            },
        };
        let mut properties: Vec<Property> = Vec::new();
        for (i, p) in raw.property.iter().enumerate() {
            let prefix = format!("property[{i}]");
            let rp = p.get_ref();
            let name = rp.name.get_ref().trim().to_string();
            if name.is_empty() {
                return Err(self.err(&rp.name, &format!("{prefix}.name"), "the name is empty"));
            }
            if properties.iter().any(|q| q.name == name) {
                return Err(self.err(
                    &rp.name,
                    &format!("{prefix}.name"),
                    format!("another property is already named `{name}`"),
                ));
            }
            let site = self.site_url(&rp.site, &format!("{prefix}.site"))?;
            if let Some(other) = properties.iter().find(|q| q.site == site) {
                return Err(self.err(
                    &rp.site,
                    &format!("{prefix}.site"),
                    format!("property `{}` already has the site {site}", other.name),
                ));
            }
            let indexnow = match &rp.indexnow {
                None => None,
                Some(t) => {
                    let table = t.get_ref();
                    let key = self
                        .secret(table.key_env.as_ref(), table.key_file.as_ref(), &format!("{prefix}.indexnow.key"), "the IndexNow key")?
                        .ok_or_else(|| {
                            self.err(t, &format!("{prefix}.indexnow"), "an indexnow table needs key_env or key_file")
                                .hint("run `indexq key generate` (or pick 8-128 characters of a-z, A-Z, 0-9 and -), publish it at the site root as KEY.txt, and set key_env = \"INDEXNOW_KEY\"")
                        })?;
                    let key_location = match &table.key_location {
                        None => None,
                        Some(v) => Some(self.site_url(v, &format!("{prefix}.indexnow.key_location"))?),
                    };
                    Some(PropertyIndexNow {
                        key,
                        key_location,
                        daily_quota: table.daily_quota,
                        quota_timezone: self.timezone(
                            table.quota_timezone.as_ref(),
                            &format!("{prefix}.indexnow.quota_timezone"),
                            indexnow.quota_timezone,
                        )?,
                    })
                }
            };
            let bing_table = match &rp.bing {
                None => None,
                Some(t) => {
                    let table = t.get_ref();
                    if bing.api_key.is_none() {
                        return Err(self
                            .err(
                                t,
                                &format!("{prefix}.bing"),
                                "this property uses Bing but [bing] has no api_key_env or api_key_file",
                            )
                            .hint("add api_key_env = \"BING_WEBMASTER_API_KEY\" to [bing] and export the key"));
                    }
                    Some(PropertyBing {
                        site_url: table
                            .site_url
                            .as_ref()
                            .map_or_else(|| site.to_string(), |v| v.get_ref().trim().to_string()),
                        daily_quota: table.daily_quota,
                        monthly_quota: table.monthly_quota,
                        quota_timezone: self.timezone(
                            table.quota_timezone.as_ref(),
                            &format!("{prefix}.bing.quota_timezone"),
                            bing.quota_timezone,
                        )?,
                    })
                }
            };
            let google_table = match &rp.google {
                None => None,
                Some(t) => {
                    let table = t.get_ref();
                    Some(PropertyGoogle {
                        site_url: table
                            .site_url
                            .as_ref()
                            .map_or_else(|| site.to_string(), |v| v.get_ref().trim().to_string()),
                        daily_quota: table.daily_quota.unwrap_or(11),
                        skip_indexed: table.skip_indexed.unwrap_or(false),
                        quota_timezone: self.timezone(
                            table.quota_timezone.as_ref(),
                            &format!("{prefix}.google.quota_timezone"),
                            google.quota_timezone,
                        )?,
                    })
                }
            };
            properties.push(Property { name, site, indexnow, bing: bing_table, google: google_table });
        }

        Ok(Settings {
            file: self.path.to_path_buf(),
            ledger,
            ledger_options,
            indexnow,
            bing,
            google,
            submit,
            retry,
            http,
            sitemap,
            properties,
        })
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn expand_home(path: &str) -> PathBuf {
    match path.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(path), |h| h.join(rest)),
        None => PathBuf::from(path),
    }
}

/// A PostgreSQL schema name indexq uses as written in SQL: lowercase
/// letters, digits and `_`, not starting with a digit, at most 63 bytes.
pub fn check_schema_name(name: &str) -> Result<(), String> {
    let valid = name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!("`{name}` is not a schema name indexq accepts (lowercase letters, digits and _, at most 63)"))
    }
}

/// `$XDG_STATE_HOME/indexq/ledger.db` (`~/.local/state/indexq/ledger.db`).
pub fn default_ledger_path() -> PathBuf {
    dirs::state_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".local").join("state")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("indexq")
        .join("ledger.db")
}

/// The rules for IndexNow keys: 8 to 128 characters of a-z, A-Z, 0-9 and `-`.
pub fn check_indexnow_key(key: &str) -> Result<(), String> {
    let len = key.chars().count();
    if !(8..=128).contains(&len) {
        return Err(format!("the IndexNow key has {len} characters; it must have 8 to 128"));
    }
    if let Some(bad) = key.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-')) {
        return Err(format!(
            "the IndexNow key contains {:?}; only a-z, A-Z, 0-9 and - are allowed",
            if bad.is_ascii_graphic() { bad.to_string() } else { format!("U+{:04X}", bad as u32) }
        ));
    }
    Ok(())
}

/// The characters a Bing Webmaster API key may have. Bing documents no
/// alphabet (its keys are 32 letters and digits in practice); indexq
/// accepts what travels in the `apikey` query parameter as it is — the
/// unreserved characters of RFC 3986 — so the key has one form on the wire
/// and in every redaction.
pub fn check_bing_key(key: &str) -> Result<(), String> {
    let Some((at, bad)) = key.chars().enumerate().find(|(_, c)| !(c.is_ascii_alphanumeric() || "-._~".contains(*c)))
    else {
        return Ok(());
    };
    // The character itself is not shown: it is part of a secret.
    let kind = match bad {
        c if c.is_whitespace() => "white space",
        c if c.is_control() => "a control character",
        c if !c.is_ascii() => "a non-ASCII character",
        _ => "a character a URL must encode",
    };
    Err(format!(
        "the Bing Webmaster API key has {kind} (character {} of {}); only A-Z, a-z, 0-9 and - . _ ~ are accepted, \
         the characters that travel in a URL as they are",
        at + 1,
        key.chars().count()
    ))
}

/// Reads the Bing Webmaster API key and checks its characters.
pub fn read_bing_key(source: &SecretSource) -> Result<Secret, ConfigError> {
    let key = source.read()?;
    check_bing_key(key.expose()).map_err(|why| ConfigError {
        place: source.place().to_string(),
        message: why,
        hint: Some(
            "copy the key again from Bing Webmaster Tools (Settings → API access → API key): keys are letters and \
             digits; check that the variable or file holds nothing else (quotes, spaces, a second line)"
                .into(),
        ),
    })?;
    Ok(key)
}

/// Reads a property's IndexNow key and checks it against the key rules.
pub fn read_indexnow_key(table: &PropertyIndexNow) -> Result<Secret, ConfigError> {
    let key = table.key.read()?;
    check_indexnow_key(key.expose()).map_err(|why| ConfigError {
        place: table.key.place().to_string(),
        message: why,
        hint: Some("generate a valid key with `indexq key generate`, or 32 random hex characters".into()),
    })?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Settings, ConfigError> {
        parse(Path::new("indexq.toml"), text)
    }

    const MINIMAL: &str = r#"
[[property]]
name = "example.com"
site = "https://example.com/"
indexnow = { key_env = "INDEXNOW_KEY" }
"#;

    #[test]
    fn minimal_config_gets_defaults() {
        let s = parse_str(MINIMAL).unwrap();
        assert_eq!(s.indexnow.endpoints[0].as_str(), INDEXNOW_ENDPOINT);
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

    fn error_of(text: &str) -> ConfigError {
        match parse_str(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unknown_key_names_line_and_column() {
        let e = error_of("[indexnow]\nendpoints = []\ncolour = 1\n");
        assert_eq!(e.place, "indexq.toml:3:1");
        assert!(e.message.contains("unknown field `colour`"), "{}", e.message);
    }

    #[test]
    fn bad_timezone_names_the_key() {
        let e = error_of("[bing]\nquota_timezone = \"Mars/Olympus\"\n");
        assert_eq!(e.place, "indexq.toml:2:18: `bing.quota_timezone`");
    }

    #[test]
    fn relative_site_is_an_error() {
        let e = error_of("[[property]]\nname = \"a\"\nsite = \"example.com\"\n");
        assert_eq!(e.place, "indexq.toml:3:8: `property[0].site`");
    }

    #[test]
    fn http_endpoint_only_on_loopback() {
        let e = error_of("[indexnow]\nendpoints = [\"http://search.example/indexnow\"]\n");
        assert_eq!(e.place, "indexq.toml:2:14: `indexnow.endpoints`");
        assert!(parse_str("[indexnow]\nendpoints = [\"http://127.0.0.1:8080/indexnow\"]\n").is_ok());
        assert!(parse_str("[google]\nendpoint = \"http://localhost:1/\"\n").is_ok());
        let e = error_of("[google]\nendpoint = \"http://10.0.0.1/\"\n");
        assert!(e.place.ends_with("`google.endpoint`"));
    }

    #[test]
    fn bad_duration_names_the_key() {
        let e = error_of("[submit]\nmax_wait = \"soon\"\n");
        assert_eq!(e.place, "indexq.toml:2:12: `submit.max_wait`");
    }

    #[test]
    fn indexnow_table_needs_a_key_source() {
        let e = error_of("[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nindexnow = { key_location = \"https://a.example/k.txt\" }\n");
        assert!(e.place.ends_with("`property[0].indexnow`"), "{}", e.place);
    }

    #[test]
    fn bing_property_needs_an_api_key() {
        let e = error_of("[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nbing = {}\n");
        assert!(e.place.ends_with("`property[0].bing`"), "{}", e.place);
    }

    #[test]
    fn key_rules() {
        assert!(check_indexnow_key("abcd-1234").is_ok());
        assert!(check_indexnow_key("short").is_err());
        assert!(check_indexnow_key(&"a".repeat(129)).is_err());
        assert!(check_indexnow_key("has space1").is_err());
        assert!(check_indexnow_key("under_score").is_err());
    }

    #[test]
    fn key_file_errors_name_the_key_and_never_the_value() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key.txt"), "not a valid key!\n").unwrap();
        let path = dir.path().join("indexq.toml");
        let text = "[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nindexnow = { key_file = \"key.txt\" }\n";
        let s = parse(&path, text).unwrap();
        let e = read_indexnow_key(s.properties[0].indexnow.as_ref().unwrap()).unwrap_err();
        assert!(e.place.ends_with(":4:25: `property[0].indexnow.key_file`"), "{}", e.place);
        assert!(!e.to_string().contains("not a valid key"));
    }

    #[test]
    fn longest_site_prefix_wins() {
        let text = "[[property]]\nname = \"root\"\nsite = \"https://a.example/\"\n[[property]]\nname = \"blog\"\nsite = \"https://a.example/blog/\"\n";
        let s = parse_str(text).unwrap();
        let url = Url::parse("https://a.example/blog/post").unwrap();
        assert_eq!(s.property_for(&url).unwrap().name, "blog");
        let url = Url::parse("https://a.example/about").unwrap();
        assert_eq!(s.property_for(&url).unwrap().name, "root");
        assert!(s.property_for(&Url::parse("https://b.example/").unwrap()).is_none());
    }

    #[test]
    fn postgres_urls_need_their_slashes_and_a_host() {
        for bad in [
            "postgres:indexq:PW-7Kq2@db.example/indexq",
            "postgresql:indexq:PW-7Kq2@db.example",
            "POSTGRES:/indexq:PW-7Kq2@db.example",
            "Postgres://",
            "postgres:///indexq",
            "postgres://u:PW-7Kq2@db.example:99999/indexq",
        ] {
            let why = postgres_location(bad).expect("meant as a database").expect_err(bad);
            assert!(!why.contains("PW-7Kq2"), "the value is never quoted: {why}");
            let e = error_of(&format!("ledger = \"{bad}\"\n"));
            assert_eq!(e.place, "indexq.toml:1:10: `ledger`");
            assert!(!e.to_string().contains("PW-7Kq2") && e.hint.is_some(), "{e}");
        }
        let ok = |v: &str| postgres_location(v).expect("a database").expect(v);
        assert_eq!(ok("postgres://indexq@db.example:5432/indexq"), "postgres://indexq@db.example:5432/indexq");
        assert_eq!(ok(" PostgreSQL://u@db.example/d "), "postgresql://u@db.example/d", "the scheme in lower case");
        assert_eq!(ok("postgres:///indexq?host=/run/postgresql"), "postgres:///indexq?host=/run/postgresql");
        for path in ["./ledger.db", "postgres.db", "/var/lib/postgres:x/ledger.db", "~/ledger.db"] {
            assert!(postgres_location(path).is_none(), "{path} is a file");
        }
        assert_eq!(LedgerLocation::parse("postgres.db"), Ok(LedgerLocation::Sqlite("postgres.db".into())));
        assert!(LedgerLocation::parse("postgres:u:PW@h").is_err());
    }

    #[test]
    fn a_lease_must_outlast_a_request() {
        let e = error_of("ledger_lease = \"20s\"\n[http]\ntimeout = \"30s\"\n");
        assert_eq!(e.place, "indexq.toml:1:16: `ledger_lease`");
        assert!(e.message.contains("`http.timeout` (30s, indexq.toml:3:11)"), "{}", e.message);
        assert!(e.hint.is_some());
        let e = error_of("ledger_lease = \"30s\"\n");
        assert!(e.message.contains("`http.timeout` (30s, the default)"), "{}", e.message);
        let e = error_of("[http]\ntimeout = \"11m\"\n");
        assert_eq!(e.place, "indexq.toml:2:11: `http.timeout`");
        assert!(e.message.contains("`ledger_lease` (10m, the default)"), "{}", e.message);
        let s = parse_str("ledger_lease = \"31s\"\n[http]\ntimeout = \"30s\"\n").unwrap();
        assert_eq!(s.ledger_options.lease, Duration::from_secs(31));
    }

    #[test]
    fn bing_keys_are_what_a_url_carries_as_is() {
        for good in ["0123456789abcdefABCDEF0123456789", "sampleapikeyEDECC1EA4AE341CC8B6", "a-b.c_d~e"] {
            assert!(check_bing_key(good).is_ok(), "{good}");
        }
        for (bad, kind) in [
            ("abc+def/ghi=", "a character a URL must encode (character 4 of 12)"),
            ("abc def", "white space"),
            ("abc%41def", "a character a URL must encode"),
            ("abc\u{7f}", "a control character"),
            ("clé", "a non-ASCII character"),
        ] {
            let why = check_bing_key(bad).unwrap_err();
            assert!(why.contains(kind), "{bad:?}: {why}");
            assert!(!why.contains(bad), "the key is never quoted: {why}");
        }
    }

    #[test]
    fn secrets_do_not_show_in_debug() {
        assert_eq!(format!("{:?}", Secret("hunter2hunter2".into())), "Secret([REDACTED])");
    }
}
