//! Downloads a sitemap: one GET (gzip accepted), its body stored in an
//! anonymous temporary file and stopped at the cap, with its validators
//! (`ETag`, `Last-Modified`) and the SHA-256 digest of what was downloaded.
//! Given the validators of an earlier download, the GET is conditional: a
//! 304 is [`Download::NotModified`]. The client's redirect policy is the
//! caller's (`engines::fetch_client` refuses https → http); a redirect it
//! refuses is a problem in its own words.

use sha2::{Digest, Sha256};
use std::io::{self, Seek, Write};
use url::Url;

use super::body::Body;
use super::{Failure, Known};
use crate::error::error_chain;

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

/// Downloads a body into an anonymous temporary file, stopping at the cap;
/// with `known`, conditionally. A download that failed says how, and in
/// what words.
pub(super) async fn download(
    client: &reqwest::Client,
    url: &Url,
    cap: u64,
    known: Option<&Known>,
) -> Result<Download, (Failure, String)> {
    let mut request = client.get(url.clone()).header(reqwest::header::ACCEPT_ENCODING, "gzip");
    if let Some(known) = known {
        if let Some(etag) = &known.etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(date) = &known.last_modified {
            request = request.header(reqwest::header::IF_MODIFIED_SINCE, date);
        }
    }
    let mut response = request.send().await.map_err(|e| {
        let message = match e.is_redirect().then(|| innermost(&e)).flatten() {
            // A redirect the client's policy refused (a downgrade to http, too many): its own words.
            Some(why) => format!("cannot fetch: {why}"),
            None => format!("cannot fetch: {}", error_chain(&e)),
        };
        (failure_of(&e), message)
    })?;
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

/// The last error of a chain, if there is more than one.
fn innermost(error: &dyn std::error::Error) -> Option<String> {
    let mut last = error.source()?;
    while let Some(next) = last.source() {
        last = next;
    }
    Some(last.to_string())
}
