//! Admission: what a URL given to the ledger becomes, from what the ledger
//! holds of it (new, requeued, left waiting, skipped as unchanged), and what
//! a batch's admission writes.

use super::super::{Action, Admission, AdmitRule, ItemState, NewItem, Preview};
use crate::model::{lastmod, Channel};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;

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
    /// unless the rule spaces its resubmissions), recording the lastmod it
    /// now has (`Some`: another than the one recorded) — the next read
    /// compares with it.
    Requeue {
        due: DateTime<Utc>,
        lastmod: Option<DateTime<Utc>>,
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
        // A sitemap's own lastmod is indexq's reckoning of when it changed
        // (a read's time, or the latest lastmod in it): an instant, even at
        // midnight UTC.
        let zone = (item.group.channel == Channel::Urls).then_some(item.zone);
        let changed = changed_since(item.lastmod, e.lastmod, accepted_at, now, zone);
        // A URL now deleted (or back) is news, whatever the window.
        let news = e.action != item.action;
        let again = if rule.changed { changed } else { now - accepted_at >= rule.dedupe };
        if rule.force || news || again {
            let lastmod = item.lastmod.map(lastmod::kept).filter(|l| e.lastmod != Some(*l));
            // A spaced group (a sitemap) is not sent again before its
            // spacing since the last acceptance has passed — unless forced.
            let due = match rule.resend_after.filter(|_| !rule.force) {
                Some(after) => (accepted_at + after).max(now),
                None => now,
            };
            if due > now {
                return (Admission::Requeued { id, due }, Write::Requeue { due, lastmod });
            }
            return (Admission::Queued { fresh: false }, Write::Requeue { due, lastmod });
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
    let lastmod = item.lastmod.map(lastmod::kept).or(e.lastmod);
    let write =
        if action != e.action || lastmod != e.lastmod { Write::Update { action, lastmod } } else { Write::Keep };
    (admission, write)
}

/// Whether a URL accepted at `accepted_at`, whose lastmod then was
/// `recorded`, has changed since, now that its lastmod reads `read` (at
/// `now`, in its property's `zone`; `None`: the values are instants, never
/// dates). `submit --changed`, the sources and the dry run decide it here
/// alike.
///
/// - The lastmod read is compared with the one recorded, as written: the
///   same value is no change, whatever the clock says (a date read again is
///   the same date; a lastmod in the future read again is the same value).
///   A date against a date compares dates; a date against an instant, the
///   date against the instant's day in `zone`; instants, as instants.
/// - With none recorded (the URL came from a list), or one recorded that
///   was later than its acceptance (in the future when it was read, or a
///   date whose day had not yet begun), the lastmod read is compared with
///   the acceptance: a date from the start of its day in `zone` (a page
///   accepted at any moment of that day or later is unchanged), and a
///   lastmod later than `now` as `now` (the moment it is read).
pub fn changed_since(
    read: Option<DateTime<Utc>>,
    recorded: Option<DateTime<Utc>>,
    accepted_at: DateTime<Utc>,
    now: DateTime<Utc>,
    zone: Option<Tz>,
) -> bool {
    let Some(read) = read.map(lastmod::kept) else { return false };
    let begun_by = |l: DateTime<Utc>, t| zone.map_or(l <= t, |zone| lastmod::begun_by(l, zone, t));
    let earliest = |l: DateTime<Utc>| zone.map_or(l, |zone| lastmod::earliest(l, zone));
    match recorded.map(lastmod::kept) {
        Some(recorded) if recorded == read => false,
        Some(recorded) if begun_by(recorded, accepted_at) => match zone {
            Some(zone) if lastmod::date_only(read).is_some() || lastmod::date_only(recorded).is_some() => {
                lastmod::local_date(read, zone) > lastmod::local_date(recorded, zone)
            }
            _ => read > recorded,
        },
        _ => earliest(read).min(now) > accepted_at,
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
        let mut first: FxHashMap<(i64, i64), usize> = FxHashMap::default();
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
                (Write::Requeue { due, lastmod }, Ok(e)) => {
                    plan.requeued.entry((group, item.action, due)).or_default().push(e.id);
                    if lastmod.is_some() {
                        plan.updates.push((e.id, item.action, lastmod));
                    }
                }
                (Write::Update { action, lastmod }, Ok(e)) => plan.updates.push((e.id, action, lastmod)),
                _ => {}
            }
            plan.admissions.push(Some(admission));
        }
        plan
    }

    /// Whether admitting the batch writes anything (a new item, a requeued
    /// or updated one).
    pub fn writes(&self) -> bool {
        !(self.inserts.is_empty() && self.requeued.is_empty() && self.updates.is_empty())
    }

    /// The admissions, once the new items have their ids (`ids`, in the
    /// order of `inserts`): a URL met twice is "already queued", due now.
    pub fn admissions(mut self, ids: &[i64], now: DateTime<Utc>) -> Vec<Admission> {
        let id_of: FxHashMap<usize, i64> =
            self.inserts.iter().map(|(index, _, _)| *index).zip(ids.iter().copied()).collect();
        for (index, seen) in &self.repeats {
            let id = id_of.get(seen).copied().unwrap_or_default();
            self.admissions[*index] = Some(Admission::AlreadyQueued { id, next_attempt_at: Some(now) });
        }
        self.admissions.into_iter().map(|a| a.expect("every URL has its admission")).collect()
    }
}

/// `submit --baseline`: which of the URLs just admitted are recorded as
/// announced — those queued (new, changed since their last acceptance, or
/// waiting), by group. One another run holds in flight goes as it is;
/// one parked waits for its fix; one accepted stays so (admission has
/// recorded the lastmod it now has).
pub fn announced(found: &[std::result::Result<Existing, i64>], group_ids: &[i64]) -> Vec<(i64, i64)> {
    found
        .iter()
        .zip(group_ids)
        .filter_map(|(e, group)| e.as_ref().ok().filter(|e| e.state == ItemState::Queued).map(|e| (*group, e.id)))
        .collect()
}

/// What admission would make of each URL of `batch`, read only (a dry
/// run), from what the ledger holds of each (`found`, same order).
pub fn preview(batch: &[NewItem], found: Vec<Option<Existing>>, rule: &AdmitRule, now: DateTime<Utc>) -> Vec<Preview> {
    let preview = |(item, e): (&NewItem, Option<Existing>)| Preview {
        held: e.as_ref().map(|e| e.id),
        admission: admit(e.as_ref(), item, rule, now).0,
    };
    batch.iter().zip(found).map(preview).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EngineKind, GroupKey};
    use chrono::TimeDelta;

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
        let group = GroupKey::sitemap("site", EngineKind::Bing, "https://s.example/s.xml");
        let changed = |lastmod: &str| NewItem {
            url: "https://s.example/s.xml".into(),
            group: group.clone().into(),
            action: Action::Updated,
            lastmod: Some(at(lastmod)),
            zone: chrono_tz::Tz::UTC,
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
            (Admission::Requeued { id: 7, due }, Write::Requeue { due, lastmod: Some(at("2026-12-03T11:00:00Z")) })
        );
        assert_eq!(admit(Some(&e), &changed("2026-12-03T08:00:00Z"), &rule, now).1, Write::Keep, "not changed since");
        let late = at("2026-12-05T00:00:00Z");
        assert_eq!(
            admit(Some(&e), &changed("2026-12-04T11:00:00Z"), &rule, late),
            (
                Admission::Queued { fresh: false },
                Write::Requeue { due: late, lastmod: Some(at("2026-12-04T11:00:00Z")) }
            )
        );
        let forced = AdmitRule { force: true, ..rule };
        assert_eq!(
            admit(Some(&e), &changed("2026-12-03T08:00:00Z"), &forced, now).1,
            Write::Requeue { due: now, lastmod: Some(at("2026-12-03T08:00:00Z")) }
        );
    }

    /// A sitemap's own lastmod (indexq's reckoning of when it changed) is
    /// an instant even at midnight UTC, where a page's is a date.
    #[test]
    fn a_sitemaps_own_lastmod_is_an_instant_even_at_midnight() {
        let (midnight, morning) = (at("2026-12-01T00:00:00Z"), at("2026-12-01T06:00:00Z"));
        assert!(changed_since(Some(morning), Some(midnight), midnight, morning, None));
        assert!(!changed_since(Some(morning), Some(midnight), midnight, morning, Some(Tz::UTC)), "the same date");
        let e = Existing {
            id: 7,
            state: ItemState::Accepted,
            action: Action::Updated,
            lastmod: Some(midnight),
            accepted_at: Some(midnight),
            next_attempt_at: None,
        };
        let sitemap = NewItem {
            url: "https://s.example/s.xml".into(),
            group: GroupKey::sitemap("site", EngineKind::Bing, "https://s.example/s.xml").into(),
            action: Action::Updated,
            lastmod: Some(morning),
            zone: Tz::UTC,
        };
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: true, resend_after: None };
        assert_eq!(
            admit(Some(&e), &sitemap, &rule, morning).1,
            Write::Requeue { due: morning, lastmod: Some(morning) }
        );
    }

    const SHANGHAI: Tz = chrono_tz::Asia::Shanghai;

    /// `changed_since` at `now`, for a URL accepted at `accepted` whose
    /// lastmod then was `recorded`, now read as `read`.
    fn changed(read: &str, recorded: Option<&str>, accepted: &str, now: &str, zone: Tz) -> bool {
        changed_since(Some(at(read)), recorded.map(at), at(accepted), at(now), Some(zone))
    }

    /// The same date read again is no change, whatever the hour or the
    /// zone; a later date is (a date is kept as 00:00 UTC).
    #[test]
    fn a_date_read_again_is_unchanged_and_a_later_date_is_changed() {
        let date = Some("2027-01-04T00:00:00Z");
        // Accepted at 07:00 in Shanghai on the 4th (23:00 UTC on the 3rd).
        let accepted = "2027-01-03T23:00:00Z";
        for zone in [Tz::UTC, SHANGHAI, chrono_tz::America::Los_Angeles] {
            for now in ["2027-01-04T00:00:01Z", "2027-01-04T23:59:59Z", "2027-01-09T12:00:00Z"] {
                assert!(!changed("2027-01-04T00:00:00Z", date, accepted, now, zone), "{zone} {now}");
                assert!(changed("2027-01-05T00:00:00Z", date, accepted, now, zone), "{zone} {now}");
                assert!(!changed("2027-01-03T00:00:00Z", date, accepted, now, zone), "{zone} {now}: earlier");
            }
        }
    }

    /// A date against an instant compares the date with the instant's day
    /// in the property's zone, either way round.
    #[test]
    fn a_date_against_an_instant_compares_days_in_the_property_zone() {
        let date = Some("2027-01-04T00:00:00Z");
        let accepted = "2027-01-04T02:00:00Z";
        let now = "2027-01-06T00:00:00Z";
        // 23:00 on the 4th in Shanghai: the same day.
        assert!(!changed("2027-01-04T15:00:00Z", date, accepted, now, SHANGHAI));
        // 00:30 on the 5th in Shanghai, still the 4th in UTC.
        assert!(changed("2027-01-04T16:30:00Z", date, accepted, now, SHANGHAI));
        assert!(!changed("2027-01-04T16:30:00Z", date, accepted, now, Tz::UTC));
        // Recorded as an instant (18:00 on the 4th in Shanghai), read as a date.
        let instant = Some("2027-01-04T10:00:00Z");
        assert!(!changed("2027-01-04T00:00:00Z", instant, "2027-01-04T11:00:00Z", now, SHANGHAI));
        assert!(changed("2027-01-05T00:00:00Z", instant, "2027-01-04T11:00:00Z", now, SHANGHAI));
        // Instants against instants, as instants.
        assert!(changed("2027-01-04T10:00:01Z", instant, "2027-01-04T11:00:00Z", now, SHANGHAI));
        assert!(!changed("2027-01-04T09:59:59Z", instant, "2027-01-04T11:00:00Z", now, SHANGHAI));
    }

    /// With no lastmod recorded (the URL came from a list), a date is the
    /// whole of its day in the property's zone: accepted at any moment of
    /// that day or later, it is unchanged.
    #[test]
    fn with_none_recorded_a_date_is_its_whole_day_in_the_property_zone() {
        let date = "2027-01-04T00:00:00Z";
        let now = "2027-01-04T01:00:00Z";
        // 07:00 on the 4th in Shanghai.
        assert!(!changed(date, None, "2027-01-03T23:00:00Z", now, SHANGHAI));
        // The first second of the 4th in Shanghai.
        assert!(!changed(date, None, "2027-01-03T16:00:00Z", now, SHANGHAI));
        // The last second of the 3rd in Shanghai: before the day began.
        assert!(changed(date, None, "2027-01-03T15:59:59Z", now, SHANGHAI));
        // In UTC the 4th began after that acceptance.
        assert!(changed(date, None, "2027-01-03T23:00:00Z", now, Tz::UTC));
        // A URL with no lastmod is never changed.
        assert!(!changed_since(None, None, at("2027-01-03T23:00:00Z"), at(now), Some(Tz::UTC)));
    }

    /// A lastmod in the future goes once: read again (even with a
    /// fraction the ledger does not keep), it is the value recorded.
    #[test]
    fn a_future_lastmod_read_again_is_unchanged() {
        let future = "2030-01-01T12:00:00Z";
        let accepted = "2027-01-04T10:00:00Z";
        for now in ["2027-01-04T11:00:00Z", "2027-01-05T11:00:00Z", "2031-01-01T00:00:00Z"] {
            assert!(!changed(future, Some(future), accepted, now, Tz::UTC), "{now}");
            assert!(!changed("2030-01-01T12:00:00.75Z", Some(future), accepted, now, Tz::UTC), "{now}");
        }
        // A date whose day had not begun in the zone when it was accepted
        // (the 5th, accepted at 18:00 on the 4th in Shanghai), read again.
        let date = "2027-01-05T00:00:00Z";
        assert!(!changed(date, Some(date), accepted, "2027-01-07T00:00:00Z", SHANGHAI));
        // None recorded: the future lastmod is now, later than the acceptance.
        assert!(changed(future, None, accepted, "2027-01-04T11:00:00Z", Tz::UTC));
        assert!(!changed(future, None, accepted, accepted, Tz::UTC), "not later than the acceptance itself");

        // Through admission: queued again once, recording it; then kept.
        let mut e = Existing {
            id: 3,
            state: ItemState::Accepted,
            action: Action::Updated,
            lastmod: None,
            accepted_at: Some(at(accepted)),
            next_attempt_at: None,
        };
        let page = NewItem {
            url: "https://s.example/a".into(),
            group: GroupKey::urls("site", EngineKind::IndexNow, "https://in.example/").into(),
            action: Action::Updated,
            lastmod: Some(at("2030-01-01T12:00:00.5Z")),
            zone: Tz::UTC,
        };
        let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: true, resend_after: None };
        let now = at("2027-01-05T10:00:00Z");
        let write = Write::Requeue { due: now, lastmod: Some(at(future)) };
        assert_eq!(admit(Some(&e), &page, &rule, now), (Admission::Queued { fresh: false }, write));
        let plan = AdmitPlan::new(std::slice::from_ref(&page), &[1], &[Ok(e.clone())], &rule, now);
        assert_eq!(plan.updates, vec![(3, Action::Updated, Some(at(future)))], "the requeue records it");
        e.lastmod = Some(at(future));
        e.accepted_at = Some(at("2027-01-05T10:05:00Z"));
        for later in ["2027-01-05T11:00:00Z", "2027-02-01T00:00:00Z"] {
            assert_eq!(admit(Some(&e), &page, &rule, at(later)).1, Write::Keep, "{later}");
        }
    }

    /// A lastmod in the future corrected later: a correction to a moment
    /// after the acceptance is a change, one to a moment before it is not;
    /// another future value is a change (once).
    #[test]
    fn a_future_lastmod_corrected_later() {
        let future = Some("2030-01-01T12:00:00Z");
        let accepted = "2027-01-04T10:00:00Z";
        let now = "2027-01-06T00:00:00Z";
        assert!(changed("2027-01-05T08:00:00Z", future, accepted, now, Tz::UTC));
        assert!(!changed("2027-01-03T08:00:00Z", future, accepted, now, Tz::UTC));
        assert!(changed("2027-01-05T00:00:00Z", future, accepted, now, SHANGHAI), "a date after it");
        assert!(!changed("2027-01-04T00:00:00Z", future, accepted, now, SHANGHAI), "the day of the acceptance");
        assert!(changed("2031-06-01T12:00:00Z", future, accepted, now, Tz::UTC));
    }
}
