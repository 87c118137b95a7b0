//! One file per command. Each takes the resolved `Settings`, the `Printer`
//! and the `Clock`, and returns the exit status it decided.

pub mod completions;
pub mod doctor;
pub mod init;
pub mod key;
pub mod ledger;
pub mod log;
pub mod queue;
pub mod report;
pub mod serve;
pub mod status;
pub mod submit;

pub use crate::error::ExitStatus;

use crate::cli;
use crate::clock;
use crate::config;
use crate::output::printer::{Printer, Verbosity};

/// Runs the command `cli` names and returns the exit status it decided; an
/// error is the caller's to report (`crate::error::report`).
pub fn run(cli: &cli::Cli) -> anyhow::Result<ExitStatus> {
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
        cli::Command::Init(args) => init::run(cli.config.as_deref(), args, &printer),
        cli::Command::Completions(args) => completions::completions(args.shell),
        cli::Command::Man => completions::man(),
        cli::Command::Key(args) => key::run(cli.config.as_deref(), args, &printer),
        command => {
            let (settings, clock) = configured(cli)?;
            let result = match command {
                cli::Command::Submit(args) => {
                    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
                    runtime.block_on(submit::run(&settings, args, &printer, &clock))
                }
                cli::Command::Serve(args) => serve::run(settings.clone(), clock, args, &printer),
                cli::Command::Status(args) => status::run(&settings, args, &printer, &clock),
                cli::Command::Report(args) => report::run(&settings, args, &printer, &clock),
                cli::Command::Queue(args) => queue::run(&settings, args, &printer, &clock),
                cli::Command::Log(args) => log::run(&settings, args, &printer, &clock),
                cli::Command::Ledger(args) => ledger::run(&settings, args, &printer),
                cli::Command::Doctor => {
                    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
                    runtime.block_on(doctor::run(&settings, &printer, &clock))
                }
                cli::Command::Init(_) | cli::Command::Completions(_) | cli::Command::Man | cli::Command::Key(_) => {
                    unreachable!("handled above, before the configuration is loaded")
                }
            };
            result.map_err(|e| crate::error::naming_ledger(e, &settings.ledger.display()))
        }
    }
}

/// The clock and the configuration that every ledger command needs.
fn configured(cli: &cli::Cli) -> anyhow::Result<(config::Settings, clock::Clock)> {
    let clock = clock::Clock::from_env().map_err(|e| crate::error::UsageError(e.to_string()))?;
    let path = config::find(cli.config.as_deref())?;
    let settings = config::load(&path)?;
    tracing::debug!(config = %path.display(), "configuration loaded");
    Ok((settings, clock))
}
