//! What a backend gives policy: one transaction at a time, and in it the
//! storage steps a claim, an answer, a grant of units and a reconcile take,
//! each one or a few statements in the backend's dialect. The steps decide
//! nothing: which items, how many units, what state, in which order and
//! when the caller hears of a deferral are policy's (`claim`, `answer`).

use super::super::{Answered, Block, ClaimedItem, InspectionAnswer, Now, Owner, Result};
use super::DueOrder;
use crate::model::{Class, GroupKey, ItemState, Report, RuleWindow, Usage};
use chrono::{DateTime, TimeDelta, Utc};

/// A backend, as policy runs it.
pub trait Backend {
    /// How long this process's reservations are trusted without a live owner.
    fn lease(&self) -> TimeDelta;

    /// Runs `f` in one write transaction, committed when `f` returns `Ok`
    /// (PostgreSQL runs it again from the start when the server aborts it
    /// for a deadlock: `f` must only decide from what the steps read).
    fn write<T: Send>(&mut self, f: impl FnMut(&mut dyn Steps) -> Result<T> + Send) -> Result<T>;

    /// Runs `f` reading only: nothing it does is locked or written.
    fn read<T: Send>(&mut self, f: impl FnMut(&mut dyn Steps) -> Result<T> + Send) -> Result<T>;
}

/// Every step of a transaction.
pub trait Steps: ClaimSteps + AnswerSteps {}

impl<T: ClaimSteps + AnswerSteps> Steps for T {}

/// Where an answer moves the items it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move<'a> {
    pub to: ItemState,
    /// When a queued item is due again.
    pub due: Option<DateTime<Utc>>,
    /// The configuration a parked item waits for a change of.
    pub fingerprint: Option<&'a str>,
}

/// The due items a deferral leaves due (`ClaimSteps::defer_due`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// None: every due item is deferred.
    None,
    /// Those up to this place (due time, id) in the order by due time.
    After((DateTime<Utc>, i64)),
    /// These, by id: the first in another order, found by one sort.
    Except(Vec<i64>),
}

/// A due item: its id and URL.
pub type Due = (i64, String);

/// The items a claim took, under a new reservation: each with when it was
/// due.
pub struct Taken {
    pub reservation: i64,
    pub items: Vec<(Option<DateTime<Utc>>, ClaimedItem)>,
}

/// The steps of a claim, a grant of units and a reconcile.
pub trait ClaimSteps {
    /// The ledger's own clock: this machine's (SQLite), or the database
    /// server's shifted as `INDEXQ_NOW` shifts this machine's (PostgreSQL).
    fn own_clock(&mut self, now: Now) -> Result<DateTime<Utc>>;

    /// The latest instant any run recorded; with `hold`, held until the
    /// transaction ends (claims see each other's instants in order).
    fn latest(&mut self, hold: bool) -> Result<Option<DateTime<Utc>>>;

    /// Records `at` (a whole second) as the latest instant, unless a later
    /// one is.
    fn record_latest(&mut self, at: DateTime<Utc>) -> Result<()>;

    /// The id of a group the ledger holds items of (or ever did).
    fn group(&mut self, key: &GroupKey) -> Result<Option<i64>>;

    /// A window's usage, its row made if missing and held until the
    /// transaction ends (the caller takes windows in one order).
    fn window(&mut self, rule: &RuleWindow) -> Result<Usage>;

    /// A window's usage, read only.
    fn usage(&mut self, rule: &RuleWindow) -> Result<Usage>;

    /// A pace's stored arrival time (ms); with `hold`, its row held until
    /// the transaction ends.
    fn pace(&mut self, key: &str, hold: bool) -> Result<Option<i64>>;

    fn set_pace(&mut self, key: &str, tat_ms: i64) -> Result<()>;

    /// The queue of `group` held until the transaction ends: no other
    /// claim of it, and no writer that decides by whether its items are in
    /// flight, commits meanwhile (taken after the windows).
    fn hold_queue(&mut self, group: i64) -> Result<()>;

    /// How many items of `group` are due at `now`, counted no further than `cap`.
    fn count_due(&mut self, group: i64, now: DateTime<Utc>, cap: usize) -> Result<usize>;

    /// How many items of `group` are queued, due or not (the kept count).
    fn queued(&mut self, group: i64) -> Result<u64>;

    /// A new reservation owned by `me`, made at `now`, of the first `n` due
    /// items of `group` in `order`, in flight from then on — items another
    /// runner holds skipped; none when there were none to take. The items
    /// come back in `order`; the reservation holds them whatever their ids
    /// (not necessarily one run of consecutive ids).
    fn take_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        n: usize,
        order: DueOrder,
        me: &Owner,
    ) -> Result<Option<Taken>>;

    /// The first `n` due items of `group`, in `order`.
    fn next_due(&mut self, group: i64, now: DateTime<Utc>, n: usize, order: DueOrder) -> Result<Vec<Due>>;

    /// The place (due time, id) of the `n`-th due item of `group` in the
    /// order by due time (the first is 1); none when fewer are due.
    fn nth_due(&mut self, group: i64, now: DateTime<Utc>, n: usize) -> Result<Option<(DateTime<Utc>, i64)>>;

    /// Up to `limit` due items of `group` but those `keep` names, due again
    /// at `until`: their ids (in one statement; `policy::claim` calls again
    /// until fewer come back).
    fn defer_due(
        &mut self,
        group: i64,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        keep: &Kept,
        limit: usize,
    ) -> Result<Vec<i64>>;

    /// The URLs of those of `ids` still in the ledger, in the order of `ids`.
    fn urls(&mut self, ids: &[i64]) -> Result<Vec<Due>>;

    /// Items due again each at its own time (whole seconds).
    fn move_due(&mut self, moved: &[(i64, DateTime<Utc>)]) -> Result<()>;

    /// Counts `units` against each window (`rules`, in lock order), each
    /// only if it fits the window's limit and no block holds it at `now`.
    /// Returns whether every window took them (a `false` leaves the
    /// transaction to be abandoned).
    fn charge(&mut self, rules: &[RuleWindow], units: u64, now: DateTime<Utc>) -> Result<bool>;

    /// The windows a reservation was counted in, with its units, and the
    /// end of its lease.
    fn hold(&mut self, reservation: i64, rules: &[RuleWindow], units: u64, lease_until: DateTime<Utc>) -> Result<()>;

    /// Every reservation: its id, owner and the end of its lease; with
    /// `hold`, held (another reconcile skips them).
    fn reservations(&mut self, hold: bool) -> Result<Vec<(i64, Owner, DateTime<Utc>)>>;

    /// The items of a reservation still in flight (ascending), and their group.
    fn in_flight(&mut self, reservation: i64) -> Result<Option<(i64, Vec<i64>)>>;

    /// A reservation's items in flight (`in_flight`) back in the queue, due
    /// at `now`, an attempt recorded for each as interrupted (the run stopped
    /// before the answer came); ending the reservation takes them out of
    /// flight.
    fn interrupted(&mut self, group: i64, items: &[i64], now: DateTime<Utc>) -> Result<()>;

    /// Ends a reservation (its windows with it).
    fn end(&mut self, reservation: i64) -> Result<()>;

    /// When a credential (by fingerprint) was first used since it was last
    /// accepted; records `now` if it was not.
    fn first_use(&mut self, fingerprint: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>>;
}

/// The steps of an answer, a report and an inspection.
pub trait AnswerSteps {
    /// Records `answer`'s request once, as an attempt of every item it
    /// names, and moves those items as `to` says.
    fn answer(&mut self, answer: &Answered, to: &Move) -> Result<()>;

    /// Gives `units` back to a window (never below none).
    fn give_back(&mut self, window: &RuleWindow, units: u64) -> Result<()>;

    /// The units every reservation but `except` holds in a window.
    fn in_flight_units(&mut self, rule: &RuleWindow, except: Option<i64>) -> Result<u64>;

    /// A reported window's limit, as `report` makes it of a reading.
    fn set_report(&mut self, rule: &RuleWindow, report: &Report) -> Result<()>;

    /// The window is spent until `block.until` (or a later block's end).
    fn block(&mut self, block: &Block) -> Result<()>;

    /// Counts `n` inspections of `class` of a property, `last` the latest.
    fn count_inspections(&mut self, property: &str, class: Class, n: u64, last: &InspectionAnswer) -> Result<()>;

    /// The engine accepted a credential (by fingerprint): its first use is
    /// forgotten, and its next use starts a new `key_pending` clock.
    fn credential_accepted(&mut self, fingerprint: &str) -> Result<()>;
}
