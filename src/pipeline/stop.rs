//! A clean stop on SIGINT or SIGTERM (Windows: Ctrl-C). The first signal
//! stops the run: nothing more is claimed or read (a list at the end of the
//! line being read), a sleep within `--max-wait` ends, and requests in
//! flight get `[submit] stop_grace` to be answered (the engines see this as
//! an `engines::StopSignal`); then the run reports and exits 130 or 143. A second
//! signal exits at once with the same code: the ledger's reservations are
//! reconciled by the next run.

use crate::engines::{Sent, StopSignal};
use crate::error::ExitStatus;
use crate::output::summary::Interruption;
use chrono::{DateTime, Utc};
use std::io::{self, BufRead, Read};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (systemd stop, a cancelled CI job).
    Terminate,
}

impl Signal {
    pub(super) fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// 128 + the signal's number, as a shell reports a process it ended.
    pub(super) fn exit_status(self) -> ExitStatus {
        match self {
            Signal::Interrupt => ExitStatus::Interrupted,
            Signal::Terminate => ExitStatus::Terminated,
        }
    }
}

/// A run's stop: the signal that came (if one did), and the `StopSignal` that
/// every phase and engine reads.
#[derive(Clone)]
pub(crate) struct Stop {
    shared: Arc<Shared>,
    stop_signal: StopSignal,
}

struct Shared {
    signal: OnceLock<Signal>,
    deadline: watch::Sender<Option<Instant>>,
    grace: Duration,
}

impl Stop {
    /// A stop that only `trigger` sets off (the listener's, and the tests').
    pub(super) fn new(grace: Duration) -> Stop {
        let (deadline, stop_signal) = StopSignal::channel();
        Stop { shared: Arc::new(Shared { signal: OnceLock::new(), deadline, grace }), stop_signal }
    }

    /// A stop set off by SIGINT or SIGTERM (Windows: Ctrl-C), listened to
    /// on the current tokio runtime from now on. Unless `quiet`, the first
    /// signal is acknowledged on stderr. If the signals cannot be listened
    /// to, a warning says so and the run cannot be stopped cleanly.
    pub(crate) fn listen(grace: Duration, quiet: bool) -> Stop {
        let stop = Stop::new(grace);
        match Signals::new() {
            Ok(mut signals) => {
                let stop = stop.clone();
                tokio::spawn(async move {
                    while let Some(signal) = signals.next().await {
                        stop.on_signal(signal, quiet);
                    }
                });
            }
            Err(e) => tracing::warn!("cannot listen for SIGINT/SIGTERM ({e}): a signal ends the run at once"),
        }
        stop
    }

    /// The first signal stops the run; a second ends the process at once,
    /// with the first one's exit code.
    fn on_signal(&self, signal: Signal, quiet: bool) {
        if self.trigger(signal) {
            if !quiet {
                eprintln!("{}", acknowledgement(signal, self.shared.grace));
            }
            return;
        }
        let first = self.signal().unwrap_or(signal);
        eprintln!(
            "indexq: a second signal ({}): stopping at once; requests still in flight are reconciled by the next \
             run (counted as used)",
            signal.name()
        );
        std::process::exit(first.exit_status().code().into());
    }

    /// Stops the run for `signal`: the grace for requests in flight starts
    /// now. False if it was stopped already.
    pub(super) fn trigger(&self, signal: Signal) -> bool {
        if self.shared.signal.set(signal).is_err() {
            return false;
        }
        let now = Instant::now();
        // A grace past what a clock can hold is as good as none ending.
        let deadline = now.checked_add(self.shared.grace).unwrap_or(now + Duration::from_secs(100 * 365 * 86_400));
        self.shared.deadline.send_replace(Some(deadline));
        true
    }

    /// The signal that stopped the run, if one did.
    pub(super) fn signal(&self) -> Option<Signal> {
        self.shared.signal.get().copied()
    }

    pub(crate) fn requested(&self) -> bool {
        self.stop_signal.stopping()
    }

    pub(crate) fn stop_signal(&self) -> &StopSignal {
        &self.stop_signal
    }

    pub(super) fn grace(&self) -> Duration {
        self.shared.grace
    }
}

/// What the stop cut, counted as the run goes: requests left unanswered
/// and URLs left unsent (from the answers the engines made of the stop),
/// and whether an input was left unread.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct StopCut {
    pub unanswered_requests: u64,
    pub unanswered_urls: u64,
    pub unsent_urls: u64,
    /// The latest time an unanswered URL goes again.
    pub retry_at: Option<DateTime<Utc>>,
    pub input_cut: bool,
}

impl StopCut {
    /// Counts what the stop cut of a request's answers; the unanswered go
    /// again at `retry_at`.
    pub(super) fn count(&mut self, sent: &Sent, retry_at: DateTime<Utc>) {
        for (i, answer) in sent.answers.iter().enumerate().filter(|(_, a)| a.cut_by_stop()) {
            let urls = sent.per_url.iter().filter(|&&a| a == i).count() as u64;
            if answer.reached {
                self.unanswered_requests += 1;
                self.unanswered_urls += urls;
                self.retry_at = self.retry_at.max(Some(retry_at));
            } else {
                self.unsent_urls += urls;
            }
        }
    }

    /// The report's account of a run `signal` stopped, with `queued` URLs
    /// of its groups in the queue (the unanswered among them).
    pub(super) fn interruption(&self, signal: Signal, grace: Duration, queued: u64) -> Interruption {
        Interruption {
            signal: signal.name(),
            grace,
            unanswered_requests: self.unanswered_requests,
            unanswered_urls: self.unanswered_urls,
            unsent_urls: self.unsent_urls,
            retry_at: self.retry_at,
            queued: queued.saturating_sub(self.unanswered_urls),
            input_cut: self.input_cut,
        }
    }
}

/// What the first signal prints on stderr (a person pressing Ctrl-C sees
/// that it was heard).
fn acknowledgement(signal: Signal, grace: Duration) -> String {
    format!(
        "indexq: {}: stopping — nothing more is claimed; requests in flight get {} to be answered (a second \
         signal stops at once)",
        signal.name(),
        crate::clock::humanize(chrono::TimeDelta::from_std(grace).unwrap_or(chrono::TimeDelta::MAX))
    )
}

/// The signals a run listens to.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(windows)]
    ctrl_c: tokio::signal::windows::CtrlC,
}

impl Signals {
    /// Listens from now on (the handlers are in place when this returns).
    #[cfg(unix)]
    fn new() -> io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    #[cfg(windows)]
    fn new() -> io::Result<Signals> {
        Ok(Signals { ctrl_c: tokio::signal::windows::ctrl_c()? })
    }

    #[cfg(not(any(unix, windows)))]
    fn new() -> io::Result<Signals> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "no signals on this platform"))
    }

    /// The next signal.
    #[cfg(unix)]
    async fn next(&mut self) -> Option<Signal> {
        tokio::select! {
            s = self.interrupt.recv() => s.map(|()| Signal::Interrupt),
            s = self.terminate.recv() => s.map(|()| Signal::Terminate),
        }
    }

    #[cfg(windows)]
    async fn next(&mut self) -> Option<Signal> {
        self.ctrl_c.recv().await.map(|()| Signal::Interrupt)
    }

    #[cfg(not(any(unix, windows)))]
    async fn next(&mut self) -> Option<Signal> {
        None
    }
}

/// An input list that ends at the end of the line being read once the run
/// stops: every line handed on is whole (and goes to the ledger), and the
/// rest of the input is not read. `cut`: it ended so (the rest may be
/// empty: whether it is is not asked, as that could wait for stdin).
pub(super) struct UntilStopped<R> {
    inner: R,
    stop_signal: StopSignal,
    /// Whether the last byte handed on ended a line (or none was).
    at_line_start: bool,
    ended: bool,
    pub(super) cut: bool,
}

impl<R: BufRead> UntilStopped<R> {
    pub(super) fn new(inner: R, stop_signal: StopSignal) -> UntilStopped<R> {
        UntilStopped { inner, stop_signal, at_line_start: true, ended: false, cut: false }
    }
}

impl<R: BufRead> Read for UntilStopped<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.ended || out.is_empty() {
            return Ok(0);
        }
        if !self.stop_signal.stopping() {
            // As the input itself reads (a large read bypasses its buffer).
            let n = self.inner.read(out)?;
            if n > 0 {
                self.at_line_start = out[n - 1] == b'\n';
            }
            return Ok(n);
        }
        // Nothing more is read once stopped between two lines (a read could
        // wait for standard input).
        if self.at_line_start {
            (self.ended, self.cut) = (true, true);
            return Ok(0);
        }
        let buf = self.inner.fill_buf()?;
        if buf.is_empty() {
            return Ok(0);
        }
        let mut n = buf.len().min(out.len());
        if let Some(end) = memchr::memchr(b'\n', &buf[..n]) {
            n = end + 1;
            (self.ended, self.cut) = (true, true);
        }
        out[..n].copy_from_slice(&buf[..n]);
        self.at_line_start = buf[n - 1] == b'\n';
        self.inner.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_codes_are_128_and_the_signals_number() {
        assert_eq!(Signal::Interrupt.exit_status().code(), 130);
        assert_eq!(Signal::Terminate.exit_status().code(), 143);
        assert_eq!((Signal::Interrupt.name(), Signal::Terminate.name()), ("SIGINT", "SIGTERM"));
    }

    #[tokio::test]
    async fn the_first_signal_stops_the_run_and_starts_the_grace() {
        let stop = Stop::new(Duration::from_secs(10));
        assert!(!stop.requested() && stop.signal().is_none());
        assert!(stop.trigger(Signal::Terminate));
        assert!(stop.requested());
        assert_eq!(stop.signal(), Some(Signal::Terminate));
        assert!(!stop.trigger(Signal::Interrupt), "a second signal does not stop it again");
        assert_eq!(stop.signal(), Some(Signal::Terminate), "the first signal is the run's");
        assert!(!stop.stop_signal().sleep(Duration::from_secs(60)).await, "a sleep ends at once");
    }

    #[test]
    fn the_cut_counts_unanswered_requests_and_unsent_urls() {
        use crate::engines::Answer;
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let mut cut = StopCut::default();
        let accepted = crate::pipeline::testing::whole(crate::model::Class::Accepted, "ok", &Default::default());
        cut.count(&accepted, t("2026-03-02T10:10:00Z"));
        assert_eq!(cut, StopCut::default(), "an answer the stop did not cut counts nothing");
        // Bing's halves: one answered, one in flight at the deadline, one never sent.
        let sent = Sent {
            answers: vec![accepted.answers[0].clone(), Answer::unanswered_on_stop(), Answer::not_sent_on_stop()],
            per_url: vec![0, 0, 1, 1, 1, 2],
        };
        cut.count(&sent, t("2026-03-02T10:10:00Z"));
        cut.count(&Sent::whole(Answer::unanswered_on_stop(), 2), t("2026-03-02T10:11:00Z"));
        let expected = StopCut {
            unanswered_requests: 2,
            unanswered_urls: 5,
            unsent_urls: 1,
            retry_at: Some(t("2026-03-02T10:11:00Z")),
            input_cut: false,
        };
        assert_eq!(cut, expected);
        let i = cut.interruption(Signal::Terminate, Duration::from_secs(10), 9);
        assert_eq!((i.signal, i.unanswered_urls, i.unsent_urls, i.queued), ("SIGTERM", 5, 1, 4));
        assert_eq!(cut.interruption(Signal::Interrupt, Duration::ZERO, 3).queued, 0, "never below nothing");
    }

    #[test]
    fn the_first_signal_is_acknowledged_with_the_grace() {
        assert_eq!(
            acknowledgement(Signal::Interrupt, Duration::from_secs(10)),
            "indexq: SIGINT: stopping — nothing more is claimed; requests in flight get 10 s to be answered (a \
             second signal stops at once)"
        );
    }

    /// Reads `input` through `UntilStopped` in reads of `chunk` bytes (from a
    /// buffer of as many), the run
    /// stopping after `before` bytes were handed on.
    fn read_stopping(input: &[u8], chunk: usize, before: usize) -> (String, bool) {
        let stop = Stop::new(Duration::ZERO);
        let mut reader = UntilStopped::new(std::io::BufReader::with_capacity(chunk, input), stop.stop_signal().clone());
        let mut got = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            if got.len() >= before {
                stop.trigger(Signal::Interrupt);
            }
            let n = reader.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        (String::from_utf8(got).unwrap(), reader.cut)
    }

    #[test]
    fn a_list_read_until_the_stop_ends_at_the_end_of_a_line() {
        let input = b"https://a.example/1\nhttps://a.example/2\nhttps://a.example/3\n";
        // Never stopped: the whole input.
        assert_eq!(read_stopping(input, 5, usize::MAX), (String::from_utf8(input.to_vec()).unwrap(), false));
        // Stopped inside the first line: that line is finished, no more.
        assert_eq!(read_stopping(input, 5, 3), ("https://a.example/1\n".to_string(), true));
        // Stopped right after a line: nothing more.
        assert_eq!(read_stopping(input, 20, 20), ("https://a.example/1\n".to_string(), true));
        // Stopped before anything was read: nothing.
        assert_eq!(read_stopping(input, 5, 0), (String::new(), true));
        // Stopped inside the last line: the input is read to its end.
        assert_eq!(read_stopping(input, 7, 45), (String::from_utf8(input.to_vec()).unwrap(), true));
        // A last line without its newline is read whole, and the input was not cut.
        assert_eq!(read_stopping(b"https://a.example/1", 3, 1), ("https://a.example/1".to_string(), false));
    }
}
