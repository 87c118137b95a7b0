//! Search Console's sitemaps (`sitemaps.submit`, `get`, `list`): a
//! submission taken, the reports read, and the refusals.

use super::{
    api_not_used, excerpt, google_answered, google_error, google_failure, google_quota_text, google_structured_quota,
    http_status, quota_verdict, service_disabled, transient_answered, unrecognized_body, AcceptedReason, EngineKind,
    GoogleError, HttpStatus, MisconfiguredReason, Response, SitemapReading, TransientReason, Verdict,
};

/// What indexq knows about a Search Console sitemaps request
/// (`sitemaps.submit`, `get`, `list`) besides the response.
#[derive(Debug, Clone, Copy)]
pub struct SitemapsContext<'a> {
    /// The sitemap submitted or read (`feedpath`); empty for `list`.
    pub sitemap: &'a str,
    /// The Search Console property asked (`siteUrl`: `google.site_url`).
    pub site_url: &'a str,
    pub client_email: &'a str,
    pub project_id: &'a str,
}

/// Classifies Search Console's answer to `sitemaps.submit` (`PUT
/// …/webmasters/v3/sites/{siteUrl}/sitemaps/{feedpath}`, which answers an
/// empty body on success); its refusals are [`search_console_refusal`]'s.
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx, empty or JSON | accepted | `ok` |
/// | 2xx with any other body (HTML, cut off) | accepted | `unrecognized_body` |
/// | any other | as [`search_console_refusal`] | |
pub fn search_console_submit(resp: &Response, ctx: &SitemapsContext) -> Verdict {
    if (200..=299).contains(&resp.status) {
        let body = resp.body.trim();
        if !body.is_empty() && serde_json::from_str::<serde_json::Value>(body).is_err() {
            return unrecognized_body(EngineKind::Google, resp, "", "a body that is not Google's JSON");
        }
        return Verdict::new(
            AcceptedReason::Ok,
            format!(
                "Search Console took the sitemap {} for {} ({}).",
                ctx.sitemap,
                ctx.site_url,
                http_status(resp.status)
            ),
        );
    }
    search_console_refusal(resp, ctx)
}

/// Reads Search Console's answer to `sitemaps.get` (`GET
/// …/sites/{siteUrl}/sitemaps/{feedpath}`): the sitemap's report — its
/// documented resource `{"path", "lastSubmitted", "isPending",
/// "isSitemapsIndex", "type", "lastDownloaded", "warnings", "errors",
/// "contents": [{"type", "submitted", "indexed"}]}`, whose counts Google
/// sends as strings (int64) — or, for a 404, a sitemap Search Console does
/// not list. Any other answer is the refusal [`search_console_refusal`]
/// words; a 2xx that is not the resource is `accepted` /
/// `unrecognized_body` (no report was read).
pub fn search_console_report(resp: &Response, ctx: &SitemapsContext) -> Result<SitemapReading, Verdict> {
    if resp.status == 404 && google_error(resp.body).is_some() {
        return Ok(SitemapReading::default());
    }
    if !(200..=299).contains(&resp.status) {
        return Err(search_console_refusal(resp, ctx));
    }
    serde_json::from_str::<serde_json::Value>(resp.body.trim())
        .ok()
        .filter(|v| v.is_object())
        .map(|v| sitemap_resource(&v))
        .ok_or_else(|| unrecognized_body(EngineKind::Google, resp, "", "a body that is not Search Console's sitemap"))
}

/// Reads Search Console's answer to `sitemaps.list` (`GET
/// …/sites/{siteUrl}/sitemaps`): `{"sitemap": [resource, …]}` (the key is
/// absent when the property has none), each with its `path`.
pub fn search_console_list(resp: &Response, ctx: &SitemapsContext) -> Result<Vec<(String, SitemapReading)>, Verdict> {
    if !(200..=299).contains(&resp.status) {
        return Err(search_console_refusal(resp, ctx));
    }
    let value = serde_json::from_str::<serde_json::Value>(resp.body.trim())
        .ok()
        .filter(|v| v.is_object())
        .ok_or_else(|| unrecognized_body(EngineKind::Google, resp, "", "a body that is not Search Console's list"))?;
    Ok(value["sitemap"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| (s["path"].as_str().unwrap_or_default().to_string(), sitemap_resource(s)))
        .collect())
}

/// A Search Console sitemap resource, as indexq keeps it.
fn sitemap_resource(v: &serde_json::Value) -> SitemapReading {
    // int64 values come as strings ("12"); a number is read too.
    let count = |v: &serde_json::Value| v.as_u64().or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()));
    // `contents[]` has one entry per content type (web, image, video, news…):
    // a page count adds only the `web` entries, since an image or a video is
    // not a page and adding them made a sitemap of 12 pages read as 42 URLs.
    let web: Vec<u64> = v["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"].as_str().is_some_and(|t| t.eq_ignore_ascii_case("web")))
        .filter_map(|c| count(&c["submitted"]))
        .collect();
    let urls = (!web.is_empty()).then(|| web.iter().sum());
    SitemapReading {
        listed: true,
        submitted: v["lastSubmitted"].as_str().and_then(crate::classify::parse_time),
        downloaded: v["lastDownloaded"].as_str().and_then(crate::classify::parse_time),
        pending: v["isPending"].as_bool().unwrap_or(false),
        errors: count(&v["errors"]).unwrap_or(0),
        warnings: count(&v["warnings"]).unwrap_or(0),
        urls,
        status: v["type"].as_str().map(excerpt),
    }
}

/// Classifies a Search Console sitemaps refusal (any status but a 2xx),
/// structured fields first:
///
/// | answer | class | reason |
/// |---|---|---|
/// | 429, `RESOURCE_EXHAUSTED`, an ErrorInfo or legacy quota reason | quota | `daily_quota` when a per-day limit is named; else `rate_limited` / `quota` (a minute: `Retry-After`, else [`GOOGLE_SHORT_WAIT`](super::GOOGLE_SHORT_WAIT) s) |
/// | `INTERNAL`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`; other 5xx; 408 | transient | as [`google()`](super::google()) |
/// | ErrorInfo `SERVICE_DISABLED` (or that status, or `accessNotConfigured`); a 403 without ErrorInfo saying the API "has not been used in project" | misconfigured | `api_disabled` (the Google Search Console API) |
/// | 403 "User does not have sufficient permission for site" (or "You do not own this site") | misconfigured | `not_property_user`: add the service account as an Owner or Full user of that exact property (the `sc-domain:` hint for a URL-prefix `site_url`) |
/// | 404 | misconfigured | `property_not_found`: no such property in Search Console under that name |
/// | 401 or `UNAUTHENTICATED` | misconfigured | `unauthenticated` |
/// | 400 or `INVALID_ARGUMENT` | misconfigured | `invalid_argument` |
/// | other 403 or `PERMISSION_DENIED` (e.g. "Request had insufficient authentication scopes") | misconfigured | `permission_denied` |
/// | other 3xx, 4xx | misconfigured | `http_<status>` |
/// | anything else (1xx, ≥ 600) | transient | `unexpected_status` |
pub fn search_console_refusal(resp: &Response, ctx: &SitemapsContext) -> Verdict {
    let status = resp.status;
    let error = google_error(resp.body);
    let error = error.as_ref();
    let g_status = error.map_or("", |e| e.status.as_str());
    let answered = google_answered(resp, error).replacen("Google answered", "Search Console answered", 1);
    let (site, email, project) = (ctx.site_url, ctx.client_email, ctx.project_id);
    if status == 429
        || g_status == "RESOURCE_EXHAUSTED"
        || google_structured_quota(error)
        || google_quota_text(status, error)
    {
        return sitemaps_quota(resp, error, &answered, email);
    }
    if let Some(reason) = google_failure(status, g_status) {
        return transient_answered(resp, &answered, reason, "Google failed on its side");
    }
    let forbidden = status == 403 || g_status == "PERMISSION_DENIED";
    let client_error = (400..=499).contains(&status);
    let message = error.map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    let disabled = service_disabled(error) || api_not_used(forbidden, error, &message);
    if (client_error || forbidden) && disabled {
        return Verdict::misconfigured(
            MisconfiguredReason::ApiDisabled,
            format!("{answered}: the Google Search Console API is not enabled for the Google Cloud project {project}."),
            format!(
                "Enable the Google Search Console API (searchconsole.googleapis.com) for the project {project} in \
                 the Google Cloud console (APIs & Services → Library), wait a few minutes; `indexq doctor` checks it."
            ),
        );
    }
    // "User does not have sufficient permission for site 'https://…/'. See
    // also: https://support.google.com/webmasters/answer/2451999." (403,
    // `errors[].reason` "forbidden", no ErrorInfo: googleapis/
    // google-api-ruby-client issue 206, fixture
    // `google-sitemaps-403-permission`), and the inspection API's wording
    // of the same.
    let not_user = message.contains("does not have sufficient permission for site")
        || message.contains("you do not own this site");
    if forbidden && not_user {
        return Verdict::misconfigured(
            MisconfiguredReason::NotPropertyUser,
            format!("{answered}: {email} is no Owner or Full user of the Search Console property {site}."),
            sitemaps_owner_hint(site, email),
        );
    }
    search_console_refused_by_status(resp, ctx, forbidden, g_status, &answered)
}

/// A sitemaps request refused, by its status: 401, 404 (no such property),
/// 400, another 403, another 3xx or 4xx; anything else is a status no
/// engine documents.
fn search_console_refused_by_status(
    resp: &Response,
    ctx: &SitemapsContext,
    forbidden: bool,
    g_status: &str,
    answered: &str,
) -> Verdict {
    let status = resp.status;
    let (sitemap, site, email, project) = (ctx.sitemap, ctx.site_url, ctx.client_email, ctx.project_id);
    let what = if sitemap.is_empty() { format!("the sitemaps of {site}") } else { format!("the sitemap {sitemap}") };
    if status == 401 || g_status == "UNAUTHENTICATED" {
        return Verdict::misconfigured(
            MisconfiguredReason::Unauthenticated,
            format!("{answered}: Google did not accept the access token of {email} for Search Console."),
            format!(
                "Check that the service account {email} and its key still exist and are enabled in the project \
                 {project}, and that the machine's clock is right."
            ),
        );
    }
    if status == 404 {
        return Verdict::misconfigured(
            MisconfiguredReason::PropertyNotFound,
            format!("{answered}: Search Console has no property {site} to take {what}."),
            format!(
                "Set the property's `google.site_url` to the property exactly as Search Console lists it — a \
                 URL-prefix property with its scheme and trailing slash (`https://example.com/`), a Domain property \
                 as `sc-domain:example.com` — and check `inspection_endpoint` in `[google]` \
                 (https://searchconsole.googleapis.com), which serves the sitemaps too; add {email} to that property \
                 as an Owner or Full user."
            ),
        );
    }
    if status == 400 || g_status == "INVALID_ARGUMENT" {
        return Verdict::misconfigured(
            MisconfiguredReason::InvalidArgument,
            format!("{answered}: Search Console refused {what} for {site} as invalid."),
            format!(
                "Check the property's `google.site_url` ({site}: `https://example.com/` with its trailing slash, or \
                 `sc-domain:example.com`) and that the sitemap's URL is a complete http(s) URL within that property."
            ),
        );
    }
    if forbidden {
        return Verdict::misconfigured(
            MisconfiguredReason::PermissionDenied,
            format!("{answered}: Google denied {email} {what} of {site}."),
            sitemaps_owner_hint(site, email),
        );
    }
    if (300..=499).contains(&status) {
        return Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: Search Console refused the request, and waiting will not change that."),
            "Check `inspection_endpoint` in `[google]` (https://searchconsole.googleapis.com): it serves the \
             sitemaps too.",
        );
    }
    transient_answered(resp, answered, TransientReason::UnexpectedStatus, "no engine documents that status")
}

/// The fix for a sitemaps request Google refused as not the property's:
/// the service account as an Owner or Full user of that exact property,
/// with the `sc-domain:` form when `site_url` is a URL prefix.
fn sitemaps_owner_hint(site: &str, email: &str) -> String {
    let mut hint = format!(
        "Add {email} as an Owner or Full user of the Search Console property {site} (Settings → Users and \
         permissions) — that exact property: a URL-prefix property and a Domain property are two properties — and \
         check that the property's `google.site_url` names it as Search Console lists it."
    );
    if let Some(host) = url::Url::parse(site)
        .ok()
        .filter(|u| u.scheme().starts_with("http"))
        .and_then(|u| u.host_str().map(|h| h.strip_prefix("www.").unwrap_or(h).to_string()))
    {
        hint.push_str(&format!(
            " `{site}` is a URL-prefix property: if the site is verified as a Domain property, set \
             `site_url = \"sc-domain:{host}\"` in the property's google table."
        ));
    }
    hint
}

/// A Search Console quota answer for sitemaps: its limits are per user (the
/// service account), 200 requests a minute; a per-day limit named is the
/// day's (until Pacific midnight), anything else a minute's.
fn sitemaps_quota(resp: &Response, error: Option<&GoogleError>, answered: &str, email: &str) -> Verdict {
    quota_verdict(
        resp,
        error,
        || format!("{answered}: a daily Search Console quota of {email} is used; indexq waits for the next day."),
        |_, when| format!("{answered}: Search Console's per-user limit of {email} is reached. indexq retries {when}."),
    )
}
