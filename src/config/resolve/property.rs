//! `[[property]]`: each site indexq submits for, and its engine tables
//! (`indexnow`, `bing`, `google`), whose timezones default to their engine
//! table's.

use toml::Spanned;
use url::Url;

use super::Resolver;
use crate::config::raw::{RawPropBing, RawPropGoogle, RawPropIndexNow, RawProperty, S};
use crate::config::{
    defaults, BingSettings, ConfigError, GoogleSettings, IndexNowSettings, Property, PropertyBing, PropertyGoogle,
    PropertyIndexNow,
};

impl Resolver<'_> {
    /// Every `[[property]]`, in order; names and sites are each used once.
    pub(super) fn properties(
        &self,
        raw: &[S<RawProperty>],
        indexnow: &IndexNowSettings,
        bing: &BingSettings,
        google: &GoogleSettings,
    ) -> Result<Vec<Property>, ConfigError> {
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
                indexnow: rp.indexnow.as_ref().map(|t| self.property_indexnow(t, &prefix, indexnow)).transpose()?,
                bing: rp.bing.as_ref().map(|t| self.property_bing(t, &prefix, &site, bing)).transpose()?,
                google: rp.google.as_ref().map(|t| self.property_google(t, &prefix, &site, google)).transpose()?,
                name,
                site,
            };
            properties.push(property);
        }
        Ok(properties)
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
        })
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
        })
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
    fn bing_property_needs_an_api_key() {
        let e = error_of("[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nbing = {}\n");
        assert!(e.place.ends_with("`property[0].bing`"), "{}", e.place);
    }
}
