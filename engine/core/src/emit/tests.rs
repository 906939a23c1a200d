use super::*;
use serde_json::json;

fn reference(object: &Value, home: &str, namespaced: bool) -> ObjectRef {
    let mut reference = ObjectRef::of(object).unwrap();
    if namespaced && reference.namespace.is_none() {
        reference.namespace = Some(home.to_owned());
    }
    if !namespaced {
        reference.namespace = None;
    }
    reference
}

/// The grants `object` lacks under `scope` in a render of `render`.
fn lacks(scope: &EmitScope, object: &Value, render: &[&Value], namespaced: bool) -> Vec<String> {
    let made = Made::of(render.iter().copied(), "apps");
    scope
        .missing(
            &reference(object, "apps", namespaced),
            object,
            "apps",
            &made,
        )
        .into_iter()
        .map(|n| n.grant)
        .collect()
}

/// Pod `p` running as ServiceAccount `app`, with `extra` fields in its spec.
fn app_pod(extra: Value) -> Value {
    let mut spec = json!({"serviceAccountName": "app", "containers": [{"name": "c"}]});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    object("v1", "Pod", "p", json!({"spec": spec}))
}

fn object(api: &str, kind: &str, name: &str, rest: Value) -> Value {
    let mut value = json!({"apiVersion": api, "kind": kind, "metadata": {"name": name}});
    if let (Some(value), Some(rest)) = (value.as_object_mut(), rest.as_object()) {
        for (key, field) in rest {
            if key == "metadata" {
                value["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .extend(field.as_object().unwrap().clone());
            } else {
                value.insert(key.clone(), field.clone());
            }
        }
    }
    value
}

#[test]
fn without_grants_only_allowed_kinds_in_the_manifests_namespace() {
    let none = EmitScope::default();
    let config = object("v1", "ConfigMap", "a", json!({}));
    assert!(lacks(&none, &config, &[], true).is_empty());
    let home = object("v1", "Namespace", "apps", json!({}));
    assert!(lacks(&none, &home, &[], false).is_empty());
    let elsewhere = object(
        "v1",
        "Secret",
        "a",
        json!({"metadata": {"namespace": "kube-system"}}),
    );
    assert_eq!(
        lacks(&none, &elsewhere, &[], true),
        ["emit:namespace:kube-system"]
    );
    let binding = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "x",
        json!({}),
    );
    assert_eq!(
        lacks(&none, &binding, &[], false),
        [
            "emit:cluster:ClusterRoleBinding",
            "emit:kind:ClusterRoleBinding"
        ]
    );
    let role_binding = object(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "x",
        json!({}),
    );
    assert_eq!(
        lacks(&none, &role_binding, &[], true),
        ["emit:kind:RoleBinding"]
    );
    // Not on the list: a kind grant.
    let role = object("rbac.authorization.k8s.io/v1", "Role", "x", json!({}));
    assert_eq!(lacks(&none, &role, &[], true), ["emit:kind:Role"]);
    // A kind of another group that shares an allowed kind's name.
    let lookalike = object("evil.example/v1", "ConfigMap", "x", json!({}));
    assert_eq!(lacks(&none, &lookalike, &[], true), ["emit:kind:ConfigMap"]);
}

#[test]
fn grants_widen_the_scope_but_wildcards_skip_kube_namespaces() {
    let scope = EmitScope::new(["emit:namespace:*", "emit:cluster:*", "exec:helm"]);
    let other = object(
        "v1",
        "ConfigMap",
        "a",
        json!({"metadata": {"namespace": "other"}}),
    );
    assert!(lacks(&scope, &other, &[], true).is_empty());
    let role = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "a",
        json!({}),
    );
    assert!(lacks(&scope, &role, &[], false).is_empty());
    let system = object(
        "v1",
        "Secret",
        "a",
        json!({"metadata": {"namespace": "kube-system"}}),
    );
    assert_eq!(
        lacks(&scope, &system, &[], true),
        ["emit:namespace:kube-system"]
    );
    let scope = EmitScope::new(["emit:namespace:kube-system"]);
    assert!(lacks(&scope, &system, &[], true).is_empty());
    // The plugin requested the name, the user granted only the family: the
    // wildcard's bounds hold.
    let widened = EmitScope::new(["emit:namespace:*", "emit:namespace:kube-system"])
        .widened(["emit:namespace:kube-system"]);
    assert_eq!(
        lacks(&widened, &system, &[], true),
        ["emit:namespace:kube-system"]
    );
    let custom = object("evil.example.com/v1", "Secret", "a", json!({}));
    let kinds = EmitScope::new(["emit:kind:*", "emit:kind:Secret"]).widened(["emit:kind:Secret"]);
    assert_eq!(lacks(&kinds, &custom, &[], true), ["emit:kind:Secret"]);
    let built_in = object("v1", "Secret", "a", json!({"type": "kubernetes.io/tls"}));
    assert!(lacks(&kinds, &built_in, &[], true).is_empty());
}

#[test]
fn traffic_redirecting_objects_need_a_grant_naming_them() {
    let none = EmitScope::default();
    for (object, grant) in [
        (
            object(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                "kubernetes",
                json!({}),
            ),
            "emit:object:EndpointSlice/kubernetes",
        ),
        (
            object("v1", "Endpoints", "kubernetes", json!({})),
            "emit:object:Endpoints/kubernetes",
        ),
        (
            object(
                "v1",
                "Service",
                "s",
                json!({"spec": {"type": "ExternalName", "externalName": "x"}}),
            ),
            "emit:object:Service/s",
        ),
        (
            object(
                "v1",
                "Service",
                "s",
                json!({"spec": {"externalIPs": ["10.0.0.1"]}}),
            ),
            "emit:object:Service/s",
        ),
        (
            object(
                "v1",
                "PersistentVolumeClaim",
                "c",
                json!({"spec": {"volumeName": "pv-of-another"}}),
            ),
            "emit:object:PersistentVolumeClaim/c",
        ),
        (
            object(
                "v1",
                "PersistentVolumeClaim",
                "c",
                json!({"spec": {"selector": {"matchLabels": {"team": "x"}}}}),
            ),
            "emit:object:PersistentVolumeClaim/c",
        ),
        (
            object(
                "v1",
                "PersistentVolumeClaim",
                "c",
                json!({"spec": {"storageClassName": ""}}),
            ),
            "emit:object:PersistentVolumeClaim/c",
        ),
        (
            object(
                "v1",
                "PersistentVolumeClaim",
                "c",
                json!({"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": ""}}, "spec": {"storageClassName": "fast"}}),
            ),
            "emit:object:PersistentVolumeClaim/c",
        ),
        (
            object(
                "v1",
                "PersistentVolumeClaim",
                "c",
                json!({"spec": {"dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "x", "namespace": "other"}}}),
            ),
            "emit:object:PersistentVolumeClaim/c",
        ),
    ] {
        assert_eq!(lacks(&none, &object, &[], true), [grant], "{object}");
    }
    let plain = object(
        "v1",
        "Service",
        "s",
        json!({"spec": {"selector": {"a": "b"}}}),
    );
    assert!(lacks(&none, &plain, &[], true).is_empty());
    let new_storage = object(
        "v1",
        "PersistentVolumeClaim",
        "c",
        json!({"spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert!(lacks(&none, &new_storage, &[], true).is_empty());
    let granted = EmitScope::new(["emit:object:EndpointSlice/kubernetes"]);
    let slice = object(
        "discovery.k8s.io/v1",
        "EndpointSlice",
        "kubernetes",
        json!({}),
    );
    assert!(lacks(&granted, &slice, &[], true).is_empty());
    // A kind grant is not enough for a named kind.
    let kind = EmitScope::new(["emit:kind:EndpointSlice"]);
    assert!(!lacks(&kind, &slice, &[], true).is_empty());
}

#[test]
fn a_token_secret_needs_a_grant_naming_it_and_data_secrets_do_not() {
    let none = EmitScope::default();
    for kind in [
        "kubernetes.io/service-account-token",
        "bootstrap.kubernetes.io/token",
        "x",
    ] {
        let secret = object("v1", "Secret", "t", json!({"type": kind}));
        assert_eq!(
            lacks(&none, &secret, &[], true),
            ["emit:object:Secret/t"],
            "{kind}"
        );
    }
    for kind in [json!(null), json!("Opaque"), json!("kubernetes.io/tls")] {
        let secret = object("v1", "Secret", "t", json!({"type": kind}));
        assert!(lacks(&none, &secret, &[], true).is_empty(), "{kind}");
    }
    let odd = object("v1", "Secret", "t", json!({"type": ["Opaque"]}));
    assert!(!lacks(&none, &odd, &[], true).is_empty());
}

#[test]
fn a_workload_runs_only_as_a_service_account_its_render_creates() {
    let none = EmitScope::default();
    let account = object("v1", "ServiceAccount", "app", json!({}));
    let deployment = |spec: Value| {
        object(
            "apps/v1",
            "Deployment",
            "d",
            json!({"spec": {"template": {"spec": spec}}}),
        )
    };
    let own = deployment(json!({"serviceAccountName": "app", "containers": [{"name": "c"}]}));
    assert!(lacks(&none, &own, &[&account, &own], true).is_empty());
    // The namespace's default, or another's admin account: not created here.
    for spec in [
        json!({"containers": [{"name": "c"}]}),
        json!({"serviceAccountName": "cluster-admin-sa", "containers": []}),
        json!({"serviceAccount": "cluster-admin-sa"}),
        // The token comes back through a projected volume.
        json!({"automountServiceAccountToken": false, "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
    ] {
        let other = deployment(spec.clone());
        assert_eq!(
            lacks(&none, &other, &[&account], true),
            ["emit:object:Deployment/d"],
            "{spec}"
        );
    }
    // No token at all: any account.
    let tokenless =
        deployment(json!({"automountServiceAccountToken": false, "containers": [{"name": "c"}]}));
    assert!(lacks(&none, &tokenless, &[], true).is_empty());
    // The same account name in another namespace is another account.
    let elsewhere = object(
        "v1",
        "ServiceAccount",
        "app",
        json!({"metadata": {"namespace": "other"}}),
    );
    assert!(!lacks(&none, &own, &[&elsewhere], true).is_empty());
    // Pods and CronJobs are read the same way.
    let pod = object(
        "v1",
        "Pod",
        "p",
        json!({"spec": {"serviceAccountName": "admin"}}),
    );
    assert_eq!(lacks(&none, &pod, &[], true), ["emit:object:Pod/p"]);
    let cron = object(
        "batch/v1",
        "CronJob",
        "c",
        json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccountName": "admin"}}}}}}),
    );
    assert_eq!(lacks(&none, &cron, &[], true), ["emit:object:CronJob/c"]);
}

#[test]
fn a_workload_stays_within_the_pod_security_baseline() {
    let none = EmitScope::default();
    let account = object("v1", "ServiceAccount", "app", json!({}));
    let pod = app_pod;
    assert!(lacks(&none, &pod(json!({})), &[&account], true).is_empty());
    for extra in [
        json!({"hostNetwork": true}),
        json!({"hostPID": true}),
        json!({"hostIPC": "yes"}),
        json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
        json!({"volumes": [{"name": "c", "csi": {"driver": "x"}}]}),
        json!({"volumes": [{"name": "two", "emptyDir": {}, "hostPath": {"path": "/"}}]}),
        json!({"volumes": "x"}),
        json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]}),
        json!({"initContainers": [{"name": "i", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}),
        json!({"ephemeralContainers": [{"name": "e", "securityContext": {"capabilities": {"add": ["CAP_BPF"]}}}]}),
        json!({"containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}]}]}),
        json!({"containers": [{"name": "c", "securityContext": {"procMount": "Unmasked"}}]}),
        json!({"securityContext": {"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]}}),
        json!({"containers": "c"}),
    ] {
        assert_eq!(
            lacks(&none, &pod(extra.clone()), &[&account], true),
            ["emit:object:Pod/p"],
            "{extra}"
        );
    }
    let fine = pod(
        json!({"volumes": [{"name": "c", "configMap": {"name": "x"}}], "containers": [{"name": "c", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}}]}),
    );
    assert!(lacks(&none, &fine, &[&account], true).is_empty());
}

#[test]
fn the_next_spellings_of_an_outside_attack_need_a_grant_naming_them() {
    let none = EmitScope::default();
    let account = object("v1", "ServiceAccount", "app", json!({}));
    let own_secret = object("v1", "Secret", "mine", json!({}));
    let render = [&account, &own_secret];
    let pod = app_pod;
    // Another identity's token, read rather than mounted as the Pod's.
    for extra in [
        json!({"automountServiceAccountToken": false, "volumes": [{"name": "t", "secret": {"secretName": "admin-token"}}]}),
        json!({"volumes": [{"name": "t", "projected": {"sources": [{"secret": {"name": "admin-token"}}]}}]}),
        json!({"containers": [{"name": "c", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "admin-token", "key": "token"}}}]}]}),
        json!({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "admin-token"}}]}]}),
        json!({"volumes": [{"name": "t", "secret": {}}]}),
        // Outside the baseline, by fields the API server lets through.
        json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
        json!({"containers": [{"name": "c", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}),
        json!({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
        json!({"containers": [{"name": "c", "securityContext": {"seLinuxOptions": {"user": "system_u"}}}]}),
        json!({"securityContext": {"windowsOptions": {"hostProcess": true}}}),
        json!({"containers": [{"name": "c", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}),
        // A volume someone else left, through a claim template.
        json!({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"volumeName": "someone-elses-pv"}}}}]}),
    ] {
        assert_eq!(
            lacks(&none, &pod(extra.clone()), &render, true),
            ["emit:object:Pod/p"],
            "{extra}"
        );
    }
    // A token Secret of the same render is still another's token.
    let token = object(
        "v1",
        "Secret",
        "admin-token",
        json!({"type": "kubernetes.io/service-account-token"}),
    );
    let reads = pod(json!({"volumes": [{"name": "t", "secret": {"secretName": "admin-token"}}]}));
    assert_eq!(
        lacks(&none, &reads, &[&account, &token], true),
        ["emit:object:Pod/p"]
    );
    // What the render creates, and confined profiles, are fine.
    let fine = pod(json!({
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": true},
        "volumes": [{"name": "s", "secret": {"secretName": "mine"}}],
        "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "mine"}}], "securityContext": {"allowPrivilegeEscalation": false, "seLinuxOptions": {"type": "container_t", "level": "s0:c1"}}}],
    }));
    assert!(lacks(&none, &fine, &render, true).is_empty());
    let stateful = object(
        "apps/v1",
        "StatefulSet",
        "s",
        json!({"spec": {"template": {"spec": {"serviceAccountName": "app", "containers": []}}, "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {"volumeName": "someone-elses-pv"}}]}}),
    );
    assert_eq!(
        lacks(&none, &stateful, &render, true),
        ["emit:object:StatefulSet/s"]
    );
    // A fixed cluster IP takes an address another Service is meant to have.
    for ip in [json!("10.96.0.10"), json!(["10.96.0.10"]), json!(7)] {
        let service = object("v1", "Service", "s", json!({"spec": {"clusterIP": ip}}));
        assert_eq!(
            lacks(&none, &service, &[], true),
            ["emit:object:Service/s"],
            "{ip}"
        );
    }
    let headless = object("v1", "Service", "s", json!({"spec": {"clusterIP": "None"}}));
    assert!(lacks(&none, &headless, &[], true).is_empty());
    // A kind grant on something else that makes Pods does not lift the
    // workload bounds.
    let granted = EmitScope::new(["emit:kind:ReplicationController"]);
    let controller = |account: &str| {
        object(
            "v1",
            "ReplicationController",
            "rc",
            json!({"spec": {"template": {"spec": {"serviceAccountName": account, "containers": [{"name": "c"}]}}}}),
        )
    };
    assert_eq!(
        lacks(&granted, &controller("admin"), &render, true),
        ["emit:object:ReplicationController/rc"]
    );
    assert!(lacks(&granted, &controller("app"), &render, true).is_empty());
    assert_eq!(
        lacks(&none, &controller("app"), &render, true),
        ["emit:kind:ReplicationController"]
    );
}

#[test]
fn controller_inputs_need_a_grant_naming_them() {
    let none = EmitScope::default();
    for (api, kind) in [
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("source.toolkit.fluxcd.io/v1", "GitRepository"),
        ("source.toolkit.fluxcd.io/v1beta2", "OCIRepository"),
        ("argoproj.io/v1alpha1", "Application"),
        ("argoproj.io/v1alpha1", "ApplicationSet"),
        ("addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSet"),
        ("external-secrets.io/v1", "ExternalSecret"),
        ("external-secrets.io/v1", "SecretStore"),
    ] {
        let input = object(api, kind, "root", json!({}));
        assert_eq!(
            lacks(&none, &input, &[], true),
            [format!("emit:object:{kind}/root")],
            "{kind}"
        );
        let kind_grant = EmitScope::new([format!("emit:kind:{kind}").as_str()]);
        assert!(!lacks(&kind_grant, &input, &[], true).is_empty(), "{kind}");
    }
}

#[test]
fn aggregated_and_system_roles_need_a_grant_naming_them() {
    let scope = EmitScope::new(["emit:cluster:ClusterRole"]);
    let plain = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "reader",
        json!({"rules": []}),
    );
    assert!(lacks(&scope, &plain, &[], false).is_empty());
    for role in [
        object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "r",
            json!({"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}}),
        ),
        object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "r",
            json!({"metadata": {"labels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}),
        ),
        object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "r",
            json!({"aggregationRule": {"clusterRoleSelectors": [{}]}}),
        ),
    ] {
        assert_eq!(
            lacks(&scope, &role, &[], false),
            ["emit:object:ClusterRole/r"],
            "{role}"
        );
    }
    let system = object(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "system:public-info-viewer",
        json!({}),
    );
    assert_eq!(
        lacks(&scope, &system, &[], false),
        ["emit:object:ClusterRole/system:public-info-viewer"]
    );
    let named = EmitScope::new(["emit:cluster:ClusterRole", "emit:object:ClusterRole/r"]);
    assert!(
        lacks(
            &named,
            &object(
                "rbac.authorization.k8s.io/v1",
                "ClusterRole",
                "r",
                json!({"aggregationRule": {}})
            ),
            &[],
            false
        )
        .is_empty()
    );
}

#[test]
fn every_entry_of_the_lists_says_why() {
    for entry in ALLOWED {
        assert!(!entry.reason.is_empty(), "{}", entry.kind);
        assert!(
            !NAMED
                .iter()
                .any(|n| n.kind == entry.kind && n.group == entry.group)
        );
    }
    for entry in NAMED {
        assert!(!entry.reason.is_empty(), "{}", entry.kind);
    }
}

#[test]
fn a_wildcard_covers_only_the_api_servers_own_kinds() {
    let wide = EmitScope::new(["emit:kind:*", "emit:cluster:*", "emit:namespace:*"]);
    let quota = object("v1", "ResourceQuota", "q", json!({}));
    assert!(lacks(&wide, &quota, &[], true).is_empty());
    let certificate = object("cert-manager.io/v1", "Certificate", "c", json!({}));
    assert_eq!(
        lacks(&wide, &certificate, &[], true),
        ["emit:kind:Certificate"]
    );
    let issuer = object("cert-manager.io/v1", "ClusterIssuer", "i", json!({}));
    assert_eq!(
        lacks(&wide, &issuer, &[], false),
        ["emit:cluster:ClusterIssuer"]
    );
    // A group that only looks like the API server's is a custom one.
    let lookalike = object("apps.example.com/v1", "Deployment", "d", json!({}));
    assert_eq!(
        lacks(&wide, &lookalike, &[], true),
        ["emit:kind:Deployment"]
    );
    let named = EmitScope::new(["emit:kind:Certificate", "emit:cluster:ClusterIssuer"]);
    assert!(lacks(&named, &certificate, &[], true).is_empty());
    assert!(lacks(&named, &issuer, &[], false).is_empty());
}

#[test]
fn a_cluster_role_carries_only_labels_no_aggregation_selects() {
    let scope = EmitScope::new(["emit:cluster:*"]);
    let role = |labels: Value| {
        object(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            "r",
            json!({"metadata": {"labels": labels}}),
        )
    };
    for fine in [
        json!({"app.kubernetes.io/name": "x", "app.kubernetes.io/part-of": "y"}),
        json!({"helm.sh/chart": "x-1.0.0"}),
    ] {
        assert!(
            lacks(&scope, &role(fine.clone()), &[], false).is_empty(),
            "{fine}"
        );
    }
    for selected in [
        json!({"example.com/aggregate-to-monitoring": "true"}),
        json!({"app": "x"}),
        json!({"helm.sh/chart-evil": "x"}),
        json!({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
    ] {
        assert_eq!(
            lacks(&scope, &role(selected.clone()), &[], false),
            ["emit:object:ClusterRole/r"],
            "{selected}"
        );
    }
}

#[test]
fn cluster_objects_that_reach_other_namespaces_need_a_grant_naming_them() {
    let scope = EmitScope::new(["emit:cluster:*"]);
    // A PersistentVolume names existing storage: always by name, however
    // it is bound or sourced, and no wildcard (not `emit:object:*`) names it.
    let volume = |claim: Value, source: &str| {
        object(
            "v1",
            "PersistentVolume",
            "pv",
            json!({"spec": {"claimRef": claim, source: {"path": "/"}}}),
        )
    };
    let wildcards = EmitScope::new(["emit:cluster:*", "emit:kind:*", "emit:object:*"]);
    for claim in [
        Value::Null,
        json!({"namespace": "apps", "name": "data"}),
        json!({"namespace": "team-b", "name": "data"}),
    ] {
        for source in ["hostPath", "local", "nfs", "csi", "somethingNew"] {
            for scope in [&scope, &wildcards] {
                assert_eq!(
                    lacks(scope, &volume(claim.clone(), source), &[], false),
                    ["emit:object:PersistentVolume/pv"],
                    "{claim} {source}"
                );
            }
        }
    }
    // A storage class hands its driver Secrets of the manifest's namespace
    // or the claimant's, no other; a CSIDriver is named.
    for (kind, key, value, refused) in [
        (
            "StorageClass",
            "csi.storage.k8s.io/node-publish-secret-namespace",
            "victims",
            true,
        ),
        (
            "StorageClass",
            "csi.storage.k8s.io/provisioner-secret-namespace",
            "apps",
            false,
        ),
        (
            "StorageClass",
            "csi.storage.k8s.io/provisioner-secret-namespace",
            "${pvc.namespace}",
            false,
        ),
        ("StorageClass", "secretNamespace", "kube-system", true),
        (
            "VolumeAttributesClass",
            "Secret-Namespace",
            "kube-system",
            true,
        ),
        ("StorageClass", "server", "10.0.0.5", false),
    ] {
        let class = object(
            "storage.k8s.io/v1",
            kind,
            "c",
            json!({"parameters": {key: value}}),
        );
        let lacks = lacks(&scope, &class, &[], false);
        assert_eq!(!lacks.is_empty(), refused, "{kind} {key}: {value}");
    }
    let driver = object("storage.k8s.io/v1", "CSIDriver", "d", json!({}));
    assert_eq!(
        lacks(&wildcards, &driver, &[], false),
        ["emit:object:CSIDriver/d"]
    );
    let named = EmitScope::new(["emit:cluster:*", "emit:object:PersistentVolume/pv"]);
    assert!(lacks(&named, &volume(Value::Null, "hostPath"), &[], false).is_empty());
    let default = |api: &str, kind: &str, key: &str| {
        object(
            api,
            kind,
            "d",
            json!({"metadata": {"annotations": {key: "true"}}}),
        )
    };
    for (api, kind, key) in [
        (
            "networking.k8s.io/v1",
            "IngressClass",
            "ingressclass.kubernetes.io/is-default-class",
        ),
        (
            "storage.k8s.io/v1",
            "StorageClass",
            "storageclass.kubernetes.io/is-default-class",
        ),
        (
            "storage.k8s.io/v1",
            "StorageClass",
            "storageclass.beta.kubernetes.io/is-default-class",
        ),
    ] {
        assert_eq!(
            lacks(&scope, &default(api, kind, key), &[], false),
            [format!("emit:object:{kind}/d")],
            "{key}"
        );
        let plain = object(api, kind, "d", json!({}));
        assert!(lacks(&scope, &plain, &[], false).is_empty(), "{kind}");
    }
    for (api, kind) in [
        ("v1", "Node"),
        ("certificates.k8s.io/v1beta1", "ClusterTrustBundle"),
    ] {
        let made = object(api, kind, "n", json!({}));
        for scope in [&scope, &wildcards] {
            assert_eq!(
                lacks(scope, &made, &[], false),
                [format!("emit:object:{kind}/n")],
                "{kind}"
            );
        }
    }
}

#[test]
fn the_control_planes_ca_bundle_needs_a_grant_naming_it() {
    let none = EmitScope::default();
    let forged = object(
        "v1",
        "ConfigMap",
        "kube-root-ca.crt",
        json!({"data": {"ca.crt": "x"}}),
    );
    assert_eq!(
        lacks(&none, &forged, &[], true),
        ["emit:object:ConfigMap/kube-root-ca.crt"]
    );
}
