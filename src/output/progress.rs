//! Progress on a terminal: while reading inputs (URLs read, rate), while
//! sending (sent / planned per engine, with the window's remaining budget),
//! and a spinner while waiting out a retry within `--max-wait`. Drawn on
//! stderr only when stderr is a terminal and neither `--json` nor `-q` is
//! given: in cron, pipes and CI logs there is no bar, no `\r`, no escape code.
//! Its messages (counts and configured names) are escaped like all human
//! text (`escape::controls`): indicatif draws them as they are.

use super::escape;
use super::printer::{Printer, Verbosity};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    pub fn new(printer: &Printer) -> Progress {
        let wanted = !printer.json
            && printer.verbosity == Verbosity::Normal
            && std::io::stderr().is_terminal()
            && std::env::var("TERM").map_or(true, |t| t != "dumb");
        let bar = wanted.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            bar.set_message("starting");
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress { bar, started: Instant::now() }
    }

    /// Whether anything is drawn.
    pub fn visible(&self) -> bool {
        self.bar.is_some()
    }

    fn spinner(&self, message: String) {
        if let Some(bar) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg}") {
                bar.set_style(style);
            }
            bar.set_length(0);
            bar.set_message(escape::controls(&message).into_owned());
        }
    }

    /// `read` URLs have been read so far.
    pub fn reading(&self, read: u64) {
        if self.bar.is_some() && read % 500 == 0 {
            let rate = read as f64 / self.started.elapsed().as_secs_f64().max(0.001);
            self.spinner(format!("reading inputs: {read} URLs ({rate:.0}/s)"));
        }
    }

    /// Whether the progress line is drawn at all (a terminal, no `--json`,
    /// no `--quiet` or `--verbose`): what only it would show need not be
    /// read.
    pub fn shown(&self) -> bool {
        self.bar.is_some()
    }

    /// Sending to one engine: `sent` of `planned`, and what the window has left.
    pub fn sending(&self, what: &str, sent: u64, planned: u64, remaining: Option<u64>) {
        if let Some(bar) = &self.bar {
            if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len}") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_length(planned);
            bar.set_position(sent);
            let left = remaining.map(|r| format!(" — {r} left in this window")).unwrap_or_default();
            bar.set_message(escape::controls(&format!("sending to {what}{left}")).into_owned());
        }
    }

    /// Waiting for a retry within --max-wait.
    pub fn waiting(&self, what: &str) {
        self.spinner(what.to_string());
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
