//! The command line as typed: clap structures only. Values are checked for
//! form here (durations, engine names, outcome names); meaning is given to
//! them by `config` and the commands.

use crate::clock;
use crate::model::{EngineKind, Outcome};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "indexq",
    version,
    about = "Submit URLs to IndexNow, Bing and Google through a local quota ledger",
    long_about = "Submit URLs to search engines' submission queues without ever spending more than each engine allows. \
Every rejection is read and classified (quota, transient, key_pending, misconfigured) and retried the way its reason calls for.",
    after_help = "Exit codes: 0 nothing needs a human; 2 usage or configuration error, nothing sent; \
3 some item is in a --fail-on class; 1 anything else; 130/143 submit stopped by SIGINT/SIGTERM.\nThe clock can be pinned with INDEXQ_NOW=<RFC 3339 time>.\n\n\
Example: indexq --config indexq.toml submit --dry-run urls.txt"
)]
pub struct Cli {
    /// Configuration file (default: $INDEXQ_CONFIG, ./indexq.toml, ~/.config/indexq/config.toml)
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Set the variables of a systemd EnvironmentFile (VAR=value lines) first, as the service gets them
    #[arg(long, global = true, value_name = "FILE")]
    pub env_file: Option<PathBuf>,

    /// Print one JSON document on stdout
    #[arg(long, global = true)]
    pub json: bool,

    /// Print only what needs a human
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Log what happens on stderr (-vv for more)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented starter configuration (--config FILE, else $INDEXQ_CONFIG, else ./indexq.toml; --global: the
    /// user's config)
    #[command(after_help = "Example: indexq init --site https://example.org/")]
    Init(InitArgs),
    /// Enqueue URLs, then send all due work within budget
    #[command(after_help = "Example: indexq submit --sitemap public/sitemap.xml --changed --max-wait 5m")]
    Submit(SubmitArgs),
    /// Take URLs over HTTP (an authenticated intake for publish and deploy hooks) and send them as windows open
    #[command(after_help = "Example: indexq serve --listen 127.0.0.1:8470")]
    Serve(ServeArgs),
    /// Budget per property and engine, window resets, queue counts, last rejection
    #[command(after_help = "Example: indexq status --format prometheus")]
    Status(StatusArgs),
    /// Inspect and act on queued and parked items
    #[command(after_help = "Example: indexq queue list --state parked")]
    Queue(QueueArgs),
    /// Attempts with their classified outcome and stored response body
    #[command(after_help = "Example: indexq log --url https://example.com/a --limit 10")]
    Log(LogArgs),
    /// Write an HTML report of the budget over time: URLs sent per day against the limit, outcomes, parked items
    #[command(after_help = "Example: indexq report --html report.html --days 30")]
    Report(ReportArgs),
    /// Check config, ledger, key files and credentials without spending quota
    #[command(after_help = "Example: indexq doctor --json")]
    Doctor,
    /// Create an IndexNow key and its key file
    #[command(after_help = "Example: indexq key generate --out public")]
    Key(KeyArgs),
    /// Bring the ledger's schema up to date, or copy the ledger to another (SQLite <-> PostgreSQL)
    #[command(after_help = "Example: indexq ledger copy --to postgres://indexq@db.internal:5432/indexq")]
    Ledger(LedgerArgs),
    /// Print shell completions on stdout (needs no configuration)
    #[command(after_help = "Example: indexq completions bash > ~/.local/share/bash-completion/completions/indexq")]
    Completions(CompletionsArgs),
    /// Print the man page of every command on stdout (needs no configuration)
    #[command(after_help = "Example: indexq man > ~/.local/share/man/man1/indexq.1")]
    Man,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The site to submit URLs for (a URL belongs to the property whose site prefixes it); default: a placeholder
    /// to edit
    #[arg(long, value_name = "URL", value_parser = parse_site)]
    pub site: Option<url::Url>,
    /// Write the user's configuration ($XDG_CONFIG_HOME/indexq/config.toml) instead of $INDEXQ_CONFIG or
    /// ./indexq.toml (--config FILE writes FILE)
    #[arg(long)]
    pub global: bool,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// URL lists: files with one URL per line, or '-' for stdin. None (and no --sitemap): read each property's
    /// configured `sources` (with --changed), then drain the queue
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<String>,

    /// With no input, only drain the queue: do not read the configured `sources`
    #[arg(long, conflicts_with_all = ["inputs", "sitemap"])]
    pub no_sources: bool,

    /// Only these engines
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_engine)]
    pub engine: Vec<EngineKind>,

    /// Show the plan (what goes now, what waits until when); send nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Resubmit even if accepted within the dedupe window
    #[arg(long)]
    pub force: bool,

    /// Record every URL read (the sources when no input is given) as already announced to the engines, with its
    /// lastmod: nothing is sent and no quota spent; later runs send only what is new or changed since. --force
    /// and `queue drop` undo it
    #[arg(long, conflicts_with_all = ["dry_run", "force", "no_sources", "deleted"])]
    pub baseline: bool,

    /// Tell Google the URLs were removed (URL_DELETED)
    #[arg(long)]
    pub deleted: bool,

    /// Sitemaps to read (file, URL, or robots.txt; a sitemap, index, RSS or Atom feed or text list); repeatable; .gz accepted
    #[arg(long, value_name = "FILE|URL")]
    pub sitemap: Vec<String>,

    /// Only URLs new to the ledger, or whose sitemap lastmod is later than the one recorded at their last acceptance
    #[arg(long)]
    pub changed: bool,

    /// Only URLs whose sitemap lastmod is at or after DATE (YYYY-MM-DD or RFC 3339)
    #[arg(long, value_name = "DATE", value_parser = parse_since)]
    pub since: Option<chrono::DateTime<chrono::Utc>>,

    /// How long this run may sleep for short retries (key_pending, Retry-After) or for a PostgreSQL ledger that
    /// went away (a duration, as in the configuration; 0 waits for nothing)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub max_wait: Option<Duration>,

    /// Outcomes that make the exit code 3
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_outcome, default_value = "misconfigured,invalid")]
    pub fail_on: Vec<Outcome>,

    /// At the end of the run, write the metrics in the Prometheus text format to PATH (atomically: for
    /// node_exporter's textfile collector, name it *.prom). PATH must be a regular file or a new file in an
    /// existing folder: anything else is refused before anything is sent
    #[arg(long, value_name = "PATH", conflicts_with = "dry_run")]
    pub metrics_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address and port to listen on (default: `[serve] listen`, else 127.0.0.1:8470); port 0 picks a free one.
    /// Anything but loopback needs a [[serve.token]]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// human: for a person; json: the same as --json; prometheus: the metrics in the Prometheus text format
    /// [default: human]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<StatusFormat>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusFormat {
    Human,
    Json,
    Prometheus,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The HTML file to write (atomically; '-' for stdout)
    #[arg(long, value_name = "FILE")]
    pub html: PathBuf,
    /// How many days the report covers, today included (in each budget rule's timezone)
    #[arg(long, value_name = "N", default_value_t = 30, value_parser = clap::value_parser!(u16).range(1..=366))]
    pub days: u16,
}

#[derive(Debug, Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub action: Option<QueueAction>,
}

#[derive(Debug, Subcommand)]
pub enum QueueAction {
    /// List due, waiting, parked and in flight items (and with --state, accepted ones)
    #[command(after_help = "Example: indexq queue list --state due,waiting --engine bing")]
    List(QueueFilter),
    /// Make matching parked or waiting items due now
    #[command(after_help = "Example: indexq queue retry --state parked --property example.com")]
    Retry(QueueFilter),
    /// Remove matching items from the queue (their attempts stay in the log)
    #[command(after_help = "Example: indexq queue drop --state parked --url https://example.com/old")]
    Drop(DropArgs),
}

#[derive(Debug, Args, Default, Clone)]
pub struct QueueFilter {
    /// Only items in these states
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub state: Vec<StateArg>,
    /// Only this property
    #[arg(long)]
    pub property: Option<String>,
    /// Only this engine
    #[arg(long, value_parser = parse_engine)]
    pub engine: Option<EngineKind>,
    /// Only this IndexNow endpoint (as `status` shows it)
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Only this URL
    #[arg(long)]
    pub url: Option<String>,
    /// At most this many items
    #[arg(long)]
    pub limit: Option<usize>,
}

#[derive(Debug, Args)]
pub struct DropArgs {
    #[command(flatten)]
    pub filter: QueueFilter,
    /// Drop every item (required when no filter is given)
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StateArg {
    /// Queued and due now
    Due,
    /// Queued for later (a budget window, a backoff)
    Waiting,
    /// Due or waiting
    Queued,
    /// Waiting for a human (misconfigured)
    Parked,
    /// Being sent by a run right now
    // As `--json` and the metrics spell it; `in-flight`, the name earlier
    // versions took, still works.
    #[value(name = "in_flight", alias = "in-flight")]
    InFlight,
    /// Accepted by the engine (listed only when asked for)
    Accepted,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only attempts for this URL
    #[arg(long)]
    pub url: Option<String>,
    /// At most this many attempts (the latest)
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct LedgerArgs {
    #[command(subcommand)]
    pub action: LedgerAction,
}

#[derive(Debug, Subcommand)]
pub enum LedgerAction {
    /// Create or upgrade the ledger's schema (runs also do this on their own, under a lock)
    #[command(after_help = "Example: indexq --config /etc/indexq/config.toml ledger migrate")]
    Migrate,
    /// Copy queue, attempts and budget usage from the configured ledger to another, idempotently
    #[command(after_help = "Example: indexq ledger copy --to postgres://indexq@db.internal:5432/indexq")]
    Copy(LedgerCopyArgs),
}

#[derive(Debug, Args)]
pub struct LedgerCopyArgs {
    /// The target: a SQLite file path, or a postgres:// URL (its password from the same places as the ledger's,
    /// never from here)
    #[arg(long, value_name = "PATH|URL")]
    pub to: String,
    /// The PostgreSQL schema of the target (default: `ledger_schema` of the configuration)
    #[arg(long, value_name = "NAME")]
    pub schema: Option<String>,
}

#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    pub action: KeyAction,
}

#[derive(Debug, Subcommand)]
pub enum KeyAction {
    /// Generate a random IndexNow key and write it to DIR/KEY.txt (never overwrites)
    #[command(after_help = "Example: indexq key generate --out public --length 48")]
    Generate(KeyGenerateArgs),
}

/// [`crate::classify::KEY_LENGTH`] as clap takes a range.
fn key_length() -> std::ops::RangeInclusive<i64> {
    let length = crate::classify::KEY_LENGTH;
    *length.start() as i64..=*length.end() as i64
}

#[derive(Debug, Args)]
pub struct KeyGenerateArgs {
    /// Directory to write KEY.txt into (created if missing)
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// Characters in the key (lowercase hex), 8 to 128
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u16).range(key_length()))]
    pub length: u16,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    clock::parse_duration(s)
}

/// An absolute http(s) URL with a host, as `site` must be.
fn parse_site(s: &str) -> Result<url::Url, String> {
    let hint = "write it with its scheme, e.g. https://example.org/";
    let url = url::Url::parse(s.trim()).map_err(|err| format!("`{s}` is not an absolute URL ({err}); {hint}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("`{s}` is not an http(s) URL with a host; {hint}"));
    }
    Ok(url)
}

fn parse_since(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
        .ok_or_else(|| format!("`{s}` is not a date (YYYY-MM-DD) or an RFC 3339 time"))
}

fn parse_engine(s: &str) -> Result<EngineKind, String> {
    s.parse()
}

fn parse_outcome(s: &str) -> Result<Outcome, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn lists_and_durations_parse() {
        let cli = Cli::try_parse_from([
            "indexq",
            "submit",
            "--engine",
            "indexnow",
            "--max-wait",
            "5m",
            "--fail-on",
            "quota,misconfigured",
            "a.txt",
        ])
        .unwrap();
        let Command::Submit(args) = cli.command else { panic!("not submit") };
        assert_eq!(args.engine, vec![EngineKind::IndexNow]);
        assert_eq!(args.max_wait, Some(Duration::from_secs(300)));
        assert_eq!(args.fail_on, vec![Outcome::Quota, Outcome::Misconfigured]);
        assert!(Cli::try_parse_from(["indexq", "submit", "--engine", "yahoo"]).is_err());
        // The in-flight state as `--json` spells it, and as earlier versions took it.
        for spelling in ["in_flight", "in-flight"] {
            let cli = Cli::try_parse_from(["indexq", "queue", "list", "--state", &format!("due,{spelling}")]).unwrap();
            let Command::Queue(QueueArgs { action: Some(QueueAction::List(filter)) }) = cli.command else {
                panic!("not queue list")
            };
            assert_eq!(filter.state, vec![StateArg::Due, StateArg::InFlight], "{spelling}");
        }
        assert!(Cli::try_parse_from(["indexq", "submit", "--max-wait", "soon"]).is_err());
    }
}
