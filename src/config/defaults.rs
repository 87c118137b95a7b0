//! Every default of the configuration, in one table: the value a key takes
//! when the file leaves it out. `resolve` reads them from here and nowhere
//! else; docs/configuration.md's table shows the same values (a test
//! below holds the two together).

use crate::model::SubmitOrder;
use chrono_tz::Tz;
use std::path::PathBuf;
use std::time::Duration;

const MINUTE: u64 = 60;
const HOUR: u64 = 60 * MINUTE;
const DAY: u64 = 24 * HOUR;

// Top level: the ledger.

/// `ledger`: `$XDG_STATE_HOME/indexq/ledger.db` (`~/.local/state/indexq/ledger.db`).
pub fn ledger_path() -> PathBuf {
    dirs::state_dir()
        .or_else(|| dirs::home_dir().map(|h| h.join(".local").join("state")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("indexq")
        .join("ledger.db")
}

/// `ledger_schema`: the PostgreSQL schema that holds the tables.
pub const LEDGER_SCHEMA: &str = "indexq";

/// `ledger_lease`: how long a reservation is trusted when its owner cannot
/// be checked. It must stay longer than [`HTTP_TIMEOUT`].
pub const LEDGER_LEASE: Duration = Duration::from_secs(10 * MINUTE);

/// `ledger_timeout`: PostgreSQL's connect, statement and lock timeout.
pub const LEDGER_TIMEOUT: Duration = Duration::from_secs(10);

// [indexnow]

/// `[indexnow] endpoints`: the one endpoint used when none is listed.
pub const INDEXNOW_ENDPOINT: &str = "https://api.indexnow.org/indexnow";

/// `[indexnow] quota_timezone` (a property's `indexnow.quota_timezone`
/// defaults to the table's).
pub const INDEXNOW_QUOTA_TIMEZONE: Tz = Tz::UTC;

/// `[[property]] timezone`: the site's own timezone, where the day a
/// `lastmod` written as a date (`2027-01-04`) begins and ends. UTC, as
/// indexq read such a date before the key existed; a site elsewhere sets
/// its own.
pub const PROPERTY_TIMEZONE: Tz = Tz::UTC;

// [bing]

/// `[bing] endpoint`: the Bing Webmaster API.
pub const BING_ENDPOINT: &str = "https://ssl.bing.com/webmaster/api.svc/json";

/// `[bing] quota_timezone`: when Bing's day and month begin (a property's
/// `bing.quota_timezone` defaults to the table's).
pub const BING_QUOTA_TIMEZONE: Tz = Tz::UTC;

/// `[bing] sitemaps` (and a property's `bing.sitemaps`): a property's remote
/// sitemaps are submitted to Bing (`SubmitFeed`) when they change.
pub const BING_SITEMAPS: bool = true;

// [baidu]

/// `[baidu] endpoint`: Baidu's link push (普通收录 API 提交). Baidu's push
/// tool page gives the address as http://, and the same host answers on
/// https, which keeps the token in the query string off the wire.
pub const BAIDU_ENDPOINT: &str = "https://data.zz.baidu.com";

/// When Baidu's push quota day begins: midnight China time (not a key).
pub const BAIDU_QUOTA_TIMEZONE: Tz = chrono_tz::Asia::Shanghai;

// [yandex]

/// `[yandex] endpoint`: the Yandex Webmaster API.
pub const YANDEX_ENDPOINT: &str = "https://api.webmaster.yandex.net";

/// When Yandex's recrawl quota day begins (not a key). Its reference does
/// not say; Moscow time is assumed, and every answer's `quota_remainder`
/// corrects the count whatever the day's true edge.
pub const YANDEX_QUOTA_TIMEZONE: Tz = chrono_tz::Europe::Moscow;

// [google]

/// `[google] endpoint`: the Indexing API.
pub const GOOGLE_ENDPOINT: &str = "https://indexing.googleapis.com";

/// `[google] inspection_endpoint`: the Search Console URL Inspection API.
pub const GOOGLE_INSPECTION_ENDPOINT: &str = "https://searchconsole.googleapis.com";

/// `[google] quota_timezone`: when Google's quota day begins (a property's
/// `google.quota_timezone` defaults to the table's).
pub const GOOGLE_QUOTA_TIMEZONE: Tz = chrono_tz::America::Los_Angeles;

/// `[google] daily_quota`: the Cloud project's pool.
pub const GOOGLE_DAILY_QUOTA: u64 = 200;

/// `[google] requests_per_minute`: the pace.
pub const GOOGLE_REQUESTS_PER_MINUTE: u32 = 380;

/// `[google] sitemaps` (and a property's `google.sitemaps`): a property's
/// remote sitemaps are submitted to Search Console (`sitemaps.submit`)
/// when they change.
pub const GOOGLE_SITEMAPS: bool = true;

// [submit]

/// `[submit] max_wait`: how long `submit` may sleep for retries due within the run.
pub const SUBMIT_MAX_WAIT: Duration = Duration::from_secs(90);

/// `[submit] dedupe_window`: an accepted URL is `skipped` within it.
pub const SUBMIT_DEDUPE_WINDOW: Duration = Duration::from_secs(DAY);

/// `[submit] remind`: a group's parked items are said again after this
/// long (24h: an hourly cron job mails about them once a day).
pub const SUBMIT_REMIND: Duration = Duration::from_secs(DAY);
/// `[submit] stop_grace`: after SIGINT/SIGTERM, how long requests in flight
/// may take to be answered before they are recorded as interrupted.
pub const SUBMIT_STOP_GRACE: Duration = Duration::from_secs(10);
/// `[submit] order`: for an engine with a daily quota, new and changed URLs
/// first, the newest first (a site's archive never holds back today's page).
pub const SUBMIT_ORDER: SubmitOrder = SubmitOrder::Newest;

// [notify]

/// `[notify] timeout`: how long a notification (the command, or the
/// webhook's answer) may take before it counts as failed.
pub const NOTIFY_TIMEOUT: Duration = Duration::from_secs(10);

// [retry]

/// `[retry] transient_first`: the first wait after a `transient` answer.
pub const RETRY_TRANSIENT_FIRST: Duration = Duration::from_secs(30);

/// `[retry] transient_cap`: the longest wait between two `transient` retries.
pub const RETRY_TRANSIENT_CAP: Duration = Duration::from_secs(6 * HOUR);

/// `[retry] transient_deadline`: how long a `transient` URL is retried.
pub const RETRY_TRANSIENT_DEADLINE: Duration = Duration::from_secs(3 * DAY);

/// `[retry] key_pending_first`: the first wait while the IndexNow key is checked.
pub const RETRY_KEY_PENDING_FIRST: Duration = Duration::from_secs(MINUTE);

/// `[retry] key_pending_deadline`: how long a `key_pending` URL is retried.
pub const RETRY_KEY_PENDING_DEADLINE: Duration = Duration::from_secs(DAY);

// [http]

/// `[http] connect_timeout`.
pub const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `[http] timeout`: a whole request. It must stay shorter than [`LEDGER_LEASE`].
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

// [sitemap]

/// `[sitemap] max_bytes`: the most uncompressed bytes read from one sitemap
/// (50 MiB, the sitemaps.org limit).
pub const SITEMAP_MAX_BYTES: u64 = 50 * 1024 * 1024;

/// `[sitemap] read_interval`: how often an engine's report on a sitemap
/// submitted to it is read (6h; and once right after each submission).
pub const SITEMAP_READ_INTERVAL: Duration = Duration::from_secs(6 * HOUR);

/// `[sitemap] download_deadline`: how long after a submission the engine
/// has to download the sitemap before a human is told it has not.
pub const SITEMAP_DOWNLOAD_DEADLINE: Duration = Duration::from_secs(3 * DAY);

// [serve]

/// `[serve] listen`: where `indexq serve` answers (loopback: a reverse
/// proxy in front does TLS).
pub const SERVE_LISTEN: &str = "127.0.0.1:8470";

/// `[serve] max_body`: the largest request body taken, in bytes (1 MiB).
pub const SERVE_MAX_BODY: u64 = 1024 * 1024;

/// `[serve] sources_every`: how often the worker reads the configured
/// sources (1h; `0` never: only `POST /v1/sources` does).
pub const SERVE_SOURCES_EVERY: Duration = Duration::from_secs(HOUR);

/// `[serve] requests_per_second`, `request_burst`: each token's requests.
pub const SERVE_REQUESTS_PER_SECOND: u32 = 10;
pub const SERVE_REQUEST_BURST: u32 = 20;

/// `[serve] urls_per_minute`, `url_burst`: each token's URLs.
pub const SERVE_URLS_PER_MINUTE: u32 = 600;
pub const SERVE_URL_BURST: u32 = 1000;

/// `[serve] max_connections`: connections open at once (the next waits).
pub const SERVE_MAX_CONNECTIONS: u32 = 1024;

/// `[serve] idle_timeout`: a connection silent this long is closed.
pub const SERVE_IDLE_TIMEOUT: Duration = Duration::from_secs(MINUTE);

/// `[serve] header_timeout`: a request's headers must be whole this long
/// after their first byte.
pub const SERVE_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// `[serve] min_body_rate`: the slowest a body may arrive, in bytes a
/// second, after an allowance of `header_timeout` (Apache's
/// `mod_reqtimeout` default rate).
pub const SERVE_MIN_BODY_RATE: u32 = 500;

/// `[serve] max_connections_per_address`: connections one client address
/// may hold open at once (the next is refused with `503`).
pub const SERVE_MAX_CONNECTIONS_PER_ADDRESS: u32 = 128;

/// `[serve] reserved_connections`: connections beyond `max_connections`
/// kept for `/healthz`, `/readyz` and requests with a valid token.
pub const SERVE_RESERVED_CONNECTIONS: u32 = 32;
/// `[serve] metrics_public`: `/metrics` wants a token when tokens are configured.
pub const SERVE_METRICS_PUBLIC: bool = false;

/// `serve.token[].scope`: a token writes its properties' URLs (and reads them).
pub const SERVE_TOKEN_SCOPE: crate::config::TokenScope = crate::config::TokenScope::Write;

// [[property]]

/// `property.google.daily_quota`: this property's share of the project's pool.
pub const PROPERTY_GOOGLE_DAILY_QUOTA: u64 = 11;

/// `property.google.skip_indexed`: URLs are not inspected before they are sent.
pub const PROPERTY_GOOGLE_SKIP_INDEXED: bool = false;

/// `property.google.indexing`: the property's URLs go to the Indexing API.
pub const PROPERTY_GOOGLE_INDEXING: bool = true;

/// `property.fetch_hosts`: no host beyond the site's and the sources' own.
pub const PROPERTY_FETCH_HOSTS: &[&str] = &[];

/// A duration as the configuration writes it, in its largest whole unit:
/// `10m`, `30s`, `3d` (for messages that name a default).
pub fn written(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (size, unit) = [(DAY, "d"), (HOUR, "h"), (MINUTE, "m")]
        .into_iter()
        .find(|(size, _)| secs >= *size && secs % size == 0)
        .unwrap_or((1, "s"));
    format!("{}{unit}", secs / size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_duration;
    use crate::config::testing::parse_str;
    use crate::config::LedgerLocation;

    #[test]
    fn written_durations_read_back() {
        for (duration, text) in [
            (LEDGER_LEASE, "10m"),
            (HTTP_TIMEOUT, "30s"),
            (RETRY_TRANSIENT_DEADLINE, "3d"),
            (RETRY_TRANSIENT_CAP, "6h"),
        ] {
            assert_eq!(written(duration), text);
            assert_eq!(parse_duration(text), Ok(duration));
        }
        assert_eq!(written(Duration::ZERO), "0s");
        assert_eq!(written(Duration::from_secs(90)), "90s");
    }

    /// An empty file resolves to exactly this table.
    #[test]
    fn an_empty_config_resolves_to_the_defaults() {
        let s = parse_str("").unwrap();
        if std::env::var_os("INDEXQ_LEDGER").is_none_or(|v| v.is_empty()) {
            assert_eq!(s.ledger, LedgerLocation::Sqlite(ledger_path()));
        }
        assert_eq!(s.ledger_options.schema, LEDGER_SCHEMA);
        assert_eq!(s.ledger_options.lease, LEDGER_LEASE);
        assert_eq!(s.ledger_options.timeout, LEDGER_TIMEOUT);
        assert_eq!(s.ledger_options.password, None);

        let endpoints: Vec<&str> = s.indexnow.endpoints.iter().map(|u| u.as_str()).collect();
        assert_eq!(endpoints, [INDEXNOW_ENDPOINT]);
        assert_eq!(s.indexnow.daily_quota, None);
        assert_eq!(s.indexnow.quota_timezone, INDEXNOW_QUOTA_TIMEZONE);

        assert_eq!(s.bing.api_key, None);
        assert_eq!(s.bing.endpoint.as_str(), BING_ENDPOINT);
        assert_eq!(s.bing.quota_timezone, BING_QUOTA_TIMEZONE);
        assert_eq!((s.bing.daily_quota, s.bing.monthly_quota), (None, None));

        assert_eq!(s.google.credentials, None);
        // The URL crate writes a bare origin with its `/`.
        assert_eq!(s.google.endpoint.as_str(), format!("{GOOGLE_ENDPOINT}/"));
        assert_eq!(s.google.inspection_endpoint.as_str(), format!("{GOOGLE_INSPECTION_ENDPOINT}/"));
        assert_eq!(s.google.quota_timezone, GOOGLE_QUOTA_TIMEZONE);
        assert_eq!(s.google.daily_quota, GOOGLE_DAILY_QUOTA);
        assert_eq!(s.google.requests_per_minute, GOOGLE_REQUESTS_PER_MINUTE);

        assert_eq!(s.submit.max_wait, SUBMIT_MAX_WAIT);
        assert_eq!(s.submit.dedupe_window, SUBMIT_DEDUPE_WINDOW);
        assert_eq!(s.submit.remind, SUBMIT_REMIND);
        assert_eq!(s.submit.stop_grace, SUBMIT_STOP_GRACE);
        assert_eq!(s.submit.order, SUBMIT_ORDER);
        assert_eq!(s.retry.transient_first, RETRY_TRANSIENT_FIRST);
        assert_eq!(s.retry.transient_cap, RETRY_TRANSIENT_CAP);
        assert_eq!(s.retry.transient_deadline, RETRY_TRANSIENT_DEADLINE);
        assert_eq!(s.retry.key_pending_first, RETRY_KEY_PENDING_FIRST);
        assert_eq!(s.retry.key_pending_deadline, RETRY_KEY_PENDING_DEADLINE);
        assert_eq!(s.http.connect_timeout, HTTP_CONNECT_TIMEOUT);
        assert_eq!(s.http.timeout, HTTP_TIMEOUT);
        assert_eq!(s.sitemap.max_bytes, SITEMAP_MAX_BYTES);
        assert!(s.notify.command.is_none() && s.notify.webhook.is_none());
        assert_eq!(s.notify.timeout, NOTIFY_TIMEOUT);
        assert_eq!(s.sitemap.read_interval, SITEMAP_READ_INTERVAL);
        assert_eq!(s.sitemap.download_deadline, SITEMAP_DOWNLOAD_DEADLINE);
        assert_eq!((s.google.sitemaps, s.bing.sitemaps), (GOOGLE_SITEMAPS, BING_SITEMAPS));
        assert!(s.properties.is_empty());
    }

    /// A property's tables take their engine table's timezone and these defaults.
    #[test]
    fn a_bare_property_resolves_to_the_defaults() {
        let s = parse_str(
            "[bing]\napi_key_env = \"BING_KEY\"\nquota_timezone = \"Europe/Berlin\"\n[[property]]\nname = \"a\"\n\
             site = \"https://a.example/\"\nindexnow = { key_env = \"K\" }\nbing = {}\ngoogle = {}\n",
        )
        .unwrap();
        let p = &s.properties[0];
        let indexnow = p.indexnow.as_ref().unwrap();
        assert_eq!((indexnow.key_location.as_ref(), indexnow.daily_quota), (None, None));
        assert_eq!(indexnow.quota_timezone, INDEXNOW_QUOTA_TIMEZONE);
        let bing = p.bing.as_ref().unwrap();
        assert_eq!(bing.site_url, "https://a.example/");
        assert_eq!((bing.daily_quota, bing.monthly_quota), (None, None));
        assert_eq!(bing.quota_timezone, chrono_tz::Europe::Berlin, "the [bing] table's");
        let google = p.google.as_ref().unwrap();
        assert_eq!(google.site_url, "https://a.example/");
        assert_eq!(google.daily_quota, PROPERTY_GOOGLE_DAILY_QUOTA);
        assert_eq!(google.skip_indexed, PROPERTY_GOOGLE_SKIP_INDEXED);
        assert_eq!(google.quota_timezone, GOOGLE_QUOTA_TIMEZONE);
        assert_eq!(
            (google.indexing, google.sitemaps, bing.sitemaps),
            (PROPERTY_GOOGLE_INDEXING, GOOGLE_SITEMAPS, BING_SITEMAPS)
        );
        assert!(p.sources.is_empty(), "no sources: `submit` with no input only drains the queue");
        assert_eq!(p.fetch_hosts.len(), PROPERTY_FETCH_HOSTS.len(), "no host beyond the site's and the sources'");
    }

    /// docs/configuration.md's table, row by row: the default column
    /// (its `code` spans) against this table.
    #[test]
    fn the_configuration_reference_shows_these_defaults() {
        enum Shown {
            Text(String),
            Duration(Duration),
        }
        use Shown::{Duration as D, Text as T};
        let text = |s: &str| T(s.to_string());
        let rows: Vec<(&str, Vec<Shown>)> = vec![
            ("`ledger`", vec![text("$XDG_STATE_HOME/indexq/ledger.db")]),
            ("`ledger_schema`", vec![text(LEDGER_SCHEMA)]),
            ("`ledger_lease`", vec![D(LEDGER_LEASE)]),
            ("`ledger_timeout`", vec![D(LEDGER_TIMEOUT)]),
            ("`[indexnow] endpoints`", vec![T(format!("[\"{INDEXNOW_ENDPOINT}\"]"))]),
            ("`[indexnow] daily_quota`, `quota_timezone`", vec![text(INDEXNOW_QUOTA_TIMEZONE.name())]),
            ("`[bing] endpoint`", vec![text(BING_ENDPOINT)]),
            ("`[bing] quota_timezone`", vec![text(BING_QUOTA_TIMEZONE.name())]),
            (
                "`[google] endpoint`, `inspection_endpoint`",
                vec![text(GOOGLE_ENDPOINT), text(GOOGLE_INSPECTION_ENDPOINT)],
            ),
            ("`[google] quota_timezone`", vec![text(GOOGLE_QUOTA_TIMEZONE.name())]),
            ("`[google] daily_quota`", vec![T(GOOGLE_DAILY_QUOTA.to_string())]),
            ("`[google] requests_per_minute`", vec![T(GOOGLE_REQUESTS_PER_MINUTE.to_string())]),
            ("`[submit] max_wait`", vec![D(SUBMIT_MAX_WAIT)]),
            ("`[submit] dedupe_window`", vec![D(SUBMIT_DEDUPE_WINDOW)]),
            ("`[submit] remind`", vec![D(SUBMIT_REMIND)]),
            ("`[submit] stop_grace`", vec![D(SUBMIT_STOP_GRACE)]),
            ("`[submit] order`", vec![text(SUBMIT_ORDER.as_str())]),
            (
                "`[retry] transient_first`, `transient_cap`, `transient_deadline`",
                vec![D(RETRY_TRANSIENT_FIRST), D(RETRY_TRANSIENT_CAP), D(RETRY_TRANSIENT_DEADLINE)],
            ),
            (
                "`[retry] key_pending_first`, `key_pending_deadline`",
                vec![D(RETRY_KEY_PENDING_FIRST), D(RETRY_KEY_PENDING_DEADLINE)],
            ),
            ("`[http] connect_timeout`, `timeout`", vec![D(HTTP_CONNECT_TIMEOUT), D(HTTP_TIMEOUT)]),
            ("`[notify] command`", vec![]),
            ("`[notify] webhook`, `webhook_env`, `webhook_file`", vec![]),
            ("`[notify] timeout`", vec![D(NOTIFY_TIMEOUT)]),
            ("`[sitemap] max_bytes`", vec![T(SITEMAP_MAX_BYTES.to_string())]),
            ("`property.timezone`", vec![text(PROPERTY_TIMEZONE.name())]),
            (
                "`[sitemap] read_interval`, `download_deadline`",
                vec![D(SITEMAP_READ_INTERVAL), D(SITEMAP_DOWNLOAD_DEADLINE)],
            ),
            ("`[bing] sitemaps`", vec![T(BING_SITEMAPS.to_string())]),
            ("`[google] sitemaps`", vec![T(GOOGLE_SITEMAPS.to_string())]),
            ("`property.fetch_hosts`", vec![T(format!("{PROPERTY_FETCH_HOSTS:?}"))]),
            (
                "`[serve] header_timeout`, `min_body_rate`, `max_connections_per_address`, `reserved_connections`",
                vec![
                    D(SERVE_HEADER_TIMEOUT),
                    T(SERVE_MIN_BODY_RATE.to_string()),
                    T(SERVE_MAX_CONNECTIONS_PER_ADDRESS.to_string()),
                    T(SERVE_RESERVED_CONNECTIONS.to_string()),
                ],
            ),
            ("`[[serve.token]] scope`", vec![text(SERVE_TOKEN_SCOPE.as_str())]),
            ("`[serve] metrics_public`", vec![T(SERVE_METRICS_PUBLIC.to_string())]),
        ];
        let readme = include_str!("../../docs/configuration.md");
        let cells = |key: &str| -> Vec<String> {
            let row = readme
                .lines()
                .find(|line| line.starts_with(&format!("| {key} |")))
                .unwrap_or_else(|| panic!("no row for {key} in docs/configuration.md"));
            let default = row.split(" | ").nth(1).unwrap_or_default();
            default.split('`').skip(1).step_by(2).map(str::to_string).collect()
        };
        for (key, expected) in rows {
            let shown = cells(key);
            assert_eq!(shown.len(), expected.len(), "{key}: {shown:?}");
            for (shown, expected) in shown.iter().zip(expected) {
                match expected {
                    T(text) => assert_eq!(*shown, text, "{key}"),
                    D(duration) => assert_eq!(parse_duration(shown), Ok(duration), "{key}: {shown}"),
                }
            }
        }
        let google = readme.lines().find(|l| l.starts_with("| `property.google` |")).expect("the property.google row");
        assert!(google.contains(&format!("`daily_quota` (default {PROPERTY_GOOGLE_DAILY_QUOTA}:")), "{google}");
        assert!(google.contains(&format!("`skip_indexed` (default {PROPERTY_GOOGLE_SKIP_INDEXED})")), "{google}");
        assert!(google.contains(&format!("`indexing` (default {PROPERTY_GOOGLE_INDEXING}:")), "{google}");
        assert!(google.contains("`sitemaps` (default `[google] sitemaps`)"), "{google}");
        let bing = readme.lines().find(|l| l.starts_with("| `property.bing` |")).expect("the property.bing row");
        assert!(bing.contains("`sitemaps` (default `[bing] sitemaps`)"), "{bing}");
        assert!(ledger_path().ends_with("indexq/ledger.db"));
    }
}
