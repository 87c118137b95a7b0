//! Where a sitemap (or a robots.txt) is read from: a source given on the
//! command line is a path or an http(s) URL; an index child or a `Sitemap:`
//! line is resolved against where it was listed, and a child of a local index
//! is read from the file beside it when there is one (see the module notes of
//! [`sitemap`](super)).
//!
//! A relative reference in a local file is resolved as a browser resolves it
//! against the file's URL, with the file's own folder as the root: `/a.xml`
//! and `a.xml` are both the `a.xml` beside it (a robots.txt lies at its
//! site's root, so its `/sitemap.xml` is the one beside it), `sub/b.xml` is
//! in its subfolder. What a file says never reaches the filesystem as an
//! absolute path, and a reference that climbs out of the folder (`../x.xml`)
//! is refused: a crafted index must not make indexq read `/etc/hostname`.

use crate::model::Position;
use percent_encoding::percent_decode_str;
use std::fs;
use std::path::{Path, PathBuf};
use url::Url;

use super::Problem;

/// Where a sitemap (or robots.txt) is read from.
#[derive(Debug, Clone)]
pub(super) enum Location {
    File(PathBuf),
    Url(Url),
}

/// A sitemap to read: where, its name in places and messages, its identity for "read once", and where it was listed.
pub(super) struct Target {
    pub(super) location: Location,
    pub(super) name: String,
    pub(super) key: String,
    pub(super) listed_at: Option<Position>,
}

impl Target {
    pub(super) fn new(location: Location, name: String, listed_at: Option<Position>) -> Target {
        let key = match &location {
            Location::File(path) => {
                format!("file:{}", fs::canonicalize(path).unwrap_or_else(|_| path.clone()).display())
            }
            Location::Url(url) => {
                let mut url = url.clone();
                url.set_fragment(None);
                url.to_string()
            }
        };
        Target { location, name, key, listed_at }
    }

    pub(super) fn is_robots(&self) -> bool {
        let file_name = match &self.location {
            Location::File(path) => path.file_name().and_then(|n| n.to_str()).map(str::to_string),
            Location::Url(url) => url.path_segments().and_then(|mut s| s.next_back()).map(str::to_string),
        };
        file_name.is_some_and(|n| n.eq_ignore_ascii_case("robots.txt"))
    }

    pub(super) fn problem(&self, message: String) -> Problem {
        let message = match &self.listed_at {
            Some(at) => format!("{message} (listed at {at})"),
            None => message,
        };
        Problem { place: Position::of(self.name.clone()), message }
    }
}

/// Tells a URL from a path: `scheme://` with an ASCII scheme of two letters or more (so `C:\` stays a path).
pub(super) fn source_location(source: &str) -> Result<Location, String> {
    let has_scheme = source.find("://").is_some_and(|i| {
        i > 1
            && source[..i].starts_with(|c: char| c.is_ascii_alphabetic())
            && source[..i].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !has_scheme {
        return Ok(Location::File(PathBuf::from(source)));
    }
    let url = Url::parse(source).map_err(|e| format!("not a valid URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(Location::Url(url)),
        other => Err(format!("cannot read {other}: URLs; give an https:// or http:// URL or a local path")),
    }
}

pub(super) fn location_name(location: &Location) -> String {
    match location {
        Location::File(path) => path.display().to_string(),
        Location::Url(url) => url.to_string(),
    }
}

/// Where an index child (or a robots.txt `Sitemap:`) is read from; see the module notes.
pub(super) fn resolve_child(parent: &Location, loc: &str) -> Result<Location, String> {
    match Url::parse(loc) {
        Ok(url) => {
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "cannot follow {}: URLs; only https:// and http:// sitemaps are read",
                    url.scheme()
                ));
            }
            if let Location::File(parent) = parent {
                if let Some(local) = local_copy(parent, &url) {
                    return Ok(Location::File(local));
                }
            }
            Ok(Location::Url(url))
        }
        Err(url::ParseError::RelativeUrlWithoutBase) => match parent {
            Location::Url(base) => base.join(loc).map(Location::Url).map_err(|e| format!("not a valid URL: {e}")),
            Location::File(parent) => in_folder(parent, loc).map(Location::File),
        },
        Err(e) => Err(format!("not a valid URL: {e}")),
    }
}

/// A relative reference in the local file `parent`, as a file in its folder (see the module notes).
fn in_folder(parent: &Path, loc: &str) -> Result<PathBuf, String> {
    let shown: String = loc.chars().take(120).collect();
    if loc.starts_with("//") || loc.starts_with("\\\\") {
        return Err(format!(
            "`{shown}` names another host without a scheme; a local file's child is given in full \
                            (https://…) or relative to its folder"
        ));
    }
    // A fragment is no part of a file's name; a query would be, and a file has none.
    let path = loc.split('#').next().unwrap_or_default();
    if path.contains('?') {
        return Err(format!("`{shown}` has a query (`?…`), which no local file has; not read"));
    }
    let mut names: Vec<String> = Vec::new();
    for segment in path.split('/') {
        let name = percent_decode_str(segment)
            .decode_utf8()
            .map_err(|_| format!("`{shown}` is not UTF-8 once its %-escapes are decoded; not read"))?;
        match &*name {
            "" | "." => {}
            ".." => {
                if names.pop().is_none() {
                    return Err(format!(
                        "`{shown}` leaves the folder of the file that lists it; a local sitemap's children are read \
                         from its own folder only: not read"
                    ));
                }
            }
            name if name.contains(['/', '\\', '\0']) => {
                return Err(format!("`{shown}` names a file with `/`, `\\` or NUL in its name; not read"));
            }
            name => names.push(name.to_string()),
        }
    }
    if names.is_empty() || path.ends_with('/') {
        return Err(format!("`{shown}` names a folder, not a file; not read"));
    }
    Ok(names.iter().fold(parent_dir(parent).to_path_buf(), |path, name| path.join(name)))
}

fn parent_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

/// The file beside a local index named like the URL's last path segment, if there is one.
fn local_copy(parent: &Path, url: &Url) -> Option<PathBuf> {
    let segment = url.path_segments()?.next_back()?;
    let name = percent_decode_str(segment).decode_utf8().ok()?;
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return None;
    }
    let candidate = parent_dir(parent).join(&*name);
    candidate.is_file().then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_references_in_a_local_file_stay_in_its_folder() {
        let parent = Path::new("public/sitemap.xml");
        let file = |loc: &str| match resolve_child(&Location::File(parent.into()), loc) {
            Ok(Location::File(path)) => Ok(path),
            Ok(Location::Url(url)) => panic!("{loc} is fetched: {url}"),
            Err(e) => Err(e),
        };
        let public = Path::new("public");
        assert_eq!(file("/child.xml"), Ok(public.join("child.xml")));
        assert_eq!(file("child.xml"), Ok(public.join("child.xml")));
        assert_eq!(file("./sub/child.xml#top"), Ok(public.join("sub").join("child.xml")));
        assert_eq!(file("sub/../a%20b.xml"), Ok(public.join("a b.xml")));
        // An absolute path in the file is a path in its folder.
        assert_eq!(file("/etc/hostname"), Ok(public.join("etc").join("hostname")));
        for (loc, why) in [
            ("../../etc/hostname", "leaves the folder"),
            ("/../etc/hostname", "leaves the folder"),
            ("sub/../../x.xml", "leaves the folder"),
            ("%2e%2e/x.xml", "leaves the folder"),
            ("a%2f..%2fx.xml", "with `/`"),
            ("//evil.example/x.xml", "another host"),
            ("x.xml?page=2", "has a query"),
            ("/", "names a folder"),
            ("sub/", "names a folder"),
            ("%ff.xml", "not UTF-8"),
        ] {
            let error = file(loc).expect_err(loc);
            assert!(error.contains(why), "{loc}: {error}");
        }
        // Against a URL, as a browser would.
        let base = Location::Url(Url::parse("https://e.com/blog/sitemap.xml").unwrap());
        let url = |loc: &str| match resolve_child(&base, loc) {
            Ok(Location::Url(url)) => url.to_string(),
            other => panic!("{loc}: {other:?}"),
        };
        assert_eq!(url("/child.xml"), "https://e.com/child.xml");
        assert_eq!(url("child.xml"), "https://e.com/blog/child.xml");
        assert_eq!(url("../../x.xml"), "https://e.com/x.xml");
    }

    #[test]
    fn local_copy_rules() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a b.xml"), "x").unwrap();
        let parent = dir.path().join("index.xml");
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(local_copy(&parent, &url("https://e.com/x/a%20b.xml")), Some(dir.path().join("a b.xml")));
        assert_eq!(local_copy(&parent, &url("https://e.com/x/other.xml")), None);
        assert_eq!(local_copy(&parent, &url("https://e.com/x/")), None);
        assert_eq!(local_copy(&parent, &url("https://e.com/%2e%2e")), None);
        assert_eq!(local_copy(&parent, &url("https://e.com/a%2fb.xml")), None);
        // An escape that is not one stays as it is; the others are decoded.
        fs::write(dir.path().join("%zzA.xml"), "x").unwrap();
        assert_eq!(local_copy(&parent, &url("https://e.com/%zz%41.xml")), Some(dir.path().join("%zzA.xml")));
        // Bytes that are not UTF-8 name no file (not even one named like their lossy decoding).
        fs::write(dir.path().join("\u{FFFD}.xml"), "x").unwrap();
        assert_eq!(local_copy(&parent, &url("https://e.com/%ff.xml")), None);
    }
}
