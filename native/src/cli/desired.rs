//! The desired schema a command line command is given, read in-process
//! (`diff`, `new`, `apply` and `rollout start` with `--desired`).

use std::path::Path;

use crate::cli::Exit;
use crate::cli::output::failure;
use crate::service::Service;

/// The desired schema a command is given: `--desired FILE` (a file on this
/// machine) or, with `--desired` alone or not at all, the configuration's
/// `desiredSchema` of the tenants (`single`: `None`) or of the single
/// schema `single`. Its name as shown, and its text; what went wrong is
/// said.
pub(super) async fn read_desired(
    service: &Service,
    file: Option<&Path>,
    single: Option<&str>,
) -> Result<(String, String), Exit> {
    if let Some(file) = file {
        let shown = file.display().to_string();
        return std::fs::read_to_string(file).map(|text| (shown.clone(), text)).map_err(|error| {
            eprintln!("strata: {shown}: {error}");
            Exit::Usage
        });
    }
    match service.configured_desired_schema(single).await {
        Ok(Some(desired)) => Ok(desired),
        Ok(None) => {
            eprintln!("strata: {}", crate::service::desired::no_desired_schema(single, "give --desired FILE"));
            Err(Exit::Usage)
        }
        Err(error) => Err(failure(&error)),
    }
}
