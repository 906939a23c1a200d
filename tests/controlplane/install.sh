#!/usr/bin/env bash
# Installs everything the end-to-end tests need on a fresh machine, and nothing twice:
#   - Debian packages: docker-registry (the OCI registry under test), skopeo (an
#     independent OCI client), apache2-utils (htpasswd), time (peak RSS in the
#     benchmarks), valgrind (the benchmark's instruction-count profile),
#     gcc-mingw-w64-x86-64 (the C compiler the Windows `cargo check` needs for
#     ring and aws-lc), and python3 (a chart repository server, and
#     /usr/bin/python3 for the jail's hostile-tool probe), only when missing;
#   - moto (PyPI, MOTO_VERSION), the AWS API of the secret-store tests, in a venv;
#     and from the Go module proxy, Vault (`vault server -dev`, about 15 minutes to build
#     on 2 cores), sops and age, the other stores of those tests;
#   - the pinned Go binaries of versions.env, each built once from its module in this
#     folder into ~/.cache/tazuna-dev/bin/<name>-<version>/ (GOMODCACHE and GOCACHE
#     live under ~/.cache/tazuna-dev/go/ and are removed after a build, to leave the
#     disk to the Rust build; TAZUNA_DEV_KEEP_GO_CACHE=1 keeps them).
#
# Usage:
#   tests/controlplane/install.sh           install what is missing, print where it is
#   tests/controlplane/install.sh --no-apt  skip the Debian packages
#   tests/controlplane/install.sh --control-plane-only
#                                            only etcd, Kubernetes and kwok (what
#                                            `cargo xtask quickstart` runs on); no
#                                            Debian packages, tools or stores
#   tests/controlplane/install.sh --pin     regenerate every go.mod/go.sum from
#                                            versions.env (after a version bump)
#   tests/controlplane/install.sh --pin-flux  the same for the two Flux modules only
#
# Environment: TAZUNA_DEV_CACHE (default ~/.cache/tazuna-dev), GO (default go).
# A tool that fails to build is reported and skipped; the script then exits 1 after
# building the others.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$HERE/versions.env"

CACHE="${TAZUNA_DEV_CACHE:-$HOME/.cache/tazuna-dev}"
BIN="$CACHE/bin"
GO="${GO:-go}"
REPO_MODULE=github.com/tazuna-dev/tazuna/tests/controlplane

export GOMODCACHE="$CACHE/go/mod"
export GOCACHE="$CACHE/go/build"
# The local Go is new enough (checked below); never download a toolchain.
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-buildvcs=false"

log() { printf '%s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

do_apt=1
do_pin=0
control_plane_only=0
for arg in "$@"; do
  case "$arg" in
    --no-apt) do_apt=0 ;;
    --control-plane-only) control_plane_only=1; do_apt=0 ;;
    --pin) do_pin=1 ;;
    --pin-flux) do_pin=flux ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) die "unknown argument \`$arg\`" ;;
  esac
done

# --- Go --------------------------------------------------------------------------
command -v "$GO" >/dev/null || die "\`$GO\` not found; install Go $GO_MIN or newer"
go_version="$("$GO" env GOVERSION)"   # e.g. go1.26.8
go_version="${go_version#go}"
if [ "$(printf '%s\n%s\n' "$GO_MIN" "$go_version" | sort -V | head -n1)" != "$GO_MIN" ]; then
  die "Go $go_version is older than $GO_MIN, which the pinned modules need
hint: install Go $GO_MIN or newer (GOTOOLCHAIN is pinned to local)"
fi

# --- Debian packages ---------------------------------------------------------------
if [ "$do_apt" = 1 ]; then
  missing=()
  for pkg in docker-registry skopeo apache2-utils time gcc-mingw-w64-x86-64 valgrind; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' \
      || missing+=("$pkg")
  done
  # python3 serves the chart repository of the repository-login test (any
  # python3 on PATH will do), and Debian's /usr/bin/python3 is the hostile
  # tool of the jail's probes (tests/data/probes/hostile-tool.py), whose
  # libraries the jail's view holds (a pyenv Python under a home does not).
  { command -v python3 >/dev/null && [ -x /usr/bin/python3 ]; } || missing+=(python3)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    sudo_cmd=()
    [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # The package starts a registry on :5000 as a service; the tests start their own.
    if command -v systemctl >/dev/null && systemctl is-active -q docker-registry 2>/dev/null; then
      "${sudo_cmd[@]}" systemctl disable --now docker-registry >/dev/null 2>&1 || true
    fi
  fi
fi

# --- Module pinning (--pin) -------------------------------------------------------------
# Prints the path of the .mod file of module@version, downloading it if needed.
modfile() {
  "$GO" mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p'
}

# Starts a fresh go.mod in module dir $1 that requires $2@$3 and lists tools $4...
init_module() {
  local dir="$HERE/$1" mod="$2" ver="$3"
  shift 3
  mkdir -p "$dir"
  rm -f "$dir/go.mod" "$dir/go.sum"
  (cd "$dir" && "$GO" mod init "$REPO_MODULE/$(basename "$dir")" 2>/dev/null)
  (cd "$dir" && "$GO" mod edit -go=1.26.0 -require="$mod@$ver")
  for tool in "$@"; do
    (cd "$dir" && "$GO" mod edit -tool="$tool")
  done
}

# Copies the replace directives of module@version's own go.mod that point at other
# module versions (not at local directories), which `go build` would otherwise ignore.
copy_version_replaces() {
  local dir="$HERE/$1" mf
  mf="$(modfile "$2@$3")"
  awk '/^replace \(/{inblock=1; next} inblock && /^\)/{inblock=0; next}
       inblock || /^replace /{sub(/^replace /,""); print}' "$mf" \
    | while read -r from arrow to tover; do
        [ "$arrow" = "=>" ] || continue
        case "$to" in ./*|../*) continue ;; esac
        (cd "$dir" && "$GO" mod edit -replace="$from=$to@$tover")
      done
}

# Flux's two controllers, the GitOps peer of the benchmarks. Each gets its own module:
# their ./api replaces point inside their repositories, so the published api modules
# of the same release stand in for them.
# pin_flux_controller DIR MODULE VERSION: the controller and its api module at VERSION.
pin_flux_controller() {
  local dir=$1 module=$2 version=$3
  log "pinning $dir ($module $version)"
  init_module "$dir" "$module" "$version" "$module"
  (cd "$HERE/$dir" && "$GO" mod edit -require="$module/api@$version")
  copy_version_replaces "$dir" "$module" "$version"
}

pin_flux() {
  pin_flux_controller flux-source github.com/fluxcd/source-controller "$FLUX_SOURCE_CONTROLLER_VERSION"
  # v1.9.6 requires github.com/fluxcd/pkg/artifact v0.18.3, which the proxy does not
  # serve; v0.18.1 is the newest patch of that minor it serves.
  (cd "$HERE/flux-source" && "$GO" mod edit \
    -replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@v0.18.1)
  pin_flux_controller flux-kustomize github.com/fluxcd/kustomize-controller "$FLUX_KUSTOMIZE_CONTROLLER_VERSION"
  pin_flux_controller flux-helm github.com/fluxcd/helm-controller "$FLUX_HELM_CONTROLLER_VERSION"
}

# The controllers' tests import test servers the proxy does not serve
# (github.com/fluxcd/pkg/helmtestserver); -e keeps what the build needs.
tidy_flux() {
  for dir in flux-source flux-kustomize flux-helm; do
    log "go mod tidy -e in $dir"
    (cd "$HERE/$dir" && nice -n 15 "$GO" mod tidy -e)
  done
}

pin_all() {
  log "pinning k8s (k8s.io/kubernetes $KUBERNETES_VERSION)"
  init_module k8s k8s.io/kubernetes "$KUBERNETES_VERSION" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  # k8s.io/kubernetes requires each staging module at v0.0.0 and maps it onto
  # ./staging/src/k8s.io/<name>; map each onto its published v0.<minor>.<patch>.
  local staging_version="v0.${KUBERNETES_VERSION#v1.}" mf
  mf="$(modfile "k8s.io/kubernetes@$KUBERNETES_VERSION")"
  for m in $(sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/src/.*|\1|p' "$mf" | sort -u); do
    (cd "$HERE/k8s" && "$GO" mod edit -replace="$m=$m@$staging_version")
  done

  log "pinning etcd (go.etcd.io/etcd/server/v3 $ETCD_VERSION)"
  init_module etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"

  log "pinning kwok ($KWOK_VERSION)"
  init_module kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok

  log "pinning helm ($HELM_VERSION)"
  init_module helm helm.sh/helm/v4 "$HELM_VERSION" helm.sh/helm/v4/cmd/helm

  log "pinning kustomize ($KUSTOMIZE_VERSION)"
  init_module kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION" \
    sigs.k8s.io/kustomize/kustomize/v5

  log "pinning helmfile ($HELMFILE_VERSION)"
  init_module helmfile github.com/helmfile/helmfile "$HELMFILE_VERSION" github.com/helmfile/helmfile
  copy_version_replaces helmfile github.com/helmfile/helmfile "$HELMFILE_VERSION"

  log "pinning oras ($ORAS_VERSION)"
  init_module oras oras.land/oras "$ORAS_VERSION" oras.land/oras/cmd/oras

  log "pinning otelcol (go.opentelemetry.io/collector $OTELCOL_VERSION)"
  init_module otelcol go.opentelemetry.io/collector/otelcol "$OTELCOL_VERSION"
  for component in receiver/otlpreceiver exporter/otlphttpexporter exporter/debugexporter; do
    (cd "$HERE/otelcol" && "$GO" mod edit -require="go.opentelemetry.io/collector/$component@$OTELCOL_VERSION")
  done

  log "pinning opentofu (github.com/opentofu/opentofu $OPENTOFU_VERSION)"
  init_module opentofu github.com/opentofu/opentofu "$OPENTOFU_VERSION" \
    github.com/opentofu/opentofu/cmd/tofu
  copy_version_replaces opentofu github.com/opentofu/opentofu "$OPENTOFU_VERSION"

  log "pinning age (filippo.io/age $AGE_VERSION)"
  init_module age filippo.io/age "$AGE_VERSION" filippo.io/age/cmd/age filippo.io/age/cmd/age-keygen

  log "pinning sops (github.com/getsops/sops/v3 $SOPS_VERSION)"
  init_module sops github.com/getsops/sops/v3 "$SOPS_VERSION" github.com/getsops/sops/v3/cmd/sops

  log "pinning vault (github.com/hashicorp/vault $VAULT_VERSION)"
  init_module vault github.com/hashicorp/vault "$VAULT_VERSION" github.com/hashicorp/vault
  copy_version_replaces vault github.com/hashicorp/vault "$VAULT_VERSION"

  log "pinning external-secrets (github.com/external-secrets/external-secrets $EXTERNAL_SECRETS_VERSION)"
  init_module external-secrets github.com/external-secrets/external-secrets "$EXTERNAL_SECRETS_VERSION" \
    github.com/external-secrets/external-secrets
  copy_version_replaces external-secrets github.com/external-secrets/external-secrets "$EXTERNAL_SECRETS_VERSION"

  pin_flux

  for dir in k8s etcd kwok helm kustomize helmfile oras otelcol opentofu age sops; do
    log "go mod tidy in $dir"
    (cd "$HERE/$dir" && nice -n 15 "$GO" mod tidy)
  done
  # Vault's tests import helpers its published sdk does not hold; -e keeps what the build needs.
  for dir in vault external-secrets; do
    log "go mod tidy -e in $dir"
    (cd "$HERE/$dir" && nice -n 15 "$GO" mod tidy -e)
  done
  tidy_flux
}

if [ "$do_pin" = 1 ]; then
  pin_all
elif [ "$do_pin" = flux ]; then
  pin_flux
  tidy_flux
fi

# --- Builds ------------------------------------------------------------------------
mkdir -p "$BIN"
failed=()
built_any=0
# Builds run one after another, each cleaning Go's build cache behind it, except in
# --control-plane-only mode (below), where they run at once and the cache is cleaned
# once at the end.
clean_each=1

# build NAME VERSION MODULE_DIR LDFLAGS PACKAGE...: builds into $BIN/NAME-VERSION/ unless
# that directory exists. Builds go to a temporary directory renamed at the end, so an
# interrupted build never looks finished.
build() {
  local name="$1" version="$2" dir="$HERE/$3" ldflags="$4"
  shift 4
  local dest="$BIN/$name-$version"
  if [ -d "$dest" ]; then
    return 0
  fi
  local tmp="$BIN/.$name-$version.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  log "building $name $version ($*)"
  built_any=1
  local start=$SECONDS
  # The binaries carry no DWARF (-ldflags=-w), so the compiler makes none either
  # (-dwarf=false): the same code, compiled and linked in less time.
  if (cd "$dir" && nice -n 15 "$GO" build -mod=readonly -p 2 -trimpath \
        -gcflags=all=-dwarf=false -ldflags="-s -w $ldflags" -o "$tmp/" "$@") >"$tmp.log" 2>&1; then
    if [ "$name" = kwok ]; then copy_kwok_stages "$tmp"; fi
    mv "$tmp" "$dest"
    rm -f "$tmp.log"
    log "built $name $version in $((SECONDS - start))s"
    # Each build's objects are several GB and never reused (see below).
    if [ "$clean_each" = 1 ] && [ "${TAZUNA_DEV_KEEP_GO_CACHE:-0}" != 1 ]; then
      "$GO" clean -cache >/dev/null 2>&1 || true
    fi
  else
    log "FAILED to build $name $version; the last lines of the log:"
    tail -n 20 "$tmp.log" >&2
    rm -rf "$tmp"
    failed+=("$name")
  fi
}

# kwok v0.8.0 ships no built-in stages; the harness loads the upstream "fast" stages
# that come inside the module zip.
copy_kwok_stages() {
  local src="$GOMODCACHE/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage"
  mkdir -p "$1/stages"
  cp "$src/node/fast/node-initialize.yaml" \
     "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
     "$src/pod/fast/pod-ready.yaml" "$src/pod/fast/pod-complete.yaml" \
     "$src/pod/fast/pod-delete.yaml" "$1/stages/"
  chmod -R u+w "$1/stages"
}

k8s_minor="${KUBERNETES_VERSION#v1.}"
k8s_minor="${k8s_minor%%.*}"
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1"
  k8s_ldflags+=" -X $pkg.gitMinor=$k8s_minor -X $pkg.gitTreeState=clean"
done

# kubectl has a pin directory of its own, and only the tests need it: they check
# the cluster with kubectl as an independent client, in many commands, so they get
# the pinned one. The quickstart runs kubectl once, to list Deployments and StatefulSets (apps/v1, which
# every kubectl since v1.9 reads), so there any kubectl on PATH does and none is built.
need_kubectl=1
if [ "$control_plane_only" = 1 ] && [ ! -d "$BIN/kubectl-$KUBERNETES_VERSION" ] \
    && command -v kubectl >/dev/null; then
  need_kubectl=0
  log "reusing $(command -v kubectl) for the quickstart's one read; \`cargo xtask test\` builds kubectl $KUBERNETES_VERSION"
fi
k8s_packages=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kube-scheduler)
# Built with the server binaries, kubectl shares their compiled packages.
if [ "$need_kubectl" = 1 ] && [ ! -d "$BIN/kubectl-$KUBERNETES_VERSION" ]; then
  k8s_packages+=(k8s.io/kubernetes/cmd/kubectl)
fi
# --control-plane-only (the quickstart, while the CLI compiles beside it): the three
# control-plane builds run at once, so one build's serial stretches (its downloads,
# its final links) leave no core idle. Each runs in a subshell; a failure comes back
# as a marker file.
if [ "$control_plane_only" = 1 ]; then
  clean_each=0
  build_marks="$BIN/.failed.$$"
  rm -rf "$build_marks" && mkdir -p "$build_marks"
  build_async() {
    ( build "$@"; [ "${#failed[@]}" -eq 0 ] || touch "$build_marks/$1" ) &
  }
  for dir in kubernetes-"$KUBERNETES_VERSION" etcd-"$ETCD_VERSION" kwok-"$KWOK_VERSION"; do
    [ -d "$BIN/$dir" ] || built_any=1
  done
  build_async kubernetes "$KUBERNETES_VERSION" k8s "$k8s_ldflags" "${k8s_packages[@]}"
  # The wrapper main in etcd/ builds a binary named after its module: etcd.
  build_async etcd "$ETCD_VERSION" etcd "" .
  build_async kwok "$KWOK_VERSION" kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
    sigs.k8s.io/kwok/cmd/kwok
  wait
  for mark in "$build_marks"/*; do
    [ -e "$mark" ] && failed+=("$(basename "$mark")")
  done
  rm -rf "$build_marks"
else
  build kubernetes "$KUBERNETES_VERSION" k8s "$k8s_ldflags" "${k8s_packages[@]}"
fi
# A kubectl built beside them (here, or by an older install.sh) moves to its own directory.
if [ -f "$BIN/kubernetes-$KUBERNETES_VERSION/kubectl" ] && [ ! -d "$BIN/kubectl-$KUBERNETES_VERSION" ]; then
  kubectl_tmp="$BIN/.kubectl-$KUBERNETES_VERSION.tmp.$$"
  mkdir -p "$kubectl_tmp"
  mv "$BIN/kubernetes-$KUBERNETES_VERSION/kubectl" "$kubectl_tmp/"
  mv "$kubectl_tmp" "$BIN/kubectl-$KUBERNETES_VERSION"
fi
if [ "$need_kubectl" = 1 ]; then
  build kubectl "$KUBERNETES_VERSION" k8s "$k8s_ldflags" k8s.io/kubernetes/cmd/kubectl
fi
if [ "$control_plane_only" = 0 ]; then
  build etcd "$ETCD_VERSION" etcd "" .
  build kwok "$KWOK_VERSION" kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
    sigs.k8s.io/kwok/cmd/kwok
fi
# Everything past the control plane: the tools the plugins call, the peers and the
# stores of the tests. `--control-plane-only` stops before them.
if [ "$control_plane_only" = 0 ]; then
build helm "$HELM_VERSION" helm "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  helm.sh/helm/v4/cmd/helm
build kustomize "$KUSTOMIZE_VERSION" kustomize \
  "-X sigs.k8s.io/kustomize/api/provenance.version=kustomize/$KUSTOMIZE_VERSION" \
  sigs.k8s.io/kustomize/kustomize/v5
build helmfile "$HELMFILE_VERSION" helmfile "-X go.szostok.io/version.version=$HELMFILE_VERSION" \
  github.com/helmfile/helmfile
build oras "$ORAS_VERSION" oras "" oras.land/oras/cmd/oras
# The wrapper main in otelcol/ builds a binary named after its module: otelcol.
build otelcol "$OTELCOL_VERSION" otelcol "" .

build opentofu "$OPENTOFU_VERSION" opentofu "" \
  github.com/opentofu/opentofu/cmd/tofu

build age "$AGE_VERSION" age "" filippo.io/age/cmd/age filippo.io/age/cmd/age-keygen
build sops "$SOPS_VERSION" sops "-X github.com/getsops/sops/v3/version.Version=${SOPS_VERSION#v}" \
  github.com/getsops/sops/v3/cmd/sops
build vault "$VAULT_VERSION" vault "" github.com/hashicorp/vault
build external-secrets "$EXTERNAL_SECRETS_VERSION" external-secrets "" \
  github.com/external-secrets/external-secrets

build flux-source-controller "$FLUX_SOURCE_CONTROLLER_VERSION" flux-source "" \
  github.com/fluxcd/source-controller
build flux-kustomize-controller "$FLUX_KUSTOMIZE_CONTROLLER_VERSION" flux-kustomize "" \
  github.com/fluxcd/kustomize-controller
build flux-helm-controller "$FLUX_HELM_CONTROLLER_VERSION" flux-helm "" \
  github.com/fluxcd/helm-controller

# copy_crds NAME VERSION MODULE [SUBDIR]: the CRDs of MODULE@VERSION (SUBDIR, by default
# config/crd/bases) into the binary's directory, which the tests install before they
# start the controller.
copy_crds() {
  local dest="$BIN/$1-$2/crds" dir sub="${4:-config/crd/bases}"
  [ -d "$BIN/$1-$2" ] || return 0
  [ -d "$dest" ] && return 0
  dir="$(cd "$BIN" && "$GO" mod download -json "$3@$2" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" || true
  if [ -z "$dir" ] || [ ! -d "$dir/$sub" ]; then
    log "FAILED to get the CRDs of $3@$2"
    failed+=("$1 CRDs")
    return 0
  fi
  mkdir -p "$dest.tmp.$$"
  cp "$dir/$sub"/*.yaml "$dest.tmp.$$/"
  # Only the CRDs: a kustomization beside them is no object.
  rm -f "$dest.tmp.$$/kustomization.yaml"
  chmod -R u+w "$dest.tmp.$$"
  mv "$dest.tmp.$$" "$dest"
}
copy_crds flux-source-controller "$FLUX_SOURCE_CONTROLLER_VERSION" github.com/fluxcd/source-controller
copy_crds flux-kustomize-controller "$FLUX_KUSTOMIZE_CONTROLLER_VERSION" github.com/fluxcd/kustomize-controller
copy_crds flux-helm-controller "$FLUX_HELM_CONTROLLER_VERSION" github.com/fluxcd/helm-controller
copy_crds external-secrets "$EXTERNAL_SECRETS_VERSION" github.com/external-secrets/external-secrets config/crds/bases

# Cluster API's Cluster CRD from the module zip, for the Cluster API target tests.
copy_cluster_api_crds() {
  local dest="$BIN/cluster-api-$CLUSTER_API_VERSION"
  [ -d "$dest" ] && return 0
  local dir
  dir="$(cd "$BIN" && "$GO" mod download -json "sigs.k8s.io/cluster-api@$CLUSTER_API_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" || true
  local crd="$dir/core/config/crd/bases/cluster.x-k8s.io_clusters.yaml"
  if [ -z "$dir" ] || [ ! -f "$crd" ]; then
    log "FAILED to get the Cluster API CRDs ($CLUSTER_API_VERSION)"
    failed+=("cluster-api")
    return 0
  fi
  built_any=1
  mkdir -p "$dest.tmp.$$"
  cp "$crd" "$dest.tmp.$$/"
  chmod -R u+w "$dest.tmp.$$"
  mv "$dest.tmp.$$" "$dest"
  log "copied the Cluster API CRDs $CLUSTER_API_VERSION"
}
copy_cluster_api_crds
fi

# The binaries are cached by version and never rebuilt, so Go's build and module
# caches only take disk (several GB for Kubernetes) from the Rust build that comes
# next. TAZUNA_DEV_KEEP_GO_CACHE=1 keeps them (faster pin bumps).
# They are moved aside at once and removed in the background (several GB take
# seconds to delete), so what comes next need not wait; a removal cut short is
# finished by the next run.
if [ "$built_any" = 1 ] && [ "${TAZUNA_DEV_KEEP_GO_CACHE:-0}" != 1 ] && [ -d "$CACHE/go" ]; then
  log "removing Go's build and module caches in the background; the binaries stay in $BIN"
  mv "$CACHE/go" "$CACHE/.go-removed.$$"
fi
for removed in "$CACHE"/.go-removed.*; do
  [ -d "$removed" ] || continue
  # The module cache is read-only, as Go leaves it.
  setsid sh -c 'chmod -R u+w "$1" && rm -rf "$1"' sh "$removed" </dev/null >/dev/null 2>&1 &
done

# --- moto (PyPI): the AWS API for the secret-store tests ----------------------------
moto_dir="$BIN/moto-$MOTO_VERSION"
if [ "$control_plane_only" = 0 ] && [ ! -x "$moto_dir/bin/moto_server" ]; then
  log "installing moto $MOTO_VERSION into $moto_dir"
  # A venv's scripts name its own path, so it is made where it stays.
  if ! { python3 -m venv "$moto_dir" \
         && "$moto_dir/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"; }; then
    rm -rf "$moto_dir"
    failed+=("moto")
  fi
fi

# --- Report ------------------------------------------------------------------------
echo "tazuna test assets (cache $BIN):"
entries=("kubernetes $KUBERNETES_VERSION" "etcd $ETCD_VERSION" "kwok $KWOK_VERSION")
if [ "$need_kubectl" = 1 ]; then entries+=("kubectl $KUBERNETES_VERSION"); fi
if [ "$control_plane_only" = 0 ]; then
  entries+=("helm $HELM_VERSION" "kustomize $KUSTOMIZE_VERSION"
            "helmfile $HELMFILE_VERSION" "oras $ORAS_VERSION" "otelcol $OTELCOL_VERSION"
            "opentofu $OPENTOFU_VERSION" "age $AGE_VERSION" "sops $SOPS_VERSION"
            "vault $VAULT_VERSION" "external-secrets $EXTERNAL_SECRETS_VERSION"
            "flux-source-controller $FLUX_SOURCE_CONTROLLER_VERSION"
            "flux-kustomize-controller $FLUX_KUSTOMIZE_CONTROLLER_VERSION"
            "flux-helm-controller $FLUX_HELM_CONTROLLER_VERSION")
fi
for entry in "${entries[@]}"; do
  set -- $entry
  dir="$BIN/$1-$2"
  if [ -d "$dir" ]; then
    for f in "$dir"/*; do [ -f "$f" ] && [ -x "$f" ] && echo "  $f"; done
  else
    echo "  $1 $2: MISSING"
  fi
done
if [ "$control_plane_only" = 0 ]; then
  if [ -x "$moto_dir/bin/moto_server" ]; then echo "  $moto_dir/bin/moto_server"; else echo "  moto $MOTO_VERSION: MISSING"; fi
  crd="$BIN/cluster-api-$CLUSTER_API_VERSION/cluster.x-k8s.io_clusters.yaml"
  if [ -f "$crd" ]; then echo "  $crd"; else echo "  cluster-api CRDs $CLUSTER_API_VERSION: MISSING"; fi
  for cmd in docker-registry skopeo htpasswd python3; do
    p="$(command -v "$cmd" || true)"
    echo "  ${p:-$cmd: MISSING}"
  done
fi

if [ "${#failed[@]}" -gt 0 ]; then
  log "error: failed to build: ${failed[*]}"
  exit 1
fi
