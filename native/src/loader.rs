//! Migration sources: read the files of the configured directories from the
//! base location — a local directory (`local`), or an S3 bucket or Azure
//! blob container (`object`, cargo features `s3` and `azure`), behind one
//! trait.

mod local;
#[cfg(any(feature = "s3", feature = "azure"))]
mod object;

use std::sync::Arc;

use async_trait::async_trait;
use strata_core::migrate::location::BaseLocation;
use strata_core::migrate::source::SourceFile;
use thiserror::Error;

pub(crate) use local::LocalLoader;

/// Why reading the base location failed.
#[derive(Debug, Error)]
pub(crate) enum LoaderError {
    /// The base location cannot be opened.
    #[error("base location {location} cannot be opened: {message}")]
    BaseLocation {
        /// The base location as configured.
        location: String,
        /// The underlying error.
        message: String,
    },
    /// A configured directory cannot be read.
    #[error("directory {directory} under {location} cannot be read: {message}")]
    Directory {
        /// The base location.
        location: String,
        /// The configured directory.
        directory: String,
        /// The underlying error.
        message: String,
    },
    /// A file cannot be read.
    #[error("file {file} cannot be read: {message}")]
    File {
        /// `directory/name`.
        file: String,
        /// The underlying error.
        message: String,
    },
}

/// Most bytes of one source file: a migration is SQL a person reviews; a
/// 400 MB object read whole for every request took gigabytes.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The refusal of a file over [`MAX_FILE_BYTES`].
pub(crate) fn too_large(file: String, bytes: u64) -> LoaderError {
    LoaderError::File {
        file,
        message: format!("it has {bytes} bytes, over the {MAX_FILE_BYTES} a migration file may have"),
    }
}

/// Says, once per process, that the subdirectory `path` of a configured
/// directory is not read: its files never run. Flyway reads its
/// locations' subdirectories (`V1_1__…` under `release_1_1/`), so a
/// directory moved from it would otherwise run only part of its versions,
/// its plan showing nothing else pending.
pub(crate) fn subdirectory_not_read(path: &str) {
    static SAID: std::sync::Mutex<std::collections::BTreeSet<String>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut said = SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if said.len() < 10_000 && said.insert(path.to_string()) {
        tracing::warn!(
            directory = %path,
            "a subdirectory is not read: its files never run (Flyway reads subdirectories; configure it as a \
             directory of its own)"
        );
    }
}

/// A place migrations are read from.
#[async_trait]
pub(crate) trait Loader: Send + Sync {
    /// Reads every file directly inside each of `directories` (not
    /// recursively), with its raw bytes.
    async fn read(&self, directories: Vec<String>) -> Result<Vec<SourceFile>, LoaderError>;
    /// Checks that the base location can be opened, without side effects.
    async fn check(&self) -> Result<(), LoaderError>;
}

/// Chooses the loader for a base location (see `strata_core::migrate::location`).
pub(crate) fn for_location(base_location: &str) -> Result<Arc<dyn Loader>, LoaderError> {
    let fail = |message: String| LoaderError::BaseLocation { location: base_location.to_string(), message };
    let parsed = BaseLocation::parse(base_location).map_err(|e| fail(e.to_string()))?;
    match &parsed {
        BaseLocation::Local(path) => Ok(Arc::new(LocalLoader::new(path))),
        #[cfg(feature = "s3")]
        BaseLocation::S3 { bucket, prefix } => {
            let store = object::s3_store(bucket).map_err(|e| fail(e.to_string()))?;
            Ok(Arc::new(object_loader(store, base_location, prefix, parsed.clone())))
        }
        #[cfg(feature = "azure")]
        BaseLocation::AzureBlob { account, container, prefix } => {
            let store = object::azure_store(account, container).map_err(|e| fail(e.to_string()))?;
            Ok(Arc::new(object_loader(store, base_location, prefix, parsed.clone())))
        }
        #[allow(unreachable_patterns)]
        _ => Err(fail("this build has no loader for this kind of location (cargo features s3, azure)".into())),
    }
}

#[cfg(any(feature = "s3", feature = "azure"))]
fn object_loader(
    store: Arc<dyn object_store::ObjectStore>,
    base_location: &str,
    prefix: &str,
    parsed: BaseLocation,
) -> object::ObjectStoreLoader {
    object::ObjectStoreLoader::new(store, base_location, prefix, move |directory| {
        parsed.directory_key(directory).unwrap_or_else(|| directory.to_string())
    })
}
