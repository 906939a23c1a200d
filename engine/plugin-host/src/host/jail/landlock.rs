//! Landlock: what the tool's process may open, start and connect to, and
//! that it may neither signal processes outside its jail nor reach their
//! abstract sockets. Programs: the granted tools' binaries alone, with what
//! each needs to start ([`starters`]).

use std::path::PathBuf;

use super::Policy;

/// What every tool may read (libraries, shared data, certificates, name
/// service files). Not the program directories (`/usr/bin`, `/bin`…): a
/// dynamic loader could run what it can read. Not `/etc/ssl` as a whole:
/// `/etc/ssl/private` holds the host's keys.
pub(super) const SYSTEM_READ: &[&str] = &[
    "/lib",
    "/lib64",
    "/usr/lib",
    "/usr/lib64",
    "/usr/share",
    "/etc/ld.so.cache",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
];

/// Devices every tool may read and write.
pub(super) const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"];

/// Restrict this thread (and what it starts) to `policy`, with TCP connects
/// only to `ports`.
pub(super) fn restrict(policy: &Policy, ports: &[u16]) -> Result<(), String> {
    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
    };
    let abi = ABI::V6;
    let result = (|| {
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V3))?
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))?
            .handle_access(AccessNet::from_all(abi))?
            .scope(Scope::from_all(abi))?
            .create()?;
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let mut programs = Vec::new();
        for program in &policy.programs {
            starters(program, &mut programs, 0);
        }
        let mut ruleset = ruleset
            .add_rules(path_beneath_rules(SYSTEM_READ, read))?
            .add_rules(path_beneath_rules(
                &programs,
                AccessFs::Execute | AccessFs::ReadFile,
            ))?
            .add_rules(path_beneath_rules(&policy.read, read))?
            .add_rules(path_beneath_rules(
                DEVICES,
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))?
            // Everything but execute: nothing a plugin or tool wrote starts.
            .add_rules(path_beneath_rules(
                &policy.write,
                AccessFs::from_all(abi) & !AccessFs::Execute,
            ))?;
        for port in ports {
            ruleset = ruleset.add_rule(NetPort::new(*port, AccessNet::ConnectTcp))?;
        }
        ruleset.restrict_self()
    })();
    match result {
        Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
        Ok(_) => Err("no Landlock (the kernel has it disabled or is older than 5.19)".into()),
        Err(error) => Err(format!("no Landlock: {error}")),
    }
}

/// `program` and what starting it executes too, into `found`: the dynamic
/// loader an ELF file names (`PT_INTERP`), or the interpreter of a `#!`
/// line (and, for `#!/usr/bin/env name`, the program `name` found on the
/// system's `PATH`), and theirs in turn.
pub(super) fn starters(program: &std::path::Path, found: &mut Vec<PathBuf>, depth: usize) {
    let Ok(real) = std::fs::canonicalize(program) else {
        return;
    };
    if found.contains(&real) {
        return;
    }
    found.push(real.clone());
    // The path as named too (`#!/bin/bash` where `/bin` is a link): the
    // jail's view must hold it for the kernel to find the interpreter.
    if program.is_absolute() && program != real {
        found.push(program.to_owned());
    }
    if depth >= 4 {
        return;
    }
    let Ok(file) = std::fs::File::open(&real) else {
        return;
    };
    let mut head = [0u8; 256];
    let read = std::os::unix::fs::FileExt::read_at(&file, &mut head, 0).unwrap_or(0);
    let head = &head[..read];
    if let Some(line) = head.strip_prefix(b"#!") {
        let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        if let Some(interpreter) = words.next() {
            starters(interpreter.as_ref(), found, depth + 1);
            if interpreter.ends_with("/env")
                && let Some(name) = words.find(|word| !word.starts_with('-'))
                && let Some(path) = ["/usr/local/bin", "/usr/bin", "/bin"]
                    .iter()
                    .map(|dir| std::path::Path::new(dir).join(name))
                    .find(|path| path.is_file())
            {
                starters(&path, found, depth + 1);
            }
        }
    } else if let Some(interpreter) = elf_interpreter(&file, head) {
        starters(&interpreter, found, depth + 1);
    }
}

/// The `PT_INTERP` path of a 64-bit little-endian ELF file, if it has one.
fn elf_interpreter(file: &std::fs::File, head: &[u8]) -> Option<PathBuf> {
    use std::os::unix::fs::FileExt;
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([head[at], head[at + 1]]);
    let table = u64::from_le_bytes(head[0x20..0x28].try_into().ok()?);
    let size = u64::from(u16_at(0x36));
    let count = u64::from(u16_at(0x38)).min(256);
    for index in 0..count {
        let mut entry = [0u8; 56];
        file.read_exact_at(&mut entry, table.checked_add(index.checked_mul(size)?)?)
            .ok()?;
        if u32::from_le_bytes(entry[..4].try_into().ok()?) != 3 {
            continue;
        }
        let offset = u64::from_le_bytes(entry[8..16].try_into().ok()?);
        let length = u64::from_le_bytes(entry[32..40].try_into().ok()?).min(4096);
        let mut path = vec![0u8; usize::try_from(length).ok()?];
        file.read_exact_at(&mut path, offset).ok()?;
        let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
        return Some(PathBuf::from(
            String::from_utf8_lossy(&path[..end]).into_owned(),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starters_of(program: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        starters(program.as_ref(), &mut found, 0);
        found
    }

    #[test]
    fn a_dynamic_program_brings_its_loader_and_a_script_its_interpreter() {
        let bash = std::fs::canonicalize("/bin/bash").unwrap();
        let found = starters_of("/bin/bash");
        assert_eq!(found[0], bash);
        assert!(
            found[1..]
                .iter()
                .any(|path| path.to_string_lossy().contains("ld-linux")),
            "{found:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tool");
        std::fs::write(&script, "#!/usr/bin/env -S bash -e\necho hi\n").unwrap();
        let found = starters_of(&script.to_string_lossy());
        let env = std::fs::canonicalize("/usr/bin/env").unwrap();
        assert!(found.contains(&env) && found.contains(&bash), "{found:?}");
        // A static program (as Go builds helm) brings nothing.
        let text = dir.path().join("data");
        std::fs::write(&text, "not a program").unwrap();
        assert_eq!(starters_of(&text.to_string_lossy()).len(), 1);
    }
}
