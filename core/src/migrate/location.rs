//! `baseLocation`: which storage holds the migrations, by the spec's rules.
//!
//! - `s3://bucket/optional/prefix` — an S3 (or S3-compatible) bucket;
//! - `https://<account>.blob.core.windows.net/<container>/optional/prefix` —
//!   an Azure blob container;
//! - anything else — a local path.

use thiserror::Error;

/// The domain suffix of Azure blob storage endpoints.
pub const BLOB_HOST_SUFFIX: &str = ".blob.core.windows.net";

/// A parsed `baseLocation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseLocation {
    /// A directory on local disk.
    Local(String),
    /// An S3 bucket and a key prefix (no leading or trailing `/`; may be empty).
    S3 {
        /// Bucket name.
        bucket: String,
        /// Key prefix.
        prefix: String,
    },
    /// An Azure blob container and a name prefix.
    AzureBlob {
        /// Storage account (the host's first label).
        account: String,
        /// Container name.
        container: String,
        /// Blob name prefix.
        prefix: String,
    },
}

/// Why a `baseLocation` was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LocationError {
    /// `s3://` without a bucket.
    #[error("baseLocation {0:?}: s3:// needs a bucket name")]
    MissingBucket(String),
    /// A blob URL without a container.
    #[error(
        "baseLocation {0:?}: a blob storage URL needs a container: https://<account>.blob.core.windows.net/<container>"
    )]
    MissingContainer(String),
}

impl BaseLocation {
    /// Parses a `baseLocation` value.
    pub fn parse(text: &str) -> Result<BaseLocation, LocationError> {
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(LocationError::MissingBucket(text.to_string()));
            }
            return Ok(BaseLocation::S3 { bucket: bucket.to_string(), prefix: clean_prefix(prefix) });
        }
        if let Some(rest) = text.strip_prefix("https://") {
            let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
            if let Some(account) = host.to_ascii_lowercase().strip_suffix(BLOB_HOST_SUFFIX)
                && !account.is_empty()
                && !account.contains('.')
            {
                let (container, prefix) = path.split_once('/').unwrap_or((path, ""));
                if container.is_empty() {
                    return Err(LocationError::MissingContainer(text.to_string()));
                }
                return Ok(BaseLocation::AzureBlob {
                    account: account.to_string(),
                    container: container.to_string(),
                    prefix: clean_prefix(prefix),
                });
            }
        }
        Ok(BaseLocation::Local(text.to_string()))
    }

    /// The object-store key of a configured directory (`prefix/dir`, or
    /// `dir` without a prefix). `None` for local paths.
    pub fn directory_key(&self, directory: &str) -> Option<String> {
        match self {
            BaseLocation::Local(_) => None,
            BaseLocation::S3 { prefix, .. } | BaseLocation::AzureBlob { prefix, .. } if prefix.is_empty() => {
                Some(directory.to_string())
            }
            BaseLocation::S3 { prefix, .. } | BaseLocation::AzureBlob { prefix, .. } => {
                Some(format!("{prefix}/{directory}"))
            }
        }
    }
}

fn clean_prefix(prefix: &str) -> String {
    prefix.split('/').filter(|part| !part.is_empty()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_forms() {
        assert_eq!(
            BaseLocation::parse("s3://my-bucket/app/migrations/").unwrap(),
            BaseLocation::S3 { bucket: "my-bucket".into(), prefix: "app/migrations".into() }
        );
        assert_eq!(
            BaseLocation::parse("s3://my-bucket").unwrap(),
            BaseLocation::S3 { bucket: "my-bucket".into(), prefix: String::new() }
        );
        assert_eq!(
            BaseLocation::parse("https://acct.blob.core.windows.net/mig/prod").unwrap(),
            BaseLocation::AzureBlob { account: "acct".into(), container: "mig".into(), prefix: "prod".into() }
        );
        assert_eq!(
            BaseLocation::parse("https://acct.blob.core.windows.net/mig").unwrap(),
            BaseLocation::AzureBlob { account: "acct".into(), container: "mig".into(), prefix: String::new() }
        );
        for local in ["migrations", "/srv/migrations", "./m", "https://example.com/x", "s3:/nope"] {
            assert_eq!(BaseLocation::parse(local).unwrap(), BaseLocation::Local(local.into()), "{local}");
        }
    }

    #[test]
    fn refuses_incomplete_cloud_locations() {
        assert_eq!(BaseLocation::parse("s3://"), Err(LocationError::MissingBucket("s3://".into())));
        assert!(matches!(
            BaseLocation::parse("https://acct.blob.core.windows.net/"),
            Err(LocationError::MissingContainer(_))
        ));
    }

    #[test]
    fn directory_keys_join_the_prefix() {
        let s3 = BaseLocation::parse("s3://b/p/q").unwrap();
        assert_eq!(s3.directory_key("tenants").as_deref(), Some("p/q/tenants"));
        let bare = BaseLocation::parse("s3://b").unwrap();
        assert_eq!(bare.directory_key("scripts/config").as_deref(), Some("scripts/config"));
        assert_eq!(BaseLocation::parse("m").unwrap().directory_key("x"), None);
    }
}
