//! `indexq serve`'s HTTP side: one process with an HTTP intake and the
//! sending worker, on the same ledger as every other command. The command
//! (`commands::serve`) hands it the address `--listen` asked for.
//!
//! - `http`: the routes, and every answer indexq gives — its refusals each
//!   with a status, a machine-readable reason and, where waiting helps,
//!   when to come back;
//! - `auth`: the bearer tokens (`[[serve.token]]`), compared in constant
//!   time, each limited to its properties;
//! - `intake`: a request's URLs read (JSON or one a line), checked and
//!   admitted with submit's own routing and admission (`pipeline::Routes`,
//!   `Ledger::admit`, `pipeline::admission_results`) — a `202` once they are in the ledger;
//! - `worker` (here): submit's run kept up (`pipeline::Worker`), woken by
//!   the intake, at the next due time or window reopening, and every
//!   `[serve] sources_every`; asleep otherwise.
//!
//! SIGTERM (or SIGINT): the intake answers `503` with `Retry-After`, the
//! worker claims nothing more and gives the requests in flight `[submit]
//! stop_grace`, every answer is recorded, and the process exits 0.

mod auth;
mod commit;
mod hooks;
mod http;
mod indexnow;
mod intake;
mod limits;
mod listen;
mod query;
mod refusal;
mod signed;

use crate::clock::Clock;
use crate::config::{ConfigError, Settings};
use crate::error::ExitStatus;
use crate::ledger::Ledger;
use crate::output::printer::{Printer, Verbosity};
use crate::pipeline::{SourcesRead, Stop, Worker};
use anyhow::Context as _;
use chrono::{DateTime, Utc};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};

/// How long the HTTP side may take to close its connections once the worker
/// has stopped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The shortest sleep between two rounds of the worker: an item due now
/// that a round could not take (another process holds it) must not make it
/// spin.
const MIN_SLEEP: Duration = Duration::from_secs(1);

/// How often the worker does what an hourly `submit` does before it sends
/// (`Worker::prepare`).
const CHECK_EVERY: chrono::TimeDelta = chrono::TimeDelta::hours(1);

/// What every request handler shares.
struct State {
    settings: Arc<Settings>,
    clock: Arc<Clock>,
    /// The intake's own connection to the ledger (the worker has another).
    ledger: Mutex<Box<dyn Ledger + Send>>,
    /// The intake's writes, committed in groups (`commit`).
    commits: std::sync::mpsc::Sender<commit::Job>,
    /// Woken when the intake has put work in the ledger.
    wake: Notify,
    /// Reads of the configured sources asked for (`POST /v1/sources`).
    sources: mpsc::Sender<SourcesJob>,
    stop: Stop,
    tokens: auth::Tokens,
    /// Each property's IndexNow key, when `[serve] indexnow = true`.
    indexnow: indexnow::Keys,
    /// The webhooks' signing secrets, and the signatures taken.
    signatures: signed::Signatures,
    user_tz: chrono_tz::Tz,
    /// Where each property's URLs go (submit's routing).
    routes: crate::pipeline::Routes,
    /// The Google Cloud project whose pool Google's groups share.
    google_project: Option<String>,
}

/// A read of the configured sources (all, or these properties'), and where
/// its outcome goes.
struct SourcesJob {
    properties: Option<Vec<String>>,
    reply: oneshot::Sender<Result<SourcesRead, String>>,
}

/// Serves until stopped, on `asked` (`--listen`) or else `[serve] listen`.
pub(crate) fn run(
    settings: Settings,
    clock: Clock,
    asked: Option<std::net::SocketAddr>,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let listen = asked.unwrap_or(settings.serve.listen);
    let tokens = auth::Tokens::read(&settings.serve.tokens)?;
    let keys = indexnow::Keys::read(&settings)?;
    let signatures = signed::Signatures::read(&settings.serve.webhooks)?;
    if tokens.is_empty() && !listen.ip().is_loopback() {
        return Err(ConfigError {
            place: match asked {
                Some(_) => "--listen".into(),
                None => format!("{}: `serve.listen`", settings.file.display()),
            },
            message: format!("serve would listen on {listen}, which is not loopback, with no [[serve.token]]"),
            hint: Some(
                "add a [[serve.token]] (id, token_env or token_file, properties) so that only its holders may write, \
                 or listen on 127.0.0.1 behind a reverse proxy"
                    .into(),
            ),
        }
        .into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(serve(Arc::new(settings), Arc::new(clock), listen, (tokens, keys, signatures), printer))
}

async fn serve(
    settings: Arc<Settings>,
    clock: Arc<Clock>,
    listen: std::net::SocketAddr,
    (tokens, indexnow, signatures): (auth::Tokens, indexnow::Keys, signed::Signatures),
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let stop = Stop::listen(settings.submit.stop_grace, printer.verbosity == Verbosity::Quiet);
    let mut ledger = crate::ledger::open::open_ledger(&settings)?;
    crate::ledger::open::follow_ledger_clock(ledger.as_mut(), &clock, false)?;
    let mut worker = Worker::new(&settings, &clock, printer, stop.clone())?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen} (--listen, [serve] listen)"))?;
    let bound = listener.local_addr()?;
    // The first line: where to send requests (with port 0, the port picked).
    eprintln!("indexq serve: listening on http://{bound}");
    let (sources, jobs) = mpsc::channel(16);
    let (commits, to_commit) = std::sync::mpsc::channel();
    let state = Arc::new(State {
        settings: settings.clone(),
        clock: clock.clone(),
        ledger: Mutex::new(ledger),
        commits,
        wake: Notify::new(),
        sources,
        stop: stop.clone(),
        tokens,
        indexnow,
        signatures,
        user_tz: crate::clock::user_timezone(),
        routes: crate::pipeline::Routes::of(&settings, crate::budget_rules::groups(&settings)),
        google_project: crate::engines::google::project_id(&settings),
    });
    commit::start(state.clone(), to_commit);
    let (closed, close) = oneshot::channel::<()>();
    let limits = settings.serve.connections;
    let gate = listen::Gate { trusted: trusted(state.clone()), limits };
    let app = http::router(state.clone()).layer(axum::middleware::from_fn_with_state(gate, listen::gate));
    let listener =
        listen::Bounded::new(listener, settings.serve.max_connections as usize, settings.serve.idle_timeout, limits);
    let app = app.into_make_service_with_connect_info::<listen::Peer>();
    let server = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = close.await;
    });
    let server = tokio::spawn(async move { server.await });

    let worked = work(&mut worker, &state, jobs, &settings).await;
    // The worker is done (stopped, every answer recorded): close the intake.
    let _ = closed.send(());
    match tokio::time::timeout(CLOSE_GRACE, server).await {
        Ok(Ok(Err(e))) => tracing::warn!("the HTTP side ended with an error: {e}"),
        Err(_) => tracing::info!("connections still open after {CLOSE_GRACE:?}: closed"),
        _ => {}
    }
    worked?;
    Ok(ExitStatus::Ok)
}

/// Who may use a reserve connection (`[serve] reserved_connections`): a
/// health check, or a request whose bearer token is one of the tokens.
fn trusted(state: Arc<State>) -> listen::Trusted {
    Arc::new(move |request: &axum::extract::Request| {
        if matches!(request.uri().path(), "/healthz" | "/readyz") {
            return true;
        }
        let authorization = request.headers().get(axum::http::header::AUTHORIZATION);
        authorization.is_some_and(|v| state.tokens.caller(Some(v.as_bytes())).is_ok())
    })
}

/// The worker: a round at once, then one each time the intake adds work,
/// the next item falls due, the sources are to be read, or a read is asked
/// for — until the process is stopped.
///
/// A ledger that cannot be reached (a PostgreSQL restart, a failover, a
/// cut network) ends no round for good: the worker says so once, waits
/// (`schedule::reconnect_after`, the same spacing as the connection's own
/// tries to reopen) and tries again, until the ledger answers; then it
/// does first what a run does on starting (`Worker::prepare`: reservations
/// a stopped process left go back to the queue) and goes on. Any other
/// error ends the process, as before.
async fn work(
    worker: &mut Worker<'_>,
    state: &State,
    mut jobs: mpsc::Receiver<SourcesJob>,
    settings: &Settings,
) -> anyhow::Result<()> {
    let stop_signal = state.stop.stop_signal().clone();
    let every = settings.serve.sources_every;
    let mut sources_at: Option<DateTime<Utc>> = every.map(|_| worker.now());
    // The first round prepares at once.
    let mut check_at = worker.now();
    // The rounds that failed in a row for want of the ledger.
    let mut lost: u32 = 0;
    loop {
        if state.stop.requested() {
            break;
        }
        let sleep = match round(worker, state, &mut sources_at, &mut check_at, lost > 0).await {
            Ok(None) => break,
            Ok(Some(next)) => {
                if lost > 0 {
                    lost = 0;
                    printer_warn("the ledger answers again: the worker goes on");
                }
                let now = worker.now();
                tracing::debug!(?next, "the worker sleeps");
                next.map(|t| (t - now).to_std().unwrap_or_default().max(MIN_SLEEP))
            }
            Err(e) if crate::error::LedgerError::is_lost(&e) => {
                if lost == 0 {
                    printer_warn(&format!("the ledger cannot be reached, the worker waits for it: {e:#}"));
                }
                lost = lost.saturating_add(1);
                // Back, it starts as a run does: what the outage cut short
                // is reconciled before anything is claimed.
                check_at = worker.now();
                Some(crate::schedule::reconnect_after(lost))
            }
            Err(e) => return Err(e),
        };
        tokio::select! {
            () = state.wake.notified() => {}
            () = sleep_for(sleep) => {}
            job = jobs.recv() => {
                if let Some(job) = job {
                    let read = worker.read_sources(job.properties.as_deref()).await.map_err(|e| format!("{e:#}"));
                    let _ = job.reply.send(read);
                }
            }
            () = stop_signal.stopped() => break,
        }
    }
    Ok(())
}

/// One round of the worker: what an hourly `submit` does before it sends
/// when that is due, the configured sources when due, then everything due
/// sent; after an outage, this worker's own claims the outage cut short
/// go back to the queue first. Returns when to wake next (`None` inside: no time; `None`: the
/// process is stopping).
async fn round(
    worker: &mut Worker<'_>,
    state: &State,
    sources_at: &mut Option<DateTime<Utc>>,
    check_at: &mut DateTime<Utc>,
    after_outage: bool,
) -> anyhow::Result<Option<Option<DateTime<Utc>>>> {
    if after_outage {
        worker.reconcile_mine()?;
    }
    // What an hourly `submit` does before it sends: reservations a dead
    // process left, parked items under a changed configuration, fixes
    // noticed by themselves.
    if worker.now() >= *check_at {
        worker.prepare().await?;
        *check_at = worker.now() + CHECK_EVERY;
    }
    if let (Some(at), Some(every)) = (*sources_at, state.settings.serve.sources_every) {
        if worker.now() >= at {
            if let Err(e) = worker.read_sources(None).await {
                if crate::error::LedgerError::is_lost(&e) {
                    return Err(e);
                }
                printer_warn(&format!("reading the configured sources: {e:#}"));
            }
            *sources_at = Some(worker.now() + chrono::TimeDelta::from_std(every).unwrap_or(chrono::TimeDelta::MAX));
        }
    }
    worker.drain().await?;
    if state.stop.requested() {
        return Ok(None);
    }
    Ok(Some([worker.next_due()?, *sources_at, Some(*check_at)].into_iter().flatten().min()))
}

/// Sleeps for `d`, or for ever.
async fn sleep_for(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

fn printer_warn(text: &str) {
    use std::io::Write as _;
    let _ = writeln!(crate::output::escape::stderr(), "warning: {text}");
}
