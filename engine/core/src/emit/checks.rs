//! The emit verdict's checks: what an object of an allowed kind must keep to
//! (a data Secret, a Service without a fixed address, a Pod within the
//! baseline that runs as and reads only what its render creates), and what a
//! cluster-scoped object granted by kind must keep to.

use super::*;

/// The labels a ClusterRole granted by kind may carry: any other label may
/// be what an aggregated ClusterRole (`view`, `edit`, `admin`, or one of the
/// cluster's own) selects, which would add this role's rules to it.
pub(super) const ROLE_LABELS: &[&str] = &["app.kubernetes.io/", "helm.sh/chart"];

/// A cluster-scoped object granted by kind that still needs its name
/// granted: an aggregated ClusterRole (its rules flow into `view`, `edit`,
/// `admin` or any role that selects it) or one with a label that an
/// aggregation may select (only [`ROLE_LABELS`] are allowed), RBAC objects
/// named `system:*` (the API server's own), and the default
/// IngressClass or StorageClass (every Ingress or claim that names none
/// would use it), the global default PriorityClass, and a StorageClass or
/// VolumeAttributesClass that hands its driver a Secret of a namespace other
/// than the manifest's `home` ([`secret_parameter_elsewhere`]).
pub(super) fn cluster_object_check(
    reference: &ObjectRef,
    object: &Value,
    home: &str,
) -> Option<String> {
    let annotated_default = |key: &str| object["metadata"]["annotations"][key] == "true";
    if matches!(
        (reference.group.as_str(), reference.kind.as_str()),
        ("storage.k8s.io", "StorageClass" | "VolumeAttributesClass")
    ) && let Some(why) = secret_parameter_elsewhere(object, home)
    {
        return Some(why);
    }
    match (reference.group.as_str(), reference.kind.as_str()) {
        ("scheduling.k8s.io", "PriorityClass") if object["globalDefault"] == true => {
            return Some(
                "the global default PriorityClass ranks every Pod that names none, in every namespace".to_owned(),
            );
        }
        ("networking.k8s.io", "IngressClass")
            if annotated_default("ingressclass.kubernetes.io/is-default-class") =>
        {
            return Some(
                "the default IngressClass serves every Ingress that names none".to_owned(),
            );
        }
        ("storage.k8s.io", "StorageClass")
            if annotated_default("storageclass.kubernetes.io/is-default-class")
                || annotated_default("storageclass.beta.kubernetes.io/is-default-class") =>
        {
            return Some(
                "the default StorageClass provisions every claim that names none".to_owned(),
            );
        }
        ("rbac.authorization.k8s.io", _) => {}
        _ => return None,
    }
    if reference.name.starts_with("system:") {
        return Some("`system:*` RBAC objects are the API server's own".to_owned());
    }
    if reference.kind == "ClusterRole" {
        if object
            .get("aggregationRule")
            .is_some_and(|rule| !rule.is_null())
        {
            return Some(
                "an aggregated ClusterRole takes the rules of every role it selects".to_owned(),
            );
        }
        let labels = object["metadata"]["labels"].as_object();
        if let Some((label, _)) = labels.into_iter().flatten().find(|(key, _)| {
            !ROLE_LABELS.iter().any(|allowed| {
                key.starts_with(allowed) && (allowed.ends_with('/') || key == allowed)
            })
        }) {
            return Some(format!(
                "label `{label}` may select it into an aggregated ClusterRole, which then gets its rules (a ClusterRole granted by kind carries only `app.kubernetes.io/*` and `helm.sh/chart` labels)"
            ));
        }
    }
    None
}

/// `kube-root-ca.crt` is the control plane's: every Pod of the namespace
/// trusts the CA it holds. A plugin's copy in a namespace the run creates
/// could be written before the control plane publishes the real one.
pub(super) fn config_map_check(object: &Value, _: &Made) -> Option<String> {
    (object["metadata"]["name"] == "kube-root-ca.crt").then(|| {
        "`kube-root-ca.crt` is the CA the control plane publishes for every Pod of the namespace to trust".to_owned()
    })
}

/// Secret types that hold data for the namespace's own workloads.
pub(super) const DATA_SECRET_TYPES: &[&str] = &[
    "Opaque",
    "kubernetes.io/tls",
    "kubernetes.io/dockerconfigjson",
    "kubernetes.io/dockercfg",
    "kubernetes.io/basic-auth",
    "kubernetes.io/ssh-auth",
];

pub(super) fn secret_check(object: &Value, _: &Made) -> Option<String> {
    match &object["type"] {
        Value::Null => None,
        Value::String(kind) if DATA_SECRET_TYPES.contains(&kind.as_str()) => None,
        other => Some(format!(
            "Secret type {other} is not a data type ({})",
            DATA_SECRET_TYPES.join(", ")
        )),
    }
}

pub(super) fn service_check(object: &Value, _: &Made) -> Option<String> {
    let spec = &object["spec"];
    match spec["type"].as_str() {
        None | Some("ClusterIP" | "NodePort" | "LoadBalancer") => {}
        Some(other) => return Some(format!("a Service of type `{other}` can point anywhere")),
    }
    if !spec["type"].is_null() && !spec["type"].is_string() {
        return Some("a Service `type` that is not a string".to_owned());
    }
    for field in ["clusterIP", "clusterIPs"] {
        let fixed = match &spec[field] {
            Value::Null => false,
            Value::String(ip) => !ip.is_empty() && ip != "None",
            Value::Array(ips) => ips.iter().any(|ip| ip != "" && ip != "None"),
            _ => true,
        };
        if fixed {
            return Some(format!(
                "`{field}` takes a fixed address, which another Service (the cluster's DNS, say) may be meant to have"
            ));
        }
    }
    let external = spec["externalIPs"]
        .as_array()
        .is_some_and(|ips| !ips.is_empty())
        || (!spec["externalIPs"].is_null() && !spec["externalIPs"].is_array());
    external.then(|| "`externalIPs` take traffic meant for other addresses".to_owned())
}

/// A storage class's parameter that names the namespace of a Secret its
/// driver reads (`csi.storage.k8s.io/node-publish-secret-namespace`, an
/// in-tree `secretNamespace`): allowed only as the manifest's namespace
/// `home` or `${pvc.namespace}` (the claimant's own).
fn secret_parameter_elsewhere(object: &Value, home: &str) -> Option<String> {
    let parameters = object["parameters"].as_object()?;
    parameters.iter().find_map(|(key, value)| {
        let plain: String = key.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        let names_namespace = plain.to_ascii_lowercase().contains("secretnamespace");
        let value = value.as_str().unwrap_or_default();
        (names_namespace && value != home && value != "${pvc.namespace}").then(|| {
            format!(
                "parameter `{key}` hands the driver a Secret of namespace `{value}`, not the manifest's `{home}`"
            )
        })
    })
}

/// The fields a claim may set: what new storage to provision. Anything else
/// (`volumeName`, `selector`, `dataSource`, `dataSourceRef`) takes an
/// existing volume or another's data.
const CLAIM_FIELDS: &[&str] = &[
    "accessModes",
    "resources",
    "storageClassName",
    "volumeAttributesClassName",
    "volumeMode",
];

pub(super) fn claim_check(object: &Value, _: &Made) -> Option<String> {
    let spec = &object["spec"];
    let name = &spec["volumeName"];
    if !name.is_null() && name != "" {
        return Some("`volumeName` binds an existing volume, with another's data".to_owned());
    }
    if !object["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"].is_null() {
        return Some(
            "the annotation `volume.beta.kubernetes.io/storage-class` overrides `storageClassName` (set the field instead)".to_owned(),
        );
    }
    if spec["storageClassName"] == "" {
        return Some(
            "`storageClassName: \"\"` binds only an existing volume, with another's data"
                .to_owned(),
        );
    }
    let fields = spec.as_object()?;
    fields
        .keys()
        .find(|key| !CLAIM_FIELDS.contains(&key.as_str()) && key.as_str() != "volumeName")
        .map(|field| {
            format!(
                "`{field}` takes an existing volume or another's data (a claim may set {})",
                CLAIM_FIELDS.join(", ")
            )
        })
}

/// The Pod spec an object of any kind carries, found by its shape: its own
/// `spec` (a Pod), a `spec.template` (the workloads, ReplicationControllers,
/// most custom resources that run Pods) or a CronJob's job template.
pub(super) fn pod_spec_of(object: &Value) -> Option<&Value> {
    let spec = &object["spec"];
    [
        spec,
        &spec["template"]["spec"],
        &spec["jobTemplate"]["spec"]["template"]["spec"],
    ]
    .into_iter()
    .find(|candidate| !candidate["containers"].is_null())
}

pub(super) fn pod_check(object: &Value, made: &Made) -> Option<String> {
    pod_spec_check(&object["spec"], made)
}

pub(super) fn template_check(object: &Value, made: &Made) -> Option<String> {
    pod_spec_check(&object["spec"]["template"]["spec"], made)
}

pub(super) fn stateful_check(object: &Value, made: &Made) -> Option<String> {
    for claim in object["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(why) = claim_check(claim, made) {
            return Some(format!("a claim template's {why}"));
        }
    }
    template_check(object, made)
}

pub(super) fn cron_check(object: &Value, made: &Made) -> Option<String> {
    pod_spec_check(
        &object["spec"]["jobTemplate"]["spec"]["template"]["spec"],
        made,
    )
}

/// Volume sources a Pod of a third-party plugin may use.
pub(super) const VOLUME_SOURCES: &[&str] = &[
    "configMap",
    "secret",
    "emptyDir",
    "persistentVolumeClaim",
    "downwardAPI",
    "projected",
    "ephemeral",
    "image",
];

/// Sources of a projected volume it may use.
pub(super) const PROJECTED_SOURCES: &[&str] = &[
    "configMap",
    "secret",
    "downwardAPI",
    "serviceAccountToken",
    "clusterTrustBundle",
];

/// Capabilities the Pod Security baseline lets a container add.
pub(super) const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls the Pod Security baseline calls safe.
pub(super) const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// Whether a Pod spec stays within what a third-party plugin may run: as a
/// ServiceAccount the same render creates (or with no token of another's),
/// and within the Pod Security baseline, by allow-list (volume sources,
/// capabilities, sysctls; no host namespaces, ports or privilege).
pub(super) fn pod_spec_check(spec: &Value, made: &Made) -> Option<String> {
    let Some(spec) = spec.as_object() else {
        return Some("no Pod spec to check".to_owned());
    };
    for field in ["hostNetwork", "hostPID", "hostIPC", "hostUsers"] {
        let value = spec.get(field).unwrap_or(&Value::Null);
        let refused = match field {
            // hostUsers: false is the safer setting; true is the default.
            "hostUsers" => !value.is_null() && !value.is_boolean(),
            _ => !value.is_null() && value != &Value::Bool(false),
        };
        if refused {
            return Some(format!("`{field}` shares the node's"));
        }
    }
    let account = match (spec.get("serviceAccountName"), spec.get("serviceAccount")) {
        (Some(Value::String(name)), _) | (None | Some(Value::Null), Some(Value::String(name))) => {
            name.as_str()
        }
        (None | Some(Value::Null), None | Some(Value::Null)) => "default",
        _ => return Some("a ServiceAccount name that is not a string".to_owned()),
    };
    let own = made
        .service_accounts
        .contains(&(made.namespace.clone(), account.to_owned()));
    let volumes = spec.get("volumes").and_then(Value::as_array);
    if !spec.get("volumes").is_none_or(Value::is_null) && volumes.is_none() {
        return Some("`volumes` is not a list".to_owned());
    }
    let mut projects_token = false;
    for volume in volumes.into_iter().flatten() {
        let Some(volume) = volume.as_object() else {
            return Some("a volume that is not a mapping".to_owned());
        };
        let name = volume.get("name").and_then(Value::as_str).unwrap_or("?");
        let sources: Vec<&String> = volume.keys().filter(|k| *k != "name").collect();
        let [source] = sources.as_slice() else {
            return Some(format!("volume `{name}` has not exactly one source"));
        };
        if !VOLUME_SOURCES.contains(&source.as_str()) {
            return Some(format!(
                "volume `{name}` is of type `{source}` (allowed: {})",
                VOLUME_SOURCES.join(", ")
            ));
        }
        if source.as_str() == "secret"
            && let Some(why) = secret_read(&volume["secret"]["secretName"], made)
        {
            return Some(format!("volume `{name}` {why}"));
        }
        if source.as_str() == "ephemeral"
            && let Some(why) = claim_check(&volume["ephemeral"]["volumeClaimTemplate"], made)
        {
            return Some(format!("volume `{name}`'s claim template: {why}"));
        }
        if source.as_str() == "projected" {
            let projections = volume["projected"]["sources"].as_array();
            for projection in projections.into_iter().flatten() {
                let Some(projection) = projection.as_object() else {
                    return Some(format!("volume `{name}` projects something unreadable"));
                };
                for key in projection.keys() {
                    if !PROJECTED_SOURCES.contains(&key.as_str()) {
                        return Some(format!("volume `{name}` projects `{key}`"));
                    }
                    projects_token |= key == "serviceAccountToken";
                }
                if let Some(why) = projection
                    .get("secret")
                    .and_then(|secret| secret_read(&secret["name"], made))
                {
                    return Some(format!("volume `{name}` {why}"));
                }
            }
        }
    }
    let automount = spec.get("automountServiceAccountToken");
    let no_token = automount == Some(&Value::Bool(false)) && !projects_token;
    if !own && !no_token {
        return Some(format!(
            "its Pods run as ServiceAccount `{account}`, which this render does not create (create it in the manifest, or set `automountServiceAccountToken: false` and project no token)"
        ));
    }
    if let Some(context) = spec.get("securityContext").filter(|c| !c.is_null()) {
        if let Some(why) = context_check(context, POD_CONTEXT) {
            return Some(format!("the Pod's {why}"));
        }
        for sysctl in context["sysctls"].as_array().into_iter().flatten() {
            let name = sysctl["name"].as_str().unwrap_or_default();
            if !SAFE_SYSCTLS.contains(&name) {
                return Some(format!(
                    "sysctl `{name}` is not one the baseline calls safe"
                ));
            }
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(value) = spec.get(list).filter(|v| !v.is_null()) else {
            continue;
        };
        let Some(containers) = value.as_array() else {
            return Some(format!("`{list}` is not a list"));
        };
        for container in containers {
            if let Some(why) = container_check(container, made) {
                return Some(why);
            }
        }
    }
    None
}

/// Why reading Secret `name` is beyond a plugin's Pod: it is not one the
/// same render creates (another identity's token, say).
pub(super) fn secret_read(name: &Value, made: &Made) -> Option<String> {
    match name.as_str() {
        Some(name) if made.has_secret(name) => None,
        Some(name) => Some(format!(
            "reads Secret `{name}`, which this render does not create"
        )),
        None => Some("reads a Secret it does not name".to_owned()),
    }
}

/// The fields of a Pod's `securityContext` a plugin's Pod may set: the
/// rest (`windowsOptions` with its host processes, say) needs a grant.
pub(super) const POD_CONTEXT: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "fsGroup",
    "fsGroupChangePolicy",
    "supplementalGroups",
    "supplementalGroupsPolicy",
    "sysctls",
    "seccompProfile",
    "appArmorProfile",
    "seLinuxOptions",
    "seLinuxChangePolicy",
];

/// The fields of a container's `securityContext` a plugin's Pod may set.
pub(super) const CONTAINER_CONTEXT: &[&str] = &[
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "allowPrivilegeEscalation",
    "readOnlyRootFilesystem",
    "privileged",
    "procMount",
    "capabilities",
    "seccompProfile",
    "appArmorProfile",
    "seLinuxOptions",
];

/// Profiles (seccomp, AppArmor) the Pod Security baseline allows.
pub(super) const PROFILES: &[&str] = &["RuntimeDefault", "Localhost"];

/// SELinux types the Pod Security baseline allows.
pub(super) const SELINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// A `securityContext` within the baseline: only the fields of `allowed`,
/// confined profiles, and SELinux options that pick an allowed type only.
pub(super) fn context_check(context: &Value, allowed: &[&str]) -> Option<String> {
    let Some(context) = context.as_object() else {
        return Some("securityContext is not a mapping".to_owned());
    };
    if let Some(field) = context.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Some(format!("securityContext sets `{field}`"));
    }
    for profile in ["seccompProfile", "appArmorProfile"] {
        let Some(value) = context.get(profile).filter(|v| !v.is_null()) else {
            continue;
        };
        let kind = value["type"].as_str().unwrap_or_default();
        if !PROFILES.contains(&kind) {
            return Some(format!(
                "securityContext's {profile} is `{kind}` (allowed: {})",
                PROFILES.join(", ")
            ));
        }
    }
    if let Some(options) = context.get("seLinuxOptions").filter(|v| !v.is_null()) {
        let Some(options) = options.as_object() else {
            return Some("seLinuxOptions is not a mapping".to_owned());
        };
        for (key, value) in options {
            let fine = match key.as_str() {
                "type" => value.as_str().is_some_and(|t| SELINUX_TYPES.contains(&t)),
                "level" => value.is_string(),
                _ => value.is_null() || value == "",
            };
            if !fine {
                return Some(format!("seLinuxOptions sets {key} {value}"));
            }
        }
    }
    None
}

pub(super) fn container_check(container: &Value, made: &Made) -> Option<String> {
    let name = container["name"].as_str().unwrap_or("?");
    let context = &container["securityContext"];
    if !context.is_null()
        && let Some(why) = context_check(context, CONTAINER_CONTEXT)
    {
        return Some(format!("container `{name}`'s {why}"));
    }
    for variable in container["env"].as_array().into_iter().flatten() {
        let reference = &variable["valueFrom"]["secretKeyRef"];
        if !reference.is_null()
            && let Some(why) = secret_read(&reference["name"], made)
        {
            return Some(format!("container `{name}` {why}"));
        }
    }
    for source in container["envFrom"].as_array().into_iter().flatten() {
        let reference = &source["secretRef"];
        if !reference.is_null()
            && let Some(why) = secret_read(&reference["name"], made)
        {
            return Some(format!("container `{name}` {why}"));
        }
    }
    let privileged = &context["privileged"];
    if !privileged.is_null() && privileged != &Value::Bool(false) {
        return Some(format!("container `{name}` is privileged"));
    }
    let procs = &context["procMount"];
    if !procs.is_null() && procs != "Default" {
        return Some(format!("container `{name}` asks for procMount {procs}"));
    }
    for capability in context["capabilities"]["add"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let text = capability.as_str().unwrap_or_default();
        if !BASELINE_CAPABILITIES.contains(&text.trim_start_matches("CAP_")) {
            return Some(format!(
                "container `{name}` adds capability {capability}, beyond the baseline"
            ));
        }
    }
    for port in container["ports"].as_array().into_iter().flatten() {
        let host = &port["hostPort"];
        if !host.is_null() && host != 0 {
            return Some(format!("container `{name}` takes host port {host}"));
        }
    }
    None
}
