#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# `make bench-cluster`: what the operator path costs next to the bare CLI.
# The demo's transfers run as PfsTransfers on the throwaway kind cluster
# (brought up or reused, as `make demo` does). Each is read back from
# `kubectl get pfstransfer -o json`. The same transfer also runs as
# `pfs send`/`pfs recv` on a veth pair between two fresh namespaces on
# this host, with the same blob, bytes, mode, transport and MTU as the
# cluster's data link. Repetitions alternate: transfer i runs on the
# cluster, then bare, before transfer i+1.
#
# Rows go to hack/bench/report.py (suite "cluster"), which writes
# docs/bench/bench-cluster.md, docs/bench/bench-cluster.csv and docs/bench/img/cluster/.
# Each PfsTransfer row is compared with its bare run. Its notes give
# the end-to-end time, from creation to Succeeded: pods, scheduling and
# image start included, which the data-plane elapsed time leaves out.
#
# REPS (default 3; BENCH_QUICK=1: 1). Needs root. The cluster stays up
# (`make cluster-down` removes it).
set -euo pipefail
source "$(dirname "$0")/../kind/lib.sh"
source "$(dirname "$0")/../../dataplane/bench/netns.sh"

need_root
REPS=${REPS:-3}
[ "${BENCH_QUICK:-0}" = 1 ] && REPS=1
HELM=${HELM:-$REPO_ROOT/bin/helm-v3.19.0}
IMAGE_ARCHIVES=${IMAGE_ARCHIVES:-$REPO_ROOT/bin/images}
PFS=$REPO_ROOT/dataplane/build/pfs
NS=pfs-bench
DEMO=$REPO_ROOT/hack/demo
BLOB_SIZE=128M PASSES=8 MTU=3500 # hack/demo/blob.yaml, the transfers' passes, data-network.sh
RUNS=(tcp-payload tcp-offset tcp-arith udp-offset afxdp-arith)
[ -x "$HELM" ] || die "no helm at $HELM: run make helm (or make bench-cluster)"
[ -x "$PFS" ] || die "no $PFS: make -C dataplane"

work=$(mktemp -d)
nsa=pfsbc-a-$$ nsb=pfsbc-b-$$ va=pbca$(($$ % 10000)) vb=pbcb$(($$ % 10000))
ipa=10.216.$(($$ % 250)).1 ipb=10.216.$(($$ % 250)).2
hp_added=0
cleanup() {
	set +e
	netns_remove "$nsa" "$nsb"
	[ "$hp_added" -eq 0 ] || echo $(($(cat /proc/sys/vm/nr_hugepages) - hp_added)) >/proc/sys/vm/nr_hugepages
	rm -rf "$work"
}
trap cleanup EXIT

# ---- the cluster, as make demo brings it up ----
kubeconfig=$("$REPO_ROOT/hack/cluster-up.sh")
export KUBECONFIG=$kubeconfig
kubectl="$("$REPO_ROOT/hack/k8s-binaries.sh" kubectl)/kubectl"
k() { "$kubectl" "$@"; }
cp_node="$CLUSTER_NAME-control-plane" worker="$CLUSTER_NAME-worker"
"$HACK_KIND/load-images.sh" "$IMAGE_ARCHIVES/operator.tar" "$IMAGE_ARCHIVES/dataplane.tar"
"$HELM" upgrade --install pfs "$REPO_ROOT/charts/packetfs-operator" -n pfs-system --create-namespace \
	-f "$DEMO/values.yaml" --wait --timeout 5m >/dev/null
k -n pfs-system rollout restart deployment -l app.kubernetes.io/instance=pfs >/dev/null
k -n pfs-system rollout status deployment -l app.kubernetes.io/instance=pfs --timeout=180s >/dev/null
k delete namespace "$NS" --ignore-not-found --wait=true --timeout=180s >/dev/null
k create namespace "$NS" >/dev/null
k label namespace "$NS" pod-security.kubernetes.io/enforce=privileged >/dev/null
k -n "$NS" apply -f "$DEMO/blob.yaml" >/dev/null
k -n "$NS" wait --for=condition=Ready pfsblob/demo-blob --timeout=300s >/dev/null ||
	die "pfsblob/demo-blob is not Ready after 5 minutes (KUBECONFIG=$kubeconfig)"

# ---- the host's veth pair, shaped like the data link ----
ip netns add "$nsa"; ip netns add "$nsb"
ip link add "$va" mtu $MTU type veth peer name "$vb" mtu $MTU
ip link set "$va" netns "$nsa"; ip link set "$vb" netns "$nsb"
ip -n "$nsa" addr add "$ipa/24" dev "$va"; ip -n "$nsb" addr add "$ipb/24" dev "$vb"
for n in "$nsa" "$nsb"; do ip -n "$n" link set lo up; done
ip -n "$nsa" link set "$va" up; ip -n "$nsb" link set "$vb" up
need=$((2 * $(numfmt --from=iec $BLOB_SIZE) / 2097152))
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
if [ "$free" -lt "$need" ]; then
	cur=$(cat /proc/sys/vm/nr_hugepages)
	echo $((cur + need - free)) >/proc/sys/vm/nr_hugepages
	hp_added=$(($(cat /proc/sys/vm/nr_hugepages) - cur))
fi

rows=$work/rows.jsonl
: >"$rows"

# One PfsTransfer, waited for; its status as a row (and its bare twin's key).
run_cluster() { # run rep
	local r=$1 name=$1-$2 deadline=$((SECONDS + 600)) phase=
	sed -e "s/@SENDER_NODE@/$cp_node/" -e "s/@RECEIVER_NODE@/$worker/" -e "s/^  name: $r\$/  name: $name/" \
		"$DEMO/transfer-$r.yaml" | k -n "$NS" apply -f - >/dev/null
	while [ $SECONDS -lt $deadline ]; do
		phase=$(k -n "$NS" get pfstransfer "$name" -o jsonpath='{.status.phase}')
		case $phase in Succeeded | Failed) break ;; esac
		sleep 2
	done
	k -n "$NS" get pfstransfer "$name" -o json >"$work/$name.json"
	[ "$phase" = Succeeded ] || {
		log "pfstransfer/$name: ${phase:-no phase} after 600 s: $(jq -c '.status.conditions' "$work/$name.json")"
		return 0
	}
	jq -c --arg run "$r" '.status as $s | ($s.effectiveBytes / 1e6) as $mb |
		($s.cpu.userSeconds // "0" | tonumber) as $u | ($s.cpu.sysSeconds // "0" | tonumber) as $y |
		(($s.completionTime | fromdate) - (.metadata.creationTimestamp | fromdate)) as $e2e |
		{suite: "cluster", path: "PfsTransfer (kind data link)", "label": $s.label, purpose: "Transfer",
		 size_mb: $mb, elapsed_s: ($s.elapsedSeconds | tonumber),
		 effective_mb_s: ($s.effectiveMBps | tonumber),
		 wire_mb_s: ($s.wireBytes / 1e6 / ($s.elapsedSeconds | tonumber)),
		 user_s: $u, sys_s: $y, mb_per_cpu_s: ($s.mbPerCPUSecond // null | if . then tonumber else null end),
		 integrity: (if $s.integrity.result == "OK" then "OK" elif $s.integrity.result then "MISMATCH" else "NA" end),
		 pthreads: 1, limit: null, peer: "bare-\($run)", key: null, loss_pct: null,
		 notes: "end to end \($e2e) s (created to Succeeded); failed attempts \($s.failedAttempts // 0); receiver CPU; pinned to host CPUs: sender \($s.sender.cpus // "?"), receiver \($s.receiver.cpus // "?")"}' \
		"$work/$name.json" >>"$rows"
}

# The same transfer with the bare CLI on the host's veth pair.
run_bare() { # run
	local r=$1 tr=${1%%-*} mode=${1#*-} port=7650 ifa=() ifb=()
	[ "$tr" = afxdp ] && ifa=(--ifname "$va") ifb=(--ifname "$vb")
	local blob=(--size $BLOB_SIZE --page 2m --fill seed --seed 42)
	nsenter --net=/run/netns/"$nsb" "$PFS" -q recv --transport "$tr" "${ifb[@]}" --listen "$ipb:$port" \
		--mode "$mode" "${blob[@]}" >"$work/bare.recv.json" 2>"$work/bare.recv.err" &
	local rp=$!
	sleep 0.5
	nsenter --net=/run/netns/"$nsa" "$PFS" -q send --transport "$tr" "${ifa[@]}" --connect "$ipb:$port" \
		--mode "$mode" "${blob[@]}" --bytes $(($(numfmt --from=iec $BLOB_SIZE) * PASSES)) \
		>"$work/bare.send.json" 2>"$work/bare.send.err" || true
	wait "$rp" || { log "bare $r failed: $(tail -2 "$work/bare.recv.err" "$work/bare.send.err")"; return 0; }
	jq -c --arg run "$r" '{suite: "cluster", path: "bare CLI (host veth)", "label": .label,
		purpose: "Peer", size_mb: .size_mb, elapsed_s: .elapsed_s, effective_mb_s: .effective_mb_s,
		wire_mb_s: (.wire_bytes / 1e6 / .elapsed_s), user_s: .user_s, sys_s: .sys_s,
		mb_per_cpu_s: .mb_per_cpu_s, integrity: .integrity, pthreads: 1, limit: null, peer: null,
		key: "bare-\($run)", loss_pct: null, notes: "receiver CPU; pfs \(.transport) on a veth pair, MTU '$MTU'"}' \
		"$work/bare.recv.json" >>"$rows"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$REPS"); do
	for r in "${RUNS[@]}"; do
		log "repetition $i of $REPS: $r as a PfsTransfer, then bare"
		run_cluster "$r" "$i"
		run_bare "$r"
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
k -n "$NS" get pfstransfers -o wide

mode=full cmd="make bench-cluster"
[ "${BENCH_QUICK:-0}" = 1 ] && mode=quick cmd="BENCH_QUICK=1 make bench-cluster"
jq -n --arg command "$cmd" --arg date "$(date -u '+%Y-%m-%d %H:%M UTC')" --arg mode "$mode" \
	--arg git "$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
	--arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
	--argjson nproc "$(nproc)" --argjson mem "$(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)" \
	--arg kernel "$(uname -r)" --arg lb "$load_before" --arg la "$load_after" '
	{command: $command, date: $date, mode: $mode, git: $git,
	 machine: {cpu: $cpu, nproc: $nproc, mem_gib: $mem}, kernel: $kernel,
	 load_before: $lb, load_after: $la, pages: [], failed: []}' >"$work/meta.json"
venv=$("$REPO_ROOT/hack/python-venv.sh" "$REPO_ROOT/hack/bench/requirements.txt")
mkdir -p "$REPO_ROOT/docs/bench/img/cluster"
"$venv/bin/python" "$REPO_ROOT/hack/bench/report.py" --rows "$rows" --meta "$work/meta.json" \
	--out-md "$REPO_ROOT/docs/bench/bench-cluster.md" --out-csv "$REPO_ROOT/docs/bench/bench-cluster.csv" \
	--img-dir "$REPO_ROOT/docs/bench/img/cluster"
cp "$rows" "$REPO_ROOT/docs/bench/bench-cluster.rows.jsonl"
cp "$work/meta.json" "$REPO_ROOT/docs/bench/bench-cluster.meta.json"
log "wrote docs/bench/bench-cluster.md, docs/bench/bench-cluster.csv, docs/bench/img/cluster/ (the cluster stays up: make cluster-down)"
