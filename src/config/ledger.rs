//! Where the ledger lives: a SQLite file, or a PostgreSQL URL recognised by
//! its scheme (never quoted in a message: it may hold a password), and the
//! schema names indexq accepts.

use std::fmt;
use std::path::PathBuf;
use url::Url;

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

    /// A path, or a `postgres://` / `postgresql://` URL; anything else is
    /// refused (`ledger_value`), with a reason that never quotes the value
    /// (it may hold a password).
    pub fn parse(value: &str) -> Result<LedgerLocation, LedgerRefusal> {
        match ledger_value(value)? {
            Some(url) => Ok(LedgerLocation::Postgres(url)),
            None => Ok(LedgerLocation::Sqlite(expand_home(value))),
        }
    }
}

impl fmt::Debug for LedgerLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LedgerLocation({})", self.display())
    }
}

/// Why a `ledger` value (the config's, `$INDEXQ_LEDGER`, `ledger copy
/// --to`) is refused: what is wrong and what to write instead. Neither
/// quotes the value: it may hold a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRefusal {
    pub message: String,
    pub hint: &'static str,
}

/// A `ledger` value: `Some(url)` for a PostgreSQL URL (`postgres_location`),
/// `None` for a file path, or refused when it is neither — when it reads as
/// a URL whose `://` was mistyped, or as `user:password@host`, and would
/// otherwise become a file or directory named after the password (and a
/// machine that silently stops sharing the quota):
///
/// - anything with `://` that is not a PostgreSQL URL (`sqlite://…`);
/// - anything starting with `//` or `\\` (a URL without its scheme, or a
///   network path, where SQLite's locking does not hold anyway);
/// - a `:` before the first `/` or `\` (`postgres:/x`, `user:PW@host/db`,
///   `mysql:…`), except a drive letter (`C:\indexq\ledger.db`, `C:/…`): a
///   file whose name has a `:` is written `./a:b.db`;
/// - a first component followed by `//` (`postgres//…`, `postgresql;//…`);
///   `.//x` and `~//x` stay paths.
///
/// A path starting with `/`, `./`, `../` or `~/` is always a path, whatever
/// comes after (`./a:b/ledger.db`).
pub(super) fn ledger_value(value: &str) -> Result<Option<String>, LedgerRefusal> {
    if let Some(url) = postgres_location(value) {
        return url.map(Some).map_err(|message| LedgerRefusal { message, hint: POSTGRES_URL_HINT });
    }
    let value = value.trim();
    let not_a_path = |what: &str| {
        LedgerRefusal {
        message: format!(
            "{what}: a ledger is a SQLite file path or a postgres:// URL (the value is not shown: it may hold a password)"
        ),
        hint: PATH_OR_URL_HINT,
    }
    };
    if is_key_value(value) {
        return Err(LedgerRefusal {
            message: "reads as a libpq key/value connection string (`host=… dbname=…`), not a file path (the value \
                      is not shown: it may hold a password)"
                .into(),
            hint: KEY_VALUE_HINT,
        });
    }
    if value.contains("://") {
        return Err(not_a_path("a URL that is not postgres://"));
    }
    if value.starts_with("//") || value.starts_with(r"\\") {
        return Err(not_a_path("starts with `//`, like a URL without its scheme or a network path"));
    }
    let (head, rest) = match value.find(['/', '\\']) {
        Some(at) => value.split_at(at),
        None => (value, ""),
    };
    let drive = head.len() == 2 && head.as_bytes()[0].is_ascii_alphabetic() && head.ends_with(':') && !rest.is_empty();
    if head.contains(':') && !drive {
        return Err(not_a_path(if head.contains('@') {
            "reads as user:password@host, not a file path"
        } else {
            "has a `:` before its first `/`, like a URL's scheme"
        }));
    }
    let plain_dir = matches!(head, "" | "." | ".." | "~") || drive;
    if !plain_dir && (rest.starts_with("//") || rest.starts_with(r"\\")) {
        return Err(not_a_path("its first name is followed by `//`, like a URL whose `:` is missing"));
    }
    Ok(None)
}

/// Whether `value` names one of libpq's connection keywords `host`,
/// `dbname`, `user` or `password` in its key/value form (`host=db
/// user=indexq`, spaces around `=` allowed, any case): such a value is a
/// connection string meant for PostgreSQL, never a file to create. A path
/// whose name merely holds such a word (`./user=1.db`, `/srv/host=a/l.db`)
/// is not: the word must begin the value or follow a space.
fn is_key_value(value: &str) -> bool {
    const KEYS: [&str; 4] = ["host", "dbname", "user", "password"];
    value.match_indices('=').any(|(at, _)| {
        let before = value[..at].trim_end();
        let word = before.rsplit(char::is_whitespace).next().unwrap_or_default();
        KEYS.iter().any(|k| word.eq_ignore_ascii_case(k))
    })
}

/// The hint for a ledger value in libpq's key/value form.
pub(super) const KEY_VALUE_HINT: &str =
    "write the PostgreSQL ledger as a URL, e.g. postgres://indexq@db:5432/indexq (a Unix socket: \
     postgres:///indexq?host=/run/postgresql), giving the password with ledger_password_env / \
     ledger_password_file rather than in the value";

/// The hint for a ledger value that is neither a path nor a URL.
pub(super) const PATH_OR_URL_HINT: &str =
    "write a file path, e.g. \"/var/lib/indexq/ledger.db\" (\"./a:b.db\" for a file here whose name has a `:`), or \
     postgres://user@host:5432/db with the `://`, giving the password with ledger_password_env / ledger_password_file \
     rather than in the URL";

/// A `ledger` value that starts with `postgres:` or `postgresql:`, in any
/// case: `None` for anything else (a SQLite path). It must be a URL with
/// `//` and a host (or a `host=` parameter: a Unix socket); it comes back
/// with its scheme in lower case (the driver reads only that). A mistyped
/// one (`postgres:user:PW@host`) is an error, not a file named after the
/// password. Errors never quote the value: it may hold a password.
pub(super) fn postgres_location(value: &str) -> Option<Result<String, String>> {
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
pub(super) const POSTGRES_URL_HINT: &str =
    "write postgres://user@host:5432/db (with the `//`), and give the password with \
     ledger_password_env / ledger_password_file rather than in the URL";

/// A path with `~/` for the home directory expanded.
pub(super) fn expand_home(path: &str) -> PathBuf {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::error_of;

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
    fn a_key_value_connection_string_is_refused_and_a_path_holding_its_words_is_not() {
        for refused in [
            "host=db user=indexq password=PW dbname=indexq",
            "dbname=indexq",
            "  HOST = db  port=5432",
            "port=5432 user=indexq",
            "sslmode=require password='a b'",
        ] {
            let e = ledger_value(refused).expect_err(refused);
            assert_eq!(e.hint, KEY_VALUE_HINT, "{refused}");
            assert!(!e.message.contains("PW") && !e.message.contains("indexq"), "{}", e.message);
        }
        for path in ["./user=1.db", "/srv/host=a/ledger.db", "ledger.db", "./a b/hostname=x.db", "port=5432.db"] {
            assert_eq!(ledger_value(path), Ok(None), "{path}");
        }
    }

    #[test]
    fn a_ledger_value_is_a_path_or_a_url_and_nothing_in_between() {
        for path in [
            "/var/lib/indexq/ledger.db",
            "ledger.db",
            "state/ledger.db",
            "./ledger.db",
            "../state/ledger.db",
            "~/ledger.db",
            "./a:b/ledger.db",
            "./user:PW@host/ledger.db",
            "/srv/postgres:x/ledger.db",
            "/var/lib//indexq/ledger.db",
            ".//ledger.db",
            "postgres.db",
            "me@work/ledger.db",
            r"C:\indexq\ledger.db",
            "C:/indexq/ledger.db",
            r"d:\ledger.db",
            r".\state\ledger.db",
        ] {
            assert_eq!(ledger_value(path), Ok(None), "{path} is a file path");
            assert!(matches!(LedgerLocation::parse(path), Ok(LedgerLocation::Sqlite(_))), "{path}");
        }
        for url in ["postgres://indexq@db.example/indexq", "postgresql://u@db.example:5432/d"] {
            assert!(matches!(ledger_value(url), Ok(Some(_))), "{url} is a database");
        }
        for bad in [
            "postgres//indexq:PW-7Kq2@db.example/indexq",
            "postgresql//indexq:PW-7Kq2@db.example/indexq",
            "postgresql;//indexq:PW-7Kq2@db.example/indexq",
            "postgres:/indexq:PW-7Kq2@db.example/indexq",
            "postgres:indexq:PW-7Kq2@db.example",
            "indexq:PW-7Kq2@db.example/indexq",
            "indexq:PW-7Kq2@db.example",
            "//indexq:PW-7Kq2@db.example/indexq",
            r"\\indexq:PW-7Kq2@db.example\indexq",
            "sqlite://indexq:PW-7Kq2@db.example/ledger.db",
            "mysql:indexq:PW-7Kq2@db.example/indexq",
            "db.example//indexq:PW-7Kq2",
            "C:indexq:PW-7Kq2@db.example",
            "ledger:PW-7Kq2.db",
        ] {
            let why = ledger_value(bad).expect_err(bad);
            assert!(!why.message.contains("PW-7Kq2") && !why.hint.contains("PW-7Kq2"), "never quoted: {why:?}");
            assert!(LedgerLocation::parse(bad).is_err(), "{bad}");
            let e = error_of(&format!("ledger = {}\n", serde_json::Value::from(bad)));
            assert_eq!(e.place, "indexq.toml:1:10: `ledger`", "{bad}");
            assert!(!e.to_string().contains("PW-7Kq2") && e.hint.is_some(), "{e}");
        }
        assert!(ledger_value("indexq:PW@db.example/x").unwrap_err().message.contains("user:password@host"));
    }
}
