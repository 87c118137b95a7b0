//! A short crash soak: runs killed at random moments against an engine that
//! answers at random (slow 200s, 503s, 429s, hangs) lose no URL, never spend
//! more than the day's budget, leave nothing stuck in flight and keep the
//! ledger file sound. A 429 is a refusal the engine did not count (its URLs
//! go back to the day): the engine counts every URL of every other request.
//! `bench/crash-soak` is the long version.

use crate::support::mock::MockResponse;
use crate::support::*;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const QUOTA: usize = 40;
const URLS: usize = 60;
const KILLS: usize = 10;

/// xorshift64*: small, deterministic, good enough to pick faults and moments.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// The clock of run `i`: all on one day, a few minutes apart (so backoffs fall due).
fn at(i: usize) -> String {
    let minutes = 9 * 60 + i * 7;
    format!("2026-12-03T{:02}:{:02}:00Z", minutes / 60, minutes % 60)
}

/// Items in the ledger per URL (over every state), via the CLI.
fn ledger_counts(sb: &Sandbox, now: &str) -> (HashMap<String, usize>, Vec<json::Item>) {
    let all = "due,waiting,parked,in-flight,accepted";
    let doc = sb.indexq(&["--json", "queue", "list", "--state", all, "--limit", "100000"]).now(now).output();
    let doc = doc.code(0).queue_doc();
    assert!(!doc.truncated);
    let mut counts = HashMap::new();
    for item in &doc.items {
        *counts.entry(item.url.clone()).or_insert(0) += 1;
    }
    (counts, doc.items)
}

fn integrity_ok(sb: &Sandbox) -> bool {
    use rusqlite::{Connection, OpenFlags};
    if !sb.ledger().exists() {
        return true; // killed before it made one
    }
    let db = Connection::open_with_flags(sb.ledger(), OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let verdict: String = db.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    verdict == "ok"
}

#[test]
fn random_kills_lose_nothing_overspend_nothing_and_leave_nothing_stuck() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = format!(", daily_quota = {QUOTA}");
    sb.write_config();
    let rng = Arc::new(Mutex::new(Rng(0x5eed_1dea_f00d_cafe)));
    let faults = Arc::clone(&rng);
    // The URLs of the requests refused with a 429: the engine did not count them.
    let refused: Arc<Mutex<Vec<String>>> = Arc::default();
    let refusing = Arc::clone(&refused);
    sb.engine.respond_with("POST", ENDPOINT_PATH, move |req| {
        let mut rng = faults.lock().unwrap();
        match rng.range(0, 3) {
            0 => MockResponse::status(200).delay(Duration::from_millis(rng.range(0, 300))),
            1 => MockResponse::status(503),
            2 => {
                let urls = req.json()["urlList"].as_array().cloned().unwrap_or_default();
                refusing.lock().unwrap().extend(urls.iter().filter_map(|u| u.as_str().map(String::from)));
                MockResponse::status(429).header("Retry-After", "1")
            }
            _ => MockResponse::status(200).hang(),
        }
    });
    let names: Vec<String> = (0..URLS).map(|i| format!("/soak/{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let list = sb.urls("urls.txt", &refs);
    let list = list.to_str().unwrap();
    let input: Vec<String> = names.iter().map(|n| sb.url(n)).collect();

    let (mut lost, mut overspent) = (0, 0);
    let mut admitted: HashSet<String> = HashSet::new();
    let mut check = |sb: &Sandbox, now: &str, when: &str| {
        let (counts, items) = ledger_counts(sb, now);
        let received = sb.received_urls();
        for url in &input {
            let n = counts.get(url).copied().unwrap_or(0);
            // Once in the ledger, a URL stays there, once; anything sent was in it first.
            if n > 1 || (n == 0 && (admitted.contains(url) || received.contains(url))) {
                eprintln!("{when}: {url} is in the ledger {n} times");
                lost += 1;
            }
            if n > 0 {
                admitted.insert(url.clone());
            }
        }
        let strays: Vec<&String> = counts.keys().filter(|u| !input.contains(u)).collect();
        assert!(strays.is_empty(), "{when}: URLs nobody submitted: {strays:?}");
        // Every URL in every request counts — the engine may have seen it —
        // but those of a request it refused with a 429.
        let counted = received.len() - refused.lock().unwrap().len();
        if counted > QUOTA {
            eprintln!("{when}: the engine counted {counted} URLs today (quota {QUOTA})");
            overspent = overspent.max(counted - QUOTA);
        }
        let status = sb.indexq(&["--json", "status"]).now(now).output().code(0).status_doc();
        let used = status.budgets.first().map_or(0, |b| b.used) as usize;
        assert!(used <= QUOTA, "{when}: the ledger counts {used} used (quota {QUOTA})");
        assert!(used >= counted, "{when}: the engine counted {counted} but the ledger only {used}");
        assert!(integrity_ok(sb), "{when}: PRAGMA integrity_check failed");
        let mut states: HashMap<json::ItemState, usize> = HashMap::new();
        for item in &items {
            *states.entry(item.state).or_insert(0) += 1;
        }
        let mut states: Vec<_> = states.into_iter().collect();
        states.sort();
        eprintln!(
            "{when}: {} in ledger {states:?}, received {} (refused with a 429 {}), used {used}",
            items.len(),
            received.len(),
            received.len() - counted
        );
    };

    for i in 0..KILLS {
        let now = at(i);
        let mut child = sb.indexq(&["submit", "--max-wait", "0", list]).now(&now).spawn();
        let pause = rng.lock().unwrap().range(20, 400);
        std::thread::sleep(Duration::from_millis(pause));
        let _ = child.kill(); // SIGKILL (it may have finished already)
        child.wait().unwrap();
        check(&sb, &now, &format!("kill {} at {pause} ms", i + 1));
    }

    // One normal run against an engine that accepts everything.
    sb.engine.respond_with("POST", ENDPOINT_PATH, |_| MockResponse::status(200));
    let now = at(KILLS);
    let done = sb.indexq(&["--json", "submit", "--max-wait", "0", list]).now(&now).output();
    assert!([0, 2, 3].contains(&done.code), "final run: exit {}\n{}", done.code, done.stderr);
    check(&sb, &now, "final run");
    let (counts, items) = ledger_counts(&sb, &now);
    for url in &input {
        if !counts.contains_key(url) {
            eprintln!("final run: {url} is not in the ledger");
            lost += 1;
        }
    }
    let stuck = items
        .iter()
        .filter(|i| match i.state {
            json::ItemState::Accepted => false,
            json::ItemState::Due | json::ItemState::Waiting => i.next_attempt_at.is_none(),
            json::ItemState::Parked => i.reason.is_none(),
            json::ItemState::InFlight => true, // with no run alive
        })
        .inspect(|i| eprintln!("stuck: {i:?}"))
        .count();
    eprintln!("kills {KILLS}, urls {URLS}, lost {lost}, overspent {overspent}, stuck {stuck}");
    assert_eq!((lost, overspent, stuck), (0, 0, 0));
}
