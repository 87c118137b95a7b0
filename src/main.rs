//! indexq: submit URLs to search engines through a local quota ledger.
//! `main` parses the command line, calls `run`, and turns the result into
//! an exit code (DESIGN §5) through `error`, which prints the only fatal
//! error.

use clap::Parser;
use indexq::error::{self, ExitStatus, UsageError};
use indexq::output::printer::{Printer, Verbosity};
use indexq::{cli, clock, commands, config};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    let status = run(&cli).unwrap_or_else(|err| error::report(&err));
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
            result.map_err(|e| error::naming_ledger(e, &settings.ledger))
        }
    }
}

/// The clock and the configuration that every ledger command needs.
fn configured(cli: &cli::Cli) -> anyhow::Result<(config::Settings, clock::Clock)> {
    let clock = clock::Clock::from_env().map_err(|e| UsageError(e.to_string()))?;
    let path = config::find(cli.config.as_deref())?;
    let settings = config::load(&path)?;
    tracing::debug!(config = %path.display(), "configuration loaded");
    Ok((settings, clock))
}
