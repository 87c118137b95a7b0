//! A run's stop (SIGINT/SIGTERM) as the code that sends sees it: once the
//! run stops, no request starts and a sleep ends at once; a request in
//! flight is waited for until the grace deadline, then given up. The signals
//! themselves are listened to by `submit` (`pipeline::stop`), which
//! holds the sending side.

use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The receiving side of a run's stop: `None` while the run goes on, then
/// the instant the grace for requests in flight ends.
#[derive(Debug, Clone)]
pub struct StopSignal(watch::Receiver<Option<Instant>>);

impl StopSignal {
    /// A stop_signal and the sender that stops it (`send(Some(deadline))`).
    pub fn channel() -> (watch::Sender<Option<Instant>>, StopSignal) {
        let (tx, rx) = watch::channel(None);
        (tx, StopSignal(rx))
    }

    /// A stop_signal that never stops.
    #[cfg(test)]
    pub fn never() -> StopSignal {
        StopSignal::channel().1
    }

    /// Whether the run stops: nothing new starts.
    pub fn stopping(&self) -> bool {
        self.0.borrow().is_some()
    }

    /// The grace deadline, once the run stops; never, if it cannot.
    async fn deadline(&self) -> Instant {
        let mut rx = self.0.clone();
        let deadline = match rx.wait_for(Option::is_some).await {
            Ok(deadline) => *deadline,
            // The sender is gone: nothing can stop the run any more.
            Err(_) => None,
        };
        match deadline {
            Some(deadline) => deadline,
            None => std::future::pending().await,
        }
    }

    /// Resolves when the run stops.
    pub async fn stopped(&self) {
        self.deadline().await;
    }

    /// Sleeps for `d`; false (at once) if the run stops first or has.
    pub async fn sleep(&self, d: Duration) -> bool {
        if self.stopping() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(d) => !self.stopping(),
            () = self.stopped() => false,
        }
    }

    /// `work`'s output, or `None` when the run stopped and its grace
    /// deadline passed first (`work` is dropped: a request is abandoned).
    pub async fn within_grace<F: Future>(&self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            out = work => Some(out),
            () = async { tokio::time::sleep_until(self.deadline().await).await } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test]
    async fn a_stop_signal_that_never_comes_lets_everything_run() {
        let stop_signal = StopSignal::never();
        assert!(!stop_signal.stopping());
        let started = Instant::now();
        assert!(stop_signal.sleep(20 * MS).await, "the whole sleep");
        assert!(started.elapsed() >= 20 * MS);
        let slow = async {
            tokio::time::sleep(20 * MS).await;
            7
        };
        assert_eq!(stop_signal.within_grace(slow).await, Some(7));
    }

    #[tokio::test]
    async fn a_stop_ends_sleeps_at_once_and_work_at_the_grace_deadline() {
        let (tx, stop_signal) = StopSignal::channel();
        let started = Instant::now();
        let stopper = tokio::spawn(async move {
            tokio::time::sleep(50 * MS).await;
            tx.send_replace(Some(Instant::now() + 300 * MS));
            tx
        });
        assert!(!stop_signal.sleep(Duration::from_secs(60)).await, "the sleep ends at the stop");
        let stopped = started.elapsed();
        assert!(stopped >= 50 * MS && stopped < Duration::from_secs(30), "{stopped:?}");
        assert!(stop_signal.stopping());
        assert!(!stop_signal.sleep(Duration::from_secs(60)).await, "once stopped, no sleep at all");

        // Work that ends within the grace is waited for...
        let quick = async {
            tokio::time::sleep(10 * MS).await;
            "answer"
        };
        assert_eq!(stop_signal.within_grace(quick).await, Some("answer"));
        // ...work that does not is given up at the deadline.
        assert_eq!(stop_signal.within_grace(std::future::pending::<()>()).await, None);
        let given_up = started.elapsed();
        assert!(given_up >= 350 * MS && given_up < Duration::from_secs(30), "{given_up:?}");
        drop(stopper.await);
    }
}
