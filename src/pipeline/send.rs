//! Sending: what is due, group by group, claimed in batches within budget
//! and pace (the ledger reserves before anything is sent), each batch sent
//! to its engine; then, within `--max-wait`, sleeps until the next retry
//! falls due and sends again. Before the input is read, reservations left
//! by a run that stopped go back to the queue. Once the run is stopped (a
//! signal, `stop`), nothing more is claimed and a wait ends at once. A
//! batch goes one way, a file a step: the decision (`claim`: the quota
//! read and the ledger's claim), the request (`request`), what the answer
//! becomes (`outcome`), the report's part handed to the findings.

mod claim;
mod request;

use super::findings::Findings;
use super::next_steps;
use super::outcome::{Delivery, Recorder};
use super::Run;
use crate::ledger::Finish;
use crate::model::GroupKey;
use crate::output::printer::Printer;
use chrono::{DateTime, TimeDelta, Utc};
use request::Request;
use std::collections::HashSet;

/// The shortest sleep for a retry: an item due now that the drain could not
/// take must not make the wait loop spin.
const MIN_PAUSE: TimeDelta = TimeDelta::milliseconds(100);

/// The sending phase: the run's engines and ledger, the report its results
/// go to, and what it keeps as it sends.
pub(super) struct Sender<'r, 'a> {
    pub(super) run: &'r mut Run<'a>,
    pub(super) findings: &'r mut Findings,
    /// The end of what this run may wait for (`--max-wait`).
    wait_until: DateTime<Utc>,
    /// Groups whose engine-reported quota was read by this sender.
    reported: HashSet<GroupKey>,
    /// The answer to the last batch until the ledger has it: recorded with
    /// the group's next claim, one commit for the two
    /// (`Budget::finish_and_claim`), or on its own when no claim comes.
    answered: Option<Finish>,
}

impl Run<'_> {
    /// Before the input is read: reservations left by a run that stopped go
    /// back to the queue, items parked under another configuration are
    /// retried, and so are those whose cause a check finds fixed. Returns
    /// what the report says resumed.
    pub(super) async fn prepare(&mut self, now: DateTime<Utc>, printer: &Printer) -> anyhow::Result<Vec<String>> {
        let reconciled = self.ledger.reconcile(now, &self.owner)?;
        if reconciled.items > 0 {
            printer.note(&returned_note(reconciled.items));
        }
        let mut resumed = Vec::new();
        for group in self.known_groups() {
            let engine = &self.engines[&group.engine];
            let n = self.ledger.unpark_changed(&group, &engine.fingerprint(&group), now)?;
            if n > 0 {
                resumed.push(format!(
                    "{}: the configuration changed: {} go again.",
                    crate::output::printer::group_title(&group),
                    crate::attention::urls_parked(n)
                ));
            }
        }
        let groups = crate::attention::RunGroups {
            known: self.known_groups(),
            settings: self.settings,
            ledger: self.ledger.as_mut(),
            held: &mut self.held,
        };
        resumed.extend(crate::attention::notice_fixes(groups, &self.engines, now).await?);
        Ok(resumed)
    }

    /// After the ledger's connection was lost and is back: the answer kept
    /// through the loss is recorded unless its commit went in before the
    /// loss was seen (`Budget::finish_if_open`), then this run's own
    /// reservations the loss cut short go back to the queue, as a stopped
    /// run's would. The order matters: the kept answer's reservation is one
    /// of this run's own.
    pub(super) fn recover(&mut self, kept: &mut Option<Finish>, printer: &Printer) -> anyhow::Result<()> {
        let now = crate::ledger::open::follow_ledger_clock(self.ledger.as_mut(), self.clock, true)?.now;
        if let Some(done) = kept {
            self.ledger.finish_if_open(done)?;
            *kept = None;
        }
        let reconciled = self.ledger.reconcile_mine(now, &self.owner)?;
        if reconciled.items > 0 {
            printer.note(&returned_note(reconciled.items));
        }
        Ok(())
    }

    /// The earliest retry among `groups`, and its group.
    pub(super) fn next_due(&mut self, groups: &[GroupKey]) -> anyhow::Result<Option<(DateTime<Utc>, GroupKey)>> {
        let mut next: Option<(DateTime<Utc>, GroupKey)> = None;
        for g in groups {
            if let Some(t) = self.ledger.next_due(g)? {
                if next.as_ref().is_none_or(|(n, _)| t < *n) {
                    next = Some((t, g.clone()));
                }
            }
        }
        Ok(next)
    }
}

impl<'r, 'a> Sender<'r, 'a> {
    /// A sender on `run` whose results go to `report`, that waits for
    /// retries until `wait_until`.
    pub(super) fn new(run: &'r mut Run<'a>, findings: &'r mut Findings, wait_until: DateTime<Utc>) -> Sender<'r, 'a> {
        Sender { run, findings, wait_until, reported: HashSet::new(), answered: None }
    }

    /// Sends everything due now; then, while a retry falls due within
    /// `--max-wait`, waits for it and sends again — until the run is stopped.
    ///
    /// A database ledger that cannot be reached (a restart, a failover, a
    /// cut network) ends the run only once `--max-wait` is over: until then
    /// the run says so once, waits (`schedule::reconnect_after`, the spacing
    /// of the connection's own tries to reopen) and tries again; back, it
    /// first records what the loss cut short (`Run::recover`).
    pub(super) async fn send_due(&mut self, printer: &Printer) -> anyhow::Result<()> {
        let wait_until = self.wait_until;
        // The tries in a row that found the ledger away, and the last error.
        let mut lost: Option<(u32, anyhow::Error)> = None;
        loop {
            let pause = match self.send_round(printer, lost.is_some()).await {
                Ok(pause) => {
                    if lost.take().is_some() {
                        printer.warn("the ledger answers again: sending goes on");
                    }
                    match pause {
                        Some(pause) => pause,
                        None => break,
                    }
                }
                Err(e) if crate::error::LedgerError::is_lost(&e) => {
                    let tries = lost.as_ref().map_or(0, |(n, _)| *n).saturating_add(1);
                    let now = self.run.clock.now();
                    if self.run.stop.requested() || now >= wait_until {
                        return Err(e);
                    }
                    if tries == 1 {
                        // The ledger's own words, once: the chain around it
                        // repeats them.
                        let why = e.chain().find_map(|c| c.downcast_ref::<crate::error::LedgerError>());
                        printer.warn(&format!(
                            "the ledger cannot be reached; the run waits for it until --max-wait is over: {}",
                            why.map_or_else(|| format!("{e:#}"), ToString::to_string)
                        ));
                    }
                    let backoff =
                        TimeDelta::from_std(crate::schedule::reconnect_after(tries)).unwrap_or(TimeDelta::MAX);
                    lost = Some((tries, e));
                    backoff.min(wait_until - now)
                }
                Err(e) => return Err(e),
            };
            if !self.run.stop.stop_signal().sleep(pause.to_std().unwrap_or_default()).await {
                break;
            }
        }
        // Stopped while the ledger was away: what it could not record is
        // said as the failure it is.
        match lost {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// One round of `send_due`: what the loss of the ledger cut short
    /// recorded first (`after_outage`), everything due sent, then how long
    /// to wait for the next retry within `--max-wait` (`None`: the run is
    /// done).
    async fn send_round(&mut self, printer: &Printer, after_outage: bool) -> anyhow::Result<Option<TimeDelta>> {
        if after_outage {
            self.run.recover(&mut self.answered, printer)?;
        }
        self.drain().await?;
        let now = self.run.clock.now();
        if self.run.stop.requested() || now >= self.wait_until {
            return Ok(None);
        }
        let groups = self.run.sending_groups();
        let Some((pause, group)) = pause(self.run.next_due(&groups)?, now, self.wait_until) else { return Ok(None) };
        tracing::debug!(seconds = pause.num_seconds(), "waiting for retries due within --max-wait");
        if pause >= TimeDelta::seconds(1) {
            let what = self.waiting_for(&group, pause)?;
            if self.run.progress.visible() {
                self.run.progress.waiting(&what);
            } else {
                printer.note(&format!("{what}…"));
            }
        }
        Ok(Some(pause))
    }

    /// The answer this sender could not record yet, if any (`serve`'s
    /// worker keeps it across rounds for `Run::recover`).
    pub(super) fn take_unrecorded(&mut self) -> Option<Finish> {
        self.answered.take()
    }

    /// What a wait within --max-wait is for: "waiting for IndexNow (host)
    /// for site (key_pending) — retry in 40 s".
    fn waiting_for(&mut self, group: &GroupKey, pause: TimeDelta) -> anyhow::Result<String> {
        let why = match self.run.ledger.last_rejection(group)? {
            Some(a) => format!(" ({})", a.reason),
            None => String::new(),
        };
        Ok(waiting_text(group, &why, pause))
    }

    /// Sends everything due now, group by group, batch by batch, while the
    /// run is not stopped.
    pub(super) async fn drain(&mut self) -> anyhow::Result<()> {
        let known = self.run.sending_groups();
        let now = self.run.clock.now();
        let groups: Vec<GroupKey> =
            self.run.ledger.due_groups(now)?.into_iter().filter(|g| known.contains(g)).collect();
        for group in groups {
            while self.send_batch(&group).await? {}
        }
        Ok(())
    }

    /// Claims and sends one batch; returns whether to try another. An
    /// answer kept for a claim that does not come (the group is done, the
    /// run stopped or failed) is recorded on its own.
    async fn send_batch(&mut self, group: &GroupKey) -> anyhow::Result<bool> {
        let more = self.claim_and_send(group).await;
        if matches!(more, Ok(true)) {
            return more;
        }
        // An answer whose recording fails is kept: after a lost connection,
        // it is recorded once the ledger is back (`Run::recover`).
        let recorded = match &self.answered {
            Some(done) => self.run.ledger.finish(done).map(|()| self.answered = None),
            None => Ok(()),
        };
        let more = more?;
        recorded?;
        Ok(more)
    }

    /// `send_batch`'s claim and request, one way: decide (`claim::decide`),
    /// send (`request::send_claimed`), decide what the answers mean
    /// (`next_steps`), record (`outcome`), with the report's part handed to
    /// the findings on the way. A stopped run claims nothing.
    async fn claim_and_send(&mut self, group: &GroupKey) -> anyhow::Result<bool> {
        if self.run.stop.requested() {
            return Ok(false);
        }
        let Some(rules) = self.run.rules(group) else { return Ok(false) };
        let Some((claim, credential)) = claim::decide(self, group, &rules).await? else { return Ok(false) };
        let Some(reservation) = claim.reservation else { return Ok(false) };
        let Request { sent, fingerprint, at, inspections } = request::send_claimed(self, group, &rules, &claim).await?;
        let more = next_steps::another_batch(&claim, &sent, self.run.engines[&group.engine].max_batch());
        let answers = next_steps::Answers {
            group,
            rules: &rules,
            claim: &claim,
            sent: &sent,
            at,
            retry: &self.run.settings.retry,
        };
        let steps = next_steps::after(&answers, rand::random::<f64>);
        let mut recorder = Recorder { user_tz: self.run.user_tz, findings: self.findings };
        let delivery =
            Delivery { group, claim: &claim, reservation, sent: &sent, at, credential, fingerprint: &fingerprint };
        let done = recorder.record(delivery, steps)?;
        // Recorded with the next claim, before its request goes, or by
        // `send_batch` when none comes.
        self.answered = Some(done);
        self.run.record_inspections(self.findings, group, inspections, at)?;
        Ok(more)
    }
}

/// "3 URLs left in flight by a run that stopped were returned to the queue".
pub(super) fn returned_note(items: u64) -> String {
    format!(
        "{} left in flight by a run that stopped were returned to the queue (counted as used).",
        if items == 1 { "1 URL".to_string() } else { format!("{items} URLs") }
    )
}

/// How long to sleep for the next retry (`next`, with its group), if it
/// falls due by `wait_until`; at least `MIN_PAUSE`.
fn pause(
    next: Option<(DateTime<Utc>, GroupKey)>,
    now: DateTime<Utc>,
    wait_until: DateTime<Utc>,
) -> Option<(TimeDelta, GroupKey)> {
    match next {
        Some((next, group)) if next <= wait_until => Some(((next - now).max(MIN_PAUSE), group)),
        _ => None,
    }
}

/// "waiting for IndexNow (host) for site (key_pending) — retry in 40 s";
/// `why` is the " (reason)" of the group's last rejection, or empty.
fn waiting_text(group: &GroupKey, why: &str, pause: TimeDelta) -> String {
    format!(
        "waiting for {}{why} — retry in {}",
        crate::output::printer::group_title(group),
        crate::clock::humanize(pause)
    )
}

#[cfg(test)]
mod tests {
    use super::claim::unread_quota_note;
    use super::request::{request, soonest_limited};
    use super::*;
    use crate::budget_rules::{self, Scope};
    use crate::engines;
    use crate::ledger::{Claim, ClaimedItem};
    use crate::model::Class;
    use crate::model::Period;
    use crate::model::{Action, ItemState};
    use crate::pipeline::next_steps::another_batch;
    use crate::pipeline::testing::{self, at, rule, site_group, whole, Fixture, Scripted, NOW};
    use chrono_tz::Tz;

    fn claimed(n: usize) -> Claim {
        let items = (0..n)
            .map(|i| ClaimedItem {
                id: i as i64,
                url: format!("https://site.example/{i}"),
                action: if i == 0 { Action::Deleted } else { Action::Updated },
                attempts: 0,
                last_class: None,
                streak: 0,
                streak_started_at: None,
            })
            .collect();
        Claim { now: at(NOW), reservation: Some(1), items, ..Claim::default() }
    }

    #[test]
    fn the_note_on_reservations_returned_counts_urls() {
        assert_eq!(
            returned_note(1),
            "1 URL left in flight by a run that stopped were returned to the queue (counted as used)."
        );
        assert!(returned_note(3).starts_with("3 URLs left in flight"));
    }

    #[test]
    fn a_retry_is_waited_for_only_within_max_wait_and_never_for_less_than_the_floor() {
        let now = at(NOW);
        let until = now + TimeDelta::seconds(90);
        let g = site_group();
        let next = |secs: i64| Some((now + TimeDelta::seconds(secs), g.clone()));
        assert_eq!(pause(None, now, until), None, "nothing waits");
        assert_eq!(pause(next(91), now, until), None, "after --max-wait: not waited for");
        assert_eq!(pause(next(90), now, until), Some((TimeDelta::seconds(90), g.clone())));
        assert_eq!(pause(next(40), now, until), Some((TimeDelta::seconds(40), g.clone())));
        assert_eq!(pause(next(0), now, until), Some((MIN_PAUSE, g.clone())), "due now: a short pause, no spin");
        assert_eq!(pause(next(-5), now, until), Some((MIN_PAUSE, g)));
    }

    #[test]
    fn a_wait_names_the_group_the_reason_and_the_time_left() {
        let g = site_group();
        assert_eq!(
            waiting_text(&g, " (key_pending)", TimeDelta::seconds(40)),
            "waiting for IndexNow (api.indexnow.org) for site (key_pending) — retry in 40 s"
        );
        assert_eq!(
            waiting_text(&g, "", TimeDelta::minutes(2)),
            "waiting for IndexNow (api.indexnow.org) for site — retry in 2 min"
        );
    }

    #[test]
    fn the_progress_counts_down_the_limited_window_that_resets_first() {
        let now = at(NOW);
        let rules = [
            rule("month", Scope::Property, Period::Month, Tz::UTC, Some(100)),
            rule("unlimited", Scope::Property, Period::Minute, Tz::UTC, None),
            rule("day", Scope::Property, Period::Day, Tz::UTC, Some(10)),
        ];
        let windows = budget_rules::windows(&rules, now);
        assert_eq!(soonest_limited(&rules, &windows).map(|w| w.rule.as_str()), Some("day"));
        assert_eq!(soonest_limited(&rules[1..2], &windows[1..2]), None, "no limit: nothing counts down");
    }

    #[test]
    fn a_request_carries_the_claim_its_paced_delays_and_the_inspections() {
        let now = at(NOW);
        let mut claim = claimed(3);
        claim.slots = vec![now - TimeDelta::seconds(1), now, now + TimeDelta::milliseconds(1500)];
        let batch = request(&claim, vec![false, true, true], now);
        assert_eq!(batch.urls, ["https://site.example/0", "https://site.example/1", "https://site.example/2"]);
        assert_eq!(batch.actions, [Action::Deleted, Action::Updated, Action::Updated]);
        let delays: Vec<u128> = batch.delays.iter().map(|d| d.as_millis()).collect();
        assert_eq!(delays, [0, 0, 1500], "a slot passed already goes at once");
        assert_eq!(batch.inspect, [false, true, true]);
        assert!(request(&claimed(2), Vec::new(), now).delays.is_empty(), "no pace, no delays");
    }

    #[test]
    fn another_batch_goes_only_after_a_full_one_nothing_stopped() {
        let sent = |class, reason| whole(class, reason, &engines::Batch::default());
        let accepted = sent(Class::Accepted, "ok");
        assert!(another_batch(&claimed(2), &accepted, 2));
        assert!(!another_batch(&claimed(1), &accepted, 2), "the queue ran out");
        assert!(
            !another_batch(&claimed(2), &sent(Class::Quota, "rate_limited"), 2),
            "the engine said its quota is spent"
        );
        assert!(another_batch(&claimed(2), &sent(Class::Transient, "server_error"), 2));
        let budget = Claim { retry_at: Some(at(NOW)), ..claimed(2) };
        assert!(another_batch(&budget, &accepted, 2), "the next claim takes what the budget still covers");
        let paced = Claim { paced: vec![(9, "https://site.example/9".into(), at(NOW))], ..claimed(2) };
        assert!(!another_batch(&paced, &accepted, 2), "the pace holds the rest");
        // Bing's partial remainder: what is left goes at once, budget or not.
        let mut reported = budget_rules::windows(&[rule("r", Scope::Property, Period::Day, Tz::UTC, None)], at(NOW));
        reported[0].reported = true;
        let partial = |left: u64| {
            let mut sent = sent(Class::Quota, "partial_quota");
            sent.answers[0].verdict.reported = Some((Period::Day, left));
            sent.per_url = vec![0; 3];
            sent
        };
        let three = Claim { windows: reported, retry_at: Some(at(NOW)), ..claimed(3) };
        assert!(another_batch(&three, &partial(2), 500), "2 of the 3 go again now");
        assert!(!another_batch(&three, &partial(3), 500), "a remainder its request does not explain");
        assert!(!another_batch(&three, &partial(0), 500), "the window is spent");
        // Baidu's `remain` in an accepted answer: the next claim takes what
        // it covers, or defers the rest.
        let mut stated = sent(Class::Accepted, "ok");
        stated.answers[0].verdict.reported = Some((Period::Day, 5));
        let bounded = Claim { windows: three.windows.clone(), ..claimed(1) };
        assert!(another_batch(&bounded, &stated, 2000), "5 more are left");
        stated.answers[0].verdict.reported = Some((Period::Month, 5));
        assert!(!another_batch(&bounded, &stated, 2000), "no window of that period is reported");
    }

    #[test]
    fn a_quota_the_engine_cannot_report_is_a_note_naming_the_fallback() {
        let g = site_group();
        let mut windows =
            budget_rules::windows(&[rule("day", Scope::Property, Period::Day, Tz::UTC, Some(10))], at(NOW));
        assert_eq!(
            unread_quota_note(&g, "HTTP 500", &windows),
            "IndexNow (api.indexnow.org) for site: could not read the quota IndexNow reports (HTTP 500); the local \
             ledger decides this run."
        );
        windows[0].reported = true;
        assert!(unread_quota_note(&g, "HTTP 500", &windows)
            .ends_with("this run (with no local daily rule: 10 a day, indexq's conservative default)."));
    }

    #[tokio::test]
    async fn due_items_go_in_full_batches_until_the_queue_is_empty() {
        let f = Fixture::new("");
        let (mut run, batches) = f.sent(Scripted::answering(Class::Accepted, "ok", 2), 5).await;
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 2, 1]);
        assert!(testing::items(&mut run).iter().all(|i| i.state == ItemState::Accepted));
        assert_eq!(run.findings.results.summary()["accepted"], 5);
    }

    #[tokio::test]
    async fn a_quota_answer_stops_the_group_for_this_run() {
        let f = Fixture::new("");
        let (mut run, batches) = f.sent(Scripted::answering(Class::Quota, "rate_limited", 2), 5).await;
        assert_eq!(batches.len(), 1);
        let states: Vec<ItemState> = testing::items(&mut run).into_iter().map(|i| i.state).collect();
        assert_eq!(states, [ItemState::Queued; 5]);
    }

    #[tokio::test]
    async fn what_the_budget_has_no_room_for_is_deferred_until_its_window_reopens() {
        let f = Fixture::new(", daily_quota = 2, quota_timezone = \"Asia/Shanghai\"");
        let (mut run, batches) = f.sent(Scripted::answering(Class::Accepted, "ok", 10), 3).await;
        assert_eq!(batches, [["https://site.example/0", "https://site.example/1"]]);
        let results = testing::results(&mut run);
        let deferred: Vec<_> = results.iter().filter(|(_, o, _)| o == "deferred").collect();
        assert_eq!(deferred, [&("https://site.example/2".to_string(), "deferred".to_string(), "budget".to_string())]);
        let [d] = run.findings.deferrals.as_slice() else {
            panic!("one budget stopped the run: {:?}", run.findings.deferrals)
        };
        assert_eq!((d.used, d.limit, d.retry_at), (2, Some(2), at("2026-03-02T16:00:00Z")));
        assert_eq!(d.rule_tz, chrono_tz::Asia::Shanghai);
    }
}
