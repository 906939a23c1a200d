//! Reading `helm template` output (also what `helmfile template` prints) back: objects named
//! after their template, hooks among them. Also what both commands are told about the
//! target cluster.
//!
//! helm prints each rendered document as `---`, a `# Source: <chart>/templates/<file>` comment,
//! then the document. Each such chunk is read on its own, so an object's origin (and any error)
//! names its template: `hello/templates/deployment.yaml#0`.

use std::collections::HashMap;

use tazuna_sdk::ClusterInfo;

use crate::documents::{Format, Objects};

/// The `--kube-version` flag for `helm template` and `helmfile template`: the block's
/// `kubeVersion` when it sets one, else the target cluster's version, else none (helm's
/// default).
pub fn kube_version_flag(
    configured: Option<&str>,
    cluster: Option<&ClusterInfo>,
) -> Option<String> {
    configured
        .or_else(|| cluster.map(|cluster| cluster.kube_version.as_str()))
        .map(|version| format!("--kube-version={version}"))
}

/// What one `helm template` (or `helmfile template`) printed, read.
#[derive(Debug, Default)]
pub struct Read {
    /// The objects, with notes and errors. Helm hooks are among them, as
    /// helm prints them; the engine runs them by their annotations.
    pub objects: Objects,
}

/// Reads helm's stdout.
pub fn read(stdout: &str) -> Read {
    let mut read = Read::default();
    // How many documents each template produced so far, for unique origins.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for chunk in chunks(stdout) {
        let source = chunk
            .lines()
            .find_map(|line| line.strip_prefix("# Source: "))
            .unwrap_or("helm template")
            .trim()
            .to_owned();
        let first = read.objects.objects.len();
        read.objects.read(&source, chunk, Format::Yaml);
        for object in &mut read.objects.objects[first..] {
            let count = seen.entry(source.clone()).or_default();
            object.origin = format!("{source}#{count}");
            *count += 1;
        }
    }
    read
}

/// The documents of helm's output, split at its `---` lines.
fn chunks(stdout: &str) -> Vec<&str> {
    let mut starts = vec![0];
    let mut offset = 0;
    for line in stdout.split_inclusive('\n') {
        if line.trim_end() == "---" && offset > 0 {
            starts.push(offset);
        }
        offset += line.len();
    }
    starts.push(stdout.len());
    starts
        .windows(2)
        .map(|pair| &stdout[pair[0]..pair[1]])
        .filter(|chunk| chunk.lines().any(|line| !is_blank(line)))
        .collect()
}

fn is_blank(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line == "---" || line.starts_with('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "---\n# Source: hello/crds/widget.yaml\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n---\n# Source: hello/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-hello\ndata:\n  text: |\n    ---\n    not a separator\n---\n# Source: hello/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-second\n---\n# Source: hello/templates/job.yaml\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n";

    #[test]
    fn objects_are_named_after_their_template_and_numbered_per_template() {
        let read = read(OUTPUT);
        assert!(read.objects.errors.is_empty(), "{:?}", read.objects.errors);
        let origins: Vec<_> = read
            .objects
            .objects
            .iter()
            .map(|o| o.origin.as_str())
            .collect();
        assert_eq!(
            origins,
            [
                "hello/crds/widget.yaml#0",
                "hello/templates/configmap.yaml#0",
                "hello/templates/configmap.yaml#1",
                "hello/templates/job.yaml#0",
            ]
        );
        // An indented `---` inside a block scalar is content, not a separator.
        assert_eq!(
            read.objects.objects[1].fields["data"]["text"],
            "---\nnot a separator\n"
        );
    }

    #[test]
    fn hooks_stay_among_the_objects_with_their_annotations() {
        let read = read(OUTPUT);
        let job = read.objects.objects.last().unwrap();
        assert_eq!(job.origin, "hello/templates/job.yaml#0");
        assert_eq!(
            job.fields["metadata"]["annotations"]["helm.sh/hook"],
            "pre-install,pre-upgrade"
        );
    }

    #[test]
    fn a_template_that_renders_bad_yaml_is_named() {
        let read = read("---\n# Source: hello/templates/bad.yaml\napiVersion: v1\nkind: [\n");
        assert_eq!(read.objects.errors.len(), 1);
        assert!(
            read.objects.errors[0]
                .message
                .contains("hello/templates/bad.yaml"),
            "{:?}",
            read.objects.errors
        );
    }
}
