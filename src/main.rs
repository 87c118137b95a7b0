//! indexq: submit URLs to search engines through a local quota ledger.
//! `main` parses the command line, calls `run`, and turns the result into
//! an exit code (DESIGN §5); only `main` prints a fatal error.

use clap::Parser;
use commands::ExitStatus;
use indexq::output::printer::{Printer, Verbosity};
use indexq::{cli, clock, commands, config, ledger};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    let status = match run(&cli) {
        Ok(status) => status,
        Err(err) => report_error(&err),
    };
    ExitCode::from(status.code())
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "indexq=info",
        _ => "indexq=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("INDEXQ_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}

fn run(cli: &cli::Cli) -> anyhow::Result<ExitStatus> {
    let printer = Printer {
        json: cli.json,
        verbosity: if cli.quiet {
            Verbosity::Quiet
        } else if cli.verbose > 0 {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        },
    };
    match &cli.command {
        // These need no clock or ledger, and a configuration only if there is one.
        cli::Command::Init(args) => commands::init::run(cli.config.as_deref(), args, &printer),
        cli::Command::Completions(args) => commands::completions::completions(args.shell),
        cli::Command::Man => commands::completions::man(),
        cli::Command::Key(args) => commands::key::run(cli.config.as_deref(), args, &printer),
        command => {
            let (settings, clock) = configured(cli)?;
            let result = match command {
                cli::Command::Submit(args) => {
                    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
                    runtime.block_on(commands::submit::run(&settings, args, &printer, &clock))
                }
                cli::Command::Status(args) => commands::status::run(&settings, args, &printer, &clock),
                cli::Command::Report(args) => commands::report::run(&settings, args, &printer, &clock),
                cli::Command::Queue(args) => commands::queue::run(&settings, args, &printer, &clock),
                cli::Command::Log(args) => commands::log::run(&settings, args, &printer, &clock),
                cli::Command::Ledger(args) => commands::ledger::run(&settings, args, &printer),
                cli::Command::Doctor => {
                    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
                    runtime.block_on(commands::doctor::run(&settings, &printer, &clock))
                }
                cli::Command::Init(_) | cli::Command::Completions(_) | cli::Command::Man | cli::Command::Key(_) => {
                    unreachable!("handled above, before the configuration is loaded")
                }
            };
            // A ledger error names the ledger (opening it names it already).
            result.map_err(|e| match e.downcast_ref::<ledger::LedgerError>() {
                Some(ledger::LedgerError::Open { .. }) | None => e,
                Some(_) => e.context(format!("ledger {}", settings.ledger.display())),
            })
        }
    }
}

/// The clock and the configuration that every ledger command needs.
fn configured(cli: &cli::Cli) -> anyhow::Result<(config::Settings, clock::Clock)> {
    let clock = clock::Clock::from_env().map_err(|e| commands::submit::UsageError(e.to_string()))?;
    let path = config::find(cli.config.as_deref())?;
    let settings = config::load(&path)?;
    tracing::debug!(config = %path.display(), "configuration loaded");
    Ok((settings, clock))
}

/// Prints the error chain on one line, with the hint below, and picks the
/// exit code: 2 for configuration and usage errors, 1 for the rest. A
/// closed stdout (a pipe into `head`) is not an error.
fn report_error(err: &anyhow::Error) -> ExitStatus {
    let status = commands::exit_status_of(err);
    if status == ExitStatus::Ok {
        return status;
    }
    let chain: Vec<String> = err.chain().map(|e| e.to_string()).collect();
    eprintln!("error: {}", chain.join(": "));
    let hint = if let Some(c) = err.downcast_ref::<config::ConfigError>() {
        c.hint.clone()
    } else if let Some(ledger::LedgerError::Open { hint, .. }) = err.downcast_ref::<ledger::LedgerError>() {
        hint.clone()
    } else {
        None
    };
    let hint = hint.or_else(|| {
        ledger::LedgerError::is_lost(err).then(|| {
            "nothing was sent without a reservation; every URL already in the ledger stays there (queued, or in \
             flight until a later run reconciles it): run again once the database is back (URLs of the input not yet \
             read need the input again)"
                .into()
        })
    });
    let disk_full = chain.iter().any(|c| c.contains("disk is full") || c.contains("File too large"));
    let hint = hint.or_else(|| {
        disk_full.then(|| "free space on the disk that holds the ledger, or move it (`ledger` / $INDEXQ_LEDGER)".into())
    });
    if let Some(hint) = hint {
        eprintln!("  hint: {hint}");
    }
    status
}
