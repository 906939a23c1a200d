//! `spec.inputs`: each input's type checked and its outputs read (a state
//! file, an `s3` backend's state, a management cluster's ConfigMap or
//! Secret, the targeted Cluster API `Cluster`).

use std::path::Path;

use serde_yaml::Value;

use super::super::error::ConfigError;
use super::super::model::Target;
use super::super::source::{YamlPath, join_clean};
use super::Document;

/// `spec.inputs` of `doc`, each state read. Rendered like `spec.environments`
/// (before the cluster and the inputs are known), so an input's `path` may
/// use `.Environment` only.
pub(super) fn inputs_of(
    doc: &Document,
    target: Option<&Target>,
) -> Result<Vec<crate::inputs::Input>, ConfigError> {
    let at = YamlPath::root().key("spec").key("inputs");
    let raw: Vec<super::super::raw::RawInput> =
        match doc.value.get("spec").and_then(|spec| spec.get("inputs")) {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(raw) => doc.deserialize(&at, raw)?,
        };
    let mut inputs: Vec<crate::inputs::Input> = Vec::with_capacity(raw.len());
    for (i, input) in raw.into_iter().enumerate() {
        let here = at.index(i);
        let reserved = ["env", "default-op"].contains(&input.name.as_str());
        if reserved || inputs.iter().any(|other| other.name == input.name) {
            return Err(doc.invalid(
                &here.key("name"),
                format!("input name `{}` is taken", input.name),
                Some(
                    "an input's name is unique, and not `env` or `default-op` (its sensitive outputs resolve as `ref+<name>:`)"
                        .to_owned(),
                ),
            ));
        }
        let object = |block: Option<super::super::raw::RawObjectInput>, kind| {
            block.map(|o| crate::inputs::ObjectInput {
                kind,
                context: o.context,
                namespace: o.namespace,
                name: o.name,
            })
        };
        let given = [
            input.path.is_some(),
            input.s3.is_some(),
            input.config_map.is_some(),
            input.secret.is_some(),
        ]
        .iter()
        .filter(|given| **given)
        .count();
        let (location, field) = match input.kind.as_str() {
            "opentofu-state" | "terraform-state" => match (&input.path, input.s3) {
                (Some(path), None) if given == 1 => (
                    crate::inputs::Location::File(join_clean(&doc.dir, Path::new(path))),
                    "path",
                ),
                (None, Some(s3)) if given == 1 => (
                    crate::inputs::Location::S3(Box::new(crate::inputs::S3Object {
                        bucket: s3.bucket,
                        key: s3.key,
                        region: s3.region,
                        profile: s3.profile,
                        endpoint: s3.endpoint,
                    })),
                    "s3",
                ),
                _ => {
                    return Err(doc.invalid(
                        &here,
                        format!("input `{}` names its state twice, or not at all", input.name),
                        Some(
                            "give a state input either `path` (a local state file) or `s3` (`bucket` and `key` of the `s3` backend)"
                                .to_owned(),
                        ),
                    ));
                }
            },
            "configmap" | "secret" => {
                let (block, kind, key) = if input.kind == "configmap" {
                    (
                        input.config_map,
                        crate::inputs::ObjectKind::ConfigMap,
                        "configMap",
                    )
                } else {
                    (input.secret, crate::inputs::ObjectKind::Secret, "secret")
                };
                match object(block, kind) {
                    Some(found) if given == 1 => {
                        (crate::inputs::Location::Object(Box::new(found)), key)
                    }
                    _ => {
                        return Err(doc.invalid(
                            &here,
                            format!("input `{}` of type `{}` needs `{key}` and nothing else", input.name, input.kind),
                            Some(format!(
                                "write `{key}: {{context: <kubeconfig context>, namespace: <namespace>, name: <name>}}`"
                            )),
                        ));
                    }
                }
            }
            "cluster-api" if given == 0 => (
                crate::inputs::Location::ClusterApi(
                    target.and_then(|t| t.cluster_api.clone()).map(Box::new),
                ),
                "type",
            ),
            "cluster-api" => {
                return Err(doc.invalid(
                    &here,
                    format!("input `{}` of type `cluster-api` takes no source", input.name),
                    Some("its outputs are the Cluster API `Cluster` the run targets; remove `path`, `s3`, `configMap` and `secret`".to_owned()),
                ));
            }
            other => {
                return Err(doc.invalid(
                    &here.key("type"),
                    format!("input `{}` has type `{other}`", input.name),
                    Some(
                        "an input's `type` is `opentofu-state`, `terraform-state`, `configmap`, `secret` or `cluster-api`"
                            .to_owned(),
                    ),
                ));
            }
        };
        let read = crate::inputs::Input::read(&input.name, &location).map_err(|error| {
            doc.invalid(
                &here.key(field),
                error.to_string(),
                crate::hint::Hint::hint(&error),
            )
        })?;
        inputs.push(read);
    }
    Ok(inputs)
}
