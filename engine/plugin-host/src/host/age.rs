//! The `age` host import: open an age-encrypted file with the user's age
//! identities, which a plugin never sees. A SOPS file's data key is such a
//! file, one for each recipient.
//!
//! The identities are SOPS's: `SOPS_AGE_KEY` (identities, one a line),
//! `SOPS_AGE_KEY_FILE`, else `~/.config/sops/age/keys.txt`; X25519
//! identities (`AGE-SECRET-KEY-1…`) only. The format is age v1
//! (<https://age-encryption.org/v1>): the header's X25519 stanzas, its MAC,
//! and a STREAM payload of ChaCha20-Poly1305 chunks. Every check of the
//! format is made (the header MAC, each chunk's tag, the last chunk's flag),
//! and a payload is bounded ([`MAX_PLAINTEXT`]).

use std::path::PathBuf;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use sha2::Sha256;
use x25519_dalek::{PublicKey, StaticSecret};

use super::environment::Environment;

/// The most plaintext one file may give: a data key is 32 bytes.
pub const MAX_PLAINTEXT: usize = 1024 * 1024;

/// The most identities read.
const MAX_IDENTITIES: usize = 1_000;

const INTRO: &str = "age-encryption.org/v1";
const ARMOR_BEGIN: &str = "-----BEGIN AGE ENCRYPTED FILE-----";
const ARMOR_END: &str = "-----END AGE ENCRYPTED FILE-----";
const X25519_INFO: &[u8] = b"age-encryption.org/v1/X25519";
const CHUNK: usize = 64 * 1024;
const TAG: usize = 16;

/// Why a file was not opened. No variant holds key material.
#[derive(Debug, thiserror::Error)]
pub enum AgeError {
    /// No identity in any of SOPS's places.
    #[error(
        "no age identity: set `SOPS_AGE_KEY` or `SOPS_AGE_KEY_FILE`, or put your key in `{}`",
        default.display()
    )]
    NoIdentity { default: PathBuf },
    /// An identity file could not be read, or holds no identity.
    #[error("age identities in `{where_}`: {why}")]
    Identities { where_: String, why: String },
    /// The file is not age v1.
    #[error("not an age file: {0}")]
    Format(String),
    /// None of the identities is a recipient of any of the files.
    #[error(
        "none of your age identities ({count}) opens the file: it was encrypted for other recipients (check `SOPS_AGE_KEY_FILE`)"
    )]
    NoMatch { count: usize },
    /// A tag or the MAC did not hold: the file was changed, or is not whole.
    #[error("the age file was changed or is incomplete: {0}")]
    Tampered(&'static str),
}

/// One X25519 identity.
pub struct Identity {
    secret: StaticSecret,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identity(..)")
    }
}

/// The identities in `text` (comments and blank lines skipped).
fn parse_identities(text: &str, where_: &str) -> Result<Vec<Identity>, AgeError> {
    let bad = |why: String| AgeError::Identities {
        where_: where_.to_owned(),
        why,
    };
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (hrp, data) = bech32::decode(line)
            .map_err(|_| bad(format!("line {} is not an age identity", number + 1)))?;
        if !hrp.as_str().eq_ignore_ascii_case("age-secret-key-") || data.len() != 32 {
            return Err(bad(format!(
                "line {} is not an X25519 identity (`AGE-SECRET-KEY-1…`)",
                number + 1
            )));
        }
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&data);
        found.push(Identity {
            secret: StaticSecret::from(bytes),
        });
        if found.len() > MAX_IDENTITIES {
            return Err(bad(format!("more than {MAX_IDENTITIES} identities")));
        }
    }
    if found.is_empty() {
        return Err(bad("no identity".to_owned()));
    }
    Ok(found)
}

/// The user's identities, from SOPS's places in its order.
pub fn identities(env: &dyn Environment) -> Result<Vec<Identity>, AgeError> {
    if let Some(text) = env.var("SOPS_AGE_KEY") {
        return parse_identities(&text, "SOPS_AGE_KEY");
    }
    let default = env
        .home()
        .unwrap_or_default()
        .join(".config/sops/age/keys.txt");
    let (file, named) = match env.var("SOPS_AGE_KEY_FILE") {
        Some(file) => (PathBuf::from(file), true),
        None => (default.clone(), false),
    };
    let text = match super::environment::read_credential(&file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) if !named && error.kind() == std::io::ErrorKind::NotFound => {
            return Err(AgeError::NoIdentity { default });
        }
        Err(error) => {
            return Err(AgeError::Identities {
                where_: file.display().to_string(),
                why: error.to_string(),
            });
        }
    };
    parse_identities(&text, &file.display().to_string())
}

fn b64_raw(text: &str) -> Result<Vec<u8>, AgeError> {
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(text)
        .map_err(|_| AgeError::Format("bad base64 in the header".to_owned()))
}

/// HKDF-SHA-256 with a 32-byte output (RFC 5869).
fn hkdf(salt: &[u8], ikm: &[u8], info: &[u8]) -> [u8; 32] {
    let mut extract = <Hmac<Sha256>>::new_from_slice(salt).expect("any key length");
    extract.update(ikm);
    let prk = extract.finalize().into_bytes();
    let mut expand = <Hmac<Sha256>>::new_from_slice(&prk).expect("any key length");
    expand.update(info);
    expand.update(&[1]);
    expand.finalize().into_bytes().into()
}

fn open_in_place(
    key: &[u8; 32],
    nonce: [u8; 12],
    sealed: &mut [u8],
) -> Result<usize, ring::error::Unspecified> {
    let key = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, key)?);
    let plain = key.open_in_place(Nonce::assume_unique_for_key(nonce), Aad::empty(), sealed)?;
    Ok(plain.len())
}

/// The binary form of `file`: armored files are unwrapped.
fn binary(file: &[u8]) -> Result<Vec<u8>, AgeError> {
    let trimmed = file.trim_ascii();
    if !trimmed.starts_with(ARMOR_BEGIN.as_bytes()) {
        return Ok(file.to_vec());
    }
    let text = std::str::from_utf8(trimmed)
        .map_err(|_| AgeError::Format("the armor is not text".to_owned()))?;
    let inner = text
        .strip_prefix(ARMOR_BEGIN)
        .and_then(|rest| rest.trim_end().strip_suffix(ARMOR_END))
        .ok_or_else(|| AgeError::Format("the armor has no end line".to_owned()))?;
    let joined: String = inner.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(joined)
        .map_err(|_| AgeError::Format("bad base64 in the armor".to_owned()))
}

/// An X25519 stanza: the ephemeral share and the wrapped file key.
struct Stanza {
    share: [u8; 32],
    body: Vec<u8>,
}

/// The header's X25519 stanzas, what the MAC covers, the MAC, and where the
/// payload begins.
struct Header {
    stanzas: Vec<Stanza>,
    covered: usize,
    mac: Vec<u8>,
    payload: usize,
}

fn header(file: &[u8]) -> Result<Header, AgeError> {
    let format = |why: &str| AgeError::Format(why.to_owned());
    let mut at = 0;
    let mut line = || -> Result<(usize, &[u8]), AgeError> {
        let start = at;
        let end = file[start..]
            .iter()
            .position(|b| *b == b'\n')
            .map(|i| start + i)
            .ok_or_else(|| format("the header ends early"))?;
        at = end + 1;
        Ok((start, &file[start..end]))
    };
    let (_, intro) = line()?;
    if intro != INTRO.as_bytes() {
        return Err(format("no `age-encryption.org/v1` line"));
    }
    let mut stanzas = Vec::new();
    loop {
        let (start, text) = line()?;
        let text = std::str::from_utf8(text).map_err(|_| format("the header is not text"))?;
        if let Some(mac) = text.strip_prefix("--- ") {
            return Ok(Header {
                stanzas,
                covered: start + 3,
                mac: b64_raw(mac)?,
                payload: at,
            });
        }
        let args: Vec<&str> = text
            .strip_prefix("-> ")
            .ok_or_else(|| format("a header line is neither a stanza nor the MAC"))?
            .split(' ')
            .collect();
        // The body: lines of 64 columns, ending with a shorter one.
        let mut body = String::new();
        loop {
            let (_, part) = line()?;
            let part = std::str::from_utf8(part).map_err(|_| format("the header is not text"))?;
            if part.len() > 64 {
                return Err(format("a stanza line is longer than 64 columns"));
            }
            body.push_str(part);
            if part.len() < 64 {
                break;
            }
            if body.len() > 64 * 1024 {
                return Err(format("a stanza is too long"));
            }
        }
        if args.first() == Some(&"X25519") {
            let share = b64_raw(args.get(1).copied().unwrap_or_default())?;
            let share: [u8; 32] = share
                .try_into()
                .map_err(|_| format("an X25519 share is not 32 bytes"))?;
            let body = b64_raw(&body)?;
            if body.len() != 32 {
                return Err(format("an X25519 stanza's body is not 32 bytes"));
            }
            stanzas.push(Stanza { share, body });
        }
        if stanzas.len() > MAX_IDENTITIES {
            return Err(format("too many stanzas"));
        }
    }
}

/// The file key `identity` unwraps from `stanza`, if it is a recipient.
fn unwrap(identity: &Identity, stanza: &Stanza) -> Option<[u8; 16]> {
    let share = PublicKey::from(stanza.share);
    let shared = identity.secret.diffie_hellman(&share);
    if !shared.was_contributory() {
        return None;
    }
    let recipient = PublicKey::from(&identity.secret);
    let mut salt = Vec::with_capacity(64);
    salt.extend_from_slice(&stanza.share);
    salt.extend_from_slice(recipient.as_bytes());
    let key = hkdf(&salt, shared.as_bytes(), X25519_INFO);
    let mut sealed = stanza.body.clone();
    let length = open_in_place(&key, [0; 12], &mut sealed).ok()?;
    sealed.truncate(length);
    sealed.try_into().ok()
}

/// The payload of `file`, opened with `file_key`.
fn payload(file: &[u8], header: &Header, file_key: &[u8; 16]) -> Result<Vec<u8>, AgeError> {
    let mut mac =
        <Hmac<Sha256>>::new_from_slice(&hkdf(&[], file_key, b"header")).expect("any key length");
    mac.update(&file[..header.covered]);
    mac.verify_slice(&header.mac)
        .map_err(|_| AgeError::Tampered("the header's MAC"))?;
    let rest = &file[header.payload..];
    if rest.len() < 16 + TAG {
        return Err(AgeError::Tampered("the payload is too short"));
    }
    let (nonce, mut sealed) = rest.split_at(16);
    let key = hkdf(nonce, file_key, b"payload");
    let mut plain = Vec::new();
    let mut counter: u128 = 0;
    loop {
        let take = sealed.len().min(CHUNK + TAG);
        let last = take == sealed.len();
        let mut chunk = sealed[..take].to_vec();
        sealed = &sealed[take..];
        let mut chunk_nonce = [0u8; 12];
        chunk_nonce[..11].copy_from_slice(&counter.to_be_bytes()[5..]);
        chunk_nonce[11] = u8::from(last);
        let length = open_in_place(&key, chunk_nonce, &mut chunk)
            .map_err(|_| AgeError::Tampered("a payload chunk's tag"))?;
        if length == 0 && counter > 0 {
            return Err(AgeError::Tampered("an empty last chunk"));
        }
        plain.extend_from_slice(&chunk[..length]);
        if plain.len() > MAX_PLAINTEXT {
            return Err(AgeError::Format(format!(
                "its plaintext is more than {MAX_PLAINTEXT} bytes"
            )));
        }
        if last {
            return Ok(plain);
        }
        counter += 1;
    }
}

/// The plaintext of the first of `files` one of `identities` opens.
pub fn open(identities: &[Identity], files: &[Vec<u8>]) -> Result<Vec<u8>, AgeError> {
    let mut format_error = None;
    for file in files {
        let file = match binary(file) {
            Ok(file) => file,
            Err(error) => {
                format_error.get_or_insert(error);
                continue;
            }
        };
        let header = match header(&file) {
            Ok(header) => header,
            Err(error) => {
                format_error.get_or_insert(error);
                continue;
            }
        };
        for stanza in &header.stanzas {
            for identity in identities {
                if let Some(file_key) = unwrap(identity, stanza) {
                    return payload(&file, &header, &file_key);
                }
            }
        }
    }
    Err(format_error.unwrap_or(AgeError::NoMatch {
        count: identities.len(),
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn identities_come_from_sops_places_in_order_and_bad_ones_are_named() {
        let home = tempfile::tempdir().unwrap();
        let mut env: HashMap<&str, String> = HashMap::new();
        env.insert("HOME", home.path().display().to_string());
        assert!(matches!(identities(&env), Err(AgeError::NoIdentity { .. })));
        env.insert("SOPS_AGE_KEY_FILE", "/nonexistent/keys.txt".into());
        let missing = identities(&env).unwrap_err().to_string();
        assert!(missing.contains("/nonexistent/keys.txt"), "{missing}");
        env.insert("SOPS_AGE_KEY", "# a comment\nnot-a-key".into());
        let bad = identities(&env).unwrap_err().to_string();
        assert!(
            bad.contains("SOPS_AGE_KEY") && bad.contains("line 2"),
            "{bad}"
        );
        assert!(
            !bad.contains("not-a-key"),
            "the line itself may be a key: {bad}"
        );
    }

    /// Files the real `age` made (tests/age/README.md).
    fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/age")
                .join(name),
        )
        .unwrap()
    }

    fn identity_of(name: &str) -> Vec<Identity> {
        parse_identities(&String::from_utf8(fixture(name)).unwrap(), name).unwrap()
    }

    #[test]
    fn files_the_real_age_made_open_with_their_identity_only() {
        let key = identity_of("key.txt");
        assert_eq!(
            open(&key, &[fixture("small.age")]).unwrap(),
            b"sixteen-byte-key-and-sixteen-mor"
        );
        let big = open(&key, &[b"not age".to_vec(), fixture("big.age")]).unwrap();
        use sha2::Digest as _;
        assert_eq!(
            hex::encode(sha2::Sha256::digest(&big)),
            "0cd46a294f37a20b7a73c4dfc874d40d12a7f7cb651ba2e35a389968ee9919c5"
        );
        let other = identity_of("other.txt");
        assert!(matches!(
            open(&other, &[fixture("small.age")]),
            Err(AgeError::NoMatch { count: 1 })
        ));
        // Any byte changed: the header's MAC, a stanza, or the payload's tag.
        let binary_file = fixture("big.age");
        for at in [30, binary_file.len() / 2, binary_file.len() - 1] {
            let mut changed = binary_file.clone();
            changed[at] ^= 1;
            assert!(open(&key, &[changed]).is_err(), "byte {at}");
        }
        // Cut at the chunk boundary: the first chunk is not flagged last.
        let header_end = binary_file.windows(4).position(|w| w == b"--- ").unwrap();
        let payload = binary_file[header_end..]
            .iter()
            .position(|b| *b == b'\n')
            .unwrap()
            + header_end
            + 1;
        let cut = binary_file[..payload + 16 + CHUNK + TAG].to_vec();
        assert!(matches!(open(&key, &[cut]), Err(AgeError::Tampered(_))));
    }

    #[test]
    fn what_is_not_age_is_refused_without_a_panic() {
        let none: Vec<Identity> = Vec::new();
        for file in [
            b"".to_vec(),
            b"age-encryption.org/v1\n".to_vec(),
            b"age-encryption.org/v1\n-> X25519 short\nAAAA\n--- AAAA\n".to_vec(),
            format!("{ARMOR_BEGIN}\n!!!\n{ARMOR_END}\n").into_bytes(),
            format!("{ARMOR_BEGIN}\nYWJj\n").into_bytes(),
            vec![b'A'; 100_000],
        ] {
            assert!(matches!(open(&none, &[file]), Err(AgeError::Format(_))));
        }
    }
}
