//! The object-storage loader: S3 buckets and Azure blob containers through
//! `object_store`.
//!
//! A configured directory means exactly the objects directly under
//! `<prefix>/<dir>/` (the delimiter listing: `tenants` does not also match
//! `tenants-scripts/`, and deeper "folders" are not descended into). Listing
//! pages through large containers; objects are fetched with a bounded number
//! of requests in flight.

use std::sync::Arc;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_core::migrate::source::SourceFile;

use crate::loader::{Loader, LoaderError};

/// GET requests in flight at once.
pub(crate) const CONCURRENT_REQUESTS: usize = 32;

/// Reads migrations from an object store.
pub(crate) struct ObjectStoreLoader {
    store: Arc<dyn ObjectStore>,
    /// `baseLocation` as configured, for messages (holds no credentials).
    location: String,
    /// Key of each configured directory: `prefix/dir` or `dir`.
    directory_key: Box<dyn Fn(&str) -> String + Send + Sync>,
    prefix: Option<Path>,
}

impl ObjectStoreLoader {
    /// A loader over `store`, where directory `d` lives at `key(d)`.
    pub(crate) fn new(
        store: Arc<dyn ObjectStore>,
        location: &str,
        prefix: &str,
        directory_key: impl Fn(&str) -> String + Send + Sync + 'static,
    ) -> Self {
        ObjectStoreLoader {
            store,
            location: location.to_string(),
            directory_key: Box::new(directory_key),
            prefix: (!prefix.is_empty()).then(|| Path::from(prefix)),
        }
    }

    fn base_error(&self, error: object_store::Error) -> LoaderError {
        LoaderError::BaseLocation { location: self.location.clone(), message: error.to_string() }
    }
}

#[async_trait]
impl Loader for ObjectStoreLoader {
    async fn read(&self, directories: Vec<String>) -> Result<Vec<SourceFile>, LoaderError> {
        let mut wanted: Vec<(String, Path)> = Vec::new();
        for directory in directories {
            let key = Path::from((self.directory_key)(&directory));
            let listing = self.store.list_with_delimiter(Some(&key)).await.map_err(|e| LoaderError::Directory {
                location: self.location.clone(),
                directory: directory.clone(),
                message: e.to_string(),
            })?;
            for object in listing.objects {
                // A "folder" marker (`dir/`, as a console's "Create folder"
                // makes): the directory itself, no file of it.
                if object.location == key {
                    continue;
                }
                let size = object.size;
                if size > super::MAX_FILE_BYTES {
                    let name = object.location.filename().unwrap_or_default();
                    return Err(super::too_large(format!("{directory}/{name}"), size));
                }
                wanted.push((directory.clone(), object.location));
            }
            for prefix in listing.common_prefixes {
                let name = prefix.filename().unwrap_or_default();
                if !name.starts_with('.') {
                    super::subdirectory_not_read(&format!("{directory}/{name}"));
                }
            }
        }
        futures::stream::iter(wanted)
            .map(|(directory, path)| async move {
                let name = path.filename().unwrap_or_default().to_string();
                let file = format!("{directory}/{name}");
                let bytes = async { self.store.get(&path).await?.bytes().await }
                    .await
                    .map_err(|e| LoaderError::File { file, message: e.to_string() })?;
                Ok(SourceFile { directory, name, bytes: bytes.to_vec() })
            })
            .buffered(CONCURRENT_REQUESTS)
            .try_collect()
            .await
    }

    async fn check(&self) -> Result<(), LoaderError> {
        match self.store.list(self.prefix.as_ref()).next().await {
            Some(Err(e)) => Err(self.base_error(e)),
            _ => Ok(()),
        }
    }
}

/// The S3 store of `bucket`, configured from the standard AWS environment
/// (credentials chain, `AWS_REGION`, `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, …).
#[cfg(feature = "s3")]
pub(crate) fn s3_store(bucket: &str) -> Result<Arc<dyn ObjectStore>, object_store::Error> {
    let store = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket).build()?;
    Ok(Arc::new(store))
}

/// The Azure blob store of `container` in `account`: shared key from
/// `BLOB_STORAGE_ACCOUNT` / `BLOB_STORAGE_ACCESS_KEY` when set, else what the
/// `AZURE_*` environment configures, else a managed identity.
#[cfg(feature = "azure")]
pub(crate) fn azure_store(account: &str, container: &str) -> Result<Arc<dyn ObjectStore>, object_store::Error> {
    let mut builder = object_store::azure::MicrosoftAzureBuilder::from_env()
        .with_account(std::env::var("BLOB_STORAGE_ACCOUNT").unwrap_or_else(|_| account.to_string()))
        .with_container_name(container);
    if let Ok(key) = std::env::var("BLOB_STORAGE_ACCESS_KEY") {
        builder = builder.with_access_key(key);
    }
    Ok(Arc::new(builder.build()?))
}
