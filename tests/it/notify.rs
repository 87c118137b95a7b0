//! `[notify]`: what needs a human reaches a command (one JSON document on
//! its standard input) or a chat webhook (`{"text": …}`), once per group
//! and reason per `[submit] remind` over hourly runs, and once when it is
//! resolved; a failing notifier is said, changes no exit status, and is
//! tried again by the next run; the webhook's URL is never shown.

use crate::support::json::NotifyEvent;
use crate::support::mock::{MockResponse, MockServer};
use crate::support::sitemap::Sitemap;
use crate::support::*;
use std::path::PathBuf;

/// A sandbox whose property reads its sitemap (pages /a, /b) and whose key
/// file is missing, so IndexNow's 403 parks both; `[notify]` is `notify`.
fn key_file_missing(notify: &str) -> (Sandbox, Sitemap) {
    let mut sb = Sandbox::new();
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", None);
    sitemap.add("/b", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra = format!("[notify]\n{notify}\n");
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403)]);
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(404)]);
    (sb, sitemap)
}

/// The key file is served again, and IndexNow accepts.
fn fix(sb: &Sandbox) {
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(200).body(KEY)]);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
}

/// A notifier script that appends the document it reads to `events`, or
/// fails (exit 1, a line on stderr) while `events.fail` exists.
fn notifier(sb: &Sandbox) -> (String, PathBuf) {
    let script = sb.dir.path().join("notify.sh");
    let events = sb.dir.path().join("events");
    std::fs::write(
        &script,
        "#!/bin/sh\nif [ -e \"$1.fail\" ]; then echo 'chat is down' >&2; exit 1; fi\ncat >> \"$1\"\necho >> \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (format!("command = \"{} {}\"\ntimeout = \"5s\"", script.display(), events.display()), events)
}

fn events(path: &PathBuf) -> Vec<NotifyEvent> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter(|l| !l.trim().is_empty()).map(NotifyEvent::parse).collect()
}

fn reminder(out: &str) -> &str {
    out.lines().find(|l| l.starts_with("needs a human: ")).expect("a needs-a-human line")
}

#[test]
fn a_command_hears_once_per_remind_and_once_resolved() {
    let (mut sb, _sitemap) = key_file_missing("");
    let (notify, path) = notifier(&sb);
    sb.extra = format!("[notify]\n{notify}\n");
    sb.write_config();

    sb.indexq(&["-q", "submit"]).now("2026-12-03T09:00:00Z").output().code(3);
    let got = events(&path);
    assert_eq!(got.len(), 1, "the run that parked them notifies: {got:?}");
    let e = &got[0];
    assert_eq!(
        (e.event.as_str(), e.property.as_str(), e.engine.as_str(), e.reason.as_str(), e.count),
        ("needs_human", "site", "indexnow", "key_file_missing", 2)
    );
    assert_eq!(e.since.as_deref(), Some("2026-12-03T09:00:00+00:00"));
    assert!(e.fix.is_some(), "{e:?}");
    assert!(e.text.starts_with("needs a human: IndexNow"), "{e:?}");

    // Hourly the same day: nothing more.
    for hour in ["10", "11", "23"] {
        sb.indexq(&["-q", "submit"]).now(&format!("2026-12-03T{hour}:00:00Z")).output().code(0);
    }
    assert_eq!(events(&path).len(), 1);
    // A day later: the reminder, and its exact line notified.
    let reminded = sb.indexq(&["-q", "submit"]).now("2026-12-04T09:00:00Z").output().code(3);
    let got = events(&path);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].text, reminder(&reminded.stdout));
    sb.indexq(&["-q", "submit"]).now("2026-12-04T10:00:00Z").output().code(0);
    assert_eq!(events(&path).len(), 2);

    // Fixed: one `resolved`, then nothing.
    fix(&sb);
    sb.indexq(&["-q", "submit"]).now("2026-12-04T11:00:00Z").output().code(0);
    let got = events(&path);
    assert_eq!(got.len(), 3, "{got:?}");
    let r = &got[2];
    assert_eq!(
        (r.event.as_str(), r.property.as_str(), r.engine.as_str(), r.reason.as_str(), r.count),
        ("resolved", "site", "indexnow", "key_file_missing", 0)
    );
    assert!(r.text.starts_with("resolved: IndexNow"), "{r:?}");
    for at in ["2026-12-04T12:00:00Z", "2026-12-05T12:00:00Z"] {
        sb.indexq(&["-q", "submit"]).now(at).output().code(0);
    }
    assert_eq!(events(&path).len(), 3);
}

#[test]
fn a_failing_command_is_said_and_tried_again_by_the_next_run() {
    let (mut sb, _sitemap) = key_file_missing("");
    let (notify, path) = notifier(&sb);
    sb.extra = format!("[notify]\n{notify}\n");
    sb.write_config();
    let fail = sb.dir.path().join("events.fail");
    std::fs::write(&fail, "").unwrap();

    // The same exit status as without [notify]; the failure said.
    let first = sb.indexq(&["-q", "submit"]).now("2026-12-03T09:00:00Z").output().code(3);
    assert!(
        first.stderr.contains(
            "warning: [notify]: the needs_human notification for site (indexnow, key_file_missing) failed: `"
        ) && first.stderr.contains("exited with exit status: 1: chat is down; the next run tries again"),
        "{}",
        first.stderr
    );
    assert!(events(&path).is_empty());
    // The next run tries again, and it gets through once.
    std::fs::remove_file(&fail).unwrap();
    let retried = sb.indexq(&["-q", "submit"]).now("2026-12-03T10:00:00Z").output().code(0);
    assert_eq!(retried.stderr, "");
    assert_eq!(events(&path).len(), 1);
    sb.indexq(&["-q", "submit"]).now("2026-12-03T11:00:00Z").output().code(0);
    assert_eq!(events(&path).len(), 1);

    // A command that hangs is stopped at `[notify] timeout`, said, and
    // tried again. The interval counts from the notification that got
    // through (10:00), not from the reminder's line (09:00).
    sb.extra = "[notify]\ncommand = \"sleep 30\"\ntimeout = \"1s\"\n".into();
    sb.write_config();
    let started = std::time::Instant::now();
    sb.indexq(&["-q", "submit"]).now("2026-12-04T09:00:00Z").output().code(3);
    let hung = sb.indexq(&["-q", "submit"]).now("2026-12-04T10:00:00Z").output().code(0);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert!(hung.stderr.contains("`sleep` did not finish within 1 s; it was stopped"), "{}", hung.stderr);
    sb.extra = format!("[notify]\n{notify}\n");
    sb.write_config();
    sb.indexq(&["-q", "submit"]).now("2026-12-04T11:00:00Z").output().code(0);
    let got = events(&path);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1].event, "needs_human");
}

#[test]
fn a_chat_webhook_gets_the_text_and_its_url_is_never_shown() {
    let chat = MockServer::start();
    let hook = format!("/services/T0000/B0000/{WEBHOOK_TOKEN}");
    chat.on("POST", &hook, vec![MockResponse::status(200).body("ok")]);
    let (sb, _sitemap) = key_file_missing("webhook_env = \"CHAT_WEBHOOK\"\ntimeout = \"5s\"");
    let url = format!("{}{hook}", chat.url());
    let run = |at: &str, code: i32| sb.indexq(&["-q", "submit"]).env("CHAT_WEBHOOK", &url).now(at).output().code(code);
    let texts = || -> Vec<String> {
        chat.requests_to("POST", &hook)
            .iter()
            .map(|r| {
                let body = r.json();
                let fields: Vec<&String> = body.as_object().unwrap().keys().collect();
                assert_eq!(fields, ["text"], "{body}");
                body["text"].as_str().unwrap().to_string()
            })
            .collect()
    };

    run("2026-12-03T09:00:00Z", 3);
    run("2026-12-03T10:00:00Z", 0);
    let sent = texts();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert!(sent[0].starts_with("needs a human: IndexNow"), "{sent:?}");

    // The chat service fails, echoing the URL: said, masked, and tried
    // again by the next run.
    let echo = format!("no_service: {url}");
    chat.on("POST", &hook, vec![MockResponse::status(500).body(&echo), MockResponse::status(200).body("ok")]);
    let failed = run("2026-12-04T09:00:00Z", 3);
    assert!(
        failed.stderr.contains("failed: the webhook answered HTTP 500: no_service: [REDACTED]"),
        "{}",
        failed.stderr
    );
    let retried = run("2026-12-04T10:00:00Z", 0);
    assert_eq!(retried.stderr, "");
    let sent = texts();
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[1], sent[2], "the same reminder, delivered");

    // Unreachable a day after the notification that got through: said
    // without the URL.
    let down = format!("http://127.0.0.1:1{hook}");
    let unreachable =
        sb.indexq(&["-q", "submit"]).env("CHAT_WEBHOOK", &down).now("2026-12-05T10:00:00Z").output().code(3);
    assert!(unreachable.stderr.contains("the webhook could not be reached"), "{}", unreachable.stderr);

    // Fixed before the owed reminder got through: only `resolved` is owed.
    fix(&sb);
    run("2026-12-05T11:00:00Z", 0);
    let sent = texts();
    assert_eq!(sent.len(), 4, "{sent:?}");
    assert!(sent[3].starts_with("resolved: IndexNow"), "{sent:?}");
    run("2026-12-06T11:00:00Z", 0);
    assert_eq!(texts().len(), 4);
}
