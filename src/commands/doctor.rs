//! `indexq doctor`: checks the configuration, the ledger and every engine's
//! credentials without spending any submission quota, and says for each
//! problem what to do. IndexNow: each property's key file is fetched and
//! compared (no submission). Bing: `GetUrlSubmissionQuota` (spends nothing).
//! Baidu: the push token is read (Baidu has no call that spends nothing).
//! Yandex: the user and host are found and `recrawl/quota` read (spends
//! nothing). Google: the key file is parsed and a token obtained (no publish); for a
//! property with `skip_indexed`, its site's URL is inspected once (one of
//! the property's URL inspections, no publish) to see whether the service
//! account may inspect the property. For a property that submits its
//! sitemaps, they are listed (Search Console's `sitemaps.list`, Bing's
//! `GetFeeds`; nothing submitted) to see whether the credentials may. What
//! is parked and what the engines' sitemap reports say is a problem each.
//! Exit 0 when nothing needs a human, 3 otherwise.

use super::ExitStatus;
use crate::clock::{self, Clock};
use crate::config::{LedgerLocation, Settings};
use crate::engines::{self, baidu::Baidu, bing::Bing, google::Google, indexnow::IndexNow, yandex::Yandex, Engine};
use crate::ledger::{Ledger, Owner, PG_SCHEMA_VERSION};
use crate::model::GroupKey;
use crate::model::NoticeKind;
use crate::model::Period;
use crate::model::{Class, EngineKind, SitemapRead};
use crate::output::printer::Printer;
use crate::redact::Redactor;
use serde::Serialize;
use std::io::Write;

/// One check's result (`--json` gives one per check).
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub check: &'static str,
    pub property: Option<String>,
    pub engine: Option<EngineKind>,
    pub ok: bool,
    /// Nothing is broken, but it is likely not what was meant: `ok`, with
    /// a `fix` to apply if it was not (human output: `warn`).
    pub warning: bool,
    pub message: String,
    pub fix: Option<String>,
    /// A command a person can paste to see for themselves (human output
    /// only): the key file's `curl` line, which reads the key from where
    /// the configuration does and so never holds it.
    #[serde(skip)]
    pub check_with: Option<String>,
}

impl Check {
    fn ok(check: &'static str, message: String) -> Check {
        Check { check, property: None, engine: None, ok: true, warning: false, message, fix: None, check_with: None }
    }

    fn problem(check: &'static str, message: String, fix: impl Into<String>) -> Check {
        Check { ok: false, fix: Some(fix.into()), ..Check::ok(check, message) }
    }

    fn warning(check: &'static str, message: String, fix: impl Into<String>) -> Check {
        Check { warning: true, fix: Some(fix.into()), ..Check::ok(check, message) }
    }

    fn about(mut self, property: &str, engine: EngineKind) -> Check {
        self.property = Some(property.to_string());
        self.engine = Some(engine);
        self
    }
}

pub async fn run(settings: &Settings, printer: &Printer, clock: &Clock) -> anyhow::Result<ExitStatus> {
    let now = clock.now();
    let mut checks = vec![config_check(settings, now)];
    checks.extend(ledger_checks(settings, now));

    let client = engines::client(&settings.http)?;
    let mut redactor = Redactor::new();
    let uses = |e| settings.properties.iter().any(|p| p.uses(e));
    if uses(EngineKind::IndexNow) {
        checks.extend(indexnow_checks(settings, client.clone(), &mut redactor).await);
    }
    if uses(EngineKind::Bing) {
        checks.extend(bing_checks(settings, client.clone(), &mut redactor).await);
    }
    if uses(EngineKind::Google) {
        checks.extend(google_checks(settings, client.clone(), &mut redactor).await);
    }
    if uses(EngineKind::Baidu) {
        checks.push(baidu_check(settings, client.clone(), &mut redactor));
    }
    if uses(EngineKind::Yandex) {
        checks.extend(yandex_checks(settings, client, &mut redactor).await);
    }

    let all_ok = checks.iter().all(|c| c.ok);
    if printer.json {
        printer.json(&serde_json::json!({ "checks": checks }))?;
    } else {
        write_human(printer, &checks)?;
    }
    Ok(if all_ok { ExitStatus::Ok } else { ExitStatus::NeedsHuman })
}

/// The checks as a person reads them: one line each, its fix and how to
/// check it below, then what they come to.
fn write_human(printer: &Printer, checks: &[Check]) -> anyhow::Result<()> {
    let mut out = printer.stdout();
    for c in checks {
        let about = match (&c.property, c.engine) {
            (Some(p), Some(e)) => format!(" [{} {p}]", e.title()),
            _ => String::new(),
        };
        let level = match (c.ok, c.warning) {
            (false, _) => "FIX",
            (true, true) => "warn",
            (true, false) => "ok ",
        };
        writeln!(out, "{level} {}{about}: {}", c.check, c.message)?;
        if let Some(fix) = c.fix.as_deref().filter(|f| !f.is_empty()) {
            writeln!(out, "    fix: {fix}")?;
        }
        if let Some(command) = &c.check_with {
            writeln!(out, "    check it with: {command}")?;
        }
    }
    let problems = checks.iter().filter(|c| !c.ok).count();
    let warnings = checks.iter().filter(|c| c.warning).count();
    if problems == 0 && warnings > 0 {
        writeln!(out, "Nothing to fix ({warnings} to look at); no submission quota was spent.")?;
    } else if problems == 0 {
        writeln!(out, "Everything checks out; no submission quota was spent.")?;
    } else {
        writeln!(out, "{problems} to fix; no submission quota was spent.")?;
    }
    Ok(())
}

/// IndexNow: the endpoints, the key, and each property's key file (fetched
/// and compared), key location and its scope.
async fn indexnow_checks(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Vec<Check> {
    let mut checks: Vec<Check> = indexnow_endpoints_check(settings).into_iter().collect();
    let engine = match IndexNow::new(settings, client, redactor) {
        Err(e) => {
            checks.push(Check::problem("indexnow_key", e.to_string(), e.hint.unwrap_or_default()));
            return checks;
        }
        Ok(engine) => engine,
    };
    for p in settings.properties.iter().filter(|p| p.indexnow.is_some()) {
        let Some((verdict, location)) = engine.check_property(&p.name).await else { continue };
        let mut check = if verdict.class() == Class::KeyPending {
            Check::ok("indexnow_key_file", format!("{location} serves exactly the key"))
        } else {
            Check::problem("indexnow_key_file", verdict.message, verdict.hint.unwrap_or_default())
        };
        check.check_with = key_file_curl(p);
        checks.push(check.about(&p.name, EngineKind::IndexNow));
        if engine.key_location_on_host(&p.name) == Some(false) {
            checks.push(
                Check::problem(
                    "indexnow_key_location",
                    format!("the key location {location} is not on the host of {}", p.site),
                    "IndexNow accepts a key location only on the submitted host: serve the key file on the \
                     site itself (e.g. at its root) and set `key_location` there, or drop `key_location`",
                )
                .about(&p.name, EngineKind::IndexNow),
            );
        }
        if let Some(check) = key_scope_check(p, redactor) {
            checks.push(check.about(&p.name, EngineKind::IndexNow));
        }
    }
    checks
}

/// Bing: the API key, each property's quota as Bing says it (spends
/// nothing), and its sitemaps as Bing lists them (`GetFeeds`).
async fn bing_checks(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Vec<Check> {
    let engine = match Bing::new(settings, client, redactor) {
        Err(e) => return vec![Check::problem("bing_api_key", e.to_string(), e.hint.unwrap_or_default())],
        Ok(engine) => engine,
    };
    let mut checks = Vec::new();
    for p in settings.properties.iter().filter(|p| p.bing.is_some()) {
        let group = GroupKey::urls(p.name.clone(), EngineKind::Bing, "");
        let check = match engine.reported_quota(&group).await {
            Some(Ok(left)) => {
                let left_in = |period| left.iter().find(|(p, _)| *p == period).map_or(0, |(_, n)| *n);
                Check::ok(
                    "bing_quota",
                    format!(
                        "the API key works: {} URLs left today, {} this month",
                        left_in(Period::Day),
                        left_in(Period::Month)
                    ),
                )
            }
            Some(Err(why)) => Check::problem(
                "bing_quota",
                format!("Bing's quota could not be read: {why}"),
                "check the API key (api_key_env / api_key_file under [bing]) and that the site is \
                 verified in Bing Webmaster Tools for that key (or set the property's bing.site_url)",
            ),
            None => continue,
        };
        checks.push(check.about(&p.name, EngineKind::Bing));
    }
    for p in settings.properties.iter().filter(|p| !p.submitted_sitemaps(EngineKind::Bing).is_empty()) {
        let site_url = p.bing.as_ref().map(|b| b.site_url.as_str()).unwrap_or_default();
        let sitemaps: Vec<String> = p.submitted_sitemaps(EngineKind::Bing).into_iter().map(str::to_string).collect();
        let reads = engine.read_feeds(site_url, &sitemaps).await;
        checks.push(sitemaps_check(EngineKind::Bing, site_url, &reads).about(&p.name, EngineKind::Bing));
    }
    checks
}

/// Baidu: the push token is read. Baidu offers no call that checks a token
/// or reads the quota without pushing, and its answer to a push of nothing
/// it would take is neither documented nor captured, so nothing is sent:
/// the first push's `remain` says what is left.
fn baidu_check(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Check {
    match Baidu::new(settings, client, redactor) {
        Err(e) => Check::problem("baidu_token", e.to_string(), e.hint.unwrap_or_default()),
        Ok(_) => Check::ok(
            "baidu_token",
            "the push token is read; Baidu has no call that checks it or reads the quota without pushing, so \
             the first push's answer (`remain`) says what is left"
                .into(),
        ),
    }
}

/// Yandex: each property's user and host found (the host verified) and its
/// recrawl quota read (`GET …/recrawl/quota`, spends nothing).
async fn yandex_checks(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Vec<Check> {
    let engine = match Yandex::new(settings, client, redactor) {
        Err(e) => return vec![Check::problem("yandex_token", e.to_string(), e.hint.unwrap_or_default())],
        Ok(engine) => engine,
    };
    let mut checks = Vec::new();
    for p in settings.properties.iter().filter(|p| p.yandex.is_some()) {
        let check = match engine.quota(&p.name).await {
            Ok((daily, left)) => Check::ok(
                "yandex_quota",
                format!("the token works and the host is verified: {left} of {daily} recrawls left today"),
            ),
            Err(verdict) => Check::problem(
                "yandex_quota",
                format!("Yandex's recrawl quota could not be read: {}", verdict.message),
                verdict.hint.unwrap_or_else(|| {
                    "check `[yandex]`'s token and `endpoint`, and that the site is verified in Yandex Webmaster".into()
                }),
            ),
        };
        checks.push(check.about(&p.name, EngineKind::Yandex));
    }
    checks
}

/// Google: the key file and a token, then, with a token, one inspection
/// for each property with `skip_indexed` and the sitemaps of each that
/// submits them.
async fn google_checks(settings: &Settings, client: reqwest::Client, redactor: &mut Redactor) -> Vec<Check> {
    let engine = match Google::new(settings, client, redactor) {
        Err(e) => return vec![Check::problem("google_credentials", e.to_string(), e.hint.unwrap_or_default())],
        Ok(engine) => engine,
    };
    let mut checks = Vec::new();
    let account = engine.account();
    let token = engine.check_token().await;
    checks.push(match &token {
        Ok(()) => Check::ok(
            "google_token",
            format!(
                "a token was obtained for {} (key {}, project {})",
                account.client_email, account.key_id, account.project_id
            ),
        ),
        Err(verdict) => {
            Check::problem("google_token", verdict.message.clone(), verdict.hint.clone().unwrap_or_default())
        }
    });
    // Without a token no inspection can be asked: the token's problem says why.
    let inspecting = settings.properties.iter().filter(|p| p.google.as_ref().is_some_and(|g| g.skip_indexed));
    for p in inspecting.filter(|_| token.is_ok()) {
        let site_url = p.google.as_ref().map(|g| g.site_url.as_str()).unwrap_or_default();
        let inspected = engine.inspect(site_url, p.site.as_str()).await;
        checks.push(inspection_check(site_url, p.site.as_str(), &inspected).about(&p.name, EngineKind::Google));
    }
    // The sitemap channel: the property's sitemaps listed
    // (`sitemaps.list` needs what `sitemaps.submit` needs of the
    // property), none submitted.
    let submitting = settings.properties.iter().filter(|p| !p.submitted_sitemaps(EngineKind::Google).is_empty());
    for p in submitting.filter(|_| token.is_ok()) {
        let site_url = p.google.as_ref().map(|g| g.site_url.as_str()).unwrap_or_default();
        let reads = google_sitemap_reads(&engine, site_url, &p.submitted_sitemaps(EngineKind::Google)).await;
        checks.push(sitemaps_check(EngineKind::Google, site_url, &reads).about(&p.name, EngineKind::Google));
    }
    checks
}

/// What Search Console lists of each of `sitemaps` (`sitemaps.list`), or
/// why it could not be read.
async fn google_sitemap_reads(engine: &Google, site_url: &str, sitemaps: &[&str]) -> Vec<(String, SitemapRead)> {
    match engine.list_sitemaps(site_url).await {
        Ok(listed) => sitemaps
            .iter()
            .map(|s| {
                let reading = listed.iter().find(|(path, _)| path == s).map(|(_, r)| r.clone());
                (s.to_string(), SitemapRead::Read(reading.unwrap_or_default()))
            })
            .collect(),
        Err(verdict) => {
            let failed = engines::read_failure(verdict, None);
            sitemaps.iter().map(|s| (s.to_string(), SitemapRead::Failed(failed.clone()))).collect()
        }
    }
}

/// More than one IndexNow endpoint: each URL goes to each, while the engines
/// share every submission among themselves (indexnow.org FAQ; Bing's
/// announcement of the sharing, January 2022), so one reaches them all.
fn indexnow_endpoints_check(settings: &Settings) -> Option<Check> {
    let endpoints = &settings.indexnow.endpoints;
    if endpoints.len() < 2 {
        return None;
    }
    let hosts: Vec<&str> = endpoints.iter().map(|e| e.host_str().unwrap_or_default()).collect();
    Some(Check::warning(
        "indexnow_endpoints",
        format!(
            "{} IndexNow endpoints ({}): each URL goes {} times, to engines that share every submission with \
             each other (indexnow.org FAQ), so one endpoint already reaches them all",
            endpoints.len(),
            hosts.join(", "),
            endpoints.len()
        ),
        "keep one endpoint in `[indexnow] endpoints` (https://api.indexnow.org/indexnow) unless you mean to: \
         each endpoint has its own queue and budget, which only helps to reach an engine that does not share, \
         or to keep submitting while one endpoint fails",
    ))
}

/// A key location below its host's root vouches only for URLs under its
/// folder: said for every property where it is, and a configuration problem
/// when the property's site is wider than that folder (its other URLs are
/// `invalid` for IndexNow, `outside_key_location`, and every `submit` run
/// reminds of them until this is fixed).
fn key_scope_check(property: &crate::config::Property, redactor: &Redactor) -> Option<Check> {
    let location = property.indexnow.as_ref()?.key_location.as_ref()?;
    let scope = crate::engines::indexnow::key_scope(&property.site, location)?;
    let (shown, site) = (redactor.redact(scope.as_str()), &property.site);
    let location = redactor.redact(location.as_str());
    let others =
        if property.bing.is_some() || property.google.is_some() { "; its other engines still get them" } else { "" };
    Some(if crate::engines::indexnow::site_wider_than(&scope, site) {
        Check::problem(
            "indexnow_key_scope",
            format!(
                "the key location {location} vouches only for URLs under {shown}, and the site {site} is wider: \
                 IndexNow gets none of its other URLs (each is `invalid` for IndexNow, outside_key_location{others})"
            ),
            format!(
                "serve the key file at the root of the site and remove `key_location` (the root vouches for every \
                 URL of the host), or, if only {shown} is meant for IndexNow, give it a property of its own"
            ),
        )
    } else {
        Check::ok(
            "indexnow_key_scope",
            format!("the key location {location} vouches for URLs under {shown}, which holds the site {site}"),
        )
    })
}

/// What one inspection of a property's site says of `skip_indexed`: that
/// the service account may inspect the property, or why not and the fix.
/// A spent inspection quota needs nobody (inspections go again when it
/// reopens); a failure on Google's side is a problem to check again.
fn inspection_check(site_url: &str, site: &str, inspected: &engines::Inspected) -> Check {
    let verdict = &inspected.verdict;
    let spent = "(one URL inspection of the property's 2,000 a day; nothing published)";
    match verdict.class() {
        Class::Accepted => Check::ok(
            "google_inspection",
            format!("the service account may inspect {site_url}: {} {spent}", verdict.message),
        ),
        Class::Quota => Check::ok(
            "google_inspection",
            format!("not checked: {}; until it reopens URLs are published without inspection", verdict.message),
        ),
        Class::Misconfigured => Check::problem(
            "google_inspection",
            format!("`skip_indexed` cannot work: {} {spent}", verdict.message),
            verdict.hint.clone().unwrap_or_default(),
        ),
        Class::Transient | Class::KeyPending => Check::problem(
            "google_inspection",
            format!("the inspection of {site} in {site_url} failed: {}", verdict.message),
            "run `indexq doctor` again later; until an inspection works, URLs are published without inspection",
        ),
    }
}

/// What reading a property's sitemaps from the engine (`reads`: Search
/// Console's `sitemaps.list`, Bing's `GetFeeds`, for each sitemap the
/// property submits) says of the sitemap channel: that the credentials may
/// submit sitemaps for `site_url` (and what the engine has of each), or
/// why not and the fix. Nothing is submitted.
fn sitemaps_check(engine: EngineKind, site_url: &str, reads: &[(String, SitemapRead)]) -> Check {
    let spent = "(read only; nothing submitted)";
    if let Some((_, SitemapRead::Failed(failure))) = reads.iter().find(|(_, r)| matches!(r, SitemapRead::Failed(_))) {
        return match failure.class {
            Class::Misconfigured => Check::problem(
                "sitemaps",
                format!("{}'s sitemaps of {site_url} cannot be submitted: {} {spent}", engine.title(), failure.message),
                failure.hint.clone().unwrap_or_default(),
            ),
            Class::Quota => Check::ok(
                "sitemaps",
                format!("not checked: {}; sitemaps are submitted once it allows", failure.message),
            ),
            _ => Check::problem(
                "sitemaps",
                format!("reading {}'s sitemaps of {site_url} failed: {}", engine.title(), failure.message),
                "run `indexq doctor` again later",
            ),
        };
    }
    let said: Vec<String> = reads
        .iter()
        .map(|(sitemap, read)| match read {
            SitemapRead::Read(r) if r.listed => {
                let downloaded = r.downloaded.map_or("never downloaded".to_string(), |t| {
                    format!("downloaded {}", t.format("%Y-%m-%d %H:%M UTC"))
                });
                format!("{sitemap} ({downloaded}, {} errors)", r.errors)
            }
            _ => format!("{sitemap} (not submitted yet: the next `submit` does)"),
        })
        .collect();
    Check::ok(
        "sitemaps",
        format!(
            "{} lets these credentials submit sitemaps for {site_url}: {} {spent}",
            engine.title(),
            said.join(", ")
        ),
    )
}

/// The `curl` line that fetches `property`'s key file, the key read from
/// where the configuration reads it (never written out).
fn key_file_curl(property: &crate::config::Property) -> Option<String> {
    let table = property.indexnow.as_ref()?;
    let key = crate::config::read_indexnow_key(table).ok()?;
    let location = match &table.key_location {
        Some(location) => location.clone(),
        None => crate::engines::indexnow::default_key_location(&property.site, key.expose()),
    };
    Some(crate::shell::curl_key_file(&location, key.expose(), &table.key))
}

/// Where the config is, what it uses, and what "today" is in each quota timezone.
fn config_check(settings: &Settings, now: chrono::DateTime<chrono::Utc>) -> Check {
    let mut zones: Vec<chrono_tz::Tz> = Vec::new();
    let mut engines_used: Vec<&str> = Vec::new();
    for p in &settings.properties {
        let tables = [
            ("indexnow", p.indexnow.as_ref().map(|t| t.quota_timezone)),
            ("bing", p.bing.as_ref().map(|t| t.quota_timezone)),
            ("google", p.google.as_ref().map(|t| t.quota_timezone)),
            ("baidu", p.baidu.as_ref().map(|t| t.quota_timezone)),
            ("yandex", p.yandex.as_ref().map(|t| t.quota_timezone)),
        ];
        for (name, tz) in tables {
            let Some(tz) = tz else { continue };
            if !engines_used.contains(&name) {
                engines_used.push(name);
            }
            if !zones.contains(&tz) {
                zones.push(tz);
            }
        }
    }
    let today: Vec<String> =
        zones.iter().map(|tz| format!("{} in {}", now.with_timezone(tz).format("%Y-%m-%d"), tz.name())).collect();
    let user_tz = clock::user_timezone();
    if settings.properties.is_empty() {
        return Check::problem(
            "config",
            format!("{}: no [[property]] is configured", settings.file.display()),
            "add a [[property]] with a name, a site and an engine table (`indexq init --site URL --config NEW.toml` writes a \
             commented example)",
        );
    }
    Check::ok(
        "config",
        format!(
            "{}: {} properties, engines {}; today is {} (your timezone: {})",
            settings.file.display(),
            settings.properties.len(),
            engines_used.join(", "),
            if today.is_empty() { "-".to_string() } else { today.join(", ") },
            user_tz.name()
        ),
    )
}

/// The ledger: where, writable, private, its schema, and reservations left
/// in flight by a run that stopped (the next `submit` reconciles them).
fn ledger_checks(settings: &Settings, now: chrono::DateTime<chrono::Utc>) -> Vec<Check> {
    let path = match &settings.ledger {
        LedgerLocation::Sqlite(path) => path,
        LedgerLocation::Postgres(url) => return postgres_checks(settings, url, now),
    };
    let mut checks = Vec::new();
    // Named only as `LedgerLocation::display` names it, like every command.
    let place = settings.ledger.display();
    let existed = path.exists();
    // Opening takes group's and others' permissions away: say what it found.
    let loose = loose_mode(path);
    let mut ledger = match crate::ledger::open(&settings.ledger, &settings.ledger_options) {
        Ok(l) => l,
        Err(e) => {
            checks.push(Check::problem(
                "ledger",
                e.to_string(),
                "check that the directory exists and is writable by this user, or set `ledger` / $INDEXQ_LEDGER",
            ));
            return checks;
        }
    };
    let version = ledger.schema_version().unwrap_or(0);
    checks.push(Check::ok(
        "ledger",
        format!("{place} ({}writable, schema version {version})", if existed { "" } else { "created, " }),
    ));
    match (loose, loose_mode(path)) {
        (_, Some(mode)) => checks.push(Check::problem(
            "ledger_mode",
            format!("{place} has mode {mode:o}: other users can read the queue and responses"),
            format!("chmod 600 {place}"),
        )),
        (Some(mode), None) => checks.push(Check::ok(
            "ledger_mode",
            format!("{place} had mode {mode:o} (others could read the queue and responses): now private"),
        )),
        (None, None) => {}
    }
    match ledger.stale_reservations(now, &Owner::current()) {
        Ok(0) => {}
        Ok(n) => checks.push(Check::ok(
            "ledger_in_flight",
            format!("{n} reservation(s) left in flight by a run that stopped; the next `submit` reconciles them"),
        )),
        Err(e) => checks.push(Check::problem("ledger_in_flight", e.to_string(), "see the ledger error above")),
    }
    stranded_checks(settings, ledger.as_mut(), now, &mut checks);
    source_checks(settings, ledger.as_mut(), &mut checks);
    parked_checks(settings, ledger.as_mut(), now, true, &mut checks);
    checks
}

/// The properties' sources that cannot be read: a problem each, with since
/// when, the reason and the fix (from a ledger of schema 11 on).
fn source_checks(settings: &Settings, ledger: &mut dyn Ledger, checks: &mut Vec<Check>) {
    match crate::attention::source_notices(settings, ledger) {
        Ok(notices) => {
            let user_tz = crate::clock::user_timezone();
            for notice in notices {
                let message = format!("{}: {}", notice.title(), notice.summary(user_tz));
                let fix = format!("{}.{}", notice.fix.as_deref().unwrap_or_default(), notice.who());
                let mut check = Check::problem("source", message, fix);
                check.property = Some(notice.parked.group.property.clone());
                checks.push(check);
            }
        }
        Err(e) => checks.push(Check::problem("source", format!("{e:#}"), "see the ledger error above")),
    }
}

/// What needs a human in the configured groups: a problem each (group and
/// reason) — parked items and, from a ledger of schema 5 on (`sitemaps`),
/// what the engines' reports on the sitemaps submitted to them say — with
/// the fix and whether indexq notices it by itself.
fn parked_checks(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    now: chrono::DateTime<chrono::Utc>,
    sitemaps: bool,
    checks: &mut Vec<Check>,
) {
    let notices = if sitemaps {
        crate::attention::parked_notices(settings, ledger, now)
    } else {
        crate::attention::parked_item_notices(settings, ledger)
    };
    match notices {
        Ok(notices) => {
            let user_tz = crate::clock::user_timezone();
            for notice in notices {
                let fix = format!("{}{}", notice.fix.as_deref().unwrap_or_default(), notice.who());
                let group = &notice.parked.group;
                let (name, message) = match (notice.kind, group.sitemap_url()) {
                    (NoticeKind::SitemapReport, Some(sitemap)) => {
                        ("sitemap_report", format!("the sitemap {sitemap}: {}", notice.summary(user_tz)))
                    }
                    (_, Some(sitemap)) => ("parked", format!("the sitemap {sitemap}: {}", notice.summary(user_tz))),
                    (_, None) => ("parked", notice.summary(user_tz)),
                };
                let check = Check::problem(name, message, fix.trim_start().to_string());
                checks.push(check.about(&group.property, group.engine));
            }
        }
        Err(e) => checks.push(Check::problem("parked", format!("{e:#}"), "see the ledger error above")),
    }
}

/// The file's mode, if group or others have any permission on it.
fn loose_mode(path: &std::path::Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Queue items whose group the configuration no longer has: a problem each.
fn stranded_checks(
    settings: &Settings,
    ledger: &mut dyn Ledger,
    now: chrono::DateTime<chrono::Utc>,
    checks: &mut Vec<Check>,
) {
    match crate::attention::stranded_groups(settings, ledger, now) {
        Ok(stranded) => {
            for (group, counts) in stranded {
                checks.push(Check::problem(
                    "ledger_stranded",
                    format!(
                        "{}: {} queued, {} parked, {} in flight, under a property or endpoint no longer configured",
                        crate::output::printer::group_title(&group),
                        counts.due + counts.waiting,
                        counts.parked,
                        counts.in_flight
                    ),
                    crate::attention::stranded_hint(&group),
                ));
            }
        }
        Err(e) => checks.push(Check::problem("ledger_stranded", format!("{e:#}"), "see the ledger error above")),
    }
}

/// A PostgreSQL ledger: the connection, the schema version, the server's
/// clock against ours (windows are computed from time), and leases that
/// ended with their reservation still in flight.
fn postgres_checks(settings: &Settings, url: &str, now: chrono::DateTime<chrono::Utc>) -> Vec<Check> {
    let schema = &settings.ledger_options.schema;
    let fix = crate::ledger::PG_CONNECT_HINT;
    let mut ledger = match crate::ledger::connect_postgres(url, &settings.ledger_options) {
        Ok(l) => l,
        Err(e) => return vec![Check::problem("ledger", format!("{e:#}"), fix)],
    };
    let mut checks = vec![Check::ok("ledger", format!("{} (schema {schema}): connected", ledger.place()))];
    match ledger.stored_version() {
        Ok(None) => checks.push(Check::ok(
            "ledger_schema",
            format!(
                "schema {schema} has no indexq tables yet: the first run (or `indexq ledger migrate`) creates them"
            ),
        )),
        Ok(Some(v)) if v > PG_SCHEMA_VERSION => checks.push(Check::problem(
            "ledger_schema",
            format!("schema version {v} is newer than this indexq knows ({PG_SCHEMA_VERSION})"),
            "upgrade indexq on this machine (a newer version migrated the shared ledger)",
        )),
        Ok(Some(v)) => {
            checks.push(Check::ok("ledger_schema", format!("schema version {v}")));
            stranded_checks(settings, &mut ledger, now, &mut checks);
            // Reminders came with schema 3: an older shared ledger is migrated by the next run.
            if v >= 11 {
                source_checks(settings, &mut ledger, &mut checks);
            }
            if v >= 3 {
                parked_checks(settings, &mut ledger, now, v >= 5, &mut checks);
            }
        }
        Err(e) => checks.push(Check::problem("ledger_schema", e.to_string(), fix)),
    }
    // The wall clock, not a pinned one: skew is about this machine.
    match ledger.server_now() {
        Ok(server) => {
            let skew = (chrono::Utc::now() - server).num_milliseconds().abs() as f64 / 1000.0;
            if skew > 60.0 {
                checks.push(Check::problem(
                    "ledger_clock",
                    format!("this machine's clock is {skew:.0} s off the database server's"),
                    "windows and leases use the server's clock, but this machine's times (and the engines' checks of a signed token) are off: sync the clocks (NTP) of every machine that shares the ledger",
                ));
            } else {
                checks.push(Check::ok("ledger_clock", format!("clock within {skew:.1} s of the database server's")));
            }
        }
        Err(e) => checks.push(Check::problem("ledger_clock", e.to_string(), fix)),
    }
    if let Ok(reservations) = ledger.reservations() {
        for (owner, lease_until) in reservations.iter().filter(|(_, until)| *until <= now) {
            checks.push(Check::ok(
                "ledger_lease",
                format!(
                    "a reservation of {} (pid {}) has an expired lease (since {}): the next `submit` anywhere \
                     reconciles it",
                    owner.host, owner.pid, lease_until
                ),
            ));
        }
        let live = reservations.len() - reservations.iter().filter(|(_, until)| *until <= now).count();
        if live > 0 {
            checks.push(Check::ok("ledger_in_flight", format!("{live} reservation(s) in flight under a live lease")));
        }
    }
    checks
}
