//! The syntax of a secret reference, `ref+<provider>:<reference>`: what the
//! resolvers (`secrets`) and the tools' secrets (`host`) both read.

/// What a reference value starts with.
pub const PREFIX: &str = "ref+";

/// `ref+<provider>:<reference>` taken apart, or `None` for any other value.
pub fn parse(value: &str) -> Option<(&str, &str)> {
    let (provider, reference) = value.strip_prefix(PREFIX)?.split_once(':')?;
    let valid = !provider.is_empty()
        && provider
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    (valid && !reference.is_empty()).then_some((provider, reference))
}
