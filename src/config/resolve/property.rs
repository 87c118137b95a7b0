//! `[[property]]`: each site indexq submits for, and its engine tables
//! (`indexnow`, `bing`, `google`), whose timezones default to their engine
//! table's.

use toml::Spanned;
use url::Url;

use super::Resolver;
use crate::config::raw::{
    RawPropBaidu, RawPropBing, RawPropGoogle, RawPropIndexNow, RawPropYandex, RawProperty, RawSource, S,
};
use crate::config::{
    defaults, BaiduSettings, BingSettings, ConfigError, GoogleSettings, IndexNowSettings, Property, PropertyBaidu,
    PropertyBing, PropertyGoogle, PropertyIndexNow, PropertySource, PropertyYandex, YandexSettings,
};

/// The engine tables a property's own tables read.
pub(super) struct EngineTables<'a> {
    pub(super) indexnow: &'a IndexNowSettings,
    pub(super) bing: &'a BingSettings,
    pub(super) google: &'a GoogleSettings,
    pub(super) baidu: &'a BaiduSettings,
    pub(super) yandex: &'a YandexSettings,
}

impl Resolver<'_> {
    /// Every `[[property]]`, in order; names and sites are each used once.
    pub(super) fn properties(
        &self,
        raw: &[S<RawProperty>],
        engines: &EngineTables,
    ) -> Result<Vec<Property>, ConfigError> {
        let EngineTables { indexnow, bing, google, baidu, yandex } = *engines;
        let mut properties: Vec<Property> = Vec::new();
        for (i, p) in raw.iter().enumerate() {
            let prefix = format!("property[{i}]");
            let rp = p.get_ref();
            let name = rp.name.get_ref().trim().to_string();
            if name.is_empty() {
                return Err(self.err(&rp.name, &format!("{prefix}.name"), "the name is empty"));
            }
            if properties.iter().any(|q| q.name == name) {
                return Err(self.err(
                    &rp.name,
                    &format!("{prefix}.name"),
                    format!("another property is already named `{name}`"),
                ));
            }
            let site = self.site_url(&rp.site, &format!("{prefix}.site"))?;
            if let Some(other) = properties.iter().find(|q| q.site == site) {
                return Err(self.err(
                    &rp.site,
                    &format!("{prefix}.site"),
                    format!("property `{}` already has the site {site}", other.name),
                ));
            }
            let property = Property {
                timezone: self.timezone(
                    rp.timezone.as_ref(),
                    &format!("{prefix}.timezone"),
                    defaults::PROPERTY_TIMEZONE,
                )?,
                indexnow: rp.indexnow.as_ref().map(|t| self.property_indexnow(t, &prefix, indexnow)).transpose()?,
                bing: rp.bing.as_ref().map(|t| self.property_bing(t, &prefix, &site, bing)).transpose()?,
                google: rp.google.as_ref().map(|t| self.property_google(t, &prefix, &site, google)).transpose()?,
                baidu: rp.baidu.as_ref().map(|t| self.property_baidu(t, &prefix, &site, baidu)).transpose()?,
                yandex: rp.yandex.as_ref().map(|t| self.property_yandex(t, &prefix, yandex)).transpose()?,
                sources: self.sources(rp.sources.as_deref().unwrap_or_default(), &prefix)?,
                fetch_hosts: self.fetch_hosts(rp.fetch_hosts.as_deref().unwrap_or_default(), &prefix)?,
                name,
                site,
            };
            if let Some(t) = &rp.google {
                self.check_google_channels(t, &prefix, &property)?;
            }
            properties.push(property);
        }
        Ok(properties)
    }

    /// `property.sources`: each a sitemap (URL or file) or a URL-list file.
    /// A string is an http(s) URL, read as a sitemap (or a robots.txt), or a
    /// file: one named `robots.txt` is a robots.txt, any other is read by its
    /// content when a run reads it (a sitemap or feed when it is XML, gzipped
    /// or not; else a URL list); `{ sitemap = "…" }` and `{ list = "…" }`
    /// say it outright (a text file given as a sitemap is a text sitemap,
    /// at most 50,000 URLs). Files are relative to the
    /// configuration's folder and read when a run needs them (a build may
    /// write them after the configuration).
    fn sources(&self, raw: &[S<RawSource>], prefix: &str) -> Result<Vec<PropertySource>, ConfigError> {
        let mut sources = Vec::with_capacity(raw.len());
        for (i, value) in raw.iter().enumerate() {
            let key = format!("{prefix}.sources[{i}]");
            let (text, said) = match value.get_ref() {
                RawSource::Text(text) => (text.as_str(), None),
                RawSource::Table(t) => match (&t.sitemap, &t.list) {
                    (Some(s), None) => (s.as_str(), Some(SourceKind::Sitemap)),
                    (None, Some(l)) => (l.as_str(), Some(SourceKind::List)),
                    _ => {
                        return Err(self
                            .err(value, &key, "a source table names one of `sitemap` or `list`")
                            .hint("e.g. { sitemap = \"https://example.com/sitemap.xml\" } or { list = \"urls.txt\" }"))
                    }
                },
            };
            let text = text.trim();
            if text.is_empty() {
                return Err(self.err(value, &key, "the source is empty"));
            }
            let source = if text.contains("://") {
                let url = Url::parse(text).map_err(|e| {
                    self.err(value, &key, format!("`{text}` is not a URL: {e}"))
                        .hint("a sitemap URL with its scheme, e.g. \"https://example.com/sitemap.xml\"")
                })?;
                if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                    return Err(self.err(value, &key, format!("`{text}` is not an http(s) URL with a host")));
                }
                if said == Some(SourceKind::List) {
                    return Err(self
                        .err(value, &key, "a URL list is read from a file, not a URL")
                        .hint("name the URL as a sitemap: { sitemap = \"…\" } (a text sitemap is read as one)"));
                }
                PropertySource::Sitemap(url.to_string())
            } else {
                let path = self.path_value(text);
                match said.or_else(|| SourceKind::of_file(&path)) {
                    Some(SourceKind::Sitemap) => PropertySource::Sitemap(path.display().to_string()),
                    Some(SourceKind::List) => PropertySource::List(path),
                    None => PropertySource::File(path),
                }
            };
            sources.push(source);
        }
        Ok(sources)
    }

    /// `property.indexnow`: the key's source (required) and where it is served.
    fn property_indexnow(
        &self,
        t: &Spanned<RawPropIndexNow>,
        prefix: &str,
        indexnow: &IndexNowSettings,
    ) -> Result<PropertyIndexNow, ConfigError> {
        let table = t.get_ref();
        let key = self
            .secret(table.key_env.as_ref(), table.key_file.as_ref(), &format!("{prefix}.indexnow.key"), "the IndexNow key")?
            .ok_or_else(|| {
                self.err(t, &format!("{prefix}.indexnow"), "an indexnow table needs key_env or key_file")
                    .hint(format!("run `indexq key generate` (or pick {}), publish it at the site root as KEY.txt, and set key_env = \"INDEXNOW_KEY\"", crate::classify::KEY_SCHEMA))
            })?;
        let key_location = match &table.key_location {
            None => None,
            Some(v) => Some(self.site_url(v, &format!("{prefix}.indexnow.key_location"))?),
        };
        Ok(PropertyIndexNow {
            key,
            key_location,
            daily_quota: table.daily_quota,
            quota_timezone: self.timezone(
                table.quota_timezone.as_ref(),
                &format!("{prefix}.indexnow.quota_timezone"),
                indexnow.quota_timezone,
            )?,
        })
    }

    /// `property.bing`: needs `[bing]`'s API key; the site as Bing knows it.
    fn property_bing(
        &self,
        t: &Spanned<RawPropBing>,
        prefix: &str,
        site: &Url,
        bing: &BingSettings,
    ) -> Result<PropertyBing, ConfigError> {
        let table = t.get_ref();
        if bing.api_key.is_none() {
            return Err(self
                .err(
                    t,
                    &format!("{prefix}.bing"),
                    "this property uses Bing but [bing] has no api_key_env or api_key_file",
                )
                .hint("add api_key_env = \"BING_WEBMASTER_API_KEY\" to [bing] and export the key"));
        }
        Ok(PropertyBing {
            site_url: table.site_url.as_ref().map_or_else(|| site.to_string(), |v| v.get_ref().trim().to_string()),
            daily_quota: table.daily_quota,
            monthly_quota: table.monthly_quota,
            quota_timezone: self.timezone(
                table.quota_timezone.as_ref(),
                &format!("{prefix}.bing.quota_timezone"),
                bing.quota_timezone,
            )?,
            sitemaps: table.sitemaps.unwrap_or(bing.sitemaps),
        })
    }

    /// `property.baidu`: needs `[baidu]`'s token; the `site` Baidu knows
    /// the property by (its scheme and host unless set).
    fn property_baidu(
        &self,
        t: &Spanned<RawPropBaidu>,
        prefix: &str,
        site: &Url,
        baidu: &BaiduSettings,
    ) -> Result<PropertyBaidu, ConfigError> {
        let table = t.get_ref();
        if baidu.token.is_none() {
            return Err(self
                .err(t, &format!("{prefix}.baidu"), "this property uses Baidu but [baidu] has no token_env or token_file")
                .hint("add token_env = \"BAIDU_PUSH_TOKEN\" to [baidu] and export the token from 搜索资源平台's push tool page (普通收录 → API 提交)"));
        }
        let own = match site.port() {
            Some(port) => format!("{}://{}:{port}", site.scheme(), site.host_str().unwrap_or_default()),
            None => format!("{}://{}", site.scheme(), site.host_str().unwrap_or_default()),
        };
        let site = match &table.site {
            None => own,
            Some(v) if v.get_ref().trim().is_empty() => {
                return Err(self.err(v, &format!("{prefix}.baidu.site"), "the site is empty"))
            }
            Some(v) => v.get_ref().trim().to_string(),
        };
        Ok(PropertyBaidu { site, daily_quota: table.daily_quota, quota_timezone: defaults::BAIDU_QUOTA_TIMEZONE })
    }

    /// `property.yandex`: needs `[yandex]`'s token; the host id, if set.
    fn property_yandex(
        &self,
        t: &Spanned<RawPropYandex>,
        prefix: &str,
        yandex: &YandexSettings,
    ) -> Result<PropertyYandex, ConfigError> {
        let table = t.get_ref();
        if yandex.token.is_none() {
            return Err(self
                .err(t, &format!("{prefix}.yandex"), "this property uses Yandex but [yandex] has no token_env or token_file")
                .hint("add token_env = \"YANDEX_OAUTH_TOKEN\" to [yandex] and export an OAuth token of the Webmaster API (https://oauth.yandex.com)"));
        }
        let host_id = match &table.host_id {
            None => None,
            Some(v) => {
                let id = v.get_ref().trim();
                // Yandex writes a host id as `scheme:host:port`.
                if id.split(':').count() != 3 || !(id.starts_with("https:") || id.starts_with("http:")) {
                    return Err(self
                        .err(v, &format!("{prefix}.yandex.host_id"), format!("`{id}` is not a Yandex host id"))
                        .hint("write it as Yandex does, e.g. \"https:example.com:443\", or leave it out to find it by the site"));
                }
                Some(id.to_string())
            }
        };
        Ok(PropertyYandex { host_id, daily_quota: table.daily_quota, quota_timezone: defaults::YANDEX_QUOTA_TIMEZONE })
    }

    /// `property.google`: the site as Search Console knows it, this property's share.
    fn property_google(
        &self,
        t: &Spanned<RawPropGoogle>,
        prefix: &str,
        site: &Url,
        google: &GoogleSettings,
    ) -> Result<PropertyGoogle, ConfigError> {
        let table = t.get_ref();
        Ok(PropertyGoogle {
            site_url: table.site_url.as_ref().map_or_else(|| site.to_string(), |v| v.get_ref().trim().to_string()),
            daily_quota: table.daily_quota.unwrap_or(defaults::PROPERTY_GOOGLE_DAILY_QUOTA),
            skip_indexed: table.skip_indexed.unwrap_or(defaults::PROPERTY_GOOGLE_SKIP_INDEXED),
            quota_timezone: self.timezone(
                table.quota_timezone.as_ref(),
                &format!("{prefix}.google.quota_timezone"),
                google.quota_timezone,
            )?,
            indexing: table.indexing.unwrap_or(defaults::PROPERTY_GOOGLE_INDEXING),
            sitemaps: table.sitemaps.unwrap_or(google.sitemaps),
        })
    }

    /// A `google` table sends something: the property's URLs to the Indexing
    /// API, or its remote sitemaps to Search Console (or both); and
    /// `skip_indexed` inspects URLs only before they are published.
    fn check_google_channels(
        &self,
        t: &Spanned<RawPropGoogle>,
        prefix: &str,
        property: &Property,
    ) -> Result<(), ConfigError> {
        let Some(google) = &property.google else { return Ok(()) };
        let key = format!("{prefix}.google");
        if !google.indexing && google.skip_indexed {
            return Err(self
                .err(
                    t,
                    &key,
                    "`skip_indexed` inspects URLs before the Indexing API publishes them, and `indexing = false`",
                )
                .hint("remove `skip_indexed`, or `indexing = false` to publish the property's URLs"));
        }
        if !google.indexing && property.submitted_sitemaps(crate::model::EngineKind::Google).is_empty() {
            let why = if google.sitemaps {
                "`indexing = false` and no source of the property is a remote sitemap to submit to Search Console"
            } else {
                "`indexing = false` and `sitemaps = false`: this table sends nothing to Google"
            };
            return Err(self.err(t, &key, why).hint(
                "give the property a sitemap URL in `sources` (e.g. \"https://example.com/sitemap.xml\") for the \
                 sitemap channel, or remove `indexing = false` to publish its URLs, or remove the google table",
            ));
        }
        Ok(())
    }
}

/// What a source holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SourceKind {
    Sitemap,
    List,
}

impl SourceKind {
    /// A file's kind by its name: only `robots.txt` (which is no sitemap,
    /// and is told by its name everywhere); any other file is read by its
    /// content (`None`).
    fn of_file(path: &std::path::Path) -> Option<SourceKind> {
        let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        (name == "robots.txt").then_some(SourceKind::Sitemap)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::error_of;

    #[test]
    fn indexnow_table_needs_a_key_source() {
        let e = error_of("[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nindexnow = { key_location = \"https://a.example/k.txt\" }\n");
        assert!(e.place.ends_with("`property[0].indexnow`"), "{}", e.place);
    }

    #[test]
    fn sources_say_what_they_are_by_form_or_by_table() {
        use crate::config::testing::parse_str;
        use crate::config::PropertySource::{File, List, Sitemap};
        let s = parse_str(
            "[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nsources = [\"https://a.example/sitemap.xml\", \
             \"https://a.example/robots.txt\", \"public/sitemap.xml\", \"public/s.XML.gz\", \"robots.txt\", \"urls.txt\", \
             { sitemap = \"feed.php\" }, { list = \"urls.xml\" }]\n",
        )
        .unwrap();
        let base = s.file.parent().unwrap().to_path_buf();
        let file = |name: &str| base.join(name);
        assert_eq!(
            s.properties[0].sources,
            [
                Sitemap("https://a.example/sitemap.xml".into()),
                Sitemap("https://a.example/robots.txt".into()),
                File(file("public/sitemap.xml")),
                File(file("public/s.XML.gz")),
                Sitemap(file("robots.txt").display().to_string()),
                File(file("urls.txt")),
                Sitemap(file("feed.php").display().to_string()),
                List(file("urls.xml")),
            ]
        );
    }

    #[test]
    fn a_source_that_cannot_be_read_as_said_is_an_error_naming_it() {
        let property = |sources: &str| {
            format!("[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nsources = [{sources}]\n")
        };
        for (sources, what) in [
            ("\"ftp://a.example/s.xml\"", "is not an http(s) URL"),
            ("\"https://\"", "is not a URL"),
            ("\" \"", "the source is empty"),
            ("{ list = \"https://a.example/urls.txt\" }", "a URL list is read from a file"),
            ("{ sitemap = \"a.xml\", list = \"b.txt\" }", "names one of"),
            ("{}", "names one of"),
        ] {
            let e = error_of(&property(sources));
            assert!(e.place.ends_with("`property[0].sources[0]`"), "{sources}: {}", e.place);
            assert!(e.message.contains(what), "{sources}: {}", e.message);
        }
    }

    /// The sitemap channel: on by default for a google or bing table, each
    /// table's `sitemaps` over its engine table's; only remote sitemaps
    /// (not a robots.txt, not a file), each once; a google table without
    /// the Indexing API must submit a sitemap, and inspects nothing.
    #[test]
    fn the_sitemap_channel_follows_the_tables() {
        use crate::config::testing::parse_str;
        use crate::model::EngineKind::{Bing, Google, IndexNow};
        let property = |google: &str, sources: &str| {
            format!(
                "[bing]\napi_key_env = \"B\"\nsitemaps = false\n[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\n\
                 sources = [{sources}]\nbing = {{}}\ngoogle = {{ {google} }}\n"
            )
        };
        let all = "\"https://a.example/sitemap.xml\", \"https://a.example/robots.txt\", \"local.xml\", \
                   \"https://a.example/sitemap.xml\", { sitemap = \"https://a.example/news.php\" }";
        let s = parse_str(&property("", all)).unwrap();
        let p = &s.properties[0];
        assert_eq!(p.remote_sitemaps(), ["https://a.example/sitemap.xml", "https://a.example/news.php"]);
        assert_eq!(p.submitted_sitemaps(Google), p.remote_sitemaps());
        assert!(p.submitted_sitemaps(Bing).is_empty(), "[bing] sitemaps = false");
        assert!(p.submitted_sitemaps(IndexNow).is_empty());
        let s = parse_str(&property("sitemaps = false", all)).unwrap();
        assert!(s.properties[0].submitted_sitemaps(Google).is_empty());
        let s = parse_str(&property("indexing = false", all)).unwrap();
        let google = s.properties[0].google.as_ref().unwrap();
        assert_eq!((google.indexing, google.sitemaps), (false, true));
        for (google, sources, what) in [
            ("indexing = false", "\"https://a.example/robots.txt\"", "no source of the property is a remote sitemap"),
            ("indexing = false, sitemaps = false", all, "this table sends nothing to Google"),
            ("indexing = false, skip_indexed = true", all, "`skip_indexed` inspects URLs before"),
        ] {
            let e = error_of(&property(google, sources));
            assert!(e.place.ends_with("`property[0].google`"), "{google}: {}", e.place);
            assert!(e.message.contains(what), "{google}: {}", e.message);
        }
    }

    #[test]
    fn bing_property_needs_an_api_key() {
        let e = error_of("[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nbing = {}\n");
        assert!(e.place.ends_with("`property[0].bing`"), "{}", e.place);
    }
}
