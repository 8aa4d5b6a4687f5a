#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# A real Prometheus for the e2e tests: Debian's prometheus package
# (hack/install-deps.sh), scraping the kind cluster through `kubectl proxy`
# the way a Prometheus in the cluster would scrape it directly: the
# operator's metrics Service, and every blob holder's /metrics page found
# (the container port named "metrics") with the labels the chart's
# PodMonitor gives (namespace, pod, container, blob, node). Debian builds
# Prometheus without Kubernetes service discovery, so a loop here
# (`discover`) plays it: every second it lists the holder pods and writes
# them as file_sd targets. It loads the chart's alert rules (files/alerts.yaml) and
# evaluates them every second, so an alert whose fault lasts seconds in a
# test is seen.
#
# Usage:
#   hack/prometheus.sh start DIR KUBECTL KUBECONFIG NAMESPACE TOKEN_FILE
#   hack/prometheus.sh stop DIR
#
# start writes DIR/prometheus.yml, runs kubectl proxy, the port-forward and
# prometheus (TSDB in DIR/data, logs in DIR/*.log) on free ports of
# 127.0.0.1, waits until Prometheus is ready and prints its URL (also in
# DIR/url). NAMESPACE is the operator's (its pod is labelled
# app.kubernetes.io/component=manager, its port named metrics); TOKEN_FILE
# holds a bearer token allowed to get /metrics (the chart's metrics-reader).
set -euo pipefail
source "$(dirname "$0")/kind/lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# running DIR NAME: the pid of DIR's NAME process (prometheus, proxy), when
# it runs: its command line names DIR's config or DIR's proxy port, so a
# reused pid does not count.
running() {
  local pid want
  pid=$(cat "$1/$2.pid" 2>/dev/null) || return 1
  case $2 in
    prometheus) want="$1/prometheus.yml" ;;
    discover) want="discover $1 " ;;
    proxy) want="--port $(cat "$1/proxy.port" 2>/dev/null)" ;;
    forward) want="port-forward pod/$(cat "$1/forward.pod" 2>/dev/null) $(cat "$1/forward.port" 2>/dev/null):metrics" ;;
  esac
  [ -n "$pid" ] && [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") == *"$want"* ]] || return 1
  echo "$pid"
}

config() { # PROXY FORWARD TOKEN_FILE (DIR_TARGETS: the file_sd file)
  local proxy=$1 forward=$2 token=$3
  cat <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/charts/packetfs-operator/files/alerts.yaml
scrape_configs:
  # honor_labels: the operator's series name the blob's namespace, which
  # must not become exported_namespace (the ServiceMonitor does the same).
  # The operator's own certificate is self-signed (the chart's default):
  # encrypted, not verified, as the chart's ServiceMonitor does.
  - job_name: packetfs-operator
    honor_labels: true
    scheme: https
    tls_config:
      insecure_skip_verify: true
    authorization:
      credentials_file: $token
    static_configs:
      - targets: ['$forward']
  - job_name: packetfs-holders
    file_sd_configs:
      - files: [$DIR_TARGETS]
        refresh_interval: 1s
EOF
}

# targets PROXY: the holder pods (scheduled, with an IP, not ended) as
# file_sd targets, read from `kubectl get pods -o json` on stdin: each pod's
# container port named metrics, scraped through the apiserver's pod proxy.
# A pod not yet scheduled is left out, as Kubernetes service discovery has
# no address for it: listed, it would be a second target of the same pod
# without the node label once it runs, and a dashboard query that joins on
# the pod would find two series.
targets() {
  jq --arg proxy "$1" '[.items[]
    | select(.status.phase != "Succeeded" and .status.phase != "Failed")
    | select((.spec.nodeName // "") != "" and (.status.podIP // "") != "")
    | . as $p | $p.spec.containers[] | . as $c | ($c.ports // [])[] | select(.name == "metrics")
    | {targets: [$proxy], labels: {
        namespace: $p.metadata.namespace, pod: $p.metadata.name, container: $c.name,
        blob: ($p.metadata.annotations["pfs.packetfs.io/blob"] // ""), node: ($p.spec.nodeName // ""),
        __metrics_path__: "/api/v1/namespaces/\($p.metadata.namespace)/pods/\($p.metadata.name):\(.containerPort)/proxy/metrics"}}]'
}

# forward DIR KUBECTL KUBECONFIG NAMESPACE: keep DIR/forward.port forwarded
# to the running operator pod's metrics port; a new pod (the e2e deletes
# the operator's) gets a new port-forward on the same local port.
forward() {
  local dir=$1 kubectl=$2 kubeconfig=$3 ns=$4 pod pid
  pod=$("$kubectl" --kubeconfig "$kubeconfig" -n "$ns" get pods -l app.kubernetes.io/component=manager \
    --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}' 2>/dev/null) || return 0
  [ -n "$pod" ] || return 0
  [ "$pod" = "$(cat "$dir/forward.pod" 2>/dev/null)" ] && running "$dir" forward >/dev/null && return 0
  if pid=$(running "$dir" forward); then kill "$pid"; fi
  echo "$pod" >"$dir/forward.pod"
  spawn_session "$dir/forward.pid" "$dir/forward.log" "$kubectl" --kubeconfig "$kubeconfig" -n "$ns" \
    port-forward "pod/$pod" "$(cat "$dir/forward.port"):metrics" --address 127.0.0.1
}

# discover DIR KUBECTL KUBECONFIG PROXY NAMESPACE: every second, the holder
# pods into DIR/targets.json (written whole, then renamed: Prometheus never
# reads half), and the operator's port-forward kept on its pod.
discover() {
  local dir=$1 kubectl=$2 kubeconfig=$3 proxy=$4 ns=$5
  while :; do
    forward "$dir" "$kubectl" "$kubeconfig" "$ns"
    if "$kubectl" --kubeconfig "$kubeconfig" get pods -A -l app.kubernetes.io/component=blob-holder -o json 2>/dev/null |
      targets "$proxy" >"$dir/targets.json.tmp"; then
      mv "$dir/targets.json.tmp" "$dir/targets.json"
    fi
    sleep 1
  done
}

start() {
  local dir=${1:?usage: $0 start DIR KUBECTL KUBECONFIG NAMESPACE TOKEN_FILE} kubectl=${2:?} kubeconfig=${3:?} ns=${4:?} token=${5:?}
  local proxy_port prom_port forward_port i
  command -v prometheus >/dev/null || die "prometheus: not installed (hack/install-deps.sh installs Debian's prometheus)"
  mkdir -p "$dir/data"
  dir=$(cd "$dir" && pwd)
  stop "$dir"
  [ -s "$token" ] || die "prometheus: no token in $token"
  read -r proxy_port prom_port forward_port < <(free_ports 127.0.0.1 3)
  echo "$forward_port" >"$dir/forward.port"
  # kubectl proxy: the apiserver on plain HTTP at 127.0.0.1 only, with the
  # kubeconfig's identity; Prometheus needs no credentials of its own.
  echo "$proxy_port" >"$dir/proxy.port"
  spawn_session "$dir/proxy.pid" "$dir/proxy.log" "$kubectl" --kubeconfig "$kubeconfig" proxy \
    --address 127.0.0.1 --port "$proxy_port"
  for ((i = 0; i < 100; i++)); do
    curl -sf -o /dev/null "http://127.0.0.1:$proxy_port/version" && break
    sleep 0.1
  done
  ((i < 100)) || { tail -n 20 "$dir/proxy.log" >&2; die "prometheus: kubectl proxy did not answer within 10 s"; }
  echo '[]' >"$dir/targets.json"
  DIR_TARGETS=$dir/targets.json config "127.0.0.1:$proxy_port" "127.0.0.1:$forward_port" "$(cd "$(dirname "$token")" && pwd)/$(basename "$token")" >"$dir/prometheus.yml"
  spawn_session "$dir/discover.pid" "$dir/discover.log" bash "$0" discover "$dir" "$kubectl" "$kubeconfig" "127.0.0.1:$proxy_port" "$ns"
  promtool check config "$dir/prometheus.yml" >"$dir/promtool.log" 2>&1 || { cat "$dir/promtool.log" >&2; die "prometheus: bad config"; }
  spawn_session "$dir/prometheus.pid" "$dir/prometheus.log" prometheus --config.file "$dir/prometheus.yml" \
    --storage.tsdb.path "$dir/data" --web.listen-address "127.0.0.1:$prom_port" --storage.tsdb.retention.time 1d
  for ((i = 0; i < 300; i++)); do
    curl -sf -o /dev/null "http://127.0.0.1:$prom_port/-/ready" && break
    running "$dir" prometheus >/dev/null || { tail -n 20 "$dir/prometheus.log" >&2; die "prometheus: it exited"; }
    sleep 0.1
  done
  ((i < 300)) || die "prometheus: not ready within 30 s (log $dir/prometheus.log)"
  echo "http://127.0.0.1:$prom_port" | tee "$dir/url"
}

stop() {
  local dir=${1:?usage: $0 stop DIR} name pid i
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  for name in prometheus discover forward proxy; do
    pid=$(running "$dir" "$name") || { rm -f "$dir/$name.pid"; continue; }
    kill "$pid"
    for ((i = 0; i < 50; i++)); do running "$dir" "$name" >/dev/null || break; sleep 0.1; done
    running "$dir" "$name" >/dev/null && kill -9 "$pid"
    rm -f "$dir/$name.pid"
  done
}

case ${1:-} in
  start) shift; start "$@" ;;
  discover) shift; discover "$@" ;;
  stop) shift; stop "$@" ;;
  *) die "usage: $0 start DIR KUBECTL KUBECONFIG NAMESPACE TOKEN_FILE | stop DIR" ;;
esac
