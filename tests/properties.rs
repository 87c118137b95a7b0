//! Property tests against the library: the configuration parser, the sitemap
//! reader and the response classifiers never panic on arbitrary input, and keep
//! what is valid around what is not; the URL-list reader keeps every URL line
//! around lines of any length and shows a bad one by a short prefix.
//! (`ingest::read_lines` has more property tests in src/ingest/list.rs.) Case counts
//! are modest so the file runs in seconds.

use indexq::testing_api::classify::{
    self, BingContext, GoogleContext, GoogleTokenContext, IndexNowContext, InspectionContext, KeyFileCheck, Response,
    Verdict,
};
use indexq::testing_api::ingest::sitemap::{Entry, FetchClient, Pins, Problem, Reader};
use indexq::testing_api::model::Class;
use proptest::prelude::*;
use std::path::Path;

// ---------------------------------------------------------------------------
// Configuration.

/// Lines that look like indexq's configuration: real tables and keys with plausible, wrong and odd values.
fn config_line() -> impl Strategy<Value = String> {
    let table = prop::sample::select(vec![
        "[indexnow]",
        "[bing]",
        "[google]",
        "[submit]",
        "[retry]",
        "[http]",
        "[sitemap]",
        "[ledger]",
        "[[property]]",
        "[property.indexnow]",
        "[property.bing]",
        "[property.google]",
        "[[property.indexnow]]",
    ])
    .prop_map(str::to_string);
    let key = prop::sample::select(vec![
        "name",
        "site",
        "endpoint",
        "endpoints",
        "inspection_endpoint",
        "quota_timezone",
        "daily_quota",
        "monthly_quota",
        "requests_per_minute",
        "max_wait",
        "dedupe_window",
        "stop_grace",
        "transient_first",
        "transient_cap",
        "transient_deadline",
        "key_pending_first",
        "key_pending_deadline",
        "connect_timeout",
        "timeout",
        "max_bytes",
        "path",
        "key",
        "key_env",
        "key_file",
        "key_location",
        "api_key_env",
        "api_key_file",
        "site_url",
        "credentials",
        "indexnow",
        "bing",
        "google",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "\"https://example.com/\"",
            "\"http://127.0.0.1:9/\"",
            "\"http://example.com/\"",
            "\"example.com\"",
            "\"\"",
            "\"UTC\"",
            "\"America/Los_Angeles\"",
            "\"Mars/Olympus\"",
            "\"90s\"",
            "\"3d\"",
            "\"-1s\"",
            "\"99999999999999999999h\"",
            "0",
            "-1",
            "18446744073709551615",
            "1e400",
            "true",
            "[]",
            "[\"https://api.indexnow.org/indexnow\", 3]",
            "{ key = \"0f1e2d3c4b5a6978\" }",
            "{ key_env = \"INDEXQ_PROPERTIES_NO_SUCH_VAR\" }",
            "{ key_file = \"/nonexistent/key.txt\" }",
            "{ site_url = \"https://example.com/\", daily_quota = 1 }",
            "{}",
        ])
        .prop_map(str::to_string),
        any::<String>().prop_map(|s| format!("{s:?}")),
        any::<i64>().prop_map(|n| n.to_string()),
    ];
    prop_oneof![table, (key, value).prop_map(|(k, v)| format!("{k} = {v}")), ".{0,40}"]
}

fn check_config(source: &str) {
    // Ok or Err: a panic fails the property.
    if let Err(error) = indexq::testing_api::config::parse(Path::new("fuzz.toml"), source) {
        assert!(!error.place.is_empty(), "an error without a place for {source:?}");
        assert!(!error.message.is_empty(), "an error without a message for {source:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn config_parse_never_panics_on_arbitrary_text(source in any::<String>()) {
        check_config(&source);
    }

    #[test]
    fn config_parse_never_panics_on_config_like_text(lines in prop::collection::vec(config_line(), 0..30)) {
        check_config(&lines.join("\n"));
    }
}

// ---------------------------------------------------------------------------
// URL lists.

/// One line of a URL list: a good URL, or text of any length without a line end.
#[derive(Debug, Clone)]
enum ListLine {
    Good(String),
    Other(Vec<u8>),
}

fn list_line() -> impl Strategy<Value = ListLine> {
    let no_newline = |bytes: Vec<u8>| bytes.into_iter().map(|b| if b == b'\n' { b' ' } else { b }).collect();
    prop_oneof![
        "[a-z0-9/_-]{0,40}".prop_map(|path| ListLine::Good(format!("https://good.example/{path}"))),
        // Around the cap (8 KiB), and far over it, some without NUL bytes and some with.
        (8180usize..8200, any::<u8>()).prop_map(move |(n, b)| ListLine::Other(no_newline(vec![b; n]))),
        (8192usize..100_000, prop::sample::select(vec![b'a', b'/', 0xE9])).prop_map(|(n, b)| {
            let mut v = b"https://good.example/".to_vec();
            v.resize(n, b);
            ListLine::Other(v)
        }),
        prop::collection::vec(any::<u8>(), 0..300).prop_map(move |v| ListLine::Other(no_newline(v))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Lines of any length: every good URL line is kept at its place, every
    /// over-long line is reported at its own place by a short prefix, and no
    /// result carries more than a URL's worth of text. (A few NUL lines at
    /// most: 8 of them would make the list binary, which src/ingest/list.rs tests.)
    #[test]
    fn url_lines_survive_lines_of_any_length(lines in prop::collection::vec(list_line(), 1..12)) {
        let mut input = Vec::new();
        let mut good = Vec::new();
        let mut long = Vec::new();
        let mut nul_lines = 0;
        for (i, line) in lines.iter().enumerate() {
            let place = format!("l.txt:{}", i + 1);
            match line {
                ListLine::Good(url) => {
                    input.extend_from_slice(url.as_bytes());
                    good.push(place);
                }
                ListLine::Other(bytes) => {
                    input.extend_from_slice(bytes);
                    nul_lines += usize::from(bytes.contains(&0));
                    if bytes.len() > indexq::testing_api::ingest::MAX_URL_BYTES && !bytes.contains(&0) && bytes.trim_ascii().len() > indexq::testing_api::ingest::MAX_URL_BYTES
                        // A comment may be as long as it likes (the reader skips it).
                        && !bytes.trim_ascii_start().starts_with(b"#")
                    {
                        long.push(place);
                    }
                }
            }
            input.push(b'\n');
        }
        prop_assume!(nul_lines < 8);
        let mut got = Vec::new();
        indexq::testing_api::ingest::read_lines("l.txt", input.as_slice(), |line| got.push(line)).unwrap();
        for line in &got {
            prop_assert!(line.text().len() <= 3 * (indexq::testing_api::ingest::MAX_URL_BYTES + 4), "{}: {} bytes", line.place, line.text().len());
        }
        let kept: Vec<String> = got.iter().filter(|l| l.url.as_ref().is_ok_and(|u| u.as_str().len() < 100)).map(|l| l.place.to_string()).collect();
        prop_assert_eq!(kept, good.clone());
        for place in &long {
            let line = got.iter().find(|l| &l.place.to_string() == place);
            prop_assert!(line.is_some_and(|l| l.url.as_ref().is_err_and(|e| e.contains("a URL is at most 8 KiB")) && l.text().chars().count() <= 81), "{place}: {line:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// Sitemaps.

/// Reads one sitemap file with a fresh `Reader`. The client's proxy is a closed local port, so an index child
/// that is an http(s) URL fails at once and nothing leaves the machine.
fn read_sitemap(bytes: &[u8], cap: u64) -> (Vec<Entry>, Vec<Problem>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sitemap.xml");
    std::fs::write(&path, bytes).unwrap();
    let client = reqwest::Client::builder()
        .proxy(reqwest::Proxy::all("http://127.0.0.1:9").unwrap())
        .timeout(std::time::Duration::from_millis(500));
    let client = FetchClient::new(client, Pins::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut reader = Reader::new(client, cap);
    let mut entries = Vec::new();
    let mut each = |entry: Entry| entries.push(entry);
    let problems = runtime.block_on(reader.read(&path.display().to_string(), &mut each));
    (entries, problems)
}

fn url_entry(loc: &str) -> String {
    format!("<url><loc>{loc}</loc><lastmod>2024-02-29</lastmod></url>\n")
}

fn urlset(items: &[String]) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n{}\
         </urlset>\n",
        items.concat()
    )
}

/// `<url>`s that are wrong but leave the XML well-formed: each is reported (or its lastmod dropped), the rest kept.
const MALFORMED_URLS: &[&str] = &[
    "<url></url>\n",
    "<url/>\n",
    "<url><lastmod>2024-01-01</lastmod></url>\n",
    "<url><loc>   </loc></url>\n",
    "<url><loc></loc><lastmod>2024</lastmod></url>\n",
    "<url><loc>https://bad.example/&nbsp;</loc></url>\n",
    "<url><loc>https://bad.example/1</loc><loc>https://bad.example/2</loc></url>\n",
    "<url><loc>https://bad.example/3</loc><lastmod>yesterday</lastmod></url>\n",
    "<url><location>https://bad.example/4</location></url>\n",
    "<url><loc><![CDATA[]]></loc></url>\n",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sitemap_reader_never_panics_on_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        cap in prop_oneof![Just(50u64 << 20), 1u64..4096],
    ) {
        let (entries, problems) = read_sitemap(&bytes, cap);
        for entry in &entries {
            prop_assert!(!entry.loc.trim().is_empty(), "{:?}", entry);
        }
        for problem in &problems {
            prop_assert!(!problem.place.source.is_empty() && !problem.message.is_empty(), "{:?}", problem);
        }
    }

    #[test]
    fn a_malformed_url_entry_costs_only_itself(
        count in 0usize..12,
        at in any::<prop::sample::Index>(),
        bad in prop::sample::select(MALFORMED_URLS),
        tail in "[a-zA-Z0-9._~/-]{0,20}",
    ) {
        let locs: Vec<String> = (0..count).map(|i| format!("https://e.com/{i}/{tail}")).collect();
        let mut items: Vec<String> = locs.iter().map(|loc| url_entry(loc)).collect();
        items.insert(at.index(count + 1), bad.to_string());
        let (entries, problems) = read_sitemap(urlset(&items).as_bytes(), 50 << 20);
        let kept: Vec<&str> =
            entries.iter().map(|e| e.loc.as_str()).filter(|loc| loc.starts_with("https://e.com/")).collect();
        prop_assert_eq!(kept, locs.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert!(entries.iter().filter(|e| e.loc.starts_with("https://e.com/")).all(|e| e.lastmod.is_some()));
        prop_assert!(!problems.is_empty(), "no problem for {:?}", bad);
    }

    #[test]
    fn entries_before_garbage_are_kept(
        count in 1usize..10,
        at in any::<prop::sample::Index>(),
        garbage in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let locs: Vec<String> = (0..count).map(|i| format!("https://e.com/{i}")).collect();
        let before = at.index(count + 1);
        let mut xml = urlset(&locs[..before].iter().map(|loc| url_entry(loc)).collect::<Vec<_>>()).into_bytes();
        // Cut the closing tag, put the garbage where the next <url> would go, then the remaining entries.
        xml.truncate(xml.len() - "</urlset>\n".len());
        xml.extend_from_slice(&garbage);
        for loc in &locs[before..] {
            xml.extend_from_slice(url_entry(loc).as_bytes());
        }
        xml.extend_from_slice(b"</urlset>\n");
        let (entries, _) = read_sitemap(&xml, 50 << 20);
        let got: Vec<&str> = entries.iter().take(before).map(|e| e.loc.as_str()).collect();
        prop_assert_eq!(got, locs[..before].iter().map(String::as_str).collect::<Vec<_>>());
    }
}

// ---------------------------------------------------------------------------
// Classification.

const KEY: &str = "0f1e2d3c4b5a6978";
const KEY_LOCATION: &str = "https://example.com/0f1e2d3c4b5a6978.txt";

fn header() -> impl Strategy<Value = (String, String)> {
    let name = prop_oneof![
        prop::sample::select(vec!["Retry-After", "retry-after", "Content-Type", "X-Error"]).prop_map(str::to_string),
        "[A-Za-z-]{0,12}",
    ];
    let value = prop_oneof![
        prop::sample::select(vec![
            "0",
            "120",
            "-5",
            "18446744073709551616",
            "99999999999999999999999",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "application/json",
            "",
        ])
        .prop_map(str::to_string),
        any::<String>(),
    ];
    (name, value)
}

fn body() -> impl Strategy<Value = String> {
    let text = prop_oneof![any::<String>(), "[ -~]{0,30}"];
    prop_oneof![
        any::<String>(),
        Just(String::new()),
        (any::<i64>(), text.clone())
            .prop_map(|(code, message)| { serde_json::json!({"ErrorCode": code, "Message": message}).to_string() }),
        (any::<i64>(), text.clone()).prop_map(|(code, message)| {
            serde_json::json!({"d": {"ErrorCode": code, "Message": message}}).to_string()
        }),
        (
            any::<i64>(),
            prop::sample::select(vec![
                "RESOURCE_EXHAUSTED",
                "PERMISSION_DENIED",
                "INVALID_ARGUMENT",
                "UNAUTHENTICATED",
                "INTERNAL",
                "UNAVAILABLE",
                "DEADLINE_EXCEEDED",
                "OTHER",
            ]),
            text.clone(),
            text.clone(),
        )
            .prop_map(|(code, status, message, quota)| {
                serde_json::json!({"error": {"code": code, "status": status, "message": message, "details": [
                    {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED",
                     "metadata": {"quota_limit": quota, "quota_metric": quota}},
                    {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                     "violations": [{"description": quota, "quotaId": quota}]},
                ]}})
                .to_string()
            }),
        (
            prop_oneof![
                prop::sample::select(vec![
                    "invalid_grant",
                    "invalid_client",
                    "unauthorized_client",
                    "access_denied",
                    "invalid_scope",
                    "invalid_request",
                ])
                .prop_map(str::to_string),
                text.clone(),
            ],
            text,
        )
            .prop_map(|(error, description)| {
                serde_json::json!({"error": error, "error_description": description}).to_string()
            }),
    ]
}

fn key_file_check() -> impl Strategy<Value = Option<KeyFileCheck>> {
    let served = prop_oneof![
        Just(KEY.to_string()),
        Just(format!("\u{feff}{KEY}\n")),
        Just(format!("<html>{KEY}</html>")),
        Just(KEY.to_ascii_uppercase()),
        any::<String>(),
    ];
    prop_oneof![
        Just(None),
        (100u16..=999, served).prop_map(|(status, body)| Some(KeyFileCheck::Fetched { status, body })),
        any::<String>().prop_map(|error| Some(KeyFileCheck::Failed { error })),
    ]
}

fn check_verdict(verdict: &Verdict, what: &str) {
    let class = match verdict.class() {
        Class::Accepted | Class::Quota | Class::Transient | Class::KeyPending | Class::Misconfigured => {
            verdict.class().as_str()
        }
    };
    assert!(["accepted", "quota", "transient", "key_pending", "misconfigured"].contains(&class), "{what}: {verdict:?}");
    assert!(!verdict.reason().to_string().is_empty() && !verdict.message.is_empty(), "{what}: {verdict:?}");
    if verdict.class() == Class::Misconfigured {
        assert!(verdict.hint.as_deref().is_some_and(|h| !h.is_empty()), "{what}: misconfigured without a hint");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_classifier_returns_one_of_the_five_classes(
        status in 100u16..=999,
        headers in prop::collection::vec(header(), 0..4),
        body in body(),
        key_file in key_file_check(),
    ) {
        let resp = Response { status, headers: &headers, body: &body };
        let ctx = IndexNowContext { key: KEY, key_location: KEY_LOCATION, key_file: key_file.as_ref() };
        let verdict = classify::indexnow(&resp, &ctx);
        check_verdict(&verdict, "indexnow");
        let texts = format!("{} {}", verdict.message, verdict.hint.as_deref().unwrap_or_default());
        prop_assert!(!texts.to_ascii_lowercase().contains(KEY), "the key shows: {:?}", verdict);

        let verdict = classify::bing(&resp, &BingContext { site_url: "https://example.com/" });
        check_verdict(&verdict, "bing");

        let ctx = GoogleContext {
            url: "https://example.com/page",
            action: indexq::testing_api::model::Action::Updated,
            client_email: "indexer@project.iam.gserviceaccount.com",
            project_id: "project",
        };
        check_verdict(&classify::google(&resp, &ctx), "google");

        let ctx = InspectionContext {
            url: "https://example.com/page",
            site_url: "https://example.com/",
            client_email: "indexer@project.iam.gserviceaccount.com",
            project_id: "project",
        };
        check_verdict(&classify::google_inspection(&resp, &ctx), "google_inspection");

        let ctx = GoogleTokenContext { client_email: "indexer@project.iam.gserviceaccount.com", key_id: "0123456789abcdef" };
        check_verdict(&classify::google_token(&resp, &ctx), "google_token");
    }
}
