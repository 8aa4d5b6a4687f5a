#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make bench-model-volume`: how fast a pod reads a model from a PfsBlob
# mounted as files (issue 29), beside the ways a cluster reads one today.
# On the throwaway kind cluster (brought up or reused, as `make demo` does),
# a real 418 MiB safetensors file (all-mpnet-base-v2's model.safetensors,
# hack/testdata.sh mpnet) is loaded into a PfsBlob from a PVC and verified
# on every node; then, on one node that is not the origin, reader pods of
# packetfs.io/python-consumer run hack/images/model-check.py through:
#   mounted     the blob's csi.packetfs.io volume of files (read-only
#               bind of the holder's tmpfs: its pages are the node's copy)
#   local-disk  the same file on a local-disk volume (hostPath of the node's
#               /pfs-data), its page cache dropped before every run
#               (posix_fadvise DONTNEED on the host, where kind's nodes keep
#               their page cache; fincore's resident bytes are recorded)
#   socket      the holder's socket with the packetfs client (token, group
#               65532, the mapping it returns)
# and two ways of reading every tensor:
#   library     safetensors.safe_open(path, "numpy") and get_tensor for each
#               (the real library: each tensor copied into a numpy array)
#   mapped      mmap of the file (or the socket's mapping) and each tensor's
#               bytes hashed in place (what a server that maps weights does)
# Both hash every tensor's bytes (sha256), so each reader proves it read the
# same bytes; hashing is in every reader's time alike. Per reader: pod
# created -> first tensor, -> every tensor; process start -> every tensor;
# page faults and RSS (VmRSS, anonymous, file) after the read; what its
# cgroup grew by. Repetitions alternate the readers (mounted, local-disk,
# socket, for each way of reading) REPS times (default 3; BENCH_QUICK=1: 1).
#
# The rows go to a .rows.jsonl beside docs/bench/bench-model-volume.md, and
# hack/bench/model_volume_report.py writes that page from them. Needs root. The cluster stays up (`make cluster-down`).
set -euo pipefail
source "$(dirname "$0")/../kind/lib.sh"

need_root
REPS=${REPS:-3}
[ "${BENCH_QUICK:-0}" = 1 ] && REPS=1
HELM=${HELM:-$REPO_ROOT/bin/helm-v3.19.0}
IMAGE_ARCHIVES=${IMAGE_ARCHIVES:-$REPO_ROOT/bin/images}
NS=pfs-bench-mv
BLOB=mpnet
FILE=model.safetensors
OUT=$REPO_ROOT/docs/bench/bench-model-volume.md
DEMO=$REPO_ROOT/hack/demo
[ -x "$HELM" ] || die "no helm at $HELM: run make helm (or make bench-model-volume)"
for a in operator dataplane python-consumer; do
  [ -f "$IMAGE_ARCHIVES/$a.tar" ] || die "no $IMAGE_ARCHIVES/$a.tar: run make images (or make bench-model-volume)"
done
ensure_pkgs jq util-linux

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

# ---- the cluster, as make demo brings it up ----
kubeconfig=$("$REPO_ROOT/hack/cluster-up.sh")
export KUBECONFIG=$kubeconfig
kubectl="$("$REPO_ROOT/hack/k8s-binaries.sh" kubectl)/kubectl"
k() { "$kubectl" "$@"; }
"$HACK_KIND/load-images.sh" "$IMAGE_ARCHIVES/operator.tar" "$IMAGE_ARCHIVES/dataplane.tar" "$IMAGE_ARCHIVES/python-consumer.tar"
data=$("$REPO_ROOT/hack/testdata.sh" stage)
source_file="$data/mpnet/$FILE"
"$HELM" upgrade --install pfs "$REPO_ROOT/charts/packetfs-operator" -n pfs-system --create-namespace \
  -f "$DEMO/values.yaml" --wait --timeout 5m >/dev/null
k -n pfs-system rollout restart deployment,daemonset -l app.kubernetes.io/instance=pfs >/dev/null
k -n pfs-system rollout status deployment -l app.kubernetes.io/instance=pfs --timeout=180s >/dev/null
k delete namespace "$NS" --ignore-not-found --wait=true --timeout=180s >/dev/null
k create namespace "$NS" >/dev/null
# The local-disk reader mounts a hostPath.
k label namespace "$NS" pod-security.kubernetes.io/enforce=privileged >/dev/null

mapfile -t nodes < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
origin=${nodes[-1]} reader=${nodes[0]}
log "model-volume bench: blob $BLOB ($(du -h "$source_file" | cut -f1) $FILE) from a PVC on $origin; readers on $reader"
k delete pv pfs-bench-mv-models --ignore-not-found --wait=true >/dev/null
sed -e "s/@NAMESPACE@/$NS/g" -e "s/@ORIGIN_NODE@/$origin/g" -e "s/pfs-demo-models/pfs-bench-mv-models/g" \
  "$DEMO/models-volume.yaml" | k -n "$NS" apply -f - >/dev/null
k -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: pfs.packetfs.io/v1alpha1
kind: PfsBlob
metadata: {name: $BLOB}
spec:
  pageSize: 2Mi
  source:
    persistentVolumeClaim: {claimName: models, path: mpnet}
  replication: {transport: TCP, topology: Chain}
EOF
k -n "$NS" wait --for=condition=Ready "pfsblob/$BLOB" --timeout=600s >/dev/null ||
  die "pfsblob/$BLOB is not Ready after 10 minutes (KUBECONFIG=$kubeconfig)"
log "pfsblob/$BLOB Ready: $(k -n "$NS" get pfsblob "$BLOB" -o jsonpath='{.status.ready} nodes, sha256 {.status.sha256}')"

# reader_pod NAME PATH METHOD: the pod's manifest. Every reader runs as
# 65532 with group 65532 (the socket reader needs it; the others get the
# same so nothing else differs), 1 CPU, 1 GiB.
reader_pod() {
  local name=$1 path=$2 method=$3 args volumes mounts env=''
  case $method in
    library) args="--safetensors /models/$FILE" ;;
    mapped) args="--mmap /models/$FILE" ;;
  esac
  case $path in
    mounted)
      volumes="- {name: models, csi: {driver: csi.packetfs.io, readOnly: true, volumeAttributes: {blob: $BLOB}}}"
      mounts="- {name: models, mountPath: /models, readOnly: true}" ;;
    local-disk)
      volumes="- {name: models, hostPath: {path: /pfs-data/mpnet, type: Directory}}"
      mounts="- {name: models, mountPath: /models, readOnly: true}" ;;
    socket)
      args="--socket-file $FILE"
      volumes="- {name: sockets, csi: {driver: csi.packetfs.io, readOnly: true}}
  - {name: token, secret: {secretName: $BLOB-blob-token, defaultMode: 0440}}"
      mounts="- {name: sockets, mountPath: /run/packetfs/$NS, readOnly: true}
    - {name: token, mountPath: /etc/packetfs/token, readOnly: true}"
      env="env:
    - {name: PFS_BLOB_SOCKET, value: /run/packetfs/$NS/$BLOB.sock}
    - {name: PFS_BLOB_TOKEN_FILE, value: /etc/packetfs/token/token}" ;;
  esac
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $name, namespace: $NS}
spec:
  restartPolicy: Never
  nodeName: $reader
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true, fsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: reader
    image: packetfs.io/python-consumer:v0.1.0
    imagePullPolicy: Never
    command: [/usr/local/bin/model-check]
    args: [$(sed 's/ /, /' <<<"$args")]
    $env
    resources: {limits: {memory: 1Gi}, requests: {cpu: 500m}}
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts:
    $mounts
  volumes:
  $volumes
EOF
}

# cold: drop the source file's page cache on the host (kind's nodes share
# the host kernel and its page cache) and print the bytes still resident.
cold() {
  python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$source_file"
  fincore --bytes --noheadings --output RES "$source_file" | tr -d ' '
}

# measure REP PATH METHOD: one reader, one row on stdout.
measure() {
  local rep=$1 path=$2 method=$3 name resident=null created phase logs result startedat
  name="mv-$path-$method-$rep"
  k -n "$NS" delete pod "$name" --ignore-not-found --wait=true >/dev/null
  reader_pod "$name" "$path" "$method" > "$work/$name.yaml"
  [ "$path" != local-disk ] || resident=$(cold)
  created=$(date +%s.%N)
  k apply -f "$work/$name.yaml" >/dev/null
  phase=
  for _ in $(seq 300); do
    phase=$(k -n "$NS" get pod "$name" -o jsonpath='{.status.phase}')
    case $phase in Succeeded | Failed) break ;; esac
    sleep 1
  done
  logs=$(k -n "$NS" logs "$name" 2>&1 || true)
  [ "$phase" = Succeeded ] || die "reader $name: phase ${phase:-none}: $logs"
  startedat=$(k -n "$NS" get pod "$name" -o jsonpath='{.status.containerStatuses[0].state.terminated.startedAt}')
  result=$(grep '"begin"' <<<"$logs" | tail -1)
  k -n "$NS" delete pod "$name" --wait=false >/dev/null
  # The row keeps what the report needs: times, faults, RSS, and one digest
  # of all tensor digests (every reader must agree on it).
  jq -c --argjson rep "$rep" --arg path "$path" --arg method "$method" --arg node "$reader" \
    --argjson created "$created" --argjson resident "$resident" --arg startedAt "$startedat" '
    (.safetensors + .mmap + .socket)[0] as $r |
    {rep: $rep, path: $path, method: $method, node: $node, created: $created, startedAt: $startedAt,
     residentBefore: $resident, start, imported, first: $r.first, done: $r.done, tensors: $r.count,
     digests: ($r.tensors | to_entries | sort_by(.key) | map(.key + ":" + .value.sha256) | join(",")),
     begin: .begin, "end": .["end"]}' <<<"$result" |
    python3 -c 'import hashlib, json, sys
row = json.loads(sys.stdin.read())
row["digests"] = hashlib.sha256(row["digests"].encode()).hexdigest()
print(json.dumps(row, sort_keys=True))'
}

rows="$work/rows.jsonl"
: > "$rows"
for rep in $(seq "$REPS"); do
  for method in library mapped; do
    for path in mounted local-disk socket; do
      [ "$path:$method" != socket:library ] || continue # the socket gives a mapping, not a path
      log "rep $rep/$REPS: $path, $method"
      measure "$rep" "$path" "$method" >> "$rows"
    done
  done
done

cp "$rows" "${OUT%.md}.rows.jsonl"
python3 "$REPO_ROOT/hack/bench/model_volume_report.py" --rows "${OUT%.md}.rows.jsonl" --out "$OUT" \
  --meta "$(jq -cn --arg date "$started" --arg git "$(git -C "$REPO_ROOT" rev-parse --short HEAD)" \
    --arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)" --arg cpus "$(nproc)" \
    --arg mem "$(free -g | awk '/^Mem:/ {print $2}') GiB" --arg kernel "$(uname -r)" \
    --arg load "before $load_before; after $(cut -d' ' -f1-3 /proc/loadavg)" --arg reps "$REPS" \
    --arg size "$(stat -c %s "$source_file")" --arg sha "$(sha256sum "$source_file" | cut -d' ' -f1)" \
    --arg reader "$reader" --arg origin "$origin" '$ARGS.named')"
log "wrote $OUT and ${OUT%.md}.rows.jsonl"
