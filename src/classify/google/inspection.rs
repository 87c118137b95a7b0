//! The URL Inspection API (`urlInspection/index:inspect`, for
//! `skip_indexed`): what Google says of a URL's index status, and its
//! refusals.

use super::{
    api_not_used, excerpt, google_answered, google_error, google_failure, google_quota_text, google_structured_quota,
    quota_verdict, service_disabled, AcceptedReason, GoogleError, HttpStatus, MisconfiguredReason, Response,
    TransientReason, Verdict,
};

/// What indexq knows about a URL inspection besides the response.
#[derive(Debug, Clone, Copy)]
pub struct InspectionContext<'a> {
    /// The URL inspected (`inspectionUrl`).
    pub url: &'a str,
    /// The Search Console property asked (`siteUrl`: the property's
    /// `google.site_url`, `https://…/` or `sc-domain:…`).
    pub site_url: &'a str,
    pub client_email: &'a str,
    pub project_id: &'a str,
}

/// Classifies a URL Inspection API answer (`urlInspection/index:inspect`,
/// for `skip_indexed`). The classes are any answer's; what indexq does with
/// them (publish anyway, or stop inspecting for a while) is the caller's:
/// the messages say what Google said, not what happens next.
///
/// | answer | class | reason |
/// |---|---|---|
/// | 2xx whose `inspectionResult.indexStatusResult.verdict` is `PASS` | accepted | `already_indexed` |
/// | other 2xx | accepted | `ok` (not indexed, or nothing said) |
/// | 429, `RESOURCE_EXHAUSTED`, an ErrorInfo quota reason or a legacy quota reason, naming a per-day limit | quota | `daily_quota`: window [`Period::Day`](crate::model::Period::Day) |
/// | the same, naming a per-minute limit, or none ("Quota exceeded for sc-domain:….") | quota | `rate_limited` / `quota`: window [`Period::Minute`](crate::model::Period::Minute), `Retry-After`, else [`GOOGLE_SHORT_WAIT`](super::GOOGLE_SHORT_WAIT) s |
/// | `INTERNAL`, `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`; other 5xx; 408 | transient | as [`google()`](super::google()) |
/// | the ErrorInfo reason `SERVICE_DISABLED` (or that status, or `accessNotConfigured`); a 403 without ErrorInfo saying the API "has not been used in project" | misconfigured | `api_disabled` (the Google Search Console API) |
/// | 403 "You do not own this site, or the inspected URL is not part of this property" or "User does not have sufficient permission for site" | misconfigured | `inspection_not_owner` (with the `sc-domain:` hint for a URL-prefix `site_url`) |
/// | 401 or `UNAUTHENTICATED` | misconfigured | `unauthenticated` |
/// | 400 or `INVALID_ARGUMENT` | misconfigured | `invalid_argument` |
/// | other 403 or `PERMISSION_DENIED` | misconfigured | `permission_denied` |
/// | other 3xx, 4xx | misconfigured | `http_<status>` |
/// | anything else (1xx, ≥ 600) | transient | `unexpected_status` |
pub fn google_inspection(resp: &Response, ctx: &InspectionContext) -> Verdict {
    let status = resp.status;
    let error = google_error(resp.body);
    let error = error.as_ref();
    let g_status = error.map_or("", |e| e.status.as_str());
    let answered = google_answered(resp, error).replacen("Google answered", "The URL Inspection API answered", 1);
    if (200..=299).contains(&status) {
        return inspection_result(resp, ctx.url, &answered);
    }
    if status == 429
        || g_status == "RESOURCE_EXHAUSTED"
        || google_structured_quota(error)
        || google_quota_text(status, error)
    {
        return inspection_quota(resp, error, &answered, ctx.site_url);
    }
    if let Some(reason) = google_failure(status, g_status) {
        return Verdict {
            retry_after: resp.retry_after(),
            ..Verdict::new(reason, format!("{answered}: Google failed on its side"))
        };
    }
    inspection_refused(resp, ctx, error, &answered)
}

/// What an inspection answered 2xx says of the URL. The documented result:
/// {"inspectionResult": {"indexStatusResult": {"verdict": "PASS" |
/// "PARTIAL" | "FAIL" | "NEUTRAL" | …, "coverageState": …}}}.
fn inspection_result(resp: &Response, url: &str, answered: &str) -> Verdict {
    let result = serde_json::from_str::<serde_json::Value>(resp.body.trim()).ok();
    let index = result.as_ref().map(|v| &v["inspectionResult"]["indexStatusResult"]);
    let said = |key: &str| index.and_then(|i| i[key].as_str()).map(excerpt);
    let coverage = said("coverageState").map(|c| format!(", \"{c}\"")).unwrap_or_default();
    match said("verdict") {
        Some(verdict) if verdict == "PASS" => Verdict::new(
            AcceptedReason::AlreadyIndexed,
            format!("the URL Inspection API says Google has indexed {url} (PASS{coverage})"),
        ),
        Some(verdict) => Verdict::new(
            AcceptedReason::Ok,
            format!("the URL Inspection API says {url} is not indexed ({verdict}{coverage})"),
        ),
        None => Verdict::new(
            AcceptedReason::Ok,
            format!("{answered} without an index status for {url}: it is taken as not indexed"),
        ),
    }
}

/// An inspection refused for what waiting will not change: the API
/// disabled, the URL not in a property the service account may inspect, or
/// by status ([`inspection_refused_by_status`]).
fn inspection_refused(
    resp: &Response,
    ctx: &InspectionContext,
    error: Option<&GoogleError>,
    answered: &str,
) -> Verdict {
    let status = resp.status;
    let (url, site, email, project) = (ctx.url, ctx.site_url, ctx.client_email, ctx.project_id);
    let g_status = error.map_or("", |e| e.status.as_str());
    let forbidden = status == 403 || g_status == "PERMISSION_DENIED";
    let client_error = (400..=499).contains(&status);
    let message = error.map(|e| e.message.to_ascii_lowercase()).unwrap_or_default();
    // The ErrorInfo reason, the status or the legacy reason first; a 403
    // without ErrorInfo whose message is "Google Search Console API has not
    // been used in project 311386532115 before or it is disabled. Enable it
    // by visiting …" (googleworkspace/apps-script-oauth2 issue 443, fixture
    // `google-inspection-403-api-disabled`) only then.
    let disabled = service_disabled(error) || api_not_used(forbidden, error, &message);
    if (client_error || forbidden) && disabled {
        return Verdict::misconfigured(
            MisconfiguredReason::ApiDisabled,
            format!("{answered}: the Google Search Console API is not enabled for the Google Cloud project {project}"),
            format!(
                "Enable the Google Search Console API (searchconsole.googleapis.com) for the project {project} in \
                 the Google Cloud console (APIs & Services → Library), wait a few minutes; `indexq doctor` checks it."
            ),
        );
    }
    // "You do not own this site, or the inspected URL is not part of this
    // property." (403 PERMISSION_DENIED, goenning/google-indexing-script
    // issue 52, fixture `google-inspection-403-not-owner`: a service account
    // that is no user of the property, or a `siteUrl` that names another
    // property than the one the URL is in), and the Search Console API's
    // "User does not have sufficient permission for site '…'." — both with
    // no ErrorInfo reason of their own.
    let not_owner = message.contains("you do not own this site")
        || message.contains("not part of this property")
        || message.contains("does not have sufficient permission for site");
    if forbidden && not_owner {
        return Verdict::misconfigured(
            MisconfiguredReason::InspectionNotOwner,
            format!("{answered}: Google does not let {email} inspect {url} in the Search Console property {site}"),
            inspection_owner_hint(site, email),
        );
    }
    inspection_refused_by_status(status, ctx, forbidden, g_status, answered)
}

/// An inspection refused, by its status: 401, 400, another 403, another
/// 3xx or 4xx; anything else is a status no engine documents.
fn inspection_refused_by_status(
    status: u16,
    ctx: &InspectionContext,
    forbidden: bool,
    g_status: &str,
    answered: &str,
) -> Verdict {
    let (url, site, email, project) = (ctx.url, ctx.site_url, ctx.client_email, ctx.project_id);
    if status == 401 || g_status == "UNAUTHENTICATED" {
        return Verdict::misconfigured(
            MisconfiguredReason::Unauthenticated,
            format!("{answered}: Google did not accept the access token of {email} for URL inspection"),
            format!(
                "Check that the service account {email} and its key still exist and are enabled in the project \
                 {project}, and that the machine's clock is right."
            ),
        );
    }
    if status == 400 || g_status == "INVALID_ARGUMENT" {
        return Verdict::misconfigured(
            MisconfiguredReason::InvalidArgument,
            format!("{answered}: Google refused to inspect {url} in {site} as invalid"),
            format!(
                "Check the property's `google.site_url` ({site}): it must name the Search Console property exactly \
                 as Search Console does (`https://example.com/` with its trailing slash, or `sc-domain:example.com`), \
                 and {url} must be in it."
            ),
        );
    }
    if forbidden {
        return Verdict::misconfigured(
            MisconfiguredReason::PermissionDenied,
            format!("{answered}: Google denied {email} the inspection of {url}"),
            inspection_owner_hint(site, email),
        );
    }
    if (300..=499).contains(&status) {
        return Verdict::misconfigured(
            MisconfiguredReason::Http(HttpStatus(status)),
            format!("{answered}: the URL Inspection API refused the request"),
            "Check `inspection_endpoint` in `[google]` (https://searchconsole.googleapis.com).",
        );
    }
    Verdict::new(TransientReason::UnexpectedStatus, format!("{answered}: no engine documents that status"))
}

/// The fix for an inspection Google refused as not the property's: add the
/// service account to the property, and name the property as Search
/// Console does — with the `sc-domain:` form when `site_url` is a URL
/// prefix, the usual mistake for a Domain property.
fn inspection_owner_hint(site: &str, email: &str) -> String {
    let mut hint = format!(
        "Add {email} as a user (an Owner, which publishing needs too) of the Search Console property {site} \
         (Settings → Users and permissions), and check that the property's `google.site_url` names that property \
         exactly as Search Console lists it."
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

/// An inspection quota answer. Google's per-property limits on URL
/// inspections are 2,000 a day and 600 a minute; its answer often names
/// neither — `429 RESOURCE_EXHAUSTED "Quota exceeded for sc-domain:….`"
/// (goenning/google-indexing-script issue 45, fixture
/// `google-inspection-429-quota`) — and is then taken as the minute's, as a
/// publish's is: a wrong guess costs an inspection a minute, never a day of
/// inspections.
fn inspection_quota(resp: &Response, error: Option<&GoogleError>, answered: &str, site: &str) -> Verdict {
    quota_verdict(
        resp,
        error,
        || format!("{answered}: the daily URL inspection quota of {site} is used (it resets at midnight Pacific time)"),
        |minute, _| {
            let what = match minute {
                true => "the per-minute URL inspection limit",
                false => "a URL inspection quota (Google did not say which)",
            };
            format!("{answered}: {what} of {site} is used")
        },
    )
}
