//! Metrics in the Prometheus text format (`submit --metrics-file`, `status
//! --format prometheus`): after four scripted days against the mock engines
//! every series is there with the value the days give and the numbers of
//! `status --json`, on SQLite and PostgreSQL; the file is written
//! atomically. With promtool (Debian's `prometheus` package; the tests that
//! need it are ignored with that reason, `.ci/run` runs them): a real Prometheus parser
//! accepts the text, and the alert rules in `examples/` are valid and fire
//! when they should.

use crate::support::scenario::{self, AFTER, DAYS};
use crate::support::*;
use crate::support::{mock, pg};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// One sample: name, labels, value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// The samples of a text exposition, checked as far as the tests need:
/// every sample belongs to a family announced by a HELP and a TYPE line
/// just before, and no family appears twice.
pub fn parse(text: &str) -> Vec<Series> {
    let mut out = Vec::new();
    let mut help: Option<String> = None;
    let mut family: Option<(String, String)> = None;
    let mut seen = std::collections::BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(seen.insert(name.clone()), "family {name} twice");
            help = Some(name);
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let (name, kind) = (parts.next().unwrap().to_string(), parts.next().unwrap().to_string());
            assert_eq!(help.as_deref(), Some(name.as_str()), "TYPE {name} without its HELP just before");
            family = Some((name, kind));
            continue;
        }
        assert!(!line.starts_with('#') && !line.trim().is_empty(), "unexpected line: {line:?}");
        let (name, rest) = line.split_at(line.find(['{', ' ']).unwrap());
        let (labels, value) = match rest.strip_prefix('{') {
            Some(rest) => parse_labels(rest),
            None => (BTreeMap::new(), rest.trim()),
        };
        let (family_name, kind) = family.clone().unwrap_or_else(|| panic!("{name} before any TYPE"));
        assert_eq!(name, family_name, "{line}");
        assert_eq!(kind == "counter", name.ends_with("_total"), "{name}: counters and only counters end in _total");
        assert!(name.starts_with("indexq_"), "{name}");
        out.push(Series { name: name.to_string(), labels, value: value.parse().unwrap() });
    }
    out
}

/// `a="x",b="y\"z"} 3` → the labels and `3`.
fn parse_labels(text: &str) -> (BTreeMap<String, String>, &str) {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return (labels, after.trim());
        }
        let eq = rest.find("=\"").unwrap();
        let key = rest[..eq].trim_start_matches(',').to_string();
        let mut value = String::new();
        let mut chars = rest[eq + 2..].char_indices();
        let end = loop {
            let (i, c) = chars.next().expect("an unterminated label value");
            match c {
                '\\' => match chars.next().unwrap().1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break eq + 2 + i + 1,
                c => value.push(c),
            }
        };
        labels.insert(key, value);
        rest = rest[end..].trim_start_matches(',');
    }
}

/// Prometheus's own parser accepts `text`: `promtool check metrics` (which
/// also lints names, HELP and TYPE) says nothing. The tests that call this
/// are `#[ignore = "needs promtool …"]`; without promtool they fail.
pub fn accepted_by_promtool(text: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("this test needs promtool (Debian's prometheus package): {e}"));
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics: {said}\n{text}");
}

/// The value of the one sample of `name` whose labels include `labels`.
fn value(series: &[Series], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Series> = series
        .iter()
        .filter(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "one {name} {labels:?}: {found:#?}");
    found[0].value
}

fn epoch(at: &str) -> f64 {
    chrono::DateTime::parse_from_rfc3339(at).unwrap().timestamp() as f64
}

/// Runs the four days with `--metrics-file`; returns the file's text.
fn four_days_with_metrics(sb: &Sandbox) -> String {
    let file = sb.dir.path().join("textfile").join("indexq.prom");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    scenario::four_days(sb, &["--metrics-file", file.to_str().unwrap()]);
    std::fs::read_to_string(&file).unwrap()
}

/// What the four days leave, as metrics (`text`, the file): checked one by
/// one, then against `status --json` and `status --format prometheus`.
fn check_four_days(sb: &Sandbox, text: &str) {
    let series = parse(text);
    let endpoint = sb.endpoints[0].clone();
    let indexnow = [("property", "site"), ("engine", "indexnow"), ("endpoint", endpoint.as_str())];
    let bing = [("property", "site"), ("engine", "bing"), ("endpoint", "")];

    // Budget: IndexNow's own daily rule, 3 of 3 on the fourth day, reopening at midnight UTC.
    let rule = format!("indexnow:site:{endpoint}:day");
    let day_rule = [("property", "site"), ("engine", "indexnow"), ("rule", rule.as_str())];
    assert_eq!(value(&series, "indexq_budget_used_urls", &day_rule), 3.0);
    assert_eq!(value(&series, "indexq_budget_limit_urls", &day_rule), 3.0);
    assert_eq!(value(&series, "indexq_budget_remaining_urls", &day_rule), 0.0);
    let reset = epoch("2026-12-05T00:00:00Z");
    assert_eq!(value(&series, "indexq_budget_window_reset_timestamp_seconds", &day_rule), reset);
    let made = value(&series, "indexq_metrics_timestamp_seconds", &[]);
    assert!((epoch(DAYS[3])..epoch(DAYS[3]) + 60.0).contains(&made), "{made}");
    let until = value(&series, "indexq_budget_window_reset_seconds", &day_rule);
    assert!((until - (reset - made)).abs() <= 1.0, "{until} vs {}", reset - made);
    let labels = &series.iter().find(|s| s.name == "indexq_budget_used_urls").unwrap().labels;
    assert_eq!(labels.get("period").map(String::as_str), Some("day"));
    assert_eq!(labels.get("scope").map(String::as_str), Some("property"));
    // Bing's rules: the local day (no limit: no limit series) and what Bing reports.
    let bing_day = [("engine", "bing"), ("rule", "bing:site:day")];
    assert_eq!(value(&series, "indexq_budget_used_urls", &bing_day), 1.0, "/c1 went to Bing on the fourth day");
    assert!(!series.iter().any(|s| s.name == "indexq_budget_limit_urls" && s.labels["rule"] == "bing:site:day"));

    // Queue by state.
    let queue =
        |group: &[(&str, &str)], state: &str| value(&series, "indexq_queue_items", &with(group, &[("state", state)]));
    let states = ["due", "waiting", "parked", "in_flight", "accepted"];
    assert_eq!(states.map(|s| queue(&indexnow, s)), [0.0, 2.0, 3.0, 0.0, 3.0]);
    assert_eq!(states.map(|s| queue(&bing, s)), [0.0, 0.0, 2.0, 0.0, 6.0]);

    // Attempts by class, since the ledger began.
    let attempts = |group: &[(&str, &str)], class: &str| {
        value(&series, "indexq_attempts_total", &with(group, &[("class", class)]))
    };
    let classes = ["accepted", "quota", "transient", "key_pending", "misconfigured"];
    assert_eq!(classes.map(|c| attempts(&indexnow, c)), [3.0, 3.0, 3.0, 0.0, 3.0]);
    assert_eq!(classes.map(|c| attempts(&bing, c)), [6.0, 0.0, 0.0, 0.0, 2.0]);

    // The last run: the fourth day's, exit 3; the last success: the first day's (the third said again
    // that Bing's URLs are parked).
    let start = value(&series, "indexq_last_run_start_timestamp_seconds", &[]);
    assert!((start - epoch(DAYS[3])).abs() < 60.0, "{start}");
    let took = value(&series, "indexq_last_run_duration_seconds", &[]);
    assert!((0.0..60.0).contains(&took), "{took}");
    assert!((made - (start + took)).abs() < 0.01, "the run ended when the metrics were made");
    assert_eq!(value(&series, "indexq_last_run_exit_code", &[]), 3.0);
    let success = value(&series, "indexq_last_success_timestamp_seconds", &[]);
    assert!((epoch(DAYS[0])..epoch(DAYS[0]) + 60.0).contains(&success), "{success}");
    assert_eq!(value(&series, "indexq_build_info", &[]), 1.0);

    // The same numbers as `status --json`, rule by rule and group by group.
    let status = sb.indexq(&["--json", "status"]).now(AFTER).output().code(0).status_doc();
    assert_eq!(status.budgets.len(), series.iter().filter(|s| s.name == "indexq_budget_used_urls").count());
    let later = parse(&sb.indexq(&["status", "--format", "prometheus"]).now(AFTER).output().code(0).stdout);
    for b in &status.budgets {
        let labels = [
            ("property", b.property.as_str()),
            ("engine", b.engine.as_str()),
            ("endpoint", b.endpoint.as_deref().unwrap_or("")),
            ("rule", b.rule.as_str()),
            ("period", b.period.as_str()),
            ("scope", b.scope.as_str()),
        ];
        assert_eq!(value(&later, "indexq_budget_used_urls", &labels), b.used as f64, "{b:?}");
        let limit = later.iter().find(|s| s.name == "indexq_budget_limit_urls" && labels_are(s, &labels));
        assert_eq!(limit.map(|s| s.value), b.limit.map(|l| l as f64), "{b:?}");
        let remaining = later.iter().find(|s| s.name == "indexq_budget_remaining_urls" && labels_are(s, &labels));
        assert_eq!(remaining.map(|s| s.value), b.remaining.map(|r| r as f64), "{b:?}");
        let resets = chrono::DateTime::parse_from_rfc3339(&b.resets_at).unwrap().timestamp();
        assert_eq!(value(&later, "indexq_budget_window_reset_timestamp_seconds", &labels), resets as f64);
        assert_eq!(value(&later, "indexq_budget_window_reset_seconds", &labels), b.resets_in_secs as f64, "{b:?}");
    }
    for g in &status.groups {
        let group = [("property", g.property.as_str()), ("engine", g.engine.as_str())];
        for state in states {
            let labels = [group[0], group[1], ("endpoint", g.endpoint.as_deref().unwrap_or("")), ("state", state)];
            assert_eq!(value(&later, "indexq_queue_items", &labels), g.queue.get(state) as f64, "{g:?}");
        }
    }
    // And as `log --json` counts the attempts: a request of `urls` URLs is
    // an attempt of each.
    let log = sb.indexq(&["--json", "log", "--limit", "1000"]).now(AFTER).output().code(0).log_doc();
    let mut by_class: BTreeMap<(String, String), f64> = BTreeMap::new();
    for a in &log.attempts {
        let key = (a.engine.as_str().to_string(), a.outcome.as_str().to_string());
        *by_class.entry(key).or_default() += a.urls as f64;
    }
    for s in later.iter().filter(|s| s.name == "indexq_attempts_total") {
        let key = (s.labels["engine"].clone(), s.labels["class"].clone());
        assert_eq!(s.value, by_class.get(&key).copied().unwrap_or(0.0), "{s:?}");
    }
    // Apart from the clock, the file holds what `status --format prometheus` prints.
    let timeless = |series: &[Series]| -> Vec<Series> {
        let clocked = ["indexq_budget_window_reset_seconds", "indexq_metrics_timestamp_seconds"];
        series.iter().filter(|s| !clocked.contains(&s.name.as_str())).cloned().collect()
    };
    assert_eq!(timeless(&series), timeless(&later));
}

/// `group`'s labels and `more`.
fn with<'a>(group: &[(&'a str, &'a str)], more: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    group.iter().chain(more).copied().collect()
}

fn labels_are(s: &Series, labels: &[(&str, &str)]) -> bool {
    labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
}

#[test]
fn four_days_of_metrics_hold_every_series_with_its_value() {
    let sb = scenario::sandbox();
    let text = four_days_with_metrics(&sb);
    check_four_days(&sb, &text);
    // Nothing but the file in its directory, readable by a collector (written whole:
    // the_metrics_file_is_replaced_whole_and_a_reader_never_sees_part_of_it).
    let dir = sb.dir.path().join("textfile");
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["indexq.prom"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.join("indexq.prom")).unwrap().permissions().mode();
        assert_eq!(mode & 0o444, 0o444, "readable by the collector's user: {mode:o}");
    }
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start), and promtool; .ci/run runs it"]
fn pg_four_days_of_metrics_hold_every_series_with_its_value() {
    let server = pg::server();
    let mut sb = scenario::sandbox();
    sb.use_pg(server.ledger());
    let text = four_days_with_metrics(&sb);
    accepted_by_promtool(&text);
    check_four_days(&sb, &text);
    pg::assert_no_sqlite(&sb, &[]);
}

#[test]
fn a_new_ledger_has_every_family_and_no_run() {
    let sb = Sandbox::new();
    let text = sb.indexq(&["status", "--format", "prometheus"]).now(DAYS[0]).output().code(0).stdout;
    let series = parse(&text);
    for family in [
        "indexq_budget_used_urls",
        "indexq_budget_window_reset_timestamp_seconds",
        "indexq_budget_window_reset_seconds",
        "indexq_queue_items",
        "indexq_attempts_total",
        "indexq_google_inspections_total",
        "indexq_sitemap_problems",
        "indexq_source_problems",
        "indexq_last_run_start_timestamp_seconds",
        "indexq_last_run_duration_seconds",
        "indexq_last_run_exit_code",
        "indexq_last_success_timestamp_seconds",
        "indexq_metrics_timestamp_seconds",
    ] {
        assert!(text.contains(&format!("# TYPE {family} ")), "{family} announced:\n{text}");
    }
    assert!(!series.iter().any(|s| s.name.starts_with("indexq_last_")), "no run yet:\n{text}");
    assert_eq!(series.iter().filter(|s| s.name == "indexq_attempts_total").count(), 5, "every class from 0");
    assert!(!series.iter().any(|s| s.name == "indexq_google_inspections_total"), "nothing inspects:\n{text}");
    // No limit configured: no limit series.
    assert!(!series.iter().any(|s| s.name == "indexq_budget_limit_urls"), "{text}");
    // One format at a time.
    let done = sb.indexq(&["--json", "status", "--format", "prometheus"]).now(DAYS[0]).output().code(2);
    assert!(done.stderr.contains("--json"), "{}", done.stderr);
    sb.indexq(&["status", "--format", "json"]).now(DAYS[0]).output().code(0).json();
    sb.indexq(&["--json", "status", "--format", "json"]).now(DAYS[0]).output().code(0).json();
    sb.indexq(&["submit", "--dry-run", "--metrics-file", "m.prom"]).now(DAYS[0]).output().code(2);
}

/// A metrics file in a folder where no file can be made — as node_exporter's
/// textfile folder is under a systemd unit with `ProtectSystem=strict` and
/// no `ReadWritePaths=` for it — is refused before anything is read or sent
/// (exit 2, naming the path and the folder), not after the run sent its
/// URLs. `/proc/version` is one, root or not: a regular file, in procfs.
#[test]
#[cfg(target_os = "linux")]
fn a_metrics_file_in_a_folder_no_file_can_be_made_in_is_refused_before_anything_is_sent() {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a"]);
    let done =
        sb.indexq(&["submit", "--metrics-file", "/proc/version", list.to_str().unwrap()]).now(DAYS[0]).output().code(2);
    assert!(done.stderr.contains("--metrics-file /proc/version"), "names the path:\n{}", done.stderr);
    assert!(done.stderr.contains("no file can be made in the folder /proc"), "says why:\n{}", done.stderr);
    assert!(done.stderr.contains("ReadWritePaths="), "the hint names the unit's setting:\n{}", done.stderr);
    assert!(done.stdout.is_empty(), "no report: {}", done.stdout);
    assert!(sb.received_urls().is_empty(), "nothing sent");
    // Nothing was read either, and the run is not recorded as one.
    let queue = sb.indexq(&["--json", "queue", "list"]).now(DAYS[0]).output().code(0).json();
    assert!(queue["items"].as_array().unwrap().is_empty(), "{queue:#}");
    let series = parse(&sb.indexq(&["status", "--format", "prometheus"]).now(DAYS[0]).output().code(0).stdout);
    assert!(!series.iter().any(|s| s.name == "indexq_last_run_exit_code"), "no run recorded");

    // The same run with a file in a folder it can write sends.
    let good = sb.dir.path().join("indexq.prom");
    sb.indexq(&["submit", "--metrics-file", good.to_str().unwrap(), list.to_str().unwrap()])
        .now(DAYS[0])
        .output()
        .code(0);
    assert_eq!(sb.received_urls(), [sb.url("/a")]);
    assert!(good.is_file());
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

fn is_char_device(path: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).unwrap().file_type().is_char_device()
}

/// `--metrics-file` is replaced by a rename at the end of the run: a device,
/// a FIFO (or a link to one), a directory or a path in a folder that does
/// not exist is refused before anything is read or sent (exit 2), and
/// stays what it was. As root, `/dev/full` too (a rename there would replace
/// the device node).
#[test]
fn a_metrics_file_that_is_no_regular_file_or_in_a_missing_folder_is_refused_before_anything_is_sent() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 1".into();
    sb.write_config();
    // One URL goes, one waits for tomorrow's budget.
    let first = sb.urls("first.txt", &["/a", "/b"]);
    sb.indexq(&["submit", first.to_str().unwrap()]).now(DAYS[0]).output().code(0);
    assert_eq!(sb.received_urls(), [sb.url("/a")]);

    let fifo = sb.dir.path().join("indexq.fifo");
    mkfifo(&fifo);
    let link = sb.dir.path().join("link.prom");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let folder = sb.dir.path().join("metrics-dir");
    std::fs::create_dir(&folder).unwrap();
    let missing = sb.dir.path().join("no-such-dir").join("indexq.prom");
    let root = unsafe { libc::geteuid() } == 0;
    let mut targets: Vec<(String, &str)> = vec![
        (fifo.display().to_string(), "FIFO"),
        ("/dev/null".into(), "character device"),
        (link.display().to_string(), "symbolic link to a FIFO"),
        (folder.display().to_string(), "directory"),
        (missing.display().to_string(), "does not exist (indexq does not create it)"),
    ];
    if root {
        targets.push(("/dev/full".into(), "character device"));
    }
    let list = sb.urls("second.txt", &["/c"]);
    for (target, why) in &targets {
        // Tomorrow: /b is due, and the list has /c.
        let done =
            sb.indexq(&["submit", "--metrics-file", target, list.to_str().unwrap()]).now(DAYS[1]).output().code(2);
        assert!(done.stderr.contains(&format!("--metrics-file {target}")), "names the path:\n{}", done.stderr);
        assert!(done.stderr.contains(why), "says why ({why}):\n{}", done.stderr);
        assert!(done.stderr.contains("hint:"), "{}", done.stderr);
        assert!(done.stdout.is_empty(), "no report: {}", done.stdout);
        assert_eq!(sb.engine.requests_to("POST", ENDPOINT_PATH).len(), 1, "nothing sent for {target}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO stays");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays");
    assert!(std::fs::metadata(&folder).unwrap().is_dir() && std::fs::read_dir(&folder).unwrap().next().is_none());
    assert!(!missing.parent().unwrap().exists(), "the folder is not made");
    assert!(is_char_device("/dev/null"), "/dev/null stays a device");
    if root {
        assert!(is_char_device("/dev/full"), "/dev/full stays a device");
    }
    // Nothing was read: /c is not in the ledger, and /b still waits.
    let queue = sb.indexq(&["--json", "queue", "list"]).now(DAYS[1]).output().code(0).json();
    let urls: Vec<&str> = queue["items"].as_array().unwrap().iter().map(|i| i["url"].as_str().unwrap()).collect();
    assert!(!urls.contains(&sb.url("/c").as_str()), "{queue:#}");
    assert!(urls.contains(&sb.url("/b").as_str()), "{queue:#}");

    // With a file it can write, the same run sends (what the day's budget allows).
    let good = sb.dir.path().join("indexq.prom");
    sb.indexq(&["submit", "--metrics-file", good.to_str().unwrap(), list.to_str().unwrap()])
        .now(DAYS[1])
        .output()
        .code(0);
    assert_eq!(sb.engine.requests_to("POST", ENDPOINT_PATH).len(), 2);
    assert!(good.is_file());
}

/// `--metrics-file` is replaced whole, never written in place: after each
/// run the path names a new file (a new inode, renamed over the old one),
/// a hard link made to the old file still holds the old text whole, no
/// temporary file is left beside it, and a reader polling the path all
/// along — the text is large: 300 properties — only ever reads a whole
/// text, the old or the new, never a missing, empty or cut one.
#[test]
#[cfg(unix)]
fn the_metrics_file_is_replaced_whole_and_a_reader_never_sees_part_of_it() {
    use std::os::unix::fs::MetadataExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let mut sb = Sandbox::new();
    for i in 0..300 {
        sb.more_properties.push_str(&format!(
            "\n[[property]]\nname = \"property-{i}\"\nsite = \"https://p{i}.example/\"\n\
             indexnow = {{ key_env = \"INDEXNOW_KEY\", daily_quota = {} }}\n",
            100 + i
        ));
    }
    sb.write_config();
    let dir = sb.dir.path().join("textfile");
    std::fs::create_dir(&dir).unwrap();
    let file = dir.join("indexq.prom");
    let run = |at: &str| {
        sb.indexq(&["-q", "submit", "--metrics-file", file.to_str().unwrap()]).now(at).output().code(0);
        std::fs::read_to_string(&file).unwrap()
    };
    let first = run(DAYS[0]);
    assert!(first.len() > 200_000, "a large text: {} bytes", first.len());
    let series = parse(&first);
    assert!(series.iter().any(|s| s.labels.get("property").is_some_and(|p| p == "property-299")));
    // Whole: it begins and ends as every text does (the families come in
    // one order, the last a line that is in the text once): a file written
    // in place shows a reader an empty or cut text, a prefix of the new one.
    let (first_line, last_line) = (first.lines().next().unwrap(), first.lines().last().unwrap());
    assert_eq!(first.matches(last_line).count(), 1, "{last_line}");
    let (head, tail) = (format!("{first_line}\n"), format!("\n{last_line}\n"));
    let whole = move |text: &str| text.starts_with(&head) && text.ends_with(&tail);

    // A reader polls the path while the next runs replace the file.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, file) = (stop.clone(), file.clone());
        std::thread::spawn(move || {
            let (mut reads, mut broken) = (0u64, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                match std::fs::read_to_string(&file) {
                    Ok(text) if whole(&text) => {}
                    Ok(text) => {
                        broken.push(format!("{} bytes: …{}", text.len(), &text[text.len().saturating_sub(80)..]))
                    }
                    Err(e) => broken.push(format!("unreadable: {e}")),
                }
                reads += 1;
            }
            (reads, broken)
        })
    };
    let linked = sb.dir.path().join("linked.prom");
    let mut before = first;
    for at in &DAYS[1..] {
        let _ = std::fs::remove_file(&linked);
        std::fs::hard_link(&file, &linked).unwrap();
        let inode = std::fs::metadata(&file).unwrap().ino();
        let after = run(at);
        assert_ne!(after, before, "the text changed ({at}: its timestamps)");
        assert_ne!(std::fs::metadata(&file).unwrap().ino(), inode, "{at}: a new file, renamed over the path");
        assert_eq!(std::fs::read_to_string(&linked).unwrap(), before, "{at}: the old file was not written into");
        assert_eq!(names_under(&dir), ["indexq.prom"], "{at}: no temporary file left");
        parse(&after);
        before = after;
    }
    stop.store(true, Ordering::Relaxed);
    let (reads, broken) = reader.join().unwrap();
    assert!(reads > 10, "the reader read the file {reads} times");
    assert!(
        broken.is_empty(),
        "{} of {reads} reads saw part of a file: {:#?}",
        broken.len(),
        &broken[..broken.len().min(5)]
    );
}

/// `indexq_attempts_total` is a counter: it never goes down. `queue drop`
/// removes items, not history — after it every class counts what it
/// counted (`log` still lists the attempts, with the URL each was about,
/// said to be dropped), and a dropped URL submitted again counts on.
#[test]
fn attempt_counters_never_go_down_across_queue_drop() {
    let sb = Sandbox::new();
    let not_on_host = mock::MockResponse::status(422).body("the URLs do not belong to the host");
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![
            mock::MockResponse::status(200),
            mock::MockResponse::status(503),
            not_on_host,
            mock::MockResponse::status(200),
        ],
    );
    // /a and /b accepted; /c transient; /c again with /d: misconfigured (parked).
    for (at, paths, code) in [("09:00", &["/a", "/b"][..], 0), ("10:00", &["/c"], 0), ("11:00", &["/d"], 3)] {
        let list = sb.urls("urls.txt", paths);
        let at = format!("2026-12-03T{at}:00Z");
        sb.indexq(&["submit", "--max-wait", "0", list.to_str().unwrap()]).now(&at).output().code(code);
    }
    let at = "2026-12-03T12:00:00Z";
    let counters = || -> Vec<(String, f64)> {
        let text = sb.indexq(&["status", "--format", "prometheus"]).now(at).output().code(0).stdout;
        parse(&text)
            .into_iter()
            .filter(|s| s.name == "indexq_attempts_total")
            .map(|s| (s.labels["class"].clone(), s.value))
            .collect()
    };
    let expected = |accepted: f64| {
        [("accepted", accepted), ("quota", 0.0), ("transient", 1.0), ("key_pending", 0.0), ("misconfigured", 2.0)]
            .map(|(c, v)| (c.to_string(), v))
            .to_vec()
    };
    assert_eq!(counters(), expected(2.0));
    let log = |args: &[&str]| sb.indexq(&[&["--json", "log"], args].concat()).now(at).output().code(0).log_doc();
    let before = log(&[]);
    assert_eq!(before.attempts.len(), 3);

    // The parked (/c, /d), then everything else.
    let dropped = sb.indexq(&["--json", "queue", "drop", "--state", "parked"]).now(at).output().code(0);
    assert_eq!(dropped.queue_drop_doc().dropped, 2);
    assert_eq!(counters(), expected(2.0), "after dropping the parked items");
    let dropped = sb.indexq(&["--json", "queue", "drop", "--all"]).now(at).output().code(0);
    assert_eq!(dropped.queue_drop_doc().dropped, 2);
    assert_eq!(counters(), expected(2.0), "after dropping every item");

    // `log` lists every attempt still, with the URL it was about.
    let after = log(&[]);
    let shown = |doc: &json::Log| -> Vec<(String, u64, String)> {
        doc.attempts.iter().map(|a| (a.url.clone(), a.urls, a.outcome.as_str().to_string())).collect()
    };
    assert_eq!(shown(&after), shown(&before));
    assert!(after.attempts.iter().all(|a| a.dropped), "{:#?}", after.attempts);
    assert!(before.attempts.iter().all(|a| !a.dropped));
    let c = log(&["--url", &sb.url("/c")]);
    assert_eq!(c.attempts.iter().map(|a| a.outcome.as_str()).collect::<Vec<_>>(), ["transient", "misconfigured"]);
    let text = sb.indexq(&["log", "--url", &sb.url("/c")]).now(at).output().code(0).stdout;
    assert!(text.contains(&format!("{} (dropped)", sb.url("/c"))), "{text}");
    let status = sb.indexq(&["--json", "status"]).now(at).output().code(0).status_doc();
    let rejection = status.groups[0].last_rejection.clone().expect("the last rejection is kept");
    assert_eq!((rejection.url, rejection.outcome.as_str()), (sb.url("/c"), "misconfigured"));

    // /c again: a new item, and its attempt counts on.
    let list = sb.urls("urls.txt", &["/c"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T13:00:00Z").output().code(0);
    assert_eq!(counters(), expected(3.0));
    let c = log(&["--url", &sb.url("/c")]);
    let seen: Vec<(&str, bool)> = c.attempts.iter().map(|a| (a.outcome.as_str(), a.dropped)).collect();
    assert_eq!(seen, [("transient", true), ("misconfigured", true), ("accepted", false)]);
}

/// A run that loses its database mid-run still leaves its metrics: the run
/// families, exit code 1 (nothing read from a ledger it cannot reach).
#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start), and promtool; .ci/run runs it"]
fn pg_a_run_that_loses_its_database_still_writes_the_run_metrics() {
    let server = pg::server();
    let mut sb = Sandbox::new();
    // The request is slow: the server goes away while it is in flight.
    sb.engine.on("POST", ENDPOINT_PATH, vec![mock::MockResponse::status(200).delay(Duration::from_millis(1500))]);
    let mut proxy = pg::PgProxy::new(server.addr());
    sb.use_pg(server.ledger().via(&server.url_via(proxy.addr())).timeout("3s"));
    let file = sb.dir.path().join("indexq.prom");
    let list = sb.urls("urls.txt", &["/a"]);
    // It may wait 2 s for the ledger to come back (`--max-wait`); it stays away.
    let child = sb
        .indexq(&["submit", "--max-wait", "2s", "--metrics-file", file.to_str().unwrap(), list.to_str().unwrap()])
        .now(DAYS[0])
        .spawn();
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, Duration::from_secs(20)), "the request is sent");
    proxy.stop();
    let done = pg::wait_at_most(child, Duration::from_secs(30), "the run that lost its database").code(1);
    assert!(done.stderr.contains("cannot be reached"), "{}", done.stderr);
    let text = std::fs::read_to_string(&file).unwrap();
    accepted_by_promtool(&text);
    let series = parse(&text);
    assert_eq!(value(&series, "indexq_last_run_exit_code", &[]), 1.0);
    assert!(!series.iter().any(|s| s.name == "indexq_queue_items"), "nothing read from a lost ledger:\n{text}");
    assert!(!series.iter().any(|s| s.name == "indexq_last_success_timestamp_seconds"), "{text}");
}

// ---------------------------------------------------------------------------
// promtool: the text, and the alert rules of examples/.

/// Prometheus's parser accepts every text the other tests read: a new
/// ledger's, the four days' file and `status --format prometheus` after them.
#[test]
#[ignore = "needs promtool (Debian's prometheus package); .ci/run runs it"]
fn promtool_accepts_the_metrics_text() {
    let sb = Sandbox::new();
    accepted_by_promtool(&sb.indexq(&["status", "--format", "prometheus"]).now(DAYS[0]).output().code(0).stdout);
    let sb = scenario::sandbox();
    accepted_by_promtool(&four_days_with_metrics(&sb));
    accepted_by_promtool(&sb.indexq(&["status", "--format", "prometheus"]).now(AFTER).output().code(0).stdout);
    // Google URL inspections by class: every class from 0, the refusals counted.
    let sb = Sandbox::google("skip_indexed = true");
    sb.engine.on(
        "POST",
        GOOGLE_INSPECT,
        vec![mock::MockResponse::status(403).json(r#"{"error":{"code":403,"message":"You do not own this site, or the inspected URL is not part of this property.","status":"PERMISSION_DENIED"}}"#)],
    );
    let urls = sb.urls("urls.txt", &["/a"]);
    let file = sb.dir.path().join("google.prom");
    let metrics_file = file.to_str().unwrap();
    // A refused inspection needs a human: said, exit 3 (the URL is published all the same).
    sb.indexq(&["submit", "--metrics-file", metrics_file, urls.to_str().unwrap()]).now(DAYS[0]).output().code(3);
    let text = std::fs::read_to_string(&file).unwrap();
    let series = parse(&text);
    let inspections =
        |class| value(&series, "indexq_google_inspections_total", &[("property", "site"), ("class", class)]);
    assert_eq!((inspections("misconfigured"), inspections("accepted")), (1.0, 0.0), "{text}");
    accepted_by_promtool(&text);
}

#[test]
#[ignore = "needs promtool (Debian's prometheus package); .ci/run runs it"]
fn the_alert_rules_are_valid_and_fire_when_they_should() {
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/prometheus-alerts.yml");
    let text = std::fs::read_to_string(&rules).unwrap();
    assert!(text.contains("indexq_queue_items") && text.contains("indexq_last_success_timestamp_seconds"));
    let check = Command::new("promtool").args(["check", "rules"]).arg(&rules).output();
    let check = check.unwrap_or_else(|e| panic!("this test needs promtool (Debian's prometheus package): {e}"));
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // promtool's rule unit tests: parked items alert after 15 minutes; a run
    // that has not succeeded for a day alerts (and one that has, not).
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&rules, dir.path().join("rules.yml")).unwrap();
    let tests = r#"
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'indexq_queue_items{property="site",engine="bing",endpoint="",state="parked",instance="h",job="node"}'
        values: '0 2x60'
      - series: 'indexq_last_success_timestamp_seconds{instance="h",job="node"}'
        values: '0x100'
    alert_rule_test:
      - eval_time: 10m
        alertname: IndexqParkedItems
        exp_alerts: []
      - eval_time: 30m
        alertname: IndexqParkedItems
        exp_alerts:
          - exp_labels: {severity: warning, property: site, engine: bing, instance: h, job: node, state: parked}
            exp_annotations:
              summary: "2 URLs parked for site (bing): they wait for a human"
              description: "Run `indexq queue list --state parked --property site` to see why and the fix; `indexq queue retry` once it is fixed."
  - interval: 1h
    input_series:
      - series: 'indexq_last_success_timestamp_seconds{instance="h",job="node"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 20h
        alertname: IndexqNoSuccessfulRun
        exp_alerts: []
      - eval_time: 26h
        alertname: IndexqNoSuccessfulRun
        exp_alerts:
          - exp_labels: {severity: warning, instance: h, job: node}
            exp_annotations:
              summary: "No indexq submit run has succeeded for 1d 2h 0m 0s"
              description: "Check the last run's exit code (indexq_last_run_exit_code) and its output, e.g. `journalctl -u indexq`."
"#;
    std::fs::write(dir.path().join("tests.yml"), tests).unwrap();
    let out = Command::new("promtool").args(["test", "rules", "tests.yml"]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
