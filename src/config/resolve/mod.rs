//! From the file as written ([`RawConfig`]) to [`Settings`]: one function
//! per table — the top level and the ledger (`ledger.rs`), the engine tables
//! (`engines.rs`), the tables that shape a run (`run.rs`) and
//! `[[property]]` (`property.rs`) — over the value readers of `values.rs`.
//! Tables are resolved in a fixed order and the first problem is the one
//! reported; every default comes from [`defaults`](super::defaults).

mod engines;
mod fetch_hosts;
mod ledger;
mod notify;
mod property;
mod run;
mod serve;
mod values;

use std::path::Path;
use toml::Spanned;

use super::raw::RawConfig;
use super::{ConfigError, Settings};

/// Resolves the parsed file at `path` (its text is `source`, for places).
pub(super) fn resolve(path: &Path, source: &str, raw: RawConfig) -> Result<Settings, ConfigError> {
    Resolver { path, source, base: path.parent().unwrap_or(Path::new(".")) }.resolve(raw)
}

struct Resolver<'a> {
    /// The file, as errors name it.
    path: &'a Path,
    /// Its text, for the line and column of a value.
    source: &'a str,
    /// Where relative paths start: the file's directory.
    base: &'a Path,
}

impl Resolver<'_> {
    fn err<T>(&self, value: &Spanned<T>, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, self.source, value.span(), key, message.into())
    }

    fn resolve(&self, raw: RawConfig) -> Result<Settings, ConfigError> {
        let (ledger, ledger_options) = self.ledger(&raw)?;
        let indexnow = self.indexnow(&raw.indexnow)?;
        let bing = self.bing(&raw.bing)?;
        let google = self.google(&raw.google)?;
        let baidu = self.baidu(&raw.baidu)?;
        let yandex = self.yandex(&raw.yandex)?;
        let submit = self.submit(&raw.submit)?;
        let retry = self.retry(&raw.retry)?;
        let http = self.http(&raw.http)?;
        self.check_lease(&raw, ledger_options.lease, http.timeout)?;
        let sitemap = self.sitemap(&raw.sitemap)?;
        let engines = property::EngineTables {
            indexnow: &indexnow,
            bing: &bing,
            google: &google,
            baidu: &baidu,
            yandex: &yandex,
        };
        let properties = self.properties(&raw.property, &engines)?;
        let serve = self.serve(&raw.serve, &properties)?;
        let notify = self.notify(&raw.notify)?;
        Ok(Settings {
            file: self.path.to_path_buf(),
            ledger,
            ledger_options,
            indexnow,
            bing,
            google,
            baidu,
            yandex,
            submit,
            retry,
            http,
            sitemap,
            serve,
            notify,
            properties,
            narrowed_to: None,
        })
    }
}
