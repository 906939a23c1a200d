//! The call's preopened directories as the host sees them: which host
//! directory is behind each guest path, and guest paths in a tool's
//! arguments made host paths (any other absolute path, and any `..`, is
//! refused).

use std::path::{Component, Path, PathBuf};

/// A guest directory and the host directory behind it.
#[derive(Debug, Clone)]
pub struct Mount {
    /// Absolute guest path, such as `/manifest`.
    pub guest: String,
    /// The host directory.
    pub host: PathBuf,
    /// What the user knows it as (the manifest's view is shown as the
    /// manifest's directory), in what a tool prints.
    pub shown: Option<PathBuf>,
}

/// The guest directories, for messages.
pub(super) fn guests(mounts: &[Mount]) -> String {
    let list: Vec<String> = mounts.iter().map(|m| format!("`{}`", m.guest)).collect();
    if list.is_empty() {
        "none (this call has no directories)".to_owned()
    } else {
        list.join(" and ")
    }
}

/// Map a guest path inside a mount to its host path; `None` if it is outside
/// every mount or climbs out with `..`.
pub fn to_host(mounts: &[Mount], guest: &str) -> Option<PathBuf> {
    let guest_path = Path::new(guest);
    mounts.iter().find_map(|mount| {
        let rest = guest_path.strip_prefix(&mount.guest).ok()?;
        if rest
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return None;
        }
        Some(mount.host.join(rest))
    })
}

/// `arg` with every guest path in it (the whole argument, or a piece after
/// `=` or `,`) made a host path; `None` if a piece is another absolute path
/// or climbs with `..`. Each piece that may name a file (a host path, or a
/// relative one) is added to `named`.
pub(super) fn map_argument(
    mounts: &[Mount],
    arg: &str,
    named: &mut Vec<PathBuf>,
) -> Option<String> {
    let mut mapped = String::with_capacity(arg.len());
    let mut rest = arg;
    loop {
        let end = rest.find(['=', ',']).unwrap_or(rest.len());
        let piece = &rest[..end];
        if Path::new(piece)
            .components()
            .any(|c| c == Component::ParentDir)
        {
            return None;
        }
        if piece.starts_with('/') {
            let host = to_host(mounts, piece)?;
            mapped.push_str(&host.display().to_string());
            named.push(host);
        } else {
            mapped.push_str(piece);
            if !piece.is_empty() && !piece.starts_with('-') {
                named.push(PathBuf::from(piece));
            }
        }
        match rest[end..].chars().next() {
            Some(separator) => {
                mapped.push(separator);
                rest = &rest[end + 1..];
            }
            None => return Some(mapped),
        }
    }
}
