//! The sitemap reader end to end: local files, and a local HTTP(S) server
//! ([`server`]) for what is fetched.

mod server;

use super::*;
use crate::ingest::{exact_size, MAX_URL_BYTES};
use crate::model::Position;
use chrono::TimeZone;
use flate2::write::GzEncoder;
use flate2::Compression;
use server::{fetch_client_trusting_the_test_certificate, ok, redirect, Server};
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;

const MIB: u64 = 1024 * 1024;

fn client() -> FetchClient {
    let builder = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(10));
    FetchClient::new(builder, Pins::default()).unwrap()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn urlset(urls: &[(&str, Option<&str>)]) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for (loc, lastmod) in urls {
        xml.push_str(&format!("  <url>\n    <loc>{loc}</loc>\n"));
        if let Some(lastmod) = lastmod {
            xml.push_str(&format!("    <lastmod>{lastmod}</lastmod>\n"));
        }
        xml.push_str("  </url>\n");
    }
    xml.push_str("</urlset>\n");
    xml
}

fn index(locs: &[&str]) -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for loc in locs {
        xml.push_str(&format!("  <sitemap>\n    <loc>{loc}</loc>\n    <lastmod>2024-01-01</lastmod>\n  </sitemap>\n"));
    }
    xml.push_str("</sitemapindex>\n");
    xml
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

async fn read_all(reader: &mut Reader, source: &str) -> (Vec<Entry>, Vec<Problem>) {
    let mut entries = Vec::new();
    let problems = reader.read(source, &mut |e| entries.push(e)).await;
    (entries, problems)
}

fn locs(entries: &[Entry]) -> Vec<&str> {
    let mut locs: Vec<&str> = entries.iter().map(|e| e.loc.as_str()).collect();
    locs.sort();
    locs
}

#[test]
fn the_read_future_is_send() {
    fn is_send<T: Send>(_: &T) {}
    let mut reader = Reader::new(client(), 1);
    let mut each = |_: Entry| {};
    let future = reader.read("x.xml", &mut each);
    is_send(&future);
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
    let path = dir.join(name);
    fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn urlset_with_lastmod_in_several_forms() {
    let dir = tempfile::tempdir().unwrap();
    let xml = urlset(&[
        ("https://e.com/year", Some("2024")),
        ("https://e.com/month", Some("2024-05")),
        ("https://e.com/day", Some("2024-05-06")),
        ("https://e.com/minutes", Some("2024-05-06T07:08+02:00")),
        ("https://e.com/seconds", Some("2024-05-06T07:08:09Z")),
        ("https://e.com/fraction", Some(" 2024-05-06T07:08:09.25-01:30 ")),
        ("https://e.com/none", None),
        ("https://e.com/bad", Some("last tuesday")),
    ]);
    let path = write(dir.path(), "sitemap.xml", &xml);
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &path).await;
    let got: Vec<(&str, Option<DateTime<Utc>>)> = entries.iter().map(|e| (e.loc.as_str(), e.lastmod)).collect();
    assert_eq!(
        got,
        vec![
            ("https://e.com/year", Some(utc(2024, 1, 1, 0, 0, 0))),
            ("https://e.com/month", Some(utc(2024, 5, 1, 0, 0, 0))),
            ("https://e.com/day", Some(utc(2024, 5, 6, 0, 0, 0))),
            ("https://e.com/minutes", Some(utc(2024, 5, 6, 5, 8, 0))),
            ("https://e.com/seconds", Some(utc(2024, 5, 6, 7, 8, 9))),
            ("https://e.com/fraction", Some(utc(2024, 5, 6, 8, 38, 9) + chrono::Duration::milliseconds(250))),
            ("https://e.com/none", None),
            ("https://e.com/bad", None),
        ]
    );
    // Each <url> takes 4 lines (3 without lastmod); <loc> is at column 5.
    assert_eq!(entries[0].place.to_string(), format!("{path}:4:5"));
    assert_eq!(entries[1].place.to_string(), format!("{path}:8:5"));
    assert_eq!(entries[7].place.to_string(), format!("{path}:31:5"));
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::at(path.as_str(), 32, 5),
            message: "<lastmod> \"last tuesday\" is not a W3C datetime; that URL goes without a lastmod".into(),
        }]
    );
}

#[tokio::test]
async fn entities_cdata_and_trimming() {
    let dir = tempfile::tempdir().unwrap();
    let xml = "\u{feff}<urlset>\n<url><loc>\n   https://e.com/?a=1&amp;b=2&#x41;&#66;&lt;  \n</loc></url>\n\
               <url><loc><![CDATA[ https://e.com/?x=1&y=<2> ]]></loc></url>\n\
               <url><loc>https://e.com/<![CDATA[é]]>&apos;s</loc></url>\n\
               <url><loc>https://e.com/&nbsp;</loc></url>\n\
               <url><loc>  </loc></url>\n\
               <url><loc/></url>\n\
               <url><lastmod>2024-01-01</lastmod></url>\n\
               </urlset>";
    let path = write(dir.path(), "s.xml", xml);
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &path).await;
    let got: Vec<&str> = entries.iter().map(|e| e.loc.as_str()).collect();
    assert_eq!(got, vec!["https://e.com/?a=1&b=2AB<", "https://e.com/?x=1&y=<2>", "https://e.com/é's"]);
    assert_eq!(entries[0].place.to_string(), format!("{path}:2:6"));
    let places: Vec<(String, &str)> = problems.iter().map(|p| (p.place.to_string(), p.message.as_str())).collect();
    assert_eq!(places.len(), 4, "{problems:#?}");
    assert_eq!(places[0].0, format!("{path}:7:6"));
    assert!(places[0].1.starts_with("unknown entity &nbsp; in <loc>"), "{}", places[0].1);
    assert_eq!(places[1], (format!("{path}:8:6"), "empty <loc>"));
    assert_eq!(places[2], (format!("{path}:9:6"), "empty <loc>"));
    assert_eq!(places[3], (format!("{path}:10:1"), "<url> without <loc>"));
}

#[tokio::test]
async fn extensions_and_namespaces_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>
<!-- generated -->
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
        xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>https://e.com/page</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/page"/>
    <image:image><image:loc>https://e.com/img.png</image:loc></image:image>
    <video:video><video:content_loc>https://e.com/v.mp4</video:content_loc><video:player_loc>https://e.com/p</video:player_loc></video:video>
    <news:news><news:publication><news:name>E</news:name></news:publication><news:publication_date>2024-02-03</news:publication_date></news:news>
    <changefreq>daily</changefreq><priority>0.5</priority>
    <lastmod>2024-02-03T04:05:06+00:00</lastmod>
  </url>
  <sm:url xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:loc>https://e.com/prefixed</sm:loc></sm:url>
</urlset>"#;
    let path = write(dir.path(), "s.xml", xml);
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert_eq!(problems, vec![]);
    assert_eq!(
        entries,
        vec![
            Entry {
                loc: "https://e.com/page".into(),
                lastmod: Some(utc(2024, 2, 3, 4, 5, 6)),
                place: Position::at(path.as_str(), 10, 5),
            },
            Entry { loc: "https://e.com/prefixed".into(), lastmod: None, place: Position::at(path.as_str(), 18, 66) },
        ]
    );
}

#[tokio::test]
async fn index_of_plain_and_gzipped_sitemaps_served() {
    let a = urlset(&[("https://e.com/a1", Some("2024-01-02")), ("https://e.com/a2", None)]);
    let b = urlset(&[("https://e.com/b1", Some("2024-03-04T05:06Z"))]);
    let server = Server::start(|base| {
        HashMap::from([
            (
                "/sitemap.xml".to_string(),
                ok(
                    "application/xml",
                    index(&[&format!("{base}/a.xml"), &format!("{base}/b.xml.gz"), &format!("{base}/a.xml#again")]),
                ),
            ),
            ("/a.xml".to_string(), ok("application/xml", a.as_bytes())),
            ("/b.xml.gz".to_string(), ok("application/gzip", gzip(b.as_bytes()))),
        ])
    });
    let mut reader = Reader::new(client(), 50 * MIB);
    let source = format!("{}/sitemap.xml", server.base);
    let (entries, problems) = read_all(&mut reader, &source).await;
    assert_eq!(problems, vec![]);
    let got: Vec<(&str, Option<DateTime<Utc>>, String)> =
        entries.iter().map(|e| (e.loc.as_str(), e.lastmod, e.place.to_string())).collect();
    let a_place = |line| format!("{}/a.xml:{line}:5", server.base);
    let b_place = format!("{}/b.xml.gz:4:5", server.base);
    assert_eq!(
        got,
        vec![
            ("https://e.com/a1", Some(utc(2024, 1, 2, 0, 0, 0)), a_place(4)),
            ("https://e.com/a2", None, a_place(8)),
            ("https://e.com/b1", Some(utc(2024, 3, 4, 5, 6, 0)), b_place),
        ]
    );
    assert_eq!(server.hits("/a.xml"), 1);
    // Read once per Reader: a second read of the same source reads nothing.
    let (entries, problems) = read_all(&mut reader, &source).await;
    assert_eq!((entries.len(), problems.len()), (0, 0));
    assert_eq!(server.hits("/sitemap.xml"), 1);
}

#[tokio::test]
async fn local_index_reads_local_copies_of_its_children() {
    let dir = tempfile::tempdir().unwrap();
    // The index names the live site; its children sit beside it.
    let a = urlset(&[("https://e.com/a1", Some("2024-01-02"))]);
    let b = urlset(&[("https://e.com/b1", Some("2024-03-04")), ("https://e.com/b2", None)]);
    write(dir.path(), "sitemap-a.xml", &a);
    write(dir.path(), "sitemap-b.xml.gz", gzip(b.as_bytes()));
    write(dir.path(), "c.xml", urlset(&[("https://e.com/c1", None)]));
    let root = write(
        dir.path(),
        "sitemap.xml",
        index(&["https://example.invalid/sitemap-a.xml", "https://example.invalid/sitemap-b.xml.gz", "c.xml"]),
    );
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &root).await;
    assert_eq!(problems, vec![]);
    let b_path = dir.path().join("sitemap-b.xml.gz").display().to_string();
    assert_eq!(
        entries.iter().map(|e| (e.loc.as_str(), e.lastmod)).collect::<Vec<_>>(),
        vec![
            ("https://e.com/a1", Some(utc(2024, 1, 2, 0, 0, 0))),
            ("https://e.com/b1", Some(utc(2024, 3, 4, 0, 0, 0))),
            ("https://e.com/b2", None),
            ("https://e.com/c1", None),
        ]
    );
    assert_eq!(entries[2].place.to_string(), format!("{b_path}:8:5"));
}

#[tokio::test]
async fn gzip_is_found_by_its_magic_bytes() {
    let body = urlset(&[("https://e.com/z", Some("2024-06-07"))]);
    let server = Server::start(|_| {
        HashMap::from([
            ("/sitemap".to_string(), ok("application/octet-stream", gzip(body.as_bytes()))),
            // A .gz served gzipped once more (Content-Encoding: gzip over a .gz file).
            ("/twice.xml.gz".to_string(), ok("application/octet-stream", gzip(&gzip(body.as_bytes())))),
        ])
    });
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &format!("{}/sitemap", server.base)).await;
    assert_eq!(problems, vec![]);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].lastmod, Some(utc(2024, 6, 7, 0, 0, 0)));
    assert_eq!(entries[0].place.to_string(), format!("{}/sitemap:4:5", server.base));
    let (entries, problems) = read_all(&mut reader, &format!("{}/twice.xml.gz", server.base)).await;
    assert_eq!((locs(&entries), problems), (vec!["https://e.com/z"], vec![]));

    // A local gzip file without a .gz name.
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "sitemap.xml", gzip(body.as_bytes()));
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert_eq!((locs(&entries), problems), (vec!["https://e.com/z"], vec![]));
}

#[tokio::test]
async fn robots_txt_sitemap_lines_are_followed() {
    let server = Server::start(|base| {
        HashMap::from([
            (
                "/robots.txt".to_string(),
                ok(
                    "text/plain",
                    format!(
                        "User-agent: *\nDisallow: /private\n  sitemap :  {base}/one.xml\r\nSITEMAP:{base}/two.xml # news\n# Sitemap: {base}/no.xml\n"
                    ),
                ),
            ),
            ("/one.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/1", None)]))),
            ("/two.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/2", None)]))),
        ])
    });
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &format!("{}/robots.txt", server.base)).await;
    assert_eq!(problems, vec![]);
    assert_eq!(locs(&entries), vec!["https://e.com/1", "https://e.com/2"]);
    assert_eq!(server.hits("/no.xml"), 0);

    // A local robots.txt; its sitemap is read from beside it, a missing one names the robots.txt line.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "sitemap.xml", urlset(&[("https://e.com/local", None)]));
    let robots = write(
        dir.path(),
        "robots.txt",
        format!("Sitemap: https://example.invalid/sitemap.xml\nSitemap: {}/gone.xml\n", server.base),
    );
    // A file has no host of its own: a remote sitemap it lists is fetched only from a host the reach lists.
    let (entries, problems) = read_all(&mut reader, &robots).await;
    assert_eq!(locs(&entries), vec!["https://e.com/local"]);
    let host = server.base.trim_start_matches("http://");
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::of(format!("{}/gone.xml", server.base)),
            message: format!(
                "not fetched: {host} is not a host this source may reach (its own, its property's site and sources, \
                 or one a property's `fetch_hosts` lists); list it there to allow it (listed at {robots}:2:10)"
            ),
        }]
    );
    assert_eq!(server.hits("/gone.xml"), 0);
    let mut reader = Reader::new(client(), 50 * MIB);
    reader.reach(Reach::new(vec![crate::net::HostPattern::parse(host).unwrap()], "`fetch_hosts`"));
    let (entries, problems) = read_all(&mut reader, &robots).await;
    assert_eq!(locs(&entries), vec!["https://e.com/local"]);
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::of(format!("{}/gone.xml", server.base)),
            message: format!("HTTP 404 Not Found (listed at {robots}:2:10)"),
        }]
    );
    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    let bare = write(&sub, "ROBOTS.TXT", "User-agent: *\n");
    let (_, problems) = read_all(&mut reader, &bare).await;
    assert_eq!(problems, vec![Problem { place: Position::of(bare), message: "no `Sitemap:` line in it".into() }]);
}

#[tokio::test]
async fn a_cycle_is_reported_with_its_loop() {
    let server = Server::start(|base| {
        HashMap::from([
            (
                "/index.xml".to_string(),
                ok("text/xml", index(&[&format!("{base}/index.xml"), &format!("{base}/a.xml")])),
            ),
            ("/a.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/a", None)]))),
        ])
    });
    let mut reader = Reader::new(client(), 50 * MIB);
    let source = format!("{}/index.xml", server.base);
    let (entries, problems) = read_all(&mut reader, &source).await;
    assert_eq!(locs(&entries), vec!["https://e.com/a"]);
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::at(source.as_str(), 4, 5),
            message: format!("sitemap index loop: {source} → {source}; not followed again"),
        }]
    );
    assert_eq!(server.hits("/index.xml"), 1);

    // a.xml → b.xml → a.xml, as local files.
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.xml", index(&["https://e.com/b.xml"]));
    let b = write(dir.path(), "b.xml", index(&["https://e.com/a.xml", "https://e.com/c.xml"]));
    write(dir.path(), "c.xml", urlset(&[("https://e.com/c", None)]));
    let (entries, problems) = read_all(&mut reader, &a).await;
    assert_eq!(locs(&entries), vec!["https://e.com/c"]);
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::at(b.as_str(), 4, 5),
            message: format!("sitemap index loop: {a} → {b} → {a}; not followed again"),
        }]
    );
}

#[tokio::test]
async fn a_missing_and_a_malformed_child_do_not_stop_the_good_one() {
    let bad = "<?xml version=\"1.0\"?>\n<urlset>\n  <url><loc>https://e.com/early</loc></url>\n  <url><loc>https://é.com/x</lo></url>\n</urlset>\n";
    let unclosed = "<urlset>\n<url><loc>https://e.com/u</loc></url>\n<url><loc>https://e.com/v</loc";
    let server = Server::start(|base| {
        HashMap::from([
            (
                "/index.xml".to_string(),
                ok(
                    "text/xml",
                    index(&[
                        &format!("{base}/missing.xml"),
                        &format!("{base}/bad.xml"),
                        &format!("{base}/unclosed.xml.gz"),
                        &format!("{base}/good.xml"),
                    ]),
                ),
            ),
            ("/bad.xml".to_string(), ok("text/xml", bad)),
            ("/unclosed.xml.gz".to_string(), ok("application/gzip", gzip(unclosed.as_bytes()))),
            ("/good.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/good", Some("2024-01-01"))]))),
        ])
    });
    let base = &server.base;
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &format!("{base}/index.xml")).await;
    assert_eq!(locs(&entries), vec!["https://e.com/early", "https://e.com/good", "https://e.com/u"]);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert_eq!(problems[0].place.to_string(), format!("{base}/missing.xml"));
    assert_eq!(problems[0].message, format!("HTTP 404 Not Found (listed at {base}/index.xml:4:5)"));
    // `</lo>` starts at line 4, column 28 (é is one column).
    assert_eq!(problems[1].place.to_string(), format!("{base}/bad.xml:4:28"));
    assert!(problems[1].message.starts_with("malformed XML: "), "{}", problems[1].message);
    assert!(problems[1].message.contains("lo"), "{}", problems[1].message);
    // The unclosed `</loc` starts at line 3, column 26.
    assert_eq!(problems[2].place.to_string(), format!("{base}/unclosed.xml.gz:3:26"));
    assert!(problems[2].message.starts_with("malformed XML: "), "{}", problems[2].message);
}

#[tokio::test]
async fn a_loc_over_the_url_cap_is_a_problem_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = Reader::new(client(), 50 * MIB);
    let base = "https://e.com/";
    let at_cap = format!("{base}{}", "b".repeat(MAX_URL_BYTES - base.len()));
    // Entities split the text into several pieces; the count goes on across them (one byte over).
    let over = format!("{base}{}&amp;c", "c".repeat(MAX_URL_BYTES - base.len() - 1));
    let xml = format!(
        "<urlset>\n<url><loc>\n  {at_cap}\n</loc></url>\n<url><loc>{over}</loc></url>\n<url><loc>{base}ok</loc></url>\n</urlset>"
    );
    let path = write(dir.path(), "s.xml", xml);
    let (entries, problems) = read_all(&mut reader, &path).await;
    let lens: Vec<usize> = entries.iter().map(|e| e.loc.len()).collect();
    assert_eq!(lens, [MAX_URL_BYTES, "https://e.com/ok".len()], "the one at the cap is read, whitespace aside");
    assert!(entries[0].loc == at_cap);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].place.to_string(), format!("{path}:5:6"), "the place of its <loc>");
    assert!(
        problems[0].message.starts_with("<loc> is 8.0 KiB long; a URL is at most 8 KiB"),
        "{}",
        problems[0].message
    );

    // An index child too.
    let long_child = format!("{base}{}", "d".repeat(100_000));
    let path = write(dir.path(), "i.xml", index(&[&long_child]));
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert!(entries.is_empty());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].message.contains("97.7 KiB"), "{}", problems[0].message);
    assert!(problems[0].message.len() < 400, "{}", problems[0].message);
}

#[tokio::test]
async fn a_redirect_from_https_to_http_is_refused_and_named() {
    let plain = Server::start(|_| {
        HashMap::from([("/ok.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/local", None)])))])
    });
    let plain_base = plain.base.clone();
    let tls = Server::start_tls(|base| {
        HashMap::from([
            ("/down.xml".to_string(), redirect("http://sitemaps.example/sitemap.xml")),
            ("/to-loopback.xml".to_string(), redirect(&format!("{plain_base}/ok.xml"))),
            ("/moved.xml".to_string(), redirect(&format!("{base}/secure.xml"))),
            ("/secure.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/secure", None)]))),
            (
                "/index.xml".to_string(),
                ok("text/xml", index(&[&format!("{base}/down.xml"), &format!("{base}/moved.xml")])),
            ),
        ])
    });
    let base = &tls.base;
    let mut reader = Reader::new(fetch_client_trusting_the_test_certificate(), 50 * MIB);
    // The plain server is another host (another port): reached only because it is listed.
    let plain_host = plain_base.trim_start_matches("http://");
    reader.reach(Reach::new(vec![crate::net::HostPattern::parse(plain_host).unwrap()], "`fetch_hosts`"));

    // https → http on another host: refused, nothing fetched there, and said so.
    let (entries, problems) = read_all(&mut reader, &format!("{base}/down.xml")).await;
    assert!(entries.is_empty());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].place.to_string(), format!("{base}/down.xml"));
    assert_eq!(
        problems[0].message,
        format!(
            "cannot fetch: the redirect from {base}/down.xml to http://sitemaps.example/sitemap.xml was refused: it \
             leaves https for plain http, where anyone on the way can change what is read"
        )
    );

    // In an index: that child is the problem (with where it was listed), its sibling is read.
    let (entries, problems) = read_all(
        &mut Reader::new(fetch_client_trusting_the_test_certificate(), 50 * MIB),
        &format!("{base}/index.xml"),
    )
    .await;
    assert_eq!(locs(&entries), vec!["https://e.com/secure"]);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].message.contains("was refused") && problems[0].message.contains("(listed at "),
        "{}",
        problems[0].message
    );

    // https → https is followed, and https → http on this machine (loopback) too.
    let (entries, problems) = read_all(&mut reader, &format!("{base}/to-loopback.xml")).await;
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(locs(&entries), vec!["https://e.com/local"]);
    assert_eq!(plain.hits("/ok.xml"), 1);
}

#[tokio::test]
async fn malformed_local_files_name_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = Reader::new(client(), 50 * MIB);
    let cases: [(&str, &str, &str, &str); 6] = [
        (
            "eof.xml",
            "<urlset>\n  <url>\n    <loc>https://e.com/</loc>\n",
            "4:1",
            "the file ends inside <url> opened at 2:3",
        ),
        (
            "html.xml",
            "<!DOCTYPE html>\n<html><body>hi</body></html>",
            "2:1",
            "not a sitemap: the root element is <html>",
        ),
        ("two.xml", "<urlset></urlset>\n<urlset></urlset>", "2:1", "a second root element"),
        ("stray.xml", "<urlset>\n</url>\n</urlset>", "2:1", "malformed XML: "),
        ("empty.xml", "  \n", "", "empty: no URL in it"),
        ("comment.xml", "<!-- nothing -->\n", "", "empty: no <urlset>, <sitemapindex>, <rss> or <feed> in it"),
    ];
    for (name, xml, at, message) in cases {
        let path = write(dir.path(), name, xml);
        let (_, problems) = read_all(&mut reader, &path).await;
        assert_eq!(problems.len(), 1, "{name}: {problems:#?}");
        let place = if at.is_empty() { path.clone() } else { format!("{path}:{at}") };
        assert_eq!(problems[0].place.to_string(), place, "{name}");
        assert!(problems[0].message.contains(message), "{name}: {}", problems[0].message);
    }
    let missing = dir.path().join("nope.xml").display().to_string();
    let (_, problems) = read_all(&mut reader, &missing).await;
    assert_eq!(problems[0].place, Position::of(missing));
    assert!(problems[0].message.starts_with("cannot read: "), "{}", problems[0].message);
    let (_, problems) = read_all(&mut reader, "ftp://e.com/sitemap.xml").await;
    assert!(problems[0].message.contains("cannot read ftp: URLs"), "{}", problems[0].message);
}

/// 12 URLs of 62 bytes each after a header; the cap falls inside the fourth.
fn big_sitemap() -> (String, u64) {
    let urls: Vec<String> = (10..22).map(|i| format!("https://e.com/page-{i}")).collect();
    let xml = urlset(&urls.iter().map(|u| (u.as_str(), None)).collect::<Vec<_>>());
    let cap = xml.find("https://e.com/page-13").unwrap() as u64 + 5;
    (xml, cap)
}

fn assert_capped(entries: &[Entry], problems: &[Problem], name: &str, cap: u64) {
    assert_eq!(locs(entries), vec!["https://e.com/page-10", "https://e.com/page-11", "https://e.com/page-12"]);
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::of(name),
            message: format!(
                "larger than the {cap} B cap (sitemap.max_bytes); nothing past the first {cap} B was read"
            ),
        }]
    );
}

#[tokio::test]
async fn a_body_over_the_cap_stops_there() {
    let (xml, cap) = big_sitemap();
    let server = Server::start(|_| {
        HashMap::from([
            ("/big.xml".to_string(), ok("text/xml", xml.as_bytes())),
            ("/big.xml.gz".to_string(), ok("application/gzip", gzip(xml.as_bytes()))),
        ])
    });
    let dir = tempfile::tempdir().unwrap();
    let plain = write(dir.path(), "big.xml", &xml);
    let gz = write(dir.path(), "big.xml.gz", gzip(xml.as_bytes()));
    for source in [format!("{}/big.xml", server.base), format!("{}/big.xml.gz", server.base), plain, gz] {
        let mut reader = Reader::new(client(), cap);
        let (entries, problems) = read_all(&mut reader, &source).await;
        assert_capped(&entries, &problems, &source, cap);
    }
    // Exactly at the cap is within it.
    let mut reader = Reader::new(client(), xml.len() as u64);
    let (entries, problems) = read_all(&mut reader, &format!("{}/big.xml", server.base)).await;
    assert_eq!((entries.len(), problems), (12, vec![]));
    assert_eq!(exact_size(50 * MIB), "50 MiB");
    assert_eq!(exact_size(512 * 1024), "512 KiB");
}

#[tokio::test]
async fn nesting_deeper_than_three_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d0 = write(dir.path(), "d0.xml", index(&["https://e.com/d1.xml"]));
    write(dir.path(), "d1.xml", index(&["https://e.com/d2.xml"]));
    write(dir.path(), "d2.xml", index(&["https://e.com/d3.xml", "https://e.com/u3.xml"]));
    let d3 = write(dir.path(), "d3.xml", index(&["https://e.com/d4.xml", "https://e.com/u4.xml"]));
    write(dir.path(), "d4.xml", urlset(&[("https://e.com/deep", None)]));
    write(dir.path(), "u4.xml", urlset(&[("https://e.com/deep2", None)]));
    write(dir.path(), "u3.xml", urlset(&[("https://e.com/u3", None)]));
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &d0).await;
    assert_eq!(locs(&entries), vec!["https://e.com/u3"]);
    let p = |n: &str| dir.path().join(n).display().to_string();
    assert_eq!(
        problems,
        vec![Problem {
            place: Position::at(d3.as_str(), 4, 5),
            message: format!(
                "sitemap indexes nested more than 3 deep ({} → {} → {} → {} → {}): 2 child sitemaps of this index not read",
                d0,
                p("d1.xml"),
                p("d2.xml"),
                d3,
                p("d4.xml")
            ),
        }]
    );
}

fn entry_lines(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            let lastmod = e.lastmod.map(|d| d.to_rfc3339()).unwrap_or_default();
            let place = e.place.to_string();
            format!("{} {} {lastmod}", place.rsplit('/').next().unwrap_or_default(), e.loc)
        })
        .collect()
}

#[tokio::test]
async fn rss_and_atom_feeds_are_sitemaps() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = Reader::new(client(), 50 * MIB);
    let rss = "<rss version=\"2.0\" xmlns:atom=\"http://www.w3.org/2005/Atom\"><channel>\n\
        <link>https://e.com/</link>\n\
        <item><link>https://e.com/a</link><guid>https://e.com/?p=1</guid><pubDate>Thu, 05 Jan 2017 13:34:51 +0100</pubDate></item>\n\
        <item><guid isPermaLink=\"true\">https://e.com/b</guid><atom:updated>2024-02-29T10:00:00Z</atom:updated>\
        <pubDate>Thu, 05 Jan 2017 13:34:51 +0100</pubDate></item>\n\
        <item><guid>https://e.com/c</guid><pubDate>yesterday</pubDate></item>\n\
        <item><guid isPermaLink=\"false\">https://e.com/d</guid></item>\n\
        <item><guid>urn:uuid:1</guid></item>\n\
        <item><title>none</title></item>\n\
        </channel></rss>";
    let path = write(dir.path(), "feed", rss);
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert_eq!(
        entry_lines(&entries),
        [
            "feed:3:7 https://e.com/a 2017-01-05T12:34:51+00:00",
            "feed:4:7 https://e.com/b 2024-02-29T10:00:00+00:00",
            "feed:5:7 https://e.com/c ",
        ]
    );
    let problems: Vec<String> = problems.iter().map(|p| p.to_string().replace(&path, "feed")).collect();
    assert_eq!(
        problems,
        [
            "feed:6:1: <item> without <link>, and its <guid> is not a permalink (isPermaLink=\"false\")",
            "feed:7:1: <item> without <link>, and its <guid> is not a URL",
            "feed:8:1: <item> without <link> or <guid>",
            "feed:5:35: <pubDate> \"yesterday\" is not an RFC 822 date; that URL goes without a lastmod",
        ]
    );

    let atom = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n\
        <link href=\"https://e.com/\"/>\n\
        <entry><link rel=\"edit\" href=\"https://e.com/edit\"/><link rel=\"alternate\" href=\"https://e.com/a?x=1&amp;y=2\"/>\
        <link href=\"https://e.com/other\"/><updated>2024-01-02T03:04:05Z</updated></entry>\n\
        <entry><link href=\"https://e.com/b\"></link><modified>2024-01-03</modified></entry>\n\
        <entry><link rel=\"self\" href=\"https://e.com/c\"/></entry>\n\
        </feed>";
    let path = write(dir.path(), "atom.xml.txt", atom);
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert_eq!(
        entry_lines(&entries),
        [
            "atom.xml.txt:4:52 https://e.com/a?x=1&y=2 2024-01-02T03:04:05+00:00",
            "atom.xml.txt:5:8 https://e.com/b 2024-01-03T00:00:00+00:00"
        ]
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].to_string(), format!("{path}:6:1: <entry> without <link rel=\"alternate\" href=…>"));

    let rdf = "<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns=\"http://purl.org/rss/1.0/\">\
        <channel><link>https://e.com/</link></channel><item><link>https://e.com/x</link></item></rdf:RDF>";
    let path = write(dir.path(), "rdf.xml", rdf);
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert_eq!(locs(&entries), ["https://e.com/x"]);
    assert!(problems.is_empty(), "{problems:?}");
}

#[tokio::test]
async fn encodings_utf16_is_decoded_and_another_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut reader = Reader::new(client(), 50 * MIB);
    let xml = urlset(&[("https://e.com/é", Some("2024-01-01"))]).replace("UTF-8", "UTF-16");
    for big_endian in [false, true] {
        let mut bytes = Vec::new();
        for unit in [0xFEFF].into_iter().chain(xml.encode_utf16()) {
            bytes.extend(if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
        }
        let path = write(dir.path(), &format!("utf16-{big_endian}.xml"), gzip(&bytes));
        let (entries, problems) = read_all(&mut reader, &path).await;
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            entry_lines(&entries),
            [format!("utf16-{big_endian}.xml:4:5 https://e.com/é 2024-01-01T00:00:00+00:00")]
        );
    }
    let latin = urlset(&[("https://e.com/a", None)]).replace("UTF-8", "ISO-8859-1");
    let path = write(dir.path(), "latin.xml", latin);
    let (entries, problems) = read_all(&mut reader, &path).await;
    assert!(entries.is_empty());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .to_string()
            .starts_with(&format!("{path}:1:1: encoded in ISO-8859-1 (its XML declaration says so)")),
        "{problems:?}"
    );
}

#[tokio::test]
async fn relative_children_of_local_files_are_read_from_their_folder() {
    let dir = tempfile::tempdir().unwrap();
    let public = dir.path().join("public");
    fs::create_dir_all(public.join("etc")).unwrap();
    write(&public, "sitemap.xml", index(&["/child.xml", "/etc/hostname", "../../etc/hostname", "/../secret.txt"]));
    write(&public, "child.xml", urlset(&[("https://e.com/child", None)]));
    write(dir.path(), "secret.txt", "https://e.com/secret\n");
    let robots = write(&public, "robots.txt", "User-agent: *\nSitemap: /sitemap.xml\n");
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &robots).await;
    assert_eq!(locs(&entries), ["https://e.com/child"]);
    let problems: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(problems.len(), 3, "{problems:#?}");
    let hostname = public.join("etc").join("hostname").display().to_string();
    assert!(problems[0].starts_with(&format!("{hostname}: cannot read: ")), "{problems:#?}");
    assert!(problems[1].contains("`../../etc/hostname` leaves the folder of the file that lists it"), "{problems:#?}");
    assert!(problems[2].contains("`/../secret.txt` leaves the folder"), "{problems:#?}");
}

#[tokio::test]
async fn a_child_refused_by_one_reach_is_read_by_a_reach_that_allows_it() {
    let other = Server::start(|_| {
        HashMap::from([("/x.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/x", None)])))])
    });
    let child = format!("{}/x.xml", other.base);
    let site = Server::start(|_| {
        HashMap::from([
            ("/a.xml".to_string(), ok("text/xml", index(&[&child]))),
            ("/b.xml".to_string(), ok("text/xml", index(&[&child]))),
        ])
    });
    let mut reader = Reader::new(client(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &format!("{}/a.xml", site.base)).await;
    assert!(entries.is_empty());
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].message.starts_with("not fetched: "), "{}", problems[0].message);
    assert_eq!(other.hits("/x.xml"), 0);

    // Another property's reach lists the other server: the same child is read now, once.
    let host = other.base.trim_start_matches("http://");
    reader.reach(Reach::new(vec![crate::net::HostPattern::parse(host).unwrap()], "`fetch_hosts`"));
    let (entries, problems) = read_all(&mut reader, &format!("{}/b.xml", site.base)).await;
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(locs(&entries), vec!["https://e.com/x"]);
    assert_eq!(other.hits("/x.xml"), 1);
}

#[tokio::test]
async fn a_name_is_fetched_at_the_address_it_was_pinned_to() {
    let server = Server::start(|_| {
        HashMap::from([("/sitemap.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/pinned", None)])))])
    });
    let port = server.base.rsplit(':').next().unwrap().to_string();
    // No DNS knows `sitemaps.test`: only the pins make the client reach the server.
    let pins = Pins::new(HashMap::from([("sitemaps.test".to_string(), std::net::IpAddr::from([127, 0, 0, 1]))]));
    let builder = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(10));
    let mut reader = Reader::new(FetchClient::new(builder, pins).unwrap(), 50 * MIB);
    let (entries, problems) = read_all(&mut reader, &format!("http://sitemaps.test:{port}/sitemap.xml")).await;
    assert!(problems.is_empty(), "{problems:#?}");
    assert_eq!(locs(&entries), vec!["https://e.com/pinned"]);
    assert_eq!(server.hits("/sitemap.xml"), 1);
}
