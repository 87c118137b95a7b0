//! `indexq key generate`: a new IndexNow key from the operating system's
//! random generator (lowercase hex), written to `DIR/KEY.txt` — exactly the
//! key, UTF-8 without a byte-order mark and without a trailing newline — and
//! the steps that remain: where each configured property must serve the file
//! and the config lines that give indexq the key. Printing the key is the
//! purpose of this command: besides the file name and the URLs, which are
//! made of it, it is printed once, in the `export` line. Other commands keep
//! treating it as a secret.
//!
//! A configuration is optional: without one there are no property URLs, and
//! the output says how to add a property. A configuration that exists but
//! does not load is an error, as for every command. An existing key file is
//! never overwritten (exit 2). A missing `--out` directory is created.

use super::ExitStatus;
use crate::cli::{KeyAction, KeyArgs, KeyGenerateArgs};
use crate::config::{self, SecretSource, Settings};
use crate::engines::indexnow::default_key_location;
use crate::error::UsageError;
use crate::output::printer::Printer;
use crate::shell::single_quoted;
use rand::TryRngCore;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The `--json` document.
#[derive(Serialize)]
struct KeyJson<'a> {
    key_file: String,
    key: &'a str,
    /// Where the file must be served: each configured property's origin, once.
    urls: Vec<String>,
}

/// Where one property must serve the key file.
struct Served {
    property: String,
    url: String,
    /// The property's `key_location`, when it sets one (it then points at the old key).
    configured: Option<String>,
}

pub fn run(config_path: Option<&Path>, args: &KeyArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    match &args.action {
        KeyAction::Generate(generate_args) => generate(config_path, generate_args, printer),
    }
}

fn generate(config_path: Option<&Path>, args: &KeyGenerateArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let settings = optional_settings(config_path)?;
    let dir = output_dir(&args.out)?;
    let key = new_key(usize::from(args.length))?;
    let file = write_key_file(&dir, &key)?;
    let served = settings.as_ref().map(|s| served_at(s, &key)).unwrap_or_default();
    if printer.json {
        printer.json(&KeyJson { key_file: file.display().to_string(), key: &key, urls: distinct_urls(&served) })?;
    } else {
        write_human(&mut printer.stdout(), &file, &key, settings.as_ref(), &served)?;
    }
    Ok(ExitStatus::Ok)
}

/// The configuration if there is one: `--config` and `$INDEXQ_CONFIG` must
/// load; finding none in the default places is fine.
fn optional_settings(explicit: Option<&Path>) -> anyhow::Result<Option<Settings>> {
    // `find` fails only when nothing was named and no default file exists.
    let Ok(path) = config::find(explicit) else { return Ok(None) };
    Ok(Some(config::load(&path)?))
}

/// `--out`, created if missing (with its parents, like `mkdir -p`) and made
/// absolute (a `key_file` line must not depend on the directory indexq later
/// runs in).
fn output_dir(out: &Path) -> anyhow::Result<PathBuf> {
    if !out.exists() {
        std::fs::create_dir_all(out)
            .map_err(|err| UsageError(format!("--out {}: cannot create the directory: {err}", out.display())))?;
    }
    match std::fs::canonicalize(out) {
        Ok(dir) if dir.is_dir() => Ok(dir),
        Ok(_) => Err(UsageError(format!("--out {}: not a directory", out.display())).into()),
        Err(err) => Err(UsageError(format!("--out {}: {err}", out.display())).into()),
    }
}

/// `length` lowercase hex characters from the OS random generator.
fn new_key(length: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; length.div_ceil(2)];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|err| anyhow::anyhow!("the operating system's random generator failed: {err}"))?;
    let mut key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    key.truncate(length);
    // Hex of the right length always passes; checked anyway, as the rules live in `classify`.
    crate::classify::check_indexnow_key(&key).map_err(|why| anyhow::anyhow!("generated an invalid key: {why}"))?;
    Ok(key)
}

/// Creates `dir/KEY.txt` holding exactly the key; an existing file is a
/// usage error and stays as it was.
fn write_key_file(dir: &Path, key: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("{key}.txt"));
    let mut file = match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(UsageError(format!("{} already exists; it is left as it was", path.display())).into());
        }
        Err(err) => return Err(anyhow::Error::new(err).context(format!("cannot create {}", path.display()))),
    };
    if let Err(err) = file.write_all(key.as_bytes()).and_then(|()| file.sync_all()) {
        // Not left half-written: a later run must not mistake it for a key file.
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(anyhow::Error::new(err).context(format!("cannot write {}", path.display())));
    }
    Ok(path)
}

/// Per property, the URL of the new key file on the site's origin.
fn served_at(settings: &Settings, key: &str) -> Vec<Served> {
    settings
        .properties
        .iter()
        .map(|p| Served {
            property: p.name.clone(),
            url: default_key_location(&p.site, key).to_string(),
            // The old key location usually holds the old key: never shown.
            configured: p.indexnow.as_ref().and_then(|t| {
                let location = t.key_location.as_ref()?.to_string();
                let redactor = crate::redact::Redactor::new();
                if let Ok(old) = config::read_indexnow_key(t) {
                    redactor.add(old.expose());
                }
                Some(redactor.redact(&location))
            }),
        })
        .collect()
}

/// The URLs, each once, in the order of the properties.
fn distinct_urls(served: &[Served]) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    for s in served {
        if !urls.contains(&s.url) {
            urls.push(s.url.clone());
        }
    }
    urls
}

/// The environment variable to export: the one the configuration already
/// reads the IndexNow key from, else `INDEXNOW_KEY`.
fn key_env(settings: Option<&Settings>) -> String {
    settings
        .into_iter()
        .flat_map(|s| &s.properties)
        .filter_map(|p| p.indexnow.as_ref())
        .find_map(|t| match &t.key {
            SecretSource::Env { var, .. } => Some(var.clone()),
            SecretSource::File { .. } => None,
        })
        .unwrap_or_else(|| "INDEXNOW_KEY".to_string())
}

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn write_human(
    out: &mut impl Write,
    file: &Path,
    key: &str,
    settings: Option<&Settings>,
    served: &[Served],
) -> std::io::Result<()> {
    let file_name = format!("{key}.txt");
    writeln!(out, "Wrote {} ({} characters, no newline).", file.display(), key.len())?;
    writeln!(out)?;
    match settings {
        None => {
            writeln!(out, "1. Publish it as plain text at https://YOUR.SITE/{file_name}")?;
            writeln!(out, "   (no configuration was found, so no property URLs are known).")?;
            writeln!(out, "2. Add a property to indexq.toml (`indexq init --site URL` writes a commented starter):")?;
            writeln!(out, "     [[property]]")?;
            writeln!(out, "     name = \"example.com\"")?;
            writeln!(out, "     site = \"https://example.com/\"")?;
            writeln!(out, "     indexnow = {{ key_env = \"INDEXNOW_KEY\" }}")?;
        }
        Some(settings) if served.is_empty() => {
            writeln!(out, "1. Publish it as plain text at https://YOUR.SITE/{file_name}")?;
            writeln!(out, "   ({} configures no property yet).", settings.file.display())?;
            writeln!(out, "2. Add a [[property]] with `indexnow = {{ key_env = \"INDEXNOW_KEY\" }}` to it.")?;
        }
        Some(settings) => {
            writeln!(out, "1. Publish it as plain text at:")?;
            let urls = distinct_urls(served);
            for url in &urls {
                let names: Vec<&str> = served.iter().filter(|s| &s.url == url).map(|s| s.property.as_str()).collect();
                writeln!(out, "     {url}   ({})", names.join(", "))?;
            }
            // This command hands the key over: the check shows the real URL.
            writeln!(out, "   and check that each answers with exactly the key:")?;
            for url in &urls {
                writeln!(out, "     curl -fsS {}", single_quoted(url))?;
            }
            for s in served {
                if let Some(location) = &s.configured {
                    writeln!(
                        out,
                        "   {} sets key_location = {}: remove it, or point it at where you publish the new file.",
                        s.property,
                        toml_string(location)
                    )?;
                }
            }
            writeln!(
                out,
                "2. In each [[property]] of {}, read the key from the environment:",
                settings.file.display()
            )?;
            writeln!(out, "     indexnow = {{ key_env = \"{}\" }}", key_env(Some(settings)))?;
        }
    }
    writeln!(out, "   and set it where indexq runs (shell, cron, systemd EnvironmentFile, CI secret):")?;
    writeln!(out, "     export {}={key}", key_env(settings))?;
    writeln!(out, "   or read it from the file instead:")?;
    writeln!(out, "     indexnow = {{ key_file = {} }}", toml_string(&file.display().to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex_of_the_asked_length_and_differ() {
        for length in [8, 9, 32, 127, 128] {
            let key = new_key(length).unwrap();
            assert_eq!(key.len(), length);
            assert!(key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{key}");
            crate::classify::check_indexnow_key(&key).unwrap();
        }
        assert_ne!(new_key(32).unwrap(), new_key(32).unwrap());
    }

    #[test]
    fn an_existing_key_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_key_file(dir.path(), "abcdef0123").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdef0123");
        std::fs::write(&path, "other").unwrap();
        let err = write_key_file(dir.path(), "abcdef0123").unwrap_err();
        assert!(err.downcast_ref::<UsageError>().is_some(), "{err:#}");
        assert_eq!(std::fs::read(&path).unwrap(), b"other");
    }

    #[test]
    fn toml_strings_are_quoted_and_escaped() {
        assert_eq!(toml_string("/srv/site/k.txt"), "\"/srv/site/k.txt\"");
        assert_eq!(toml_string(r"C:\site\k.txt"), r#""C:\\site\\k.txt""#);
    }
}
