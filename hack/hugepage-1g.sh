#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hugepage-1g.sh reserve|release: one 1 GiB hugepage for the data plane's
# tests (tests/test_blob: "1G blob with a 1 GiB page reserved"), taken at
# the start of `make test` and given back after the data-plane tests.
#
# Why early: the kernel builds a 1 GiB page from 1 GiB of contiguous free
# memory, which a machine has after boot and loses as builds, caches and
# clusters fragment it; compaction does not always bring it back. By the
# time the data-plane tests run, `make test` has built Go, images and the
# cluster's parts, and on a machine used for a while the check of a real
# 1 GiB mapping could then only skip (an expected skip, tests/expected-skips:
# the kernel had no page to give). Taking the page early makes it run on
# more machines. The test uses a free page when there is one, and reserves
# one itself otherwise, so this is only about when.
#
# Only what this script added is released (recorded under the cache dir).
# Not root, no 1 GiB page support, or no page to be had: it says so and
# succeeds; the test then decides, as before.
set -euo pipefail
sys=/sys/kernel/mm/hugepages/hugepages-1048576kB
state=${PFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/packetfs}/hugepage-1g.added
say() { echo "hugepage-1g: $*" >&2; }

case ${1:-} in
reserve)
	if [ ! -d "$sys" ] || [ "$(id -u)" != 0 ]; then
		say "no 1 GiB hugepages here (or not root): the test reserves its own"
		exit 0
	fi
	[ "$(cat "$sys/free_hugepages")" -ge 1 ] && { say "one is free already"; exit 0; }
	nr=$(cat "$sys/nr_hugepages")
	echo $((nr + 1)) >"$sys/nr_hugepages" 2>/dev/null || true
	got=$(($(cat "$sys/nr_hugepages") - nr))
	if [ "$got" -lt 1 ]; then
		say "the kernel had no contiguous 1 GiB free; the test will try again"
		exit 0
	fi
	mkdir -p "$(dirname "$state")"
	echo $(($(cat "$state" 2>/dev/null || echo 0) + got)) >"$state"
	say "reserved one 1 GiB page until the data-plane tests end"
	;;
release)
	added=$(cat "$state" 2>/dev/null || echo 0)
	if [ "$added" -gt 0 ] && [ -d "$sys" ]; then
		echo $(($(cat "$sys/nr_hugepages") - added)) >"$sys/nr_hugepages"
		say "released $added 1 GiB page(s)"
	fi
	rm -f "$state"
	;;
*)
	echo "usage: $0 reserve|release" >&2
	exit 2
	;;
esac
