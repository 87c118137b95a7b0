//! The kinds of value the tables hold, each read one way wherever it
//! stands: timezones, durations, endpoints (https, or http on loopback),
//! site URLs, paths (relative to the file) and secret sources. Every error
//! names the key and its place.

use chrono_tz::Tz;
use std::path::PathBuf;
use std::time::Duration;
use url::Url;

use super::Resolver;
use crate::clock;
use crate::config::error::line_col;
use crate::config::ledger::expand_home;
use crate::config::raw::S;
use crate::config::{ConfigError, SecretSource};

impl Resolver<'_> {
    pub(super) fn timezone(&self, value: Option<&S<String>>, key: &str, default: Tz) -> Result<Tz, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) => clock::parse_timezone(v.get_ref()).map_err(|why| {
                self.err(v, key, why)
                    .hint("use an IANA name such as \"UTC\", \"Europe/Berlin\" or \"America/Los_Angeles\"")
            }),
        }
    }

    pub(super) fn duration(
        &self,
        value: Option<&S<String>>,
        key: &str,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) => clock::parse_duration(v.get_ref()).map_err(|why| self.err(v, key, why)),
        }
    }

    pub(super) fn endpoint(&self, value: Option<&S<String>>, key: &str, default: &str) -> Result<Url, ConfigError> {
        match value {
            None => Ok(Url::parse(default).expect("built-in endpoints are valid URLs")),
            Some(v) => self.service_url(v, key),
        }
    }

    /// An endpoint indexq sends credentials or submissions to: https, or
    /// http on a loopback host (tests).
    pub(super) fn service_url(&self, value: &S<String>, key: &str) -> Result<Url, ConfigError> {
        let url = Url::parse(value.get_ref().trim())
            .map_err(|err| self.err(value, key, format!("`{}` is not a URL: {err}", value.get_ref())))?;
        match url.scheme() {
            "https" => Ok(url),
            "http" if crate::net::is_loopback(&url) => Ok(url),
            "http" => Err(self
                .err(value, key, format!("`{url}` uses http:// on a host that is not loopback"))
                .hint("use https:// (plain http is only allowed for 127.0.0.1, ::1 and localhost, for tests)")),
            other => Err(self.err(value, key, format!("`{url}` has scheme `{other}`; expected https://"))),
        }
    }

    pub(super) fn site_url(&self, value: &S<String>, key: &str) -> Result<Url, ConfigError> {
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

    pub(super) fn path_value(&self, value: &str) -> PathBuf {
        let path = expand_home(value.trim());
        if path.is_absolute() {
            path
        } else {
            self.base.join(path)
        }
    }

    pub(super) fn secret(
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
}

/// The value if it is a duration of zero (`0`, `0s`, `0m`…), which some keys refuse.
pub(super) fn written_zero(value: Option<&S<String>>) -> Option<&S<String>> {
    value.filter(|v| clock::parse_duration(v.get_ref()).is_ok_and(|d| d.is_zero()))
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{error_of, parse_str};

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
}
