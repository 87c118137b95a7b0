//! Reaching the database: the connection with its session set up (schema,
//! timeouts, UTC), TLS for `sslmode=require`, the pgpass file, and a
//! driver error said on one line.

use super::session::Statements;
use super::{pg, Client, Duration, LedgerError, NoTls, PgOptions, Result};

/// A connection with the session set up: schema, timeouts, UTC; with
/// `read_only`, a session whose transactions can write nothing (set when
/// it starts, as the rest: no `SET` that a pooler could pass on).
pub(super) fn connect(options: &PgOptions, read_only: bool) -> std::result::Result<Client, String> {
    let mut config: pg::Config =
        options.url.parse().map_err(|e: pg::Error| format!("not a valid PostgreSQL URL ({})", e))?;
    if let Some(password) = &options.password {
        config.password(password);
    }
    let ms = options.timeout.as_millis().max(1);
    config
        .connect_timeout(options.timeout)
        .tcp_user_timeout(options.timeout)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30))
        .application_name("indexq")
        .options(&format!(
            "-c search_path={} -c statement_timeout={ms} -c lock_timeout={ms} \
             -c idle_in_transaction_session_timeout={} -c TimeZone=UTC{}",
            options.schema,
            ms * 4,
            if read_only { " -c default_transaction_read_only=on" } else { "" }
        ));
    let client = match config.get_ssl_mode() {
        pg::config::SslMode::Require => config.connect(tls()),
        _ => config.connect(NoTls),
    };
    client.map_err(|e| {
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .map(|h| match h {
                pg::config::Host::Tcp(h) => h.clone(),
                pg::config::Host::Unix(p) => p.display().to_string(),
            })
            .collect();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        format!("cannot connect to {}:{port}: {}", hosts.join(","), describe(&e))
    })
}

/// The ledger's connection, reopened when it is lost: a server restarted,
/// a failover, a network cut. The server's end closes the connection (a
/// restart says so; a cut network shows as the `tcp_user_timeout` ending a
/// write), and the next transaction finds it closed and reconnects first,
/// with the same session. While the server stays away, tries are spaced
/// by `schedule::reconnect_after`; a transaction asked for in between
/// fails at once as `Unavailable`, so that `serve` answers 503 without
/// waiting for a connect timeout on every request.
///
/// Nothing is retried on the new connection: a transaction the loss cut is
/// either committed or not, and the caller's error says it failed, as it
/// did before (a claim cut so is reconciled, an admission is asked again).
pub(super) struct Conn {
    /// `None` only while the ledger is dropped.
    client: Option<Client>,
    /// The statements `client` has prepared.
    statements: Statements,
    options: PgOptions,
    /// Since the connection was found lost: the failed tries to reopen it,
    /// and the earliest moment of the next.
    lost: Option<(u32, std::time::Instant)>,
    /// Whether every commit checks the spans' rules first (a
    /// test's ledger that asked for it: `PgLedger::check_spans`).
    #[cfg(test)]
    pub(super) check_spans: bool,
}

impl Conn {
    pub(super) fn new(client: Client, options: &PgOptions) -> Conn {
        Conn {
            client: Some(client),
            statements: Statements::default(),
            options: options.clone(),
            lost: None,
            #[cfg(test)]
            check_spans: false,
        }
    }

    /// Whether its commits check the spans (never outside the tests).
    pub(super) fn checks_spans(&self) -> bool {
        #[cfg(test)]
        return self.check_spans;
        #[cfg(not(test))]
        false
    }

    /// The connection, reopened first if the server closed it, and the
    /// statements it has prepared (none when it was just reopened). Blocks
    /// (it may connect): call it off the runtime.
    pub(super) fn live(&mut self) -> Result<(&mut Client, &mut Statements)> {
        if self.client.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok((self.client.as_mut().expect("checked just above"), &mut self.statements));
        }
        let now = std::time::Instant::now();
        let (failures, next) = *self.lost.get_or_insert_with(|| {
            tracing::warn!("the connection to the ledger was lost: reopening it");
            (0, now)
        });
        if now < next {
            let message = format!(
                "the connection was lost; the next try to reopen it is in {} ms",
                (next - now).as_millis().max(1)
            );
            return Err(LedgerError::Unavailable { message: message.clone(), source: message.into() });
        }
        match connect(&self.options, false) {
            Ok(client) => {
                // The closed client's end, then the new one in its place.
                drop(self.client.replace(client));
                self.statements = Statements::default();
                self.lost = None;
                tracing::warn!(tries = failures + 1, "the connection to the ledger is reopened");
                Ok((self.client.as_mut().expect("just set"), &mut self.statements))
            }
            Err(message) => {
                let failures = failures.saturating_add(1);
                self.lost = Some((failures, now + crate::schedule::reconnect_after(failures)));
                tracing::debug!(failures, "the ledger's connection could not be reopened: {message}");
                Err(LedgerError::Unavailable { message: message.clone(), source: message.into() })
            }
        }
    }

    /// The connection as it is, reopened or not (for tests that reach into
    /// the session).
    #[cfg(test)]
    pub(super) fn as_mut(&mut self) -> Option<&mut Client> {
        self.client.as_mut()
    }

    /// The connection, to drop where the blocking client may (`off_runtime`).
    pub(super) fn take(&mut self) -> Option<Client> {
        self.client.take()
    }
}

/// TLS for `sslmode=require`: the server's certificate is checked against
/// the Mozilla roots.
pub(super) fn tls() -> tokio_postgres_rustls::MakeRustlsConnect {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("the ring provider supports the default protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// An error's whole chain on one line (the driver's top message alone is
/// often just "error connecting to server").
pub(super) fn describe(err: &pg::Error) -> String {
    if let Some(db) = err.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    crate::error::error_chain(err)
}

/// The password for `url` in the pgpass file (`$PGPASSFILE`, else
/// `~/.pgpass`), as libpq reads it: host, port, database and user must
/// match; a file others may read is ignored with a warning.
pub fn pgpass_password(url: &str) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(std::path::PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if std::fs::metadata(&path).ok()?.permissions().mode() & 0o077 != 0 {
            tracing::warn!(file = %path.display(), "ignoring a pgpass file that others may read (chmod 0600)");
            return None;
        }
    }
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str().unwrap_or("localhost").to_string();
    let port = parsed.port().unwrap_or(5432).to_string();
    let database = parsed.path().trim_start_matches('/').to_string();
    let user = match parsed.username() {
        "" => std::env::var("PGUSER").or_else(|_| std::env::var("USER")).unwrap_or_default(),
        u => u.to_string(),
    };
    let database = if database.is_empty() { user.clone() } else { database };
    let wanted = [host, port, database, user];
    std::fs::read_to_string(&path).ok()?.lines().find_map(|line| pgpass_line(line, &wanted))
}

/// The password of one pgpass line if its four fields match `wanted`.
pub(super) fn pgpass_line(line: &str, wanted: &[String; 4]) -> Option<String> {
    if line.starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    if fields.len() != 5 {
        return None;
    }
    let matches = fields[..4].iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
    matches.then(|| fields[4].clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_lines_match_like_libpq() {
        let wanted = ["db.example".to_string(), "5432".into(), "indexq".into(), "runner".into()];
        assert_eq!(pgpass_line("db.example:5432:indexq:runner:s3cret", &wanted).as_deref(), Some("s3cret"));
        assert_eq!(pgpass_line("*:*:*:runner:a\\:b\\\\c", &wanted).as_deref(), Some("a:b\\c"));
        assert_eq!(pgpass_line("other:5432:indexq:runner:x", &wanted), None);
        assert_eq!(pgpass_line("# db.example:5432:indexq:runner:x", &wanted), None);
        assert_eq!(pgpass_line("db.example:5432:indexq", &wanted), None);
    }
}
