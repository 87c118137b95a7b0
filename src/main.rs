//! indexq: submit URLs to search engines through a local quota ledger.
//! `main` parses the command line, sets up logging, calls `indexq::run`
//! (`commands::run`), and turns the result into an exit code (README, *Output and exit codes*);
//! `indexq::report` prints the only fatal error.

use clap::Parser;
use indexq::Cli;
use std::process::ExitCode;

fn main() -> ExitCode {
    keep_freed_memory();
    let cli = Cli::parse();
    // Before logging and the runtime start: no other thread reads the
    // environment while it is set.
    if let Some(path) = cli.env_file.as_deref() {
        if let Err(err) = indexq::apply_env_file(path) {
            return ExitCode::from(indexq::print_error(&err).code());
        }
    }
    init_logging(cli.verbose);
    let status = indexq::run(&cli).unwrap_or_else(|err| indexq::print_error(&err));
    ExitCode::from(status.code())
}

/// What glibc's heaps keep spare (`keep_freed_memory`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const SPARE_HEAP: libc::c_int = 8 << 20;

/// Asks glibc's allocator to keep `SPARE_HEAP` bytes spare at the top of
/// its heaps instead of giving freed memory back to the system at once. A
/// submit frees and allocates a batch's buffers again and again; given back
/// each time, every page of them was faulted in anew, a large share of a
/// run again's time (docs/performance.md, *Measured choices*). Not more: a
/// larger pad raised the peak memory of the million-URL runs, this one left
/// it as it was. Other C libraries (musl) have no such setting and are
/// left as they are.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets a tuning value, and no other thread runs yet.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, SPARE_HEAP);
    }
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "indexq=info",
        _ => "indexq=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("INDEXQ_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Through the escaping writer (a log line may quote an answer or an
    // input), so without colour codes of its own.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(indexq::escaped_stderr)
        .with_ansi(false)
        .with_target(false)
        .init();
}
