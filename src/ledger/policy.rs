//! The ledger's decisions, made once for every backend (a backend only
//! stores, in its dialect):
//! - admission: what a URL given to the ledger becomes, from what the
//!   ledger holds of it (new, requeued, left waiting, skipped as unchanged);
//! - the claim: from the rules' usage, the number of due items, the batch
//!   size and the pace, how many items go now, how many wait for their paced
//!   slot, and when the rest may go;
//! - what a finished reservation gives back to each of its windows;
//! - the limit an engine's report sets, and the ledger's clock;
//! - when a sitemap read for sources last changed (one answer for every run),
//!   and what a read of an engine's sitemap report leaves: since when its
//!   problems hold, and when the next read is due.
//!
//! Pure: each backend reads the inputs and applies the decision in its own
//! transaction, with set-based statements.

use super::{
    Action, Admission, AdmitRule, Answered, InspectionAnswer, ItemFilter, ItemState, NewItem, Pace, RuleWindow,
    SourceDocument, StateFilter, Usage,
};
use crate::model::{Class, Period, SitemapRead, SitemapState};
use chrono::{DateTime, TimeDelta, Utc};

/// What the ledger holds of a URL already in a group, as admission reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Existing {
    pub id: i64,
    pub state: ItemState,
    pub action: Action,
    pub lastmod: Option<DateTime<Utc>>,
    pub accepted_at: Option<DateTime<Utc>>,
    pub next_attempt_at: Option<DateTime<Utc>>,
}

/// What admission writes for one URL. `Keep` writes nothing: a URL accepted
/// within the dedupe window (or unchanged under `--changed`) costs a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// A new item, due now.
    Insert,
    /// An accepted item queued again with this action, due at `due` (now,
    /// unless the rule spaces its resubmissions).
    Requeue {
        due: DateTime<Utc>,
    },
    /// The item stays as it is, but takes this action (a queued item) and
    /// this lastmod (what the site now says).
    Update {
        action: Action,
        lastmod: Option<DateTime<Utc>>,
    },
    Keep,
}

/// What becomes of `item`, given what the ledger holds of it (`None`: it is
/// new to its group), under `rule` at `now`: the admission to report and the
/// write it takes.
pub fn admit(existing: Option<&Existing>, item: &NewItem, rule: &AdmitRule, now: DateTime<Utc>) -> (Admission, Write) {
    let Some(e) = existing else { return (Admission::Queued { fresh: true }, Write::Insert) };
    let id = e.id;
    if e.state == ItemState::Accepted {
        let accepted_at = e.accepted_at.unwrap_or(now);
        let changed = item.lastmod.is_some_and(|l| l > accepted_at);
        // A URL now deleted (or back) is news, whatever the window.
        let news = e.action != item.action;
        let again = if rule.changed { changed } else { now - accepted_at >= rule.dedupe };
        if rule.force || news || again {
            // A spaced group (a sitemap) is not sent again before its
            // spacing since the last acceptance has passed — unless forced.
            let due = match rule.resend_after.filter(|_| !rule.force) {
                Some(after) => (accepted_at + after).max(now),
                None => now,
            };
            if due > now {
                return (Admission::Requeued { id, due }, Write::Requeue { due });
            }
            return (Admission::Queued { fresh: false }, Write::Requeue { due });
        }
        return (Admission::Skipped { id, accepted_at, unchanged: rule.changed }, Write::Keep);
    }
    let admission = match e.state {
        ItemState::Queued => Admission::AlreadyQueued { id, next_attempt_at: e.next_attempt_at },
        ItemState::Parked => Admission::Parked { id },
        _ => Admission::InFlight { id },
    };
    // A queued item takes the action it is given now; the others keep theirs
    // until they are queued again.
    let action = if e.state == ItemState::Queued { item.action } else { e.action };
    let lastmod = item.lastmod.or(e.lastmod);
    let write =
        if action != e.action || lastmod != e.lastmod { Write::Update { action, lastmod } } else { Write::Keep };
    (admission, write)
}

/// Whether a unit of a request answered with `class` goes back to a window
/// of `period` (`reached`: the request left this machine):
/// - a request that never left was counted by nobody: back to every window;
/// - one the engine refused for rate or quota (`quota`: Bing's ErrorCode
///   4/5 and its remainder wording, Google's 429 `RESOURCE_EXHAUSTED`,
///   IndexNow's 429) was not counted by the engine: back to the day and
///   month windows, but it still counts in a per-minute window (a pace's
///   arrival time is never given back either): it was a request all the same;
/// - anything else may have been received — an acceptance, a refusal for
///   another reason, a timeout, a reset, a 5xx, a lost answer — and stays
///   charged.
///
/// Giving units back never reopens a window a block holds (a quota answer's
/// `Block`): the window stays spent until the block ends.
pub fn gives_back(class: Class, reached: bool, period: Period) -> bool {
    if !reached {
        return true;
    }
    class == Class::Quota && matches!(period, Period::Day | Period::Month)
}

/// The units a reservation's `answers` give back to `window`: one per item,
/// when every answer naming it gives back ([`gives_back`]) — an item named
/// twice (a request and its retry within the claim) that may have been
/// received once stays charged.
pub fn given_back(answers: &[Answered], window: &RuleWindow) -> u64 {
    let mut items: std::collections::HashMap<i64, bool> = std::collections::HashMap::new();
    for answer in answers {
        let back = gives_back(answer.class, answer.reached, window.period);
        for id in &answer.items {
            *items.entry(*id).or_insert(true) &= back;
        }
    }
    items.values().filter(|back| **back).count() as u64
}

/// The limit a reported rule takes from the engine's report: what the
/// ledger has counted, plus what the engine says is left, less what is in
/// flight right now (the engine may not have counted it yet), so that two
/// runs cannot both spend the same remainder.
pub fn reported_limit(used: u64, remaining: u64, in_flight: u64) -> u64 {
    (used + remaining).saturating_sub(in_flight)
}

/// Stored bodies are capped to this many bytes.
pub const BODY_CAP: usize = 64 * 1024;

/// Cuts a body to `BODY_CAP` bytes at a character boundary.
pub fn cap_body(body: &str) -> &str {
    if body.len() <= BODY_CAP {
        return body;
    }
    let mut end = BODY_CAP;
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    &body[..end]
}

/// Whole seconds, rounded up: a paced item is never due before its slot.
pub fn ts_ceil(t: DateTime<Utc>) -> i64 {
    let secs = t.timestamp();
    if t.timestamp_subsec_nanos() > 0 {
        secs + 1
    } else {
        secs
    }
}

/// The instant the ledger decides with: its clock, but never earlier than
/// the latest instant a run recorded, so that a clock set back (or a
/// machine behind the others) never reopens a window that has closed.
pub fn ledger_now(clock: DateTime<Utc>, latest: Option<DateTime<Utc>>) -> DateTime<Utc> {
    latest.map_or(clock, |l| l.max(clock))
}

/// When a claim's reservation stops being trusted without a live owner:
/// `lease` after its last paced slot (or after `now`), so that a paced
/// claim is never reconciled while it still waits for a slot.
pub fn lease_until(now: DateTime<Utc>, slots: &[DateTime<Utc>], lease: TimeDelta) -> DateTime<Utc> {
    slots.iter().copied().fold(now, DateTime::max) + lease
}

/// A pace's theoretical arrival time (GCRA), loaded and stored by the
/// backend in a claim's transaction so that every process shares it.
pub struct PaceState<'p> {
    pace: &'p Pace,
    now: DateTime<Utc>,
    tat: DateTime<Utc>,
    /// The last instant a slot of this claim may take: the pace's horizon,
    /// and before the first of the claim's windows ends — a request is
    /// charged to the window it goes in, so a slot in the next window is
    /// claimed there, once it has opened.
    horizon: DateTime<Utc>,
}

impl<'p> PaceState<'p> {
    /// From the stored arrival time (milliseconds), if any, for a claim
    /// counted against `windows`.
    pub fn new(pace: &'p Pace, now: DateTime<Utc>, tat_ms: Option<i64>, windows: &[RuleWindow]) -> PaceState<'p> {
        let tat = tat_ms.and_then(DateTime::from_timestamp_millis).unwrap_or(now).max(now);
        let window_end = windows.iter().map(|w| w.resets_at - TimeDelta::milliseconds(1)).min();
        // A horizon already past (a claim decided a moment after it was
        // asked for) is the claim's own instant.
        let horizon = pace.horizon.max(now);
        let horizon = window_end.map_or(horizon, |end| end.min(horizon));
        PaceState { pace, now, tat, horizon }
    }

    /// The arrival time to store.
    pub fn tat_ms(&self) -> i64 {
        self.tat.timestamp_millis()
    }

    fn tolerance(&self) -> TimeDelta {
        self.pace.interval * self.pace.burst as i32
    }

    /// How many of `wanted` sends have a slot at or before the horizon.
    fn fitting(&self, wanted: usize) -> usize {
        let first = self.tat - self.tolerance();
        if first > self.horizon {
            return 0;
        }
        let span = (self.horizon - first).num_milliseconds();
        let step = self.pace.interval.num_milliseconds().max(1);
        usize::try_from(span / step + 1).unwrap_or(usize::MAX).min(wanted)
    }

    /// Takes the next slot.
    pub fn next_slot(&mut self) -> DateTime<Utc> {
        let slot = (self.tat - self.tolerance()).max(self.now);
        self.tat += self.pace.interval;
        slot
    }

    /// When the `n`-th send from now is expected, without taking it.
    pub fn estimate(&self, n: usize) -> DateTime<Utc> {
        (self.tat + self.pace.interval * n as i32 - self.tolerance()).max(self.now)
    }
}

/// The due items in their order (`next_attempt_at`, id): the first `take`
/// are claimed, those before `paced_until` wait for their slot, and the rest
/// (if `retry_at`) wait until then, when budget frees up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimPlan {
    pub take: usize,
    pub paced_until: usize,
    pub retry_at: Option<DateTime<Utc>>,
}

impl ClaimPlan {
    pub fn new(
        rules: &[RuleWindow],
        usages: &[Usage],
        due_count: usize,
        max_items: usize,
        pacing: Option<&PaceState>,
        now: DateTime<Utc>,
    ) -> ClaimPlan {
        let budget = rules.iter().zip(usages).filter_map(|(rule, usage)| usage.remaining(rule, now)).min();
        // Within budget: `avail`. Of those, the pace lets `take` go now
        // (never more than a batch); the rest of `avail` waits for its slot.
        let avail = budget.map_or(due_count, |b| (b as usize).min(due_count));
        let take = avail.min(max_items).min(pacing.map_or(usize::MAX, |p| p.fitting(avail)));
        let paced_until = match pacing {
            Some(_) if take < avail.min(max_items) => avail,
            _ => take,
        };
        let retry_at = (avail < due_count).then(|| {
            rules
                .iter()
                .zip(usages)
                .filter_map(|(rule, usage)| {
                    let after = Usage { used: usage.used + avail as u64, ..*usage };
                    after.available_at(rule, now)
                })
                .max()
                .unwrap_or(now)
        });
        ClaimPlan { take, paced_until, retry_at }
    }
}

/// What a batch's admission writes, decided from what the ledger holds of
/// each URL (`found`: the item, or the key a new one takes): the admission
/// of each URL, the new items (their index in the batch, group and key),
/// the accepted items queued again (by group and action), the items that
/// take another action or lastmod, and URLs met twice in the batch (their
/// index, and the index of the new item's first sight).
#[derive(Debug, Default)]
pub struct AdmitPlan {
    pub admissions: Vec<Option<Admission>>,
    pub inserts: Vec<(usize, i64, i64)>,
    pub requeued: std::collections::BTreeMap<(i64, Action, DateTime<Utc>), Vec<i64>>,
    pub updates: Vec<(i64, Action, Option<DateTime<Utc>>)>,
    pub repeats: Vec<(usize, usize)>,
}

impl AdmitPlan {
    /// `batch`'s URLs in their groups (`groups`, same order).
    pub fn new(
        batch: &[NewItem],
        groups: &[i64],
        found: &[std::result::Result<Existing, i64>],
        rule: &AdmitRule,
        now: DateTime<Utc>,
    ) -> AdmitPlan {
        let mut plan = AdmitPlan { admissions: Vec::with_capacity(batch.len()), ..AdmitPlan::default() };
        // New items by (group, key): the same URL twice is one item.
        let mut first: std::collections::HashMap<(i64, i64), usize> = std::collections::HashMap::new();
        for (index, ((item, found), &group)) in batch.iter().zip(found).zip(groups).enumerate() {
            let existing = match found {
                Ok(e) => Some(e),
                Err(key) => match first.get(&(group, *key)) {
                    Some(&seen) => {
                        plan.repeats.push((index, seen));
                        plan.admissions.push(None);
                        continue;
                    }
                    None => None,
                },
            };
            let (admission, write) = admit(existing, item, rule, now);
            match (write, found) {
                (Write::Insert, Err(key)) => {
                    first.insert((group, *key), index);
                    plan.inserts.push((index, group, *key));
                }
                (Write::Requeue { due }, Ok(e)) => {
                    plan.requeued.entry((group, item.action, due)).or_default().push(e.id)
                }
                (Write::Update { action, lastmod }, Ok(e)) => plan.updates.push((e.id, action, lastmod)),
                _ => {}
            }
            plan.admissions.push(Some(admission));
        }
        plan
    }

    /// The admissions, once the new items have their ids (`ids`, in the
    /// order of `inserts`): a URL met twice is "already queued", due now.
    pub fn admissions(mut self, ids: &[i64], now: DateTime<Utc>) -> Vec<Admission> {
        let id_of: std::collections::HashMap<usize, i64> =
            self.inserts.iter().map(|(index, _, _)| *index).zip(ids.iter().copied()).collect();
        for (index, seen) in &self.repeats {
            let id = id_of.get(seen).copied().unwrap_or_default();
            self.admissions[*index] = Some(Admission::AlreadyQueued { id, next_attempt_at: Some(now) });
        }
        self.admissions.into_iter().map(|a| a.expect("every URL has its admission")).collect()
    }
}

/// The states `queue retry` acts on: parked, waiting or due (parked and
/// waiting when none is named).
pub fn retry_states(filter: &ItemFilter) -> ItemFilter {
    let mut filter = filter.clone();
    filter.states.retain(|s| matches!(s, StateFilter::Parked | StateFilter::Waiting | StateFilter::Due));
    if filter.states.is_empty() {
        filter.states = vec![StateFilter::Parked, StateFilter::Waiting];
    }
    filter
}

/// The states `queue drop` acts on: any but in flight (every other one
/// when none is named).
pub fn drop_states(filter: &ItemFilter) -> ItemFilter {
    let mut filter = filter.clone();
    filter.states.retain(|s| *s != StateFilter::InFlight);
    if filter.states.is_empty() {
        filter.states = vec![StateFilter::Due, StateFilter::Waiting, StateFilter::Parked, StateFilter::Accepted];
    }
    filter
}

/// The sitemaps read, as the ledger keeps them: a document whose digest the
/// ledger holds already (`stored`: its digest and `changed_at`, by URL)
/// keeps the `changed_at` it had — the body is the one first seen then —
/// and any other takes the one it was read with (its read's instant).
pub fn kept_changes<'s>(
    documents: &[SourceDocument],
    stored: impl Fn(&str) -> Option<(&'s str, DateTime<Utc>)>,
) -> Vec<SourceDocument> {
    documents
        .iter()
        .map(|d| {
            let changed_at = match stored(&d.url) {
                Some((digest, at)) if digest == d.digest => at,
                _ => d.changed_at,
            };
            SourceDocument { changed_at, ..d.clone() }
        })
        .collect()
}

/// Since when a sitemap group's problems have held, as a read of the
/// engine's report leaves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SitemapMarks {
    /// The reports have said the sitemap has errors since then.
    pub errors_since: Option<DateTime<Utc>>,
    /// Reads have failed with the same reason since then.
    pub failure_since: Option<DateTime<Utc>>,
}

/// The marks a read (`read`, at `at`) leaves after `before` (the group's
/// marks) and, if the last read failed, its reason (`failed_before`):
/// errors count from the first report that said so, while the reports keep
/// saying it; a failed read leaves the last report's mark and counts from
/// the first failure of its reason.
pub fn sitemap_marks(
    before: &SitemapMarks,
    failed_before: Option<&str>,
    read: &SitemapRead,
    at: DateTime<Utc>,
) -> SitemapMarks {
    match read {
        SitemapRead::Read(reading) => SitemapMarks {
            errors_since: (reading.errors > 0).then(|| before.errors_since.unwrap_or(at)),
            failure_since: None,
        },
        SitemapRead::Failed(failure) => {
            let same = failed_before == Some(failure.reason.to_string().as_str());
            let since = before.failure_since.filter(|_| same);
            SitemapMarks { errors_since: before.errors_since, failure_since: Some(since.unwrap_or(at)) }
        }
    }
}

/// Whether a sitemap group's report is read at `now`: its sitemap was
/// submitted (accepted) at least once and is not parked (a parked
/// submission is said as such), and it was never read, or submitted since
/// its last read, or last read `interval` ago or more.
pub fn sitemap_read_due(state: &SitemapState, now: DateTime<Utc>, interval: TimeDelta) -> bool {
    let Some(submitted) = state.submitted_at else { return false };
    if state.item == ItemState::Parked {
        return false;
    }
    match state.read_at {
        None => true,
        Some(read) => submitted > read || now >= read + interval,
    }
}

/// A request's inspection answers by class, each class's in the order they
/// came (its last is the one `inspections` keeps), classes in name order.
pub fn inspections_by_class(answers: &[InspectionAnswer]) -> Vec<(Class, Vec<&InspectionAnswer>)> {
    let mut by_class: std::collections::BTreeMap<&'static str, (Class, Vec<&InspectionAnswer>)> = Default::default();
    let mut sorted: Vec<&InspectionAnswer> = answers.iter().collect();
    sorted.sort_by_key(|a| a.at);
    for a in sorted {
        by_class.entry(a.class.as_str()).or_insert_with(|| (a.class, Vec::new())).1.push(a);
    }
    by_class.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NextStep, StoredResponse};

    fn window(period: Period) -> RuleWindow {
        RuleWindow {
            rule: format!("r:{period}"),
            period,
            window: "w".into(),
            limit: Some(10),
            reported: false,
            resets_at: DateTime::UNIX_EPOCH,
        }
    }

    fn answered(items: &[i64], class: Class, reached: bool) -> Answered {
        Answered {
            items: items.to_vec(),
            at: DateTime::UNIX_EPOCH,
            class,
            reason: super::super::story::some_reason(class),
            message: String::new(),
            response: StoredResponse::default(),
            next: NextStep::Accepted,
            reached,
        }
    }

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    /// A sitemap is sent again a day after its last acceptance at the
    /// earliest (`resend_after`), unless forced; due now past that.
    #[test]
    fn a_spaced_item_is_queued_again_no_sooner_than_its_spacing() {
        let accepted = at("2026-12-03T09:00:00Z");
        let e = Existing {
            id: 7,
            state: ItemState::Accepted,
            action: Action::Updated,
            lastmod: None,
            accepted_at: Some(accepted),
            next_attempt_at: None,
        };
        let group = crate::model::GroupKey::sitemap("site", crate::model::EngineKind::Bing, "https://s.example/s.xml");
        let changed = |lastmod: &str| NewItem {
            url: "https://s.example/s.xml".into(),
            group: group.clone(),
            action: Action::Updated,
            lastmod: Some(at(lastmod)),
        };
        let rule = AdmitRule {
            dedupe: TimeDelta::hours(24),
            force: false,
            changed: true,
            resend_after: Some(TimeDelta::hours(24)),
        };
        let due = at("2026-12-04T09:00:00Z");
        let now = at("2026-12-03T12:00:00Z");
        assert_eq!(
            admit(Some(&e), &changed("2026-12-03T11:00:00Z"), &rule, now),
            (Admission::Requeued { id: 7, due }, Write::Requeue { due })
        );
        assert_eq!(admit(Some(&e), &changed("2026-12-03T08:00:00Z"), &rule, now).1, Write::Keep, "not changed since");
        let late = at("2026-12-05T00:00:00Z");
        assert_eq!(
            admit(Some(&e), &changed("2026-12-04T11:00:00Z"), &rule, late),
            (Admission::Queued { fresh: false }, Write::Requeue { due: late })
        );
        let forced = AdmitRule { force: true, ..rule };
        assert_eq!(admit(Some(&e), &changed("2026-12-03T08:00:00Z"), &forced, now).1, Write::Requeue { due: now });
    }

    #[test]
    fn a_body_seen_before_keeps_when_it_changed() {
        let doc = |digest: &str, at_: &str| SourceDocument {
            url: "https://s.example/s.xml".into(),
            etag: None,
            last_modified: None,
            digest: digest.into(),
            kind: crate::model::DocumentKind::Urlset,
            routes: "r".into(),
            fetched_at: at(at_),
            changed_at: at(at_),
        };
        let before = at("2026-12-01T00:00:00Z");
        let stored = |url: &str| (url == "https://s.example/s.xml").then_some(("d1", before));
        let kept = kept_changes(&[doc("d1", "2026-12-03T00:00:00Z"), doc("d2", "2026-12-03T00:00:00Z")], stored);
        assert_eq!((kept[0].changed_at, kept[1].changed_at), (before, at("2026-12-03T00:00:00Z")));
        assert_eq!(kept[0].fetched_at, at("2026-12-03T00:00:00Z"), "the read is the new one all the same");
    }

    #[test]
    fn a_report_read_leaves_since_when_its_problems_hold() {
        use crate::model::{MisconfiguredReason, ReadFailure, SitemapReading};
        let (t1, t2) = (at("2026-12-03T00:00:00Z"), at("2026-12-03T06:00:00Z"));
        let errors = SitemapRead::Read(SitemapReading { errors: 1, ..Default::default() });
        let clean = SitemapRead::Read(SitemapReading::default());
        let failed = |reason: MisconfiguredReason| {
            SitemapRead::Failed(ReadFailure {
                class: Class::Misconfigured,
                reason: reason.into(),
                message: String::new(),
                hint: None,
                http_status: Some(403),
            })
        };
        let first = sitemap_marks(&SitemapMarks::default(), None, &errors, t1);
        assert_eq!(first, SitemapMarks { errors_since: Some(t1), failure_since: None });
        assert_eq!(sitemap_marks(&first, None, &errors, t2).errors_since, Some(t1), "still the first");
        assert_eq!(sitemap_marks(&first, None, &clean, t2), SitemapMarks::default());
        let refused = sitemap_marks(&first, None, &failed(MisconfiguredReason::NotPropertyUser), t2);
        assert_eq!(refused, SitemapMarks { errors_since: Some(t1), failure_since: Some(t2) }, "the report stands");
        let again = sitemap_marks(
            &refused,
            Some("not_property_user"),
            &failed(MisconfiguredReason::NotPropertyUser),
            t2 + TimeDelta::hours(6),
        );
        assert_eq!(again.failure_since, Some(t2));
        let other = sitemap_marks(
            &refused,
            Some("not_property_user"),
            &failed(MisconfiguredReason::PropertyNotFound),
            t2 + TimeDelta::hours(6),
        );
        assert_eq!(other.failure_since, Some(t2 + TimeDelta::hours(6)), "another reason counts anew");
    }

    #[test]
    fn a_report_is_read_after_a_submission_and_every_interval() {
        let submitted = at("2026-12-03T09:00:00Z");
        let state = SitemapState {
            group: crate::model::GroupKey::sitemap("site", crate::model::EngineKind::Google, "https://s.example/s.xml"),
            item: ItemState::Accepted,
            submitted_at: Some(submitted),
            read_at: None,
            reading: None,
            read_ok_at: None,
            errors_since: None,
            failure: None,
            failure_since: None,
            reminded: Vec::new(),
        };
        let six = TimeDelta::hours(6);
        assert!(sitemap_read_due(&state, submitted, six), "never read");
        let read = SitemapState { read_at: Some(submitted + TimeDelta::seconds(1)), ..state.clone() };
        assert!(!sitemap_read_due(&read, submitted + TimeDelta::hours(5), six));
        assert!(sitemap_read_due(&read, submitted + TimeDelta::hours(6) + TimeDelta::seconds(1), six));
        let resubmitted = SitemapState { submitted_at: Some(submitted + TimeDelta::hours(1)), ..read.clone() };
        assert!(sitemap_read_due(&resubmitted, submitted + TimeDelta::hours(1), six), "submitted since");
        assert!(
            !sitemap_read_due(&SitemapState { submitted_at: None, ..state.clone() }, submitted, six),
            "never submitted"
        );
        assert!(!sitemap_read_due(&SitemapState { item: ItemState::Parked, ..state }, submitted, six), "parked");
    }

    #[test]
    fn refused_for_rate_or_quota_gives_back_to_the_day_and_month_never_sent_to_every_window() {
        for period in [Period::Day, Period::Month] {
            assert!(gives_back(Class::Quota, true, period), "{period}");
        }
        assert!(!gives_back(Class::Quota, true, Period::Minute), "a refused request still counts in the minute");
        for class in [Class::Accepted, Class::Transient, Class::Misconfigured, Class::KeyPending] {
            for period in [Period::Minute, Period::Day, Period::Month] {
                assert!(!gives_back(class, true, period), "{class} may have been received: charged ({period})");
                assert!(gives_back(class, false, period), "{class} never sent: given back ({period})");
            }
        }
    }

    #[test]
    fn a_reservation_gives_back_per_window_each_item_once() {
        let answers = [
            answered(&[1, 2], Class::Quota, true),
            answered(&[3], Class::Accepted, true),
            answered(&[4], Class::Transient, true),
            answered(&[5], Class::Transient, false),
        ];
        assert_eq!(given_back(&answers, &window(Period::Day)), 3, "2 refused + 1 never sent");
        assert_eq!(given_back(&answers, &window(Period::Month)), 3);
        assert_eq!(given_back(&answers, &window(Period::Minute)), 1, "only the one never sent");
        assert_eq!(given_back(&[], &window(Period::Day)), 0);
        // Named by a refusal and by an answer that may have been received: charged.
        let twice = [answered(&[1, 2], Class::Quota, true), answered(&[2], Class::Transient, true)];
        assert_eq!(given_back(&twice, &window(Period::Day)), 1);
    }
}
