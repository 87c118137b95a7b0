//! Inputs at site scale: sitemaps (index, gzip, remote, robots.txt),
//! URL normalisation and dedupe, and "only what changed".

use crate::support::mock::MockResponse;
use crate::support::*;
use std::io::Write;

const NOW: &str = "2026-12-03T09:00:00Z";

fn urlset(sb: &Sandbox, entries: &[(&str, Option<&str>)]) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
         xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">\n",
    );
    for (path, lastmod) in entries {
        xml.push_str(&format!("<url><loc>{}</loc>", sb.url(path)));
        if let Some(l) = lastmod {
            xml.push_str(&format!("<lastmod>{l}</lastmod>"));
        }
        xml.push_str("<image:image><image:loc>https://cdn.example/x.png</image:loc></image:image></url>\n");
    }
    xml.push_str("</urlset>\n");
    xml
}

fn index(children: &[String]) -> String {
    let mut xml =
        String::from("<?xml version=\"1.0\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    for c in children {
        xml.push_str(&format!("<sitemap><loc>{c}</loc></sitemap>\n"));
    }
    xml.push_str("</sitemapindex>\n");
    xml
}

fn gzip(text: &str) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap()
}

fn sent(sb: &Sandbox) -> Vec<String> {
    let mut urls = sb.received_urls();
    urls.sort();
    urls
}

fn serve_index(sb: &Sandbox) {
    let plain = urlset(sb, &[("/a", Some("2026-11-01")), ("/b", None)]);
    let zipped = urlset(sb, &[("/c", Some("2026-11-02T10:00:00+01:00")), ("/a", Some("2026-11-01"))]);
    sb.site.on("GET", "/sitemap-1.xml", vec![MockResponse::status(200).body(&plain)]);
    // gzip served without a .gz name and as octet-stream: detected by its magic bytes.
    sb.site.on(
        "GET",
        "/sitemap-2",
        vec![MockResponse::status(200).header("Content-Type", "application/octet-stream").bytes(&gzip(&zipped))],
    );
    let idx = index(&[sb.url("/sitemap-1.xml"), sb.url("/sitemap-2")]);
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(200).body(&idx)]);
}

#[test]
fn a_served_sitemap_index_of_a_plain_and_a_gzipped_sitemap() {
    let sb = Sandbox::new();
    serve_index(&sb);
    let doc = sb.indexq(&["--json", "submit", "--sitemap", &sb.url("/sitemap.xml")]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 3, "every URL once");
    assert_eq!(sent(&sb), [sb.url("/a"), sb.url("/b"), sb.url("/c")]);
}

#[test]
fn the_same_from_files_and_from_robots_txt() {
    let sb = Sandbox::new();
    let dir = sb.dir.path().join("public");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("sitemap-1.xml"), urlset(&sb, &[("/a", Some("2026-11-01")), ("/b", None)])).unwrap();
    std::fs::write(dir.join("sitemap-2.xml.gz"), gzip(&urlset(&sb, &[("/c", None)]))).unwrap();
    // The index lists the site's URLs; the files beside it are read.
    std::fs::write(dir.join("sitemap.xml"), index(&[sb.url("/sitemap-1.xml"), sb.url("/sitemap-2.xml.gz")])).unwrap();
    sb.indexq(&["--json", "submit", "--sitemap", "public/sitemap.xml"]).now(NOW).output().code(0);
    assert_eq!(sent(&sb), [sb.url("/a"), sb.url("/b"), sb.url("/c")]);
    assert!(sb.site.requests().is_empty(), "nothing fetched: the files were beside the index");

    let sb = Sandbox::new();
    serve_index(&sb);
    sb.site.on(
        "GET",
        "/robots.txt",
        vec![
            MockResponse::status(200).body(&format!("User-agent: *\nDisallow:\nSITEMAP: {}\n", sb.url("/sitemap.xml")))
        ],
    );
    sb.indexq(&["--json", "submit", "--sitemap", &sb.url("/robots.txt")]).now(NOW).output().code(0);
    assert_eq!(sent(&sb), [sb.url("/a"), sb.url("/b"), sb.url("/c")]);
}

#[test]
fn broken_children_are_reported_with_their_place_and_the_rest_goes() {
    let sb = Sandbox::new();
    sb.site.on("GET", "/good.xml", vec![MockResponse::status(200).body(&urlset(&sb, &[("/ok", None)]))]);
    sb.site.on("GET", "/bad.xml", vec![MockResponse::status(200).body("<urlset>\n<url><loc>https://x/</loc>\n")]);
    let idx = index(&[sb.url("/good.xml"), sb.url("/missing.xml"), sb.url("/bad.xml"), sb.url("/sitemap.xml")]);
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(200).body(&idx)]);
    let done = sb.indexq(&["--json", "submit", "--sitemap", &sb.url("/sitemap.xml")]).now(NOW).output().code(3);
    let doc = done.json();
    assert_eq!(sent(&sb), [sb.url("/ok")]);
    let problems: Vec<_> = results(&doc).into_iter().filter(|r| r["reason"] == "sitemap").collect();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    let text = serde_json::to_string(&problems).unwrap();
    assert!(text.contains("missing.xml") && text.contains("404"), "{text}");
    assert!(text.contains(&format!("{}:", sb.url("/bad.xml"))), "the malformed one has a line:column: {text}");
    assert!(text.contains("loop"), "the cycle is named: {text}");
    assert!(done.stderr.contains("bad.xml"), "{}", done.stderr);
}

#[test]
fn a_sitemap_over_the_cap_is_an_error_naming_the_cap() {
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[sitemap]\nmax_bytes = 2048\n");
    sb.write_config();
    let many: Vec<String> = (0..200).map(|i| format!("/p{i}")).collect();
    let entries: Vec<(&str, Option<&str>)> = many.iter().map(|p| (p.as_str(), None)).collect();
    sb.site.on("GET", "/big.xml", vec![MockResponse::status(200).body(&urlset(&sb, &entries))]);
    let done = sb.indexq(&["--json", "submit", "--sitemap", &sb.url("/big.xml")]).now(NOW).output().code(3);
    let doc = done.json();
    let problem = results(&doc).into_iter().find(|r| r["reason"] == "sitemap").unwrap();
    assert!(problem["message"].as_str().unwrap().contains("cap"), "{problem}");
    assert!(sb.received_urls().len() < 200, "nothing past the cap was read");
}

#[test]
fn one_url_in_two_forms_is_one_item_found_by_either_form() {
    let sb = Sandbox::new();
    let list = sb.file(
        "urls.txt",
        &format!("{0}/%7euser#top\n{0}/~user\n{0}/a?x=%2f\n", sb.site.url().replace("http://", "HTTP://")),
    );
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 2);
    assert_eq!(sent(&sb), [format!("{}/a?x=%2F", sb.site.url()), format!("{}/~user", sb.site.url())]);
    let log = sb.indexq(&["--json", "log", "--url", &format!("{}/%7Euser#frag", sb.site.url())]).now(NOW).output();
    assert_eq!(log.code(0).json()["attempts"].as_array().unwrap().len(), 1);
}

#[test]
fn changed_sends_only_new_urls_and_later_lastmods() {
    let sb = Sandbox::new();
    let write = |entries: &[(&str, Option<&str>)]| {
        std::fs::write(sb.dir.path().join("sitemap.xml"), urlset(&sb, entries)).unwrap();
    };
    write(&[("/a", Some("2026-11-01")), ("/b", Some("2026-11-01")), ("/c", None)]);
    sb.indexq(&["--json", "submit", "--changed", "--sitemap", "sitemap.xml"]).now(NOW).output().code(0);
    assert_eq!(sb.received_urls().len(), 3, "all new");
    // One lastmod moves, one URL is added, /c has no lastmod: exactly 2 go.
    write(&[("/a", Some("2026-12-04")), ("/b", Some("2026-11-01")), ("/c", None), ("/d", None)]);
    let plan = sb
        .indexq(&["--json", "submit", "--dry-run", "--changed", "--sitemap", "sitemap.xml"])
        .now("2026-12-05T09:00:00Z")
        .output()
        .code(0)
        .json();
    assert_eq!(plan["plan_summary"]["indexnow"]["new"], 1, "{plan:#}");
    assert_eq!(plan["plan_summary"]["indexnow"]["changed"], 1);
    assert_eq!(plan["plan_summary"]["indexnow"]["unchanged"], 2);
    let doc = sb
        .indexq(&["--json", "submit", "--changed", "--sitemap", "sitemap.xml"])
        .now("2026-12-05T09:00:00Z")
        .output()
        .code(0)
        .json();
    assert_eq!(count(&doc, "accepted"), 2);
    assert_eq!(count(&doc, "skipped"), 2);
    let received = sb.received_urls();
    let mut last_two = received[3..].to_vec();
    last_two.sort();
    assert_eq!(last_two, [sb.url("/a"), sb.url("/d")]);

    // --since keeps only lastmods at or after it.
    let doc = sb
        .indexq(&["--json", "submit", "--force", "--since", "2026-12-01", "--sitemap", "sitemap.xml"])
        .now("2026-12-06T09:00:00Z")
        .output()
        .code(0)
        .json();
    assert_eq!(count(&doc, "accepted"), 1);
    assert_eq!(sb.received_urls().last().unwrap(), &sb.url("/a"));
}
