//! The GitHub Action's scripts (`.github/action/*.sh`), run with bash as
//! the runner would run them: `install.sh` against a fake release served on
//! 127.0.0.1 (the real binary in an archive, and its SHA256SUMS), `submit.sh`
//! with the real binary against the mock engine. The workflow-level parts
//! are read from `action.yml` parsed as YAML: the ledger is restored before
//! the submission and saved after it, under the same key, by a step whose
//! condition runs it when the submission failed or the job was cancelled.
//! `.ci/lint-workflows` checks the file against GitHub's schema, and
//! `operator::the_action_says_what_the_issue_asks` its inputs and scripts.

use crate::support::mock::{MockResponse, MockServer};
use crate::support::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use yaml_rust2::{Yaml, YamlLoader};

const NOW: &str = "2026-12-03T09:00:00Z";
const ARCHIVE: &str = "indexq-x86_64-unknown-linux-musl.tar.gz";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The runner's files and directories for one step, under `root`.
struct Runner {
    root: PathBuf,
}

impl Runner {
    fn new(root: &Path) -> Runner {
        for dir in ["temp", "workspace"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        for file in ["path", "env", "output"] {
            std::fs::write(root.join(file), "").unwrap();
        }
        Runner { root: root.to_path_buf() }
    }

    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(name)).unwrap()
    }

    /// `bash .github/action/SCRIPT` with a runner's environment and nothing else.
    fn step(&self, script: &str) -> Command {
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join(".github/action").join(script))
            .current_dir(self.root.join("workspace"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.root)
            .env("GITHUB_ACTION_PATH", repo())
            .env("GITHUB_WORKSPACE", self.root.join("workspace"))
            .env("RUNNER_TEMP", self.root.join("temp"))
            .env("RUNNER_OS", "Linux")
            .env("RUNNER_ARCH", "X64")
            .env("GITHUB_PATH", self.root.join("path"))
            .env("GITHUB_ENV", self.root.join("env"))
            .env("GITHUB_OUTPUT", self.root.join("output"))
            .stdin(Stdio::null());
        seal_network(&mut cmd);
        cmd
    }
}

fn run(mut cmd: Command) -> Done {
    Done::from(cmd.output().unwrap())
}

/// A release as the release workflow makes it: the archive (the binary at its
/// root, beside the README) and SHA256SUMS, served under /v0.1.0/. The binary
/// is the real one, or (where only the checks before it matter) a script
/// that answers `--version` — the debug binary is large to compress.
fn release(dir: &Path, real: bool, sums: impl FnOnce(&str) -> String) -> MockServer {
    use std::os::unix::fs::PermissionsExt;
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    let exe = stage.join("indexq");
    if real {
        std::fs::copy(env!("CARGO_BIN_EXE_indexq"), &exe).unwrap();
    } else {
        std::fs::write(&exe, "#!/bin/sh\necho 'indexq (stand-in)'\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::copy(repo().join("README.md"), stage.join("README.md")).unwrap();
    let archive = dir.join(ARCHIVE);
    let tar = Command::new("tar")
        .args(["--use-compress-program", "gzip -1", "-cf"])
        .arg(&archive)
        .arg("-C")
        .arg(&stage)
        .args(["indexq", "README.md"])
        .status();
    assert!(tar.unwrap().success(), "tar");
    let bytes = std::fs::read(&archive).unwrap();
    let digest: String = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    let server = MockServer::start();
    server.on("GET", &format!("/v0.1.0/{ARCHIVE}"), vec![MockResponse::status(200).bytes(&bytes)]);
    server.on("GET", "/v0.1.0/SHA256SUMS", vec![MockResponse::status(200).body(&sums(&digest))]);
    server
}

#[test]
fn install_downloads_the_release_binary_checks_it_and_sets_up_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let server = release(dir.path(), true, |digest| format!("0000  other.tar.gz\n{digest}  {ARCHIVE}\n"));
    let runner = Runner::new(&dir.path().join("runner"));
    let mut step = runner.step("install.sh");
    step.env("INDEXQ_RELEASE_URL", format!("{}/v0.1.0", server.url()))
        .env("INDEXQ_LEDGER_DIR", ".indexq")
        .env("INDEXQ_CONFIG_INPUT", "site/indexq.toml");
    let done = run(step).code(0);
    assert!(done.stdout.contains("as listed in SHA256SUMS"), "{}", done.stdout);
    assert!(done.stdout.contains(&format!("indexq {}", env!("CARGO_PKG_VERSION"))), "ran --version:\n{}", done.stdout);

    // indexq is on PATH for the next steps, the ledger and config are set.
    let bin = PathBuf::from(runner.file("path").trim());
    assert_eq!(bin, runner.root.join("temp/indexq/bin"));
    assert!(bin.join("indexq").is_file());
    assert!(!bin.join("README.md").exists(), "only the binary is installed");
    let workspace = runner.root.join("workspace");
    let env = runner.file("env");
    assert!(env.contains(&format!("INDEXQ_LEDGER={}/.indexq/ledger.db\n", workspace.display())), "{env}");
    assert!(env.contains(&format!("INDEXQ_CONFIG={}/site/indexq.toml\n", workspace.display())), "{env}");
    assert!(workspace.join(".indexq").is_dir(), "the cached directory exists for the cache actions");
    assert!(runner.file("output").contains("ledger="), "{}", runner.file("output"));
}

#[test]
fn install_refuses_an_archive_that_is_not_the_one_listed() {
    for (case, sums) in [
        ("another checksum", format!("{}  {ARCHIVE}\n", "ab".repeat(32))),
        ("no line for the archive", format!("{}  indexq-x86_64-apple-darwin.tar.gz\n", "ab".repeat(32))),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = release(dir.path(), false, |_| sums.clone());
        let runner = Runner::new(&dir.path().join("runner"));
        let mut step = runner.step("install.sh");
        step.env("INDEXQ_RELEASE_URL", format!("{}/v0.1.0", server.url()));
        let done = run(step).code(1);
        assert!(done.stdout.contains("::error"), "{case}: {}", done.stdout);
        assert!(done.stdout.contains("SHA256SUMS"), "{case}: {}", done.stdout);
        assert!(!runner.root.join("temp/indexq/bin/indexq").exists(), "{case}: nothing installed");
        assert_eq!(runner.file("path"), "", "{case}: PATH unchanged");
    }
}

#[test]
fn install_picks_the_archive_of_the_runner_and_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let server = release(dir.path(), false, |digest| format!("{digest}  {ARCHIVE}\n"));
    let runner = Runner::new(&dir.path().join("runner"));
    // An ARM64 Linux runner asks for the aarch64 archive, which this release lacks.
    let mut step = runner.step("install.sh");
    step.env("INDEXQ_RELEASE_URL", format!("{}/v0.1.0", server.url())).env("RUNNER_ARCH", "ARM64");
    let done = run(step).code(1);
    assert_eq!(server.requests_to("GET", "/v0.1.0/indexq-aarch64-unknown-linux-musl.tar.gz").len(), 1);
    assert!(done.stdout.contains("cannot download"), "{}", done.stdout);

    // A runner no release is built for.
    let mut step = runner.step("install.sh");
    step.env("RUNNER_OS", "Linux").env("RUNNER_ARCH", "ARM");
    let done = run(step).code(1);
    assert!(done.stdout.contains("from-source"), "{}", done.stdout);

    // Without release-url, the release of package.repository; a placeholder is no address.
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    if manifest.contains("\nrepository = \"https://github.com/OWNER/") {
        let done = run(runner.step("install.sh")).code(1);
        assert!(done.stdout.contains("package.repository"), "{}", done.stdout);
        assert!(server.requests().len() == 1, "nothing more was fetched");
    }
}

#[test]
fn submit_runs_indexq_with_the_inputs_and_records_its_exit_code() {
    let sb = Sandbox::new();
    let sitemap = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n\
         <url><loc>{}</loc><lastmod>2026-11-01</lastmod></url>\n<url><loc>{}</loc></url>\n</urlset>\n",
        sb.url("/a"),
        sb.url("/b")
    );
    sb.file("sitemap.xml", &sitemap);
    sb.write_config();
    let runner = Runner::new(&sb.dir.path().join("runner"));
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_indexq")).parent().unwrap().to_path_buf();
    let step = |fail_on: &str, key: &str| {
        let mut cmd = runner.step("submit.sh");
        let path = std::env::join_paths(
            std::iter::once(bin_dir.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
        )
        .unwrap();
        cmd.current_dir(sb.dir.path())
            .env("PATH", path)
            .env("TZ", "UTC")
            .env("INDEXQ_NOW", NOW)
            .env("INDEXQ_CONFIG", sb.config_path())
            .env("INDEXQ_LEDGER", sb.ledger())
            .env("INDEXQ_SITEMAP", "  sitemap.xml\n\n")
            .env("INDEXQ_CHANGED", "true")
            .env("INDEXQ_MAX_WAIT", "0")
            .env("INDEXQ_FAIL_ON", fail_on)
            .env("INDEXQ_ARGS", "--engine indexnow")
            .env("INDEXQ_IN_INDEXNOW_KEY", key);
        cmd
    };
    std::fs::write(runner.root.join("output"), "").unwrap();
    let done = run(step("misconfigured", KEY)).code(0);
    assert!(
        done.stdout.contains(
            "indexq submit --sitemap sitemap.xml --changed --max-wait 0 --fail-on misconfigured --engine indexnow"
        ),
        "prints the command line:\n{}",
        done.stdout
    );
    assert_eq!(runner.file("output"), "exit-code=0\n");
    let mut received = sb.received_urls();
    received.sort();
    assert_eq!(received, vec![sb.url("/a"), sb.url("/b")]);

    // Unchanged since: nothing more goes (--changed), still exit 0.
    std::fs::write(runner.root.join("output"), "").unwrap();
    run(step("misconfigured", KEY)).code(0);
    assert_eq!(sb.received_urls().len(), 2);

    // indexq fails (no key given, none in the job's environment): the step
    // still succeeds, so that the ledger is saved; the code is the output.
    std::fs::write(runner.root.join("output"), "").unwrap();
    let done = run(step("", "")).code(0);
    assert!(done.stdout.contains("indexq submit --sitemap sitemap.xml --changed --max-wait 0 --engine indexnow"));
    assert!(done.stderr.contains("INDEXNOW_KEY"), "indexq says which key is missing:\n{}", done.stderr);
    let output = runner.file("output");
    assert!(output == "exit-code=2\n" || output == "exit-code=3\n", "{output}");
}

/// The serve mode: `submit.sh` with `serve-url` and `serve-token` asks a real
/// `indexq serve` (started here, with a `[[serve.token]]`) to read its
/// sources, with curl as the runner has it. The server's ledger sends the
/// sitemap's URLs; nothing is installed or kept on the runner, the token is
/// never printed, and a refused token, a
/// missing one or an input the server does not take fails the step's code.
#[test]
fn the_serve_mode_asks_the_running_server_to_read_its_sources() {
    use crate::serve::{serve_with_tokens, wait_for, with_tokens};
    let mut sb = with_tokens();
    let sitemap = crate::support::sitemap::Sitemap::serve(&sb.site, "/sitemap.xml");
    sitemap.add("/a", Some("2026-12-01"));
    sitemap.add("/b", None);
    sb.property_extra = format!("sources = [\"{}\"]\n", sb.url("/sitemap.xml"));
    sb.extra.push_str("\n[serve]\nsources_every = \"0\"\n");
    sb.write_config();
    let served = serve_with_tokens(&sb, &[]);
    let runner = Runner::new(&sb.dir.path().join("runner"));
    let base = served.base.clone();
    let step = |token: &str, sitemap: &str| {
        std::fs::write(runner.root.join("output"), "").unwrap();
        let mut cmd = runner.step("submit.sh");
        cmd.env("INDEXQ_SERVE_URL", format!("{base}/"))
            .env("INDEXQ_IN_SERVE_TOKEN", token)
            .env("INDEXQ_SITEMAP", sitemap)
            .env("INDEXQ_CHANGED", "true")
            .env("INDEXQ_MAX_WAIT", "5m")
            .env("INDEXQ_FAIL_ON", "misconfigured");
        run(cmd).code(0)
    };

    let done = step(GHOST_TOKEN, "");
    assert_eq!(runner.file("output"), "exit-code=0\n", "{}\n{}", done.stdout, done.stderr);
    assert!(done.stdout.contains(&format!("POST {}/v1/sources\n", served.base)), "{}", done.stdout);
    // (Done checks that the token is nowhere in what the step printed.)
    let said = &done.stdout;
    let answer = said.lines().find(|l| l.starts_with('{')).expect("the server's answer is shown");
    let answer: serde_json::Value = serde_json::from_str(answer).unwrap();
    assert_eq!(answer["engines"]["indexnow"]["new"], 2, "{answer}");
    wait_for(&sb, ENDPOINT_PATH, 1);
    let mut sent = sb.received_urls();
    sent.sort();
    assert_eq!(sent, [sb.url("/a"), sb.url("/b")], "the server's ledger sent the sitemap");
    let left: Vec<_> = std::fs::read_dir(runner.root.join("temp")).unwrap().collect();
    assert!(left.is_empty(), "nothing installed or left on the runner: {left:?}");

    // A token the server does not know: exit code 2 (a human fixes the input).
    let done = step("not-the-token", "");
    assert_eq!(runner.file("output"), "exit-code=2\n", "{}", done.stdout);
    assert!(done.stdout.contains("::error title=indexq::indexq serve answered 401"), "{}", done.stdout);
    // No token, or a sitemap the server would not read: refused before asking.
    let reads = || sb.site.requests_to("GET", "/sitemap.xml").len();
    let asked = reads();
    for (token, sitemap, why) in [("", "", "without serve-token"), (GHOST_TOKEN, "sitemap.xml", "give no sitemap")] {
        let done = step(token, sitemap);
        assert_eq!(runner.file("output"), "exit-code=2\n", "{}", done.stdout);
        assert!(done.stdout.contains(why), "{}", done.stdout);
    }
    assert_eq!(reads(), asked, "the server read nothing more");
    served.stop().code(0);
    // The server is gone: exit code 1, the step itself still succeeds.
    step(GHOST_TOKEN, "");
    assert_eq!(runner.file("output"), "exit-code=1\n");
}

// ---------------------------------------------------------------------------
// action.yml, parsed: the ledger is saved even when the submission fails.

/// How a job stands when a step's `if:` is evaluated: whether a step
/// before failed, whether the run was cancelled, and each earlier step's
/// `outcome` by id.
struct JobState<'a> {
    failed: bool,
    cancelled: bool,
    outcomes: &'a [(&'a str, &'a str)],
    inputs: &'a [(&'a str, &'a str)],
}

/// Whether a step with the condition `condition` runs (GitHub's rules: a
/// condition without a status function is `success() && …`). The
/// expressions read: terms joined by `&&` (an `||`, parentheses or another
/// kind of term is an error, so that a new condition is read, not guessed),
/// each a status function, or `steps.ID.outcome` or `inputs.NAME` (empty
/// when not given) compared with `==` / `!=` to a quoted string.
fn runs(condition: Option<&str>, job: &JobState) -> Result<bool, String> {
    let text = condition.unwrap_or("").trim();
    let text = text.strip_prefix("${{").and_then(|t| t.strip_suffix("}}")).unwrap_or(text).trim();
    if text.contains("||") || text.replace("()", "").contains('(') {
        return Err(format!("a condition this test does not read: {text}"));
    }
    let terms: Vec<&str> = text.split("&&").map(str::trim).filter(|t| !t.is_empty()).collect();
    let status = ["always()", "success()", "failure()", "cancelled()"];
    // No status function: `success() && …`.
    let mut all = terms.iter().any(|t| status.contains(t)) || (!job.failed && !job.cancelled);
    for term in terms {
        let value = match term {
            "always()" => true,
            "success()" => !job.failed && !job.cancelled,
            "failure()" => job.failed,
            "cancelled()" => job.cancelled,
            _ => {
                let (left, equal, right) = if let Some((l, r)) = term.split_once("!=") {
                    (l.trim(), false, r.trim())
                } else if let Some((l, r)) = term.split_once("==") {
                    (l.trim(), true, r.trim())
                } else {
                    return Err(format!("a term this test does not read: {term}"));
                };
                let literal = right
                    .strip_prefix('\'')
                    .and_then(|r| r.strip_suffix('\''))
                    .ok_or_else(|| format!("a term this test does not read: {term}"))?;
                let value = if let Some(name) = left.strip_prefix("inputs.") {
                    job.inputs.iter().find(|(n, _)| *n == name).map_or("", |(_, v)| *v)
                } else {
                    let id = left
                        .strip_prefix("steps.")
                        .and_then(|l| l.strip_suffix(".outcome"))
                        .ok_or_else(|| format!("a term this test does not read: {term}"))?;
                    job.outcomes.iter().find(|(s, _)| *s == id).map_or("", |(_, o)| *o)
                };
                (value == literal) == equal
            }
        };
        all &= value;
    }
    Ok(all)
}

/// What `action.yml` (its text: `yaml`) must do with the ledger: restored
/// before `indexq submit`, saved after it under the key it was restored
/// by (the same path), by a step that runs when the submission failed and
/// when the job was cancelled while it ran, as well as when all went well.
fn saves_the_ledger_whatever_happens(yaml: &str) -> Result<(), String> {
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| format!("not YAML: {e}"))?;
    let action = &docs[0];
    if action["runs"]["using"].as_str() != Some("composite") {
        return Err("not a composite action".into());
    }
    let steps = action["runs"]["steps"].as_vec().ok_or("no runs.steps")?;
    let using = |prefix: &str| -> Vec<usize> {
        (0..steps.len()).filter(|&i| steps[i]["uses"].as_str().is_some_and(|u| u.starts_with(prefix))).collect()
    };
    let (restore, save) = (using("actions/cache/restore@"), using("actions/cache/save@"));
    let submit: Vec<usize> = (0..steps.len()).filter(|&i| steps[i]["id"].as_str() == Some("submit")).collect();
    let ([restore], [save], [submit]) = (restore.as_slice(), save.as_slice(), submit.as_slice()) else {
        return Err(format!("one restore, one save, one submit step: {restore:?} {save:?} {submit:?}"));
    };
    if !(restore < submit && submit < save) {
        return Err(format!("restore ({restore}), submit ({submit}), save ({save}): not in that order"));
    }
    let with = |i: usize, key: &str| steps[i]["with"][key].as_str().map(str::to_string);
    if with(*save, "key").is_none() || with(*save, "key") != with(*restore, "key") {
        return Err(format!("saved under {:?}, restored by {:?}", with(*save, "key"), with(*restore, "key")));
    }
    if with(*save, "path").is_none() || with(*save, "path") != with(*restore, "path") {
        return Err(format!("saves {:?}, restores {:?}", with(*save, "path"), with(*restore, "path")));
    }
    let condition = match &steps[*save]["if"] {
        Yaml::BadValue => None,
        Yaml::String(s) => Some(s.as_str()),
        Yaml::Boolean(b) => Some(if *b { "always()" } else { "false" }),
        other => return Err(format!("the save step's if: {other:?}")),
    };
    let restored = |serve_url: &str| -> Result<bool, String> {
        let condition = steps[*restore]["if"].as_str();
        let job = JobState { failed: false, cancelled: false, outcomes: &[], inputs: &[("serve-url", serve_url)] };
        runs(condition, &job)
    };
    if !restored("")? {
        return Err("the ledger is not restored for a submission".into());
    }
    let inputs: &[(&str, &str)] = &[];
    for (case, job) in [
        ("all went well", JobState { failed: false, cancelled: false, outcomes: &[("submit", "success")], inputs }),
        (
            "the submission failed",
            JobState { failed: true, cancelled: false, outcomes: &[("submit", "failure")], inputs },
        ),
        (
            "cancelled during it",
            JobState { failed: false, cancelled: true, outcomes: &[("submit", "cancelled")], inputs },
        ),
    ] {
        if !runs(condition, &job)? {
            return Err(format!("the ledger is not saved when {case} (if: {condition:?})"));
        }
    }
    // The serve mode keeps no ledger on the runner: none restored, none saved.
    let serve: &[(&str, &str)] = &[("serve-url", "https://indexq.example.org")];
    let job = JobState { failed: false, cancelled: false, outcomes: &[("submit", "success")], inputs: serve };
    if restored(serve[0].1)? || runs(condition, &job)? {
        return Err("a ledger is restored or saved in the serve mode".into());
    }
    Ok(())
}

#[test]
fn the_ledger_is_saved_even_when_the_submission_fails() {
    let yaml = std::fs::read_to_string(repo().join("action.yml")).unwrap();
    saves_the_ledger_whatever_happens(&yaml).unwrap();

    // The check reads the save step's own condition: `always()` on another
    // step, or a condition that needs the submission to succeed, is no save.
    let condition = "      if: always() && steps.submit.outcome != 'skipped' && inputs.serve-url == ''\n";
    assert!(yaml.contains(condition), "the condition this test moves about");
    let moved = yaml.replace(condition, "").replace(
        "    - name: Fail if indexq did\n      if: steps.submit.outputs.exit-code != '0'\n",
        "    - name: Fail if indexq did\n      if: always()\n",
    );
    assert!(moved.contains("if: always()") && !moved.contains(condition), "{moved}");
    let err = saves_the_ledger_whatever_happens(&moved).unwrap_err();
    assert!(err.contains("the submission failed"), "{err}");
    for (bad, what) in [
        ("      if: steps.submit.outcome == 'success'\n", "the submission failed"),
        ("      if: success() && always()\n", "the submission failed"),
        ("      if: failure()\n", "all went well"),
        ("      if: always() && steps.submit.outcome == 'success'\n", "the submission failed"),
        ("      if: always() || true\n", "does not read"),
    ] {
        let err = saves_the_ledger_whatever_happens(&yaml.replace(condition, bad)).unwrap_err();
        assert!(err.contains(what), "{bad}: {err}");
    }
    for good in
        ["      if: ${{ always() && inputs.serve-url == '' }}\n", "      if: always() && inputs.serve-url == ''\n"]
    {
        saves_the_ledger_whatever_happens(&yaml.replace(condition, good)).unwrap();
    }
    // Saved in the serve mode too, where there is no ledger: no.
    let err = saves_the_ledger_whatever_happens(&yaml.replace(condition, "      if: always()\n")).unwrap_err();
    assert!(err.contains("serve mode"), "{err}");
    // Saved under another key than it was restored by, or restored after: no.
    let key = "key: ${{ inputs.cache-key }}-${{ github.ref_name }}-${{ github.run_id }}-${{ github.run_attempt }}";
    let elsewhere = yaml.replacen(key, "key: other", 1);
    assert!(saves_the_ledger_whatever_happens(&elsewhere).unwrap_err().contains("saved under"));
}
