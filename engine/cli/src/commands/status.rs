//! `tazuna status`: readiness of everything Tazuna applied, from its state.

use std::collections::HashMap;
use std::process::ExitCode;

use clap::Args;
use kube::api::ListParams;
use serde_json::Value;
use tazuna_core::readiness::{self, Readiness};
use tazuna_engine::apply::api_for;
use tazuna_engine::report::OutputFormat;
use tazuna_engine::state::Store;

use super::apply::state_error;
use super::cluster::{self, Access};
use crate::settings::GlobalSettings;

/// Show whether the objects in Tazuna's state exist and are ready.
///
/// Reads the state, then lists each kind once per namespace (not one request
/// per object) and judges readiness with the same rules `apply` waits for.
/// Exits with 2 when an object is missing or not ready.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  tazuna status --context kind-staging\n  tazuna status -o json | jq '.[] | select(.ready == false)'"
)]
pub struct Status {
    /// List every object, not only those that are not ready.
    #[arg(long, short = 'a')]
    all: bool,
}

impl Status {
    /// Run it.
    pub fn run(self, settings: &GlobalSettings) -> anyhow::Result<ExitCode> {
        super::runtime()?.block_on(async {
            let config = super::load_config(settings)?;
            let cluster = cluster::connect(settings, &config, Access::Read).await?;
            let store = Store::new(cluster.client().clone());
            let states = store.load().await.map_err(state_error)?;
            let mut lists: HashMap<(String, Option<String>), HashMap<String, Value>> = HashMap::new();
            let mut rows = Vec::new();
            for stored in states.values() {
                for entry in &stored.state.objects {
                    let object = entry.object();
                    let verdict = match cluster.resolve(&object) {
                        None => Readiness::Failed("its kind is no longer served".into()),
                        Some(resolved) => {
                            let key = (format!("{}/{}", resolved.resource.api_version, resolved.resource.plural), object.namespace.clone());
                            if !lists.contains_key(&key) {
                                let api = api_for(cluster.client(), &resolved, object.namespace.as_deref());
                                let list = api.list(&ListParams::default()).await?;
                                let items = list
                                    .items
                                    .into_iter()
                                    .map(|o| {
                                        let mut value = serde_json::to_value(&o).unwrap_or(Value::Null);
                                        tazuna_engine::wait::fill_type(&mut value, &object);
                                        (o.metadata.name.clone().unwrap_or_default(), value)
                                    })
                                    .collect();
                                lists.insert(key.clone(), items);
                            }
                            match lists[&key].get(&object.name) {
                                None => Readiness::Failed("missing".into()),
                                Some(live) => readiness::assess(live),
                            }
                        }
                    };
                    rows.push((stored.state.manifest.clone(), object, verdict));
                }
            }
            let not_ready = rows.iter().filter(|r| !r.2.is_ready()).count();
            if settings.output == OutputFormat::Json {
                let json: Vec<Value> = rows
                    .iter()
                    .map(|(m, o, v)| serde_json::json!({"manifest": m, "object": o.to_string(), "ready": v.is_ready(), "reason": v.reason()}))
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&json)?);
            } else {
                for (manifest, object, verdict) in &rows {
                    if self.all || !verdict.is_ready() {
                        outln!("{manifest}  {object}  {verdict}");
                    }
                }
                outln!(
                    "{} manifests, {} objects: {} ready, {not_ready} not ready ({} list requests)",
                    states.len(),
                    rows.len(),
                    rows.len() - not_ready,
                    lists.len()
                );
            }
            Ok(if not_ready == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
        })
    }
}
