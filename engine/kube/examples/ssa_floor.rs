//! The floor of `cargo xtask bench`: the server-side apply requests an apply
//! tool has to send, sent by kube-rs alone, with none of Tazuna's logic (no
//! config, state, lock, plugins, diff or pruning). Not part of Tazuna; the
//! benchmark reports Tazuna as a multiple of this client's time.
//!
//! ```text
//! ssa_floor --kubeconfig FILE --context NAME [--concurrency N] [--wait] STAGE...
//! ```
//!
//! A STAGE is `[NAMESPACE=]FILE[,[NAMESPACE=]FILE...]`: YAML files applied
//! together, each with the NAMESPACE its namespaced objects that name none go
//! to (default `default`).
//! Stages run one after another. Inside a stage, Namespaces and
//! CustomResourceDefinitions go first, then every other object, N requests in
//! flight. With `--wait`, a stage's Deployments must be Available and its
//! Jobs Complete (the charts' hooks) before the next stage starts (a watch on
//! each, as `kubectl rollout status` and `kubectl wait` do).
//! Requests carry the user agent `ssa-floor`, so the audit log tells them
//! apart.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::PathBuf;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DynamicObject, Patch, PatchParams, ValidationDirective};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use kube::runtime::wait::await_condition;

type Error = Box<dyn std::error::Error + Send + Sync>;

struct Stage {
    /// Each file with the namespace of its objects that name none.
    files: Vec<(String, PathBuf)>,
}

struct Args {
    kubeconfig: PathBuf,
    context: String,
    concurrency: usize,
    wait: bool,
    stages: Vec<Stage>,
}

fn parse_args() -> Result<Args, Error> {
    let mut args = std::env::args().skip(1);
    let (mut kubeconfig, mut context) = (None, None);
    let (mut concurrency, mut wait, mut stages) = (32, false, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--kubeconfig" => kubeconfig = args.next().map(PathBuf::from),
            "--context" => context = args.next(),
            "--concurrency" => concurrency = args.next().ok_or("--concurrency needs N")?.parse()?,
            "--wait" => wait = true,
            stage => stages.push(Stage {
                files: stage
                    .split(',')
                    .map(|item| {
                        let (namespace, file) = item.split_once('=').unwrap_or(("default", item));
                        (namespace.to_owned(), PathBuf::from(file))
                    })
                    .collect(),
            }),
        }
    }
    Ok(Args {
        kubeconfig: kubeconfig.ok_or("--kubeconfig is required")?,
        context: context.ok_or("--context is required")?,
        concurrency: concurrency.max(1),
        wait,
        stages,
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = parse_args()?;
    let options = KubeConfigOptions {
        context: Some(args.context.clone()),
        ..KubeConfigOptions::default()
    };
    let mut config =
        kube::Config::from_custom_kubeconfig(Kubeconfig::read_from(&args.kubeconfig)?, &options)
            .await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static("ssa-floor"),
    ));
    let client = kube::Client::try_from(config)?;
    let mut kinds: HashMap<GroupVersionKind, (ApiResource, bool)> = HashMap::new();
    for stage in &args.stages {
        let mut objects = Vec::new();
        for (namespace, file) in &stage.files {
            let text = std::fs::read_to_string(file)?;
            for document in serde_yaml::Deserializer::from_str(&text) {
                let value = <serde_yaml::Value as serde::Deserialize>::deserialize(document)?;
                if value.is_null() {
                    continue;
                }
                let object: DynamicObject = serde_yaml::from_value(value)?;
                objects.push((namespace.clone(), object));
            }
        }
        let (first, rest): (Vec<_>, Vec<_>) = objects.into_iter().partition(|(_, o)| {
            o.types
                .as_ref()
                .is_some_and(|t| t.kind == "Namespace" || t.kind == "CustomResourceDefinition")
        });
        for batch in [first, rest] {
            for (_, object) in &batch {
                let gvk = gvk(object)?;
                if let Entry::Vacant(slot) = kinds.entry(gvk) {
                    let found = discover(&client, slot.key()).await?;
                    slot.insert(found);
                }
            }
            stream::iter(batch.into_iter().map(|(default, object)| {
                let client = client.clone();
                let (resource, namespaced) = kinds[&gvk(&object).expect("checked")].clone();
                let namespace =
                    namespaced.then(|| object.metadata.namespace.clone().unwrap_or(default));
                async move { apply(client, resource, namespace, object).await }
            }))
            .buffer_unordered(args.concurrency)
            .try_collect::<Vec<_>>()
            .await?;
        }
        if args.wait {
            wait_workloads(&client, stage).await?;
        }
    }
    Ok(())
}

fn gvk(object: &DynamicObject) -> Result<GroupVersionKind, Error> {
    let types = object
        .types
        .as_ref()
        .ok_or("an object without apiVersion/kind")?;
    let (group, version) = types
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", &types.api_version));
    Ok(GroupVersionKind::gvk(group, version, &types.kind))
}

/// The kind's resource and whether it is namespaced; a kind whose CRD was
/// just created may take a moment to be served.
async fn discover(
    client: &kube::Client,
    gvk: &GroupVersionKind,
) -> Result<(ApiResource, bool), Error> {
    let mut tries = 0;
    loop {
        match kube::discovery::pinned_kind(client, gvk).await {
            Ok((resource, capabilities)) => {
                return Ok((resource, capabilities.scope == Scope::Namespaced));
            }
            Err(error) if tries >= 100 => return Err(error.into()),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn apply(
    client: kube::Client,
    resource: ApiResource,
    namespace: Option<String>,
    object: DynamicObject,
) -> Result<(), Error> {
    let api: Api<DynamicObject> = match &namespace {
        Some(namespace) => Api::namespaced_with(client, namespace, &resource),
        None => Api::all_with(client, &resource),
    };
    let name = object
        .metadata
        .name
        .clone()
        .ok_or("an object without a name")?;
    let mut params = PatchParams::apply("ssa-floor").force();
    params.field_validation = Some(ValidationDirective::Strict);
    api.patch(&name, &params, &Patch::Apply(&object))
        .await
        .map_err(|e| format!("{} {name}: {e}", resource.kind))?;
    Ok(())
}

/// Waits until every Deployment in the stage's files is Available with all
/// its replicas updated, and every Job is Complete.
async fn wait_workloads(client: &kube::Client, stage: &Stage) -> Result<(), Error> {
    let mut waits: Vec<futures::future::BoxFuture<'_, Result<(), Error>>> = Vec::new();
    for (default, file) in &stage.files {
        let text = std::fs::read_to_string(file)?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value = <serde_yaml::Value as serde::Deserialize>::deserialize(document)?;
            let kind = value.get("kind").and_then(|k| k.as_str());
            if !matches!(kind, Some("Deployment" | "Job")) {
                continue;
            }
            let metadata = &value["metadata"];
            let name = metadata["name"]
                .as_str()
                .ok_or("a workload without a name")?
                .to_owned();
            let namespace = metadata["namespace"].as_str().unwrap_or(default);
            if kind == Some("Job") {
                let api: Api<Job> = Api::namespaced(client.clone(), namespace);
                waits.push(Box::pin(async move {
                    await_condition(api, &name, |j: Option<&Job>| j.is_some_and(complete)).await?;
                    Ok(())
                }));
                continue;
            }
            let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
            waits.push(Box::pin(async move {
                await_condition(api, &name, |d: Option<&Deployment>| {
                    d.is_some_and(available)
                })
                .await?;
                Ok(())
            }));
        }
    }
    futures::future::try_join_all(waits).await?;
    Ok(())
}

fn available(d: &Deployment) -> bool {
    let (spec, Some(status)) = (&d.spec, &d.status) else {
        return false;
    };
    let want = spec.replicas.unwrap_or(1);
    status.observed_generation >= d.metadata.generation
        && status.updated_replicas.unwrap_or(0) == want
        && status.available_replicas.unwrap_or(0) == want
}

fn complete(j: &Job) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}
