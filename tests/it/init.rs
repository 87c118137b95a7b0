//! `indexq init`: a first configuration without the repository. The
//! starter is written where the lookup finds it, with the site filled in,
//! loads (doctor and a dry run work on it, against the sandbox's site), and
//! an existing file is never overwritten.

use crate::support::*;
use std::path::{Path, PathBuf};

const NOW: &str = "2026-12-03T09:00:00Z";

/// A run in a fresh directory `name` of the sandbox, with no configuration
/// anywhere: no `$INDEXQ_CONFIG`, no `indexq.toml` in the working directory,
/// and an empty `$XDG_CONFIG_HOME`.
fn in_dir(sb: &Sandbox, name: &str, args: &[&str]) -> Run {
    let cwd = sb.dir.path().join(name);
    std::fs::create_dir_all(&cwd).unwrap();
    let mut run = sb.indexq(args).env_remove("INDEXQ_CONFIG").now(NOW);
    run.cmd.current_dir(cwd);
    run
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn init_writes_a_starter_for_the_site_that_doctor_and_a_dry_run_accept() {
    let sb = Sandbox::new();
    let site = sb.site_url();
    let done = in_dir(&sb, "fresh", &["init", "--site", &site]).output().code(0);
    let written = sb.dir.path().join("fresh").join("indexq.toml");
    assert!(done.stdout.contains("Wrote indexq.toml"), "{}", done.stdout);
    assert!(done.stdout.contains("indexq doctor"), "says what comes next:\n{}", done.stdout);
    let text = read(&written);
    assert!(text.contains(&format!("site = \"{site}\"")), "the site is filled in:\n{text}");
    assert!(!text.contains("example.com"), "no trace of the example's site:\n{text}");
    assert!(text.contains("key_env = \"INDEXNOW_KEY\""), "{text}");
    // The example's comments come along.
    assert!(text.contains("# bing = {"), "{text}");
    assert!(text.contains("[retry]"), "{text}");

    // The key file is served where the starter says (the site's root): doctor is content.
    let doctor = in_dir(&sb, "fresh", &["--config", "indexq.toml", "--json", "doctor"]).output().code(0);
    let checks = doctor.doctor_doc().checks;
    assert!(checks.iter().all(|c| c.ok), "{checks:#?}");
    assert!(checks.iter().any(|c| c.check == "indexnow_key_file"), "{checks:#?}");
    assert_eq!(sb.site.requests_to("GET", &format!("/{KEY}.txt")).len(), 1, "doctor fetched the key file");

    // And found without --config, from its own directory.
    in_dir(&sb, "fresh", &["doctor"]).output().code(0);

    let list = sb.urls("urls.txt", &["/a", "/b"]);
    let plan = in_dir(&sb, "fresh", &["--json", "submit", "--dry-run", list.to_str().unwrap()]).output().code(0);
    let plan = plan.submit_doc();
    assert_eq!(plan.plan.as_ref().map(Vec::len), Some(2), "{plan:#?}");
    assert!(sb.engine.requests().is_empty(), "a dry run sends nothing");
}

#[test]
fn init_never_overwrites_a_configuration() {
    let sb = Sandbox::new();
    let site = sb.site_url();
    in_dir(&sb, "here", &["init", "--site", &site]).output().code(0);
    let path = sb.dir.path().join("here").join("indexq.toml");
    std::fs::write(&path, "# mine\n").unwrap();
    let done = in_dir(&sb, "here", &["init", "--site", "https://other.example/"]).output().code(2);
    assert!(done.stderr.contains("indexq.toml: already exists"), "{}", done.stderr);
    assert!(done.stderr.contains("hint:"), "{}", done.stderr);
    assert_eq!(read(&path), "# mine\n", "left as it was");
}

#[test]
fn init_global_writes_under_xdg_config_home_where_the_lookup_finds_it() {
    let sb = Sandbox::new();
    let xdg = sb.dir.path().join("my-xdg");
    let site = sb.site_url();
    let done = in_dir(&sb, "anywhere", &["--json", "init", "--global", "--site", &site])
        .env("XDG_CONFIG_HOME", &xdg)
        .output()
        .code(0);
    let path: PathBuf = xdg.join("indexq").join("config.toml");
    let doc = done.init_doc();
    assert_eq!(doc.config, path.display().to_string(), "{doc:#?}");
    assert_eq!(doc.site, site);
    assert!(!doc.placeholder);
    assert!(read(&path).contains(&format!("site = \"{site}\"")));

    // Another directory, no --config: the user's configuration is found.
    in_dir(&sb, "elsewhere", &["doctor"]).env("XDG_CONFIG_HOME", &xdg).output().code(0);

    let again = in_dir(&sb, "anywhere", &["init", "--global"]).env("XDG_CONFIG_HOME", &xdg).output().code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert!(!sb.dir.path().join("anywhere").join("indexq.toml").exists(), "nothing written beside");
}

#[test]
fn init_writes_where_config_points_and_says_so() {
    let sb = Sandbox::new();
    let site = sb.site_url();
    let done = in_dir(&sb, "cwd", &["--config", "etc/indexq/config.toml", "init", "--site", &site]).output().code(0);
    let path = sb.dir.path().join("cwd").join("etc").join("indexq").join("config.toml");
    assert!(read(&path).contains(&format!("site = \"{site}\"")));
    // Not in a place the lookup tries: the next steps carry --config.
    assert!(done.stdout.contains("indexq --config etc/indexq/config.toml doctor"), "{}", done.stdout);

    let both = in_dir(&sb, "cwd", &["--config", "x.toml", "init", "--global"]).output().code(2);
    assert!(both.stderr.contains("--global"), "{}", both.stderr);
    assert!(!sb.dir.path().join("cwd").join("x.toml").exists());
}

#[test]
fn init_without_a_site_writes_the_placeholder_and_says_to_set_it() {
    let sb = Sandbox::new();
    let done = in_dir(&sb, "placeholder", &["init"]).output().code(0);
    assert!(done.stdout.contains("placeholder"), "{}", done.stdout);
    let text = read(&sb.dir.path().join("placeholder").join("indexq.toml"));
    assert!(text.contains("site = \"https://example.com/\""), "{text}");
    assert!(!text.contains("examples/"), "nothing points into the repository:\n{text}");
    // `--json` says so too.
    let doc = in_dir(&sb, "placeholder-json", &["--json", "init"]).output().code(0).init_doc();
    assert!(doc.placeholder, "{doc:#?}");
    assert_eq!(doc.site, "https://example.com/");
    assert_eq!(doc.config, "indexq.toml");
}

#[test]
fn init_refuses_a_site_that_is_not_an_absolute_http_url() {
    let sb = Sandbox::new();
    for bad in ["example.org", "ftp://example.org/", "/var/www"] {
        let done = in_dir(&sb, "bad", &["init", "--site", bad]).output().code(2);
        assert!(done.stderr.contains("--site"), "{bad}: {}", done.stderr);
        assert!(done.stderr.contains("https://example.org/"), "{bad}: the hint shows the form: {}", done.stderr);
    }
    assert!(!sb.dir.path().join("bad").join("indexq.toml").exists());
}

#[test]
fn init_says_when_the_lookup_would_read_another_file_first() {
    let sb = Sandbox::new();
    let site = sb.site_url();
    // $INDEXQ_CONFIG names the sandbox's own configuration: it comes before ./indexq.toml.
    let mut run = sb.indexq(&["init", "--site", &site]).now(NOW);
    let cwd = sb.dir.path().join("shadowed");
    std::fs::create_dir_all(&cwd).unwrap();
    run.cmd.current_dir(&cwd);
    let done = run.output().code(0);
    assert!(cwd.join("indexq.toml").is_file());
    assert!(done.stdout.contains("indexq --config indexq.toml doctor"), "{}", done.stdout);
    let note = format!("reads {} first", sb.config_path().display());
    assert!(done.stdout.contains(&note), "names the file read instead:\n{}", done.stdout);
}
