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
    assert!(doctor.check("ledger").message.contains("schema version 3"));
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
