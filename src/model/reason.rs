//! Why a URL got its outcome: one enum per class of answer (README, *What each answer means*),
//! one for the outcomes decided on this machine, and [`Reason`], any of
//! them. The text of each reason is its name in `--json`, in the ledger and
//! in `log`; a text this indexq does not know does not parse (the ledger
//! reports it), it never becomes a default.
//!
//! Where a reason names an engine's own code (a Bing `ErrorCode`, an OAuth2
//! error) it carries that code typed ([`BingCode`], [`TokenError`]); an HTTP
//! status it names is [`HttpStatus`] (`http_418`) or [`TokenHttpStatus`]
//! (`token_http_400`).

use super::outcome::Class;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A reason enum: unit variants with their names, then variants carrying a
/// value whose own `Display`/`FromStr` is the whole name (tried in order).
macro_rules! reason_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$unit_meta:meta])* $unit:ident = $text:literal,)*
            $(; $($(#[$data_meta:meta])* $data:ident($ty:ty),)*)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$unit_meta])* $unit,)*
            $($($(#[$data_meta])* $data($ty),)*)?
        }

        impl $name {
            /// The variants without a value.
            #[cfg(test)]
            pub const NAMED: &'static [$name] = &[$($name::$unit,)*];
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $($name::$unit => f.write_str($text),)*
                    $($($name::$data(value) => fmt::Display::fmt(value, f),)*)?
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownReason;
            fn from_str(s: &str) -> Result<Self, UnknownReason> {
                match s {
                    $($text => return Ok($name::$unit),)*
                    _ => {}
                }
                $($(if let Ok(value) = s.parse::<$ty>() {
                    return Ok($name::$data(value));
                })*)?
                Err(UnknownReason(s.to_string()))
            }
        }
    };
}

/// A cause of parked items that indexq can check by itself, without
/// spending quota, to notice that a human fixed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    /// The IndexNow key file: fetched and compared with the key.
    KeyFile,
    /// Bing's API key: Bing's quota read with it; Yandex's OAuth token,
    /// its user and its host: Yandex's recrawl quota read with them.
    ApiKey,
    /// Google's service-account key: an access token asked for.
    Token,
    /// What an engine reports of a sitemap it was given (Search Console's
    /// `sitemaps.get`, Bing's `GetFeeds`): read again every `[sitemap]
    /// read_interval`, it spends no submission.
    SitemapReport,
}

impl Check {
    /// What is checked, for a person.
    pub fn what(self) -> &'static str {
        match self {
            Check::KeyFile => "the key file",
            Check::ApiKey => "the API key",
            Check::Token => "the service-account key",
            Check::SitemapReport => "the engine's report on the sitemap",
        }
    }
}

/// A reason text this indexq does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownReason(pub String);

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown reason `{}`", self.0)
    }
}

reason_enum! {
    /// Why an answer is `accepted`.
    pub enum AcceptedReason {
        Ok = "ok",
        /// IndexNow answered 202: accepted, the key not validated yet.
        KeyValidationPending = "key_validation_pending",
        /// The URL Inspection API says Google has indexed the URL: not published.
        AlreadyIndexed = "already_indexed",
        /// A 2xx whose body is not the engine's own (an HTML page from a
        /// proxy or captive portal, an empty or cut-off body): counted as
        /// accepted, the body kept, the run's report says how many.
        UnrecognizedBody = "unrecognized_body",
        /// Google answered a publish 200 without the notification it was
        /// sent (`latestUpdate`, `latestRemove`): received, nothing said of
        /// acting on it (pages the Indexing API is not documented for).
        Received = "received",
        /// Yandex's recrawl queue answered 409: the URL was already added
        /// for reindexing (its reference: "The URL was already added for
        /// reindexing"), so the crawl asked for is coming.
        AlreadyAdded = "already_added",
        ;
        /// Bing's 12 `AlreadyExists`.
        Bing(BingCode),
    }
}

reason_enum! {
    /// Why an answer is `quota`.
    pub enum QuotaReason {
        DailyQuota = "daily_quota",
        MonthlyQuota = "monthly_quota",
        /// A per-minute limit or a throttle (HTTP 429).
        RateLimited = "rate_limited",
        /// A quota the engine did not name.
        Quota = "quota",
        /// The request was larger than what is left of a window the engine
        /// named, and it said how much is left (Bing's "Quota remaining for
        /// today: 10, Submitted: 32"): that much goes again at once.
        PartialQuota = "partial_quota",
        /// Baidu's `{"error": 400, "message": "over quota"}`: today's push
        /// quota is used.
        OverQuota = "over_quota",
        /// Yandex's 429 `QUOTA_EXCEEDED`: the host's daily recrawl quota is used.
        QuotaExceeded = "QUOTA_EXCEEDED",
        ;
        /// Bing's 4 `ThrottleUser`, 5 `ThrottleHost`.
        Bing(BingCode),
    }
}

reason_enum! {
    /// Why an answer (or its absence) is `transient`.
    pub enum TransientReason {
        Timeout = "timeout",
        Connect = "connect",
        Network = "network",
        /// HTTP 408.
        RequestTimeout = "http_408",
        ServerError = "server_error",
        /// A status no engine documents (1xx, ≥ 600).
        UnexpectedStatus = "unexpected_status",
        /// Google's `error.status`, lower-cased.
        Internal = "internal",
        Unavailable = "unavailable",
        DeadlineExceeded = "deadline_exceeded",
        Aborted = "aborted",
        /// Google's token endpoint failed (429, 5xx, 408).
        TokenServerError = "token_server_error",
        /// Google's token endpoint answered 200 without a token.
        TokenUnreadable = "token_unreadable",
        /// The run that sent the request stopped before its answer came.
        Interrupted = "interrupted",
        ;
        /// A Bing `ErrorCode` answered with a 5xx, or 1 `InternalError`, 15 `UnexpectedState`.
        Bing(BingCode),
    }
}

reason_enum! {
    /// Why an answer is `key_pending`.
    pub enum KeyPendingReason {
        /// The key file serves exactly the key; IndexNow has not fetched it yet.
        KeyPending = "key_pending",
    }
}

reason_enum! {
    /// Why an answer is `misconfigured`, or why the scheduler parked an item.
    pub enum MisconfiguredReason {
        BadRequest = "bad_request",
        Forbidden = "forbidden",
        TooLarge = "too_large",
        UrlNotOnHost = "url_not_on_host",
        Redirect = "redirect",
        KeyFileUnreachable = "key_file_unreachable",
        KeyFileMissing = "key_file_missing",
        KeyFileStatus = "key_file_status",
        KeyFileWrong = "key_file_wrong",
        KeyFileBom = "key_file_bom",
        KeyFileHtml = "key_file_html",
        /// IndexNow refused the `keyLocation` itself (a 400 whose
        /// `details[].target` is `keyLocation`).
        KeyLocationInvalid = "key_location_invalid",
        ApiDisabled = "api_disabled",
        OwnershipNotVerified = "ownership_not_verified",
        Unauthenticated = "unauthenticated",
        InvalidArgument = "invalid_argument",
        PermissionDenied = "permission_denied",
        /// The service-account key cannot sign a token request.
        BadKey = "bad_key",
        /// The URL Inspection API: "You do not own this site, or the
        /// inspected URL is not part of this property" (not an owner, or
        /// `site_url` names another property).
        InspectionNotOwner = "inspection_not_owner",
        /// Search Console refused a sitemap request (`sitemaps.submit`,
        /// `get`, `list`): "User does not have sufficient permission for
        /// site": the service account is no Owner or Full user of that
        /// exact property (`site_url`).
        NotPropertyUser = "not_property_user",
        /// A sitemap request for a property the engine does not have under
        /// that name (Search Console's 404, Bing's 404).
        PropertyNotFound = "property_not_found",
        /// The engine read the sitemap and reports errors in it.
        SitemapErrors = "sitemap_errors",
        /// The engine has not downloaded the sitemap within `[sitemap]
        /// download_deadline` after its submission.
        SitemapNotDownloaded = "sitemap_not_downloaded",
        /// The property has no configuration for the engine any more.
        NotConfigured = "not_configured",
        /// Transient past its deadline (the scheduler).
        GaveUp = "gave_up",
        /// `key_pending` past its deadline (the scheduler).
        KeyNeverAccepted = "key_never_accepted",
        /// `key_pending` past its deadline, IndexNow's answer being 403
        /// `UserForbiddedToAccessSite` (the scheduler).
        UserForbidden = "user_forbidden",
        /// Baidu's `site error`: the site is not verified in 搜索资源平台
        /// for this token (or `baidu.site` names it otherwise).
        SiteError = "site_error",
        /// Baidu's 401 `token is not valid`.
        TokenNotValid = "token_not_valid",
        /// A URL Baidu listed in `not_same_site`: not of the pushed site.
        NotSameSite = "not_same_site",
        /// A URL Baidu listed in `not_valid`: one it does not take.
        NotValid = "not_valid",
        /// Yandex's 400 `INVALID_URL`: "Wrong URL was passed".
        YandexInvalidUrl = "INVALID_URL",
        /// Yandex's 404 `HOST_NOT_VERIFIED`: site management rights are not
        /// verified (or the host is not in the user's list).
        HostNotVerified = "HOST_NOT_VERIFIED",
        /// Yandex's 403 `INVALID_USER_ID`: the token's user is another.
        InvalidUserId = "INVALID_USER_ID",
        ;
        Http(HttpStatus),
        TokenHttp(TokenHttpStatus),
        Token(TokenError),
        Bing(BingCode),
    }
}

impl MisconfiguredReason {
    /// What indexq checks by itself to notice that this cause was fixed:
    /// the key file for the key file's answers, the key or the token for a
    /// refused credential. Causes in an answer about the URLs themselves
    /// (a 400, a 422, a permission) cannot be checked without sending.
    pub fn check(self) -> Option<Check> {
        use MisconfiguredReason::{
            BadKey, Bing, HostNotVerified, InvalidUserId, KeyFileBom, KeyFileHtml, KeyFileMissing, KeyFileStatus,
            KeyFileUnreachable, KeyFileWrong, SitemapErrors, SitemapNotDownloaded, Token, TokenHttp,
        };
        match self {
            KeyFileUnreachable | KeyFileMissing | KeyFileStatus | KeyFileWrong | KeyFileBom | KeyFileHtml => {
                Some(Check::KeyFile)
            }
            Bing(BingCode::InvalidApiKey) | HostNotVerified | InvalidUserId => Some(Check::ApiKey),
            Token(_) | TokenHttp(_) | BadKey => Some(Check::Token),
            SitemapErrors | SitemapNotDownloaded => Some(Check::SitemapReport),
            _ => None,
        }
    }
}

reason_enum! {
    /// Why a URL got an outcome decided on this machine: deferred, skipped or
    /// invalid, or a queue item shown without an answer of its own.
    pub enum LocalReason {
        /// Deferred: the budget of this run has no room.
        Budget = "budget",
        /// Deferred: pacing spreads the rest of the window.
        Paced = "paced",
        /// Deferred: another run is sending it.
        InFlight = "in_flight",
        /// Deferred: waiting in the queue, no answer yet.
        Queued = "queued",
        /// Parked by an earlier run (no answer recorded).
        Parked = "parked",
        /// Skipped: not changed since it was accepted (`--changed`).
        Unchanged = "unchanged",
        /// Skipped: accepted within the dedupe window.
        AlreadyAccepted = "already_accepted",
        /// Invalid: the line is no URL indexq sends.
        InvalidUrl = "invalid_url",
        /// Invalid: no property covers the URL.
        NoProperty = "no_property",
        /// Invalid for IndexNow only: the URL is outside the folder of the
        /// property's `key_location`, the only URLs that key vouches for.
        OutsideKeyLocation = "outside_key_location",
        /// Invalid: a sitemap could not be read.
        Sitemap = "sitemap",
        /// Invalid: a URL-list file of a property's `sources` could not be read.
        Unreadable = "unreadable",
        /// A property's source (`sources`) answered 404 or 410.
        SourceNotFound = "source_not_found",
        /// A property's source answered another 4xx (401, 403, …).
        SourceRefused = "source_refused",
        /// A property's source answered 5xx.
        SourceServerError = "source_server_error",
        /// A property's source did not answer within `[http] timeout`.
        SourceTimeout = "source_timeout",
        /// A property's source's host name did not resolve.
        SourceDns = "source_dns",
        /// The TLS handshake with a property's source failed (its certificate, its protocol).
        SourceTls = "source_tls",
        /// A property's source could not be reached otherwise (connection
        /// refused or reset, a redirect refused, a body cut off).
        SourceUnreachable = "source_unreachable",
        /// A property's source redirects to a host or an address it may not
        /// reach (`fetch_hosts`, the address rule): not fetched.
        SourceNotAllowed = "source_not_allowed",
        /// A property's source answered, but with no sitemap, feed or URL list.
        SourceNotASitemap = "source_not_a_sitemap",
        /// A property's source is a local file that could not be read.
        SourceUnreadable = "source_unreadable",
    }
}

/// Any reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    Accepted(AcceptedReason),
    Quota(QuotaReason),
    Transient(TransientReason),
    KeyPending(KeyPendingReason),
    Misconfigured(MisconfiguredReason),
    Local(LocalReason),
}

impl Reason {
    /// The class of answer the reason belongs to (none for a local one).
    pub fn class(self) -> Option<Class> {
        Some(match self {
            Reason::Accepted(_) => Class::Accepted,
            Reason::Quota(_) => Class::Quota,
            Reason::Transient(_) => Class::Transient,
            Reason::KeyPending(_) => Class::KeyPending,
            Reason::Misconfigured(_) => Class::Misconfigured,
            Reason::Local(_) => return None,
        })
    }

    /// The Bing `ErrorCode` the reason names, whatever its class.
    pub fn bing_code(self) -> Option<BingCode> {
        match self {
            Reason::Accepted(AcceptedReason::Bing(code))
            | Reason::Quota(QuotaReason::Bing(code))
            | Reason::Transient(TransientReason::Bing(code))
            | Reason::Misconfigured(MisconfiguredReason::Bing(code)) => Some(code),
            _ => None,
        }
    }

    /// A reason stored beside its class (the ledger's requests).
    pub fn of_class(class: Class, text: &str) -> Result<Reason, UnknownReason> {
        Ok(match class {
            Class::Accepted => Reason::Accepted(text.parse()?),
            Class::Quota => Reason::Quota(text.parse()?),
            Class::Transient => Reason::Transient(text.parse()?),
            Class::KeyPending => Reason::KeyPending(text.parse()?),
            Class::Misconfigured => Reason::Misconfigured(text.parse()?),
        })
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Accepted(r) => r.fmt(f),
            Reason::Quota(r) => r.fmt(f),
            Reason::Transient(r) => r.fmt(f),
            Reason::KeyPending(r) => r.fmt(f),
            Reason::Misconfigured(r) => r.fmt(f),
            Reason::Local(r) => r.fmt(f),
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The reason enum of one class of answer: what a verdict of that class
/// may give as its reason.
pub trait ClassReason: Into<Reason> + Copy {
    const CLASS: Class;
}

macro_rules! into_reason {
    ($($ty:ident => $variant:ident),*) => {$(
        impl From<$ty> for Reason {
            fn from(reason: $ty) -> Reason {
                Reason::$variant(reason)
            }
        }
    )*};
}

macro_rules! class_reason {
    ($($ty:ident => $variant:ident),*) => {$(
        impl ClassReason for $ty {
            const CLASS: Class = Class::$variant;
        }
    )*};
}

into_reason!(
    AcceptedReason => Accepted,
    QuotaReason => Quota,
    TransientReason => Transient,
    KeyPendingReason => KeyPending,
    MisconfiguredReason => Misconfigured,
    LocalReason => Local
);

class_reason!(
    AcceptedReason => Accepted,
    QuotaReason => Quota,
    TransientReason => Transient,
    KeyPendingReason => KeyPending,
    MisconfiguredReason => Misconfigured
);

/// An HTTP status named by a reason: `http_418`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HttpStatus(pub u16);

/// A status of Google's token endpoint named by a reason: `token_http_400`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenHttpStatus(pub u16);

impl fmt::Display for HttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http_{}", self.0)
    }
}

impl fmt::Display for TokenHttpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "token_http_{}", self.0)
    }
}

/// `prefix` then a status of three digits.
fn status_after(text: &str, prefix: &str) -> Result<u16, UnknownReason> {
    text.strip_prefix(prefix)
        .filter(|digits| digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| UnknownReason(text.to_string()))
}

impl FromStr for HttpStatus {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, UnknownReason> {
        status_after(s, "http_").map(HttpStatus)
    }
}

impl FromStr for TokenHttpStatus {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, UnknownReason> {
        status_after(s, "token_http_").map(TokenHttpStatus)
    }
}

/// Bing's `ApiErrorCode` values (0 to 16, as Bing documents them), named as Bing names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BingCode {
    None,
    InternalError,
    UnknownError,
    InvalidApiKey,
    ThrottleUser,
    ThrottleHost,
    UserBlocked,
    InvalidUrl,
    InvalidParameter,
    TooManySites,
    UserNotFound,
    NotFound,
    AlreadyExists,
    NotAllowed,
    NotAuthorized,
    UnexpectedState,
    Deprecated,
    /// A code Bing has not documented.
    UnknownErrorCode,
}

impl BingCode {
    /// The documented codes, by number (0 to 16).
    const DOCUMENTED: [BingCode; 17] = [
        BingCode::None,
        BingCode::InternalError,
        BingCode::UnknownError,
        BingCode::InvalidApiKey,
        BingCode::ThrottleUser,
        BingCode::ThrottleHost,
        BingCode::UserBlocked,
        BingCode::InvalidUrl,
        BingCode::InvalidParameter,
        BingCode::TooManySites,
        BingCode::UserNotFound,
        BingCode::NotFound,
        BingCode::AlreadyExists,
        BingCode::NotAllowed,
        BingCode::NotAuthorized,
        BingCode::UnexpectedState,
        BingCode::Deprecated,
    ];

    /// The code Bing sent as `ErrorCode`.
    pub fn from_number(code: i64) -> BingCode {
        usize::try_from(code).ok().and_then(|i| Self::DOCUMENTED.get(i).copied()).unwrap_or(BingCode::UnknownErrorCode)
    }

    /// Every name a reason may carry: the documented codes, then the undocumented one.
    pub fn all() -> impl Iterator<Item = BingCode> {
        Self::DOCUMENTED.into_iter().chain([BingCode::UnknownErrorCode])
    }
}

impl fmt::Display for BingCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl FromStr for BingCode {
    type Err = UnknownReason;
    fn from_str(s: &str) -> Result<Self, UnknownReason> {
        BingCode::all().find(|code| code.to_string() == s).ok_or_else(|| UnknownReason(s.to_string()))
    }
}

reason_enum! {
    /// The OAuth2 error codes (RFC 6749 §5.2) that a service-account key or
    /// its JWT causes, as Google's token endpoint sends them.
    pub enum TokenError {
        InvalidGrant = "invalid_grant",
        InvalidClient = "invalid_client",
        UnauthorizedClient = "unauthorized_client",
        AccessDenied = "access_denied",
        InvalidScope = "invalid_scope",
    }
}

impl Reason {
    /// [`MisconfiguredReason::check`] of a misconfigured reason.
    pub fn check(self) -> Option<Check> {
        match self {
            Reason::Misconfigured(m) => m.check(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_causes_found_without_sending_are_checked() {
        assert_eq!(MisconfiguredReason::KeyFileMissing.check(), Some(Check::KeyFile));
        assert_eq!(MisconfiguredReason::KeyFileHtml.check(), Some(Check::KeyFile));
        assert_eq!(MisconfiguredReason::Bing(BingCode::InvalidApiKey).check(), Some(Check::ApiKey));
        assert_eq!(MisconfiguredReason::Token(TokenError::InvalidGrant).check(), Some(Check::Token));
        assert_eq!(MisconfiguredReason::TokenHttp(TokenHttpStatus(400)).check(), Some(Check::Token));
        for unchecked in [
            MisconfiguredReason::BadRequest,
            MisconfiguredReason::UrlNotOnHost,
            MisconfiguredReason::KeyNeverAccepted,
            MisconfiguredReason::UserForbidden,
            MisconfiguredReason::KeyLocationInvalid,
            MisconfiguredReason::OwnershipNotVerified,
            MisconfiguredReason::Bing(BingCode::InvalidUrl),
            MisconfiguredReason::Http(HttpStatus(404)),
        ] {
            assert_eq!(unchecked.check(), None, "{unchecked}");
        }
        assert_eq!(Reason::from(QuotaReason::DailyQuota).check(), None);
    }

    /// Every reason reads back as itself, with its class.
    #[test]
    fn every_reason_reads_back() {
        let mut all: Vec<Reason> = Vec::new();
        all.extend(AcceptedReason::NAMED.iter().map(|&r| Reason::from(r)));
        all.push(AcceptedReason::Bing(BingCode::AlreadyExists).into());
        all.extend(QuotaReason::NAMED.iter().map(|&r| Reason::from(r)));
        all.extend(TransientReason::NAMED.iter().map(|&r| Reason::from(r)));
        all.extend(KeyPendingReason::NAMED.iter().map(|&r| Reason::from(r)));
        all.extend(MisconfiguredReason::NAMED.iter().map(|&r| Reason::from(r)));
        all.extend(TokenError::NAMED.iter().map(|&e| Reason::from(MisconfiguredReason::Token(e))));
        all.extend(BingCode::all().map(|c| Reason::from(MisconfiguredReason::Bing(c))));
        all.extend(BingCode::all().map(|c| Reason::from(TransientReason::Bing(c))));
        all.push(MisconfiguredReason::Http(HttpStatus(418)).into());
        all.push(MisconfiguredReason::TokenHttp(TokenHttpStatus(400)).into());
        for reason in all {
            let class = reason.class().expect("a class reason");
            assert_eq!(Reason::of_class(class, &reason.to_string()), Ok(reason), "{reason}");
        }
        for &local in LocalReason::NAMED {
            assert_eq!(local.to_string().parse(), Ok(local));
        }
    }

    #[test]
    fn names_are_the_stored_texts() {
        assert_eq!(Reason::from(MisconfiguredReason::Http(HttpStatus(404))).to_string(), "http_404");
        assert_eq!(Reason::from(TransientReason::RequestTimeout).to_string(), "http_408");
        assert_eq!(Reason::from(QuotaReason::Bing(BingCode::ThrottleHost)).to_string(), "ThrottleHost");
        assert_eq!(Reason::from(MisconfiguredReason::Token(TokenError::InvalidGrant)).to_string(), "invalid_grant");
        assert_eq!(serde_json::to_string(&Reason::from(LocalReason::Budget)).unwrap(), r#""budget""#);
        assert_eq!(BingCode::from_number(7), BingCode::InvalidUrl);
        assert_eq!(BingCode::from_number(99), BingCode::UnknownErrorCode);
        assert_eq!(BingCode::from_number(-1), BingCode::UnknownErrorCode);
    }

    /// A text that is not a reason of that class is refused, never defaulted.
    #[test]
    fn unknown_texts_are_refused() {
        for (class, text) in [
            (Class::Accepted, "daily_quota"),
            (Class::Quota, "ok"),
            (Class::Transient, "http_404"),
            (Class::Misconfigured, "http_4040"),
            (Class::Misconfigured, "http_"),
            (Class::Misconfigured, "token_http_4x0"),
            (Class::Misconfigured, "invalid_request"),
            (Class::KeyPending, ""),
            (Class::Misconfigured, "budget"),
        ] {
            assert_eq!(Reason::of_class(class, text), Err(UnknownReason(text.to_string())), "{class} {text}");
        }
        assert!("ok".parse::<LocalReason>().is_err());
    }
}
