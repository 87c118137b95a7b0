//! Sources in the configuration: `submit` with no input reads each
//! property's sitemaps and URL lists with `--changed`, then drains the
//! queue; a remote sitemap is fetched conditionally, so an unchanged one
//! costs one 304 and no parse; `--no-sources` only drains.

use crate::support::mock::MockResponse;
use crate::support::sitemap::Sitemap;
use crate::support::*;

const DAY1: &str = "2026-12-03T09:00:00Z";
const DAY1_LATER: &str = "2026-12-03T10:00:00Z";
const DAY2: &str = "2026-12-04T09:00:00Z";

/// A sandbox whose property's source is its sitemap, with pages /a and /b.
fn with_sitemap() -> (Sandbox, Sitemap) {
    let mut sb = Sandbox::new();
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", Some("2026-12-01"));
    sitemap.add("/b", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.write_config();
    (sb, sitemap)
}

fn sitemap_gets(sb: &Sandbox) -> Vec<Option<String>> {
    sb.site.requests_to("GET", "/sitemap.xml").iter().map(|r| r.header("If-None-Match").map(String::from)).collect()
}

#[test]
fn submit_with_no_input_reads_the_sources_then_an_unchanged_sitemap_costs_one_304() {
    let (sb, _sitemap) = with_sitemap();
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/a"), sb.url("/b")]);

    // An hour later: the same sitemap, asked for with its ETag: a 304, nothing parsed, nothing sent.
    let done = sb.indexq(&["--json", "submit"]).now(DAY1_LATER).output().code(0);
    assert_eq!(sitemap_gets(&sb), [None, Some("\"v2\"".to_string())]);
    assert!(results(&done.json()).is_empty(), "a 304 is not parsed: {}", done.stdout);
    assert_eq!(sb.received_urls().len(), 2);
    let done = sb.indexq(&["submit"]).now(DAY1_LATER).output().code(0);
    assert!(done.stdout.contains("Nothing to send"), "{}", done.stdout);
}

#[test]
fn a_changed_sitemap_sends_its_new_pages_and_changed_lastmods_once() {
    let (sb, sitemap) = with_sitemap();
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    sitemap.add("/c", Some("2026-12-03"));
    sitemap.touch("/a", "2026-12-03T12:00:00Z");
    sb.indexq(&["submit"]).now(DAY2).output().code(0);
    let sent = sb.received_urls();
    assert_eq!(sent.len(), 4, "{sent:?}");
    let mut second: Vec<String> = sent[2..].to_vec();
    second.sort();
    assert_eq!(second, [sb.url("/a"), sb.url("/c")], "/b has no later lastmod: --changed leaves it");
    // And once: the next run is a 304 again.
    sb.indexq(&["submit"]).now("2026-12-04T10:00:00Z").output().code(0);
    assert_eq!(sb.received_urls().len(), 4);
    assert_eq!(sitemap_gets(&sb).last().cloned().flatten(), Some("\"v4\"".to_string()));
}

#[test]
fn a_sitemap_without_validators_is_not_parsed_again_when_its_body_is_the_same() {
    let (sb, sitemap) = with_sitemap();
    sitemap.without_validators();
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    let done = sb.indexq(&["--json", "submit"]).now(DAY1_LATER).output().code(0);
    assert_eq!(sitemap_gets(&sb), [None, None], "no validator to send");
    assert!(results(&done.json()).is_empty(), "the same body is not parsed again: {}", done.stdout);
    sitemap.add("/c", None);
    sb.indexq(&["submit"]).now(DAY2).output().code(0);
    assert_eq!(sb.received_urls().last(), Some(&sb.url("/c")));
}

#[test]
fn a_run_for_other_groups_reads_the_sitemap_in_full() {
    let (mut sb, _sitemap) = with_sitemap();
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    // Bing added to the property: its URLs must reach Bing too, though the sitemap did not change.
    sb.bing = Some(String::new());
    sb.bing_quota(100, 1000);
    sb.engine.on("POST", BING_SUBMIT, vec![mock::MockResponse::status(200).json(r#"{"d":null}"#)]);
    sb.write_config();
    sb.indexq(&["submit"]).now(DAY1_LATER).output().code(0);
    assert_eq!(sitemap_gets(&sb), [None, None], "other groups: no conditional GET");
    let mut bing = sb.bing_received();
    bing.sort();
    assert_eq!(bing, [sb.url("/a"), sb.url("/b")]);
    assert_eq!(sb.received_urls().len(), 2, "IndexNow is not sent them again");
}

#[test]
fn force_and_since_read_the_sitemap_in_full() {
    let (sb, _sitemap) = with_sitemap();
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    sb.indexq(&["submit", "--force"]).now(DAY1_LATER).output().code(0);
    sb.indexq(&["submit", "--since", "2026-12-01"]).now(DAY1_LATER).output().code(0);
    assert_eq!(sitemap_gets(&sb), [None, None, None]);
}

#[test]
fn no_sources_only_drains_and_inputs_replace_the_sources() {
    let (sb, _sitemap) = with_sitemap();
    let done = sb.indexq(&["submit", "--no-sources"]).now(DAY1).output().code(0);
    assert!(sitemap_gets(&sb).is_empty(), "--no-sources reads no source");
    assert!(done.stdout.contains("Nothing to send"), "{}", done.stdout);
    let list = sb.urls("urls.txt", &["/x"]);
    sb.indexq(&["submit", list.to_str().unwrap()]).now(DAY1).output().code(0);
    assert!(sitemap_gets(&sb).is_empty(), "an input given: the sources are not read");
    assert_eq!(sb.received_urls(), [sb.url("/x")]);
    let refused = sb.indexq(&["submit", "--no-sources", list.to_str().unwrap()]).now(DAY1).output();
    assert_eq!(refused.code, 2, "--no-sources with an input says nothing: {}", refused.stderr);
}

#[test]
fn list_sources_are_read_and_a_missing_one_is_said_while_the_others_go() {
    let mut sb = Sandbox::new();
    sb.urls("urls.txt", &["/from-list"]);
    sb.property_extra = "sources = [\"urls.txt\", \"missing.txt\", { list = \"more.xml\" }]\n".into();
    sb.file("more.xml", &format!("{}\n", sb.url("/from-xml-named-list")));
    sb.write_config();
    let done = sb.indexq(&["--json", "submit"]).now(DAY1).output().code(3);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/from-list"), sb.url("/from-xml-named-list")]);
    // The missing one is a problem of its own, said with its reason.
    let doc = done.submit_doc();
    let missing = doc.parked.unwrap_or_default().into_iter().find(|p| p.kind == json::NoticeKind::Source);
    let missing = missing.expect("the missing source");
    assert_eq!(missing.reason, "source_unreadable");
    assert!(missing.source.as_deref().unwrap_or_default().ends_with("missing.txt"), "{missing:?}");
    assert!(missing.told);
}

#[test]
fn a_dry_run_reads_the_sources_and_keeps_nothing() {
    let (sb, _sitemap) = with_sitemap();
    let done = sb.indexq(&["submit", "--dry-run"]).now(DAY1).output().code(0);
    assert!(done.stdout.contains("2 new"), "{}", done.stdout);
    sb.indexq(&["submit"]).now(DAY1).output().code(0);
    assert_eq!(sitemap_gets(&sb), [None, None], "the dry run kept no validator");
    assert_eq!(sb.received_urls().len(), 2);
}

/// A file source is read by its content, whatever its name (issue 43): a
/// gzipped XML sitemap named `xmlSitemap.gz`, an RSS feed named `feed`, a
/// gzipped URL list named `urls.txt.gz`, and an XML sitemap named
/// `list.txt`; `robots.txt` by its name, its relative `Sitemap:` line read
/// from beside it.
#[test]
fn file_sources_are_read_by_their_content_not_their_name() {
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;
    let gzip = |text: &str| {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap()
    };
    let urlset = |path: &str| format!("<?xml version=\"1.0\"?>\n<urlset><url><loc>{path}</loc></url></urlset>\n");
    let mut sb = Sandbox::new();
    std::fs::write(sb.dir.path().join("xmlSitemap.gz"), gzip(&urlset(&sb.url("/gzipped-xml")))).unwrap();
    sb.file(
        "feed",
        &format!(
            "<rss version=\"2.0\"><channel><item><link>{}</link><pubDate>Tue, 01 Dec 2026 10:00:00 GMT</pubDate>\
             </item></channel></rss>",
            sb.url("/from-feed")
        ),
    );
    let list = format!("# a comment\n{}\n", sb.url("/gzipped-list"));
    std::fs::write(sb.dir.path().join("urls.txt.gz"), gzip(&list)).unwrap();
    sb.file("list.txt", &urlset(&sb.url("/xml-named-txt")));
    std::fs::create_dir_all(sb.dir.path().join("public")).unwrap();
    sb.file("public/robots.txt", "User-agent: *\nSitemap: /sitemap.xml\n");
    sb.file("public/sitemap.xml", &urlset(&sb.url("/beside-robots")));
    sb.property_extra =
        "sources = [\"xmlSitemap.gz\", \"feed\", \"urls.txt.gz\", \"list.txt\", \"public/robots.txt\"]\n".into();
    sb.write_config();
    let done = sb.indexq(&["--json", "submit"]).now(DAY1).output().code(0);
    assert!(results(&done.json()).iter().all(|r| r["outcome"] == "accepted"), "{}", done.stdout);
    let mut sent = sb.received_urls();
    sent.sort();
    let mut expected: Vec<String> =
        ["/beside-robots", "/from-feed", "/gzipped-list", "/gzipped-xml", "/xml-named-txt"].map(|p| sb.url(p)).into();
    expected.sort();
    assert_eq!(sent, expected);
}

fn needs_human(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.starts_with("needs a human: ")).collect()
}

#[test]
fn a_source_down_for_two_days_is_said_once_a_day_shown_by_status_and_doctor_and_resumed() {
    let (mut sb, _sitemap) = with_sitemap();
    // A timeout kept short by config.
    sb.extra = "[http]\nconnect_timeout = \"1s\"\ntimeout = \"1s\"\n".into();
    sb.write_config();
    sb.indexq(&["-q", "submit"]).now(DAY1).output().code(0);
    let source = sb.url("/sitemap.xml");

    // 404: said by the first run that meets it, then not until a day later.
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(404)]);
    let first = sb.indexq(&["-q", "submit"]).now("2026-12-03T10:00:00Z").output().code(3);
    let told = needs_human(&first.stdout);
    assert_eq!(told.len(), 1, "{}", first.stdout);
    assert!(
        told[0].starts_with(&format!(
            "needs a human: the source {source} of site: cannot be read since 2026-12-03 10:00 UTC \
             (source_not_found). HTTP 404 Not Found. Fix: "
        )),
        "{}",
        told[0]
    );
    assert!(!first.stdout.contains("invalid"), "not an invalid input: {}", first.stdout);
    assert_eq!(first.stderr, "", "not an input problem on stderr");
    for hour in ["11", "15", "23"] {
        let quiet = sb.indexq(&["-q", "submit"]).now(&format!("2026-12-03T{hour}:00:00Z")).output().code(0);
        assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""), "{hour}:00");
    }
    // `status` shows it first, `doctor` lists it (exit 3).
    let status = sb.indexq(&["status"]).now("2026-12-03T16:00:00Z").output().code(0);
    let second_line = status.stdout.lines().nth(1).unwrap_or_default();
    assert!(second_line.starts_with(&format!("needs a human: the source {source} of site")), "{}", status.stdout);
    let doc = sb.indexq(&["--json", "status"]).now("2026-12-03T16:00:00Z").output().code(0).status_doc();
    assert_eq!(doc.parked.len(), 1, "{:?}", doc.parked);
    assert_eq!(doc.parked[0].kind, json::NoticeKind::Source);
    assert_eq!(doc.parked[0].source.as_deref(), Some(source.as_str()));
    assert_eq!(doc.parked[0].reason, "source_not_found");
    let metrics = sb.indexq(&["status", "--format", "prometheus"]).now("2026-12-03T16:00:00Z").output().code(0);
    let series =
        format!("indexq_source_problems{{property=\"site\",source=\"{source}\",reason=\"source_not_found\"}} 1");
    assert!(metrics.stdout.contains(&series), "{}", metrics.stdout);
    let doctor = sb.indexq(&["--json", "doctor"]).now("2026-12-03T16:00:00Z").output().code(3).doctor_doc();
    let check = doctor.check("source");
    assert!(!check.ok);
    assert!(check.message.contains("since 2026-12-03 10:00 UTC (source_not_found)"), "{}", check.message);

    // A day later it answers 500: said again, since the first failure.
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(500)]);
    let day2 = sb.indexq(&["-q", "submit"]).now("2026-12-04T10:00:00Z").output().code(3);
    let told = needs_human(&day2.stdout);
    assert_eq!(told.len(), 1, "{}", day2.stdout);
    assert!(told[0].contains("since 2026-12-03 10:00 UTC (source_server_error). HTTP 500"), "{}", told[0]);
    // Then it does not answer at all: still not said again that day.
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(200).hang()]);
    let quiet = sb.indexq(&["-q", "submit"]).now("2026-12-04T11:00:00Z").output().code(0);
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    let day3 = sb.indexq(&["-q", "submit"]).now("2026-12-05T10:00:00Z").output().code(3);
    let told = needs_human(&day3.stdout);
    assert!(told.len() == 1 && told[0].contains("since 2026-12-03 10:00 UTC (source_timeout)"), "{}", day3.stdout);

    // It reads again, with a new page: one `resumed:` line, the page sent.
    let back = Sitemap::serve(&sb.site, "/sitemap.xml");
    back.without_validators();
    for page in ["/a", "/b", "/c"] {
        back.add(page, Some("2026-12-05"));
    }
    let fixed = sb.indexq(&["-q", "submit"]).now("2026-12-05T11:00:00Z").output().code(0);
    let resumed: Vec<&str> = fixed.stdout.lines().filter(|l| l.starts_with("resumed: ")).collect();
    assert_eq!(
        resumed,
        [format!(
            "resumed: the source {source} of site reads again (it could not be read since 2026-12-03 10:00 UTC, \
             source_timeout)."
        )]
    );
    assert!(sb.received_urls().contains(&sb.url("/c")));
    let doc = sb.indexq(&["--json", "status"]).now("2026-12-05T12:00:00Z").output().code(0).status_doc();
    assert!(doc.parked.is_empty(), "{:?}", doc.parked);
    sb.indexq(&["doctor"]).now("2026-12-05T12:00:00Z").output().code(0);
    let after = sb.indexq(&["-q", "submit"]).now("2026-12-06T11:00:00Z").output().code(0);
    assert_eq!(after.stdout, "");
}

#[test]
fn a_page_instead_of_a_sitemap_is_a_source_problem() {
    let (sb, _sitemap) = with_sitemap();
    sb.site.on(
        "GET",
        "/sitemap.xml",
        vec![MockResponse::status(200).body("<!DOCTYPE html>\n<html><body>Hi</body></html>")],
    );
    let done = sb.indexq(&["--json", "submit"]).now(DAY1).output().code(3).submit_doc();
    let source = done
        .parked
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.kind == json::NoticeKind::Source)
        .expect("the source's notice");
    assert_eq!(source.reason, "source_not_a_sitemap");
    assert!(source.message.as_deref().unwrap_or_default().contains("not a sitemap"), "{source:?}");
}

#[test]
fn a_property_with_no_sources_and_nothing_queued_says_the_line_to_add() {
    let sb = Sandbox::new();
    let done = sb.indexq(&["submit"]).now(DAY1).output().code(0);
    let note = done.stdout.lines().find(|l| l.starts_with("note: site has no `sources`")).expect(&done.stdout);
    assert!(note.contains(&format!("add `sources = [\"{}\"]`", sb.url("/sitemap.xml"))), "{note}");
    assert!(done.stdout.contains("Nothing to send."), "{}", done.stdout);
    // Once something is queued, the queue is what a run drains: no note.
    sb.urls("urls.txt", &["/a"]);
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(429).header("Retry-After", "3600")]);
    sb.indexq(&["submit", "urls.txt"]).now(DAY1).output().code(0);
    let drained = sb.indexq(&["submit"]).now(DAY1_LATER).output().code(0);
    assert!(!drained.stdout.contains("has no `sources`"), "{}", drained.stdout);
}

#[test]
fn a_source_that_fails_tls_or_refuses_the_connection_says_how() {
    let mut sb = Sandbox::new();
    // The mock speaks plain HTTP: an https:// source there fails its TLS handshake.
    let tls = format!("https://127.0.0.1:{}/sitemap.xml", sb.site.port());
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = format!("http://127.0.0.1:{closed}/sitemap.xml");
    sb.property_extra = format!("sources = [\"{tls}\", \"{refused}\"]\n");
    sb.write_config();
    let doc = sb.indexq(&["--json", "submit"]).now(DAY1).output().code(3).submit_doc();
    let reasons: Vec<(String, String)> = doc
        .parked
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.kind == json::NoticeKind::Source)
        .map(|p| (p.source.unwrap_or_default(), p.reason))
        .collect();
    assert_eq!(
        reasons,
        [(tls, "source_tls".to_string()), (refused, "source_unreachable".to_string())],
        "in the order configured"
    );
}
