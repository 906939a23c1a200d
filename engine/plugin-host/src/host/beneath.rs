//! The host's writes in a directory a guest can write to (scratch): each one
//! through a directory handle, one path component at a time, never
//! following a symbolic link. A link a plugin planted where the host writes
//! (`/scratch/artifacts` pointing into the user's repository) makes the write
//! fail; it never leads the host out.
#![allow(unsafe_code)]

use std::io;
use std::path::{Component, Path};

/// A directory, held open; paths below it never follow a link.
#[derive(Debug)]
pub struct Beneath {
    #[cfg(unix)]
    dir: std::os::fd::OwnedFd,
    #[cfg(not(unix))]
    dir: std::path::PathBuf,
}

impl Beneath {
    /// Open `root`, a directory the host made (not a link).
    pub fn open(root: &Path) -> io::Result<Self> {
        #[cfg(unix)]
        {
            let path = c_string(root.as_os_str())?;
            // SAFETY: open takes a NUL-terminated path we own; the result is
            // a new descriptor we take ownership of.
            let fd = unsafe { libc::open(path.as_ptr(), DIRECTORY) };
            own(fd).map(|dir| Self { dir })
        }
        #[cfg(not(unix))]
        {
            if root.symlink_metadata()?.file_type().is_symlink() {
                return Err(io::Error::other("a symbolic link"));
            }
            Ok(Self {
                dir: root.to_owned(),
            })
        }
    }

    /// The directory at `relative` (made of plain names only), created with
    /// its parents where missing. A link anywhere on the way is an error.
    pub fn create_dir_all(&self, relative: &Path) -> io::Result<Self> {
        let mut current = self.duplicate()?;
        for name in names(relative)? {
            current = match current.child_dir(name) {
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    current.make_dir(name)?;
                    current.child_dir(name)?
                }
                other => other?,
            };
        }
        Ok(current)
    }

    /// Create the directory `name` here; an existing entry (a link too) is
    /// `AlreadyExists`.
    pub fn make_dir(&self, name: &str) -> io::Result<()> {
        #[cfg(unix)]
        {
            let name = c_string(name.as_ref())?;
            // SAFETY: mkdirat takes our descriptor and a NUL-terminated name.
            if unsafe { libc::mkdirat(self.raw(), name.as_ptr(), 0o755) } != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        }
        #[cfg(not(unix))]
        std::fs::create_dir(self.dir.join(name))
    }

    /// Write `bytes` to the file at `relative` (its parents created), never
    /// through a link, and never executable.
    pub fn write(&self, relative: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut names = names(relative)?;
        let file = names
            .pop()
            .ok_or_else(|| io::Error::other("an empty file name"))?;
        let parent = self.create_dir_all(&names.iter().collect::<std::path::PathBuf>())?;
        #[cfg(unix)]
        {
            use std::io::Write;
            let name = c_string(file.as_ref())?;
            let flags = libc::O_WRONLY
                | libc::O_CREAT
                | libc::O_TRUNC
                | libc::O_NOFOLLOW
                | libc::O_CLOEXEC
                | libc::O_NOCTTY;
            // SAFETY: openat takes our descriptor and a NUL-terminated name;
            // the result is a new descriptor we own.
            let fd = unsafe { libc::openat(parent.raw(), name.as_ptr(), flags, 0o644) };
            let mut opened = std::fs::File::from(own(fd)?);
            if !opened.metadata()?.is_file() {
                return Err(io::Error::other("not a regular file"));
            }
            opened.write_all(bytes)
        }
        #[cfg(not(unix))]
        {
            let target = parent.dir.join(file);
            if target.symlink_metadata().is_ok_and(|m| !m.is_file()) {
                return Err(io::Error::other("not a regular file"));
            }
            std::fs::write(target, bytes)
        }
    }

    fn child_dir(&self, name: &str) -> io::Result<Self> {
        #[cfg(unix)]
        {
            let name = c_string(name.as_ref())?;
            // SAFETY: as in `write`.
            let fd = unsafe { libc::openat(self.raw(), name.as_ptr(), DIRECTORY) };
            own(fd).map(|dir| Self { dir })
        }
        #[cfg(not(unix))]
        {
            let path = self.dir.join(name);
            if path.symlink_metadata()?.file_type().is_symlink() {
                return Err(io::Error::other("a symbolic link"));
            }
            Ok(Self { dir: path })
        }
    }

    fn duplicate(&self) -> io::Result<Self> {
        #[cfg(unix)]
        {
            Ok(Self {
                dir: self.dir.try_clone()?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {
            dir: self.dir.clone(),
        })
    }

    #[cfg(unix)]
    fn raw(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.dir)
    }
}

/// A directory, opened without following a link at its last component.
#[cfg(unix)]
const DIRECTORY: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

#[cfg(unix)]
fn own(fd: libc::c_int) -> io::Result<std::os::fd::OwnedFd> {
    if fd < 0 {
        let error = io::Error::last_os_error();
        // A link where a directory or file was expected.
        if error.raw_os_error() == Some(libc::ELOOP) || error.raw_os_error() == Some(libc::ENOTDIR)
        {
            return Err(io::Error::other("a symbolic link or not a directory"));
        }
        return Err(error);
    }
    // SAFETY: `fd` is a descriptor the kernel just gave us.
    Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
}

#[cfg(unix)]
fn c_string(text: &std::ffi::OsStr) -> io::Result<std::ffi::CString> {
    std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(text))
        .map_err(|_| io::Error::other("a NUL byte in a name"))
}

/// The plain names of `relative`; anything else (`..`, a root) is an error.
fn names(relative: &Path) -> io::Result<Vec<&str>> {
    relative
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|component| match component {
            Component::Normal(name) => name
                .to_str()
                .ok_or_else(|| io::Error::other("a name that is not UTF-8")),
            _ => Err(io::Error::other(format!(
                "`{}` leaves its directory",
                relative.display()
            ))),
        })
        .collect()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_link_at_any_step_stops_the_write_and_nothing_lands_outside() {
        let scratch = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let handle = Beneath::open(scratch.path()).unwrap();
        // A link where the directory goes, one in the middle, one as the file.
        std::os::unix::fs::symlink(outside.path(), scratch.path().join("artifacts")).unwrap();
        assert!(handle.create_dir_all(Path::new("artifacts/0")).is_err());
        assert!(handle.write(Path::new("artifacts/a.yaml"), b"x").is_err());
        std::fs::create_dir(scratch.path().join("real")).unwrap();
        std::os::unix::fs::symlink(outside.path(), scratch.path().join("real/mid")).unwrap();
        assert!(handle.write(Path::new("real/mid/a.yaml"), b"x").is_err());
        std::os::unix::fs::symlink(
            outside.path().join("planted"),
            scratch.path().join("real/f"),
        )
        .unwrap();
        assert!(handle.write(Path::new("real/f"), b"x").is_err());
        assert!(handle.make_dir("artifacts").is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // Nor can a link be the root itself.
        assert!(Beneath::open(&scratch.path().join("artifacts")).is_err());
        // Plain names work, `..` does not.
        handle.write(Path::new("real/deep/a.yaml"), b"ok").unwrap();
        assert_eq!(
            std::fs::read(scratch.path().join("real/deep/a.yaml")).unwrap(),
            b"ok"
        );
        assert!(handle.write(Path::new("../escape"), b"x").is_err());
    }
}
