//! `indexq doctor` checks everything without spending quota (the mocks count
//! requests), and the three most common first-run failures say the fix.

use crate::support::json::Engine;
use crate::support::mock::MockResponse;
use crate::support::*;

const NOW: &str = "2026-12-03T09:00:00Z";

#[test]
fn all_good_spends_nothing() {
    let mut sb = Sandbox::bing("daily_quota = 100");
    sb.indexnow = true;
    sb.google = Some(String::new());
    sb.write_google_key();
    sb.engine.on("POST", GOOGLE_TOKEN, vec![google_token_response(GOOGLE_ACCESS_TOKEN)]);
    sb.bing_quota(42, 900);
    sb.write_config();
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0);
    let doctor = done.doctor_doc();
    assert!(doctor.checks.iter().all(|c| c.ok), "{doctor:#?}");
    assert!(doctor.check("indexnow_key_file").message.contains("serves exactly the key"));
    let bing = &doctor.check("bing_quota").message;
    assert!(bing.contains("42") && bing.contains("900"), "{bing}");
    assert!(doctor.check("google_token").message.contains(GOOGLE_EMAIL));
    assert!(doctor.check("config").message.contains("America/Los_Angeles"));
    // Nothing was submitted anywhere.
    assert!(sb.engine.requests_to("POST", ENDPOINT_PATH).is_empty());
    assert!(sb.engine.requests_to("POST", BING_SUBMIT).is_empty());
    assert!(sb.engine.requests_to("POST", GOOGLE_PUBLISH).is_empty());
    assert!(sb.engine.requests_to("POST", GOOGLE_INSPECT).is_empty());
    assert_eq!(sb.engine.requests_to("POST", GOOGLE_TOKEN).len(), 1);
    // Human output: "ok" lines and the closing sentence.
    let human = sb.indexq(&["doctor"]).now(NOW).output().code(0);
    assert!(human.stdout.contains("no submission quota was spent"), "{}", human.stdout);
}

#[test]
fn a_key_file_that_is_not_served_needs_a_human_and_says_the_fix() {
    let sb = Sandbox::new();
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(404).body("Not Found")]);
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3);
    let doctor = done.doctor_doc();
    let c = doctor.check("indexnow_key_file");
    assert!(!c.ok);
    assert_eq!(c.property.as_deref(), Some("site"));
    assert_eq!(c.engine, Some(Engine::IndexNow));
    assert!(c.fix.as_deref().unwrap().contains("Serve exactly the key"), "{c:?}");
    assert!(!done.stdout.contains(KEY), "the key is never printed");
    let human = sb.indexq(&["doctor"]).now(NOW).output().code(3);
    assert!(human.stdout.contains("FIX indexnow_key_file") && human.stdout.contains("fix:"), "{}", human.stdout);
    assert!(sb.engine.requests().is_empty(), "no submission");
}

#[test]
fn a_refused_google_key_and_a_failed_bing_read_are_problems() {
    let mut sb = Sandbox::bing("");
    sb.google = Some(String::new());
    sb.write_google_key();
    sb.engine.on(
        "POST",
        GOOGLE_TOKEN,
        vec![
            MockResponse::status(400).json(r#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        ],
    );
    sb.engine.on(
        "GET",
        BING_QUOTA,
        vec![MockResponse::status(400).json(r#"{"ErrorCode":3,"Message":"ERROR!!! InvalidApiKey"}"#)],
    );
    sb.write_config();
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3);
    let doctor = done.doctor_doc();
    let google = doctor.check("google_token");
    assert!(!google.ok);
    assert!(google.message.contains(GOOGLE_KEY_ID));
    assert!(!doctor.check("bing_quota").ok);
    assert!(!done.stdout.contains(BING_KEY));
    assert!(sb.engine.requests_to("POST", BING_SUBMIT).is_empty());
}

#[test]
fn the_ledger_is_checked_and_a_dead_runs_reservation_is_reported() {
    let sb = Sandbox::new();
    sb.engine.on("POST", ENDPOINT_PATH, vec![MockResponse::status(200).hang()]);
    let list = sb.urls("urls.txt", &["/a"]);
    let mut child = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).spawn();
    assert!(sb.engine.wait_for_requests("POST", ENDPOINT_PATH, 1, std::time::Duration::from_secs(10)));
    child.kill().unwrap();
    child.wait().unwrap();
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0);
    let doctor = done.doctor_doc();
    assert!(doctor.check("ledger").message.contains("schema version 13"));
    assert!(doctor.check("ledger_in_flight").message.contains("1 reservation"));
    // A ledger others can read is made private, and doctor says what it found.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(sb.ledger(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0);
        let c = done.doctor_doc().check("ledger_mode").clone();
        assert!(c.message.contains("had mode 644"), "{c:?}");
        assert_eq!(std::fs::metadata(sb.ledger()).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn no_config_found_says_how_to_make_one() {
    let sb = Sandbox::new();
    let empty = sb.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut run = sb.indexq(&["submit"]).env_remove("INDEXQ_CONFIG").now(NOW);
    run.cmd.current_dir(&empty);
    let done = run.output().code(2);
    assert!(done.stderr.contains("no configuration found"), "{}", done.stderr);
    assert!(done.stderr.contains("hint: run `indexq init --site https://YOUR.SITE/`"), "{}", done.stderr);
    assert!(!done.stderr.contains("config.example.toml"), "a packaged install has no example file: {}", done.stderr);
}

#[test]
fn google_ownership_says_to_add_the_service_account_as_owner() {
    let sb = Sandbox::google("");
    sb.engine.on(
        "POST",
        GOOGLE_PUBLISH,
        vec![MockResponse::status(403).json(
            r#"{"error":{"code":403,"message":"Permission denied. Failed to verify the URL ownership.","status":"PERMISSION_DENIED"}}"#,
        )],
    );
    let list = sb.urls("urls.txt", &["/a"]);
    let done = sb.indexq(&["submit", list.to_str().unwrap()]).now(NOW).output().code(3);
    assert!(
        done.stdout.contains("hint:") && done.stdout.contains(GOOGLE_EMAIL) && done.stdout.contains("Owner"),
        "{}",
        done.stdout
    );
}

/// Runs `line` in `sh` in the sandbox's directory with `INDEXNOW_KEY` set:
/// what a person pasting it gets on stdout (not checked for secrets: it is
/// the key file's content, fetched by the test itself).
fn pasted(sb: &Sandbox, line: &str) -> String {
    let out = seal_network(std::process::Command::new("sh").args(["-c", line]).current_dir(sb.dir.path()).env_clear())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("INDEXNOW_KEY", KEY)
        .output()
        .expect("sh runs");
    assert!(out.status.success(), "`{line}` failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The line after `check it with: ` in `doctor`'s human output.
fn check_it_with(stdout: &str) -> String {
    let line = stdout.lines().find_map(|l| l.trim_start().strip_prefix("check it with: "));
    line.unwrap_or_else(|| panic!("no `check it with:` line:\n{stdout}")).to_string()
}

#[test]
fn doctor_shows_a_curl_line_that_fetches_the_key_file_without_holding_the_key() {
    // The key from the environment: the line reads `${INDEXNOW_KEY}`.
    let sb = Sandbox::new();
    let human = sb.indexq(&["doctor"]).now(NOW).output().code(0).stdout;
    let line = check_it_with(&human);
    assert_eq!(line, format!("curl -fsS \"{}/${{INDEXNOW_KEY}}.txt\"", sb.site.url()), "{human}");
    assert_eq!(pasted(&sb, &line).trim(), KEY, "pasted where indexq runs, it fetches the key file");
    // A failing check shows it too, and `--json` keeps to its fields.
    sb.site.on("GET", &format!("/{KEY}.txt"), vec![MockResponse::status(404).body("Not Found")]);
    let human = sb.indexq(&["doctor"]).now(NOW).output().code(3).stdout;
    assert_eq!(check_it_with(&human), line);
    let json = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(3);
    json.doctor_doc();
    assert!(!json.stdout.contains("curl"), "{}", json.stdout);

    // The key from a file: the line reads it with `cat`.
    let sb = Sandbox::new();
    sb.file("indexnow.key", &format!("{KEY}\n"));
    sb.write_config();
    let text = std::fs::read_to_string(sb.config_path())
        .unwrap()
        .replace("key_env = \"INDEXNOW_KEY\"", "key_file = \"indexnow.key\"");
    std::fs::write(sb.config_path(), text).unwrap();
    let human = sb.indexq(&["doctor"]).env_remove("INDEXNOW_KEY").now(NOW).output().code(0).stdout;
    let line = check_it_with(&human);
    let file = sb.dir.path().join("indexnow.key");
    assert_eq!(line, format!("curl -fsS \"{}/$(cat '{}').txt\"", sb.site.url(), file.display()), "{human}");
    assert_eq!(pasted(&sb, &line).trim(), KEY);
}

#[test]
fn several_indexnow_endpoints_are_warned_about_with_how_many_times_each_url_goes() {
    let mut sb = Sandbox::new();
    sb.endpoints.push(format!("{}/second", sb.engine.url()));
    sb.endpoints.push(format!("{}/third", sb.engine.url()));
    sb.write_config();
    let done = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0);
    let doctor = done.doctor_doc();
    let c = doctor.check("indexnow_endpoints");
    assert!(c.ok && c.warning, "a warning, not a problem: {c:?}");
    assert!(c.message.contains("3 IndexNow endpoints") && c.message.contains("each URL goes 3 times"), "{c:?}");
    assert!(c.message.contains("share every submission"), "{c:?}");
    assert!(c.fix.as_deref().unwrap().contains("keep one endpoint"), "{c:?}");
    let human = sb.indexq(&["doctor"]).now(NOW).output().code(0);
    assert!(human.stdout.contains("warn indexnow_endpoints: 3 IndexNow endpoints"), "{}", human.stdout);
    assert!(sb.engine.requests().is_empty(), "nothing submitted");

    // One endpoint: nothing to say.
    let sb = Sandbox::new();
    let doctor = sb.indexq(&["--json", "doctor"]).now(NOW).output().code(0).doctor_doc();
    assert!(doctor.checks.iter().all(|c| c.check != "indexnow_endpoints" && !c.warning), "{doctor:#?}");
}
