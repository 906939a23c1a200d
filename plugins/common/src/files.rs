//! One render of the `manifests` source: find the files, read their objects, default the
//! namespace, and encode each object as compact JSON.

use std::fs;
use std::io;
use std::path::Path;

use crate::documents::Objects;
use tazuna_sdk::{Diagnostic, PluginError, RenderOutput, RenderRequest};

use crate::inputs;

/// Renders the files `request.path` names inside `request.workdir`.
pub fn render(request: &RenderRequest) -> Result<RenderOutput, PluginError> {
    let Some(path) = request.path.as_deref().filter(|path| !path.is_empty()) else {
        return Err(PluginError::InvalidConfig(vec![Diagnostic::error(
            format!(
                "manifest `{}` has type `manifests` but no `path` naming its files",
                request.manifest_name
            ),
        )]));
    };
    let found = inputs::find(Path::new(&request.workdir), path)?;

    let mut objects = Objects::default();
    for input in &found.inputs {
        match fs::read_to_string(&input.path) {
            Ok(text) => objects.read(&input.name, &text, input.format),
            Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                let message = format!("{}: not UTF-8 text", input.name);
                objects
                    .errors
                    .push(Diagnostic::error(message).at(&input.name));
            }
            Err(error) => {
                let name = &input.name;
                return Err(PluginError::other(format_args!(
                    "cannot read `{name}`: {error}"
                )));
            }
        }
    }
    if !objects.errors.is_empty() {
        return Err(PluginError::InvalidInput(objects.errors));
    }

    let manifests = crate::encode(
        objects.objects,
        request.namespace.as_deref(),
        request.cluster.as_ref(),
    )?;

    let mut output = RenderOutput::new(manifests);
    output.diagnostics = objects.notes;
    declare_plain(request.namespace.as_deref());
    if found.searched && found.inputs.is_empty() {
        let message = format!("`{path}` holds no *.yaml, *.yml or *.json files");
        output
            .diagnostics
            .push(Diagnostic::warning(message).at(path));
    }
    Ok(output)
}

/// What a render of files the source only reads declares: deterministic,
/// and reading the cluster only for the scope of the kinds it gives a
/// default `namespace` (see [`crate::encode`]).
pub fn declare_plain(namespace: Option<&str>) {
    tazuna_sdk::traits::declare(tazuna_sdk::traits::RenderTraits {
        reads_cluster: namespace.is_some_and(|namespace| !namespace.is_empty()),
        deterministic: true,
    });
}
