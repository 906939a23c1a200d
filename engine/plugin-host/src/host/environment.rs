//! The process environment as the host's credential lookups read it (AWS's
//! chain, Vault's token, SOPS's age identities): the real one in use, a
//! fixed map in tests.

use std::collections::HashMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The variables a lookup reads.
pub trait Environment {
    /// The variable `name`, if set and not empty.
    fn var(&self, name: &str) -> Option<String>;

    /// `$HOME`, if set.
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }
}

/// The process environment.
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|value| !value.is_empty())
    }
}

impl Environment for HashMap<&str, String> {
    fn var(&self, name: &str) -> Option<String> {
        self.get(name).cloned()
    }
}

/// The most bytes of a credential file: a token, a key, a CA bundle, AWS's
/// shared files.
pub const MAX_CREDENTIAL_FILE: u64 = 1024 * 1024;

/// The bytes of the credential file `path`, which must be a regular file (a
/// link is followed to one) of at most [`MAX_CREDENTIAL_FILE`] bytes: a
/// device (`/dev/zero`), a pipe or a directory is refused before it is
/// opened, so none can exhaust memory or hang the run.
pub fn read_credential(path: &Path) -> std::io::Result<Vec<u8>> {
    let too_big = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("more than {MAX_CREDENTIAL_FILE} bytes"),
        )
    };
    let not_a_file = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(not_a_file());
    }
    if metadata.len() > MAX_CREDENTIAL_FILE {
        return Err(too_big());
    }
    let file = std::fs::File::open(path)?;
    // What was opened, in case the path changed since.
    if !file.metadata()?.is_file() {
        return Err(not_a_file());
    }
    let mut bytes = Vec::new();
    file.take(MAX_CREDENTIAL_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CREDENTIAL_FILE {
        return Err(too_big());
    }
    Ok(bytes)
}

/// [`read_credential`], as text (not UTF-8 is an error).
pub fn read_credential_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_credential(path)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files built to exhaust memory or time are refused before a byte is
    /// read: a device, a pipe, a directory, a link to a device, a sparse
    /// giant.
    #[test]
    fn a_credential_file_is_a_small_regular_file_or_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let giant = dir.path().join("giant");
        std::fs::File::create(&giant)
            .unwrap()
            .set_len(64 * 1024 * 1024 * 1024)
            .unwrap();
        assert!(
            read_credential(&giant)
                .unwrap_err()
                .to_string()
                .contains("more than")
        );
        assert!(read_credential(Path::new("/dev/zero")).is_err());
        assert!(read_credential(dir.path()).is_err());
        #[cfg(unix)]
        {
            let link = dir.path().join("ca.pem");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert!(
                read_credential(&link)
                    .unwrap_err()
                    .to_string()
                    .contains("regular")
            );
            let fifo = dir.path().join("fifo");
            assert!(
                std::process::Command::new("mkfifo")
                    .arg(&fifo)
                    .status()
                    .unwrap()
                    .success()
            );
            assert!(
                read_credential(&fifo).is_err(),
                "a pipe is refused, not waited on"
            );
        }
        let ok = dir.path().join("token");
        std::fs::write(&ok, "hvs.x\n").unwrap();
        assert_eq!(read_credential_text(&ok).unwrap(), "hvs.x\n");
    }
}
