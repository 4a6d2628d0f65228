//! The local-disk loader.
//!
//! Invariant: nothing outside the base location is read. A link (a
//! configured directory, or a file in one) is followed when what it names
//! lies below the base location's real path, and refused otherwise, naming
//! it: a link checked into a repository of migrations must not make the
//! service read, run and serve (`contents`) a file of its host, such as a
//! mounted secret.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use strata_core::migrate::source::SourceFile;

use crate::loader::{Loader, LoaderError};

/// Reads migrations from a directory on local disk.
#[derive(Clone)]
pub(crate) struct LocalLoader {
    base: PathBuf,
}

impl LocalLoader {
    /// A loader for `base` (relative paths resolve against the working
    /// directory).
    pub(crate) fn new(base: &str) -> Self {
        LocalLoader { base: PathBuf::from(base) }
    }

    fn location(&self) -> String {
        self.base.display().to_string()
    }

    fn read_blocking(&self, directories: Vec<String>) -> Result<Vec<SourceFile>, LoaderError> {
        self.check_blocking()?;
        let base = std::fs::canonicalize(&self.base)
            .map_err(|e| LoaderError::BaseLocation { location: self.location(), message: e.to_string() })?;
        let mut files = Vec::new();
        for directory in directories {
            let path = self.base.join(&directory);
            let unreadable = |message: String| LoaderError::Directory {
                location: self.location(),
                directory: directory.clone(),
                message,
            };
            if let Some(outside) = outside(&base, &path).map_err(|e| unreadable(e.to_string()))? {
                return Err(unreadable(outside));
            }
            let entries = std::fs::read_dir(&path).map_err(|e| unreadable(e.to_string()))?;
            for entry in entries {
                let entry = entry.map_err(|e| LoaderError::Directory {
                    location: self.location(),
                    directory: directory.clone(),
                    message: e.to_string(),
                })?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let file = format!("{directory}/{name}");
                let link = entry.file_type().is_ok_and(|kind| kind.is_symlink());
                if link && let Some(outside) = outside(&base, &entry.path()).unwrap_or(None) {
                    return Err(LoaderError::File { file, message: outside });
                }
                let metadata = std::fs::metadata(entry.path())
                    .map_err(|e| LoaderError::File { file: file.clone(), message: e.to_string() })?;
                if metadata.is_dir() && !name.starts_with('.') {
                    super::subdirectory_not_read(&file);
                }
                if !metadata.is_file() {
                    continue;
                }
                if metadata.len() > super::MAX_FILE_BYTES {
                    return Err(super::too_large(file, metadata.len()));
                }
                let bytes =
                    std::fs::read(entry.path()).map_err(|e| LoaderError::File { file, message: e.to_string() })?;
                files.push(SourceFile { directory: directory.clone(), name, bytes });
            }
        }
        Ok(files)
    }

    fn check_blocking(&self) -> Result<(), LoaderError> {
        let metadata = std::fs::metadata(&self.base)
            .map_err(|e| LoaderError::BaseLocation { location: self.location(), message: e.to_string() })?;
        if !metadata.is_dir() {
            return Err(LoaderError::BaseLocation { location: self.location(), message: "not a directory".into() });
        }
        std::fs::read_dir(&self.base)
            .map(|_| ())
            .map_err(|e| LoaderError::BaseLocation { location: self.location(), message: e.to_string() })
    }
}

/// Why `path` is not read when it resolves outside `base` (the base
/// location's real path); `None` when it lies below it. A link whose target
/// does not exist is left to the read, which then says so.
fn outside(base: &Path, path: &Path) -> std::io::Result<Option<String>> {
    let real = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok((!real.starts_with(base)).then(|| {
        format!(
            "it is a link to {}, outside the base location {}: only files below the base location are read \
             (point baseLocation at a directory that holds both)",
            real.display(),
            base.display()
        )
    }))
}

#[async_trait]
impl Loader for LocalLoader {
    async fn read(&self, directories: Vec<String>) -> Result<Vec<SourceFile>, LoaderError> {
        let loader = self.clone();
        tokio::task::spawn_blocking(move || loader.read_blocking(directories))
            .await
            .unwrap_or_else(|e| Err(LoaderError::BaseLocation { location: self.location(), message: e.to_string() }))
    }

    async fn check(&self) -> Result<(), LoaderError> {
        let loader = self.clone();
        tokio::task::spawn_blocking(move || loader.check_blocking())
            .await
            .unwrap_or_else(|e| Err(LoaderError::BaseLocation { location: self.location(), message: e.to_string() }))
    }
}
