//! Which hosts a sitemap read reaches: the source's own host and port, the
//! property's site and sources, and its `fetch_hosts`. An index child or a
//! redirect elsewhere — another loopback port, a name resolving to the
//! cloud metadata address or to a private network (`INDEXQ_RESOLVE` makes
//! the names) — is not fetched, is said as a sitemap problem at its place,
//! and nothing it would have answered reaches the output. Every binary runs
//! behind the closed proxy of `support::seal_network`: a build that fetched
//! such a host would meet a refused connection on this machine, never the
//! address itself (`the_proxy_guard_holds` checks the guard).

use crate::support::mock::{MockResponse, MockServer};
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";
/// Names resolved to the cloud metadata address and to a private one.
const RESOLVE: &str = "meta.sitemaps.test=169.254.169.254,intranet.sitemaps.test=10.0.0.1";
const METADATA_CHILD: &str = "http://meta.sitemaps.test/latest/meta-data/sitemap.xml";
const PRIVATE_CHILD: &str = "http://intranet.sitemaps.test/sitemap.xml";
/// Text only the other loopback server's answer holds.
const SECRET: &str = "internal-SECRET-4b7e91";

fn urlset(sb: &Sandbox, paths: &[&str]) -> String {
    let urls: String = paths.iter().map(|p| format!("<url><loc>{}</loc></url>", sb.url(p))).collect();
    format!(r#"<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>"#)
}

fn index(locs: &[&str]) -> String {
    let children: String = locs.iter().map(|l| format!("<sitemap><loc>{l}</loc></sitemap>")).collect();
    format!(
        r#"<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{children}</sitemapindex>"#
    )
}

/// Another server on this machine (another loopback port) whose answer to
/// `/internal.xml` holds [`SECRET`] in a URL under `sb`'s site and in a
/// header.
fn serve_secret(other: &MockServer, sb: &Sandbox) {
    let body = urlset(sb, &[&format!("/{SECRET}")]);
    other.on("GET", "/internal.xml", vec![MockResponse::status(200).header("X-Note", SECRET).body(&body)]);
}

/// The host and port of a mock server, as `fetch_hosts` writes it.
fn host_of(server: &MockServer) -> String {
    server.url().trim_start_matches("http://").trim_end_matches('/').to_string()
}

/// A sandbox whose property's source is `/index.xml` on the site, listing
/// `/own.xml` (on the site) and `children` (a path: on the site);
/// `fetch_hosts` as given.
fn with_index(children: &[&str], fetch_hosts: &[&str]) -> Sandbox {
    let mut sb = Sandbox::new();
    let mut locs = vec![sb.url("/own.xml")];
    locs.extend(children.iter().map(|c| if c.starts_with('/') { sb.url(c) } else { c.to_string() }));
    let locs: Vec<&str> = locs.iter().map(String::as_str).collect();
    sb.site.on("GET", "/index.xml", vec![MockResponse::status(200).body(&index(&locs))]);
    sb.site.on("GET", "/own.xml", vec![MockResponse::status(200).body(&urlset(&sb, &["/a"]))]);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/index.xml"));
    // Written only when given: a build without the key still reads the rest.
    if !fetch_hosts.is_empty() {
        let hosts: Vec<String> = fetch_hosts.iter().map(|h| format!("\"{h}\"")).collect();
        sb.property_extra.push_str(&format!("fetch_hosts = [{}]\n", hosts.join(", ")));
    }
    sb.write_config();
    sb
}

/// The sitemap problems of a `submit --json` run, by the URL they name.
fn problems(done: &Done) -> Vec<(String, String)> {
    let doc = done.json();
    results(&doc)
        .into_iter()
        .filter(|r| r["reason"] == "sitemap")
        .map(|r| (r["url"].as_str().unwrap().to_string(), r["message"].as_str().unwrap().to_string()))
        .collect()
}

fn problem_for<'a>(problems: &'a [(String, String)], url: &str) -> &'a str {
    let found: Vec<&str> = problems.iter().filter(|(u, _)| u == url).map(|(_, m)| m.as_str()).collect();
    assert_eq!(found.len(), 1, "one problem for {url}: {problems:#?}");
    found[0]
}

#[test]
fn index_children_on_other_hosts_are_not_fetched_and_are_said() {
    let other = MockServer::start();
    let other_child_now = format!("{}/internal.xml", other.url());
    let link_local_literal = "http://169.254.169.254/latest/meta-data/";
    let mapped_literal = "http://[::ffff:10.0.0.1]/sitemap.xml";
    let children = [other_child_now.as_str(), METADATA_CHILD, PRIVATE_CHILD, link_local_literal, mapped_literal];
    let sb = with_index(&children, &[]);
    serve_secret(&other, &sb);

    let done = sb.indexq(&["--json", "submit"]).env("INDEXQ_RESOLVE", RESOLVE).now(NOW).output().code(3);
    assert_eq!(sb.received_urls(), [sb.url("/a")], "the site's own child is read and sent");
    assert!(other.requests().is_empty(), "nothing asked of the other port: {:?}", other.requests());
    let problems = problems(&done);
    assert_eq!(problems.len(), 5, "{problems:#?}");
    let listed = format!("(listed at {}", sb.url("/index.xml"));
    let refused = "is not a host this source may reach (its own, its property's site and sources, or one \
                   `fetch_hosts` of property `site` lists); list it there to allow it";
    for (child, host) in [
        (other_child_now.as_str(), host_of(&other)),
        (METADATA_CHILD, "meta.sitemaps.test".to_string()),
        (PRIVATE_CHILD, "intranet.sitemaps.test".to_string()),
        (link_local_literal, "169.254.169.254".to_string()),
        // The URL parser writes the mapped address in its hexadecimal form.
        ("http://[::ffff:a00:1]/sitemap.xml", "[::ffff:a00:1]".to_string()),
    ] {
        let message = problem_for(&problems, child);
        assert!(message.starts_with(&format!("not fetched: {host} {refused}")), "{child}: {message}");
        assert!(message.contains(&listed), "{child}: {message}");
    }
    assert!(!done.stdout.contains(SECRET) && !done.stderr.contains(SECRET), "{}\n{}", done.stdout, done.stderr);
}

#[test]
fn redirects_to_other_hosts_are_not_followed_and_are_said() {
    let sb = Sandbox::new();
    let other = MockServer::start();
    serve_secret(&other, &sb);
    let to_other = format!("{}/internal.xml", other.url());
    for (path, target) in
        [("/to-other.xml", to_other.as_str()), ("/to-meta.xml", METADATA_CHILD), ("/to-private.xml", PRIVATE_CHILD)]
    {
        sb.site.on("GET", path, vec![MockResponse::status(302).header("Location", target).body(SECRET)]);
    }
    let args: Vec<String> = ["/to-other.xml", "/to-meta.xml", "/to-private.xml"]
        .iter()
        .flat_map(|p| ["--sitemap".to_string(), sb.url(p)])
        .collect();
    let mut argv = vec!["--json", "submit"];
    argv.extend(args.iter().map(String::as_str));
    let done = sb.indexq(&argv).env("INDEXQ_RESOLVE", RESOLVE).now(NOW).output().code(3);
    assert!(other.requests().is_empty(), "the redirect to the other port was not followed");
    let problems = problems(&done);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    for (path, target, host) in [
        ("/to-other.xml", to_other.as_str(), host_of(&other)),
        ("/to-meta.xml", METADATA_CHILD, "meta.sitemaps.test".to_string()),
        ("/to-private.xml", PRIVATE_CHILD, "intranet.sitemaps.test".to_string()),
    ] {
        let message = problem_for(&problems, &sb.url(path));
        let expected = format!(
            "cannot fetch: the redirect from {} to {target} was refused: {host} is not a host this source may reach",
            sb.url(path)
        );
        assert!(message.starts_with(&expected), "{path}: {message}");
        assert!(message.contains("the `fetch_hosts` of a property"), "{path}: {message}");
    }
    assert!(!done.stdout.contains(SECRET) && !done.stderr.contains(SECRET), "{}\n{}", done.stdout, done.stderr);
}

#[test]
fn a_host_in_fetch_hosts_is_fetched_as_a_child_and_through_a_redirect() {
    let listed = MockServer::start();
    let listed_child = format!("{}/internal.xml", listed.url());
    let sb = with_index(&[&listed_child, "/moved.xml"], &[&host_of(&listed)]);
    listed.on("GET", "/internal.xml", vec![MockResponse::status(200).body(&urlset(&sb, &["/listed"]))]);
    let target = format!("{}/moved.xml", listed.url());
    sb.site.on("GET", "/moved.xml", vec![MockResponse::status(301).header("Location", &target)]);
    listed.on("GET", "/moved.xml", vec![MockResponse::status(200).body(&urlset(&sb, &["/moved"]))]);

    let done = sb.indexq(&["--json", "submit"]).now(NOW).output().code(0);
    assert!(problems(&done).is_empty(), "{}", done.stdout);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/a"), sb.url("/listed"), sb.url("/moved")]);
    assert_eq!(listed.requests_to("GET", "/internal.xml").len(), 1);
    assert_eq!(listed.requests_to("GET", "/moved.xml").len(), 1);
}

#[test]
fn a_wildcard_reaches_public_addresses_only() {
    let sb = with_index(&[METADATA_CHILD, PRIVATE_CHILD], &["*.sitemaps.test"]);
    let done = sb.indexq(&["--json", "submit"]).env("INDEXQ_RESOLVE", RESOLVE).now(NOW).output().code(3);
    let problems = problems(&done);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    for (child, host, address, range) in [
        (METADATA_CHILD, "meta.sitemaps.test", "169.254.169.254", "a link-local address"),
        (PRIVATE_CHILD, "intranet.sitemaps.test", "10.0.0.1", "a private address"),
    ] {
        let message = problem_for(&problems, child);
        let expected = format!(
            "not fetched: {host} resolves to {address}, {range}, which only a host the configuration names itself \
             may reach (the source's own, or an exact entry of `fetch_hosts` of property `site`, not a `*.` wildcard)"
        );
        assert!(message.starts_with(&expected), "{child}: {message}");
    }
}

#[test]
fn a_bad_fetch_hosts_entry_is_an_error_naming_its_place() {
    let mut sb = Sandbox::new();
    sb.property_extra = "fetch_hosts = [\"cdn.example.com\", \"https://cdn.example.com/\"]\n".to_string();
    sb.write_config();
    let done = sb.indexq(&["submit", "--dry-run"]).now(NOW).output();
    assert_ne!(done.code, 0);
    assert!(done.stderr.contains("fetch_hosts[1]"), "{}", done.stderr);
    assert!(done.stderr.contains("is a URL, not a host"), "{}", done.stderr);

    // A bad `INDEXQ_RESOLVE` entry is named, before anything is fetched.
    sb.property_extra = "fetch_hosts = [\"cdn.example.com\"]\n".to_string();
    sb.write_config();
    sb.site.on("GET", "/s.xml", vec![MockResponse::status(200).body(&urlset(&sb, &["/a"]))]);
    let run = |resolve: &str| {
        sb.indexq(&["submit", "--dry-run", "--sitemap", &sb.url("/s.xml")])
            .env("INDEXQ_RESOLVE", resolve)
            .now(NOW)
            .output()
    };
    let done = run("cdn.example.com=10.0.0.1,nowhere");
    assert_ne!(done.code, 0);
    assert!(done.stderr.contains("INDEXQ_RESOLVE: `nowhere` is not `name=address`"), "{}", done.stderr);
    assert!(sb.site.requests_to("GET", "/s.xml").is_empty());
    run("cdn.example.com=10.0.0.1").code(0);
    assert_eq!(sb.site.requests_to("GET", "/s.xml").len(), 1);
}

#[test]
fn the_proxy_guard_holds() {
    // Nothing listens where the tests' proxy points: a request sent there is refused on this machine.
    let closed = CLOSED_PROXY.trim_start_matches("http://");
    assert!(std::net::TcpStream::connect(closed).is_err(), "something listens on {closed}");

    // indexq's fetch client takes the proxy from the environment for a host outside NO_PROXY: the
    // request for `outside.test` goes to the proxy, not to the address the name resolves to.
    let sb = Sandbox::new();
    sb.site.on("GET", "/sitemap.xml", vec![MockResponse::status(200).body(&urlset(&sb, &["/direct"]))]);
    let proxy = MockServer::start();
    let port = sb.site.port();
    let source = format!("http://outside.test:{port}/sitemap.xml");
    let done = sb
        .indexq(&["--json", "submit", "--sitemap", &source])
        .env("INDEXQ_RESOLVE", "outside.test=127.0.0.1")
        .env("HTTP_PROXY", proxy.url())
        .env("http_proxy", proxy.url())
        .now(NOW)
        .output();
    let asked: Vec<String> = proxy.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(asked, [source], "the proxy was asked for the sitemap: {}", done.stdout);
    assert!(sb.site.requests_to("GET", "/sitemap.xml").is_empty(), "nothing went around the proxy");
}
