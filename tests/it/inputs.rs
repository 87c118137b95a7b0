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
    assert!(!done.stderr.contains("bad.xml"), "--json: told in the document only: {}", done.stderr);
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
    assert!(plan.get("before_since").is_none(), "only with --since: {plan:#}");
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

    // --since keeps only lastmods at or after it: a dry run says how many it
    // leaves out (/b, older, and /c and /d, which have no lastmod).
    let since = ["submit", "--dry-run", "--force", "--since", "2026-12-01", "--sitemap", "sitemap.xml"];
    let dry = sb.indexq(&[&["--json"][..], &since].concat()).now("2026-12-06T09:00:00Z").output().code(0);
    let dry = dry.submit_doc();
    assert_eq!(dry.before_since, Some(3), "{dry:#?}");
    let planned: Vec<&str> = dry.plan.iter().flatten().map(|p| p.url.as_str()).collect();
    assert_eq!(planned, [sb.url("/a")]);
    let human = sb.indexq(&since).now("2026-12-06T09:00:00Z").output().code(0);
    assert!(human.stdout.contains("3 URLs are left out: their lastmod is before --since."), "{}", human.stdout);
    let doc = sb
        .indexq(&["--json", "submit", "--force", "--since", "2026-12-01", "--sitemap", "sitemap.xml"])
        .now("2026-12-06T09:00:00Z")
        .output()
        .code(0)
        .json();
    assert_eq!(count(&doc, "accepted"), 1);
    assert_eq!(sb.received_urls().last().unwrap(), &sb.url("/a"));
}

// ---- bounded reading: over-long lines, endless lines, binary streams ----

/// The binary's address space under `ulimit -v` (KiB): far above what a run
/// needs (about 60 MiB of address space for a debug build), far below what
/// holding one of the inputs below would take.
const ADDRESS_SPACE_KIB: u64 = 256 * 1024;

/// Runs `run` through `sh` under `ulimit -v ADDRESS_SPACE_KIB` (and a 60 s
/// `timeout`), its standard input fed by `feed` (a shell pipeline) if given.
fn bounded(run: Run, feed: Option<&str>) -> Done {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let mut line = format!("exec timeout 60 {}", quote(run.cmd.get_program()));
    for arg in run.cmd.get_args() {
        line.push(' ');
        line.push_str(&quote(arg));
    }
    let script = match feed {
        Some(feed) => format!("ulimit -v {ADDRESS_SPACE_KIB} && {feed} | {line}"),
        None => format!("ulimit -v {ADDRESS_SPACE_KIB} && {line}"),
    };
    let mut sh = std::process::Command::new("sh");
    sh.args(["-c", &script]).env_clear().stdin(std::process::Stdio::null());
    for (k, v) in run.cmd.get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    if let Some(dir) = run.cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    Done::from(sh.output().unwrap())
}

/// The `invalid` results of a run, as (source, url, message).
fn invalid_lines(doc: &json::Submit) -> Vec<(String, String, String)> {
    doc.with_outcome(json::Outcome::Invalid)
        .into_iter()
        .map(|r| {
            let source = r.source.clone().unwrap_or_else(|| panic!("an invalid line names its place: {r:?}"));
            (source, r.url.clone(), r.message.clone())
        })
        .collect()
}

#[test]
fn a_line_over_the_url_cap_is_invalid_with_its_place_and_the_rest_goes_through() {
    let sb = Sandbox::new();
    // 5 MB: far over the 8 KiB cap, small enough to write in a test.
    let long = format!("{}{}", sb.url("/"), "a".repeat(5 << 20));
    let list = format!("{}\n{long}\n{}\n", sb.url("/good-1"), sb.url("/good-2"));
    sb.file("urls.txt", &list);
    let done = sb.indexq(&["--json", "submit", "urls.txt"]).now(NOW).output().code(3);
    assert_eq!(sent(&sb), [sb.url("/good-1"), sb.url("/good-2")], "both good URLs go");
    let invalid = invalid_lines(&done.submit_doc());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    let (source, url, message) = &invalid[0];
    assert_eq!(source, "urls.txt:2");
    assert!(message.contains("8 KiB") && message.contains("5.0 MiB"), "{message}");
    assert!(url.starts_with(&sb.url("/aaa")) && url.ends_with('…') && url.len() < 200, "a short prefix: {url}");
    assert!(!done.stderr.contains("urls.txt:2"), "--json: told in the document only: {}", done.stderr);
    // Human output names it on stderr, by its short prefix.
    let human = sb.indexq(&["submit", "urls.txt"]).now(NOW).output().code(3);
    assert!(human.stderr.contains("urls.txt:2") && human.stderr.len() < 4096, "{}", human.stderr);

    // A line exactly at the cap is read (and sent); one byte more is not.
    let sb = Sandbox::new();
    let base = sb.url("/");
    let at_cap = format!("{base}{}", "b".repeat(8192 - base.len()));
    let over = format!("{base}{}", "c".repeat(8193 - base.len()));
    sb.file("edge.txt", &format!("{at_cap}\r\n{over}\r\n"));
    let doc = sb.indexq(&["--json", "submit", "edge.txt"]).now(NOW).output().code(3).submit_doc();
    assert_eq!(sent(&sb), [at_cap]);
    assert_eq!(invalid_lines(&doc)[0].0, "edge.txt:2");
}

#[test]
fn a_huge_line_from_a_pipe_is_skipped_in_bounded_memory() {
    let sb = Sandbox::new();
    // 300 MB in one line between two good URLs, under a 256 MiB address space.
    let feed = format!(
        "{{ echo {good1}; printf %s {base}; head -c 300000000 /dev/zero | tr '\\0' x; echo; echo {good2}; }}",
        good1 = sb.url("/good-1"),
        good2 = sb.url("/good-2"),
        base = sb.url("/"),
    );
    let done = bounded(sb.indexq(&["--json", "submit", "-"]).now(NOW), Some(&feed)).code(3);
    assert_eq!(sent(&sb), [sb.url("/good-1"), sb.url("/good-2")]);
    let invalid = invalid_lines(&done.submit_doc());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert_eq!(invalid[0].0, "<stdin>:2");
    assert!(invalid[0].2.contains("286.1 MiB"), "{}", invalid[0].2);
}

#[test]
fn a_stream_of_nuls_ends_as_one_invalid_result_in_bounded_memory() {
    let sb = Sandbox::new();
    sb.urls("urls.txt", &["/good"]);
    // /dev/zero never ends: the run must, without growing.
    let done = bounded(sb.indexq(&["--json", "submit", "urls.txt", "/dev/zero"]).now(NOW), None).code(3);
    assert_eq!(sent(&sb), [sb.url("/good")], "the other input still goes");
    let invalid = invalid_lines(&done.submit_doc());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    let (source, url, message) = &invalid[0];
    assert_eq!(source, "/dev/zero:1");
    assert!(message.contains("binary data") && message.contains("the rest of /dev/zero is not read"), "{message}");
    assert!(url.starts_with("\\x00\\x00") && url.len() < 200, "{url}");
    assert!(!done.stderr.contains("/dev/zero:1"), "--json: told in the document only: {}", done.stderr);

    // The same through a pipe: a few hundred MB of NULs on standard input.
    let sb = Sandbox::new();
    let feed = format!("{{ echo {}; head -c 400000000 /dev/zero; }}", sb.url("/first"));
    let done = bounded(sb.indexq(&["--json", "submit", "-"]).now(NOW), Some(&feed)).code(3);
    assert_eq!(sent(&sb), [sb.url("/first")]);
    let invalid = invalid_lines(&done.submit_doc());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert_eq!(invalid[0].0, "<stdin>:2");
}

#[test]
fn lines_with_nul_bytes_are_invalid_and_a_binary_file_stops_early() {
    // One stray NUL line (a crash left zeros in the file): reported, the rest goes.
    let sb = Sandbox::new();
    let list = format!("{}\n\0\0\0\0\n{}\n", sb.url("/a"), sb.url("/b"));
    sb.file("urls.txt", &list);
    let doc = sb.indexq(&["--json", "submit", "urls.txt"]).now(NOW).output().code(3).submit_doc();
    assert_eq!(sent(&sb), [sb.url("/a"), sb.url("/b")]);
    let invalid = invalid_lines(&doc);
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert_eq!(invalid[0].0, "urls.txt:2");
    assert!(invalid[0].2.contains("NUL"), "{}", invalid[0].2);

    // A UTF-16 list: NUL bytes in every line; after 8 of them the file is binary.
    let sb = Sandbox::new();
    let text: String = (0..50).map(|i| format!("{}\n", sb.url(&format!("/p{i}")))).collect();
    let utf16: Vec<u8> = text.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    std::fs::write(sb.dir.path().join("utf16.txt"), utf16).unwrap();
    let doc = sb.indexq(&["--json", "submit", "utf16.txt"]).now(NOW).output().code(3).submit_doc();
    assert!(sent(&sb).is_empty());
    let invalid = invalid_lines(&doc);
    assert_eq!(invalid.len(), 8, "{invalid:?}");
    assert!(invalid[7].2.contains("binary data") && invalid[7].2.contains("not read"), "{}", invalid[7].2);
}

#[test]
fn a_sitemap_loc_over_the_url_cap_is_invalid_with_its_place_and_the_rest_goes_through() {
    let sb = Sandbox::new();
    let long = format!("{}{}", sb.url("/"), "a".repeat(3 << 20));
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         <url><loc>{}</loc></url>\n<url>\n  <loc>\n    {long}\n  </loc>\n</url>\n<url><loc>{}</loc></url>\n</urlset>\n",
        sb.url("/good-1"),
        sb.url("/good-2")
    );
    sb.file("sitemap.xml", &xml);
    let done = sb.indexq(&["--json", "submit", "--sitemap", "sitemap.xml"]).now(NOW).output().code(3);
    assert_eq!(sent(&sb), [sb.url("/good-1"), sb.url("/good-2")]);
    let invalid = invalid_lines(&done.submit_doc());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    let (source, _, message) = &invalid[0];
    assert_eq!(source, "sitemap.xml:5:3", "the place of the <loc>");
    assert!(message.contains("3.0 MiB") && message.contains("8 KiB"), "{message}");
    assert!(message.len() < 500, "a short prefix only: {message}");
}

/// How many times `needle` appears in a run's stdout and stderr: (stdout, stderr).
fn told(done: &Done, needle: &str) -> (usize, usize) {
    (done.stdout.matches(needle).count(), done.stderr.matches(needle).count())
}

#[test]
fn each_bad_line_is_told_once_on_stderr_or_only_in_the_json_document() {
    let sb = Sandbox::new();
    let site = sb.site.url();
    sb.file("urls.txt", &format!("{site}/a\nhtp:/x\nnot a url\nhttps://elsewhere.example/p\n{site}/b\n"));
    let places = ["urls.txt:2: ", "urls.txt:3: ", "urls.txt:4: "];

    // Human: each on stderr, once; the report on stdout counts them.
    let done = sb.indexq(&["submit", "urls.txt"]).now(NOW).output().code(3);
    for place in places {
        assert_eq!(told(&done, place), (0, 1), "{place} once, on stderr:\n{}\n---\n{}", done.stdout, done.stderr);
    }
    assert!(done.stderr.contains("urls.txt:2: `htp:/x`: "), "with the line and the reason: {}", done.stderr);
    assert!(done.stdout.contains("3 invalid"), "{}", done.stdout);
    assert!(done.stdout.contains("accepted"), "the rest of the report stays on stdout: {}", done.stdout);

    // --json: in the document only.
    let done = sb.indexq(&["--json", "submit", "--force", "urls.txt"]).now(NOW).output().code(3);
    let doc = done.submit_doc();
    let sources: Vec<_> = doc.with_outcome(json::Outcome::Invalid).iter().map(|r| r.source.clone().unwrap()).collect();
    assert_eq!(sources, ["urls.txt:2", "urls.txt:3", "urls.txt:4"]);
    for place in places {
        assert_eq!(told(&done, place.trim_end_matches(": ")).1, 0, "no warning for {place}:\n{}", done.stderr);
    }

    // -q: a count and each of them, with its place, once.
    let done = sb.indexq(&["-q", "submit", "urls.txt"]).now(NOW).output().code(3);
    assert!(done.stderr.contains("invalid: 3 input lines were not submitted:\n"), "{}", done.stderr);
    for place in places {
        assert_eq!(told(&done, place), (0, 1), "{place} once, on stderr:\n{}\n---\n{}", done.stdout, done.stderr);
    }
}

#[test]
fn with_q_more_than_five_bad_lines_are_counted_and_the_first_five_named() {
    let sb = Sandbox::new();
    let lines: String = (1..=12).map(|n| format!("bad-{n}\n")).collect();
    sb.file("urls.txt", &format!("{lines}{}\n", sb.url("/ok")));
    let done = sb.indexq(&["-q", "submit", "urls.txt"]).now(NOW).output().code(3);
    assert!(
        done.stderr.contains("invalid: 12 input lines were not submitted; the first 5:\n"),
        "the count, and how many follow:\n{}",
        done.stderr
    );
    for n in 1..=12 {
        let expected = if n <= 5 { (0, 1) } else { (0, 0) };
        let place = format!("urls.txt:{n}: `bad-{n}`");
        assert_eq!(told(&done, &place), expected, "{place}:\n{}\n---\n{}", done.stdout, done.stderr);
    }
    assert!(done.stdout.contains("12 invalid"), "{}", done.stdout);

    // Without -q every one is named, once.
    let done = sb.indexq(&["submit", "urls.txt"]).now(NOW).output().code(3);
    for n in 1..=12 {
        let place = format!("urls.txt:{n}: `bad-{n}`");
        assert_eq!(told(&done, &place), (0, 1), "{place}:\n{}\n---\n{}", done.stdout, done.stderr);
    }
}

/// A pipe may be slow: the URLs read from stdin are committed batch by
/// batch (10,000 a batch), never held in a transaction that keeps the
/// ledger's write lock while the pipe waits — so another run writes, and
/// sends what was committed, meanwhile. (The URLs of input files share
/// transactions: docs/design.md.)
#[test]
fn a_slow_pipe_keeps_no_write_lock_while_it_waits() {
    let sb = Sandbox::new();
    let mut first = sb.indexq(&["-q", "submit", "-"]).now(NOW).cmd;
    first.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let mut first = first.stderr(std::process::Stdio::piped()).spawn().unwrap();
    // Three chunks of lines parsed at once (4,096 each) fill a batch of
    // 10,000; the pipe then stays open.
    let mut pipe = first.stdin.take().unwrap();
    let lines: String = (0..14_000).map(|i| format!("{}/p{i}\n", sb.site.url())).collect();
    pipe.write_all(lines.as_bytes()).unwrap();
    pipe.flush().unwrap();
    // Read by SQLite itself, read only (a reader never waits for the write
    // lock), once the first run has made the ledger.
    let committed = || -> i64 {
        let read_only = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        // The items a span holds (schema 12 keeps no row an item).
        let count = |c: rusqlite::Connection| {
            c.query_row("SELECT COALESCE(SUM(last - first + 1), 0) FROM spans", [], |r| r.get(0))
        };
        rusqlite::Connection::open_with_flags(sb.ledger(), read_only).and_then(count).unwrap_or(0)
    };
    let waited = std::time::Instant::now();
    while committed() < 10_000 {
        assert!(waited.elapsed() < std::time::Duration::from_secs(30), "the first batch was never committed");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Another run admits its URL and sends what is due, while the pipe waits.
    let other = sb.urls("other.txt", &["/other"]);
    let started = std::time::Instant::now();
    sb.indexq(&["-q", "submit", other.to_str().unwrap()]).now(NOW).output().code(0);
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the other run waited for the lock");
    assert_eq!(sb.indexnow_received().len(), 10_001, "the committed batch and the other run's URL");
    drop(pipe);
    let done = first.wait_with_output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let sent = sb.indexnow_received();
    let distinct: std::collections::HashSet<&String> = sent.iter().collect();
    assert_eq!((sent.len(), distinct.len()), (14_001, 14_001), "every URL once");
}

/// A gzipped URL list is read as its text, found by its bytes (issue 43:
/// it was read as binary lines full of NUL bytes), with its places.
#[test]
fn a_gzipped_url_list_is_read_as_its_text() {
    let sb = Sandbox::new();
    let list = format!("# deployed pages\n{}\nnot a url\n{}\n", sb.url("/gz-a"), sb.url("/gz-b"));
    std::fs::write(sb.dir.path().join("urls"), gzip(&list)).unwrap();
    let done = sb.indexq(&["--json", "submit", "urls"]).now(NOW).output().code(3);
    assert_eq!(sent(&sb), [sb.url("/gz-a"), sb.url("/gz-b")]);
    let invalid = invalid_lines(&done.submit_doc());
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert_eq!(invalid[0].0, "urls:3");

    // UTF-16 with its byte-order mark, as some Windows editors save a list.
    let sb = Sandbox::new();
    let text = format!("{}\r\n{}\r\n", sb.url("/utf16-a"), sb.url("/utf16-é"));
    let bytes: Vec<u8> = [0xFEFF].into_iter().chain(text.encode_utf16()).flat_map(u16::to_le_bytes).collect();
    std::fs::write(sb.dir.path().join("urls16.txt"), bytes).unwrap();
    sb.indexq(&["--json", "submit", "urls16.txt"]).now(NOW).output().code(0);
    assert_eq!(sent(&sb), [sb.url("/utf16-%C3%A9"), sb.url("/utf16-a")], "sorted");
}
