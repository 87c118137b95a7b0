//! A sitemap's part of the story: its group, its one item, the engine's
//! reports on it and the reminders of its problems.

use super::*;

/// A sitemap's life: its group (a channel of its own) and its one item —
/// new, due now; accepted, then changed within a day of it, queued again
/// for a day after the submission (the changes meanwhile coalesced), unless
/// forced — the reads of the engine's report, with since when its errors
/// and a failure of one reason hold, and the reminders of its problems.
/// The sitemaps read keep when their body first changed.
pub fn sitemap_story(ledger: &mut impl Ledger) {
    let now = t("2026-12-03T09:00:00Z");
    let (id, submitted) = queued_in_its_own_group_and_accepted(ledger, now);
    changed_queued_a_day_after_submission(ledger, now, id, submitted);
    let (reading, f2) = errors_and_a_failure_held_since(ledger, now, submitted);
    a_clean_report_ends_both(ledger, reading, f2);
    a_body_first_changed(ledger, now);
}

const SITEMAP: &str = "https://site.example/sitemap.xml";

fn sitemap_group() -> GroupKey {
    GroupKey::sitemap("site", EngineKind::Google, SITEMAP)
}

/// `--changed`, sent again a day after the last submission at the earliest.
fn sitemap_rule() -> AdmitRule {
    AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: true, resend_after: Some(TimeDelta::hours(24)) }
}

fn sitemap_item(lastmod: DateTime<Utc>) -> NewItem {
    NewItem {
        url: SITEMAP.into(),
        group: sitemap_group().into(),
        action: Action::Updated,
        lastmod: Some(lastmod),
        zone: chrono_tz::Tz::UTC,
    }
}

/// New, due now in its own group (not the URLs'), claimed and accepted.
/// Returns its item's id and when it was submitted.
fn queued_in_its_own_group_and_accepted(ledger: &mut impl Ledger, now: DateTime<Utc>) -> (i64, DateTime<Utc>) {
    let me = Owner::current();
    let (group, rule, item) = (sitemap_group(), sitemap_rule(), sitemap_item);
    let urls = GroupKey::urls("site", EngineKind::Google, "");
    assert!(ledger.sitemap_states().unwrap().is_empty(), "no sitemap submitted yet");
    assert_eq!(ledger.admit(&[item(now)], now, &rule).unwrap(), [Admission::Queued { fresh: true }]);
    assert_eq!(ledger.due_groups(now).unwrap(), std::slice::from_ref(&group), "its own group, not the URLs'");
    assert_eq!(ledger.queue_counts(&urls, now).unwrap(), QueueCounts::default());
    let claim = take(
        ledger,
        &group,
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.iter().map(|i| i.url.as_str()).collect::<Vec<_>>(), [SITEMAP]);
    let submitted = now + TimeDelta::seconds(1);
    accept_all(ledger, &claim, submitted);
    let [state] = ledger.sitemap_states().unwrap().try_into().unwrap();
    assert_eq!(
        (state.group.clone(), state.item, state.submitted_at),
        (group.clone(), ItemState::Accepted, Some(submitted))
    );
    assert_eq!((state.read_at, state.reading.clone(), state.failure.clone()), (None, None, None));
    (claim.items[0].id, submitted)
}

/// Unchanged: nothing; changed an hour later: queued for a day after the
/// submission; changed again meanwhile: still once, then. Forced, it goes now.
fn changed_queued_a_day_after_submission(
    ledger: &mut impl Ledger,
    now: DateTime<Utc>,
    id: i64,
    submitted: DateTime<Utc>,
) {
    let (group, rule, item) = (sitemap_group(), sitemap_rule(), sitemap_item);
    assert!(matches!(
        ledger.admit(&[item(now)], now + TimeDelta::hours(1), &rule).unwrap()[0],
        Admission::Skipped { .. }
    ));
    let changed = now + TimeDelta::hours(1);
    let due = submitted + TimeDelta::hours(24);
    assert_eq!(ledger.admit(&[item(changed)], changed, &rule).unwrap(), [Admission::Requeued { id, due }]);
    let again = changed + TimeDelta::hours(2);
    assert!(matches!(ledger.admit(&[item(again)], again, &rule).unwrap()[0], Admission::AlreadyQueued { .. }));
    assert_eq!(ledger.next_due(&group).unwrap(), Some(due));
    assert_eq!(ledger.queue_counts(&group, again).unwrap(), QueueCounts { waiting: 1, ..Default::default() });
    // Forced, it goes now.
    let forced = ledger.admit(&[item(again)], again, &AdmitRule { force: true, ..rule }).unwrap();
    assert!(matches!(forced[0], Admission::AlreadyQueued { .. }), "queued already: left as it is");
}

/// The engine's report: read, with errors since the first that said so;
/// a failure keeps the report and counts from the first of its reason.
/// Returns the report read and when the last failure was.
fn errors_and_a_failure_held_since(
    ledger: &mut impl Ledger,
    now: DateTime<Utc>,
    submitted: DateTime<Utc>,
) -> (SitemapReading, DateTime<Utc>) {
    let group = sitemap_group();
    let reading = SitemapReading {
        listed: true,
        submitted: Some(submitted),
        downloaded: Some(submitted + TimeDelta::seconds(5)),
        pending: false,
        errors: 2,
        warnings: 1,
        urls: Some(12),
        status: Some("sitemap".into()),
    };
    let r1 = now + TimeDelta::minutes(1);
    ledger.record_sitemap_read(&group, &SitemapRead::Read(reading.clone()), r1).unwrap();
    let r2 = r1 + TimeDelta::hours(6);
    ledger.record_sitemap_read(&group, &SitemapRead::Read(reading.clone()), r2).unwrap();
    let failed = ReadFailure {
        class: Class::Misconfigured,
        reason: MisconfiguredReason::NotPropertyUser.into(),
        message: "refused".into(),
        hint: Some("add the account".into()),
        http_status: Some(403),
    };
    let (f1, f2) = (r2 + TimeDelta::hours(6), r2 + TimeDelta::hours(12));
    ledger.record_sitemap_read(&group, &SitemapRead::Failed(failed.clone()), f1).unwrap();
    ledger.record_sitemap_read(&group, &SitemapRead::Failed(failed.clone()), f2).unwrap();
    let [state] = ledger.sitemap_states().unwrap().try_into().unwrap();
    assert_eq!((state.read_at, state.read_ok_at, state.reading.clone()), (Some(f2), Some(r2), Some(reading.clone())));
    assert_eq!((state.errors_since, state.failure.clone(), state.failure_since), (Some(r1), Some(failed), Some(f1)));
    (reading, f2)
}

/// A clean report ends both; a reminder of its errors is kept.
fn a_clean_report_ends_both(ledger: &mut impl Ledger, reading: SitemapReading, f2: DateTime<Utc>) {
    let group = sitemap_group();
    let clean = SitemapReading { errors: 0, ..reading };
    let r3 = f2 + TimeDelta::hours(6);
    ledger.record_sitemap_read(&group, &SitemapRead::Read(clean.clone()), r3).unwrap();
    ledger.record_reminders(&[(group.clone(), "sitemap_errors".into())], r3).unwrap();
    let [state] = ledger.sitemap_states().unwrap().try_into().unwrap();
    assert_eq!(
        (state.reading, state.errors_since, state.failure, state.failure_since),
        (Some(clean), None, None, None)
    );
    assert_eq!(state.reminded, [("sitemap_errors".to_string(), r3)]);
}

/// What a sitemap read keeps: when its body first changed.
fn a_body_first_changed(ledger: &mut impl Ledger, now: DateTime<Utc>) {
    let document = |digest: &str, at: DateTime<Utc>| SourceDocument {
        url: SITEMAP.into(),
        etag: None,
        last_modified: None,
        digest: digest.into(),
        kind: crate::model::DocumentKind::Urlset,
        routes: "r".into(),
        fetched_at: at,
        changed_at: at,
    };
    assert_eq!(ledger.record_source_documents(&[document("d1", now)]).unwrap()[0].changed_at, now);
    let later = now + TimeDelta::hours(3);
    assert_eq!(ledger.record_source_documents(&[document("d1", later)]).unwrap()[0].changed_at, now, "the same body");
    assert_eq!(ledger.record_source_documents(&[document("d2", later)]).unwrap()[0].changed_at, later, "a new one");
    assert_eq!(ledger.source_documents().unwrap()[0].changed_at, later);
}

#[test]
fn sqlite_keeps_the_sitemaps_submitted() {
    let dir = tempfile::tempdir().unwrap();
    sitemap_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_the_sitemaps_submitted() {
    let mut ledger = test_postgres();
    sitemap_story(&mut ledger);
}
