//! The backends' conformance suite: one sequence of steps told against the
//! `Ledger` trait (the ledger's life story), so that every backend passes the
//! same test: admit, claim within budget, defer what does
//! not fit, finish, block on a quota answer, reconcile a dead owner's
//! reservation, take an engine's report with a request in flight, give
//! back what the engine did not count, and keep a sitemap's submissions and
//! what the engine reports of it. Here the main story and the copy and
//! clock tests; in `conformance/` the queue's part (`queue`), the budget's
//! (`budget`), what unattended runs keep (`unattended`) and a sitemap's
//! (`sitemaps`).

use super::copy::{copy, dump};
use super::*;
use crate::model::{
    AcceptedReason, KeyPendingReason, LocalReason, MisconfiguredReason, QuotaReason, ReadFailure, SitemapReading,
    SourceDocument, SourceFailure, TransientReason,
};
use crate::model::{NextStep, Period};

mod budget;
mod order;
mod queue;
mod sitemaps;
mod unattended;

use queue::drop_story;

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// The stories' group (a URL list's, to IndexNow).
pub fn group() -> GroupKey {
    GroupKey::urls("site", EngineKind::IndexNow, "https://engine.example/")
}

fn day_rule(limit: Option<u64>, reported: bool) -> RuleWindow {
    RuleWindow {
        rule: if reported { "story:reported:day".into() } else { "story:day".into() },
        period: Period::Day,
        window: "2026-12-03".into(),
        limit,
        reported,
        resets_at: t("2026-12-04T00:00:00Z"),
    }
}

/// `n` new URLs of the stories' group.
pub fn items(n: usize) -> Vec<NewItem> {
    (0..n)
        .map(|i| NewItem {
            url: format!("https://site.example/{i}"),
            group: group().into(),
            action: Action::Updated,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
        })
        .collect()
}

/// Two groups of one list, `a` and `b` (IndexNow), and `item(g, i)`:
/// `https://site.example/{i}` of group `g` — for the look-up's tests.
pub fn two_groups() -> impl Fn(usize, usize) -> NewItem {
    let groups: [std::sync::Arc<GroupKey>; 2] =
        ["a", "b"].map(|p| GroupKey::urls(p, EngineKind::IndexNow, "https://engine.example/").into());
    move |g, i| NewItem {
        url: format!("https://site.example/{i}"),
        group: groups[g].clone(),
        action: Action::Updated,
        lastmod: None,
        zone: chrono_tz::Tz::UTC,
    }
}

/// A reason of `class`, for answers whose reason the story does not read.
pub fn some_reason(class: Class) -> Reason {
    match class {
        Class::Accepted => AcceptedReason::Ok.into(),
        Class::Quota => QuotaReason::RateLimited.into(),
        Class::Transient => TransientReason::ServerError.into(),
        Class::KeyPending => KeyPendingReason::KeyPending.into(),
        Class::Misconfigured => MisconfiguredReason::BadRequest.into(),
    }
}

/// One answer for every item of a claim.
pub fn answer(claim: &Claim, at: DateTime<Utc>, class: Class, response: StoredResponse, next: NextStep) -> Answered {
    Answered {
        items: claim.items.iter().map(|i| i.id).collect(),
        at,
        class,
        reason: some_reason(class),
        message: "m".into(),
        response,
        next,
        reached: true,
    }
}

fn accept_all(ledger: &mut impl Ledger, claim: &Claim, at: DateTime<Utc>) {
    let ok = StoredResponse { http_status: Some(200), body: None };
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers: vec![answer(claim, at, Class::Accepted, ok, NextStep::Accepted)],
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();
}

/// Claims, with no report of budget deferrals.
fn take(ledger: &mut impl Ledger, group: &GroupKey, spec: ClaimSpec, owner: &Owner) -> Claim {
    ledger.claim(group, &spec, owner, &mut |_, _, _| {}).unwrap()
}

/// The story every backend must pass, chapter by chapter on one ledger.
pub fn story(ledger: &mut impl Ledger) {
    admit_claim_and_defer(ledger);
    a_new_window_and_a_dead_owner(ledger);
    a_quota_answer_blocks(ledger);
    a_report_with_a_request_in_flight(ledger);
    a_pace_with_a_burst(ledger);
    changed_since_acceptance(ledger);
    unattended::ghost_urls_kept(ledger, t("2026-12-03T10:00:00Z"), t("2026-12-03T11:00:00Z"));
    unattended::source_failures_kept(ledger, t("2026-12-03T10:00:00Z"), t("2026-12-03T11:00:00Z"));
}

/// Every story's admission: a day's dedupe window, neither forced nor `--changed`.
pub fn dedupe_day() -> AdmitRule {
    AdmitRule { dedupe: TimeDelta::hours(24), force: false, changed: false, resend_after: None }
}

/// The story's day rule in its second day's window.
fn next_day_rule() -> RuleWindow {
    RuleWindow { window: "2026-12-04".into(), resets_at: t("2026-12-05T00:00:00Z"), ..day_rule(Some(3), false) }
}

/// Admitted once, claimed within a budget of 3, the rest deferred to the
/// window's end; accepted ones skipped within the dedupe window.
fn admit_claim_and_defer(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let now = t("2026-12-03T09:00:00Z");
    let dedupe = dedupe_day();

    // Admit 5 (admissions held, as `submit` reads its input); admitting
    // them again changes nothing.
    ledger.begin_admissions();
    let admitted = ledger.admit(&items(5), now, &dedupe).unwrap();
    assert!(admitted.iter().all(|a| matches!(a, Admission::Queued { .. })));
    let again = ledger.admit(&items(5), now, &dedupe).unwrap();
    assert!(again.iter().all(|a| matches!(a, Admission::AlreadyQueued { .. })));
    ledger.end_admissions().unwrap();
    assert_eq!(ledger.due_groups(now).unwrap(), vec![group()]);

    // A budget of 3: 3 claimed, 2 deferred to the window's end.
    let rules = [day_rule(Some(3), false)];
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &rules,
            max_items: 10,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 3);
    assert_eq!(claim.deferred, 2);
    assert_eq!(claim.retry_at, Some(t("2026-12-04T00:00:00Z")));
    assert_eq!(ledger.usage(&rules[0]).unwrap().used, 3);
    assert_eq!(
        ledger.queue_counts(&group(), now).unwrap(),
        QueueCounts { in_flight: 3, waiting: 2, ..Default::default() }
    );
    accept_all(ledger, &claim, now);
    assert_eq!(ledger.queue_counts(&group(), now).unwrap().accepted, 3);

    // Nothing more today; accepted ones are skipped within the dedupe window.
    assert!(take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &rules,
            max_items: 10,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest
        },
        &me
    )
    .items
    .is_empty());
    // A budget the whole queue fits, with nothing due (the two wait for
    // tomorrow): the claim takes a batch of none, and holds no reservation.
    let roomy = [day_rule(Some(100), false)];
    let none = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &roomy,
            max_items: 1,
            pace: None,
            now: Now::pinned(now),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!((none.items.len(), none.reservation, none.deferred), (0, None, 0));
    assert_eq!(ledger.queue_counts(&group(), now).unwrap().in_flight, 0);
    let again = ledger.admit(&items(1), now, &dedupe).unwrap();
    assert!(matches!(again[0], Admission::Skipped { .. }));
}

/// The next day's window, and an owner that dies with its claim in flight.
fn a_new_window_and_a_dead_owner(ledger: &mut impl Ledger) {
    let me = Owner::current();
    // Next day: a new window.
    let (tomorrow, rules2) = (t("2026-12-04T01:00:00Z"), [next_day_rule()]);
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &rules2,
            max_items: 10,
            pace: None,
            now: Now::pinned(tomorrow),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 2);

    // The owner dies with the claim in flight: reconciled, counted, retried.
    let dead = Owner { host: me.host.clone(), pid: u32::MAX - 1, started: 1 };
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers: vec![Answered {
                reason: TransientReason::ServerError.into(),
                message: "503".into(),
                ..answer(&claim, tomorrow, Class::Transient, StoredResponse::default(), NextStep::RetryAt(tomorrow))
            }],
            blocks: vec![],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &rules2,
            max_items: 10,
            pace: None,
            now: Now::pinned(tomorrow),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &dead,
    );
    assert_eq!(claim.items.len(), 1, "one unit left today");
    let reconciled = ledger.reconcile(tomorrow, &me).unwrap();
    assert_eq!(reconciled, Reconciled { reservations: 1, items: 1 });
    assert_eq!(ledger.usage(&rules2[0]).unwrap().used, 3, "the lost request stays counted");
    let counts = ledger.queue_counts(&group(), tomorrow).unwrap();
    assert_eq!((counts.due, counts.waiting, counts.in_flight), (1, 1, 0), "the other waits for the next window");
}

/// A quota answer blocks its rule whatever the rule's count.
fn a_quota_answer_blocks(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let dedupe = dedupe_day();
    let (tomorrow, rules2) = (t("2026-12-04T01:00:00Z"), [next_day_rule()]);
    // A quota answer blocks the rule whatever its count.
    let open = [RuleWindow { limit: None, ..rules2[0].clone() }];
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &open,
            max_items: 1,
            pace: None,
            now: Now::pinned(tomorrow),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    let until = t("2026-12-04T02:00:00Z");
    ledger
        .finish(&Finish {
            reservation: claim.reservation.unwrap(),
            answers: vec![Answered {
                reason: QuotaReason::RateLimited.into(),
                message: "429".into(),
                ..answer(
                    &claim,
                    tomorrow,
                    Class::Quota,
                    StoredResponse { http_status: Some(429), body: Some("slow down".into()) },
                    NextStep::RetryAt(until),
                )
            }],
            blocks: vec![Block { rule: open[0].clone(), until }],
            reports: vec![],
            windows: vec![],
            accepted_credential: None,
        })
        .unwrap();
    let fresh = NewItem {
        url: "https://site.example/fresh".into(),
        group: group().into(),
        action: Action::Updated,
        lastmod: None,
        zone: chrono_tz::Tz::UTC,
    };
    ledger.admit(&[fresh], tomorrow, &dedupe).unwrap();
    let blocked = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &open,
            max_items: 10,
            pace: None,
            now: Now::pinned(tomorrow),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert!(blocked.items.is_empty());
    assert_eq!(blocked.deferred, 1);
    assert_eq!(blocked.retry_at, Some(until));
    let last = ledger.last_rejection(&group()).unwrap().unwrap();
    assert_eq!((last.class, last.http_status, last.body.as_deref()), (Class::Quota, Some(429), Some("slow down")));
}

/// An engine's report taken with a request in flight.
fn a_report_with_a_request_in_flight(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let dedupe = dedupe_day();
    // An engine report with a request in flight: what is in flight is
    // assumed not yet counted by the engine.
    let reported =
        RuleWindow { window: "2026-12-04".into(), resets_at: t("2026-12-05T00:00:00Z"), ..day_rule(Some(10), true) };
    let later = t("2026-12-04T03:00:00Z");
    ledger.admit(&items(8), later, &AdmitRule { force: true, ..dedupe }).unwrap();
    let report = ledger.record_report(&reported, 5, later).unwrap();
    assert_eq!(report.limit, 5);
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &vec![reported.clone()],
            max_items: 2,
            pace: None,
            now: Now::pinned(later),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 2);
    // Another process reads the engine before these two are counted there.
    let report = ledger.record_report(&reported, 5, later).unwrap();
    assert_eq!(report.limit, 5, "2 used + 5 left - 2 in flight");
    let usage = ledger.usage(&reported).unwrap();
    assert_eq!(usage.remaining(&reported, later), Some(3));
}

/// A pace of one send every 2 s with a burst of 3.
fn a_pace_with_a_burst(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let dedupe = dedupe_day();
    let later = t("2026-12-04T03:00:00Z");
    // A pace of one send every 2 s with a burst of 3: at a horizon of "now",
    // 4 go (slots now, now, now, now) and the rest get their expected slots.
    let paced_group = GroupKey::urls("paced", EngineKind::Google, "");
    let paced: Vec<NewItem> = (0..10)
        .map(|i| NewItem {
            url: format!("https://paced.example/{i}"),
            group: paced_group.clone().into(),
            action: Action::Deleted,
            lastmod: None,
            zone: chrono_tz::Tz::UTC,
        })
        .collect();
    ledger.admit(&paced, later, &dedupe).unwrap();
    let pace = Pace { key: "story".into(), interval: TimeDelta::seconds(2), burst: 3, horizon: later };
    let claim = take(
        ledger,
        &paced_group,
        ClaimSpec {
            windows: &[],
            max_items: 100,
            pace: Some(&pace),
            now: Now::pinned(later),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 4);
    assert_eq!(claim.items[0].action, Action::Deleted);
    // The claim's instant is the ledger's (on PostgreSQL the server's clock,
    // shifted to `later`: a moment after it).
    assert!(claim.now - later < TimeDelta::seconds(5), "{}", claim.now);
    assert_eq!(claim.slots, vec![claim.now; 4]);
    let expected: Vec<DateTime<Utc>> = (1..=6).map(|n| claim.now + TimeDelta::seconds(2 * n)).collect();
    assert_eq!(claim.paced.iter().map(|p| p.2).collect::<Vec<_>>(), expected);
    // Another claim at the same moment finds no slot, and defers all six again.
    let claim = take(
        ledger,
        &paced_group,
        ClaimSpec {
            windows: &[],
            max_items: 100,
            pace: Some(&pace),
            now: Now::pinned(later),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert!(claim.items.is_empty());
    // Fourteen seconds on (all six due, their slots rounded up to the
    // second), with a horizon 10 s ahead, the pace lets them go at their slots.
    let then = later + TimeDelta::seconds(14);
    let pace = Pace { horizon: then + TimeDelta::seconds(10), ..pace };
    let claim = take(
        ledger,
        &paced_group,
        ClaimSpec {
            windows: &[],
            max_items: 100,
            pace: Some(&pace),
            now: Now::pinned(then),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    assert_eq!(claim.items.len(), 6);
    assert_eq!(claim.slots[0], claim.now);
    assert_eq!(claim.slots[3], claim.now, "a burst of 4");
    assert_eq!(claim.slots[5], claim.now + TimeDelta::seconds(4));
}

/// `--changed`: an accepted URL goes again only if its lastmod is later
/// than its acceptance (none recorded) or than the one recorded at its
/// acceptance — which a requeue records, so that the same lastmod read
/// again, even one in the future, is no change.
fn changed_since_acceptance(ledger: &mut impl Ledger) {
    let me = Owner::current();
    let dedupe = dedupe_day();
    // --changed: an accepted URL goes again only if its lastmod is later
    // than its acceptance, whatever the dedupe window.
    let changed = AdmitRule { changed: true, ..dedupe };
    let page = |lastmod: Option<DateTime<Utc>>| NewItem {
        url: "https://site.example/page".into(),
        group: group().into(),
        action: Action::Updated,
        lastmod,
        zone: chrono_tz::Tz::UTC,
    };
    let at = t("2026-12-10T09:00:00Z");
    ledger.admit(&[page(None)], at, &changed).unwrap();
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(at),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    accept_all(ledger, &claim, at);
    let later = at + TimeDelta::hours(1);
    let same = ledger.admit(&[page(Some(at - TimeDelta::days(1)))], later, &changed).unwrap();
    assert!(matches!(same[0], Admission::Skipped { unchanged: true, .. }), "{same:?}");
    let none = ledger.admit(&[page(None)], later, &changed).unwrap();
    assert!(matches!(none[0], Admission::Skipped { unchanged: true, .. }), "no lastmod: only when new");
    let moved = ledger.admit(&[page(Some(at + TimeDelta::minutes(30)))], later, &changed).unwrap();
    assert!(matches!(moved[0], Admission::Queued { fresh: false, .. }), "{moved:?}");
    // Accepted again; its lastmod then is recorded: read again, unchanged.
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(later),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    accept_all(ledger, &claim, later);
    let future = t("2030-01-01T12:00:00Z");
    let again = ledger.admit(&[page(Some(at + TimeDelta::minutes(30)))], later, &changed).unwrap();
    assert!(matches!(again[0], Admission::Skipped { unchanged: true, .. }), "{again:?}");
    let ahead = ledger.admit(&[page(Some(future))], later, &changed).unwrap();
    assert!(matches!(ahead[0], Admission::Queued { fresh: false, .. }), "{ahead:?}");
    let claim = take(
        ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(later),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &me,
    );
    accept_all(ledger, &claim, later);
    for day in 1..=3 {
        let read = ledger.admit(&[page(Some(future))], later + TimeDelta::days(day), &changed).unwrap();
        assert!(matches!(read[0], Admission::Skipped { unchanged: true, .. }), "day {day}: {read:?}");
    }
}

#[test]
fn sqlite_tells_the_story() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap();
    story(&mut ledger);
}

/// The tests' random writes: a linear congruential generator (Knuth's
/// MMIX constants), so that a seed gives the same steps on every machine
/// and a failure names a step that can be run again.
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Seeded {
        Seeded(seed)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    /// A step over the ids 1 to `ids`: a first id, a last up to `longer`
    /// ids past it (not past `ids`), and a kind below `kinds`.
    pub fn step(&mut self, ids: i64, longer: u64, kinds: u64) -> (i64, i64, u64) {
        let first = 1 + self.below(ids as u64) as i64;
        let last = (first + self.below(longer) as i64).min(ids);
        (first, last, self.below(kinds))
    }
}

/// A PostgreSQL ledger in a new schema of the test server
/// (`$INDEXQ_TEST_PG`, started by `.ci/postgres`); without it the test
/// fails (the tests that call this are ignored with the reason `needs PostgreSQL`).
/// Every commit of it checks that the spans agree with the items (issue
/// 48; `PgLedger::check_spans`).
pub fn test_postgres() -> super::PgLedger {
    test_postgres_unchecked().check_spans()
}

/// `test_postgres`, its commits not checking the spans: for a test that
/// writes items with its own statements (which keep no spans).
pub fn test_postgres_unchecked() -> super::PgLedger {
    let Some(url) = std::env::var("INDEXQ_TEST_PG").ok().filter(|u| !u.is_empty()) else {
        panic!("PostgreSQL tests need INDEXQ_TEST_PG; run `eval \"$(.ci/postgres start)\"`");
    };
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let options = super::PgOptions {
        url,
        schema: format!("unit_{}_{n}_{nanos}", std::process::id()),
        password: std::env::var("INDEXQ_TEST_PG_PASSWORD").ok(),
        timeout: std::time::Duration::from_secs(10),
        lease: super::owner::LEASE,
    };
    super::PgLedger::open(&options).expect("the test PostgreSQL server")
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_tells_the_story() {
    let mut ledger = test_postgres();
    story(&mut ledger);
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn a_copy_between_backends_is_exact_and_idempotent() {
    let mut pg = test_postgres();
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = super::SqliteLedger::open_checking_spans(&dir.path().join("from.db")).unwrap();
    story(&mut sqlite);
    drop_story(&mut sqlite);
    let original = dump(&mut sqlite);
    assert!(!original.items.is_empty() && !original.requests.is_empty() && !original.usage.is_empty());

    let first = copy(&mut sqlite, &mut pg, true).unwrap();
    assert_eq!(dump(&mut pg), original, "SQLite -> PostgreSQL");
    // The copied items' ids come a block at a time: a batch row holds
    // each group's run of them, not one row an item.
    let (rows, groups) = pg.batch_rows().unwrap();
    assert!(
        rows < groups + original.items.len() as i64 / 2,
        "{rows} batch rows for {} items of {groups} groups",
        original.items.len()
    );
    let again = copy(&mut sqlite, &mut pg, true).unwrap();
    assert_eq!(again.attempts, 0, "no attempt is added twice");
    // Items in flight in the target are left alone.
    let in_flight = original.items.iter().filter(|i| i.1.state == ItemState::InFlight).count() as u64;
    assert_eq!((first.items, again.items), (original.items.len() as u64, original.items.len() as u64 - in_flight));
    assert_eq!(dump(&mut pg), original, "a second copy changes nothing");

    let mut back = super::SqliteLedger::open_checking_spans(&dir.path().join("back.db")).unwrap();
    copy(&mut pg, &mut back, true).unwrap();
    assert_eq!(dump(&mut back), original, "PostgreSQL -> SQLite");
}

/// On PostgreSQL, window decisions use the database server's clock (shifted
/// only by `INDEXQ_NOW`): a machine whose own clock runs two hours ahead
/// neither sees an item due in an hour nor counts in a later window.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_decides_with_the_server_clock() {
    let mut ledger = test_postgres();
    let wall = crate::clock::wall_now();
    let ahead = Now { local: wall + TimeDelta::hours(2), shift: TimeDelta::zero() };
    let time = ledger.now(ahead, false).unwrap();
    assert!((time.now - wall).abs() < TimeDelta::seconds(30), "{time:?} vs {wall}");
    let dedupe = dedupe_day();
    ledger.admit(&items(1), wall + TimeDelta::hours(1), &dedupe).unwrap();
    let claim = take(
        &mut ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: ahead,
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &Owner::current(),
    );
    assert!(claim.items.is_empty(), "not due yet by the server's clock");
    assert!((claim.now - wall).abs() < TimeDelta::seconds(30), "{} vs {wall}", claim.now);
}

/// On SQLite, this machine's clock decides, never earlier than the latest
/// instant a run recorded.
#[test]
fn sqlite_decides_with_this_machine_clock_floored_by_the_latest_seen() {
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap();
    let at = t("2026-12-04T00:10:00Z");
    assert_eq!(ledger.now(Now::pinned(at), true).unwrap(), LedgerTime { now: at, latest: None, clock: at });
    let back = at - TimeDelta::minutes(15);
    let time = ledger.now(Now::pinned(back), false).unwrap();
    assert_eq!(time, LedgerTime { now: at, latest: Some(at), clock: back });
    let dedupe = dedupe_day();
    ledger.admit(&items(1), at, &dedupe).unwrap();
    let claim = take(
        &mut ledger,
        &group(),
        ClaimSpec {
            windows: &[],
            max_items: 10,
            pace: None,
            now: Now::pinned(back),
            credential: None,
            order: crate::model::SubmitOrder::Oldest,
        },
        &Owner::current(),
    );
    assert_eq!((claim.items.len(), claim.now), (1, at), "due at the floor");
}

/// `serve`'s intake limits: per token and rule, a burst passes, the next
/// is refused with when to come back, a refusal moves nothing, and each
/// token and rule has its own.
fn intake_limit_story(ledger: &mut impl Ledger) {
    let at = Now::pinned(t("2026-12-03T09:00:00Z"));
    let hourly = Gcra { per: 1, period: TimeDelta::hours(1), burst: 2 };
    let take = |ledger: &mut dyn Ledger, token: &str, rule: &str, cost: u32| {
        ledger.take_rate(token, rule, &hourly, cost, at).unwrap()
    };
    let first = take(ledger, "ghost", "urls_per_minute", 1);
    assert!(first.allowed && first.remaining == 1, "{first:?}");
    let second = take(ledger, "ghost", "urls_per_minute", 1);
    assert!(second.allowed && second.remaining == 0, "{second:?}");
    let near = |d: Option<TimeDelta>, want: TimeDelta| d.is_some_and(|d| (d - want).abs() < TimeDelta::seconds(30));
    for _ in 0..2 {
        let refused = take(ledger, "ghost", "urls_per_minute", 1);
        assert!(!refused.allowed, "{refused:?}");
        assert!(near(refused.retry_after, TimeDelta::hours(1)), "a refusal moves nothing: {refused:?}");
    }
    assert!(take(ledger, "ghost", "requests_per_second", 1).allowed, "another rule");
    assert!(take(ledger, "shop", "urls_per_minute", 2).allowed, "another token");
    let never = take(ledger, "shop", "requests_per_second", 3);
    assert_eq!((never.allowed, never.retry_after), (false, None), "over the burst: never");
}

#[test]
fn sqlite_keeps_the_intake_limits() {
    let dir = tempfile::tempdir().unwrap();
    intake_limit_story(&mut super::SqliteLedger::open_checking_spans(&dir.path().join("ledger.db")).unwrap());
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn postgres_keeps_the_intake_limits() {
    intake_limit_story(&mut test_postgres());
}
