//! The top level: where the ledger lives and how it is used (`ledger`,
//! `ledger_schema`, `ledger_lease`, `ledger_timeout`, `ledger_password_*`),
//! and the rule that ties the lease to `[http] timeout`.

use std::time::Duration;

use super::values::written_zero;
use super::Resolver;
use crate::config::error::line_col;
use crate::config::ledger::{check_schema_name, ledger_value};
use crate::config::raw::RawConfig;
use crate::config::{defaults, ConfigError, LedgerLocation, LedgerOptions};

impl Resolver<'_> {
    /// The top-level keys: the ledger's location (`$INDEXQ_LEDGER` first) and options.
    pub(super) fn ledger(&self, raw: &RawConfig) -> Result<(LedgerLocation, LedgerOptions), ConfigError> {
        // Neither value is ever shown in an error: it may hold a password.
        let location = match std::env::var("INDEXQ_LEDGER").ok().filter(|v| !v.is_empty()) {
            Some(value) => LedgerLocation::parse(&value).map_err(|why| ConfigError {
                place: "`$INDEXQ_LEDGER`".into(),
                message: why.message,
                hint: Some(why.hint.into()),
            })?,
            None => match &raw.ledger {
                Some(v) => match ledger_value(v.get_ref()) {
                    Ok(Some(url)) => LedgerLocation::Postgres(url),
                    Ok(None) => LedgerLocation::Sqlite(self.path_value(v.get_ref())),
                    Err(why) => return Err(self.err(v, "ledger", why.message).hint(why.hint)),
                },
                None => LedgerLocation::Sqlite(defaults::ledger_path()),
            },
        };
        let schema = match &raw.ledger_schema {
            None => defaults::LEDGER_SCHEMA.to_string(),
            Some(v) => {
                check_schema_name(v.get_ref()).map_err(|why| {
                    self.err(v, "ledger_schema", why)
                        .hint("use lowercase letters, digits and _, starting with a letter or _ (at most 63)")
                })?;
                v.get_ref().clone()
            }
        };
        let options = LedgerOptions {
            schema,
            lease: self.duration(raw.ledger_lease.as_ref(), "ledger_lease", defaults::LEDGER_LEASE)?,
            timeout: self.duration(raw.ledger_timeout.as_ref(), "ledger_timeout", defaults::LEDGER_TIMEOUT)?,
            password: self.secret(
                raw.ledger_password_env.as_ref(),
                raw.ledger_password_file.as_ref(),
                "ledger_password",
                "the database password",
            )?,
        };
        for (value, key) in [(&raw.ledger_lease, "ledger_lease"), (&raw.ledger_timeout, "ledger_timeout")] {
            if let Some(v) = written_zero(value.as_ref()) {
                return Err(self.err(v, key, "must be longer than 0s"));
            }
        }
        Ok((location, options))
    }

    /// A reservation's lease is not renewed while its request is in flight:
    /// a lease no longer than `[http] timeout` would let another host take
    /// the URL back and send it again while the first request may still
    /// reach the engine. Refused, at the lease if it is written, else at
    /// the timeout.
    pub(super) fn check_lease(&self, raw: &RawConfig, lease: Duration, timeout: Duration) -> Result<(), ConfigError> {
        if lease > timeout {
            return Ok(());
        }
        // The error is placed at the lease if it is written, else at the
        // timeout; the other key, if written, is named with its place.
        let lease_text = match &raw.ledger_lease {
            Some(v) => v.get_ref().trim().to_string(),
            None => format!("{}, the default", defaults::written(defaults::LEDGER_LEASE)),
        };
        let timeout_text = match (&raw.http.timeout, &raw.ledger_lease) {
            (Some(v), Some(_)) => {
                let (line, column) = line_col(self.source, v.span().start);
                format!("{}, {}:{line}:{column}", v.get_ref().trim(), self.path.display())
            }
            (Some(v), None) => v.get_ref().trim().to_string(),
            (None, _) => format!("{}, the default", defaults::written(defaults::HTTP_TIMEOUT)),
        };
        let message = format!(
            "`ledger_lease` ({lease_text}) must be longer than `http.timeout` ({timeout_text}): a reservation is not \
             renewed while its request is in flight, so another host could send the same URL again while it is \
             still on the wire"
        );
        let hint = format!(
            "make `ledger_lease` (top level) longer than `timeout` under [http] — the defaults, {} and {}, leave \
             room for the key-file check or token refresh a request may need — or shorten the timeout",
            defaults::written(defaults::LEDGER_LEASE),
            defaults::written(defaults::HTTP_TIMEOUT)
        );
        let error = match (&raw.ledger_lease, &raw.http.timeout) {
            (Some(v), _) => self.err(v, "ledger_lease", message),
            (None, Some(v)) => self.err(v, "http.timeout", message),
            // Unreachable with the defaults (10m > 30s); named all the same.
            (None, None) => ConfigError { place: self.path.display().to_string(), message, hint: None },
        };
        Err(error.hint(hint))
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{error_of, parse_str};
    use std::time::Duration;

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
}
