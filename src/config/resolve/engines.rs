//! The engine tables: `[indexnow]`, `[bing]` and `[google]`, the settings
//! every property that uses the engine shares.

use url::Url;

use super::Resolver;
use crate::config::raw::{RawBaidu, RawBing, RawGoogle, RawIndexNow, RawYandex};
use crate::config::{
    defaults, BaiduSettings, BingSettings, ConfigError, GoogleSettings, IndexNowSettings, YandexSettings,
};

impl Resolver<'_> {
    /// `[indexnow]`: its endpoints (each listed once) and the shared pool.
    pub(super) fn indexnow(&self, raw: &RawIndexNow) -> Result<IndexNowSettings, ConfigError> {
        let endpoints = match &raw.endpoints {
            None => vec![Url::parse(defaults::INDEXNOW_ENDPOINT).expect("built-in endpoint is a valid URL")],
            Some(list) => {
                let mut urls = Vec::new();
                for v in list {
                    let url = self.service_url(v, "indexnow.endpoints")?;
                    if urls.contains(&url) {
                        return Err(self.err(v, "indexnow.endpoints", format!("`{url}` is listed twice")));
                    }
                    urls.push(url);
                }
                urls
            }
        };
        Ok(IndexNowSettings {
            endpoints,
            daily_quota: raw.daily_quota,
            quota_timezone: self.timezone(
                raw.quota_timezone.as_ref(),
                "indexnow.quota_timezone",
                defaults::INDEXNOW_QUOTA_TIMEZONE,
            )?,
        })
    }

    /// `[bing]`: the API key's source, the endpoint and the key's pool.
    pub(super) fn bing(&self, raw: &RawBing) -> Result<BingSettings, ConfigError> {
        Ok(BingSettings {
            api_key: self.secret(
                raw.api_key_env.as_ref(),
                raw.api_key_file.as_ref(),
                "bing.api_key",
                "the Bing Webmaster API key",
            )?,
            endpoint: self.endpoint(raw.endpoint.as_ref(), "bing.endpoint", defaults::BING_ENDPOINT)?,
            quota_timezone: self.timezone(
                raw.quota_timezone.as_ref(),
                "bing.quota_timezone",
                defaults::BING_QUOTA_TIMEZONE,
            )?,
            daily_quota: raw.daily_quota,
            monthly_quota: raw.monthly_quota,
            sitemaps: raw.sitemaps.unwrap_or(defaults::BING_SITEMAPS),
        })
    }

    /// `[baidu]`: the push token's source and the endpoint.
    pub(super) fn baidu(&self, raw: &RawBaidu) -> Result<BaiduSettings, ConfigError> {
        Ok(BaiduSettings {
            token: self.secret(raw.token_env.as_ref(), raw.token_file.as_ref(), "baidu.token", "Baidu's push token")?,
            endpoint: self.endpoint(raw.endpoint.as_ref(), "baidu.endpoint", defaults::BAIDU_ENDPOINT)?,
        })
    }

    /// `[yandex]`: the OAuth token's source and the endpoint.
    pub(super) fn yandex(&self, raw: &RawYandex) -> Result<YandexSettings, ConfigError> {
        Ok(YandexSettings {
            token: self.secret(
                raw.token_env.as_ref(),
                raw.token_file.as_ref(),
                "yandex.token",
                "the Yandex OAuth token",
            )?,
            endpoint: self.endpoint(raw.endpoint.as_ref(), "yandex.endpoint", defaults::YANDEX_ENDPOINT)?,
        })
    }

    /// `[google]`: the key file, the endpoints, the project's pool and pace.
    pub(super) fn google(&self, raw: &RawGoogle) -> Result<GoogleSettings, ConfigError> {
        Ok(GoogleSettings {
            credentials: raw.credentials.as_ref().map(|v| self.path_value(v.get_ref())),
            endpoint: self.endpoint(raw.endpoint.as_ref(), "google.endpoint", defaults::GOOGLE_ENDPOINT)?,
            inspection_endpoint: self.endpoint(
                raw.inspection_endpoint.as_ref(),
                "google.inspection_endpoint",
                defaults::GOOGLE_INSPECTION_ENDPOINT,
            )?,
            quota_timezone: self.timezone(
                raw.quota_timezone.as_ref(),
                "google.quota_timezone",
                defaults::GOOGLE_QUOTA_TIMEZONE,
            )?,
            daily_quota: raw.daily_quota.unwrap_or(defaults::GOOGLE_DAILY_QUOTA),
            requests_per_minute: match &raw.requests_per_minute {
                None => defaults::GOOGLE_REQUESTS_PER_MINUTE,
                Some(v) if *v.get_ref() == 0 => {
                    return Err(self.err(v, "google.requests_per_minute", "must be at least 1"))
                }
                Some(v) => *v.get_ref(),
            },
            sitemaps: raw.sitemaps.unwrap_or(defaults::GOOGLE_SITEMAPS),
        })
    }
}
