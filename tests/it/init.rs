//! `indexq init`: a first configuration without the repository. The
//! starter is written where the lookup finds it, with the site filled in
//! and the site's sitemap as the property's source, loads (doctor and a dry
//! run work on it, against the sandbox's site), and an existing file is
//! never overwritten.

use crate::support::sitemap::Sitemap;
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
    // One IndexNow endpoint, and why: the engines share every submission.
    assert_eq!(text.matches("endpoints = [\"https://api.indexnow.org/indexnow\"]").count(), 1, "{text}");
    assert!(text.contains("share every submission\n# with each other (indexnow.org FAQ)"), "{text}");
    assert!(text.contains("a key file below the root vouches only for the URLs under its folder"), "{text}");
    // What Google documents its Indexing API for, in the file and in what init says (issue 26, item 8).
    assert!(text.contains("JobPosting or BroadcastEvent"), "{text}");
    assert!(
        done.stdout.contains("JobPosting or BroadcastEvent") && done.stdout.contains("received"),
        "{}",
        done.stdout
    );
    assert!(text.contains("[retry]"), "{text}");
    // It parses as a configuration, and its one property reads the site's sitemap.
    let settings = indexq::testing_api::config::parse(&written, &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(settings.properties.len(), 1);
    assert_eq!(
        settings.properties[0].sources,
        [indexq::testing_api::config::PropertySource::Sitemap(format!("{site}sitemap.xml"))],
        "{text}"
    );

    // The key file is served where the starter says (the site's root): doctor is content.
    let doctor = in_dir(&sb, "fresh", &["--config", "indexq.toml", "--json", "doctor"]).output().code(0);
    let checks = doctor.doctor_doc().checks;
    assert!(checks.iter().all(|c| c.ok && !c.warning), "{checks:#?}");
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
    let xdg = sb.dir.path().join("my-xdg");
    // $INDEXQ_CONFIG names the sandbox's own configuration: `--global`,
    // typed for this run, still writes the user's, and the note says which
    // file the lookup reads before it.
    let mut run = sb.indexq(&["init", "--global", "--site", &site]).env("XDG_CONFIG_HOME", &xdg).now(NOW);
    let cwd = sb.dir.path().join("shadowed");
    std::fs::create_dir_all(&cwd).unwrap();
    run.cmd.current_dir(&cwd);
    let done = run.output().code(0);
    assert!(xdg.join("indexq").join("config.toml").is_file());
    assert!(!cwd.join("indexq.toml").exists());
    let note = format!("reads {} ($INDEXQ_CONFIG) first", sb.config_path().display());
    assert!(done.stdout.contains(&note), "names the file read instead:\n{}", done.stdout);
}

#[test]
fn init_writes_the_file_indexq_config_names() {
    let sb = Sandbox::new();
    let site = sb.site_url();
    let named = sb.dir.path().join("etc").join("mine.toml");
    let done = in_dir(&sb, "cwd", &["--json", "init", "--site", &site]).env("INDEXQ_CONFIG", &named).output().code(0);
    assert_eq!(done.init_doc().config, named.display().to_string());
    assert!(read(&named).contains(&format!("site = \"{site}\"")), "written where $INDEXQ_CONFIG points");
    assert!(!sb.dir.path().join("cwd").join("indexq.toml").exists(), "not in the working directory");

    // The next steps need no --config: the lookup finds it.
    std::fs::remove_file(&named).unwrap();
    let done = in_dir(&sb, "cwd", &["init", "--site", &site]).env("INDEXQ_CONFIG", &named).output().code(0);
    assert!(done.stdout.contains("\n  4. indexq doctor\n"), "{}", done.stdout);
    assert!(!done.stdout.contains("--config") && !done.stdout.contains("Note:"), "{}", done.stdout);
    in_dir(&sb, "cwd", &["doctor"]).env("INDEXQ_CONFIG", &named).output().code(0);

    // An existing file is kept, as with --config; --config wins over the environment.
    let again = in_dir(&sb, "cwd", &["init"]).env("INDEXQ_CONFIG", &named).output().code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert!(read(&named).contains(&format!("site = \"{site}\"")), "left as it was");
    in_dir(&sb, "cwd", &["--config", "other.toml", "init"]).env("INDEXQ_CONFIG", &named).output().code(0);
    assert!(sb.dir.path().join("cwd").join("other.toml").is_file());
}

/// Runs `line` (a step `init` printed) in `sh`, in `cwd`, as a person
/// pasting it would: with the binary on the PATH and the key exported.
fn pasted(cwd: &Path, line: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_indexq")).parent().unwrap().to_path_buf();
    let mut path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect::<Vec<_>>();
    path.insert(0, bin);
    seal_network(std::process::Command::new("sh").args(["-c", line]).current_dir(cwd).env_clear())
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("HOME", cwd)
        .env("XDG_STATE_HOME", cwd.join("state"))
        .env("XDG_CONFIG_HOME", cwd.join("xdg-config"))
        .env("INDEXNOW_KEY", KEY)
        .env("INDEXQ_NOW", NOW)
        .env("TZ", "UTC")
        .output()
        .expect("sh runs")
}

#[test]
fn init_next_steps_name_only_what_exists_and_explain_the_numbers() {
    let sb = Sandbox::new();
    let site = sb.site_url();
    let done = in_dir(&sb, "steps", &["init", "--site", &site]).output().code(0);
    let text = &done.stdout;
    // No file the user does not have yet: not a sitemap or URL list of ours,
    // and the key file only after the command that makes it. The one
    // sitemap named is the site's own, the source the file reads.
    for missing in ["public/sitemap.xml", "urls.txt", "public/sitemap"] {
        assert!(!text.contains(missing), "names {missing}, which does not exist:\n{text}");
    }
    let source = format!("{site}sitemap.xml");
    assert_eq!(text.matches("sitemap.xml").count(), text.matches(&source).count(), "{text}");
    assert!(text.contains(&format!("reads the property's sources: {source}")), "{text}");
    let generate = text.find("key generate --out public").expect("says how to make a key");
    let key_file = text.find("public/KEY.txt").expect("names the key file it makes");
    assert!(generate < key_file, "the command comes before the file it makes:\n{text}");
    // The numbers it wrote are explained.
    assert!(text.contains("daily_quota = 10000") && text.contains("IndexNow documents no daily limit"), "{text}");
    assert!(text.contains("200 a day and 380 a minute"), "{text}");
    // Its source is a sitemap: the sitemap channel is offered, for every page.
    assert!(text.contains("the sitemap channel is there for every page"), "{text}");
    assert!(text.contains("`google = { indexing = false }`") && text.contains("Owner or Full user"), "{text}");
    assert!(text.contains(&format!("indexq submits\n{source} to Bing and Search Console")), "{text}");

    // The key file's check is a curl line that holds no key: pasted, it fetches the file.
    let curl = text.lines().map(str::trim).find_map(|l| l.strip_prefix("3. ")).expect("step 3");
    assert_eq!(curl, format!("curl -fsS \"{site}${{INDEXNOW_KEY}}.txt\""));
    let cwd = sb.dir.path().join("steps");
    let fetched = pasted(&cwd, curl);
    assert_eq!(String::from_utf8_lossy(&fetched.stdout).trim(), KEY, "{fetched:?}");
    // The dry run of step 5 works as printed: with no input, it reads the
    // site's sitemap, the source the starter names.
    let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", Some("2026-12-01"));
    sitemap.add("/b", None);
    let dry = text.lines().map(str::trim).find_map(|l| l.strip_prefix("5. ")).expect("step 5");
    assert_eq!(dry, "indexq submit --dry-run", "no input: the sources");
    let planned = pasted(&cwd, dry);
    let planned = Done::from(planned).code(0);
    assert!(planned.stdout.contains("2 URLs would go now"), "{}", planned.stdout);
    assert_eq!(sb.site.requests_to("GET", "/sitemap.xml").len(), 1, "the sitemap was read");
    assert!(sb.engine.requests().is_empty(), "a dry run sends nothing");
    // A site with an archive is told of the baseline, after the dry run.
    let baseline = text.find("`indexq submit --baseline` once first").expect("names --baseline");
    assert!(text.find("5. ").unwrap() < baseline && baseline < text.find("6. ").unwrap(), "{text}");
    // A site with an archive is told of the baseline, after the dry run.
    let baseline = text.find("`indexq submit --baseline` once first").expect("names --baseline");
    assert!(text.find("5. ").unwrap() < baseline && baseline < text.find("6. ").unwrap(), "{text}");

    // Step 6, the hourly job, names the file by its absolute path: it works
    // from any directory.
    let hourly = text.lines().map(str::trim).find_map(|l| l.strip_prefix("6. ")).expect("step 6");
    let written = cwd.join("indexq.toml").canonicalize().unwrap();
    assert_eq!(hourly, format!("INDEXQ_CONFIG={} indexq -q submit", written.display()));
}
