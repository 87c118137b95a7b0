//! Downloads a sitemap: one GET (gzip accepted), its body stored in an
//! anonymous temporary file and stopped at the cap. The client's redirect
//! policy is the caller's (`engines::fetch_client` refuses https → http); a
//! redirect it refuses is a problem in its own words.

use std::io::{self, Seek, Write};
use url::Url;

use super::body::Body;
use crate::error::error_chain;

/// Downloads a body into an anonymous temporary file, stopping at the cap.
pub(super) async fn download(client: &reqwest::Client, url: &Url, cap: u64) -> Result<Body, String> {
    let mut response =
        client.get(url.clone()).header(reqwest::header::ACCEPT_ENCODING, "gzip").send().await.map_err(|e| {
            match e.is_redirect().then(|| innermost(&e)).flatten() {
                // A redirect the client's policy refused (a downgrade to http, too many): its own words.
                Some(why) => format!("cannot fetch: {why}"),
                None => format!("cannot fetch: {}", error_chain(&e)),
            }
        })?;
    let status = response.status();
    if !status.is_success() {
        let reason = status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default();
        return Err(format!("HTTP {}{reason}", status.as_u16()));
    }
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
            truncated = true;
            break;
        }
        file.write_all(&chunk).map_err(store_error)?;
        written += chunk.len() as u64;
    }
    file.rewind().map_err(store_error)?;
    Ok(Body::new(file, truncated))
}

/// The last error of a chain, if there is more than one.
fn innermost(error: &dyn std::error::Error) -> Option<String> {
    let mut last = error.source()?;
    while let Some(next) = last.source() {
        last = next;
    }
    Some(last.to_string())
}
