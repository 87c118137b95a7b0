//! Left alone: what needs a human is said — `-q` included, with exit 3 — when
//! a run parks it and then once per `[submit] remind`, until it is fixed; a
//! fix indexq can check without spending quota (the key file, Bing's API
//! key, Google's service-account key) is noticed by the next run, which says
//! so and sends the parked URLs again; a cause it cannot check names the
//! `queue retry` command. `status` shows what is parked first, and `doctor`
//! lists it as a problem.

use crate::support::mock::MockResponse;
use crate::support::sitemap::Sitemap;
use crate::support::*;

/// A sandbox whose property reads its sitemap (pages /a, /b) and whose key
/// file is missing, so IndexNow's 403 parks both.
fn key_file_missing() -> (Sandbox, Sitemap) {
    let mut sb = Sandbox::new();
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", None);
    sitemap.add("/b", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(403)]);
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(404)]);
    (sb, sitemap)
}

fn needs_human(out: &str) -> usize {
    out.lines().filter(|l| l.starts_with("needs a human: ")).count()
}

#[test]
fn a_parked_group_is_said_once_a_day_until_its_fix_is_noticed_by_itself() {
    let (sb, _sitemap) = key_file_missing();
    let first = sb.indexq(&["-q", "submit"]).now("2026-12-03T09:00:00Z").output().code(3);
    assert!(first.stdout.contains("error: IndexNow"), "the answer that parked them: {}", first.stdout);
    assert!(first.stdout.contains("indexq checks the key file on every run"), "{}", first.stdout);
    assert_eq!(needs_human(&first.stdout), 0, "said once, by the answer itself");

    // The same day, hourly: nothing to say, nothing sent, exit 0.
    for hour in ["10", "11", "23"] {
        let quiet = sb.indexq(&["-q", "submit"]).now(&format!("2026-12-03T{hour}:00:00Z")).output().code(0);
        assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""), "{hour}:00");
    }
    // A day later: one line, with the count, since when, the reason and the fix.
    let reminded = sb.indexq(&["-q", "submit"]).now("2026-12-04T09:00:00Z").output().code(3);
    assert_eq!(needs_human(&reminded.stdout), 1, "{}", reminded.stdout);
    let line = reminded.stdout.lines().find(|l| l.starts_with("needs a human: ")).unwrap();
    assert!(line.contains("2 URLs parked since 2026-12-03 09:00 UTC (key_file_missing)"), "{line}");
    assert!(line.contains("Fix: "), "{line}");
    assert!(line.contains("indexq checks the key file on every run"), "{line}");
    sb.indexq(&["-q", "submit"]).now("2026-12-04T10:00:00Z").output().code(0);
    assert_eq!(sb.engine.requests_to("POST", ENDPOINT_PATH).len(), 1, "a parked URL is not sent again");

    // The key file is back: the next run notices by itself, says so and sends them.
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(200).body(KEY)]);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let fixed = sb.indexq(&["-q", "submit"]).now("2026-12-04T11:00:00Z").output().code(0);
    assert!(fixed.stdout.contains("resumed: IndexNow"), "{}", fixed.stdout);
    assert!(fixed.stdout.contains("serves the key now: 2 parked URLs (key_file_missing) go again"), "{}", fixed.stdout);
    assert_eq!(needs_human(&fixed.stdout), 0);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/a"), sb.url("/a"), sb.url("/b"), sb.url("/b")]);
    let status = sb.indexq(&["--json", "status"]).now("2026-12-04T11:00:00Z").output().code(0).status_doc();
    assert!(status.parked.is_empty(), "{:?}", status.parked);
    assert_eq!(status.queue.accepted, 2);
    // And nothing more to say the next day.
    let after = sb.indexq(&["-q", "submit"]).now("2026-12-05T11:00:00Z").output().code(0);
    assert_eq!(after.stdout, "");
}

#[test]
fn a_remind_interval_of_zero_says_it_on_every_run_and_json_lists_it_always() {
    let (mut sb, _sitemap) = key_file_missing();
    sb.extra.push_str("\n[submit]\nremind = \"0\"\n");
    sb.write_config();
    sb.indexq(&["-q", "submit"]).now("2026-12-03T09:00:00Z").output().code(3);
    for hour in ["10", "11"] {
        let again = sb.indexq(&["-q", "submit"]).now(&format!("2026-12-03T{hour}:00:00Z")).output().code(3);
        assert_eq!(needs_human(&again.stdout), 1, "{}", again.stdout);
    }
    let doc = sb.indexq(&["--json", "submit"]).now("2026-12-03T12:00:00Z").output().code(3).submit_doc();
    let parked = doc.parked.expect("parked");
    assert_eq!(parked.len(), 1);
    let p = &parked[0];
    assert_eq!((p.reason.as_str(), p.urls, p.told, p.checked_by_itself), ("key_file_missing", 2, true, true));
    assert_eq!(p.reminded_at.as_deref(), Some("2026-12-03T11:00:00+00:00"), "the run before");
    assert!(p.fix.as_deref().is_some_and(|f| !f.is_empty()), "{p:?}");
}

#[test]
fn a_cause_that_cannot_be_checked_stays_parked_and_names_the_retry_command() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(422).json(r#"{"code":"UrlNotOnHost"}"#)]);
    let list = sb.urls("urls.txt", &["/a"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output().code(3);
    let reminded = sb.indexq(&["-q", "submit"]).now("2026-12-04T09:00:00Z").output().code(3);
    let line = reminded.stdout.lines().find(|l| l.starts_with("needs a human: ")).expect("the reminder");
    let retry = format!(
        "indexq cannot check this by itself: once fixed, run `indexq queue retry --state parked --property site \
         --engine indexnow --endpoint {}`",
        sb.endpoints[0]
    );
    assert!(line.contains(&retry), "{line}");
    assert_eq!(sb.engine.requests().len(), 1, "nothing checked, nothing sent again");
    // The command it names works.
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let args: Vec<String> = ["queue", "retry", "--state", "parked", "--property", "site", "--engine", "indexnow"]
        .iter()
        .map(|s| s.to_string())
        .chain(["--endpoint".to_string(), sb.endpoints[0].clone()])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.indexq(&args).now("2026-12-04T09:30:00Z").output().code(0);
    let done = sb.indexq(&["-q", "submit"]).now("2026-12-04T09:31:00Z").output().code(0);
    assert_eq!(needs_human(&done.stdout), 0, "{}", done.stdout);
    assert_eq!(sb.received_urls(), [sb.url("/a"), sb.url("/a")]);
}

#[test]
fn a_refused_bing_key_is_checked_by_a_quota_read_and_noticed_once_it_works() {
    let sb = Sandbox::bing("");
    let bad_key = MockResponse::status(400).json(r#"{"ErrorCode":3,"Message":"ERROR!!! InvalidApiKey"}"#);
    sb.engine.on("GET", BING_QUOTA, vec![bad_key.clone()]);
    sb.engine.on("POST", BING_SUBMIT, vec![bad_key]);
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output();
    let parked = doc.code(3).submit_doc().parked.expect("parked");
    assert_eq!((parked[0].reason.as_str(), parked[0].checked_by_itself), ("InvalidApiKey", true));
    // Still refused: the quota read says so, nothing is sent.
    sb.indexq(&["-q", "submit"]).now("2026-12-03T10:00:00Z").output().code(0);
    assert_eq!(sb.bing_received().len(), 2, "one batch, not sent again");
    // A new key (the same variable, another value): the quota read works, the run resumes.
    sb.bing_quota(100, 1000);
    sb.engine.on("POST", BING_SUBMIT, vec![MockResponse::status(200).json(r#"{"d":null}"#)]);
    let fixed = sb.indexq(&["-q", "submit"]).now("2026-12-03T11:00:00Z").output().code(0);
    assert!(fixed.stdout.contains("resumed: Bing for site: Bing accepts the API key now"), "{}", fixed.stdout);
    assert_eq!(sb.bing_received().len(), 4);
}

#[test]
fn a_refused_google_key_is_checked_by_a_token_and_noticed_once_it_works() {
    let sb = Sandbox::google("");
    let invalid_grant = r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#;
    sb.engine.on("POST", GOOGLE_TOKEN, vec![MockResponse::status(400).json(invalid_grant)]);
    let list = sb.urls("urls.txt", &["/a"]);
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now("2026-12-03T09:00:00Z").output();
    let parked = doc.code(3).submit_doc().parked.expect("parked");
    assert_eq!((parked[0].reason.as_str(), parked[0].checked_by_itself), ("invalid_grant", true));
    sb.indexq(&["-q", "submit"]).now("2026-12-03T10:00:00Z").output().code(0);
    assert!(sb.google_published().is_empty());
    sb.engine.on("POST", GOOGLE_TOKEN, vec![google_token_response(GOOGLE_ACCESS_TOKEN)]);
    let fixed = sb.indexq(&["-q", "submit"]).now("2026-12-03T11:00:00Z").output().code(0);
    assert!(fixed.stdout.contains("resumed: Google for site: Google issues access tokens for"), "{}", fixed.stdout);
    assert_eq!(sb.google_published(), [(sb.url("/a"), "URL_UPDATED".to_string())]);
}

#[test]
fn status_shows_what_is_parked_first_and_doctor_lists_it_as_a_problem() {
    let (sb, _sitemap) = key_file_missing();
    sb.indexq(&["-q", "submit"]).now("2026-12-03T09:00:00Z").output().code(3);
    let status = sb.indexq(&["status"]).now("2026-12-03T10:00:00Z").output().code(0);
    let second = status.stdout.lines().nth(1).unwrap_or_default();
    assert!(second.starts_with("needs a human: IndexNow"), "right after the time: {}", status.stdout);
    let doc = sb.indexq(&["--json", "status"]).now("2026-12-03T10:00:00Z").output().code(0).status_doc();
    assert_eq!(doc.parked.len(), 1);
    assert_eq!((doc.parked[0].reason.as_str(), doc.parked[0].urls), ("key_file_missing", 2));
    let doctor = sb.indexq(&["--json", "doctor"]).now("2026-12-03T10:00:00Z").output().code(3).doctor_doc();
    let parked = doctor.check("parked");
    assert!(!parked.ok);
    assert!(parked.message.starts_with("2 URLs parked since 2026-12-03 09:00 UTC (key_file_missing)"), "{parked:?}");
    assert!(parked.fix.as_deref().unwrap_or_default().contains("indexq checks the key file"), "{parked:?}");
    // The key file back: doctor says the key file is fine, and still lists the parked URLs until a run sends them.
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(200).body(KEY)]);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    sb.indexq(&["-q", "submit"]).now("2026-12-03T11:00:00Z").output().code(0);
    sb.indexq(&["doctor"]).now("2026-12-03T11:00:00Z").output().code(0);
}

#[test]
fn a_parked_group_holds_its_new_pages_until_its_fix_and_says_them_once_a_day() {
    let (sb, sitemap) = key_file_missing();
    sb.indexq(&["-q", "submit"]).now("2026-12-03T09:00:00Z").output().code(3);
    assert_eq!(sb.engine.requests_to("POST", ENDPOINT_PATH).len(), 1, "the answer that parked /a and /b");

    // New pages each afternoon for three days, hourly runs: the failed key
    // file check already predicts IndexNow's answer, so nothing is sent;
    // one reminder a day counts the new pages with the parked ones, and
    // only that run exits 3.
    // (day, its new page, the URLs its 09:00 reminder counts)
    let days = [("04", "/c", 2), ("05", "/d", 3), ("06", "/e", 4)];
    for (day, page, told) in days {
        for hour in ["09", "13", "14", "15"] {
            if hour == "13" {
                sitemap.add(page, None);
            }
            let at = format!("2026-12-{day}T{hour}:00:00Z");
            let done = sb.indexq(&["-q", "submit"]).now(&at).output();
            if hour == "09" {
                let done = done.code(3);
                assert_eq!(needs_human(&done.stdout), 1, "{at}: {}", done.stdout);
                let line = done.stdout.lines().find(|l| l.starts_with("needs a human: ")).unwrap();
                assert!(line.contains(&format!("{told} URLs parked since 2026-12-03 09:00 UTC")), "{at}: {line}");
                assert!(!done.stdout.contains("error:"), "{at}: {}", done.stdout);
            } else {
                let done = done.code(0);
                assert_eq!((done.stdout.as_str(), done.stderr.as_str()), ("", ""), "{at}");
            }
        }
        assert_eq!(sb.engine.requests_to("POST", ENDPOINT_PATH).len(), 1, "day {day}: nothing sent while parked");
    }

    // Without -q, a run between reminders says why the new pages wait.
    let said = sb.indexq(&["submit"]).now("2026-12-06T20:00:00Z").output().code(0);
    assert!(
        said.stdout.contains("note: IndexNow")
            && said.stdout.contains(": 3 new URLs not sent: the key file still fails"),
        "{}",
        said.stdout
    );

    // The key file is back: everything goes, with one `resumed:` line.
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(200).body(KEY)]);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200)]);
    let fixed = sb.indexq(&["-q", "submit"]).now("2026-12-07T09:00:00Z").output().code(0);
    let resumed: Vec<&str> = fixed.stdout.lines().filter(|l| l.starts_with("resumed: ")).collect();
    assert_eq!(resumed.len(), 1, "{}", fixed.stdout);
    assert!(resumed[0].contains("5 parked URLs (key_file_missing) go again"), "{}", resumed[0]);
    assert_eq!(needs_human(&fixed.stdout), 0);
    let mut sent = sb.received_urls()[2..].to_vec();
    sent.sort();
    let pages = ["/a", "/b", "/c", "/d", "/e"].map(|p| sb.url(p));
    assert_eq!(sent, pages, "all sent, each once");
    let after = sb.indexq(&["-q", "submit"]).now("2026-12-08T09:00:00Z").output().code(0);
    assert_eq!(after.stdout, "");
}
