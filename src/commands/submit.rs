//! `indexq submit`: the arguments checked, the inputs and the ledger opened,
//! then the run (`pipeline::submit`), whose phases live in `src/pipeline/`.

use crate::cli::SubmitArgs;
use crate::clock::Clock;
use crate::config::{ConfigError, Settings};
use crate::error::{ExitStatus, UsageError};
use crate::ingest::Source;
use crate::model::EngineKind;
use crate::output::printer::{Printer, Verbosity};
use crate::pipeline::{self, Readers, Run, Stop};

pub async fn run(
    settings: &Settings,
    args: &SubmitArgs,
    printer: &Printer,
    clock: &Clock,
) -> anyhow::Result<ExitStatus> {
    let began = std::time::Instant::now();
    // From here on a signal stops the run cleanly (a second one at once).
    let stop = Stop::listen(settings.submit.stop_grace, printer.verbosity == Verbosity::Quiet);
    let selected: Vec<EngineKind> = if args.engine.is_empty() { EngineKind::ALL.to_vec() } else { args.engine.clone() };
    let built = pipeline::build_engines(settings, &selected)?;
    check_args(settings, args, built.is_empty())?;
    let readers = open_inputs(args)?;
    let ledger = if args.dry_run {
        crate::ledger::open::open_ledger_to_read(settings)?
    } else {
        crate::ledger::open::open_ledger(settings)?
    };
    let run = Run::new(settings, clock, built, ledger, printer, stop);
    pipeline::submit(run, readers, args, printer, began).await
}

/// What must hold before anything is read or sent: an engine to submit
/// the inputs to (`no_engine`: no property uses any engine selected), and
/// a metrics file that can be replaced.
fn check_args(settings: &Settings, args: &SubmitArgs, no_engine: bool) -> anyhow::Result<()> {
    if no_engine && !(args.inputs.is_empty() && args.sitemap.is_empty()) {
        return Err(ConfigError {
            place: settings.file.display().to_string(),
            message: "no property uses an engine this run can submit to".into(),
            hint: Some(
                "add an `indexnow = { key_env = \"INDEXNOW_KEY\" }` table to a [[property]], or check --engine".into(),
            ),
        }
        .into());
    }
    // The metrics file must be one that can be replaced, before anything is
    // read or sent: not a device, a FIFO, a socket or a directory (a
    // rename would replace it), nor in a folder that does not exist or in
    // which no file can be made (read-only under a systemd unit).
    if let Some(path) = args.metrics_file.as_deref() {
        crate::files::check_writable(path).map_err(|refused| ConfigError {
            place: format!("--metrics-file {}", path.display()),
            message: refused.to_string(),
            hint: Some(
                "give the path of a regular file, or of a new one in a folder that exists and this user can write \
                 (indexq does not create folders: make it first), e.g. in the textfile collector's directory: \
                 --metrics-file /var/lib/prometheus/node-exporter/indexq.prom (under a systemd unit with \
                 ProtectSystem=strict, also in its ReadWritePaths=; or in its StateDirectory)"
                    .into(),
            ),
        })?;
    }
    Ok(())
}

/// Every input list, opened: each must open before anything is written or sent.
fn open_inputs(args: &SubmitArgs) -> anyhow::Result<Readers> {
    let mut readers = Vec::new();
    for arg in &args.inputs {
        let source = Source::parse(arg);
        let reader = source.open().map_err(|e| UsageError(e.to_string()))?;
        readers.push((source.name(), reader));
    }
    Ok(readers)
}
