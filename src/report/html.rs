//! The report as one self-contained HTML file: inline CSS, charts as
//! hand-written inline SVG, no script, no font or image from anywhere (a
//! Content-Security-Policy says so to the browser). It reads at 1280 px
//! and on a phone (a grid that folds to one column; wide tables and charts
//! scroll sideways in their own box). The numbers are in the markup too:
//! `data-*` attributes on each group's section, its rules, its days and its
//! parked reasons, for anyone (the tests) who reads them back.

use super::{Day, GroupHistory, History, CLASSES};
use crate::clock;
use crate::model::Class;
use crate::output::printer::{group_title, when};
use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use std::fmt::Write as _;
use std::io::{self, Write};

/// What the page says about where it comes from.
pub struct Page<'a> {
    /// The ledger, as messages name it (no password).
    pub ledger: &'a str,
    pub user_tz: Tz,
}

/// `&`, `<`, `>`, `"` and `'` escaped: for text and attribute values alike.
/// A control character (an answer's ESC, but a line break or a tab) is
/// shown as human text shows it (`\u{1b}`, see `output::escape`): HTML
/// has no use for one, and `--html -` may go to a terminal.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

fn class_name(class: Class) -> &'static str {
    match class {
        Class::Accepted => "accepted",
        Class::Quota => "quota",
        Class::Transient => "transient",
        Class::KeyPending => "key-pending",
        Class::Misconfigured => "misconfigured",
    }
}

fn class_title(class: Class) -> &'static str {
    match class {
        Class::Accepted => "accepted",
        Class::Quota => "quota (waits for the window)",
        Class::Transient => "transient (retried)",
        Class::KeyPending => "key pending (retried)",
        Class::Misconfigured => "misconfigured (parked)",
    }
}

fn exit_meaning(code: u8) -> &'static str {
    match code {
        0 => "nothing needs a human",
        3 => "something needs a human",
        2 => "usage or configuration error",
        _ => "failed",
    }
}

const STYLE: &str = r#"
:root{--bg:#fff;--fg:#1c2230;--muted:#5b6577;--line:#dfe3ea;--card:#f5f7fa;--accent:#2f6fdf;--spent:#d9822b;
--accepted:#2e8b57;--quota:#e0a030;--transient:#6f8fc0;--key-pending:#9b6bc7;--misconfigured:#cf3f3f}
@media (prefers-color-scheme:dark){:root{--bg:#12151b;--fg:#e6e9ef;--muted:#9aa3b2;--line:#2c323d;--card:#1b2029;
--accent:#6a9cff;--spent:#f0a050}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:20px 16px 40px}
h1{font-size:1.6rem;margin:0 0 4px}
h2{font-size:1.25rem;margin:0 0 2px}
h3{font-size:1rem;margin:18px 0 6px}
.meta,.sub{color:var(--muted);margin:0 0 16px;font-size:.9rem;overflow-wrap:anywhere}
.sub{margin:0 0 10px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(230px,100%),1fr));gap:12px;margin:18px 0 24px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card .label{color:var(--muted);font-size:.85rem}
.card .big{font-size:1.7rem;font-weight:650;line-height:1.2}
.card .note{font-size:.85rem;color:var(--muted)}
.bad{color:var(--misconfigured)}.good{color:var(--accepted)}
section{margin:0 0 28px}
section.group{border-top:1px solid var(--line);padding-top:18px}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(440px,100%),1fr));gap:16px}
figure{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 10px 6px}
figcaption{font-size:.9rem;font-weight:600;margin:0 0 4px}
.chart{overflow-x:auto}
.chart svg{display:block;width:100%;height:auto}
svg text{fill:var(--muted);font-size:13px}
@media (max-width:600px){svg text{font-size:21px}}
svg .grid{stroke:var(--line);stroke-width:1}
svg .used{fill:var(--accent)}svg .spent{fill:var(--spent)}
svg .limit{stroke:var(--fg);stroke-width:2;stroke-dasharray:5 3;fill:none}
svg .today{font-weight:700;fill:var(--fg)}
svg .accepted,.sw.accepted{fill:var(--accepted);background:var(--accepted)}
svg .quota,.sw.quota{fill:var(--quota);background:var(--quota)}
svg .transient,.sw.transient{fill:var(--transient);background:var(--transient)}
svg .key-pending,.sw.key-pending{fill:var(--key-pending);background:var(--key-pending)}
svg .misconfigured,.sw.misconfigured{fill:var(--misconfigured);background:var(--misconfigured)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.82rem;color:var(--muted);margin:4px 2px}
.sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.sw.used{background:var(--accent)}.sw.spent{background:var(--spent)}
.sw.limit{background:none;border-top:2px dashed var(--fg);height:0;width:14px;border-radius:0;vertical-align:3px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.queue{display:flex;flex-wrap:wrap;gap:6px 18px;margin:10px 0 0;padding:0;list-style:none;font-size:.9rem}
.queue b{font-variant-numeric:tabular-nums}
.fix{border-left:3px solid var(--accepted);padding-left:8px}
.examples{color:var(--muted);font-size:.82rem;word-break:break-all}
details{margin-top:10px}summary{cursor:pointer;color:var(--muted);font-size:.9rem}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em}
footer{color:var(--muted);font-size:.8rem;border-top:1px solid var(--line);padding-top:10px}
@media (max-width:640px){
table.stack thead{display:none}
table.stack tr{display:block;border-bottom:1px solid var(--line);padding:6px 0}
table.stack td{display:block;border:none;padding:2px 0;text-align:left;overflow-wrap:anywhere}
table.stack td[data-label]::before{content:attr(data-label) ": ";color:var(--muted);font-weight:600}
.fix{border-left:none;padding-left:0}}
"#;

/// Writes the whole page.
pub fn write(history: &History, page: &Page, out: &mut impl Write) -> io::Result<()> {
    let tz = page.user_tz;
    let mut h = String::new();
    let today = clock::format_local(history.now, tz);
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>indexq report — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&today)
    );
    let _ = write!(
        h,
        "<header>\n<h1>indexq report</h1>\n<p class=\"meta\">{} · ledger <code>{}</code> · the last {} days, each in \
         its budget rule's timezone</p>\n</header>\n",
        esc(&today),
        esc(page.ledger),
        history.days
    );
    summary(&mut h, history, tz);
    parked(&mut h, history);
    for g in &history.groups {
        group(&mut h, g, history.now, tz);
    }
    stranded(&mut h, history);
    let _ = write!(
        h,
        "<footer>Made by indexq {} at {}. This file is all there is: no script, nothing fetched.</footer>\n\
         </main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&today)
    );
    out.write_all(h.as_bytes())
}

fn summary(h: &mut String, history: &History, tz: Tz) {
    let parked: u64 = history.groups.iter().map(|g| g.queue.parked).sum::<u64>()
        + history.stranded.iter().map(|(_, q)| q.parked).sum::<u64>();
    let attempted: u64 = history.groups.iter().flat_map(|g| &g.days).map(|d| d.outcomes.iter().sum::<u64>()).sum();
    let accepted: u64 = history.groups.iter().flat_map(|g| &g.days).map(|d| d.outcome(Class::Accepted)).sum();
    h.push_str("<div class=\"cards\">\n");
    let _ = writeln!(
        h,
        "<div class=\"card\" data-parked=\"{parked}\"><div class=\"label\">Parked now</div>\
         <div class=\"big {}\">{parked}</div><div class=\"note\">{}</div></div>",
        if parked > 0 { "bad" } else { "good" },
        if parked > 0 { "URLs wait for a human: the fixes are below" } else { "nothing waits for a human" }
    );
    match &history.last_run {
        Some(run) => {
            let ms = (run.ended_at - run.started_at).num_milliseconds().max(0);
            let took = if ms < 1000 { format!("{ms} ms") } else { format!("{:.1} s", ms as f64 / 1000.0) };
            let _ = writeln!(
                h,
                "<div class=\"card\" data-last-run-exit-code=\"{code}\"><div class=\"label\">Last run</div>\
                 <div class=\"big {}\">exit {code}</div><div class=\"note\">{} · started {} · took {took} on {}</div></div>",
                if run.exit_code == 0 { "good" } else { "bad" },
                exit_meaning(run.exit_code),
                esc(&clock::format_local(run.started_at, tz)),
                esc(&run.host),
                code = run.exit_code,
            );
        }
        None => h.push_str(
            "<div class=\"card\"><div class=\"label\">Last run</div><div class=\"big\">—</div>\
             <div class=\"note\">no <code>indexq submit</code> run recorded yet</div></div>\n",
        ),
    }
    let success = match &history.last_success {
        Some(run) => format!(
            "<div class=\"big\">{} ago</div><div class=\"note\">{}</div>",
            esc(&clock::humanize(history.now - run.ended_at)),
            esc(&clock::format_local(run.ended_at, tz))
        ),
        None => "<div class=\"big\">—</div><div class=\"note\">none recorded</div>".to_string(),
    };
    let _ = writeln!(h, "<div class=\"card\"><div class=\"label\">Last successful run</div>{success}</div>");
    let share = (accepted * 100).checked_div(attempted).map_or(String::new(), |p| format!("{p}% accepted"));
    let _ = write!(
        h,
        "<div class=\"card\" data-attempted=\"{attempted}\"><div class=\"label\">URLs attempted in {} days</div>\
         <div class=\"big\">{attempted}</div><div class=\"note\">{share}</div></div>\n</div>\n",
        history.days
    );
}

fn parked(h: &mut String, history: &History) {
    let rows: Vec<(&GroupHistory, &super::Parked)> =
        history.groups.iter().flat_map(|g| g.parked.iter().map(move |p| (g, p))).collect();
    if rows.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"parked\">\n<h2>Parked now: what to fix</h2>\n<p class=\"sub\">indexq does not retry these by \
         itself; it does once the configuration they depend on changes, or after <code>indexq queue retry</code>.</p>\n\
         <div class=\"scroll\"><table class=\"stack\">\n<thead><tr><th>Where</th><th>Reason</th><th class=\"n\">URLs</th>\
         <th>What happened</th><th>The fix</th></tr></thead>\n<tbody>\n",
    );
    for (g, p) in rows {
        let status = p.http_status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
        let examples: Vec<String> = p.examples.iter().map(|u| esc(u)).collect();
        let more = if p.count > p.examples.len() as u64 { ", …" } else { "" };
        let _ = writeln!(
            h,
            "<tr data-property=\"{}\" data-engine=\"{}\" data-endpoint=\"{}\" data-reason=\"{}\" data-count=\"{}\">\
             <td>{}</td><td><code>{}</code>{status}<div class=\"examples\">{}{more}</div></td>\
             <td class=\"n\" data-label=\"URLs\">{}</td><td>{}</td><td class=\"fix\" data-label=\"The fix\">{}</td></tr>",
            esc(&g.group.property),
            g.group.engine,
            esc(g.group.endpoint().unwrap_or_default()),
            esc(&p.reason.to_string()),
            p.count,
            esc(&group_title(&g.group)),
            esc(&p.reason.to_string()),
            examples.join("<br>"),
            p.count,
            esc(&p.message),
            p.hint.as_deref().map(esc).unwrap_or_else(|| "see <code>indexq log --url URL</code>".into()),
        );
    }
    h.push_str("</tbody></table></div>\n</section>\n");
}

fn group(h: &mut String, g: &GroupHistory, now: DateTime<Utc>, user_tz: Tz) {
    let _ = write!(
        h,
        "<section class=\"group\" data-property=\"{}\" data-engine=\"{}\" data-endpoint=\"{}\" data-timezone=\"{}\">\n\
         <h2>{}</h2>\n<p class=\"sub\">{}days in {}</p>\n",
        esc(&g.group.property),
        g.group.engine,
        esc(g.group.endpoint().unwrap_or_default()),
        g.tz.name(),
        esc(&group_title(&g.group)),
        match g.group.endpoint() {
            Some(endpoint) => format!("endpoint {} · ", esc(endpoint)),
            None => String::new(),
        },
        g.tz.name()
    );
    h.push_str("<div class=\"charts\">\n");
    budget_chart(h, g);
    outcome_chart(h, g);
    h.push_str("</div>\n");
    let q = &g.queue;
    let _ = writeln!(
        h,
        "<ul class=\"queue\" data-due=\"{}\" data-waiting=\"{}\" data-parked=\"{}\" data-in-flight=\"{}\" \
         data-accepted=\"{}\"><li>Queue now:</li><li><b>{}</b> due</li><li><b>{}</b> waiting</li>\
         <li><b class=\"{}\">{}</b> parked</li><li><b>{}</b> in flight</li><li><b>{}</b> accepted</li></ul>",
        q.due,
        q.waiting,
        q.parked,
        q.in_flight,
        q.accepted,
        q.due,
        q.waiting,
        if q.parked > 0 { "bad" } else { "" },
        q.parked,
        q.in_flight,
        q.accepted
    );
    rules(h, g, now, user_tz);
    days_table(h, g);
    h.push_str("</section>\n");
}

/// The budget rules in their current windows, as `status` shows them.
fn rules(h: &mut String, g: &GroupHistory, now: DateTime<Utc>, user_tz: Tz) {
    h.push_str(
        "<h3>Budget now</h3>\n<div class=\"scroll\"><table class=\"rules stack\">\n<thead><tr><th>Rule</th><th>Window</th>\
         <th class=\"n\">Used</th><th class=\"n\">Limit</th><th class=\"n\">Left</th><th>Reopens</th></tr></thead>\n<tbody>\n",
    );
    for r in &g.rules {
        let num = |n: Option<u64>| n.map_or(String::new(), |n| n.to_string());
        let blocked = match r.blocked {
            Some(t) => format!(" · refused by the server until {}", esc(&when(t, r.rule.tz, user_tz, now))),
            None => String::new(),
        };
        let _ = writeln!(
            h,
            "<tr data-rule=\"{}\" data-period=\"{}\" data-scope=\"{}\" data-window=\"{}\" data-used=\"{}\"{}{} \
             data-resets-at=\"{}\"><td><code>{}</code></td><td>{} {}</td><td class=\"n\" data-label=\"Used\">{}</td>\
             <td class=\"n\" data-label=\"Limit\">{}</td><td class=\"n\" data-label=\"Left\">{}</td>\
             <td data-label=\"Reopens\">{}{blocked}</td></tr>",
            esc(&r.rule.id),
            r.rule.period,
            r.rule.scope.as_str(),
            esc(&r.window.window),
            r.usage.used,
            r.limit.map_or(String::new(), |l| format!(" data-limit=\"{l}\"")),
            r.remaining.map_or(String::new(), |l| format!(" data-remaining=\"{l}\"")),
            r.window.resets_at.timestamp(),
            esc(&r.rule.id),
            r.rule.period,
            esc(&r.window.window),
            r.usage.used,
            r.limit.map_or("no limit".into(), |l| l.to_string()),
            num(r.remaining),
            esc(&when(r.window.resets_at, r.rule.tz, user_tz, now)),
        );
    }
    h.push_str("</tbody></table></div>\n");
}

/// Every day's numbers, as the charts draw them.
fn days_table(h: &mut String, g: &GroupHistory) {
    h.push_str("<details><summary>The numbers, day by day</summary>\n<div class=\"scroll\"><table class=\"days\">\n<thead><tr><th>Day</th><th class=\"n\">Counted</th><th class=\"n\">Limit</th>");
    for class in CLASSES {
        let _ = write!(h, "<th class=\"n\">{}</th>", class.as_str().replace('_', " "));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for day in g.days.iter().rev() {
        let _ = write!(
            h,
            "<tr data-day=\"{}\" data-used=\"{}\"{}",
            day.key,
            day.used,
            day.limit.map_or(String::new(), |l| format!(" data-limit=\"{l}\""))
        );
        for class in CLASSES {
            let _ = write!(h, " data-{}=\"{}\"", class_name(class), day.outcome(class));
        }
        let _ = write!(
            h,
            "><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
            day.key,
            day.used,
            day.limit.map_or("—".into(), |l| l.to_string())
        );
        for class in CLASSES {
            let _ = write!(h, "<td class=\"n\">{}</td>", day.outcome(class));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div></details>\n");
}

fn stranded(h: &mut String, history: &History) {
    if history.stranded.is_empty() {
        return;
    }
    h.push_str("<section id=\"stranded\">\n<h2>Not configured any more</h2>\n<ul>\n");
    for (group, q) in &history.stranded {
        let _ = writeln!(
            h,
            "<li><b>{}</b>: {} queued, {} parked, {} in flight. <span class=\"fix\">{}</span></li>",
            esc(&group_title(group)),
            q.due + q.waiting,
            q.parked,
            q.in_flight,
            esc(&crate::attention::stranded_hint(group))
        );
    }
    h.push_str("</ul>\n</section>\n");
}

// ---------------------------------------------------------------------------
// Charts: bars per day in a 640 × 220 box, scaled by the browser.

const W: f64 = 640.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 26.0;

/// The smallest of 1, 2, 5 × 10ⁿ at or above `v` (at least 1).
fn nice_ceiling(v: u64) -> u64 {
    let mut step = 1;
    loop {
        for m in [1, 2, 5] {
            if m * step >= v.max(1) {
                return m * step;
            }
        }
        step *= 10;
    }
}

/// A day's position and the vertical scale.
struct Frame {
    n: usize,
    top: u64,
}

impl Frame {
    fn slot(&self) -> f64 {
        (W - LEFT - RIGHT) / self.n.max(1) as f64
    }
    fn bar_x(&self, i: usize) -> (f64, f64) {
        let slot = self.slot();
        let width = (slot * 0.72).max(1.0);
        (LEFT + i as f64 * slot + (slot - width) / 2.0, width)
    }
    fn y(&self, v: u64) -> f64 {
        let plot = H - TOP - BOTTOM;
        TOP + plot - plot * v as f64 / self.top as f64
    }
}

/// Opens the SVG: grid lines with their values, and the days below.
fn frame(h: &mut String, label: &str, days: &[Day], frame: &Frame) {
    let _ = writeln!(
        h,
        "<div class=\"chart\"><svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" \
         xmlns=\"http://www.w3.org/2000/svg\">",
        esc(label)
    );
    let mut ticks = vec![0, frame.top];
    if frame.top % 2 == 0 && frame.top >= 2 {
        ticks.insert(1, frame.top / 2);
    }
    for t in ticks {
        let y = frame.y(t);
        let _ = writeln!(
            h,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{t}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0
        );
    }
    // About five labels whatever the number of days (they must fit a
    // phone's width too); today's always.
    let every = days.len().div_ceil(5).max(1);
    for (i, day) in days.iter().enumerate() {
        let last = i + 1 == days.len();
        if (days.len() - 1 - i) % every != 0 {
            continue;
        }
        let (x, w) = frame.bar_x(i);
        let text = NaiveDate::parse_from_str(&day.key, "%Y-%m-%d")
            .map(|d| d.format("%b %-d").to_string())
            .unwrap_or_else(|_| day.key.clone());
        let _ = writeln!(
            h,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\"{}>{}</text>",
            x + w / 2.0,
            H - 8.0,
            if last { " class=\"today\"" } else { "" },
            esc(&text)
        );
    }
}

/// URLs counted against the group's daily budget, against the day's limit.
fn budget_chart(h: &mut String, g: &GroupHistory) {
    let max = g.days.iter().map(|d| d.used.max(d.limit.unwrap_or(0))).max().unwrap_or(0);
    let f = Frame { n: g.days.len(), top: nice_ceiling(max) };
    h.push_str("<figure><figcaption>URLs counted against the daily budget</figcaption>\n");
    frame(h, &format!("URLs counted per day against the daily limit, {}", group_title(&g.group)), &g.days, &f);
    for (i, day) in g.days.iter().enumerate() {
        let (x, w) = f.bar_x(i);
        let spent = day.limit.is_some_and(|l| day.used >= l && l > 0);
        let limit = day.limit.map_or("no limit".to_string(), |l| format!("limit {l}"));
        let y = f.y(day.used);
        let _ = writeln!(
            h,
            "<rect class=\"{}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\"><title>{}: {} counted, {limit}</title></rect>",
            if spent { "spent" } else { "used" },
            f.y(0) - y,
            day.key,
            day.used
        );
    }
    // The limit: a dashed step across each day that has one.
    let mut path = String::new();
    for (i, day) in g.days.iter().enumerate() {
        if let Some(l) = day.limit {
            let x0 = LEFT + i as f64 * f.slot();
            let _ = write!(path, "M{x0:.1} {:.1}H{:.1}", f.y(l), x0 + f.slot());
        }
    }
    if !path.is_empty() {
        let _ = writeln!(h, "<path class=\"limit\" d=\"{path}\"/>");
    }
    h.push_str("</svg></div>\n<div class=\"legend\"><span><i class=\"sw used\"></i>counted</span>\
                <span><i class=\"sw spent\"></i>the day's budget spent</span><span><i class=\"sw limit\"></i>daily limit</span></div>\n</figure>\n");
}

/// URLs attempted per day, stacked by the class of the answer.
fn outcome_chart(h: &mut String, g: &GroupHistory) {
    let max = g.days.iter().map(|d| d.outcomes.iter().sum::<u64>()).max().unwrap_or(0);
    let f = Frame { n: g.days.len(), top: nice_ceiling(max) };
    h.push_str("<figure><figcaption>Answers per day</figcaption>\n");
    frame(h, &format!("URLs attempted per day by the class of the answer, {}", group_title(&g.group)), &g.days, &f);
    for (i, day) in g.days.iter().enumerate() {
        let (x, w) = f.bar_x(i);
        let mut below = 0;
        for class in CLASSES {
            let n = day.outcome(class);
            if n == 0 {
                continue;
            }
            let (y0, y1) = (f.y(below), f.y(below + n));
            let _ = writeln!(
                h,
                "<rect class=\"{}\" x=\"{x:.1}\" y=\"{y1:.1}\" width=\"{w:.1}\" height=\"{:.1}\"><title>{}: {n} {}</title></rect>",
                class_name(class),
                y0 - y1,
                day.key,
                class.as_str()
            );
            below += n;
        }
    }
    h.push_str("</svg></div>\n<div class=\"legend\">");
    for class in CLASSES {
        let _ = write!(h, "<span><i class=\"sw {}\"></i>{}</span>", class_name(class), class_title(class));
    }
    h.push_str("</div>\n</figure>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_html_would_read() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(esc("a\x1b]0;t\x07\r\u{9b}2J\n\tb é"), "a\\u{1b}]0;t\\u{7}\\u{d}\\u{9b}2J\n\tb é");
        assert_eq!(nice_ceiling(0), 1);
        assert_eq!(nice_ceiling(3), 5);
        assert_eq!(nice_ceiling(11), 20);
        assert_eq!(nice_ceiling(200), 200);
        assert_eq!(nice_ceiling(201), 500);
    }
}
