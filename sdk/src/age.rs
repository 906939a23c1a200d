//! Open an age-encrypted file with the user's age identities, through the host's `age` import
//! (secret resolvers, contract 0.1.1). The identities are SOPS's (`SOPS_AGE_KEY`,
//! `SOPS_AGE_KEY_FILE`, `~/.config/sops/age/keys.txt`); the plugin never sees them. A
//! third-party resolver needs the grant `keys:age`.

use crate::PluginError;

/// The plaintext of the first of `files` (armored or binary age files) an identity opens.
pub fn open(files: &[Vec<u8>]) -> Result<Vec<u8>, PluginError> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::secret_resolver::tazuna::plugin::age::open(files)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = files;
        Err(PluginError::CapabilityDenied(
            "an age file (not running inside a Tazuna host)".to_owned(),
        ))
    }
}
