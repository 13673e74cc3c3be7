//! Writing rendered credentials: stdout, or a file only the job's user can read.

use std::fs::{OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use secrecy::ExposeSecret;

use super::Error;
use super::format::{Destination, Rendered};

pub(super) fn write(destination: &Destination, rendered: &Rendered) -> Result<(), Error> {
    let text = rendered.text.expose_secret().as_bytes();
    match destination {
        Destination::Stdout => stdout(text),
        Destination::File(path) => write_private(path, text, false),
        Destination::EnvFile { env_file } => {
            if let Some(masks) = &rendered.masks {
                stdout(masks.expose_secret().as_bytes())?;
            }
            write_private(env_file, text, true)
        }
    }
}

fn stdout(bytes: &[u8]) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(|e| Error::Output(format!("cannot write to stdout: {e}")))
}

/// Creates with mode 0600, and narrows an existing file to 0600 before any secret is written;
/// `append` keeps what is there (`$GITHUB_ENV` holds other steps' variables).
fn write_private(path: &Path, bytes: &[u8], append: bool) -> Result<(), Error> {
    let failed = |e: std::io::Error| Error::Output(format!("cannot write {}: {e}", path.display()));
    let mut options = OpenOptions::new();
    options.create(true).mode(0o600);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    let mut file = options.open(path).map_err(failed)?;
    file.set_permissions(Permissions::from_mode(0o600)).map_err(failed)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(failed)
}
