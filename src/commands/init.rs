//! `indexq init`: a commented starter configuration, for whoever has the
//! binary (a .deb, a release archive, the container) but not the repository
//! and its `config.example.toml`. The starter *is* that example, embedded at
//! build time, with the few lines that only make sense inside the repository
//! replaced: the header (how to run the example from a clone), the IndexNow
//! key read from a file under `examples/` (the starter reads it from
//! `$INDEXNOW_KEY`, its file served at the site's root, the default
//! location), and the property's name, site (`--site`) and source (the
//! site's `sitemap.xml`, which `submit` with no input reads). Every replacement
//! must match the example exactly once — a unit test holds the two together,
//! so they cannot drift apart silently.
//!
//! It writes the file `--config` (else `$INDEXQ_CONFIG`) names, the user's
//! configuration with `--global`, or `./indexq.toml`; the text is parsed as a configuration before it
//! is written, and an existing file is never overwritten (exit 2). It needs
//! no configuration, clock or ledger, so `main` dispatches it before loading
//! any.

use super::ExitStatus;
use crate::cli::InitArgs;
use crate::config::{self, ConfigError};
use crate::engines::indexnow::default_key_location;
use crate::error::UsageError;
use crate::output::printer::Printer;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use url::Url;

/// The repository's example, as the binary was built with it.
const EXAMPLE: &str = include_str!("../../config.example.toml");

/// The site the example is written for; without `--site` it stays, as a placeholder.
const EXAMPLE_SITE: &str = "https://example.com/";

/// The example property's one source: its site's sitemap.
const EXAMPLE_SOURCE: &str = "sources = [\"https://example.com/sitemap.xml\"]";

/// The example's opening lines, which say how to run it from a clone.
const EXAMPLE_HEADER: &str = "\
# indexq configuration — an example that runs as it is.
#
#   cargo run -- --config config.example.toml submit --dry-run examples/urls.txt
#
# Copy it to ./indexq.toml (or ~/.config/indexq/config.toml) and edit it.
";

/// The example's IndexNow key: a file in the repository, served at a fixed location.
const EXAMPLE_INDEXNOW: &str = "indexnow = { key_file = \"examples/indexnow-key.txt\", key_location = \
                                \"https://example.com/0f1e2d3c4b5a69788796a5b4c3d2e1f0.txt\",";

/// The IndexNow `daily_quota` the example (and so the starter) sets on its
/// property; a unit test holds the two together.
const INDEXNOW_CEILING: u64 = 10_000;

/// A key for building the key file's `curl` line before there is a key:
/// it never shows (`curl_key_file` replaces it).
const KEY_PLACEHOLDER: &str = "indexq-key-placeholder-4b1d";

/// The `--json` document.
#[derive(Serialize)]
struct InitJson {
    config: String,
    site: String,
    /// Whether `site` is still the example's placeholder.
    placeholder: bool,
}

pub fn run(explicit: Option<&Path>, args: &InitArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let path = target(explicit, args.global)?;
    let site = args.site.clone().unwrap_or_else(|| Url::parse(EXAMPLE_SITE).expect("a valid URL literal"));
    let text = starter(&site).map_err(|from| anyhow::anyhow!("config.example.toml no longer has `{from}` (a bug)"))?;
    // What is written must load: checked before anything touches the disk.
    config::parse(&path, &text).map_err(|err| anyhow::anyhow!("the starter configuration does not load: {err}"))?;
    write_new(&path, &text)?;
    if printer.json {
        printer.json(&InitJson {
            config: path.display().to_string(),
            site: site.to_string(),
            placeholder: args.site.is_none(),
        })?;
    } else {
        write_human(&mut printer.stdout(), &path, &site, args.site.is_none())?;
    }
    Ok(ExitStatus::Ok)
}

/// Where to write: `--config FILE`, the user's configuration (`--global`),
/// `$INDEXQ_CONFIG`, or `./indexq.toml` — the places `config::find` looks
/// in. `--global` is a flag typed for this run: it wins over the
/// environment (and the note after the next steps says the lookup reads
/// `$INDEXQ_CONFIG` first).
fn target(explicit: Option<&Path>, global: bool) -> anyhow::Result<PathBuf> {
    match (explicit, global) {
        (Some(_), true) => Err(UsageError("--global and --config name two different files: pick one".into()).into()),
        // The same directory `config::find` reads ($XDG_CONFIG_HOME on Linux).
        (None, true) => dirs::config_dir().map(|dir| dir.join("indexq").join("config.toml")).ok_or_else(|| {
            UsageError("no configuration directory is known (set $XDG_CONFIG_HOME or $HOME)".into()).into()
        }),
        (explicit, false) => Ok(config::named(explicit).unwrap_or_else(|| PathBuf::from("indexq.toml"))),
    }
}

/// The example with the site filled in, or the example text that no
/// longer matches (each replaced text must occur exactly once).
fn starter(site: &Url) -> Result<String, &'static str> {
    let name = property_name(site);
    let header = format!(
        "# indexq configuration, written by `indexq init` (indexq {}): every setting\n\
         # of the example, commented, with your site in [[property]] at the end.\n\
         # `indexq doctor` checks it without sending anything.\n",
        env!("CARGO_PKG_VERSION")
    );
    let indexnow = "# The IndexNow key comes from $INDEXNOW_KEY (`indexq key generate --out DIR` makes\n\
                    # one), its file served at the site's root (SITE/KEY.txt; else set key_location:\n\
                    # a key file below the root vouches only for the URLs under its folder).\n\
                    indexnow = { key_env = \"INDEXNOW_KEY\",";
    let replacements: [(&'static str, String); 6] = [
        (EXAMPLE_HEADER, header),
        (EXAMPLE_INDEXNOW, indexnow.to_string()),
        ("name = \"example.com\"", format!("name = {}", toml_string(&name))),
        ("site = \"https://example.com/\"", format!("site = {}", toml_string(site.as_str()))),
        (EXAMPLE_SOURCE, format!("sources = [{}]", toml_string(&sitemap_of(site)))),
        ("\"sc-domain:example.com\"", toml_string(&format!("sc-domain:{}", site.host_str().unwrap_or_default()))),
    ];
    let mut text = EXAMPLE.to_string();
    for (from, to) in &replacements {
        if text.matches(from).count() != 1 {
            return Err(from);
        }
        text = text.replacen(from, to, 1);
    }
    Ok(text)
}

/// The sitemap the starter reads for the site: `sitemap.xml` in the site's
/// folder (`https://example.org/blog` is the folder `/blog/`).
fn sitemap_of(site: &Url) -> String {
    let mut folder = site.clone();
    if !folder.path().ends_with('/') {
        folder.set_path(&format!("{}/", folder.path()));
    }
    folder.set_query(None);
    folder.set_fragment(None);
    folder.join("sitemap.xml").map_or_else(|_| format!("{folder}sitemap.xml"), |u| u.to_string())
}

/// The property's name: the site's host (and port), and its path when it has one.
fn property_name(site: &Url) -> String {
    let mut name = site.host_str().unwrap_or_default().to_string();
    if let Some(port) = site.port() {
        name.push_str(&format!(":{port}"));
    }
    name.push_str(site.path().trim_end_matches('/'));
    name
}

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// Creates `path` (and its directory) holding `text`; an existing file is
/// a configuration error and stays as it was.
fn write_new(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|err| anyhow::anyhow!("cannot create {}: {err}", dir.display()))?;
    }
    let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(ConfigError {
                place: path.display().to_string(),
                message: "already exists; it is left as it was".into(),
                hint: Some(
                    "edit it (`indexq doctor` checks it), or move it away and run `indexq init` again \
                     (`--config FILE` writes elsewhere)"
                        .into(),
                ),
            }
            .into());
        }
        Err(err) => return Err(anyhow::Error::new(err).context(format!("cannot create {}", path.display()))),
    };
    if let Err(err) = file.write_all(text.as_bytes()).and_then(|()| file.sync_all()) {
        // Not left half-written: a later `init` would refuse to replace it.
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(anyhow::Error::new(err).context(format!("cannot write {}", path.display())));
    }
    Ok(())
}

/// Whether the commands that follow find `path` without `--config`.
fn found_without_flag(path: &Path) -> bool {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    config::find(None).is_ok_and(|found| same(&found, path))
}

fn write_human(out: &mut impl Write, path: &Path, site: &Url, placeholder: bool) -> std::io::Result<()> {
    let indexq = if found_without_flag(path) {
        "indexq".to_string()
    } else {
        format!("indexq --config {}", shell_word(&path.display().to_string()))
    };
    writeln!(out, "Wrote {}: a commented starter configuration for {site}.", path.display())?;
    if placeholder {
        writeln!(out, "Its site is the example's placeholder: set `name` and `site` in its [[property]] first")?;
        writeln!(out, "(or move it away and run `indexq init --site https://YOUR.SITE/`).")?;
    }
    writeln!(out)?;
    // Each step names only what exists by then: the key file once step 1
    // has made it, the user's own URLs only as what to give.
    let key_file = crate::shell::curl_key_file(
        &default_key_location(site, KEY_PLACEHOLDER),
        KEY_PLACEHOLDER,
        &config::SecretSource::Env { var: "INDEXNOW_KEY".into(), place: String::new() },
    );
    let origin = default_key_location(site, "KEY");
    writeln!(out, "Next:")?;
    writeln!(out, "  1. {indexq} key generate --out public")?;
    writeln!(out, "     makes an IndexNow key and writes it to public/KEY.txt (KEY: the key it prints);")?;
    writeln!(out, "     publish that file at {origin}")?;
    writeln!(out, "  2. export INDEXNOW_KEY=KEY   (where indexq runs: shell, cron, systemd, CI secret)")?;
    writeln!(out, "  3. {key_file}")?;
    writeln!(out, "     prints the key once the file is published (the engines fetch it there)")?;
    writeln!(out, "  4. {indexq} doctor")?;
    writeln!(out, "     checks the configuration, the key file and the ledger, spending no quota")?;
    writeln!(out, "  5. {indexq} submit --dry-run")?;
    writeln!(out, "     with no input, reads the property's sources: {}", sitemap_of(site))?;
    writeln!(out, "     (if your sitemap is elsewhere, set `sources` in the file: a sitemap, a robots.txt that")?;
    writeln!(out, "     lists it, or a file of URLs); shows what would be sent now and what would wait.")?;
    writeln!(out, "     Drop --dry-run to send. A site with an archive the engines know already: run")?;
    writeln!(out, "     `{indexq} submit --baseline` once first; it records every URL read as announced")?;
    writeln!(out, "     (nothing is sent), so that only new and changed pages go from then on.")?;
    // The hourly job starts in another directory and environment: the
    // configuration by its absolute path, as a line a crontab takes too.
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    writeln!(out, "  6. INDEXQ_CONFIG={} indexq -q submit", shell_word(&absolute.display().to_string()))?;
    writeln!(out, "     every hour (cron, a systemd timer): reads the sources again (only what changed goes),")?;
    writeln!(out, "     sends what waits in the queue, and prints only what needs a human")?;
    writeln!(
        out,
        "The numbers in the file are explained beside each: the IndexNow daily_quota = {INDEXNOW_CEILING} of"
    )?;
    writeln!(out, "[[property]] is a ceiling of your own (IndexNow documents no daily limit; {INDEXNOW_CEILING} URLs")?;
    writeln!(out, "is the most one request carries); [google]'s 200 a day and 380 a minute are Google's")?;
    writeln!(out, "defaults for a new Cloud project.")?;
    writeln!(out, "Bing, Google, Baidu and Yandex are commented out in the file, each with what it needs")?;
    writeln!(out, "(Baidu's link push and Yandex's recrawl queue have daily quotas of their own).")?;
    writeln!(out, "Google documents")?;
    writeln!(out, "its Indexing API for pages with JobPosting or BroadcastEvent (in a VideoObject) structured")?;
    writeln!(out, "data only: other pages it merely receives (the reason `received`).")?;
    writeln!(out, "Your source is a sitemap, so the sitemap channel is there for every page: with")?;
    writeln!(out, "`bing = {{}}` (a Bing API key) or `google = {{ indexing = false }}` (a service account that is")?;
    writeln!(out, "an Owner or Full user of the property in Search Console), indexq submits")?;
    writeln!(out, "{} to Bing and Search Console when it changes, at most once a day,", sitemap_of(site))?;
    writeln!(out, "and `indexq status` shows what each engine made of it (`sitemaps = false` turns it off).")?;
    if !found_without_flag(path) {
        if let Ok(found) = config::find(None) {
            let from_env = if config::named(None).is_some() { " ($INDEXQ_CONFIG)" } else { "" };
            writeln!(out, "Note: without --config, indexq reads {}{from_env} first.", found.display())?;
        }
    }
    Ok(())
}

/// `text` as one shell word (quoted when it needs to be).
fn shell_word(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c)) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn every_replacement_matches_the_example_once() {
        // The placeholder site replaces the example's own: only the header and the key change.
        let text = starter(&site(EXAMPLE_SITE)).unwrap_or_else(|from| panic!("no longer in the example: {from}"));
        assert!(!text.contains("cargo run"), "the header of a clone is gone:\n{text}");
        assert!(!text.contains("examples/"), "nothing points into the repository:\n{text}");
        assert!(text.contains("key_env = \"INDEXNOW_KEY\""), "{text}");
    }

    #[test]
    fn the_site_is_filled_in_and_the_rest_is_the_example() {
        let text = starter(&site("https://blog.example.org/")).unwrap();
        assert!(!text.contains("example.com"), "every example.com is replaced:\n{text}");
        assert!(text.contains("name = \"blog.example.org\"\n"), "{text}");
        assert!(text.contains("site = \"https://blog.example.org/\""), "{text}");
        assert!(text.contains("\"sc-domain:blog.example.org\""), "{text}");
        // Baidu and Yandex are offered, commented out, with their tables.
        for line in ["# [baidu]", "# baidu = { daily_quota = 10 }", "# [yandex]", "# yandex = { daily_quota = 20 }"] {
            assert!(text.lines().any(|l| l.starts_with(line)), "`{line}` is offered:\n{text}");
        }
        // Every other line of the example is there as it was, in its order.
        let kept: Vec<&str> = EXAMPLE
            .lines()
            .filter(|l| !EXAMPLE_HEADER.contains(l) && !l.contains("example.com") && !l.contains("examples/"))
            .collect();
        let mut lines = text.lines();
        for line in kept {
            assert!(lines.any(|l| l == line), "`{line}` is missing or out of order");
        }
    }

    #[test]
    fn the_starter_loads_with_the_key_from_the_environment() {
        for url in [EXAMPLE_SITE, "https://example.org", "https://example.org:8443/blog/", "http://127.0.0.1:8080/"] {
            let text = starter(&site(url)).unwrap();
            let settings = config::parse(Path::new("indexq.toml"), &text).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(settings.properties.len(), 1);
            let property = &settings.properties[0];
            assert_eq!(property.site, site(url));
            let indexnow = property.indexnow.as_ref().expect("IndexNow is on");
            assert!(matches!(&indexnow.key, config::SecretSource::Env { var, .. } if var == "INDEXNOW_KEY"));
            assert!(indexnow.key_location.is_none(), "served at the default place");
            assert_eq!(property.sources, [config::PropertySource::Sitemap(sitemap_of(&site(url)))], "{url}");
        }
    }

    #[test]
    fn the_source_is_the_sitemap_in_the_sites_folder() {
        assert_eq!(sitemap_of(&site("https://example.org")), "https://example.org/sitemap.xml");
        assert_eq!(sitemap_of(&site("https://example.org:8443/blog/")), "https://example.org:8443/blog/sitemap.xml");
        assert_eq!(sitemap_of(&site("https://example.org/blog")), "https://example.org/blog/sitemap.xml");
        assert_eq!(sitemap_of(&site("http://127.0.0.1:8080/?x=1")), "http://127.0.0.1:8080/sitemap.xml");
    }

    #[test]
    fn every_number_in_the_starter_is_explained() {
        let text = starter(&site("https://example.org/")).unwrap();
        let ceiling = format!("daily_quota = {INDEXNOW_CEILING}");
        let indexnow = text.lines().find(|l| l.starts_with("indexnow = {")).expect("the property uses IndexNow");
        assert!(indexnow.contains(&ceiling), "the ceiling `init` explains is the one it writes: {indexnow}");
        assert!(text.lines().any(|l| l.starts_with('#') && l.contains(&ceiling)), "and its comment says why:\n{text}");
        let mut previous = "";
        for line in text.lines() {
            let setting = !line.starts_with('#') && line.contains('=');
            let number = line
                .split('#')
                .next()
                .unwrap_or_default()
                .split('=')
                .skip(1)
                .any(|v| v.trim_start().trim_start_matches('"').starts_with(|c: char| c.is_ascii_digit()));
            if setting && number {
                assert!(line.contains('#') || previous.starts_with('#'), "`{line}` says what its number is");
            }
            previous = line;
        }
    }

    #[test]
    fn property_names_come_from_the_site() {
        assert_eq!(property_name(&site("https://Example.org")), "example.org");
        assert_eq!(property_name(&site("https://example.org:8443/blog/")), "example.org:8443/blog");
    }

    #[test]
    fn global_and_config_are_exclusive() {
        let err = target(Some(Path::new("a.toml")), true).unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some());
        assert_eq!(target(None, false).unwrap(), PathBuf::from("indexq.toml"));
        assert_eq!(
            target(Some(Path::new("/etc/indexq/config.toml")), false).unwrap(),
            Path::new("/etc/indexq/config.toml")
        );
    }

    #[test]
    fn an_existing_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("indexq.toml");
        write_new(&path, "first").unwrap();
        let err = write_new(&path, "second").unwrap_err();
        let config = err.downcast_ref::<ConfigError>().expect("a configuration error: exit 2");
        assert!(config.hint.as_deref().unwrap_or_default().contains("indexq init"), "{config:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("/etc/indexq/config.toml"), "/etc/indexq/config.toml");
        assert_eq!(shell_word("my dir/it's.toml"), r"'my dir/it'\''s.toml'");
    }
}
