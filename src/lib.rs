//! indexq submits a site's URLs to search engines (IndexNow, Bing, Google)
//! through a ledger that keeps each engine's quota, the queue and every
//! answer. This library is what the `indexq` binary is made of: the command
//! line is the product, and this API is not a stable one.
//!
//! # The modules
//!
//! Listed from the top down. The rule is one way: a module uses only
//! modules listed below it, never one above, so that the import graph has
//! no cycle and each layer can be read without those above it.
//!
//! - [`commands`]: one file per command, and `run`, which dispatches the
//!   parsed command line to it: argument handling and printing.
//! - [`serve`]: `indexq serve`'s HTTP side: the listener and its limits,
//!   tokens, the intake, webhooks and the IndexNow protocol.
//! - [`pipeline`]: the run that `submit` and `serve`'s worker share: intake,
//!   claim and send, the outcome, findings, the dry run's plan, inspection,
//!   the stop, parked reminders.
//! - [`documents`]: the JSON documents that `status`, `queue` and `serve`
//!   answer.
//! - [`report`], [`metrics`]: `indexq report`'s days and HTML page, and
//!   the Prometheus text.
//! - [`attention`]: what needs a human, in one place: items stranded
//!   under groups no longer configured, what is parked with its fix, the
//!   sources that cannot be read, the sitemap reports' problems, and when a
//!   run tells each again.
//! - [`budget_rules`]: the budget rules of each group and their windows,
//!   read from the configuration, and their usage as a ledger counts it.
//! - [`ledger`]: the only place that knows SQL. The `Ledger` trait, its
//!   SQLite and PostgreSQL backends, and the decisions both share
//!   (`ledger::policy`).
//! - [`ingest`]: reading input: URL lists, URL normalisation, sitemaps and
//!   feeds.
//! - [`notify`]: `[notify]`'s delivery of a notification.
//! - [`engines`]: one file per engine behind the `Engine` trait: batches,
//!   HTTP, credentials. They know no ledger.
//! - [`schedule`]: when to retry each class of answer.
//! - [`shell`]: a `curl` line that checks a key file, quoted for a shell.
//! - [`config`]: the TOML file, resolved into `Settings`, every default in
//!   `config::defaults`.
//! - [`envfile`]: `--env-file`, a systemd `EnvironmentFile=` read into the
//!   process's environment.
//! - [`error`]: the errors that end a run, their hints, and the one mapping
//!   to exit codes.
//! - [`cli`]: the command line (clap derive).
//! - [`output`]: printing: the `Printer`, escaped human text, a run's
//!   results and summary.
//! - [`classify`]: pure: an engine's answer to a class, reason, message,
//!   hint and retry. It knows no HTTP client, clock or ledger.
//! - [`clock`]: time, windows across timezones and DST, durations.
//! - [`model`]: the domain every part speaks in, with no I/O.
//! - [`seen`]: the set of URLs a dry run has seen.
//! - [`files`], [`net`], [`redact`]: files written whole for others to
//!   read, the network address rules, and secrets masked in every output.
//!
//! # What is public
//!
//! The binary's entry points ([`run`], [`Cli`], [`print_error`],
//! [`apply_env_file`], [`escaped_stderr`]) and, hidden from the docs,
//! [`testing_api`]: exactly what the fuzz targets (`fuzz/`) and the property
//! tests (`tests/properties.rs`) reach. Every module is `pub(crate)`, so the
//! dead-code lint sees all of it.

// The map above links to private modules on purpose: the docs are built
// with `--document-private-items` (`.ci/run`), where those links resolve.
#![allow(rustdoc::private_intra_doc_links)]

pub(crate) mod attention;
pub(crate) mod budget_rules;
pub(crate) mod classify;
pub(crate) mod cli;
pub(crate) mod clock;
pub(crate) mod commands;
pub(crate) mod config;
pub(crate) mod documents;
pub(crate) mod engines;
pub(crate) mod envfile;
pub(crate) mod error;
pub(crate) mod files;
pub(crate) mod ingest;
pub(crate) mod ledger;
pub(crate) mod metrics;
pub(crate) mod model;
pub(crate) mod net;
pub(crate) mod notify;
pub(crate) mod output;
pub(crate) mod pipeline;
pub(crate) mod redact;
pub(crate) mod report;
pub(crate) mod schedule;
pub(crate) mod seen;
pub(crate) mod serve;
pub(crate) mod shell;

pub use cli::Cli;
pub use commands::run;
pub use envfile::apply as apply_env_file;
pub use error::{print_error, ExitStatus};
/// Standard error with control characters shown escaped: the writer of the
/// binary's log lines (`-v`), like every human text.
pub use output::escape::stderr as escaped_stderr;

/// What the fuzz targets (`fuzz/`), the property tests
/// (`tests/properties.rs`) and the integration tests reach of the library's
/// insides, and nothing more: the readers of untrusted input and the types
/// their results are made of. Not an API.
#[doc(hidden)]
pub mod testing_api {
    /// The classifiers of the engines' answers.
    pub mod classify {
        pub use crate::classify::{
            baidu, baidu_refused, bing, google, google_inspection, google_token, indexnow, yandex, yandex_quota,
            BaiduContext, BingContext, GoogleContext, GoogleTokenContext, IndexNowContext, InspectionContext,
            KeyFileCheck, Response, Verdict, YandexContext,
        };
    }

    /// The configuration file's reader.
    pub mod config {
        pub use crate::config::{parse, PropertySource};
    }

    /// The readers of URL lists and sitemaps.
    pub mod ingest {
        pub use crate::ingest::{read_lines, MAX_URL_BYTES};

        /// The sitemap reader.
        pub mod sitemap {
            pub use crate::ingest::sitemap::{Entry, FetchClient, Pins, Problem, Reader};
        }
    }

    /// The domain types the readers' results are made of.
    pub mod model {
        pub use crate::model::{Action, Class};
    }

    /// A batch row's blobs, as the ledger lays them out (the integration
    /// tests' ledgers of a site's size are written with them).
    pub mod batches {
        pub use crate::ledger::batches::{encode, text, BatchBlobs, BatchItem};
    }
}
