//! A ledger written by the schema-1 binary (tests/fixtures/ledger-v1), one
//! written by the schema-2 binary (tests/fixtures/ledger-v2) — each a queue,
//! history and today's usage — upgrade in place, on SQLite and on
//! PostgreSQL, and this binary shows of each what the binary that wrote it
//! did; so does a ledger of the schema-6 binary (tests/fixtures/ledger-v6:
//! SQLite's schema 7 rebuilt its items table; PostgreSQL's schema 7 dropped
//! the items' foreign key to their group), on both; and a ledger of the
//! schema-7 binary killed with a claim in flight (tests/fixtures/ledger-v7:
//! PostgreSQL's schema 8 lists a claim's items in its reservation), on both,
//! and one of the schema-8 binary (tests/fixtures/ledger-v8: SQLite's schema
//! 9 holds a claim's items in runs of `in_flight`; PostgreSQL's schema 9
//! stores a reservation's list of items uncompressed).

use crate::support::mock::{MockResponse, MockServer, FIXTURE_PORT};
use crate::support::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The fixtures' URLs name one fixed port (they were written by an older
/// binary against it), kept bound for the whole run: the tests that serve
/// it take turns, or two servers would share its connections.
static FIXTURE_PORT_TURN: Mutex<()> = Mutex::new(());

const NOW: &str = "2026-12-04T10:00:00Z";

/// The schema the fixtures of a test were written with.
#[derive(Clone, Copy)]
struct Schema(u8);

impl Schema {
    fn fixtures(self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/ledger-v{}", self.0))
    }

    fn fixture(self, name: &str) -> String {
        std::fs::read_to_string(self.fixtures().join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
    }
}

/// A sandbox with the fixture's configuration (and `top` before its first
/// table: a PostgreSQL ledger's keys) and Google's key, if it has one.
fn sandbox(schema: Schema, top: &str) -> Sandbox {
    let sb = Sandbox::new();
    std::fs::write(sb.config_path(), format!("{top}{}", schema.fixture("indexq.toml"))).unwrap();
    let key = schema.fixtures().join("service-account.json");
    if key.exists() {
        std::fs::copy(key, sb.dir.path().join("service-account.json")).unwrap();
    }
    sb
}

/// What `status`, `queue list` and `log` say, without what this binary
/// adds to the documents (`stranded`, `parked`; for schema 1 a request's
/// `urls`; `normalized`).
fn views(schema: Schema, sb: &Sandbox) -> Value {
    let run = |args: &[&str]| sb.indexq(args).env("BING_KEY", "fixture-bing-key-0123456789").now(NOW).output().code(0);
    let mut status = run(&["--json", "status"]).json();
    assert_eq!(status["stranded"], serde_json::json!([]), "{status:#}");
    status.as_object_mut().unwrap().remove("stranded");
    // What is parked, as this binary says it: the fixture's parked items, per group and reason.
    let parked: u64 = status["parked"].as_array().unwrap().iter().map(|p| p["urls"].as_u64().unwrap()).sum();
    assert_eq!(parked, status["queue"]["parked"].as_u64().unwrap(), "{status:#}");
    status.as_object_mut().unwrap().remove("parked");
    let queue = run(&["--json", "queue", "list", "--state", "due,waiting,parked,in-flight,accepted"]).json();
    let mut log = run(&["--json", "log", "--limit", "1000"]).json();
    if schema.0 == 1 {
        for a in log["attempts"].as_array_mut().unwrap() {
            assert_eq!(a["urls"], 1, "an attempt of schema 1 named one URL: {a:#}");
            a.as_object_mut().unwrap().remove("urls");
        }
    }
    normalized(serde_json::json!({ "status": status, "queue": queue, "log": log }))
}

/// Without the seconds to a reset (they move with the real time elapsed),
/// and the fields this binary added to a budget (`rule`, `scope`) and to
/// the document (`inspections`: Google's URL inspections, `sitemaps`: the
/// sitemaps submitted; none here).
fn normalized(mut views: Value) -> Value {
    if let Some(inspections) = views["status"].as_object_mut().and_then(|s| s.remove("inspections")) {
        assert_eq!(inspections, serde_json::json!([]), "nothing inspects in the fixture");
    }
    if let Some(sitemaps) = views["status"].as_object_mut().and_then(|s| s.remove("sitemaps")) {
        assert_eq!(sitemaps, serde_json::json!([]), "the fixture's property has no sources: no sitemap is submitted");
    }
    for b in views["status"]["budgets"].as_array_mut().unwrap() {
        for added in ["resets_in_secs", "rule", "scope"] {
            b.as_object_mut().unwrap().remove(added);
        }
    }
    views
}

/// What the binary of `schema` said of its ledger.
fn expected(schema: Schema) -> Value {
    let json = |name: &str| serde_json::from_str::<Value>(&schema.fixture(name)).unwrap();
    let mut status = json("status.json");
    // Schema 2's binary said what is `stranded` too (nothing), and schema 6's
    // what is `parked`, which `views` leaves out.
    status.as_object_mut().unwrap().remove("stranded");
    status.as_object_mut().unwrap().remove("parked");
    normalized(serde_json::json!({ "status": status, "queue": json("queue.json"), "log": json("log.json") }))
}

fn assert_upgraded(schema: Schema, sb: &Sandbox) {
    let views = views(schema, sb);
    let expected = expected(schema);
    assert!(!expected["queue"]["items"].as_array().unwrap().is_empty(), "the fixture has a queue");
    for part in ["status", "queue", "log"] {
        assert_eq!(views[part], expected[part], "{part} after the upgrade");
    }
    // The upgraded ledger works on: a dry run plans from it.
    let doc = sb
        .indexq(&["--json", "submit", "--dry-run", "--engine", "indexnow,bing"])
        .env("BING_KEY", "fixture-bing-key-0123456789")
        .now("2026-12-04T11:00:00Z")
        .output()
        .code(0)
        .json();
    assert!(doc["plan_summary"].is_object(), "{doc:#}");
    // The metrics read the upgraded ledger: its attempts, and no run yet.
    let metrics = sb
        .indexq(&["status", "--format", "prometheus"])
        .env("BING_KEY", "fixture-bing-key-0123456789")
        .now(NOW)
        .output()
        .code(0)
        .stdout;
    let bing_transient = metrics
        .lines()
        .find(|l| {
            l.starts_with("indexq_attempts_total{")
                && l.contains("engine=\"bing\"")
                && l.contains("class=\"transient\"")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(bing_transient.ends_with(" 16"), "8 URLs attempted twice: {bing_transient}");
    // Schema 2 keeps the runs of `submit` (a copy to PostgreSQL does not carry them).
    let last_run = metrics.lines().find(|l| l.starts_with("indexq_last_run_exit_code"));
    if schema.0 == 1 || sb.pg.is_some() {
        assert_eq!(last_run, None, "no run recorded yet: {metrics}");
    } else {
        assert_eq!(last_run, Some("indexq_last_run_exit_code 0"), "the fixture's last run: {metrics}");
    }
}

fn sqlite_upgrades_in_place(schema: Schema) {
    let sb = sandbox(schema, "");
    std::fs::create_dir_all(sb.ledger().parent().unwrap()).unwrap();
    std::fs::copy(schema.fixtures().join("ledger.db"), sb.ledger()).unwrap();
    let done = sb.indexq(&["ledger", "migrate"]).now(NOW).output().code(0);
    assert!(done.stdout.contains("schema version 13"), "{}", done.stdout);
    assert_upgraded(schema, &sb);
    // Once upgraded, migrating again is a no-op that says the same (as JSON here).
    let doc = sb.indexq(&["--json", "ledger", "migrate"]).now(NOW).output().code(0).migrate_doc();
    assert_eq!((doc.ledger, doc.schema_version), (sb.ledger().display().to_string(), 13));
}

#[test]
fn a_schema_1_sqlite_ledger_upgrades_in_place() {
    sqlite_upgrades_in_place(Schema(1));
}

#[test]
fn a_schema_2_sqlite_ledger_upgrades_in_place() {
    sqlite_upgrades_in_place(Schema(2));
}

#[test]
fn a_schema_6_sqlite_ledger_upgrades_in_place() {
    sqlite_upgrades_in_place(Schema(6));
}

/// A ledger of the schema-7 binary killed while one endpoint held its
/// request (tests/fixtures/ledger-v7: four URLs accepted at one endpoint,
/// the same four in flight at the other): schema 8 lists the reservation's
/// items and drops the index of items in flight, schema 9 holds them in
/// runs of `in_flight` and queues their rows. This binary shows the ledger
/// as that one did, and the next run sends the four again, once.
#[test]
fn a_schema_7_sqlite_ledger_with_a_claim_in_flight_upgrades_and_sends_it_again() {
    sqlite_claim_in_flight_upgrades_and_sends_it_again(Schema(7));
}

/// The same, killed under the schema-8 binary (tests/fixtures/ledger-v8:
/// its reservation lists the four, and their rows say `in_flight`).
#[test]
fn a_schema_8_sqlite_ledger_with_a_claim_in_flight_upgrades_and_sends_it_again() {
    sqlite_claim_in_flight_upgrades_and_sends_it_again(Schema(8));
}

fn sqlite_claim_in_flight_upgrades_and_sends_it_again(schema: Schema) {
    let sb = sandbox(schema, "");
    std::fs::create_dir_all(sb.ledger().parent().unwrap()).unwrap();
    std::fs::copy(schema.fixtures().join("ledger.db"), sb.ledger()).unwrap();
    let done = sb.indexq(&["ledger", "migrate"]).now(NOW).output().code(0);
    assert!(done.stdout.contains("schema version 13"), "{}", done.stdout);
    the_claim_in_flight_is_shown_and_sent_again_once(schema, &sb);
}

/// What the binary that wrote the fixture showed of its ledger (four URLs
/// accepted, the same four in flight at the other endpoint, their owner
/// gone), shown the same; then the next run sends the four again, once,
/// and nothing is left in flight.
fn the_claim_in_flight_is_shown_and_sent_again_once(schema: Schema, sb: &Sandbox) {
    let (views, expected) = (views(schema, sb), expected(schema));
    for part in ["status", "queue", "log"] {
        assert_eq!(views[part], expected[part], "{part} after the upgrade");
    }
    assert_eq!(views["status"]["queue"]["in_flight"], 4, "{:#}", views["status"]);
    // The endpoints the fixture's URLs name, served here, one test at a time.
    let _turn = FIXTURE_PORT_TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let engine = MockServer::start_on(FIXTURE_PORT);
    let key = "0123456789abcdef0123456789abcdef";
    engine.on("GET", &format!("/{key}.txt"), vec![MockResponse::status(200).body(key)]);
    engine.on("POST", "/indexnow-held", vec![MockResponse::status(200)]);
    let run = sb.indexq(&["--json", "submit", "--max-wait", "0"]).env("INDEXNOW_KEY", key).now(NOW).output().code(0);
    let sent: Vec<String> = engine
        .requests_to("POST", "/indexnow-held")
        .iter()
        .flat_map(|r| {
            r.json()["urlList"].as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect::<Vec<_>>()
        })
        .collect();
    let page = |i: u8| format!("http://127.0.0.1:47392/page{i}");
    assert_eq!(sent, (1..=4).map(page).collect::<Vec<_>>(), "{}", run.stdout);
    assert!(engine.requests_to("POST", "/indexnow").is_empty(), "the accepted four are not sent again");
    let queue = sb.indexq(&["--json", "queue", "list", "--state", "in-flight,due"]).now(NOW).output().code(0).json();
    assert_eq!(queue["items"], serde_json::json!([]), "{queue:#}");
    let status = sb.indexq(&["--json", "status"]).now(NOW).output().code(0).json();
    assert_eq!((&status["queue"]["in_flight"], &status["queue"]["accepted"]), (&0.into(), &8.into()), "{status:#}");
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_a_schema_1_database_ledger_upgrades_in_place() {
    pg_upgrades_in_place(Schema(1));
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_a_schema_2_database_ledger_upgrades_in_place() {
    pg_upgrades_in_place(Schema(2));
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_a_schema_6_database_ledger_upgrades_in_place() {
    pg_upgrades_in_place(Schema(6));
}

/// A sandbox whose ledger is the fixture's PostgreSQL dump (`pg.sql`),
/// loaded into a schema of the test's own, upgraded by `ledger migrate`.
fn pg_fixture_upgraded(schema: Schema) -> (pg::PgServer, pg::PgLedger, Sandbox) {
    let server = pg::server();
    let ledger = server.ledger();
    let dump = schema.fixture("pg.sql").replace(&format!("ledger_v{}_fixture", schema.0), &ledger.schema);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), dump).unwrap();
    let out = std::process::Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", &server.url, "-f"])
        .arg(file.path())
        .env("PGPASSWORD", &server.password)
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "loading the dump: {}", String::from_utf8_lossy(&out.stderr));
    let mut sb = sandbox(schema, &ledger.config_lines());
    sb.pg = Some(ledger.clone());
    let s = ledger.schema.clone();
    let items = server.psql(&format!("SELECT count(*) FROM {s}.items"));
    let done = sb.indexq(&["ledger", "migrate"]).now(NOW).output().code(0);
    assert!(done.stdout.contains("schema version 13"), "{}", done.stdout);
    // Schema 12 (provisional, issue 48) fills the batches and the spans
    // from the items, each item in one of each, then drops the items.
    let filled = server.psql(&format!(
        "SELECT {items} || ' ' || (SELECT coalesce(sum(n), 0) FROM {s}.batches) || ' '
             || (SELECT coalesce(sum(last - first + 1), 0) FROM {s}.spans)"
    ));
    let counts: Vec<&str> = filled.split(' ').collect();
    assert!(counts.len() == 3 && counts[0] != "0", "items, batched, in spans: {filled}");
    assert!(counts.iter().all(|n| *n == counts[0]), "items, batched, in spans: {filled}");
    let gone = server.psql(&format!("SELECT to_regclass('{s}.items') IS NULL"));
    assert_eq!(gone, "t", "no items table in a ledger of schema 12");
    (server, ledger, sb)
}

fn pg_upgrades_in_place(schema: Schema) {
    let (server, ledger, sb) = pg_fixture_upgraded(schema);
    assert_upgraded(schema, &sb);
    // Schema 7 took the foreign key from items to their group, and schema
    // 12 the items themselves: admission checks the groups itself (an item
    // of a group not in the ledger is refused: `ledger::ids::groups_found`);
    // no table names a group by a foreign key from an item.
    let keys = server.psql(&format!(
        "SELECT count(*) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
             JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE n.nspname = '{}' AND t.relname IN ('spans', 'item_changes') AND c.contype = 'f'",
        ledger.schema
    ));
    assert_eq!(keys, "0");
    pg::assert_no_sqlite(&sb, &[]);
}

/// The schema-7 scenario of `a_schema_7_sqlite_ledger_with_a_claim_in_flight_…`
/// on PostgreSQL (tests/fixtures/ledger-v7/pg.sql, by `make-pg`): four rows
/// a claim of schema 7 marked `in_flight`, in a reservation that lists none
/// (schema 8 lists a claim's items in its reservation and writes no item
/// row). This binary shows them in flight, as that one did, and the next
/// run finds them by their reservation and sends them again, once.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_a_schema_7_database_ledger_with_a_claim_in_flight_upgrades_and_sends_it_again() {
    let schema = Schema(7);
    let (_server, _ledger, sb) = pg_fixture_upgraded(schema);
    the_claim_in_flight_is_shown_and_sent_again_once(schema, &sb);
}

/// The same scenario written by the binary of PostgreSQL's schema 8
/// (tests/fixtures/ledger-v8/pg.sql, by `make-pg`): four items listed by a
/// reservation whose owner is gone. Schema 9 stores the lists written after
/// it uncompressed and changes no row: the list written before is read as
/// it was, the four are shown in flight, and the next run sends them again,
/// once.
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_a_schema_8_database_ledger_with_a_claim_in_flight_upgrades_and_sends_it_again() {
    let schema = Schema(8);
    let (server, ledger, sb) = pg_fixture_upgraded(schema);
    let storage = server.psql(&format!(
        "SELECT attstorage FROM pg_attribute WHERE attrelid = '{}.reservations'::regclass AND attname = 'items'",
        ledger.schema
    ));
    assert_eq!(storage, "e", "the lists are stored as they are (external, uncompressed)");
    the_claim_in_flight_is_shown_and_sent_again_once(schema, &sb);
}
