//! Release `needs:` as apply waves.
//!
//! `helmfile template` renders every release at once and says nothing of their order. The
//! order comes from `helmfile build` (the helmfile's state, its templates rendered), whose
//! releases carry their `needs:`, or, for a plain helmfile whose text is its state
//! ([`read_plain`]), from that text. A release that needs nothing is wave 0; one that needs others
//! comes one wave after the last of them. Tazuna applies a manifest's waves one after another,
//! each ready before the next starts, which is the order and the per-release wait that
//! `helmfile apply` gives.

use std::collections::BTreeMap;

use serde_json::Value;

/// A release of the helmfile's state, and what it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// `name`.
    pub name: String,
    /// `namespace`, when it has one.
    pub namespace: Option<String>,
    /// `needs:` as written: `name`, `namespace/name` or `context/namespace/name`.
    pub needs: Vec<String>,
    /// `chartPath` (a plain helmfile's `chart` as written), relative to the helmfile's
    /// directory, when helmfile renders that directory as it is: the release asks for no
    /// patches, transformers or added dependencies (each makes helmfile build a chart of its
    /// own first).
    pub chart_dir: Option<String>,
}

/// Release keys that make helmfile build a chart of its own (chartify) before it renders.
const CHARTIFY_KEYS: &[&str] = &[
    "dependencies",
    "jsonPatches",
    "strategicMergePatches",
    "transformers",
    "forceNamespace",
];

/// The releases `helmfile build` printed (every document's `releases`, in order).
pub fn read_build(stdout: &str) -> Result<Vec<Release>, String> {
    let mut releases = Vec::new();
    for document in crate::yaml::documents(stdout) {
        let document = document.map_err(|e| {
            format!(
                "cannot read `helmfile build` at line {}: {}",
                e.line, e.message
            )
        })?;
        let Some(list) = document.value.get("releases").and_then(Value::as_array) else {
            continue;
        };
        for release in list {
            let Some(name) = release.get("name").and_then(Value::as_str) else {
                continue;
            };
            let text = |value: &Value| value.as_str().map(str::to_owned);
            releases.push(Release {
                name: name.to_owned(),
                namespace: release
                    .get("namespace")
                    .and_then(text)
                    .filter(|namespace| !namespace.is_empty()),
                needs: release
                    .get("needs")
                    .and_then(Value::as_array)
                    .map(|needs| needs.iter().filter_map(text).collect())
                    .unwrap_or_default(),
                chart_dir: release
                    .get("chartPath")
                    .and_then(text)
                    .filter(|_| CHARTIFY_KEYS.iter().all(|key| release.get(key).is_none())),
            });
        }
    }
    Ok(releases)
}

/// Top-level keys that make a helmfile's state more than its text: other
/// helmfiles layered under or beside it, release templates merged in.
const LAYERED_KEYS: &[&str] = &["bases", "helmfiles", "templates"];

/// The releases of a helmfile whose text is its state, read from that text
/// without running `helmfile build`: plain YAML (helmfile renders only
/// `.gotmpl` files as templates, and this has no `{{` either), one document,
/// with nothing layered in (no [`LAYERED_KEYS`], no `<<` merge) and every
/// release a name and a chart, its `namespace` and `needs` as written. `None`
/// for anything else, which `helmfile build` then reads.
pub fn read_plain(text: &str) -> Option<Vec<Release>> {
    if text.contains("{{") {
        return None;
    }
    let mut documents = crate::yaml::documents(text);
    let document = documents.next()?.ok()?;
    if documents.next().is_some() {
        return None;
    }
    let state = document.value.as_object()?;
    if LAYERED_KEYS.iter().any(|key| state.contains_key(*key)) {
        return None;
    }
    let text = |value: Option<&Value>| match value {
        None => Some(None),
        Some(value) => value.as_str().map(|text| Some(text.to_owned())),
    };
    state
        .get("releases")?
        .as_array()?
        .iter()
        .map(|release| {
            let release = release.as_object().filter(|r| !r.contains_key("<<"))?;
            let name = text(release.get("name"))??;
            let chart = text(release.get("chart"))??;
            let needs = match release.get("needs") {
                None => Vec::new(),
                Some(needs) => needs
                    .as_array()?
                    .iter()
                    .map(|need| need.as_str().map(str::to_owned))
                    .collect::<Option<_>>()?,
            };
            Some(Release {
                name,
                namespace: text(release.get("namespace"))?.filter(|ns| !ns.is_empty()),
                needs,
                chart_dir: CHARTIFY_KEYS
                    .iter()
                    .all(|key| !release.contains_key(*key))
                    .then_some(chart),
            })
        })
        .collect()
}

/// Each release's wave, by (name, namespace). A need names a release by its last segment and,
/// when given, its namespace; a need that names no release of the state is left to helmfile
/// (it reports those itself). Releases that need each other are an error naming them.
pub fn waves(releases: &[Release]) -> Result<BTreeMap<(String, Option<String>), u32>, String> {
    // The releases each one needs, by index.
    let edges: Vec<Vec<usize>> = releases
        .iter()
        .map(|release| {
            release
                .needs
                .iter()
                .flat_map(|need| {
                    let mut parts = need.rsplit('/');
                    let name = parts.next().unwrap_or_default();
                    let namespace = parts.next().filter(|ns| !ns.is_empty());
                    releases.iter().enumerate().filter_map(move |(i, other)| {
                        let same_namespace =
                            namespace.is_none_or(|ns| other.namespace.as_deref() == Some(ns));
                        (other.name == name && same_namespace).then_some(i)
                    })
                })
                .collect()
        })
        .collect();
    // A release's wave is known once its needs' are; what stays unknown is on a cycle or
    // behind one.
    let mut wave: Vec<Option<u32>> = vec![None; releases.len()];
    loop {
        let mut changed = false;
        for (i, needs) in edges.iter().enumerate() {
            if wave[i].is_some() {
                continue;
            }
            let known: Option<Vec<u32>> = needs.iter().map(|&need| wave[need]).collect();
            if let Some(known) = known {
                wave[i] = Some(known.into_iter().map(|w| w + 1).max().unwrap_or(0));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    if let Some(stuck) = wave.iter().position(Option::is_none) {
        return Err(cycle(releases, &edges, &wave, stuck));
    }
    Ok(releases
        .iter()
        .zip(wave)
        .map(|(release, wave)| {
            (
                (release.name.clone(), release.namespace.clone()),
                wave.unwrap_or_default(),
            )
        })
        .collect())
}

/// The message for releases that need each other, found from `start`, a release whose wave
/// stayed unknown: following needs that stayed unknown too must come back to one of them.
fn cycle(releases: &[Release], edges: &[Vec<usize>], wave: &[Option<u32>], start: usize) -> String {
    let mut path = vec![start];
    let mut at = start;
    while let Some(&next) = edges[at].iter().find(|&&need| wave[need].is_none()) {
        if let Some(from) = path.iter().position(|&i| i == next) {
            let names: Vec<&str> = path[from..]
                .iter()
                .chain(std::iter::once(&next))
                .map(|&i| releases[i].name.as_str())
                .collect();
            return format!("releases need each other: {}", names.join(" -> "));
        }
        path.push(next);
        at = next;
    }
    format!(
        "release `{}` needs releases that need it back",
        releases[start].name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release(name: &str, namespace: Option<&str>, needs: &[&str]) -> Release {
        Release {
            name: name.to_owned(),
            namespace: namespace.map(str::to_owned),
            needs: needs.iter().map(|n| (*n).to_owned()).collect(),
            chart_dir: None,
        }
    }

    #[test]
    fn helmfile_build_output_gives_releases_and_needs() {
        let stdout = "---\n#  Source: helmfile.yaml\n\nfilepath: helmfile.yaml\nreleases:\n- chart: ./a\n  name: app\n  namespace: apps\n  needs:\n  - infra/db\n- chart: ./db\n  name: db\n  namespace: infra\ntemplates: {}\n";
        assert_eq!(
            read_build(stdout).unwrap(),
            [
                release("app", Some("apps"), &["infra/db"]),
                release("db", Some("infra"), &[])
            ]
        );
    }

    #[test]
    fn a_plain_helmfile_is_its_own_state_and_anything_else_is_left_to_helmfile_build() {
        let text = "helmDefaults: {wait: true}\nreleases:\n  - name: db\n    namespace: infra\n    chart: ./charts/db\n  - name: app\n    namespace: apps\n    chart: ./charts/app\n    needs: [infra/db]\n    values: [app.yaml]\n  - name: patched\n    chart: ./charts/p\n    jsonPatches: [{target: {kind: ConfigMap}}]\n";
        let plain = read_plain(text).unwrap();
        assert_eq!(
            plain
                .iter()
                .map(|r| (&r.name, &r.namespace, &r.needs, &r.chart_dir))
                .collect::<Vec<_>>(),
            [
                (
                    &"db".to_owned(),
                    &Some("infra".to_owned()),
                    &vec![],
                    &Some("./charts/db".to_owned())
                ),
                (
                    &"app".to_owned(),
                    &Some("apps".to_owned()),
                    &vec!["infra/db".to_owned()],
                    &Some("./charts/app".to_owned())
                ),
                (&"patched".to_owned(), &None, &vec![], &None),
            ]
        );
        for (text, why) in [
            (
                "releases:\n  - {name: '{{ .Values.n }}', chart: ./a}\n",
                "a template",
            ),
            (
                "bases: [common.yaml]\nreleases:\n  - {name: a, chart: ./a}\n",
                "a base",
            ),
            (
                "helmfiles: [sub/helmfile.yaml]\nreleases: []\n",
                "a sub-helmfile",
            ),
            (
                "templates:\n  d: &d {namespace: x}\nreleases:\n  - <<: *d\n    name: a\n    chart: ./a\n",
                "a release template",
            ),
            (
                "releases:\n  - {name: a, chart: ./a}\n---\nreleases:\n  - {name: b, chart: ./b}\n",
                "two parts",
            ),
            ("releases:\n  - {chart: ./a}\n", "no name"),
            (
                "releases:\n  - {name: a, chart: ./a, needs: [{x: 1}]}\n",
                "a need that is not a name",
            ),
            ("environments: {default: {}}\n", "no releases"),
        ] {
            assert_eq!(read_plain(text), None, "{why}");
        }
    }

    #[test]
    fn a_chart_is_rendered_as_it_is_only_without_patches_or_added_dependencies() {
        let stdout = "releases:\n- chart: ./a\n  chartPath: charts/a\n  name: a\n- chart: ./b\n  chartPath: charts/b\n  name: b\n  jsonPatches:\n  - target: {kind: ConfigMap}\n- chart: stable/c\n  name: c\n- chart: ./d\n  chartPath: charts/d\n  name: d\n  dependencies:\n  - chart: stable/redis\n";
        let dirs: Vec<_> = read_build(stdout)
            .unwrap()
            .into_iter()
            .map(|release| release.chart_dir)
            .collect();
        assert_eq!(dirs, [Some("charts/a".to_owned()), None, None, None]);
    }

    #[test]
    fn a_release_comes_one_wave_after_the_last_it_needs() {
        let releases = [
            release("web", Some("apps"), &["apps/api", "cache"]),
            release("api", Some("apps"), &["infra/db"]),
            release("db", Some("infra"), &[]),
            release("cache", None, &[]),
            release("alone", None, &["kube-context/infra/db"]),
        ];
        let waves = waves(&releases).unwrap();
        let wave = |name: &str| waves.iter().find(|((n, _), _)| n == name).unwrap().1;
        assert_eq!(
            [
                wave("db"),
                wave("cache"),
                wave("api"),
                wave("web"),
                wave("alone")
            ],
            [&0, &0, &1, &2, &1]
        );
    }

    #[test]
    fn a_need_in_another_namespace_or_of_no_release_does_not_order() {
        let releases = [
            release("app", None, &["other/db", "missing"]),
            release("db", Some("infra"), &[]),
        ];
        let waves = waves(&releases).unwrap();
        assert!(waves.values().all(|w| *w == 0), "{waves:?}");
    }

    #[test]
    fn releases_that_need_each_other_are_named() {
        let releases = [
            release("a", None, &["b"]),
            release("b", None, &["c"]),
            release("c", None, &["a"]),
            release("d", None, &[]),
        ];
        let error = waves(&releases).unwrap_err();
        assert!(error.contains("a -> b -> c -> a"), "{error}");
        let selfish = [release("a", None, &["a"])];
        assert!(waves(&selfish).unwrap_err().contains("a -> a"));
    }
}
