//! indexq as a library: what the `indexq` binary is made of. Public are
//! only what the binary (`run`, `print_error`, the command line in `cli`), the
//! fuzz targets (`fuzz/`) and the property tests reach: the readers of
//! untrusted input (`ingest`, `config`, `classify`) and the domain types
//! (`model`). Everything else is private, so the dead-code lint sees it.
//! The command line is the product; this API is not a stable one.

pub mod classify;
pub mod cli;
pub mod config;
pub mod ingest;
pub mod model;

mod attention;
mod budget;
mod clock;
mod commands;
mod documents;
mod engines;
mod envfile;
mod error;
mod files;
mod ledger;
mod metrics;
mod net;
mod notify;
mod output;
mod pipeline;
mod redact;
mod report;
mod schedule;
mod seen;
mod serve;
mod shell;

pub use commands::run;
pub use envfile::apply as apply_env_file;
pub use error::{print_error, ExitStatus};
/// Standard error with control characters shown escaped: the writer of the
/// binary's log lines (`-v`), like every human text.
pub use output::escape::stderr as escaped_stderr;
