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
use super::{Failure, Known};
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
    async fn check(&self, url: &Url) -> Result<(), (Failure, String)> {
        let host = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let listed_in = self.reach.listed_in();
        if !self.reach.allows_host(self.source, url) {
            return Err(not_allowed(format!(
                "{host} is not a host this source may reach (its own, its property's site and sources, or one \
                 {listed_in} lists); list it there to allow it"
            )));
        }
        let name = url.host().ok_or_else(|| not_allowed(format!("{url} has no host")))?;
        let addresses = self.pins.addresses(name).await.map_err(|why| (Failure::Dns, why))?;
        match self.reach.refusal(self.source, url, &addresses) {
            None => Ok(()),
            Some(Refusal::Host) => Err(not_allowed(format!("{host} is not a host this source may reach"))),
            Some(Refusal::Address { address, range }) => Err(not_allowed(format!(
                "{host} resolves to {address}, {range}, which only a host the configuration names itself may \
                 reach (the source's own, or an exact entry of {listed_in}, not a `*.` wildcard)"
            ))),
        }
    }
}

/// A fetch this read may not make, in its words.
fn not_allowed(why: String) -> (Failure, String) {
    (Failure::NotAllowed, why)
}

/// Downloads a body into an anonymous temporary file, stopping at the cap;
/// with `known`, conditionally. Redirects are followed here, each hop
/// checked before it is asked for. A download that failed says how, and in
/// what words.
pub(super) async fn download(
    fetcher: &Fetcher<'_>,
    url: &Url,
    cap: u64,
    known: Option<&Known>,
) -> Result<Download, (Failure, String)> {
    fetcher.check(url).await.map_err(|(failure, why)| (failure, format!("not fetched: {why}")))?;
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
        let response =
            request.send().await.map_err(|e| (failure_of(&e), format!("cannot fetch: {}", error_chain(&e))))?;
        let Some(next) = redirect_target(&response, current) else {
            break response;
        };
        let refused = |why: String| format!("cannot fetch: the redirect from {current} to {next} was refused: {why}");
        if !matches!(next.scheme(), "http" | "https") {
            return Err((Failure::Connect, refused("it is not an http(s) URL".to_string())));
        }
        if chain.len() > MAX_REDIRECTS {
            let why = format!("cannot fetch: more than {MAX_REDIRECTS} redirects from {url}; not followed further");
            return Err((Failure::Connect, why));
        }
        if let Some(downgraded) = downgrade(&chain, &next) {
            return Err((Failure::Connect, format!("cannot fetch: {downgraded}")));
        }
        fetcher.check(&next).await.map_err(|(failure, why)| (failure, refused(why)))?;
        chain.push(next);
    };
    let status = response.status();
    if status == reqwest::StatusCode::NOT_MODIFIED && known.is_some() {
        return Ok(Download::NotModified);
    }
    if !status.is_success() {
        let reason = status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default();
        return Err((Failure::Status(status.as_u16()), format!("HTTP {}{reason}", status.as_u16())));
    }
    let header =
        |name| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string).filter(|v| !v.is_empty());
    let (etag, last_modified) = (header(reqwest::header::ETAG), header(reqwest::header::LAST_MODIFIED));
    let mut digest = Sha256::new();
    let store_error = |e: io::Error| {
        (Failure::Unreadable, format!("cannot store the download in {}: {e}", std::env::temp_dir().display()))
    };
    // Removed as it is closed (on Unix, as soon as it is made): nothing is left behind.
    let mut file = tempfile::tempfile().map_err(store_error)?;
    let mut written: u64 = 0;
    let mut truncated = false;
    while let Some(chunk) =
        response.chunk().await.map_err(|e| (failure_of(&e), format!("cannot fetch: {}", error_chain(&e))))?
    {
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

/// How a request that got no answer failed. reqwest says a timeout and a
/// failed connection; which step of the connection failed is found in the
/// chain of its sources. A TLS handshake that failed is rustls's own error
/// (a certificate, a protocol), or an I/O error the TLS layer met while
/// connecting — data that was not TLS, or the server hanging up mid-
/// handshake (a TCP connection that failed is refused, reset or timed out,
/// never these). A name that did not resolve is hyper's connect error,
/// which has no type of its own for it and says "dns error".
fn failure_of(e: &reqwest::Error) -> Failure {
    if e.is_timeout() {
        return Failure::Timeout;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(error) = source {
        if error.is::<rustls::Error>() {
            return Failure::Tls;
        }
        if let Some(io) = error.downcast_ref::<io::Error>() {
            if tls_io(io, e.is_connect()) {
                return Failure::Tls;
            }
        }
        if error.to_string() == "dns error" {
            return Failure::Dns;
        }
        source = error.source();
    }
    Failure::Connect
}

/// Whether an I/O error is the TLS layer's: rustls's error inside it, or
/// (while `connecting`) data that was not TLS or an end of the stream mid-
/// handshake — looked for through the I/O errors it wraps, whose own
/// `source` skips the wrapped error itself.
fn tls_io(io: &io::Error, connecting: bool) -> bool {
    if connecting && matches!(io.kind(), io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof) {
        return true;
    }
    match io.get_ref() {
        Some(inner) if inner.is::<rustls::Error>() => true,
        Some(inner) => inner.downcast_ref::<io::Error>().is_some_and(|inner| tls_io(inner, connecting)),
        None => false,
    }
}
