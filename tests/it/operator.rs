//! Operator commands and documents: `key generate`, `completions`, `man`,
//! the examples in every `--help`, and the recipes in `examples/` — each
//! `indexq` command line in them is checked against the real binary's help.

use crate::support::*;
use std::path::{Path, PathBuf};

/// The IndexNow key rules, restated: 8 to 128 characters of a-z, A-Z, 0-9 and `-`.
fn assert_valid_indexnow_key(key: &str) {
    assert!((8..=128).contains(&key.len()), "key length {}: {key}", key.len());
    assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'), "key characters: {key}");
}

/// The one `*.txt` file in `dir`: (its key, its bytes).
fn only_key_file(dir: &Path) -> (String, Vec<u8>) {
    let files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "one file in {}: {files:?}", dir.display());
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    let key = name.strip_suffix(".txt").unwrap_or_else(|| panic!("{name} is not KEY.txt")).to_string();
    (key, std::fs::read(&files[0]).unwrap())
}

fn mkdir(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A run with no configuration anywhere: no `$INDEXQ_CONFIG`, and a working
/// directory without `indexq.toml` (the sandbox's own config sits in its root).
fn without_config(sb: &Sandbox, args: &[&str]) -> Run {
    let cwd = mkdir(sb, "elsewhere");
    let mut run = sb.indexq(args).env_remove("INDEXQ_CONFIG");
    run.cmd.current_dir(cwd);
    run
}

#[test]
fn key_generate_writes_exactly_the_key_and_says_where_to_serve_it() {
    let sb = Sandbox::new();
    let out = mkdir(&sb, "public");
    let done = sb.indexq(&["key", "generate", "--out", "public"]).output().code(0);
    let (key, bytes) = only_key_file(&out);
    assert_eq!(bytes, key.as_bytes(), "the file holds exactly the key: no BOM, no newline");
    assert_eq!(key.len(), 32, "32 characters by default: {key}");
    assert!(key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "lowercase hex: {key}");
    assert_valid_indexnow_key(&key);
    // Where the sandbox's site must serve it, and the lines that give indexq the key.
    let served = format!("{}/{key}.txt", sb.site.url());
    assert!(done.stdout.contains(&served), "stdout names {served}:\n{}", done.stdout);
    assert!(done.stdout.contains(&format!("export INDEXNOW_KEY={key}")), "{}", done.stdout);
    // This command hands the key over: its check is a curl line with the real URL, ready to paste.
    assert!(done.stdout.contains(&format!("curl -fsS '{served}'")), "{}", done.stdout);
    assert!(done.stdout.contains("key_env = \"INDEXNOW_KEY\""), "{}", done.stdout);
    assert!(done.stdout.contains("key_file = "), "{}", done.stdout);
    assert!(done.stdout.contains(&out.join(format!("{key}.txt")).display().to_string()), "{}", done.stdout);
    // The sandbox's property sets key_location (to the old key): the output says so.
    assert!(done.stdout.contains("key_location"), "{}", done.stdout);

    // Another run, another key (and the default directory is the current one).
    sb.indexq(&["key", "generate"]).output().code(0);
    let keys: Vec<String> = std::fs::read_dir(sb.dir.path())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str().and_then(|n| n.strip_suffix(".txt")).map(String::from))
        .filter(|k| k.len() == 32)
        .collect();
    assert_eq!(keys.len(), 1, "one key file in the current directory: {keys:?}");
    assert_ne!(keys[0], key);
    assert!(sb.engine.requests().is_empty() && sb.site.requests().is_empty(), "key generate sends nothing");
}

#[test]
fn key_generate_json_is_key_file_key_and_urls() {
    let sb = Sandbox::new();
    let out = mkdir(&sb, "keys");
    let done = sb.indexq(&["--json", "key", "generate", "--out", "keys"]).output().code(0);
    let doc = done.json();
    let mut fields: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["key", "key_file", "urls"], "{doc}");
    let doc = done.key_doc();
    let key = doc.key.as_str();
    assert_valid_indexnow_key(key);
    let key_file = PathBuf::from(&doc.key_file);
    assert_eq!(key_file, out.canonicalize().unwrap().join(format!("{key}.txt")));
    assert_eq!(std::fs::read(&key_file).unwrap(), key.as_bytes());
    assert_eq!(doc.urls, [format!("{}/{key}.txt", sb.site.url())]);
}

#[test]
fn key_generate_length_is_respected_and_bounded() {
    let sb = Sandbox::new();
    for length in [8usize, 100, 128] {
        let out = mkdir(&sb, &format!("len-{length}"));
        let out_arg = out.to_str().unwrap();
        sb.indexq(&["key", "generate", "--out", out_arg, "--length", &length.to_string()]).output().code(0);
        let (key, bytes) = only_key_file(&out);
        assert_eq!(key.len(), length, "{key}");
        assert_eq!(bytes, key.as_bytes());
        assert_valid_indexnow_key(&key);
    }
    for bad in ["7", "129", "0", "lots"] {
        let out = mkdir(&sb, &format!("bad-{bad}"));
        let done = sb.indexq(&["key", "generate", "--out", out.to_str().unwrap(), "--length", bad]).output().code(2);
        assert!(done.stderr.contains("--length"), "{}", done.stderr);
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing written for --length {bad}");
    }
}

#[test]
fn key_generate_creates_a_missing_out_directory() {
    // That an existing key file is never overwritten is a unit test of
    // `commands::key` (a random key's file name cannot be known in advance).
    let sb = Sandbox::new();
    // The quick start's `--out public` (README, init's next steps) on a fresh
    // machine: made, parents included.
    let done = sb.indexq(&["key", "generate", "--out", "missing/public/"]).output().code(0);
    let dir = sb.dir.path().join("missing").join("public");
    let (key, bytes) = only_key_file(&dir);
    assert_eq!(bytes, key.as_bytes());
    assert!(done.stdout.contains(&dir.canonicalize().unwrap().join(format!("{key}.txt")).display().to_string()));
    // A file where the directory should be is still a usage error, named.
    sb.file("not-a-dir", "x");
    let done = sb.indexq(&["key", "generate", "--out", "not-a-dir"]).output().code(2);
    assert!(done.stderr.contains("not-a-dir"), "{}", done.stderr);
    let done = sb.indexq(&["key", "generate", "--out", "not-a-dir/sub"]).output().code(2);
    assert!(done.stderr.contains("not-a-dir/sub"), "{}", done.stderr);
}

#[test]
fn key_generate_works_without_a_configuration() {
    let sb = Sandbox::new();
    let done = without_config(&sb, &["key", "generate"]).output().code(0);
    let (key, bytes) = only_key_file(&sb.dir.path().join("elsewhere"));
    assert_eq!(bytes, key.as_bytes());
    assert!(done.stdout.contains("[[property]]"), "says how to add a property:\n{}", done.stdout);
    assert!(done.stdout.contains(&format!("https://YOUR.SITE/{key}.txt")), "{}", done.stdout);
    assert!(done.stdout.contains(&format!("export INDEXNOW_KEY={key}")), "{}", done.stdout);

    let doc = without_config(&sb, &["--json", "key", "generate", "--out", "."]).output().code(0).key_doc();
    assert!(doc.urls.is_empty(), "{doc:#?}");

    // A configuration that is named but missing is still an error.
    let out = mkdir(&sb, "named");
    let run = without_config(&sb, &["--config", "missing.toml", "key", "generate", "--out", out.to_str().unwrap()]);
    let done = run.output().code(2);
    assert!(done.stderr.contains("missing.toml"), "{}", done.stderr);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "no key file when the configuration is broken");
}

#[test]
fn completions_for_every_shell_need_no_configuration() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        // A configuration that cannot load does not matter: completions come first.
        let done = sb.indexq(&["completions", shell]).env("INDEXQ_CONFIG", "/nonexistent/indexq.toml").output().code(0);
        assert!(!done.stdout.trim().is_empty(), "{shell}: empty completions");
        assert!(done.stdout.contains("submit"), "{shell}: no `submit` in:\n{}", done.stdout);
        assert!(done.stdout.contains("max-wait"), "{shell}: no `max-wait`");
    }
    let done = without_config(&sb, &["completions", "bash"]).output().code(0);
    assert!(done.stdout.contains("indexq"), "{}", done.stdout);
    sb.indexq(&["completions", "tcsh"]).output().code(2);
}

#[test]
fn man_is_one_roff_document_with_a_page_per_command() {
    let sb = Sandbox::new();
    let done = without_config(&sb, &["man"]).env("INDEXQ_CONFIG", "/nonexistent/indexq.toml").output().code(0);
    let page = done.stdout;
    assert!(page.starts_with('.'), "a roff document starts with a request:\n{}", &page[..page.len().min(300)]);
    assert!(page.contains(".TH indexq 1"), "the root page");
    assert!(page.contains(".SH SYNOPSIS"), "sections");
    for path in subcommand_paths(&sb) {
        let title = format!(".TH indexq-{} 1", path.join("-"));
        assert!(page.contains(&title), "no page `{title}`");
        assert!(page.contains(&path.join(" ")), "`{}` is not mentioned", path.join(" "));
    }
}

#[test]
fn every_help_carries_an_example_that_works() {
    let sb = Sandbox::new();
    let mut paths = vec![vec![]];
    paths.extend(subcommand_paths(&sb));
    assert!(paths.len() >= 12, "the command tree: {paths:?}");
    for path in paths {
        let help = help_of(&sb, &path);
        let example = help
            .lines()
            .find_map(|l| l.trim().strip_prefix("Example: "))
            .unwrap_or_else(|| panic!("`indexq {} --help` has no example:\n{help}", path.join(" ")));
        // The example itself uses only flags that exist.
        let tokens: Vec<String> = example.split_whitespace().map(String::from).collect();
        assert_eq!(tokens[0], "indexq", "{example}");
        let mut invocation = parse_invocation(&tokens[1..]).unwrap_or_else(|| panic!("not a command: {example}"));
        invocation.line = example.to_string();
        check_invocation(&sb, &invocation, &format!("the example of `indexq {} --help`", path.join(" ")));
    }
}

#[test]
fn recipes_use_only_flags_that_exist() {
    let sb = Sandbox::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let expected: [(&str, &[&str]); 6] = [
        ("cron", &["submit", "status"]),
        ("systemd/indexq.service", &["submit"]),
        ("systemd/indexq-serve.service", &["serve"]),
        // `indexq submit` runs in the action (below); the workflow shows the status after it.
        ("github-actions.yml", &["status"]),
        ("gitlab-ci.yml", &["submit"]),
        ("prometheus-alerts.yml", &["submit", "status"]),
    ];
    for (file, commands) in expected {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let invocations = invocations(&text);
        for command in commands {
            assert!(
                invocations.iter().any(|i| i.path.first().map(String::as_str) == Some(command)),
                "examples/{file} runs no `indexq {command}`: {invocations:?}"
            );
        }
        for invocation in &invocations {
            check_invocation(&sb, invocation, &format!("examples/{file}"));
        }
    }
}

#[test]
fn recipes_say_what_the_issue_asks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    let service = read("systemd/indexq.service");
    for line in [
        "Type=oneshot",
        "StateDirectory=indexq",
        "User=indexq",
        "Environment=INDEXQ_CONFIG=/etc/indexq/config.toml",
        "EnvironmentFile=/etc/indexq/env",
    ] {
        assert!(service.lines().any(|l| l.trim() == line), "indexq.service lacks `{line}`");
    }
    // The config's `ledger` is the service's (issue 44): not the unit's, and no DynamicUser.
    assert!(!service.contains("INDEXQ_LEDGER=/var") && !service.contains("DynamicUser"), "{service}");
    let timer = read("systemd/indexq.timer");
    assert!(timer.lines().any(|l| l.trim() == "Persistent=true"), "{timer}");
    assert!(timer.lines().any(|l| l.trim() == "OnCalendar=hourly"), "{timer}");
    let cron = read("cron");
    assert!(cron.lines().any(|l| l.starts_with("MAILTO=")), "{cron}");
    assert!(cron.lines().any(|l| l.starts_with("INDEXNOW_KEY=")), "{cron}");
    let github = read("github-actions.yml");
    for needle in [
        "uses: OWNER/indexq@v",
        "${{ secrets.INDEXNOW_KEY }}",
        "needs: deploy",
        "fail-on: misconfigured",
        "concurrency:",
        "package.repository",
    ] {
        assert!(github.contains(needle), "github-actions.yml lacks `{needle}`");
    }
    let gitlab = read("gitlab-ci.yml");
    for needle in [
        "when: always",
        "$CI_COMMIT_REF_SLUG",
        "INDEXQ_LEDGER:",
        "--fail-on misconfigured",
        "SHA256SUMS | sha256sum -c -",
        "package.repository",
    ] {
        assert!(gitlab.contains(needle), "gitlab-ci.yml lacks `{needle}`");
    }
    for (file, text) in [("github-actions.yml", &github), ("gitlab-ci.yml", &gitlab)] {
        assert!(!text.contains("cargo install"), "{file} builds from source by default");
    }
    assert!(!github.contains('\t') && !gitlab.contains('\t'), "YAML is indented with spaces");
}

#[test]
fn the_action_runs_only_flags_that_exist() {
    let sb = Sandbox::new();
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/action/submit.sh")).unwrap();
    let invocation = action_invocation(&script);
    assert_eq!(invocation.path, ["submit"], "{invocation:?}");
    for flag in ["--sitemap", "--changed", "--max-wait", "--fail-on"] {
        assert!(invocation.flags.iter().any(|f| f == flag), "the action does not pass {flag}: {invocation:?}");
    }
    check_invocation(&sb, &invocation, ".github/action/submit.sh");
}

#[test]
fn the_action_says_what_the_issue_asks() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let action = std::fs::read_to_string(root.join("action.yml")).unwrap();
    for needle in [
        "using: composite",
        "actions/cache/restore@",
        "actions/cache/save@",
        // Per branch (saved when the submission failed too:
        // action::the_ledger_is_saved_even_when_the_submission_fails).
        "${{ github.ref_name }}",
        "from-source:",
        "indexnow-key:",
        "bing-api-key:",
        "google-service-account:",
    ] {
        assert!(action.contains(needle), "action.yml lacks `{needle}`");
    }
    // Inputs reach the scripts through the environment, never spliced into a
    // script (where a crafted value would be code): no `${{` in a `run:` block.
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut run_block: Option<usize> = None;
    for line in action.lines() {
        if let Some(run_indent) = run_block {
            if line.trim().is_empty() || indent(line) > run_indent {
                assert!(!line.contains("${{"), "an expression inside a script: {line}");
                continue;
            }
            run_block = None;
        }
        if line.trim_start().starts_with("run:") {
            assert!(!line.contains("${{"), "an expression inside a script: {line}");
            run_block = Some(indent(line));
        }
    }
    let install = std::fs::read_to_string(root.join(".github/action/install.sh")).unwrap();
    for needle in ["SHA256SUMS", "sha256sum", "cargo install --locked --path", "repository"] {
        assert!(install.contains(needle), "install.sh lacks `{needle}`");
    }
}

/// The `indexq` command line that `.github/action/submit.sh` builds: the
/// subcommand from `args=(...)`, the flags from every `args+=(--flag ...)`.
fn action_invocation(script: &str) -> Invocation {
    let mut path = Vec::new();
    let mut flags = Vec::new();
    for line in script.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("args=(") {
            path.extend(rest.trim_end_matches(')').split_whitespace().map(String::from));
        }
        for (at, _) in line.match_indices("args+=(") {
            let inner = &line[at + "args+=(".len()..];
            let inner = &inner[..inner.find(')').unwrap_or(inner.len())];
            flags.extend(inner.split_whitespace().filter(|t| t.starts_with("--")).map(String::from));
        }
    }
    Invocation { path, flags, line: "indexq submit (as .github/action/submit.sh builds it)".into() }
}

// ---------------------------------------------------------------------------
// The command tree, as the binary's help shows it.

fn help_of(sb: &Sandbox, path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let done = sb.indexq(&args).output();
    assert_eq!(done.code, 0, "`indexq {}` failed:\n{}", args.join(" "), done.stderr);
    done.stdout
}

/// The names in a help text's `Commands:` section (without `help`).
fn commands_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect()
}

/// Every subcommand, depth first: `[submit]`, `[queue]`, `[queue, list]`, ...
fn subcommand_paths(sb: &Sandbox) -> Vec<Vec<String>> {
    fn walk(sb: &Sandbox, path: Vec<String>, out: &mut Vec<Vec<String>>) {
        for name in commands_in(&help_of(sb, &path)) {
            let mut sub = path.clone();
            sub.push(name);
            out.push(sub.clone());
            walk(sb, sub, out);
        }
    }
    let mut out = Vec::new();
    walk(sb, Vec::new(), &mut out);
    out
}

// ---------------------------------------------------------------------------
// Command lines in recipes.

/// One `indexq ...` command line: the subcommand path and the flags it uses.
#[derive(Debug)]
struct Invocation {
    path: Vec<String>,
    flags: Vec<String>,
    line: String,
}

const SUBCOMMANDS: &[&str] =
    &["init", "submit", "serve", "status", "queue", "log", "report", "doctor", "key", "ledger", "completions", "man"];
const ACTIONS: &[&str] = &["list", "retry", "drop", "generate"];

/// Every `indexq` command line in a recipe: on ordinary lines (shell, YAML
/// `run:`, `ExecStart=`, crontab) and in comments when indented as code
/// (`#   indexq submit ...`). `indexq` not followed by a subcommand or an
/// option is prose, and installation lines are not invocations.
fn invocations(text: &str) -> Vec<Invocation> {
    let joined = text.replace("\\\n", " ");
    let mut found = Vec::new();
    for line in joined.lines() {
        let code = match line.trim_start().strip_prefix('#') {
            Some(comment) if comment.starts_with("  ") => comment,
            Some(_) => continue,
            None => line,
        };
        if code.contains("cargo install") {
            continue;
        }
        let tokens: Vec<String> = code.split_whitespace().map(String::from).collect();
        for (i, token) in tokens.iter().enumerate() {
            if token == "indexq" || token.ends_with("/indexq") {
                if let Some(mut invocation) = parse_invocation(&tokens[i + 1..]) {
                    invocation.line = line.trim().to_string();
                    found.push(invocation);
                }
            }
        }
    }
    found
}

/// The arguments after `indexq`, up to the end of the shell command.
fn parse_invocation(tokens: &[String]) -> Option<Invocation> {
    let args: Vec<&str> = tokens
        .iter()
        .map(String::as_str)
        .take_while(|t| !["|", "||", "&&", ";", "<", "#"].contains(t) && !t.starts_with('>') && !t.starts_with("2>"))
        .collect();
    let first = args.first()?;
    if !first.starts_with('-') && !SUBCOMMANDS.contains(first) {
        return None;
    }
    let mut path = Vec::new();
    let mut flags = Vec::new();
    let mut skip_value = false;
    for arg in args {
        if skip_value {
            skip_value = false;
        } else if arg.starts_with('-') && arg.len() > 1 {
            let flag = arg.split('=').next().unwrap_or(arg).to_string();
            // The global options with a value, which come before the subcommand.
            skip_value = path.is_empty() && ["--config", "--env-file"].contains(&flag.as_str()) && !arg.contains('=');
            flags.push(flag);
        } else if path.is_empty() || (path.len() == 1 && ACTIONS.contains(&arg)) {
            path.push(arg.to_string());
        }
    }
    Some(Invocation { path, flags, line: String::new() })
}

/// The subcommand exists, and each flag appears in its `--help`.
fn check_invocation(sb: &Sandbox, invocation: &Invocation, place: &str) {
    assert!(!invocation.path.is_empty(), "{place}: no subcommand in `{}`", invocation.line);
    assert!(SUBCOMMANDS.contains(&invocation.path[0].as_str()), "{place}: unknown subcommand in `{}`", invocation.line);
    let mut args: Vec<&str> = invocation.path.iter().map(String::as_str).collect();
    args.push("--help");
    let done = sb.indexq(&args).output();
    assert_eq!(done.code, 0, "{place}: `indexq {}` failed ({}):\n{}", args.join(" "), invocation.line, done.stderr);
    for flag in &invocation.flags {
        assert!(
            lists_flag(&done.stdout, flag),
            "{place}: `{flag}` in `{}` is not an option of `indexq {}`",
            invocation.line,
            args.join(" ")
        );
    }
}

/// Whether a help text lists `flag` as a whole word (`--max` is not `--max-wait`).
fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let next = help[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

#[test]
fn the_recipe_checker_finds_command_lines_and_bad_flags() {
    let text = "\
15 * * * * indexq -q submit 2>&1 | logger -t indexq
ExecStart=/usr/local/bin/indexq --config /etc/indexq/config.toml queue list \\
  --state parked
      - name: Install indexq
        run: cargo install --locked --git https://example.com/indexq
#   indexq status --json
# indexq as prose is not a command
";
    let found: Vec<(Vec<String>, Vec<String>)> = invocations(text).into_iter().map(|i| (i.path, i.flags)).collect();
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        found,
        vec![
            (owned(&["submit"]), owned(&["-q"])),
            (owned(&["queue", "list"]), owned(&["--config", "--state"])),
            (owned(&["status"]), owned(&["--json"])),
        ]
    );
    let sb = Sandbox::new();
    let help = help_of(&sb, &["submit".to_string()]);
    assert!(lists_flag(&help, "--max-wait") && lists_flag(&help, "-q") && lists_flag(&help, "--config"));
    assert!(!lists_flag(&help, "--max") && !lists_flag(&help, "--bogus"), "{help}");
}
