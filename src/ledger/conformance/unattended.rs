//! What unattended runs keep between runs: parked items with their
//! reminders, fixes, the sitemaps read for sources, and the public URLs of
//! Ghost's posts (`serve`).

use super::*;

/// What unattended runs keep between runs: the parked items per group and
/// reason with their reminders, a fix that unparks one reason only, and
/// the sitemaps read for sources.
pub fn unattended_story(ledger: &mut impl Ledger) {
    let now = t("2026-12-05T09:00:00Z");
    let later = now + TimeDelta::hours(1);
    park_for_two_reasons(ledger, now);
    parked_per_reason_with_reminders(ledger, now, later);
    notifications_claimed_once(ledger, later);
    a_fix_unparks_its_reason_only(ledger, later);
    sources_kept_per_url(ledger, now, later);
    ghost_urls_kept(ledger, now, later);
    source_failures_kept(ledger, now, later);
}

/// 5 admitted and claimed: 3 parked for a missing key file (2 in one
/// request, 1 a minute later), 1 for a bad request, 1 accepted.
fn park_for_two_reasons(ledger: &mut impl Ledger, now: DateTime<Utc>) {
    let me = Owner::current();
    let rule = AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None };
    ledger.admit(&items(5), now, &rule).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 5,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    let park = NextStep::Park { fingerprint: "f".into() };
    let record = |ids: &[usize], reason: MisconfiguredReason, at: DateTime<Utc>, next: NextStep| Answered {
        items: ids.iter().map(|&i| claim.items[i].id).collect(),
        reason: reason.into(),
        message: format!("said {reason}"),
        ..answer(&claim, at, Class::Misconfigured, StoredResponse { http_status: Some(403), body: None }, next)
    };
    let answers = vec![
        record(&[0, 1], MisconfiguredReason::KeyFileMissing, now, park.clone()),
        record(&[2], MisconfiguredReason::KeyFileMissing, now + TimeDelta::minutes(1), park.clone()),
        record(&[3], MisconfiguredReason::BadRequest, now, park.clone()),
        Answered {
            items: vec![claim.items[4].id],
            ..answer(&claim, now, Class::Accepted, StoredResponse::default(), NextStep::Accepted)
        },
    ];
    ledger
        .finish(&Finish {
            accepted_credential: None,
            reservation: claim.reservation.unwrap(),
            answers,
            blocks: vec![],
            reports: vec![],
            windows: vec![],
        })
        .unwrap();
}

/// The parked items per group and reason (since the first, with the
/// latest answer's message and URL), and when each was last reminded of.
fn parked_per_reason_with_reminders(ledger: &mut impl Ledger, now: DateTime<Utc>, later: DateTime<Utc>) {
    let parked = ledger.parked().unwrap();
    let summary: Vec<_> =
        parked.iter().map(|p| (p.reminder_key(), p.count, p.since, p.message.clone(), p.reminded_at)).collect();
    assert_eq!(
        summary,
        [
            ("bad_request".to_string(), 1, Some(now), Some("said bad_request".to_string()), None),
            ("key_file_missing".into(), 3, Some(now), Some("said key_file_missing".into()), None),
        ]
    );
    assert_eq!(parked[1].url, "https://site.example/2", "the latest answer's URL");
    assert!(parked.iter().all(|p| p.group == group()));

    ledger.record_reminders(&[(group(), "key_file_missing".into())], later).unwrap();
    ledger.record_reminders(&[(group(), "key_file_missing".into())], later + TimeDelta::hours(1)).unwrap();
    let reminded: Vec<_> = ledger.parked().unwrap().into_iter().map(|p| p.reminded_at).collect();
    assert_eq!(reminded, [None, Some(later + TimeDelta::hours(1))]);
    // A reminder is read back by its group and key, parked items or not
    // (a refused inspection, URLs outside the key location).
    assert_eq!(ledger.reminded_at(&group(), "key_file_missing").unwrap(), Some(later + TimeDelta::hours(1)));
    assert_eq!(ledger.reminded_at(&group(), "inspection_not_owner").unwrap(), None);
    ledger.record_reminders(&[(group(), "inspection_not_owner".into())], later).unwrap();
    assert_eq!(ledger.reminded_at(&group(), "inspection_not_owner").unwrap(), Some(later));
    let elsewhere = GroupKey::urls("nowhere", EngineKind::Google, "");
    assert_eq!(ledger.reminded_at(&elsewhere, "inspection_not_owner").unwrap(), None, "a group the ledger lacks");
}

/// A notification (`[notify]`) is claimed by one of two claims at once,
/// again once its interval has passed; a failed one is given back and
/// claimed again; a resolved one is taken away by one of two takes.
fn notifications_claimed_once(ledger: &mut impl Ledger, now: DateTime<Utc>) {
    let key = "notify:parked:key_file_missing";
    let day = TimeDelta::hours(24);
    let first = ledger.claim_notice(&group(), key, now, now - day).unwrap();
    assert_eq!(first, Some(NoticeClaim { at: now, previous: None }), "the first claim wins");
    assert_eq!(ledger.claim_notice(&group(), key, now, now - day).unwrap(), None, "two claims at once: one winner");
    let hour = now + TimeDelta::hours(1);
    assert_eq!(ledger.claim_notice(&group(), key, hour, hour - day).unwrap(), None, "within the interval");
    let elsewhere = GroupKey::urls("nowhere", EngineKind::Google, "");
    assert_eq!(ledger.claim_notice(&elsewhere, key, now, now - day).unwrap(), None, "a group the ledger lacks");

    // A day later it is due again; that notification fails and is given
    // back, so the next run claims it again.
    let next = now + day;
    let second = ledger.claim_notice(&group(), key, next, next - day).unwrap().expect("due again");
    assert_eq!(second, NoticeClaim { at: next, previous: Some(now) });
    assert_eq!(ledger.claim_notice(&group(), key, next, next - day).unwrap(), None);
    ledger.give_back_notice(&group(), key, Some(second.at), second.previous).unwrap();
    let retry = next + TimeDelta::hours(1);
    assert_eq!(
        ledger.claim_notice(&group(), key, retry, retry - day).unwrap(),
        Some(NoticeClaim { at: retry, previous: Some(now) }),
        "given back, claimed again at the next run"
    );
    // The first claim's notification failing too gives back to nothing.
    let other = "notify:parked:bad_request";
    let claim = ledger.claim_notice(&group(), other, now, now - day).unwrap().unwrap();
    ledger.give_back_notice(&group(), other, Some(claim.at), claim.previous).unwrap();
    assert_eq!(ledger.reminded_at(&group(), other).unwrap(), None);

    // Notifications are listed by their prefix, reminders left out.
    let sent = ledger.notices_sent("notify:").unwrap();
    assert_eq!(sent, [(group(), key.to_string(), retry)]);
    // Resolved: of two takes at once, one removes it; a failed resolved
    // notification gives it back, and a take finds it again.
    assert!(ledger.take_notice(&group(), key, retry).unwrap());
    assert!(!ledger.take_notice(&group(), key, retry).unwrap(), "two takes at once: one winner");
    ledger.give_back_notice(&group(), key, None, Some(retry)).unwrap();
    assert_eq!(ledger.notices_sent("notify:").unwrap(), [(group(), key.to_string(), retry)]);
    assert!(ledger.take_notice(&group(), key, retry).unwrap());
    assert_eq!(ledger.notices_sent("notify:").unwrap(), []);
    // The reminders of the same group are not notifications.
    assert!(ledger.reminded_at(&group(), "key_file_missing").unwrap().is_some());
}

/// A fix found for one reason unparks that reason's items only.
fn a_fix_unparks_its_reason_only(ledger: &mut impl Ledger, later: DateTime<Utc>) {
    let fixed = ledger.unpark_fixed(&group(), &[MisconfiguredReason::KeyFileMissing.into()], later).unwrap();
    assert_eq!(fixed, 3);
    let left: Vec<_> = ledger.parked().unwrap().into_iter().map(|p| (p.reminder_key(), p.count)).collect();
    assert_eq!(left, [("bad_request".to_string(), 1)]);
    assert_eq!(
        ledger.queue_counts(&group(), later).unwrap(),
        QueueCounts { due: 3, parked: 1, accepted: 1, ..Default::default() }
    );
    assert_eq!(ledger.unpark_fixed(&group(), &[MisconfiguredReason::KeyFileMissing.into()], later).unwrap(), 0);
}

/// The sitemaps read for sources: kept per URL, the latest read replacing one before.
fn sources_kept_per_url(ledger: &mut impl Ledger, now: DateTime<Utc>, later: DateTime<Utc>) {
    let document = |url: &str, etag: Option<&str>, kind| SourceDocument {
        url: url.into(),
        etag: etag.map(String::from),
        last_modified: Some("Sat, 05 Dec 2026 08:00:00 GMT".into()),
        digest: "d1".into(),
        kind,
        routes: "r".into(),
        fetched_at: now,
        changed_at: now,
    };
    assert!(ledger.source_documents().unwrap().is_empty());
    let urlset = document("https://site.example/sitemap.xml", Some("\"v1\""), crate::model::DocumentKind::Urlset);
    let index = document("https://site.example/index.xml", None, crate::model::DocumentKind::Index);
    ledger.record_source_documents(&[urlset.clone(), index.clone()]).unwrap();
    let newer = SourceDocument { etag: Some("\"v2\"".into()), fetched_at: later, ..urlset };
    ledger.record_source_documents(std::slice::from_ref(&newer)).unwrap();
    assert_eq!(ledger.source_documents().unwrap(), [index, newer]);
}

/// The public URL of a Ghost post: kept per property and Ghost id, a
/// later announcement replacing it, an earlier one not (a copy merging in
/// an older ledger's), another property's post apart.
pub fn ghost_urls_kept(ledger: &mut impl Ledger, now: DateTime<Utc>, later: DateTime<Utc>) {
    let id = "6571c9d2a1b2c3d4e5f60718";
    assert_eq!(ledger.ghost_url("site", id).unwrap(), None);
    let first = GhostUrl {
        property: "site".into(),
        ghost_id: id.into(),
        url: "https://site.example/hello/".into(),
        announced_at: now,
    };
    ledger.record_ghost_url(&first).unwrap();
    assert_eq!(ledger.ghost_url("site", id).unwrap().as_deref(), Some("https://site.example/hello/"));
    let renamed = GhostUrl { url: "https://site.example/hello-again/".into(), announced_at: later, ..first.clone() };
    ledger.record_ghost_url(&renamed).unwrap();
    ledger.record_ghost_url(&first).unwrap();
    assert_eq!(ledger.ghost_url("site", id).unwrap().as_deref(), Some("https://site.example/hello-again/"));
    assert_eq!(ledger.ghost_url("shop", id).unwrap(), None);
    let shop = GhostUrl { property: "shop".into(), url: "https://shop.example/hello/".into(), ..first };
    ledger.record_ghost_url(&shop).unwrap();
    assert_eq!(ledger.ghost_url("shop", id).unwrap().as_deref(), Some("https://shop.example/hello/"));
    assert_eq!(ledger.ghost_url("site", id).unwrap().as_deref(), Some("https://site.example/hello-again/"));
}

#[test]
fn sqlite_keeps_what_unattended_runs_need() {
    let dir = tempfile::tempdir().unwrap();
    unattended_story(&mut super::super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_what_unattended_runs_need() {
    let mut ledger = test_postgres();
    unattended_story(&mut ledger);
}

/// A source that cannot be read: kept per property and source, since its
/// first failed read while it goes on failing (for another reason too),
/// with when a run last said so; forgotten, and given back, once it reads.
pub fn source_failures_kept(ledger: &mut impl Ledger, now: DateTime<Utc>, later: DateTime<Utc>) {
    let source = "https://site.example/sitemap.xml";
    assert_eq!(ledger.clear_source_failure("site", source).unwrap(), None, "nothing kept: nothing given back");
    let first = SourceFailure {
        property: "site".into(),
        source: source.into(),
        reason: LocalReason::SourceNotFound,
        message: "HTTP 404 Not Found".into(),
        since: now,
        failed_at: now,
        reminded_at: None,
    };
    assert_eq!(ledger.record_source_failure(&first).unwrap(), first);
    ledger.record_source_reminders(&[("site".into(), source.into())], now).unwrap();
    let again = SourceFailure {
        reason: LocalReason::SourceServerError,
        message: "HTTP 500 Internal Server Error".into(),
        since: later,
        failed_at: later,
        ..first.clone()
    };
    let kept = ledger.record_source_failure(&again).unwrap();
    assert_eq!(kept, SourceFailure { since: now, reminded_at: Some(now), ..again.clone() }, "since and reminder kept");
    let shop = SourceFailure { property: "shop".into(), ..first.clone() };
    ledger.record_source_failure(&shop).unwrap();
    assert_eq!(ledger.source_failures().unwrap().len(), 2);
    assert_eq!(ledger.clear_source_failure("site", source).unwrap(), Some(kept));
    assert_eq!(ledger.source_failures().unwrap(), std::slice::from_ref(&shop), "the other property's stays");
    // A source that fails again later starts a new spell.
    let new_spell = SourceFailure { since: later, failed_at: later, ..first };
    assert_eq!(ledger.record_source_failure(&new_spell).unwrap(), new_spell);
    assert_eq!(ledger.source_failures().unwrap(), [shop, new_spell]);
}
