//! The budget's part of the ledger: reserve before send (`claim`), what an
//! answer records (`finish`), units without a queue item (URL inspections),
//! the engine's reports, reservations a stopped run left (`reconcile`),
//! and the ledger's clock that every window decision uses.

use super::{Owner, Result};
use crate::model::{
    Action, Class, GroupKey, NextStep, Period, Reason, Report, RuleWindow, StoredResponse, SubmitOrder, Usage,
};
use chrono::{DateTime, TimeDelta, Utc};

/// An item claimed for sending.
#[derive(Debug, Clone)]
pub struct ClaimedItem {
    pub id: i64,
    pub url: String,
    pub action: Action,
    pub attempts: u32,
    pub last_class: Option<Class>,
    /// Consecutive attempts that ended in `last_class`.
    pub streak: u32,
    pub streak_started_at: Option<DateTime<Utc>>,
}

/// The result of a claim: items reserved (budget taken, marked in flight)
/// and due items that did not fit, now waiting until `retry_at`.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    /// The instant the claim was decided at (the ledger's clock).
    pub now: DateTime<Utc>,
    /// The rules' windows at `now`: what the claim was counted against.
    pub windows: Vec<RuleWindow>,
    pub reservation: Option<i64>,
    pub items: Vec<ClaimedItem>,
    /// With pacing: when each claimed item may be sent (same order).
    pub slots: Vec<DateTime<Utc>>,
    /// How many due items the budget has no room for (each was passed to
    /// the claim's `deferred` callback); they wait until `retry_at`.
    pub deferred: u64,
    pub retry_at: Option<DateTime<Utc>>,
    /// Due items within budget that the pace puts after the horizon (or in
    /// the next window), each with the time it is expected to be sent.
    pub paced: Vec<(i64, String, DateTime<Utc>)>,
    /// With a reservation: until when it is trusted without a live owner
    /// (a whole second, a lease after its last slot). A request left
    /// unanswered is not sent again before.
    pub lease_until: Option<DateTime<Utc>>,
    /// With a reservation and the spec's `credential`: when that credential
    /// was first used since the engine last accepted it (`key_pending`'s
    /// clock; the claim's instant if this is its first use).
    pub key_first_used: Option<DateTime<Utc>>,
}

/// What a dry run asks of the ledger for one group: the claim a run would
/// make at `now` over as many due items as there may be, within `windows`,
/// with what the engine says is left of its reported windows (`reported`:
/// per period) and at `pace`'s slots.
#[derive(Clone, Copy)]
pub struct ClaimQuery<'a> {
    pub windows: &'a [RuleWindow],
    pub reported: &'a [(Period, u64)],
    pub pace: Option<&'a Pace>,
    pub now: DateTime<Utc>,
}

/// The claim a run would make (`Budget::plan_claim`), read only: of the due
/// items in order, the first `take` go now, those before `paced_until`
/// wait for their paced slot (`slots`), and the rest wait until `retry_at`,
/// when the window `binding` (an index into the query's windows) frees up.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimForecast {
    pub take: usize,
    pub paced_until: usize,
    pub retry_at: Option<DateTime<Utc>>,
    pub binding: Option<usize>,
    /// Each window's usage, as the claim would count against it.
    pub usages: Vec<Usage>,
    pub slots: Option<Slots>,
}

/// When the sends of a pace are expected: the `n`-th from now at
/// `first + n × interval`, never before `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slots {
    pub first: DateTime<Utc>,
    pub interval: TimeDelta,
    pub now: DateTime<Utc>,
}

impl Slots {
    pub fn at(&self, n: usize) -> DateTime<Utc> {
        (self.first + self.interval * n as i32).max(self.now)
    }
}

/// What "now" is made of when the ledger decides: this machine's clock,
/// and how far `INDEXQ_NOW` shifted it (a ledger with a clock of its own,
/// a database server's, shifts that one the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub local: DateTime<Utc>,
    pub shift: TimeDelta,
}

impl Now {
    /// A clock pinned at `at`, as `INDEXQ_NOW` pins it (tests).
    #[cfg(test)]
    pub fn pinned(at: DateTime<Utc>) -> Now {
        Now { local: at, shift: at - crate::clock::wall_now() }
    }
}

/// The ledger's clock at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerTime {
    /// The instant window decisions use (`policy::ledger_now`).
    pub now: DateTime<Utc>,
    /// The latest instant recorded before, by any run.
    pub latest: Option<DateTime<Utc>>,
    /// What the ledger's own clock said (the database server's, or this
    /// machine's), before the floor of `latest`.
    pub clock: DateTime<Utc>,
}

/// The budget rules a claim must fit, as windows at any instant: the claim
/// asks for them at the ledger's now.
pub trait Windows {
    fn at(&self, now: DateTime<Utc>) -> Vec<RuleWindow>;
}

/// Windows fixed in advance (whatever the instant).
impl Windows for Vec<RuleWindow> {
    fn at(&self, _now: DateTime<Utc>) -> Vec<RuleWindow> {
        self.clone()
    }
}

impl<const N: usize> Windows for [RuleWindow; N] {
    fn at(&self, _now: DateTime<Utc>) -> Vec<RuleWindow> {
        self.to_vec()
    }
}

/// What a claim may take: within the rules' windows at the ledger's now, at
/// most `max_items`, at the pace's slots (if any).
#[derive(Clone, Copy)]
pub struct ClaimSpec<'a> {
    pub windows: &'a (dyn Windows + Sync),
    pub max_items: usize,
    pub pace: Option<&'a Pace>,
    pub now: Now,
    /// The credential the batch goes with (by fingerprint), if its engine
    /// has one: a claim that takes items records its first use in the same
    /// transaction (`Claim::key_first_used`), before the request goes.
    pub credential: Option<&'a str>,
    /// `[submit] order`: which due URLs go first where the budget does not
    /// cover them all (`policy::DueOrder::of` says for which groups).
    pub order: SubmitOrder,
}

/// A shared rate (GCRA): one send per `interval` under `key`, with bursts
/// of up to `burst` sends ahead of it. A claim takes the slots that fall
/// before `horizon` (the end of what the run may wait for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pace {
    pub key: String,
    pub interval: TimeDelta,
    pub burst: u32,
    pub horizon: DateTime<Utc>,
}

/// One answer for some items of a reservation: a request to the engine
/// (or, where the engine answers per URL, the part of it about these URLs)
/// and what happens to those items next. The ledger records it once, as
/// one attempt of every item it names.
#[derive(Debug, Clone)]
pub struct Answered {
    pub items: Vec<i64>,
    pub at: DateTime<Utc>,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    pub response: StoredResponse,
    pub next: NextStep,
    /// Whether the request left this machine (false: provably never sent,
    /// e.g. a refused connection or a stop before it went). With the class,
    /// it decides what the request's units give back (`policy::given_back`).
    pub reached: bool,
}

/// Everything `finish` records for one reservation.
#[derive(Debug, Clone)]
pub struct Finish {
    pub reservation: i64,
    pub answers: Vec<Answered>,
    pub blocks: Vec<Block>,
    /// What the engine said is left of a reported rule's window in its
    /// answer (Bing's remainder), recorded as a reading of its quota.
    pub reports: Vec<Remainder>,
    /// The windows the reservation was counted in: what it gives back is
    /// decided per window by `policy::given_back`.
    pub windows: Vec<RuleWindow>,
    /// The credential (by fingerprint) the engine accepted in these
    /// answers: its first use is forgotten in the same transaction, so that
    /// its next use starts a new `key_pending` clock.
    pub accepted_credential: Option<String>,
}

/// What the engine said is left of a reported rule's window, at `at`, in
/// an answer (Bing's "Quota remaining for today: 10, Submitted: 32"). The
/// window's limit becomes what the ledger has counted (the refused units
/// given back) plus `remaining`, less what other reservations have in
/// flight — as `Ledger::record_report` makes it of a reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remainder {
    pub window: RuleWindow,
    pub remaining: u64,
    pub at: DateTime<Utc>,
}

/// A rule window the server said is spent, until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub rule: RuleWindow,
    pub until: DateTime<Utc>,
}

/// One URL inspection's answer (Google `skip_indexed`), as the ledger
/// keeps it: classified like any answer, counted per property and class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectionAnswer {
    pub at: DateTime<Utc>,
    pub class: Class,
    pub reason: Reason,
    pub message: String,
    /// The fix, for `misconfigured`.
    pub hint: Option<String>,
    pub http_status: Option<u16>,
}

/// What one request's inspections of a property came to.
#[derive(Debug, Clone)]
pub struct Inspections<'a> {
    pub property: &'a str,
    /// The answers of the inspections asked.
    pub answers: &'a [InspectionAnswer],
    /// The inspection budget's windows the units were taken from
    /// (`take_units`), and how many of them go back: inspections not asked,
    /// or that provably never reached the engine.
    pub windows: &'a [RuleWindow],
    pub unused: u64,
    /// Inspection windows a quota answer spent, until when.
    pub blocks: &'a [Block],
}

/// Items returned to the queue by `reconcile`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reconciled {
    pub reservations: u64,
    pub items: u64,
}

/// Budgets, claims and answers. Every method is one transaction. It is
/// implemented once, for every backend, by `policy` over the backend's
/// storage steps: what a claim or an answer decides is decided there.
pub trait Budget {
    /// The ledger's clock (`policy::ledger_now`): the later of its own clock
    /// — SQLite: this machine's; PostgreSQL: the database server's, shifted
    /// like `now` — and the latest instant any run recorded. With `record`,
    /// that instant is recorded as the latest.
    fn now(&mut self, now: Now, record: bool) -> Result<LedgerTime>;

    /// Returns items of reservations whose owner is gone (dead process, or
    /// lease expired) to the queue, due now. Their budget stays counted: the
    /// server may have seen the request.
    fn reconcile(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled>;

    /// `reconcile`, with `me`'s own reservations returned too: for a
    /// process that knows none of its claims is in flight any more — `serve`'s
    /// worker between rounds, after a round the ledger's loss cut short,
    /// whose answer could not be recorded.
    fn reconcile_mine(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<Reconciled>;

    /// How many reservations `reconcile` would return to the queue.
    fn stale_reservations(&mut self, now: DateTime<Utc>, me: &Owner) -> Result<u64>;

    /// Reserve-before-send: in one transaction, at the ledger's clock (and
    /// records it as the latest), takes up to `max_items` due items of
    /// `group` that fit every rule's window at that instant, counts them against every rule,
    /// marks them in flight under a new reservation owned by `me` (and the
    /// first use of the spec's credential, if it has none), and
    /// moves due items that do not fit to the time budget frees up or, with
    /// a pace, to their slot. Once the transaction has committed, `deferred`
    /// is told of each item moved to when budget frees up, with that time.
    fn claim(
        &mut self,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim>;

    /// `finish` of an answered reservation, then `claim`, in one
    /// transaction: one commit for the two (a run sending batch after batch
    /// records each answer with the next claim). Should the claim fail,
    /// `done` is still recorded, on its own, and the claim's error returned.
    fn finish_and_claim(
        &mut self,
        done: &Finish,
        group: &GroupKey,
        spec: &ClaimSpec,
        me: &Owner,
        deferred: &mut dyn FnMut(i64, &str, DateTime<Utc>),
    ) -> Result<Claim>;

    /// Takes up to `n` units of `rules` that need no queue item (e.g. URL
    /// inspections): as many as every rule allows. Returns how many.
    fn take_units(&mut self, rules: &[RuleWindow], n: u64, now: DateTime<Utc>) -> Result<u64>;

    /// Records a request's URL inspections (Google `skip_indexed`), in one
    /// transaction: each answer counted under its property and class (the
    /// last one of each kept), the unused units given back to `windows`,
    /// and the blocks a quota answer puts on inspection windows.
    fn record_inspections(&mut self, done: &Inspections) -> Result<()>;

    /// Records the attempts of a reservation, moves its items on, applies
    /// the server's blocks, gives back to each of the reservation's windows
    /// what `policy::given_back` decides (requests that never left, and
    /// those the engine refused for rate or quota, which it did not count:
    /// to the day and month windows only), records the engine's remainders
    /// (`Remainder`), forgets the first use of a credential the engine
    /// accepted, and ends the reservation — in one transaction. A
    /// window a block holds stays spent whatever is given back.
    fn finish(&mut self, reservation: &Finish) -> Result<()>;

    /// Records `reservation` as `finish` does, if it is still open; returns
    /// whether it was. For an answer kept through a lost connection, whose
    /// `finish` may have been committed before the loss was seen.
    fn finish_if_open(&mut self, reservation: &Finish) -> Result<bool>;

    /// The claim a run would make of a group now (read only: a dry run's
    /// plan), decided as `claim` decides it.
    fn plan_claim(&mut self, query: &ClaimQuery) -> Result<ClaimForecast>;

    /// The first `n` due items of `group` at `now` (id and URL), in the
    /// order its claims take them under `order`: with a forecast, which of
    /// them go now, which at a paced slot and which when budget frees up
    /// (read only).
    fn due_in_order(
        &mut self,
        group: &GroupKey,
        now: DateTime<Utc>,
        n: usize,
        order: crate::model::SubmitOrder,
    ) -> Result<Vec<(i64, String)>>;

    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage>;

    /// The engine says `remaining` units are left in a reported rule's
    /// window. Sets the window's limit to what the ledger has counted plus
    /// that, less what is in flight right now (which the engine may not
    /// have counted yet). Returns the report as stored.
    fn record_report(&mut self, rule: &RuleWindow, remaining: u64, now: DateTime<Utc>) -> Result<Report>;
}
