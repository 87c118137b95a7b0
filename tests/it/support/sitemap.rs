//! A site's sitemap that changes between runs, served by a mock site the
//! way a real web server does: with an `ETag` and a `Last-Modified`, and a
//! 304 to a conditional GET whose validator still holds.
#![allow(dead_code)]

use super::mock::{MockResponse, MockServer};
use std::sync::{Arc, Mutex};

/// What the sitemap holds now: its pages (path, lastmod) and its version.
#[derive(Default)]
struct State {
    pages: Vec<(String, Option<String>)>,
    version: u64,
    /// Whether the server sends validators (some dynamic sitemaps do not).
    validators: bool,
}

/// A sitemap served at `path` of a mock site.
#[derive(Clone)]
pub struct Sitemap {
    base: String,
    state: Arc<Mutex<State>>,
}

impl Sitemap {
    /// Serves an empty `<urlset>` at `path` of `site`, with validators.
    pub fn serve(site: &MockServer, path: &str) -> Sitemap {
        let sitemap =
            Sitemap { base: site.url(), state: Arc::new(Mutex::new(State { validators: true, ..State::default() })) };
        let served = sitemap.clone();
        site.respond_with("GET", path, move |request| served.answer(request.header("If-None-Match")));
        sitemap
    }

    /// Sends no `ETag` or `Last-Modified` from now on.
    pub fn without_validators(&self) {
        self.state.lock().unwrap().validators = false;
    }

    /// Adds a page (a path of the site) with its `lastmod`.
    pub fn add(&self, path: &str, lastmod: Option<&str>) {
        let mut state = self.state.lock().unwrap();
        state.pages.push((path.to_string(), lastmod.map(String::from)));
        state.version += 1;
    }

    /// Changes a page's `lastmod`.
    pub fn touch(&self, path: &str, lastmod: &str) {
        let mut state = self.state.lock().unwrap();
        let page = state.pages.iter_mut().find(|(p, _)| p == path).expect("a page of the sitemap");
        page.1 = Some(lastmod.to_string());
        state.version += 1;
    }

    /// The pages' full URLs.
    pub fn urls(&self) -> Vec<String> {
        self.state.lock().unwrap().pages.iter().map(|(p, _)| format!("{}{p}", self.base)).collect()
    }

    fn etag(version: u64) -> String {
        format!("\"v{version}\"")
    }

    pub fn answer(&self, if_none_match: Option<&str>) -> MockResponse {
        let state = self.state.lock().unwrap();
        let etag = Self::etag(state.version);
        if state.validators && if_none_match == Some(etag.as_str()) {
            return MockResponse::status(304).header("ETag", &etag);
        }
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for (path, lastmod) in &state.pages {
            xml.push_str(&format!("<url><loc>{}{path}</loc>", self.base));
            if let Some(l) = lastmod {
                xml.push_str(&format!("<lastmod>{l}</lastmod>"));
            }
            xml.push_str("</url>\n");
        }
        xml.push_str("</urlset>\n");
        let response = MockResponse::status(200).header("Content-Type", "application/xml").body(&xml);
        if state.validators {
            response.header("ETag", &etag).header("Last-Modified", "Wed, 02 Dec 2026 08:00:00 GMT")
        } else {
            response
        }
    }
}
