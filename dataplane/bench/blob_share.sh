#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a consumer saves by taking the blob from a holder: one run measures
# `pfs blob create` (map, prefault, fill, fingerprint: the setup a consumer
# would otherwise pay) and then `pfs blob attach` ROUNDS times against a
# holder (fd, mmap, populate, fingerprint check; and with --no-verify),
# side by side, for a 2 MiB-hugepage blob on a private hugetlbfs mount and
# for a 4 KiB tmpfs blob. Also prints HugePages_Free around each attach.
# Needs root (hugetlbfs mount, vm.nr_hugepages). Not a test.
#   MB_2M=512 MB_4K=1024 ROUNDS=5 bench/blob_share.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PFS=${PFS:-build/pfs}
MB_2M=${MB_2M:-512}
MB_4K=${MB_4K:-1024}
ROUNDS=${ROUNDS:-5}
T=$(mktemp -d /tmp/pfs-bench-share.XXXXXX)
added=0 holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null || true
	rm -f "$T/hp/blob" /dev/shm/pfs-bench-share-blob
	mountpoint -q "$T/hp" && umount "$T/hp"
	if [ "$added" -gt 0 ]; then
		echo $(( $(cat /proc/sys/vm/nr_hugepages) - added )) > /proc/sys/vm/nr_hugepages
	fi
	rm -rf "$T"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/token"

field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" | head -1; }

run() { # kind dir size
	local kind=$1 dir=$2 size=$3 sock=$T/run/$1.sock cj
	cj=$("$PFS" -q blob create --dir "$dir" --name "$( [ "$kind" = 2m ] && echo blob || echo pfs-bench-share-blob)" \
		--size "$size" --page "$kind" --no-fallback --fill seed --seed 1)
	echo "$kind $size create: page=$(field page <<<"$cj") map_s=$(field map_s <<<"$cj")" \
		"prefault_s=$(field prefault_s <<<"$cj") fill_s=$(field fill_s <<<"$cj")" \
		"fingerprint_s=$(field fingerprint_s <<<"$cj")"
	"$PFS" -q blob serve --dir "$dir" --name "$( [ "$kind" = 2m ] && echo blob || echo pfs-bench-share-blob)" \
		--socket "$sock" --token-file "$T/token" >/dev/null &
	holder=$!
	for _ in $(seq 50); do "$PFS" -q blob ping --socket "$sock" >/dev/null 2>&1 && break; sleep 0.1; done
	for v in "" --no-verify; do
		local all=""
		for _ in $(seq "$ROUNDS"); do
			aj=$("$PFS" -q blob attach --socket "$sock" --token-file "$T/token" $v)
			all="$all $(field attach_s <<<"$aj")"
			hp="HugePages_Free $(field hugepages_free_before <<<"$aj") -> $(field hugepages_free_after <<<"$aj")"
		done
		med=$(tr ' ' '\n' <<<"$all" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		echo "$kind $size attach${v:+ $v}: attach_s median=$med of [$all ] ($hp, last round)"
	done
	kill "$holder"; wait "$holder" || true; holder=
	rm -f "$dir/blob" "$dir/pfs-bench-share-blob"
}

mkdir -p "$T/hp" "$T/run"
pages=$(( (MB_2M + 1) / 2 ))
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if [ "$free" -lt "$pages" ]; then
	added=$(( pages - free ))
	echo $(( $(cat /proc/sys/vm/nr_hugepages) + added )) > /proc/sys/vm/nr_hugepages
fi
if mount -t hugetlbfs -o pagesize=2M,size="$((pages * 2))M" none "$T/hp" &&
   [ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" -ge "$pages" ]; then
	run 2m "$T/hp" "${MB_2M}M"
else
	echo "2m: SKIP: could not get $pages free 2 MiB pages"
fi
run 4k /dev/shm "${MB_4K}M"
