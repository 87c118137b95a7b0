//! Bad configuration and bad input: each gives its error, naming the place
//! (file:line:col and the key, or file:line of the input), with the right
//! exit code — and nothing is sent.

use crate::support::*;
use std::io::Write;
use std::process::Stdio;

const NOW: &str = "2026-12-03T09:00:00Z";

/// `FILE:LINE:COL` of the first occurrence of `needle` in the sandbox's config.
fn place_of(sb: &Sandbox, needle: &str) -> String {
    let text = std::fs::read_to_string(sb.config_path()).unwrap();
    let offset = text.find(needle).unwrap_or_else(|| panic!("`{needle}` is not in the config:\n{text}"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |nl| nl + 1)..].chars().count() + 1;
    format!("{}:{line}:{column}", sb.config_path().display())
}

/// Rewrites the sandbox's config with `from` replaced by `to`.
fn edit_config(sb: &Sandbox, from: &str, to: &str) {
    let text = std::fs::read_to_string(sb.write_config()).unwrap();
    assert!(text.contains(from), "`{from}` is not in the config:\n{text}");
    std::fs::write(sb.config_path(), text.replace(from, to)).unwrap();
}

fn assert_nothing_sent(sb: &Sandbox) {
    assert!(sb.engine.requests().is_empty(), "the engine received requests: {:#?}", sb.engine.requests());
    assert!(sb.site.requests().is_empty(), "the site received requests: {:#?}", sb.site.requests());
}

/// Asserts a configuration error: exit 2, one `error:` line naming the
/// place, nothing on stdout that looks like results, nothing sent.
fn assert_config_error(sb: &Sandbox, done: &Done, place: &str, key: &str) {
    assert!(done.stderr.contains(place), "stderr names {place}:\n{}", done.stderr);
    assert!(done.stderr.contains(&format!("`{key}`")), "stderr names `{key}`:\n{}", done.stderr);
    assert!(done.stderr.contains("error:"), "{}", done.stderr);
    assert!(!done.stdout.contains("accepted"), "no results on a config error:\n{}", done.stdout);
    assert_nothing_sent(sb);
}

/// Runs with `input` written to the child's stdin.
fn with_stdin(run: Run, input: &[u8]) -> Done {
    let mut cmd = run.cmd;
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        // The child may exit early (e.g. a usage error) and close its end.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Done::from(out)
}

#[test]
fn an_unknown_key_names_file_line_and_column() {
    let mut sb = Sandbox::new();
    sb.extra = "[retry]\nkey_pending_first = \"1s\"\nkey_pending_frist = \"2s\"\n".into();
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    let place = place_of(&sb, "key_pending_frist");
    assert!(done.stderr.contains(&place), "stderr names {place}:\n{}", done.stderr);
    assert!(done.stderr.contains("key_pending_frist"), "{}", done.stderr);
    assert!(done.stdout.trim().is_empty(), "no JSON document on a config error: {}", done.stdout);
    assert_nothing_sent(&sb);

    // Inside a property's inline table too; and every command checks the config.
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", colour = \"blue\"".into();
    sb.write_config();
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    let place = place_of(&sb, "colour");
    assert!(done.stderr.contains(&place), "stderr names {place}:\n{}", done.stderr);
    assert!(done.stderr.contains("colour"), "{}", done.stderr);
    assert_nothing_sent(&sb);
    let done = sb.indexq(&["status"]).now(NOW).output().code(2);
    assert!(done.stderr.contains(&place), "{}", done.stderr);
}

#[test]
fn a_bad_quota_timezone_names_the_key_and_hints_at_iana_names() {
    let mut sb = Sandbox::new();
    sb.indexnow_extra = ", daily_quota = 5, quota_timezone = \"Mars/Olympus\"".into();
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"Mars/Olympus\""), "property[0].indexnow.quota_timezone");
    assert!(done.stderr.contains("Mars/Olympus"), "{}", done.stderr);
    assert!(done.stderr.contains("\n  hint: "), "a hint line follows: {}", done.stderr);

    // The global table's timezone is checked the same way.
    let mut sb = Sandbox::new();
    sb.extra = "[bing]\nquota_timezone = \"Europe/Atlantis\"\n".into();
    sb.write_config();
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"Europe/Atlantis\""), "bing.quota_timezone");
}

#[test]
fn a_site_that_is_not_an_absolute_url_is_an_error() {
    let sb = Sandbox::new();
    edit_config(&sb, &format!("site = \"{}\"", sb.site_url()), "site = \"example.com/\"");
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"example.com/\""), "property[0].site");
    assert!(done.stderr.contains("example.com/"), "{}", done.stderr);
    assert!(done.stderr.contains("\n  hint: "), "{}", done.stderr);
}

fn assert_bad_key(value: &str, why: &str) {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).env("INDEXNOW_KEY", value).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"INDEXNOW_KEY\""), "property[0].indexnow.key_env");
    assert!(done.stderr.contains(why), "stderr says why ({why}):\n{}", done.stderr);
    for channel in [&done.stdout, &done.stderr] {
        assert!(!channel.contains(value.trim()), "the key value is never printed:\n{channel}");
    }
    // The same with --json: the error stays on stderr, without the value.
    let done =
        sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).env("INDEXNOW_KEY", value).output().code(2);
    assert!(!done.stdout.contains(value.trim()) && !done.stderr.contains(value.trim()));
    assert_nothing_sent(&sb);
}

#[test]
fn an_indexnow_key_that_is_too_short_is_a_config_error_without_the_value() {
    assert_bad_key("Zq7xW", "5 characters");
}

#[test]
fn an_indexnow_key_with_bad_characters_is_a_config_error_without_the_value() {
    assert_bad_key("Secret_Value_Of_The_Key_123", "a-z, A-Z, 0-9");
    assert_bad_key("hunter2hunter2 hunter2hunter2", "a-z, A-Z, 0-9");
}

#[test]
fn an_indexnow_key_that_is_too_long_is_a_config_error() {
    assert_bad_key(&"k".repeat(129), "129 characters");
}

#[test]
fn an_unset_or_empty_key_variable_is_named() {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).env_remove("INDEXNOW_KEY").output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"INDEXNOW_KEY\""), "property[0].indexnow.key_env");
    assert!(done.stderr.contains("INDEXNOW_KEY") && done.stderr.contains("not set"), "{}", done.stderr);
    assert!(done.stderr.contains("\n  hint: "), "{}", done.stderr);

    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).env("INDEXNOW_KEY", "  ").output().code(2);
    assert!(done.stderr.contains("INDEXNOW_KEY") && done.stderr.contains("empty"), "{}", done.stderr);
    assert_nothing_sent(&sb);

    // Nothing was queued either: with the key back, a plain run has nothing to send.
    let doc = sb.indexq(&["--json", "submit"]).now(NOW).output().code(0).json();
    assert!(results(&doc).is_empty(), "{doc}");
    assert_nothing_sent(&sb);
}

#[test]
fn status_needs_no_credentials() {
    let sb = Sandbox::new();
    let doc = sb.indexq(&["--json", "status"]).now(NOW).env_remove("INDEXNOW_KEY").output().code(0).status_doc();
    assert_eq!(doc.budgets.len(), 1, "{doc:#?}");
}

#[test]
fn an_http_endpoint_on_a_non_loopback_host_is_refused() {
    let mut sb = Sandbox::new();
    // A good (loopback) endpoint and a bad one: the good one gets nothing either.
    sb.endpoints.push("http://search.example/indexnow".into());
    sb.write_config();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"http://search.example/indexnow\""), "indexnow.endpoints");
    assert!(done.stderr.contains("http://search.example/indexnow"), "{}", done.stderr);
    assert!(done.stderr.contains("\n  hint: ") && done.stderr.contains("https://"), "{}", done.stderr);

    // Any other scheme is refused the same way.
    let mut sb = Sandbox::new();
    sb.endpoints = vec!["ftp://search.example/indexnow".into()];
    sb.write_config();
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"ftp://search.example/indexnow\""), "indexnow.endpoints");
}

#[test]
fn a_missing_input_file_is_a_usage_error_and_nothing_is_queued() {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let missing = sb.dir.path().join("missing.txt");
    let done = sb.indexq(&["submit", list.to_str().unwrap(), missing.to_str().unwrap()]).now(NOW).output().code(2);
    assert!(done.stderr.contains("missing.txt"), "stderr names the file:\n{}", done.stderr);
    assert_nothing_sent(&sb);
    // The readable file was not half-processed: nothing waits in the queue.
    let queue = sb.indexq(&["--json", "queue", "list"]).now(NOW).output().code(0).queue_doc();
    assert_eq!(queue.items.len(), 0, "{queue:#?}");
    let doc = sb.indexq(&["--json", "submit"]).now(NOW).output().code(0).json();
    assert!(results(&doc).is_empty(), "{doc}");
    assert_nothing_sent(&sb);
}

#[test]
fn a_bad_max_wait_is_a_usage_error() {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", "--max-wait", "soon", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert!(done.stderr.contains("--max-wait") && done.stderr.contains("soon"), "{}", done.stderr);
    assert!(done.stdout.trim().is_empty(), "{}", done.stdout);
    assert_nothing_sent(&sb);
    // The duration forms the README's *Configuration* lists parse.
    for ok in ["0", "0s", "90s", "5m", "2h", "3d"] {
        let sb = Sandbox::new();
        sb.indexq(&["submit", "--dry-run", "--max-wait", ok]).now(NOW).output().code(0);
    }
}

#[test]
fn a_bad_pinned_clock_is_a_usage_error() {
    let sb = Sandbox::new();
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now("garbage").output().code(2);
    assert!(done.stderr.contains("INDEXQ_NOW") && done.stderr.contains("garbage"), "{}", done.stderr);
    assert_nothing_sent(&sb);
    let done = sb.indexq(&["status"]).now("2026-13-45T99:00:00Z").output().code(2);
    assert!(done.stderr.contains("INDEXQ_NOW"), "{}", done.stderr);
}

#[test]
fn bad_input_lines_are_invalid_with_their_place_and_the_rest_is_sent() {
    let sb = Sandbox::new();
    let site = sb.site.url();
    // A BOM, CRLF endings, comments and blank lines, surrounding spaces and no final newline.
    let text = format!(
        "\u{feff}{site}/ok1\r\n# a comment\r\n\r\nnot-a-url\r\nftp://127.0.0.1/file\r\nhttps://elsewhere.example/page\r\n{site}/x {site}/y\r\n   {site}/ok2   \r\n\r\n{site}/ok3"
    );
    let list = sb.file("urls.txt", &text);
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    let results = results(&doc);
    assert_eq!(count(&doc, "accepted"), 3, "{doc:#}");
    assert_eq!(count(&doc, "invalid"), 4, "{doc:#}");
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(
        received,
        vec![sb.url("/ok1"), sb.url("/ok2"), sb.url("/ok3")],
        "the valid lines are sent, trimmed, BOM stripped"
    );
    let file = list.display().to_string();
    for (line, text) in [
        (4, "not-a-url".to_string()),
        (5, "ftp://127.0.0.1/file".to_string()),
        (6, "https://elsewhere.example/page".to_string()),
        (7, format!("{site}/x {site}/y")),
    ] {
        let place = format!("{file}:{line}");
        let found: Vec<&serde_json::Value> = results.iter().filter(|r| r["source"] == place.as_str()).collect();
        assert_eq!(found.len(), 1, "one result from {place}: {results:#?}");
        let r = found[0];
        assert_eq!(r["outcome"], "invalid", "{r}");
        assert_eq!(r["url"], text.as_str(), "{r}");
        assert!(r.get("http_status").is_none() && r.get("retry_at").is_none(), "{r}");
        assert!(!r["message"].as_str().unwrap().is_empty(), "{r}");
        // Told once: with --json in the document only.
        assert!(
            !done.stderr.contains(&format!("{place}:")),
            "no warning besides the document: {place}:\n{}",
            done.stderr
        );
    }
    let why = |line: usize| {
        let place = format!("{file}:{line}");
        results.iter().find(|r| r["source"] == place.as_str()).unwrap()["message"].as_str().unwrap().to_string()
    };
    assert!(why(5).contains("ftp"), "{}", why(5));
    assert!(why(6).contains("property"), "{}", why(6));
    assert!(why(7).contains("space"), "{}", why(7));
    // Comments, blank lines and good lines make no invalid results.
    for line in [1, 2, 3, 8, 9, 10] {
        let place = format!("{file}:{line}");
        assert!(!results.iter().any(|r| r["source"] == place.as_str()), "nothing reported for {place}: {results:#?}");
        assert!(!done.stderr.contains(&format!("{place}:")), "no warning for {place}:\n{}", done.stderr);
    }

    // Invalid is a --fail-on class by default; without it the exit is 0 and the report is the same.
    let done = sb
        .indexq(&["--json", "submit", "--fail-on", "misconfigured", list.to_str().unwrap()])
        .now(NOW)
        .output()
        .code(0);
    let doc = done.json();
    assert_eq!(count(&doc, "invalid"), 4, "{doc:#}");
    assert_eq!(count(&doc, "skipped"), 3, "{doc:#}");
    assert_eq!(sb.received_urls().len(), 3, "nothing new was sent");

    // Human output names the lines too.
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    assert!(
        done.stdout.contains(&format!("{file}:4")) || done.stderr.contains(&format!("{file}:4")),
        "{}\n{}",
        done.stdout,
        done.stderr
    );
}

#[test]
fn an_input_with_only_bad_lines_still_exits_3_and_sends_nothing() {
    let sb = Sandbox::new();
    let list = sb.file("urls.txt", "/relative/path\nmailto:someone@example.com\n");
    let done = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    let doc = done.json();
    assert_eq!(count(&doc, "invalid"), 2);
    assert_eq!(results(&doc).len(), 2);
    assert_nothing_sent(&sb);
}

#[test]
fn urls_from_stdin_are_read_with_their_line_numbers() {
    let sb = Sandbox::new();
    let site = sb.site.url();
    let input = format!("{site}/s1\nnot a url\n\n{site}/s2\n");
    let done = with_stdin(sb.indexq(&["--json", "submit", "-"]).now(NOW), input.as_bytes()).code(3);
    let doc = done.json();
    let results = results(&doc);
    assert_eq!(count(&doc, "accepted"), 2, "{doc:#}");
    assert_eq!(count(&doc, "invalid"), 1, "{doc:#}");
    let bad = results.iter().find(|r| r["outcome"] == "invalid").unwrap();
    assert!(bad["source"].as_str().unwrap().ends_with(":2"), "{bad}");
    assert!(!done.stderr.contains(bad["source"].as_str().unwrap()), "told in the document only: {}", done.stderr);
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(received, vec![sb.url("/s1"), sb.url("/s2")]);

    // A file and stdin in one run.
    let list = sb.urls("urls.txt", &["/f1"]);
    let done = with_stdin(
        sb.indexq(&["--json", "submit", list.to_str().unwrap(), "-"]).now("2026-12-03T09:10:00Z"),
        format!("{site}/s3\n").as_bytes(),
    )
    .code(0);
    let doc = done.json();
    assert_eq!(count(&doc, "accepted"), 2, "{doc:#}");
    let received = sb.received_urls();
    assert!(received.contains(&sb.url("/f1")) && received.contains(&sb.url("/s3")), "{received:?}");
    assert_eq!(received.len(), 4);
}

/// Writes the sandbox's config with `lines` at the top (top-level keys come
/// before the first table).
fn config_with_top(sb: &Sandbox, lines: &str) {
    let text = std::fs::read_to_string(sb.write_config()).unwrap();
    std::fs::write(sb.config_path(), format!("{lines}\n{text}")).unwrap();
}

#[test]
fn a_lease_shorter_than_the_http_timeout_names_both_keys() {
    // A request may take `[http] timeout`; a lease that ends sooner would let
    // another host resend a URL still on the wire.
    let mut sb = Sandbox::new();
    sb.extra = "[http]\ntimeout = \"30s\"\n".into();
    config_with_top(&sb, "ledger_lease = \"20s\"");
    let list = sb.urls("urls.txt", &["/a"]);
    for args in [&["submit", list.to_str().unwrap()][..], &["status"], &["doctor"]] {
        let done = sb.indexq(args).now(NOW).output().code(2);
        assert_config_error(&sb, &done, &place_of(&sb, "\"20s\""), "ledger_lease");
        assert!(done.stderr.contains("`http.timeout`"), "names the other key:\n{}", done.stderr);
        assert!(done.stderr.contains(&place_of(&sb, "\"30s\"")), "and its place:\n{}", done.stderr);
        assert!(done.stderr.contains("\n  hint: "), "{}", done.stderr);
    }
    assert!(!sb.ledger().exists(), "nothing was written");

    // Equal is not enough either; and with the default lease (10m), a longer
    // timeout is refused at the timeout's place.
    let mut sb = Sandbox::new();
    sb.extra = "[http]\ntimeout = \"30s\"\n".into();
    config_with_top(&sb, "ledger_lease = \"30s\"");
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"30s\""), "ledger_lease");
    let mut sb = Sandbox::new();
    sb.extra = "[http]\ntimeout = \"11m\"\n".into();
    sb.write_config();
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"11m\""), "http.timeout");
    assert!(done.stderr.contains("`ledger_lease`") && done.stderr.contains("10m"), "{}", done.stderr);

    // A lease longer than the timeout is fine.
    let mut sb = Sandbox::new();
    sb.extra = "[http]\ntimeout = \"30s\"\n".into();
    config_with_top(&sb, "ledger_lease = \"31s\"");
    let list = sb.urls("urls.txt", &["/a"]);
    let doc = sb.indexq(&["--json", "submit", list.to_str().unwrap()]).now(NOW).output().code(0).json();
    assert_eq!(count(&doc, "accepted"), 1, "{doc:#}");
}

#[test]
fn a_postgres_url_without_its_slashes_is_an_error_that_keeps_the_password() {
    const PASSWORD: &str = "Mistyped-Pw-7Kq2";
    let list_of = |sb: &Sandbox| sb.urls("urls.txt", &["/a"]);
    let check = |sb: &Sandbox, done: &Done, key: &str| {
        assert!(done.stderr.contains(&format!("`{key}`")), "names {key}:\n{}", done.stderr);
        assert!(done.stderr.contains("\n  hint: "), "{}", done.stderr);
        for channel in [&done.stdout, &done.stderr] {
            assert!(!channel.contains(PASSWORD), "the password is never printed:\n{channel}");
        }
        let names = names_under(sb.dir.path());
        assert!(!names.iter().any(|n| n.contains(PASSWORD) || n.contains("postgres")), "no ledger file: {names:?}");
        assert_nothing_sent(sb);
    };

    // In the config: for every command that opens the ledger.
    for value in [
        format!("postgres:indexq:{PASSWORD}@db.example/indexq"),
        format!("PostgreSQL:indexq:{PASSWORD}@db.example:5432/indexq"),
        format!("postgres:/indexq:{PASSWORD}@db.example/indexq"),
    ] {
        let sb = Sandbox::new();
        config_with_top(&sb, &format!("ledger = \"{value}\""));
        let list = list_of(&sb);
        for args in [&["doctor"][..], &["--json", "doctor"], &["status"], &["submit", list.to_str().unwrap()]] {
            let done = sb.indexq(args).env_remove("INDEXQ_LEDGER").now(NOW).output().code(2);
            let place = format!("{}:1:10", sb.config_path().display());
            assert!(done.stderr.contains(&place), "names {place}:\n{}", done.stderr);
            check(&sb, &done, "ledger");
        }
    }

    // In $INDEXQ_LEDGER.
    let sb = Sandbox::new();
    let list = list_of(&sb);
    for value in [format!("postgres:indexq:{PASSWORD}@db.example/indexq"), format!("POSTGRES:{PASSWORD}@db.example")] {
        for args in [&["doctor"][..], &["status"], &["submit", list.to_str().unwrap()]] {
            let done = sb.indexq(args).env("INDEXQ_LEDGER", &value).now(NOW).output().code(2);
            check(&sb, &done, "$INDEXQ_LEDGER");
        }
    }
}

#[test]
fn a_bing_key_a_url_must_encode_is_refused_without_the_value() {
    for bad in ["Bing+Key/With=Symbols&More", "bing key with spaces 12345", "Bing%4Bey-Percent-Encoded"] {
        let sb = Sandbox::bing("");
        let list = sb.urls("urls.txt", &["/a"]);
        let done = sb.indexq(&["submit", list.to_str().unwrap()]).env("BING_KEY", bad).now(NOW).output().code(2);
        assert_config_error(&sb, &done, &place_of(&sb, "\"BING_KEY\""), "bing.api_key_env");
        assert!(done.stderr.contains("A-Z, a-z, 0-9"), "says what is allowed:\n{}", done.stderr);
        assert!(done.stderr.contains("\n  hint: "), "{}", done.stderr);
        let doctor = sb.indexq(&["--json", "doctor"]).env("BING_KEY", bad).now(NOW).output().code(3);
        assert!(doctor.stdout.contains("bing.api_key_env"), "doctor says it too:\n{}", doctor.stdout);
        let encoded: String = url::form_urlencoded::byte_serialize(bad.as_bytes()).collect();
        for channel in [&done.stdout, &done.stderr, &doctor.stdout, &doctor.stderr] {
            assert!(!channel.contains(bad) && !channel.contains(&encoded), "the key is never printed:\n{channel}");
        }
        assert!(sb.engine.requests().is_empty(), "nothing sent, not even a quota read");
    }

    // From a file, the place is `bing.api_key_file`.
    let sb = Sandbox::bing("");
    sb.file("bing.key", "Bing+Key/With=Symbols\n");
    edit_config(&sb, "api_key_env = \"BING_KEY\"", "api_key_file = \"bing.key\"");
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"bing.key\""), "bing.api_key_file");
    assert!(!done.stderr.contains("Bing+Key"), "{}", done.stderr);
}

/// Baidu and Yandex (issue 47): a property's table without its engine's
/// token, and a Yandex host id not written as Yandex writes one, each name
/// their key and line and say the fix; a token missing from the
/// environment names the variable. Nothing is sent.
#[test]
fn baidu_and_yandex_tables_name_their_mistakes() {
    let (sb, _book) = Sandbox::baidu("", 10);
    edit_config(&sb, "token_env = \"BAIDU_TOKEN\"\n", "");
    let done = sb.indexq(&["submit", "--dry-run"]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "{  }"), "property[0].baidu");
    assert!(done.stderr.contains("token_env = \"BAIDU_PUSH_TOKEN\""), "the fix:\n{}", done.stderr);

    let (sb, _book) = Sandbox::yandex("host_id = \"example.com\"", 10, 10);
    let done = sb.indexq(&["submit", "--dry-run"]).now(NOW).output().code(2);
    assert_config_error(&sb, &done, &place_of(&sb, "\"example.com\""), "property[0].yandex.host_id");
    assert!(done.stderr.contains("https:example.com:443"), "the fix:\n{}", done.stderr);

    let (sb, _book) = Sandbox::yandex("", 10, 10);
    let urls = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", urls.to_str().unwrap()]).now(NOW).env_remove("YANDEX_TOKEN").output().code(2);
    assert!(done.stderr.contains("YANDEX_TOKEN"), "{}", done.stderr);
    assert_nothing_sent(&sb);
}
