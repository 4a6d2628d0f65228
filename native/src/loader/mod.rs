//! Migration sources: read the files of the configured directories from the
//! base location. Only the local-disk loader exists today; object-storage
//! loaders implement the same trait.

mod local;

use std::sync::Arc;

use async_trait::async_trait;
use strata_core::source::SourceFile;
use thiserror::Error;

pub use local::LocalLoader;

/// Why reading the base location failed.
#[derive(Debug, Error)]
pub enum LoaderError {
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

/// A place migrations are read from.
#[async_trait]
pub trait Loader: Send + Sync {
    /// Reads every file directly inside each of `directories` (not
    /// recursively), with its raw bytes.
    async fn read(&self, directories: Vec<String>) -> Result<Vec<SourceFile>, LoaderError>;
    /// Checks that the base location can be opened, without side effects.
    async fn check(&self) -> Result<(), LoaderError>;
}

/// Chooses the loader for a base location.
pub fn for_location(base_location: &str) -> Result<Arc<dyn Loader>, LoaderError> {
    if base_location.starts_with("s3://") || base_location.starts_with("https://") {
        return Err(LoaderError::BaseLocation {
            location: base_location.to_string(),
            message: "object-storage locations are not supported by this build yet; use a local path".into(),
        });
    }
    Ok(Arc::new(LocalLoader::new(base_location)))
}
