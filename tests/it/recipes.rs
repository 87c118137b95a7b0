//! The recipes run as written, with sources and no other step. Each
//! recipe's own command line — the systemd unit's `ExecStart=` with its
//! `Environment=` and `EnvironmentFile=`, the crontab's job lines with its
//! variables (`examples/cron` and the README's), the image's `ENTRYPOINT`
//! with the Dockerfile's `ENV` and each documented `docker run`'s
//! arguments (the Dockerfile's and the README's), the GitHub workflow's
//! action step (through the action's own steps and scripts) and the GitLab
//! job's `script:` with its `variables:` — is run with an empty environment
//! (`env -i`) plus only what the recipe (or the runner that reads it) sets,
//! from an empty working directory that is not the configuration's.
//!
//! Absolute paths move into a temporary root (`/etc/indexq/config.toml` is
//! `ROOT/etc/indexq/config.toml`, a `PATH` likewise), the binary is put where
//! the recipe's install step puts it, and the configuration is the one the
//! recipe says to make: `indexq --config PATH init --site SITE`, its IndexNow
//! endpoint pointed at the mock engine (the only edit). The mock site serves
//! the key file and a sitemap; each recipe must send that sitemap's URLs.
//!
//! Docker itself does not run here: the image's parts are read from the
//! Dockerfile and the documented `docker run` lines are run as the container
//! would run them (entrypoint, `ENV`, `-e`, volumes). `systemd-analyze
//! verify` checks the units where it is installed, and the test says so
//! when it is not; the gated test requires it (`.ci/run` installs it).

use crate::support::mock::{MockResponse, MockServer};
use crate::support::sitemap::Sitemap;
use crate::support::*;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Where the starter configuration points IndexNow, which the test points at the mock.
const REAL_ENDPOINT: &str = "https://api.indexnow.org/indexnow";

/// One recipe's world: the mock engine and site (serving a sitemap), a root
/// that the recipe's absolute paths move into, and an empty directory to
/// run from.
struct Stage {
    sb: Sandbox,
    sitemap: Sitemap,
    root: PathBuf,
    cwd: PathBuf,
}

impl Stage {
    fn new() -> Stage {
        let sb = Sandbox::new();
        let sitemap = Sitemap::serve(&sb.site, "/sitemap.xml");
        sitemap.add("/a", Some("2026-12-01"));
        sitemap.add("/b", None);
        sitemap.add("/c/d", Some("2026-12-02T10:00:00Z"));
        let root = sb.dir.path().join("root");
        let cwd = sb.dir.path().join("elsewhere");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        Stage { sb, sitemap, root, cwd }
    }

    /// An absolute path of a recipe, inside the root.
    fn at(&self, path: &str) -> PathBuf {
        let relative = path.strip_prefix('/').unwrap_or_else(|| panic!("not an absolute path: {path}"));
        self.root.join(relative)
    }

    /// A value of a recipe with its absolute paths moved into the root: the
    /// whole value, or each entry of a `:`-separated list (`PATH`).
    fn moved(&self, value: &str) -> String {
        if !value.starts_with('/') {
            return value.to_string();
        }
        value.split(':').map(|p| self.at(p).display().to_string()).collect::<Vec<_>>().join(":")
    }

    /// Puts the binary at a recipe's absolute path (a symbolic link).
    fn install(&self, path: &str) -> PathBuf {
        let at = self.at(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        if !at.exists() {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_indexq"), &at).unwrap();
        }
        at
    }

    /// Makes the configuration at `config` (a path in the root) as the
    /// recipes say, `indexq --config FILE init --site SITE`, then points its
    /// IndexNow endpoint at the mock engine.
    fn init(&self, config: &Path) {
        assert!(config.starts_with(&self.root), "the configuration is named by an absolute path: {}", config.display());
        let mut init = Command::new(env!("CARGO_BIN_EXE_indexq"));
        init.arg("--config").arg(config).args(["init", "--site", &self.sb.site_url()]).env_clear();
        let done =
            Done::from(seal_network(&mut init).current_dir(&self.cwd).stdin(Stdio::null()).output().unwrap()).code(0);
        assert!(done.stdout.contains("indexq -q submit"), "init names the hourly job:\n{}", done.stdout);
        let text = std::fs::read_to_string(config).unwrap();
        let source = format!("sources = [\"{}sitemap.xml\"]", self.sb.site_url());
        assert!(text.contains(&source), "init wrote the site's sitemap as the source:\n{text}");
        assert_eq!(text.matches(REAL_ENDPOINT).count(), 1, "{text}");
        std::fs::write(config, text.replace(REAL_ENDPOINT, &self.sb.endpoints[0])).unwrap();
    }

    /// Runs `program args` with exactly `env` (and the tests' network seal,
    /// `seal_network`), from the empty directory.
    fn run(&self, program: &Path, args: &[String], env: &BTreeMap<String, String>) -> Done {
        let output = seal_network(Command::new(program).args(args).env_clear().envs(env))
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
        Done::from(output)
    }

    /// The sitemap's URLs reached the mock engine, each once, and nothing
    /// was written where the recipe ran.
    fn assert_sent(&self, what: &str, done: &Done) {
        let mut sent = self.sb.received_urls();
        sent.sort();
        let mut urls = self.sitemap.urls();
        urls.sort();
        assert_eq!(
            sent, urls,
            "{what} sent the sitemap's URLs\n--- stdout\n{}\n--- stderr\n{}",
            done.stdout, done.stderr
        );
        let left: Vec<_> = std::fs::read_dir(&self.cwd).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "{what} wrote into its working directory: {left:?}");
    }

    /// How often the mock site was asked for the sitemap, and with which validator.
    fn sitemap_gets(&self) -> Vec<Option<String>> {
        self.sb
            .site
            .requests_to("GET", "/sitemap.xml")
            .iter()
            .map(|r| r.header("If-None-Match").map(String::from))
            .collect()
    }
}

/// A recipe's placeholder for the IndexNow key, replaced by the test's key.
fn with_key(mut env: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let value = env.get_mut("INDEXNOW_KEY").expect("the recipe gives indexq the IndexNow key");
    assert_ne!(value, KEY);
    *value = KEY.to_string();
    env
}

/// Words of a command line as a shell (or systemd) splits them: blanks
/// separate, quotes group and go, a backslash escapes the next character
/// (not inside single quotes).
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => word.extend(chars.next()),
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "an unclosed quote in `{line}`");
    if in_word {
        words.push(word);
    }
    words
}

/// `text` as one shell word.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The file an `indexq` command line (its paths moved) names as its
/// configuration: `--config FILE`, else `$INDEXQ_CONFIG` of its
/// environment. `Stage::init` checks that it is in the root: a relative
/// path is not moved, and fails there.
fn config_of(args: &[String], env: &BTreeMap<String, String>) -> PathBuf {
    let flag = args.iter().position(|a| a == "--config").map(|i| args[i + 1].clone());
    let named = flag.or_else(|| env.get("INDEXQ_CONFIG").cloned()).expect("the recipe names its configuration");
    PathBuf::from(named)
}

/// The inputs of an `indexq … submit …` command line: `--sitemap`s, and the
/// words after `submit` that are neither options nor their values. The
/// recipes give none: `submit` reads the configuration's sources.
fn submit_inputs(words: &[String]) -> Vec<String> {
    const VALUED: &[&str] =
        &["--config", "--engine", "--sitemap", "--since", "--max-wait", "--fail-on", "--metrics-file"];
    let at = words.iter().position(|w| w == "submit").expect("a submit command line");
    let mut inputs = Vec::new();
    let mut value = false;
    for word in &words[at + 1..] {
        if std::mem::take(&mut value) {
            continue;
        }
        if word == "--sitemap" {
            inputs.push(word.clone());
        }
        value = VALUED.contains(&word.as_str());
        if !word.starts_with('-') {
            inputs.push(word.clone());
        }
    }
    inputs
}

// ---------------------------------------------------------------------------
// systemd

/// A unit file's settings in order: (section, key, value). With `commented`,
/// also the settings commented out (`#Key=value`), to check their keys.
fn unit_entries(text: &str, commented: bool) -> Vec<(String, String, String)> {
    let mut entries = Vec::new();
    let mut section = String::new();
    for line in text.replace("\\\n", " ").lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            section = name.strip_suffix(']').unwrap_or_else(|| panic!("a bad section line: {line}")).to_string();
            continue;
        }
        let setting = match line.strip_prefix(['#', ';']) {
            // A commented-out setting: a key right after the '#', then '='.
            Some(rest) if commented && !section.is_empty() => match rest.split_once('=') {
                Some((key, _)) if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric()) => rest,
                _ => continue,
            },
            Some(_) => continue,
            None => line,
        };
        assert!(!section.is_empty(), "a setting before any section: {line}");
        let (key, value) = setting.split_once('=').unwrap_or_else(|| panic!("not `Key=value`: {line}"));
        entries.push((section.clone(), key.trim().to_string(), value.trim().to_string()));
    }
    entries
}

/// The settings the units may use, per section: a key systemd does not know
/// would only be warned about, and ignored.
const UNIT_KEYS: &[(&str, &[&str])] = &[
    ("Unit", &["Description", "Documentation", "Wants", "After", "Requires", "Before"]),
    (
        "Service",
        &[
            "Type",
            "ExecStart",
            "User",
            "Group",
            "Restart",
            "RestartSec",
            "StateDirectory",
            "StateDirectoryMode",
            "Environment",
            "EnvironmentFile",
            "LoadCredential",
            "SuccessExitStatus",
            "TimeoutStopSec",
            "DynamicUser",
            "NoNewPrivileges",
            "ProtectSystem",
            "ProtectHome",
            "PrivateTmp",
            "PrivateDevices",
            "RestrictAddressFamilies",
        ],
    ),
    ("Timer", &["OnCalendar", "RandomizedDelaySec", "Persistent", "Unit"]),
    ("Install", &["WantedBy"]),
];

fn service_values(entries: &[(String, String, String)], key: &str) -> Vec<String> {
    entries.iter().filter(|(s, k, _)| s == "Service" && k == key).map(|(_, _, v)| v.clone()).collect()
}

#[test]
fn the_systemd_service_sends_the_sitemap_with_its_own_environment() {
    let stage = Stage::new();
    let entries = unit_entries(&read("examples/systemd/indexq.service"), false);
    let exec = service_values(&entries, "ExecStart");
    assert_eq!(exec.len(), 1, "one ExecStart: {exec:?}");
    let mut argv = words(&exec[0]);
    assert!(argv.iter().all(|w| !w.contains(['$', '%'])), "no expansion to emulate: {argv:?}");
    let program = argv.remove(0);
    let program = program.trim_start_matches(['-', '@', ':', '+', '!']);
    assert!(program.starts_with('/'), "systemd needs an absolute ExecStart: {program}");
    assert!(service_values(&entries, "WorkingDirectory").is_empty(), "runs in /, not the configuration's folder");

    // Environment=, then EnvironmentFile= (whose values win), as systemd reads them.
    let mut env = BTreeMap::new();
    for line in service_values(&entries, "Environment") {
        for assignment in words(&line) {
            let (k, v) = assignment.split_once('=').unwrap_or_else(|| panic!("not VAR=value: {assignment}"));
            env.insert(k.to_string(), stage.moved(v));
        }
    }
    for file in service_values(&entries, "EnvironmentFile") {
        let file = stage.at(file.trim_start_matches('-'));
        // What the unit's comment says to put there: the secrets, one VAR=value a line.
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, format!("# the secrets\nINDEXNOW_KEY={KEY}\n")).unwrap();
        for line in std::fs::read_to_string(&file).unwrap().lines().filter(|l| !l.starts_with('#')) {
            let (k, v) = line.split_once('=').unwrap();
            env.insert(k.to_string(), v.to_string());
        }
    }
    for dir in service_values(&entries, "StateDirectory") {
        std::fs::create_dir_all(stage.at(&format!("/var/lib/{dir}"))).unwrap();
    }
    let program = stage.install(program);
    let argv: Vec<String> = argv.iter().map(|w| stage.moved(w)).collect();
    assert_eq!(submit_inputs(&argv), Vec::<String>::new(), "no input: the sources");
    let config = config_of(&argv, &env);
    stage.init(&config);
    // The unit's setup gives the config the service's ledger, as its first line.
    let text = read("examples/systemd/indexq.service");
    let sed = text.lines().find(|l| l.contains("sed -i '1i ledger = ")).expect("the setup sets the config's ledger");
    let ledger = sed.split('"').nth(1).unwrap();
    assert_eq!(ledger, "/var/lib/indexq/ledger.db", "in the StateDirectory");
    assert!(sed
        .trim_end()
        .ends_with(&format!(" {}", env["INDEXQ_CONFIG"].replace(&stage.root.display().to_string(), ""))));
    let written = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("ledger = \"{}\"\n{written}", stage.moved(ledger))).unwrap();
    assert!(!env.contains_key("INDEXQ_LEDGER"), "the config's `ledger` is the service's, not the unit's");
    assert_eq!(service_values(&entries, "User"), ["indexq"], "the packaged system user, not DynamicUser");
    assert!(service_values(&entries, "DynamicUser").is_empty());

    let done = stage.run(&program, &argv, &env).code(0);
    assert_eq!(done.stdout, "", "-q: nothing needs a human, so nothing is said");
    stage.assert_sent("examples/systemd/indexq.service", &done);
    assert!(stage.at("/var/lib/indexq/ledger.db").is_file(), "the ledger is in the StateDirectory");

    // The next hour: the sitemap is asked for with its validator, and nothing goes again.
    stage.run(&program, &argv, &env).code(0);
    assert_eq!(stage.sitemap_gets(), [None, Some("\"v3\"".to_string())]);
    assert_eq!(stage.sb.received_urls().len(), 3);

    // What the service sees, as the README and the unit show it: `doctor` and
    // `status` with the unit's environment file, as the service's user (the
    // `sudo -u indexq` the test cannot do), from an empty environment.
    let readme = read("README.md");
    for command in ["doctor", "status"] {
        let line = readme
            .lines()
            .find(|l| l.starts_with("sudo -u indexq indexq --env-file") && words(l).last().unwrap() == command)
            .unwrap_or_else(|| panic!("the README shows the check command for `{command}`"));
        assert!(text.contains(&format!("#   {line}")), "the unit shows it too: {line}");
        let argv: Vec<String> = words(line)[3..].iter().map(|w| stage.moved(w)).collect();
        let done = stage.run(&program, &argv[1..], &BTreeMap::new());
        assert_eq!(done.code, 0, "`{line}`:\n{}\n{}", done.stdout, done.stderr);
        if command == "doctor" {
            assert!(done.stdout.contains(&stage.moved(ledger)), "`{line}` uses the service's ledger:\n{}", done.stdout);
        } else {
            assert!(done.stdout.contains("3 accepted"), "`{line}` sees what the service sent:\n{}", done.stdout);
        }
    }
    let left: Vec<_> = std::fs::read_dir(&stage.cwd).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "no stray ledger: {left:?}");
}

/// The gated systemd check: `systemd-analyze verify` on copies of the units
/// whose `ExecStart` runs the binary, with no warning at all.
fn systemd_analyze_verify(analyze: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let service = read("examples/systemd/indexq.service");
    let exec = unit_entries(&service, false)
        .into_iter()
        .find(|(s, k, _)| s == "Service" && k == "ExecStart")
        .map(|(_, _, v)| words(&v).remove(0))
        .unwrap();
    let service =
        service.replace(&format!("ExecStart={exec} "), &format!("ExecStart={} ", env!("CARGO_BIN_EXE_indexq")));
    std::fs::write(dir.path().join("indexq.service"), service).unwrap();
    std::fs::write(dir.path().join("indexq.timer"), read("examples/systemd/indexq.timer")).unwrap();
    let serve = read("examples/systemd/indexq-serve.service")
        .replace("ExecStart=/usr/local/bin/indexq ", &format!("ExecStart={} ", env!("CARGO_BIN_EXE_indexq")));
    std::fs::write(dir.path().join("indexq-serve.service"), serve).unwrap();
    // --man=no: the man page is installed by the package, not here.
    let out = Command::new(analyze)
        .args(["verify", "--man=no", "indexq.service", "indexq.timer", "indexq-serve.service"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "systemd-analyze verify ({}):\n{said}", out.status);
}

/// `systemd-analyze` on the PATH, if installed.
fn systemd_analyze() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("systemd-analyze"))
        .find(|p| p.is_file())
}

#[test]
fn the_systemd_units_are_well_formed_and_systemd_analyze_accepts_them() {
    for unit in ["indexq.service", "indexq.timer", "indexq-serve.service"] {
        let text = read(&format!("examples/systemd/{unit}"));
        let entries = unit_entries(&text, true);
        for (section, key, value) in &entries {
            let known = UNIT_KEYS.iter().find(|(s, _)| s == section);
            let (_, keys) = known.unwrap_or_else(|| panic!("{unit}: the section [{section}] is not one of a unit's"));
            assert!(keys.contains(&key.as_str()), "{unit}: `{key}` is not a [{section}] setting these units use");
            assert!(!value.is_empty() || key == "Environment", "{unit}: `{key}=` is empty");
        }
        let single: Vec<_> =
            entries.iter().filter(|(_, k, _)| !["Environment", "LoadCredential"].contains(&k.as_str())).collect();
        for (i, (s, k, _)) in single.iter().enumerate() {
            assert!(!single[..i].iter().any(|(s2, k2, _)| s2 == s && k2 == k), "{unit}: [{s}] {k} is set twice");
        }
    }
    let service = unit_entries(&read("examples/systemd/indexq.service"), false);
    assert_eq!(service_values(&service, "Type"), ["oneshot"]);
    // A stop mid-run (SIGTERM) is a clean stop by design: exit 143 is not a failure.
    assert_eq!(service_values(&service, "SuccessExitStatus"), ["143"]);
    let serve = unit_entries(&read("examples/systemd/indexq-serve.service"), false);
    assert_eq!(service_values(&serve, "Type"), ["exec"]);
    assert_eq!(service_values(&serve, "ExecStart"), ["/usr/local/bin/indexq serve"]);
    let timer = unit_entries(&read("examples/systemd/indexq.timer"), false);
    assert!(timer.iter().any(|(s, k, v)| s == "Install" && k == "WantedBy" && v == "timers.target"), "{timer:?}");

    match systemd_analyze() {
        Some(analyze) => systemd_analyze_verify(&analyze),
        None => eprintln!(
            "NOTE: systemd-analyze is not installed here: `systemd-analyze verify` did NOT run on \
             examples/systemd; only the units' syntax was checked above. The gated test \
             `recipes::systemd_analyze_verify_accepts_the_units` needs it (.ci/run installs Debian's systemd)."
        ),
    }
}

#[test]
#[ignore = "needs systemd-analyze (Debian's systemd package; .ci/run installs it)"]
fn systemd_analyze_verify_accepts_the_units() {
    let analyze = systemd_analyze().expect("systemd-analyze is not installed: install Debian's systemd package");
    systemd_analyze_verify(&analyze);
}

// ---------------------------------------------------------------------------
// cron

/// A crontab's variables and its jobs' commands.
fn crontab(text: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = BTreeMap::new();
    let mut jobs = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let name = line.split('=').next().unwrap().trim();
        if line.contains('=') && !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            let value = line[line.find('=').unwrap() + 1..].trim();
            assert!(!value.contains('$'), "cron does not expand variables: {line}");
            env.insert(name.to_string(), value.trim_matches('"').to_string());
            continue;
        }
        // Five time fields, then the command (which /bin/sh runs).
        let mut rest = line;
        for _ in 0..5 {
            rest = rest.trim_start();
            rest = &rest[rest.find(char::is_whitespace).unwrap_or_else(|| panic!("not a job: {line}"))..];
        }
        let command = rest.trim();
        assert!(!command.contains('%'), "`%` is a newline to cron: {line}");
        jobs.push(command.to_string());
    }
    (env, jobs)
}

/// Runs a crontab's jobs as cron does — `/bin/sh -c COMMAND` with the
/// crontab's variables — with the binary where the README's install puts it
/// (`/usr/local/bin`); the first job must send the sitemap.
fn run_crontab(what: &str, text: &str) {
    let stage = Stage::new();
    let (env, jobs) = crontab(text);
    let env: BTreeMap<String, String> = with_key(env).into_iter().map(|(k, v)| (k, stage.moved(&v))).collect();
    assert!(env.contains_key("PATH"), "{what}: cron's PATH has no /usr/local/bin: the crontab sets one");
    stage.install("/usr/local/bin/indexq");
    assert!(!jobs.is_empty() && jobs[0].contains("-q submit"), "{what}: the hourly job first: {jobs:?}");
    // Each job's words with their paths moved, for /bin/sh -c.
    let jobs: Vec<Vec<String>> = jobs.iter().map(|j| words(j).iter().map(|w| stage.moved(w)).collect()).collect();
    assert_eq!(submit_inputs(&jobs[0]), Vec::<String>::new(), "{what}: no input: the sources");
    stage.init(&config_of(&jobs[0], &env));
    for (n, job) in jobs.iter().enumerate() {
        let line = job.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(" ");
        let done = stage.run(Path::new("/bin/sh"), &["-c".to_string(), line], &env).code(0);
        if n == 0 {
            assert_eq!(done.stdout, "", "{what}: -q: nothing needs a human, so cron mails nothing");
            stage.assert_sent(what, &done);
        }
    }
}

#[test]
fn the_cron_file_sends_the_sitemap_from_cron_s_environment() {
    run_crontab("examples/cron", &read("examples/cron"));
}

/// The fenced block of `lang` under the README's heading `heading`.
fn readme_block(heading: &str, lang: &str) -> String {
    let readme = read("README.md");
    let section = readme.split(&format!("\n{heading}\n")).nth(1).unwrap_or_else(|| panic!("no `{heading}` in README"));
    let block =
        section.split(&format!("```{lang}\n")).nth(1).unwrap_or_else(|| panic!("no {lang} block under {heading}"));
    block.split("```").next().unwrap().to_string()
}

#[test]
fn the_readme_crontab_sends_the_sitemap() {
    let block = readme_block("### Cron", "cron");
    run_crontab("the README's crontab", &block);
}

// ---------------------------------------------------------------------------
// The container

/// The final stage of the Dockerfile: its `ENV`, `ENTRYPOINT` and `CMD`.
struct Image {
    env: BTreeMap<String, String>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    workdir: Option<String>,
}

fn image(dockerfile: &str) -> Image {
    let joined = dockerfile.replace("\\\n", " ");
    let last_stage = joined.rsplit("\nFROM ").next().unwrap();
    let mut image = Image { env: BTreeMap::new(), entrypoint: Vec::new(), cmd: Vec::new(), workdir: None };
    for line in last_stage.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let (instruction, rest) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        match instruction {
            "ENV" => {
                for assignment in words(rest) {
                    let (k, v) = assignment.split_once('=').unwrap_or_else(|| panic!("ENV KEY=value: {line}"));
                    image.env.insert(k.to_string(), v.to_string());
                }
            }
            "ENTRYPOINT" => image.entrypoint = serde_json::from_str(rest).expect("ENTRYPOINT in exec form"),
            "CMD" => image.cmd = serde_json::from_str(rest).expect("CMD in exec form"),
            "WORKDIR" => image.workdir = Some(rest.trim().to_string()),
            _ => {}
        }
    }
    image
}

/// Every `docker run …` line in `text` (comment marks and line continuations
/// taken away), as words after `docker run`.
fn docker_runs(text: &str) -> Vec<Vec<String>> {
    let uncommented: String =
        text.lines().map(|l| l.trim_start().trim_start_matches('#')).collect::<Vec<_>>().join("\n");
    uncommented.replace("\\\n", " ").lines().filter_map(|l| l.trim().strip_prefix("docker run ")).map(words).collect()
}

/// Runs one `docker run` line as the container would: the entrypoint with
/// the line's arguments (else `CMD`), the image's `ENV` and the line's `-e`,
/// its volumes in the root. Returns what it printed, and whether it was the
/// hourly `submit`.
fn run_container(stage: &Stage, image: &Image, run: &[String]) -> (Done, bool) {
    let mut env: BTreeMap<String, String> = image.env.iter().map(|(k, v)| (k.clone(), stage.moved(v))).collect();
    let mut args = run.iter();
    let mut config_mounted = false;
    loop {
        let arg = args.next().unwrap_or_else(|| panic!("no image in `docker run {}`", run.join(" ")));
        match arg.as_str() {
            "--rm" | "--read-only" | "-i" | "-t" | "-it" => {}
            "-e" | "--env" => {
                let var = args.next().unwrap();
                match var.split_once('=') {
                    Some((k, v)) => env.insert(k.to_string(), v.to_string()),
                    // From the host's environment: the user exported the key.
                    None => env.insert(var.clone(), if var == "INDEXNOW_KEY" { KEY.into() } else { String::new() }),
                };
            }
            "-v" | "--volume" => {
                let spec = args.next().unwrap();
                let parts: Vec<&str> = spec.split(':').collect();
                let (source, target) = (parts[0], parts[1]);
                if source.starts_with('/') || source.starts_with("$PWD") {
                    // A file of the host: the configuration, made in place by `init` below.
                    assert_eq!(Some(target), image.env.get("INDEXQ_CONFIG").map(String::as_str), "{spec}");
                    config_mounted = true;
                } else {
                    std::fs::create_dir_all(stage.at(target)).unwrap();
                }
            }
            "--tmpfs" => {
                args.next();
            }
            option if option.starts_with('-') => panic!("an option the test does not know: {option}"),
            image_name => {
                assert_eq!(image_name, "indexq", "the image `docker build -t indexq .` makes");
                break;
            }
        }
    }
    let rest: Vec<String> = args.cloned().collect();
    let argv: Vec<String> =
        image.entrypoint[1..].iter().cloned().chain(if rest.is_empty() { image.cmd.clone() } else { rest }).collect();
    let program = stage.install(&image.entrypoint[0]);
    let submit = argv.iter().any(|a| a == "submit");
    if submit {
        assert!(config_mounted, "the configuration is mounted: {}", run.join(" "));
        assert_eq!(submit_inputs(&argv), Vec::<String>::new(), "no input: the sources");
        stage.init(&config_of(&argv, &env));
    }
    (stage.run(&program, &argv, &env), submit)
}

fn check_container(what: &str, runs: &[Vec<String>]) {
    let image = image(&read("Dockerfile"));
    assert_eq!(image.entrypoint[0], "/usr/bin/indexq", "{:?}", image.entrypoint);
    assert_eq!(image.workdir, None, "the image runs in /, not the configuration's folder");
    assert!(runs.iter().any(|r| r.iter().any(|w| w == "submit")), "{what} documents the hourly submit: {runs:?}");
    for run in runs {
        let stage = Stage::new();
        let (done, submit) = run_container(&stage, &image, run);
        let done = done.code(0);
        if submit {
            stage.assert_sent(&format!("{what}: docker run {}", run.join(" ")), &done);
        }
    }
    // The image's default command (CMD): the help.
    let stage = Stage::new();
    let (done, _) = run_container(&stage, &image, &["--rm".to_string(), "indexq".to_string()]);
    assert!(done.code(0).stdout.contains("Usage: indexq"));
}

#[test]
fn the_dockerfile_s_documented_commands_run_as_the_image_would_run_them() {
    check_container("the Dockerfile", &docker_runs(&read("Dockerfile")));
}

#[test]
fn the_readme_s_container_command_runs_as_the_image_would_run_it() {
    let block = readme_block("### Container", "sh");
    check_container("the README", &docker_runs(&block));
}

// ---------------------------------------------------------------------------
// CI: a YAML reader for the recipes' subset (block maps and lists, plain and
// quoted scalars, `|` blocks, comments).

#[derive(Debug, Clone)]
enum Yaml {
    Scalar(String),
    List(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn at(&self, key: &str) -> &Yaml {
        self.get(key).unwrap_or_else(|| panic!("no `{key}` in {self:?}"))
    }

    fn str(&self) -> &str {
        match self {
            Yaml::Scalar(s) => s,
            other => panic!("not a scalar: {other:?}"),
        }
    }

    fn items(&self) -> &[Yaml] {
        match self {
            Yaml::List(items) => items,
            other => panic!("not a list: {other:?}"),
        }
    }

    fn entries(&self) -> &[(String, Yaml)] {
        match self {
            Yaml::Map(entries) => entries,
            other => panic!("not a map: {other:?}"),
        }
    }
}

struct YamlReader {
    lines: Vec<String>,
    at: usize,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// A line's text without its comment (a `#` after a blank, outside quotes).
fn uncomment(text: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (i, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            // A quote opens a scalar only after a blank (not in `action's`).
            None if (c == '"' || c == '\'') && previous.is_whitespace() => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return text[..i].trim_end(),
            None => {}
        }
        previous = c;
    }
    text.trim_end()
}

fn unquote(text: &str) -> String {
    let t = text.trim();
    if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        t[1..t.len() - 1].replace("\\\"", "\"").replace("\\\\", "\\")
    } else if t.len() >= 2 && t.starts_with('\'') && t.ends_with('\'') {
        t[1..t.len() - 1].replace("''", "'")
    } else {
        t.to_string()
    }
}

/// `key: rest` when the line is a map entry.
fn map_entry(text: &str) -> Option<(String, &str)> {
    let (key, rest) = match text.split_once(": ") {
        Some((k, r)) => (k, r),
        None => (text.strip_suffix(':')?, ""),
    };
    let plain = key.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    (plain && !key.is_empty()).then(|| (key.to_string(), rest))
}

impl YamlReader {
    fn parse(text: &str) -> Yaml {
        let mut reader = YamlReader { lines: text.lines().map(String::from).collect(), at: 0 };
        reader.block(0)
    }

    fn skip_blank(&mut self) {
        while self.at < self.lines.len() {
            let t = self.lines[self.at].trim();
            if !t.is_empty() && !t.starts_with('#') && t != "---" {
                break;
            }
            self.at += 1;
        }
    }

    /// The next meaningful line, if it is at `indent` or deeper: (its indent, its text).
    fn peek(&mut self, indent: usize) -> Option<(usize, String)> {
        self.skip_blank();
        let line = self.lines.get(self.at)?;
        let i = indent_of(line);
        (i >= indent).then(|| (i, uncomment(line.trim_start()).to_string()))
    }

    fn block(&mut self, indent: usize) -> Yaml {
        match self.peek(indent) {
            None => Yaml::Scalar(String::new()),
            Some((i, text)) if text == "-" || text.starts_with("- ") => self.list(i),
            Some((i, _)) => self.map(i),
        }
    }

    fn map(&mut self, indent: usize) -> Yaml {
        let mut entries = Vec::new();
        while let Some((i, text)) = self.peek(indent) {
            if i != indent || text.starts_with("- ") {
                assert!(i <= indent || text.starts_with("- "), "unexpected indentation: {}", self.lines[self.at]);
                break;
            }
            let (key, rest) = map_entry(&text).unwrap_or_else(|| panic!("not `key: value`: {text}"));
            let rest = rest.trim().to_string();
            self.at += 1;
            let value = self.value(indent, &rest);
            entries.push((key, value));
        }
        Yaml::Map(entries)
    }

    fn value(&mut self, indent: usize, rest: &str) -> Yaml {
        if rest.is_empty() {
            return match self.peek(indent) {
                Some((i, _)) if i > indent => self.block(i),
                // A list may sit at its key's own indentation.
                Some((i, text)) if i == indent && text.starts_with("- ") => self.list(i),
                _ => Yaml::Scalar(String::new()),
            };
        }
        if rest.starts_with('|') || rest.starts_with('>') {
            let mut lines = Vec::new();
            while self.at < self.lines.len() {
                let line = &self.lines[self.at];
                if !line.trim().is_empty() && indent_of(line) <= indent {
                    break;
                }
                lines.push(line.clone());
                self.at += 1;
            }
            let margin = lines.iter().filter(|l| !l.trim().is_empty()).map(|l| indent_of(l)).min().unwrap_or(0);
            let text: Vec<&str> = lines.iter().map(|l| if l.len() >= margin { &l[margin..] } else { "" }).collect();
            let joined = if rest.starts_with('|') { text.join("\n") } else { text.join(" ") };
            return Yaml::Scalar(joined.trim_end().to_string() + "\n");
        }
        Yaml::Scalar(unquote(rest))
    }

    fn list(&mut self, indent: usize) -> Yaml {
        let mut items = Vec::new();
        while let Some((i, text)) = self.peek(indent) {
            if i != indent || !(text == "-" || text.starts_with("- ")) {
                break;
            }
            let item = text[1..].trim_start().to_string();
            if map_entry(&item).is_some() {
                // `- key: value`: a map whose keys are where `key` is.
                let line = &mut self.lines[self.at];
                let dash = line.find('-').unwrap();
                line.replace_range(dash..=dash, " ");
                let column = indent_of(line);
                items.push(self.map(column));
            } else {
                self.at += 1;
                items.push(if item.is_empty() { self.block(indent + 1) } else { Yaml::Scalar(unquote(&item)) });
            }
        }
        Yaml::List(items)
    }
}

#[test]
fn the_yaml_reader_reads_the_recipes_subset() {
    let doc = YamlReader::parse(
        "a:\n  b: \"x # y\"   # a comment\n  list:\n    - one\n    - k: v\n      k2: 'w'\n  run: |\n    echo 1\n    echo 2\nc: [x]\nd:\n- e\n",
    );
    assert_eq!(doc.at("a").at("b").str(), "x # y");
    let list = doc.at("a").at("list").items();
    assert_eq!(list[0].str(), "one");
    assert_eq!((list[1].at("k").str(), list[1].at("k2").str()), ("v", "w"));
    assert_eq!(doc.at("a").at("run").str(), "echo 1\necho 2\n");
    assert_eq!(doc.at("c").str(), "[x]");
    assert_eq!(doc.at("d").items()[0].str(), "e");
}

/// `${{ … }}` in a workflow value: the test's key for the IndexNow secret,
/// nothing for the other secrets (not set), an input's value.
fn expressions(text: &str, inputs: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed expression") + start;
        let expression = rest[start + 3..end].trim();
        let value = match expression.split_once('.') {
            Some(("secrets", "INDEXNOW_KEY")) => KEY.to_string(),
            Some(("secrets", _)) => String::new(),
            Some(("inputs", name)) => inputs.get(name).cloned().unwrap_or_else(|| panic!("no input `{name}`")),
            _ => panic!("an expression the test does not evaluate: {expression}"),
        };
        out.push_str(&value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// A release of the action's binary, served as `install.sh` downloads one: an
/// archive whose `indexq` runs the binary under test, and its SHA256SUMS.
fn release(dir: &Path) -> MockServer {
    use std::os::unix::fs::PermissionsExt;
    const ARCHIVE: &str = "indexq-x86_64-unknown-linux-musl.tar.gz";
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    let exe = stage.join("indexq");
    std::fs::write(&exe, format!("#!/bin/sh\nexec '{}' \"$@\"\n", env!("CARGO_BIN_EXE_indexq"))).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let archive = dir.join(ARCHIVE);
    let tar = Command::new("tar").arg("-czf").arg(&archive).arg("-C").arg(&stage).arg("indexq").status();
    assert!(tar.unwrap().success(), "tar");
    let bytes = std::fs::read(&archive).unwrap();
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    let server = MockServer::start();
    server.on("GET", &format!("/release/{ARCHIVE}"), vec![MockResponse::status(200).bytes(&bytes)]);
    server.on("GET", "/release/SHA256SUMS", vec![MockResponse::status(200).body(&format!("{digest}  {ARCHIVE}\n"))]);
    server
}

/// `KEY=VALUE` lines a runner file (`GITHUB_ENV`) holds.
fn runner_env(text: &str) -> BTreeMap<String, String> {
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn the_github_workflow_sends_the_sitemap_through_the_action() {
    let stage = Stage::new();
    let workflow = YamlReader::parse(&read("examples/github-actions.yml"));
    let action = YamlReader::parse(&read("action.yml"));
    let steps = workflow.at("jobs").at("indexq").at("steps").items();
    let at = steps
        .iter()
        .position(|s| s.get("uses").is_some_and(|u| u.str().starts_with("OWNER/indexq@")))
        .expect("the workflow's indexq job uses the action");

    // The inputs: the action's defaults, the step's `with:`, and (what a
    // user sets for a mirror) the fake release's address.
    let mut inputs: BTreeMap<String, String> = action
        .at("inputs")
        .entries()
        .iter()
        .map(|(name, input)| (name.clone(), input.get("default").map_or("", Yaml::str).to_string()))
        .collect();
    for (name, value) in steps[at].at("with").entries() {
        assert!(inputs.contains_key(name), "`{name}` is not an input of action.yml");
        inputs.insert(name.clone(), expressions(value.str(), &BTreeMap::new()));
    }
    assert_eq!(inputs["sitemap"], "", "no sitemap given: the configuration's sources");
    assert_eq!(inputs["urls"], "", "no URL list given: the configuration's sources");
    let server = release(stage.sb.dir.path());
    inputs.insert("release-url".into(), format!("{}/release", server.url()));

    // The runner: its workspace (the checkout, holding indexq.toml), its files.
    let workspace = stage.at("/home/runner/work/site/site");
    let temp = stage.at("/home/runner/work/_temp");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&temp).unwrap();
    let files = |name: &str| temp.join(name);
    for name in ["path", "env", "output"] {
        std::fs::write(files(name), "").unwrap();
    }
    let runner: BTreeMap<String, String> = [
        ("HOME", stage.at("/home/runner")),
        ("GITHUB_ACTION_PATH", repo()),
        ("GITHUB_WORKSPACE", workspace.clone()),
        ("RUNNER_TEMP", temp.clone()),
        ("GITHUB_PATH", files("path")),
        ("GITHUB_ENV", files("env")),
        ("GITHUB_OUTPUT", files("output")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.display().to_string()))
    .chain([("RUNNER_OS", "Linux"), ("RUNNER_ARCH", "X64")].map(|(k, v)| (k.to_string(), v.to_string())))
    .collect();
    // The runner's tools (curl, tar, sha256sum, …); no indexq among them.
    let system_path = "/usr/bin:/bin".to_string();
    stage.init(&workspace.join(&inputs["config"]));

    // The action's steps that run scripts, in order (the cache steps are
    // actions of their own; the last fails the job when the exit code is not 0).
    let bash = Path::new("/bin/bash");
    for step in action.at("runs").at("steps").items() {
        let Some(run) = step.get("run") else { continue };
        if let Some(condition) = step.get("if").map(Yaml::str) {
            if condition.contains("exit-code != '0'") {
                continue;
            }
            // The serve mode's condition: this workflow submits here.
            assert_eq!(condition, "inputs.serve-url == ''", "a condition the test does not read: {step:?}");
            if !inputs["serve-url"].is_empty() {
                continue;
            }
        }
        let mut env = runner.clone();
        env.extend(runner_env(&std::fs::read_to_string(files("env")).unwrap()));
        let path: Vec<String> = std::fs::read_to_string(files("path")).unwrap().lines().map(String::from).collect();
        env.insert("PATH".into(), path.into_iter().chain([system_path.clone()]).collect::<Vec<_>>().join(":"));
        for (k, v) in step.get("env").map_or(&[][..], Yaml::entries) {
            env.insert(k.clone(), expressions(v.str(), &inputs));
        }
        stage.run(bash, &["-c".to_string(), run.str().to_string()], &env).code(0);
    }
    let output = std::fs::read_to_string(files("output")).unwrap();
    assert!(output.contains("exit-code=0\n"), "indexq submit exited 0 (the last step would not fail): {output}");
    let done = Done { code: 0, stdout: String::new(), stderr: String::new() };
    stage.assert_sent("examples/github-actions.yml", &done);

    // The workflow's later steps find indexq on the PATH, configured.
    let mut env = runner.clone();
    env.extend(runner_env(&std::fs::read_to_string(files("env")).unwrap()));
    let path = std::fs::read_to_string(files("path")).unwrap();
    env.insert("PATH".into(), format!("{}:{system_path}", path.trim()));
    for step in &steps[at + 1..] {
        let run = step.at("run").str();
        let done = stage.run(bash, &["-e".to_string(), "-c".to_string(), run.to_string()], &env).code(0);
        assert!(done.stdout.contains("IndexNow"), "`{run}`:\n{}", done.stdout);
    }
}

#[test]
fn the_gitlab_job_sends_the_sitemap() {
    let stage = Stage::new();
    let ci = YamlReader::parse(&read("examples/gitlab-ci.yml"));
    let job = ci.at("indexq");
    // GitLab's own variable, which the job's variables build on.
    let project = stage.at("/builds/you/site").display().to_string();
    let mut env = BTreeMap::from([("CI_PROJECT_DIR".to_string(), project.clone())]);
    for (name, value) in job.at("variables").entries() {
        let value = value.str().replace("${CI_PROJECT_DIR}", &project).replace("$CI_PROJECT_DIR", &project);
        assert!(!value.contains('$'), "a variable the test does not expand: {name}: {value}");
        env.insert(name.clone(), value);
    }
    // A CI/CD variable of the project (the comment says which).
    env.insert("INDEXNOW_KEY".into(), KEY.into());
    // The before_script puts the release binary in /usr/local/bin, on the image's PATH.
    let install = job.at("before_script").items().iter().map(Yaml::str).find(|l| l.starts_with("tar "));
    assert!(install.is_some_and(|l| l.ends_with("-C /usr/local/bin indexq")), "{install:?}");
    stage.install("/usr/local/bin/indexq");
    env.insert("PATH".into(), stage.moved("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    let script: Vec<&str> = job.at("script").items().iter().map(Yaml::str).collect();
    let line = script.iter().find(|l| l.starts_with("indexq ")).expect("the job runs indexq");
    assert_eq!(submit_inputs(&words(line)), Vec::<String>::new(), "no input: the sources: {line}");
    stage.init(&config_of(&words(line), &env));
    let done = stage.run(Path::new("/bin/sh"), &["-c".to_string(), line.to_string()], &env).code(0);
    stage.assert_sent("examples/gitlab-ci.yml", &done);
    assert!(Path::new(&env["INDEXQ_LEDGER"]).is_file(), "the ledger is in the cached directory");
}
