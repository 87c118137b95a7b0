//! Downloads a sitemap: one GET (gzip accepted), its body stored in an
//! anonymous temporary file and stopped at the cap, with its validators
//! (`ETag`, `Last-Modified`) and the SHA-256 digest of what was downloaded.
//! Given the validators of an earlier download, the GET is conditional: a
//! 304 is [`Download::NotModified`]. Redirects are followed here, not by
//! the client (whose policy is `none`): up to [`MAX_REDIRECTS`], never from
//! https to plain http, and each hop held to the read's [`Reach`] like an
//! index child — its host resolved and checked before any connection.

use sha2::{Digest, Sha256};
use std::io::{self, Seek, Write};
use url::Url;

use super::body::Body;
use super::reach::{Pins, Reach, Refusal};
use super::Known;
use crate::error::error_chain;
use crate::net::{downgrade, HostPattern, MAX_REDIRECTS};

/// What a GET brought.
pub(super) enum Download {
    /// The server says the sitemap did not change since `known` (304).
    NotModified,
    Body {
        body: Body,
        etag: Option<String>,
        last_modified: Option<String>,
        digest: String,
    },
}

/// Why a download brought nothing.
#[derive(Debug)]
pub(super) enum Failure {
    /// The URL, or a redirect from it, leads where this read may not
    /// fetch: another read (another property's) may, so the URL is not
    /// counted as read.
    Refused(String),
    /// Anything else: a network error, a status, the disk.
    Other(String),
}

impl Failure {
    pub(super) fn message(self) -> String {
        match self {
            Failure::Refused(m) | Failure::Other(m) => m,
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Other(message)
    }
}

/// What a download may reach: the client (which connects only to the
/// addresses [`Pins`] checked), the pins, the read's [`Reach`] and its
/// source's own host (`None`: a local file).
pub(super) struct Fetcher<'a> {
    pub(super) client: &'a reqwest::Client,
    pub(super) pins: &'a Pins,
    pub(super) reach: &'a Reach,
    pub(super) source: Option<&'a HostPattern>,
}

impl Fetcher<'_> {
    /// Checks `url` before any connection to it: its host and port, then
    /// every address its host resolves to. `Err`: why it is not fetched.
    async fn check(&self, url: &Url) -> Result<(), String> {
        let host = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let listed_in = self.reach.listed_in();
        if !self.reach.allows_host(self.source, url) {
            return Err(format!(
                "{host} is not a host this source may reach (its own, its property's site and sources, or one \
                 {listed_in} lists); list it there to allow it"
            ));
        }
        let name = url.host().ok_or_else(|| format!("{url} has no host"))?;
        let addresses = self.pins.addresses(name).await?;
        match self.reach.refusal(self.source, url, &addresses) {
            None => Ok(()),
            Some(Refusal::Host) => Err(format!("{host} is not a host this source may reach")),
            Some(Refusal::Address { address, range }) => Err(format!(
                "{host} resolves to {address}, {range}, which only a host the configuration names itself may \
                 reach (the source's own, or an exact entry of {listed_in}, not a `*.` wildcard)"
            )),
        }
    }
}

/// Downloads a body into an anonymous temporary file, stopping at the cap;
/// with `known`, conditionally. Redirects are followed here, each hop
/// checked before it is asked for.
pub(super) async fn download(
    fetcher: &Fetcher<'_>,
    url: &Url,
    cap: u64,
    known: Option<&Known>,
) -> Result<Download, Failure> {
    fetcher.check(url).await.map_err(|why| Failure::Refused(format!("not fetched: {why}")))?;
    let mut chain = vec![url.clone()];
    let mut response = loop {
        let current = chain.last().unwrap_or(url);
        let mut request = fetcher.client.get(current.clone()).header(reqwest::header::ACCEPT_ENCODING, "gzip");
        if let Some(known) = known {
            if let Some(etag) = &known.etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(date) = &known.last_modified {
                request = request.header(reqwest::header::IF_MODIFIED_SINCE, date);
            }
        }
        let response = request.send().await.map_err(|e| format!("cannot fetch: {}", error_chain(&e)))?;
        let Some(next) = redirect_target(&response, current) else {
            break response;
        };
        let refused = |why: String| format!("cannot fetch: the redirect from {current} to {next} was refused: {why}");
        if !matches!(next.scheme(), "http" | "https") {
            return Err(refused("it is not an http(s) URL".to_string()).into());
        }
        if chain.len() > MAX_REDIRECTS {
            let why = format!("cannot fetch: more than {MAX_REDIRECTS} redirects from {url}; not followed further");
            return Err(why.into());
        }
        if let Some(downgraded) = downgrade(&chain, &next) {
            return Err(format!("cannot fetch: {downgraded}").into());
        }
        fetcher.check(&next).await.map_err(|why| Failure::Refused(refused(why)))?;
        chain.push(next);
    };
    let status = response.status();
    if status == reqwest::StatusCode::NOT_MODIFIED && known.is_some() {
        return Ok(Download::NotModified);
    }
    if !status.is_success() {
        let reason = status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default();
        return Err(format!("HTTP {}{reason}", status.as_u16()).into());
    }
    let header =
        |name| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string).filter(|v| !v.is_empty());
    let (etag, last_modified) = (header(reqwest::header::ETAG), header(reqwest::header::LAST_MODIFIED));
    let mut digest = Sha256::new();
    let store_error = |e: io::Error| format!("cannot store the download in {}: {e}", std::env::temp_dir().display());
    // Removed as it is closed (on Unix, as soon as it is made): nothing is left behind.
    let mut file = tempfile::tempfile().map_err(store_error)?;
    let mut written: u64 = 0;
    let mut truncated = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("cannot fetch: {}", error_chain(&e)))? {
        let room = cap - written;
        if chunk.len() as u64 > room {
            // `room` < chunk.len() here, so it fits in usize and the slice is in bounds.
            file.write_all(&chunk[..room as usize]).map_err(store_error)?;
            digest.update(&chunk[..room as usize]);
            truncated = true;
            break;
        }
        file.write_all(&chunk).map_err(store_error)?;
        digest.update(&chunk);
        written += chunk.len() as u64;
    }
    file.rewind().map_err(store_error)?;
    let digest = digest.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(Download::Body { body: Body::new(file, truncated), etag, last_modified, digest })
}

/// Where a redirect (301, 302, 303, 307, 308 with a `Location`) leads,
/// resolved against the URL that answered it; `None` for any other answer
/// (a 3xx without a usable `Location` is then an answer that is not a
/// success).
fn redirect_target(response: &reqwest::Response, current: &Url) -> Option<Url> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return None;
    }
    let location = response.headers().get(reqwest::header::LOCATION)?.to_str().ok()?;
    current.join(location.trim()).ok()
}
