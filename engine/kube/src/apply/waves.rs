//! Apply waves (`tazuna.dev/apply-wave`): the wave of an object, and helm
//! hooks grouped by the wave they run with.

use super::*;

/// The annotation that puts an object in an apply wave of its manifest: waves
/// are applied in ascending order, each ready before the next starts.
pub const APPLY_WAVE: &str = "tazuna.dev/apply-wave";

/// Hooks by the apply wave they run with.
pub(super) type HooksByWave = BTreeMap<i64, Vec<Hook>>;

/// `stage`'s hooks without an apply wave, and those with one by their wave,
/// each list in the stage's order.
pub(super) fn hooks_by_wave(
    stage: &[Hook],
    values: &[&Value],
) -> Result<(Vec<Hook>, HooksByWave), ManifestError> {
    let mut unwaved = Vec::new();
    let mut by_wave: BTreeMap<i64, Vec<Hook>> = BTreeMap::new();
    for hook in stage {
        let value = values[hook.index];
        if value["metadata"]["annotations"].get(APPLY_WAVE).is_none() {
            unwaved.push(hook.clone());
            continue;
        }
        let wave = apply_wave(value).map_err(|value| ManifestError::Wave {
            object: ObjectRef::of(values[hook.index]).expect("identity checked before"),
            value,
        })?;
        by_wave.entry(wave).or_default().push(hook.clone());
    }
    Ok((unwaved, by_wave))
}

/// The apply wave of `object`: 0 without the annotation, else its whole
/// number; the annotation's text when it is not one.
pub(super) fn apply_wave(object: &Value) -> Result<i64, String> {
    match object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(APPLY_WAVE))
    {
        None => Ok(0),
        Some(Value::String(text)) => text.trim().parse().map_err(|_| clip(text)),
        Some(other) => Err(clip(&other.to_string())),
    }
}

/// At most 40 characters of an annotation's value, for an error message.
pub(super) fn clip(text: &str) -> String {
    match text.char_indices().nth(40) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod wave_tests {
    use super::*;

    #[test]
    fn waves_are_whole_numbers_and_zero_without_the_annotation() {
        let with = |annotations: Value| {
            apply_wave(&serde_json::json!({"metadata": {"name": "a", "annotations": annotations}}))
        };
        assert_eq!(
            apply_wave(&serde_json::json!({"metadata": {"name": "a"}})),
            Ok(0)
        );
        assert_eq!(with(serde_json::json!({})), Ok(0));
        assert_eq!(with(serde_json::json!({APPLY_WAVE: "2"})), Ok(2));
        assert_eq!(with(serde_json::json!({APPLY_WAVE: " -1 "})), Ok(-1));
        assert_eq!(
            with(serde_json::json!({APPLY_WAVE: "two"})),
            Err("two".to_owned())
        );
        assert_eq!(
            with(serde_json::json!({APPLY_WAVE: 2})),
            Err("2".to_owned())
        );
        let long = "9".repeat(100);
        assert_eq!(
            with(serde_json::json!({APPLY_WAVE: long})),
            Err(format!("{}...", "9".repeat(40)))
        );
    }
}
