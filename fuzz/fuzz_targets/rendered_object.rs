//! A rendered object on any bytes: whatever a plugin returns, the checks every
//! rendered document passes (`identity_problem`) and the decisions made on it
//! afterwards (its identity, the emit verdict of a third-party plugin, the
//! apply order, the content hash, redaction) answer and never panic. A document
//! that passes `identity_problem` always has an identity.

#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tazuna_core::emit::{EmitScope, Made};
use tazuna_core::inventory::{self, ObjectRef};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed: Result<Value, String> = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        serde_yaml::from_str(text).map_err(|e| e.to_string())
    };
    let Ok(value) = parsed else {
        return;
    };
    if inventory::identity_problem(&value).is_some() {
        return;
    }
    let mut reference = ObjectRef::of(&value).expect("a checked object has an identity");
    let made = Made::of([&value], "apps");
    let scopes = [EmitScope::default(), EmitScope::new(["emit:cluster:*", "emit:kind:*"])];
    for scope in &scopes {
        let _ = scope.missing(&reference, &value, "apps", &made);
    }
    reference.namespace = None;
    for scope in &scopes {
        let _ = scope.missing(&reference, &value, "apps", &made);
    }
    let _ = inventory::apply_order(&[&value]);
    let _ = inventory::content_hash(&value, b"key");
    let _ = inventory::redact(&value);
});
