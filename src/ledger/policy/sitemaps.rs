//! What a read of an engine's report on a sitemap leaves: since when its
//! problems hold.

use crate::model::SitemapRead;
use chrono::{DateTime, Utc};

/// Since when a sitemap group's problems have held, as a read of the
/// engine's report leaves them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SitemapMarks {
    /// The reports have said the sitemap has errors since then.
    pub errors_since: Option<DateTime<Utc>>,
    /// Reads have failed with the same reason since then.
    pub failure_since: Option<DateTime<Utc>>,
}

/// The marks a read (`read`, at `at`) leaves after `before` (the group's
/// marks) and, if the last read failed, its reason (`failed_before`):
/// errors count from the first report that said so, while the reports keep
/// saying it; a failed read leaves the last report's mark and counts from
/// the first failure of its reason.
pub fn sitemap_marks(
    before: &SitemapMarks,
    failed_before: Option<&str>,
    read: &SitemapRead,
    at: DateTime<Utc>,
) -> SitemapMarks {
    match read {
        SitemapRead::Read(reading) => SitemapMarks {
            errors_since: (reading.errors > 0).then(|| before.errors_since.unwrap_or(at)),
            failure_since: None,
        },
        SitemapRead::Failed(failure) => {
            let same = failed_before == Some(failure.reason.to_string().as_str());
            let since = before.failure_since.filter(|_| same);
            SitemapMarks { errors_since: before.errors_since, failure_since: Some(since.unwrap_or(at)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Class, MisconfiguredReason, ReadFailure, SitemapReading};
    use chrono::TimeDelta;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn a_report_read_leaves_since_when_its_problems_hold() {
        let (t1, t2) = (at("2026-12-03T00:00:00Z"), at("2026-12-03T06:00:00Z"));
        let errors = SitemapRead::Read(SitemapReading { errors: 1, ..Default::default() });
        let clean = SitemapRead::Read(SitemapReading::default());
        let failed = |reason: MisconfiguredReason| {
            SitemapRead::Failed(ReadFailure {
                class: Class::Misconfigured,
                reason: reason.into(),
                message: String::new(),
                hint: None,
                http_status: Some(403),
            })
        };
        let first = sitemap_marks(&SitemapMarks::default(), None, &errors, t1);
        assert_eq!(first, SitemapMarks { errors_since: Some(t1), failure_since: None });
        assert_eq!(sitemap_marks(&first, None, &errors, t2).errors_since, Some(t1), "still the first");
        assert_eq!(sitemap_marks(&first, None, &clean, t2), SitemapMarks::default());
        let refused = sitemap_marks(&first, None, &failed(MisconfiguredReason::NotPropertyUser), t2);
        assert_eq!(refused, SitemapMarks { errors_since: Some(t1), failure_since: Some(t2) }, "the report stands");
        let later = t2 + TimeDelta::hours(6);
        let again =
            sitemap_marks(&refused, Some("not_property_user"), &failed(MisconfiguredReason::NotPropertyUser), later);
        assert_eq!(again.failure_since, Some(t2));
        let other =
            sitemap_marks(&refused, Some("not_property_user"), &failed(MisconfiguredReason::PropertyNotFound), later);
        assert_eq!(other.failure_since, Some(later), "another reason counts anew");
    }
}
