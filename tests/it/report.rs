//! `indexq report --html`: after four scripted days, one self-contained
//! file (no script, nothing fetched, no secret) whose numbers — read back
//! from its `data-*` attributes — are those of `status --json` and `log
//! --json` for the same ledger, on SQLite and PostgreSQL, and whose charts
//! draw them: each SVG bar's height, by the grid's labelled scale, is its
//! day's count; parked items come with their reason and fix.

use crate::support::pg;
use crate::support::scenario::{self, AFTER, DAYS};
use crate::support::*;
use std::collections::BTreeMap;

/// The attributes of every start tag `<NAME ...>` in `html` that has `marker`
/// among its attributes, in order (values unescaped).
fn tags(html: &str, name: &str, marker: &str) -> Vec<BTreeMap<String, String>> {
    let open = format!("<{name} ");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&open) {
        let tag = &rest[at + open.len()..];
        let end = tag.find('>').unwrap();
        let attrs = attributes(&tag[..end]);
        if attrs.contains_key(marker) {
            out.push(attrs);
        }
        rest = &tag[end..];
    }
    out
}

/// `a="x" b="y"` → {a: x, b: y}.
fn attributes(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text.trim();
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].trim().to_string();
        let value_end = rest[eq + 2..].find('"').unwrap();
        let value = &rest[eq + 2..eq + 2 + value_end];
        let value = value
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&");
        out.insert(key, value);
        rest = rest[eq + 2 + value_end + 1..].trim_start();
    }
    out
}

/// The HTML of each group's section, by (property, engine, endpoint).
fn sections(html: &str) -> BTreeMap<(String, String, String), String> {
    let mut out = BTreeMap::new();
    for (i, part) in html.split("<section class=\"group\" ").enumerate().skip(1) {
        let end = part.find("</section>").unwrap_or_else(|| panic!("section {i} is not closed"));
        let body = &part[..end];
        let attrs = attributes(&body[..body.find('>').unwrap()]);
        out.insert(
            (attrs["data-property"].clone(), attrs["data-engine"].clone(), attrs["data-endpoint"].clone()),
            body.to_string(),
        );
    }
    out
}

fn n(attrs: &BTreeMap<String, String>, key: &str) -> Option<u64> {
    attrs.get(key).map(|v| v.parse().unwrap_or_else(|_| panic!("{key}={v}")))
}

/// One chart of a group's section, as drawn: its grid lines (the value
/// each is labelled with, and its height), its bars and the limit's steps.
#[derive(Debug)]
struct Chart {
    /// (value, y), from the labels beside the grid lines.
    ticks: Vec<(f64, f64)>,
    bars: Vec<Bar>,
    /// The limit's dashed steps: (x from, x to, y).
    limit: Vec<(f64, f64, f64)>,
}

#[derive(Debug)]
struct Bar {
    class: String,
    x: f64,
    y: f64,
    height: f64,
}

/// The section's charts (`<svg>`), in order: the budget, then the answers.
fn charts(section: &str) -> Vec<Chart> {
    let f = |attrs: &BTreeMap<String, String>, key: &str| -> f64 {
        attrs[key].parse().unwrap_or_else(|_| panic!("{key}={}", attrs[key]))
    };
    let mut out = Vec::new();
    for part in section.split("<svg ").skip(1) {
        let svg = &part[..part.find("</svg>").expect("the chart is closed")];
        // Each grid line is followed by its label: `<text …>VALUE</text>`.
        let mut ticks = Vec::new();
        for (at, _) in svg.match_indices("<line class=\"grid\"") {
            let line = attributes(&svg[at + 6..at + svg[at..].find("/>").unwrap()]);
            let label = &svg[at..];
            let label = &label[label.find("<text").unwrap()..];
            let text = &label[label.find('>').unwrap() + 1..label.find("</text>").unwrap()];
            assert_eq!(line["y1"], line["y2"], "a level grid line");
            ticks.push((text.parse::<f64>().unwrap_or_else(|_| panic!("a grid label: {text}")), f(&line, "y1")));
        }
        let bars = tags(svg, "rect", "height")
            .iter()
            .map(|r| Bar { class: r["class"].clone(), x: f(r, "x"), y: f(r, "y"), height: f(r, "height") })
            .collect();
        let mut limit = Vec::new();
        if let Some(path) = tags(svg, "path", "d").first() {
            assert_eq!(path["class"], "limit");
            for step in path["d"].split('M').skip(1) {
                let (from, rest) = step.split_once(' ').unwrap();
                let (y, to) = rest.split_once('H').unwrap();
                limit.push((from.parse().unwrap(), to.parse().unwrap(), y.parse().unwrap()));
            }
        }
        out.push(Chart { ticks, bars, limit });
    }
    out
}

impl Chart {
    /// The y of the value 0 (the bars stand on it).
    fn baseline(&self) -> f64 {
        self.ticks.iter().find(|(v, _)| *v == 0.0).expect("a grid line at 0").1
    }

    /// The value a height stands for, by the grid's scale (its top line).
    fn value(&self, height: f64) -> f64 {
        let (top, y) = self.ticks.iter().copied().fold((0.0, 0.0), |a, t| if t.0 > a.0 { t } else { a });
        assert!(top > 0.0, "a grid line above 0: {:?}", self.ticks);
        height * top / (self.baseline() - y)
    }

    /// `value`, as the whole number it must be (the heights are drawn to 0.1).
    fn count(&self, height: f64) -> u64 {
        let v = self.value(height);
        assert!((v - v.round()).abs() < 0.05, "a bar of {height} stands for {v}");
        v.round() as u64
    }
}

/// The group's charts read back, day by day (`days`: the table's rows,
/// today first): the budget chart has a bar per day, oldest on the left, as
/// high as the day's URLs counted ("spent" when it reached the limit) and
/// the limit's step at the day's limit; the answers chart, for each day, a
/// stack of bars from the baseline up, one per class with answers, each as
/// high as its count, in the classes' order.
fn check_charts(body: &str, days: &[BTreeMap<String, String>], what: &str) {
    const CLASSES: [&str; 5] = ["accepted", "quota", "transient", "key-pending", "misconfigured"];
    let charts = charts(body);
    assert_eq!(charts.len(), 2, "{what}: a budget chart and an answers chart");
    let (budget, answers) = (&charts[0], &charts[1]);
    let oldest_first: Vec<&BTreeMap<String, String>> = days.iter().rev().collect();
    assert_eq!(budget.bars.len(), days.len(), "{what}: a bar per day");
    let mut slots: Vec<f64> = budget.bars.iter().map(|b| b.x).collect();
    assert!(slots.windows(2).all(|w| w[0] < w[1]), "{what}: the days from left to right: {slots:?}");
    for (bar, day) in budget.bars.iter().zip(&oldest_first) {
        let at = &day["data-day"];
        assert!((bar.y + bar.height - budget.baseline()).abs() < 0.2, "{what} {at}: on the baseline: {bar:?}");
        assert_eq!(Some(budget.count(bar.height)), n(day, "data-used"), "{what} {at}: the budget bar");
        let limit = n(day, "data-limit");
        let spent = limit.is_some_and(|l| l > 0 && n(day, "data-used").unwrap() >= l);
        assert_eq!(bar.class, if spent { "spent" } else { "used" }, "{what} {at}");
        // The limit's step over this day's bar, at the limit's height.
        let step = budget.limit.iter().find(|(from, to, _)| *from <= bar.x && bar.x < *to);
        let drawn = step.map(|(_, _, y)| budget.count(budget.baseline() - y));
        assert_eq!(drawn, limit, "{what} {at}: the limit's step");
    }
    assert_eq!(budget.limit.len(), days.iter().filter(|d| d.contains_key("data-limit")).count(), "{what}");

    slots.iter_mut().for_each(|x| *x = (*x * 10.0).round());
    let mut seen = 0;
    for (slot, day) in slots.iter().zip(&oldest_first) {
        let at = &day["data-day"];
        let stack: Vec<&Bar> = answers.bars.iter().filter(|b| (b.x * 10.0).round() == *slot).collect();
        seen += stack.len();
        let mut bottom = answers.baseline();
        let mut drawn = Vec::new();
        for bar in &stack {
            assert!((bar.y + bar.height - bottom).abs() < 0.2, "{what} {at}: stacked: {stack:?}");
            bottom = bar.y;
            drawn.push((bar.class.as_str(), answers.count(bar.height)));
        }
        let expected: Vec<(&str, u64)> = CLASSES
            .iter()
            .map(|c| (*c, n(day, &format!("data-{c}")).unwrap()))
            .filter(|(_, count)| *count > 0)
            .collect();
        assert_eq!(drawn, expected, "{what} {at}: the answers' bars");
    }
    assert_eq!(seen, answers.bars.len(), "{what}: every answer bar stands on a day");
}

/// The file holds everything: no script, no stylesheet, font or image from
/// anywhere, no secret. (Text is escaped, so every `<` opens a real tag.)
fn assert_self_contained(html: &str) {
    for tag in html.split('<').skip(1).map(|t| &t[..t.find('>').unwrap_or(t.len())]) {
        let name = tag.split([' ', '\n']).next().unwrap().to_ascii_lowercase();
        for element in ["script", "link", "img", "iframe", "object", "embed", "image", "use", "foreignobject"] {
            assert_ne!(name, element, "the report has a <{element}>");
        }
        let attrs = attributes(tag.split_once(' ').map_or("", |(_, a)| a));
        for attr in ["src", "href", "xlink:href", "srcset", "action"] {
            assert!(!attrs.contains_key(attr), "the report has {attr}= in <{tag}>");
        }
        assert!(!attrs.keys().any(|k| k.starts_with("on")), "an event handler in <{tag}>");
    }
    let style = &html[html.find("<style>").unwrap()..html.find("</style>").unwrap()];
    for needle in ["url(", "@import", "@font-face"] {
        assert!(!style.contains(needle), "the style has `{needle}`");
    }
    assert!(html.contains("Content-Security-Policy"), "the browser is told to fetch nothing");
    assert_no_secret(html.as_bytes(), "the report");
}

fn day_key(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at).unwrap().with_timezone(&chrono::Utc).format("%Y-%m-%d").to_string()
}

fn check_four_days(sb: &Sandbox) {
    scenario::four_days(sb, &[]);
    let file = sb.dir.path().join("report").join("indexq.html");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let done = sb.indexq(&["report", "--html", file.to_str().unwrap(), "--days", "7"]).now(AFTER).output().code(0);
    assert!(done.stderr.contains("URLs parked"), "{}", done.stderr);
    let html = std::fs::read_to_string(&file).unwrap();
    assert_self_contained(&html);
    let status = sb.indexq(&["--json", "status"]).now(AFTER).output().code(0).status_doc();
    let log = sb.indexq(&["--json", "log", "--limit", "100000"]).now(AFTER).output().code(0).log_doc();
    let sections = sections(&html);
    assert_eq!(sections.len(), status.groups.len(), "a section per group");

    // Attempts by group, day (the groups' rules are in UTC) and class, as `log --json` has them.
    let mut logged: BTreeMap<(String, String, String, String), u64> = BTreeMap::new();
    for a in &log.attempts {
        let key = (
            a.engine.as_str().to_string(),
            a.endpoint.clone().unwrap_or_default(),
            day_key(&a.at),
            a.outcome.as_str().replace('_', "-"),
        );
        // A request of `urls` URLs is an attempt of each.
        *logged.entry(key).or_default() += a.urls;
    }
    assert_eq!(logged.values().sum::<u64>(), 12 + 8, "every attempt of the four days is in the log");

    for g in &status.groups {
        let (property, engine) = (g.property.as_str(), g.engine.as_str());
        let endpoint = g.endpoint.as_deref().unwrap_or("");
        let body = &sections[&(property.to_string(), engine.to_string(), endpoint.to_string())];

        // Seven days, oldest last in the table; each day's answers are the log's.
        let days = tags(body, "tr", "data-day");
        assert_eq!(days.len(), 7, "{engine}");
        assert_eq!(days[0]["data-day"], day_key(AFTER), "today first");
        // The charts draw the table's numbers.
        check_charts(body, &days, engine);
        for day in &days {
            for class in ["accepted", "quota", "transient", "key-pending", "misconfigured"] {
                let key = (engine.to_string(), endpoint.to_string(), day["data-day"].clone(), class.to_string());
                assert_eq!(
                    n(day, &format!("data-{class}")),
                    Some(logged.get(&key).copied().unwrap_or(0)),
                    "{engine} {} {class}",
                    day["data-day"]
                );
            }
        }
        // The budget now: each rule as `status --json` shows it, and today's bar.
        let budgets: Vec<&json::Budget> = status
            .budgets
            .iter()
            .filter(|b| {
                b.property == property && b.engine == g.engine && b.endpoint.as_deref().unwrap_or("") == endpoint
            })
            .collect();
        let rules = tags(body, "tr", "data-rule");
        assert_eq!(rules.len(), budgets.len());
        for (rule, b) in rules.iter().zip(&budgets) {
            assert_eq!(rule["data-rule"], b.rule);
            assert_eq!(rule["data-window"], b.window);
            assert_eq!(n(rule, "data-used"), Some(b.used), "{b:?}");
            assert_eq!(n(rule, "data-limit"), b.limit, "{b:?}");
            assert_eq!(n(rule, "data-remaining"), b.remaining, "{b:?}");
            let resets = chrono::DateTime::parse_from_rfc3339(&b.resets_at).unwrap().timestamp();
            assert_eq!(n(rule, "data-resets-at"), Some(resets as u64));
        }
        let own: Vec<&&json::Budget> =
            budgets.iter().filter(|b| b.scope == json::Scope::Property && b.period == json::Period::Day).collect();
        assert_eq!(n(&days[0], "data-used"), own.iter().map(|b| b.used).max(), "{engine} today");
        assert_eq!(n(&days[0], "data-limit"), own.iter().filter_map(|b| b.limit).min(), "{engine} today");
        // The queue, as `status --json` counts it.
        let queue = &tags(body, "ul", "data-due")[0];
        for (attr, field) in [
            ("data-due", "due"),
            ("data-waiting", "waiting"),
            ("data-parked", "parked"),
            ("data-in-flight", "in_flight"),
            ("data-accepted", "accepted"),
        ] {
            assert_eq!(n(queue, attr), Some(g.queue.get(field)), "{engine} {field}");
        }
    }

    // The days as the scenario made them.
    let endpoint = sb.endpoints[0].clone();
    let indexnow = tags(&sections[&("site".into(), "indexnow".into(), endpoint.clone())], "tr", "data-day");
    let by_day = |rows: &[BTreeMap<String, String>], at: &str| {
        rows.iter().find(|d| d["data-day"] == day_key(at)).unwrap().clone()
    };
    // The 429's 3 were not counted by the engine: given back, its day shows none used.
    for (at, (class, used)) in DAYS.iter().zip([("accepted", 3), ("quota", 0), ("transient", 3), ("misconfigured", 3)])
    {
        let day = by_day(&indexnow, at);
        assert_eq!((n(&day, "data-used"), n(&day, "data-limit")), (Some(used), Some(3)), "{at}");
        assert_eq!(n(&day, &format!("data-{class}")), Some(3), "{at}");
    }
    let bing = tags(&sections[&("site".into(), "bing".into(), String::new())], "tr", "data-day");
    let used: Vec<Option<u64>> = DAYS.iter().map(|at| n(&by_day(&bing, at), "data-used")).collect();
    assert_eq!(used, [Some(5), Some(2), Some(0), Some(1)]);

    // Parked now: by reason, with the fix, as many as `status` counts.
    let parked = tags(&html, "tr", "data-reason");
    let reasons: Vec<(&str, &str, Option<u64>)> =
        parked.iter().map(|p| (p["data-engine"].as_str(), p["data-reason"].as_str(), n(p, "data-count"))).collect();
    assert_eq!(reasons, [("indexnow", "url_not_on_host", Some(3)), ("bing", "NotAuthorized", Some(2))]);
    assert!(html.contains("Submit only URLs under the property&#39;s host"), "IndexNow's fix");
    assert!(html.contains("in Bing Webmaster Tools"), "Bing's fix");
    let total: u64 = status.groups.iter().map(|g| g.queue.parked).sum();
    assert_eq!(n(&tags(&html, "div", "data-parked")[0], "data-parked"), Some(total));
    assert_eq!(n(&tags(&html, "div", "data-last-run-exit-code")[0], "data-last-run-exit-code"), Some(3));
}

#[test]
fn four_days_in_the_report_are_the_numbers_of_status_and_log() {
    let sb = scenario::sandbox();
    check_four_days(&sb);
    // To stdout with `-`; fewer days; `--json` says where it went.
    let page = sb.indexq(&["report", "--html", "-", "--days", "2"]).now(AFTER).output().code(0).stdout;
    assert!(page.starts_with("<!doctype html>"), "{}", &page[..100.min(page.len())]);
    assert_eq!(tags(&page, "tr", "data-day").len(), 2 * 2);
    let doc = sb.indexq(&["--json", "report", "--html", "r.html"]).now(AFTER).output().code(0).report_doc();
    assert_eq!(
        (doc.html.as_str(), doc.days, doc.parked, doc.now.as_str()),
        ("r.html", 30, 5, "2026-12-04T12:00:00+00:00")
    );
    assert!(sb.dir.path().join("r.html").exists());
    sb.indexq(&["report", "--html", "r.html", "--days", "0"]).now(AFTER).output().code(2);
    sb.indexq(&["report"]).now(AFTER).output().code(2);
}

#[test]
#[ignore = "needs PostgreSQL: $INDEXQ_TEST_PG (.ci/postgres start); .ci/run runs it"]
fn pg_four_days_in_the_report_are_the_numbers_of_status_and_log() {
    let server = pg::server();
    let mut sb = scenario::sandbox();
    sb.use_pg(server.ledger());
    check_four_days(&sb);
    pg::assert_no_sqlite(&sb, &[]);
}

#[test]
fn a_new_ledger_makes_a_report_too() {
    let sb = Sandbox::new();
    let file = sb.dir.path().join("r.html");
    sb.indexq(&["report", "--html", file.to_str().unwrap()]).now(DAYS[0]).output().code(0);
    let html = std::fs::read_to_string(&file).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("no <code>indexq submit</code> run recorded yet"), "{html}");
    let days = tags(&html, "tr", "data-day");
    assert_eq!(days.len(), 30);
    assert!(days.iter().all(|d| n(d, "data-used") == Some(0) && !d.contains_key("data-limit")));
    for body in sections(&html).values() {
        check_charts(body, &tags(body, "tr", "data-day"), "a new ledger");
    }
    assert!(!html.contains("id=\"parked\""), "nothing parked, no section");
}

/// A day of several kinds of answer is one stack of bars, in the classes'
/// order, each as high as its count.
#[test]
fn a_day_of_mixed_answers_is_drawn_as_one_stack() {
    let sb = Sandbox::new();
    let not_on_host = mock::MockResponse::status(422).body("the URLs do not belong to the host");
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![mock::MockResponse::status(200), mock::MockResponse::status(503), not_on_host],
    );
    let runs = [("09:00", &["/a"][..], 0), ("10:00", &["/b"], 0), ("11:00", &["/c", "/d"], 3)];
    for (at, paths, code) in runs {
        let list = sb.urls("urls.txt", paths);
        let at = format!("2026-12-03T{at}:00Z");
        sb.indexq(&["submit", "--max-wait", "0", list.to_str().unwrap()]).now(&at).output().code(code);
    }
    let page = sb.indexq(&["report", "--html", "-", "--days", "3"]).now("2026-12-03T12:00:00Z").output().code(0).stdout;
    let body = sections(&page).into_values().next().unwrap();
    let days = tags(&body, "tr", "data-day");
    let today =
        ["accepted", "quota", "transient", "key-pending", "misconfigured"].map(|c| n(&days[0], &format!("data-{c}")));
    assert_eq!(today, [Some(1), Some(0), Some(1), Some(0), Some(3)], "/b went again with /c and /d");
    check_charts(&body, &days, "indexnow");
    let stack: Vec<String> = charts(&body)[1].bars.iter().map(|b| b.class.clone()).collect();
    assert_eq!(stack, ["accepted", "transient", "misconfigured"]);
}

/// Text from an engine goes in as text: a message with markup is escaped.
#[test]
fn answers_are_escaped() {
    let sb = Sandbox::new();
    sb.engine.on(
        "POST",
        ENDPOINT_PATH,
        vec![mock::MockResponse::status(400).body("<script>alert('x')</script><img src=http://evil.example/>")],
    );
    let list = sb.urls("urls.txt", &["/a?x=<b>&y=\"q\""]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now(DAYS[0]).output().code(3);
    let page = sb.indexq(&["report", "--html", "-"]).now(DAYS[0]).output().code(0).stdout;
    assert_self_contained(&page);
    assert_eq!(tags(&page, "tr", "data-reason")[0]["data-reason"], "bad_request");
}
