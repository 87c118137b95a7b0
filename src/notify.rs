//! `[notify]`: one notification, delivered. A command gets the event as one
//! JSON document on its standard input; a chat webhook gets `{"text": …}`,
//! the shape Slack's, Mattermost's and Discord's Slack-compatible incoming
//! webhooks take. Which notifications are due, and the ledger's claim on
//! each, are `submit`'s (`pipeline/notify.rs`).

use crate::config::{ConfigError, HttpSettings, NotifySettings};
use crate::redact::Redactor;
use serde::Serialize;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a notification says: the document a command reads on its standard
/// input (a webhook gets its `text`).
#[derive(Debug, Clone, Serialize)]
pub struct Event {
    /// `needs_human` or `resolved`.
    pub event: &'static str,
    pub property: String,
    pub engine: &'static str,
    /// The reason's text (`key_file_missing`), as the reminder shows it.
    pub reason: String,
    /// How many URLs it holds (0 once resolved).
    pub count: u64,
    /// Since when (RFC 3339), where known.
    pub since: Option<String>,
    pub fix: Option<String>,
    /// The line the reminder prints (`needs a human: …`), or the line that
    /// says it is resolved.
    pub text: String,
}

/// Why a notification did not get through. Its text never holds the
/// webhook's URL (it is masked before it is shown).
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("cannot start `{program}`: {source}")]
    Start { program: String, source: std::io::Error },
    #[error("`{program}` exited with {status}{stderr}")]
    Exit { program: String, status: std::process::ExitStatus, stderr: String },
    #[error("`{program}` did not finish within {}; it was stopped", human(*timeout))]
    CommandTimeout { program: String, timeout: Duration },
    #[error("the webhook answered HTTP {status}{body}")]
    Status { status: u16, body: String },
    #[error("the webhook did not answer within {}", human(*timeout))]
    WebhookTimeout { timeout: Duration },
    #[error("the webhook could not be reached: {0}")]
    Unreachable(String),
    #[error("{}: {}", .0.place, .0.message)]
    Config(ConfigError),
}

/// A timeout as errors say it.
fn human(d: Duration) -> String {
    crate::clock::humanize(chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX))
}

/// The configured notifier, ready to send.
pub struct Notifier {
    target: Target,
    timeout: Duration,
    /// Masks the webhook's URL in whatever is said of a failure.
    pub redactor: Redactor,
}

enum Target {
    Command(Vec<String>),
    Webhook { client: reqwest::Client, url: url::Url },
}

impl Notifier {
    /// The notifier `[notify]` configures, if any. A webhook kept in the
    /// environment or a file is read here: one that cannot be read is an
    /// error of this notification, not of the run.
    pub fn new(settings: &NotifySettings, http: &HttpSettings) -> Option<Result<Notifier, NotifyError>> {
        let redactor = Redactor::new();
        let target = if let Some(command) = &settings.command {
            Target::Command(command.clone())
        } else {
            let webhook = settings.webhook.as_ref()?;
            match webhook.url() {
                Err(e) => return Some(Err(NotifyError::Config(e))),
                Ok((url, secret)) => {
                    redactor.add(secret.expose());
                    // The path is what a chat service keeps secret (the
                    // host is public): masked on its own too, and so is
                    // each long part of it (the token a service may quote
                    // alone); short parts are words (`hooks`, `slack`).
                    redactor.add(url.path());
                    for part in url.path_segments().into_iter().flatten().filter(|p| p.len() >= 16) {
                        redactor.add(part);
                    }
                    if let Some(query) = url.query() {
                        redactor.add(query);
                    }
                    let client = match crate::engines::client(http) {
                        Ok(c) => c,
                        Err(e) => return Some(Err(NotifyError::Unreachable(e.without_url().to_string()))),
                    };
                    Target::Webhook { client, url }
                }
            }
        };
        Some(Ok(Notifier { target, timeout: settings.timeout, redactor }))
    }

    /// Sends one event; within `[notify] timeout`.
    pub async fn send(&self, event: &Event) -> Result<(), NotifyError> {
        match &self.target {
            Target::Command(words) => {
                let document = serde_json::to_vec(event).expect("an event serialises");
                let (words, timeout) = (words.clone(), self.timeout);
                tokio::task::spawn_blocking(move || run_command(&words, &document, timeout))
                    .await
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
            }
            Target::Webhook { client, url } => {
                let body = serde_json::json!({ "text": event.text });
                let sent = client.post(url.clone()).timeout(self.timeout).json(&body).send().await;
                let answer = match sent {
                    Ok(answer) => answer,
                    Err(e) if e.is_timeout() => return Err(NotifyError::WebhookTimeout { timeout: self.timeout }),
                    Err(e) => return Err(NotifyError::Unreachable(self.redactor.redact(&e.without_url().to_string()))),
                };
                let status = answer.status();
                if status.is_success() {
                    return Ok(());
                }
                // Masked before it is cut short, so no part of a secret is left.
                let text = self.redactor.redact(answer.text().await.unwrap_or_default().trim());
                let text: String = text.chars().take(200).collect();
                let body = if text.is_empty() { String::new() } else { format!(": {text}") };
                Err(NotifyError::Status { status: status.as_u16(), body })
            }
        }
    }
}

/// Runs the command without a shell, the document on its standard input,
/// its output dropped and the end of its standard error kept for the error;
/// stopped once `timeout` has passed.
fn run_command(words: &[String], document: &[u8], timeout: Duration) -> Result<(), NotifyError> {
    let program = words[0].clone();
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| NotifyError::Start { program: program.clone(), source })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that exits without reading its input closes the pipe:
        // what it exits with says whether it worked.
        let _ = stdin.write_all(document);
    }
    // Read on a thread of its own, so that a command writing much to its
    // standard error does not block on a full pipe while it is waited for.
    let reader = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = err.read_to_end(&mut text);
            text
        })
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NotifyError::CommandTimeout { program, timeout });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(source) => return Err(NotifyError::Start { program, source }),
        }
    };
    if status.success() {
        return Ok(());
    }
    let stderr = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr);
    let last = stderr.trim().lines().last().unwrap_or_default().chars().take(200).collect::<String>();
    let stderr = if last.is_empty() { String::new() } else { format!(": {last}") };
    Err(NotifyError::Exit { program, status, stderr })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Event {
        Event {
            event: "needs_human",
            property: "site".into(),
            engine: "indexnow",
            reason: "key_file_missing".into(),
            count: 3,
            since: None,
            fix: None,
            text: "needs a human: …".into(),
        }
    }

    #[test]
    fn a_command_gets_the_document_and_its_failure_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got.json");
        let doc = serde_json::to_vec(&event()).unwrap();
        let sh = |script: String| vec!["sh".to_string(), "-c".to_string(), script];
        run_command(&sh(format!("cat > '{}'", out.display())), &doc, Duration::from_secs(5)).unwrap();
        let got: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(got["reason"], "key_file_missing");
        assert_eq!(got["count"], 3);

        let e = run_command(&sh("echo nope >&2; exit 4".into()), &doc, Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, NotifyError::Exit { .. }), "{e}");
        assert!(e.to_string().ends_with("exit status: 4: nope"), "{e}");
        let e = run_command(&sh("sleep 5".into()), &doc, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(e, NotifyError::CommandTimeout { .. }), "{e}");
        let e = run_command(&["/nonexistent/notify".to_string()], &doc, Duration::from_secs(5)).unwrap_err();
        assert!(matches!(e, NotifyError::Start { .. }), "{e}");
    }
}
