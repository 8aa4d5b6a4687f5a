#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Smoke test of the S3 test server (TAP): hack/s3-server.sh starts SeaweedFS
# in a temporary directory, boto3 (hack/s3/s3put.py) uploads real model
# files (silero-vad 6.2.3 from PyPI, hack/testdata.sh), and curl's own SigV4
# reads them back: whole, ranged, with conditions, with a wrong secret,
# after a clean and an unclean restart on the same directory, and again over
# HTTPS with the throwaway CA. The responses the C client will meet (list
# XML, HEAD headers) are printed as TAP comments. Leaves nothing behind.
# Usage: hack/s3/smoke.sh   (no root; the first run builds weed, several minutes)
set -euo pipefail
HACK=$(cd "$(dirname "$0")/.." && pwd)

srv=$HACK/s3-server.sh
"$srv" bin >/dev/null
venv=$("$HACK/python-venv.sh" "$HACK/s3/requirements.txt")
data=$("$HACK/testdata.sh" path silero6)
work=$(mktemp -d)
dir=$work/srv
trap '"$srv" stop "$dir" 2>/dev/null || true; rm -rf "$work"' EXIT

n=0 failed=0
# tap <name> <command...>: one TAP line per check, output shown on failure.
# The command runs in this shell, not a subshell: start_srv's environment
# must stay.
tap() {
  local name=$1; shift; n=$((n + 1))
  if "$@" >"$work/out" 2>&1; then echo "ok $n $name"
  else failed=$((failed + 1)); echo "not ok $n $name"; sed 's/^/# /' "$work/out"; fi
}
note() { sed 's/^/# /'; } # facts worth reading, as TAP comments

# start_srv [--tls]: start the server on $dir and take its environment.
start_srv() {
  local line
  line=$("$srv" start "$dir" "$@") || return 1
  unset S3_CA_FILE
  eval "export $line"
  echo "$line" >"$work/env.$#"
}
# s3curl ARGS...: curl signing with the server's keys (and its CA over HTTPS).
s3curl() {
  local ca=()
  [ -z "${S3_CA_FILE:-}" ] || ca=(--cacert "$S3_CA_FILE")
  curl -sS "${ca[@]}" --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" "$@"
}
# status CODE ARGS...: the request answers HTTP CODE.
status() {
  local want=$1 got; shift
  rm -f "$work/body"
  got=$(s3curl -o "$work/body" -w '%{http_code}' "$@")
  [ "$got" = "$want" ] || { echo "HTTP $got, want $want"; grep -aos '<Code>[^<]*</Code>' "$work/body"; return 1; }
}
b64sha256() { openssl dgst -sha256 -binary "$1" | base64; }

file=silero_vad.onnx
obj() { echo "$S3_ENDPOINT/smoke/silero6/$file"; }

get_same() { # the object's bytes are the file's
  status 200 "$(obj)" && cmp "$work/body" "$data/$file"
}
range_same() { # bytes 100..199
  status 206 -r 100-199 "$(obj)" && cmp "$work/body" <(tail -c +101 "$data/$file" | head -c 100)
}
wrong_secret() {
  S3_SECRET_KEY=not-the-secret status 403 "$(obj)" && grep -q SignatureDoesNotMatch "$work/body"
}
upload_all() {
  "$venv/bin/python" "$HACK/s3/s3put.py" --checksum-sha256 "$data" smoke silero6 >"$work/put.json" &&
    [ "$(jq '.objects | length' "$work/put.json")" = "$(find "$data" -type f | wc -l)" ] &&
    jq -e 'all(.objects[]; .checksum_sha256 != null)' "$work/put.json" >/dev/null
}
all_same() { # every uploaded object reads back as its file
  local f
  for f in "$data"/*; do
    status 200 "$S3_ENDPOINT/smoke/silero6/${f##*/}" && cmp "$work/body" "$f" || return 1
  done
}
head_etag() { # a single PUT: the ETag is the quoted MD5
  s3curl -I "$(obj)" | tr -d '\r' >"$work/head" &&
    grep -qix "etag: \"$(md5sum <"$data/$file" | cut -d' ' -f1)\"" "$work/head"
}
head_checksum() { # asked for: x-amz-checksum-sha256, base64 of the SHA-256
  s3curl -I -H 'x-amz-checksum-mode: ENABLED' "$(obj)" | tr -d '\r' >"$work/head.cs" &&
    grep -qix "x-amz-checksum-sha256: $(b64sha256 "$data/$file")" "$work/head.cs"
}
multipart_etag() { # MD5 of the parts' MD5s, dash, part count (one part here)
  local want
  "$venv/bin/python" "$HACK/s3/s3put.py" --checksum-sha256 --part-size 1 "$data/$file" smoke mp >"$work/mp.json" &&
    want=$(openssl dgst -md5 -binary "$data/$file" | md5sum | cut -d' ' -f1) &&
    [ "$(jq -r '.objects[0].etag' "$work/mp.json")" = "\"$want-1\"" ] &&
    s3curl -I -H 'x-amz-checksum-mode: ENABLED' "$S3_ENDPOINT/smoke/mp/$file" | tr -d '\r' >"$work/head.mp"
}
list_prefix() { # ListObjectsV2: '/' in a query value must be sent as %2F (SigV4)
  status 200 "$S3_ENDPOINT/smoke?list-type=2&prefix=silero6%2Fsilero_vad_16k" &&
    grep -q '<KeyCount>3</KeyCount>' "$work/body" && cp "$work/body" "$work/list.xml"
}
if_match_wrong() { status 412 -H 'If-Match: "00000000000000000000000000000000"' "$(obj)"; }
range_past_end() { status 416 -r "$(stat -c %s "$data/$file")-" "$(obj)"; }
same_env() { cmp "$work/env.0" "$work/env.0.first"; }
kill_9() { kill -KILL "$(cat "$dir/weed.pid")"; }
untrusted_refused() { # curl without the CA: no TLS connection
  local rc=0
  curl -sS --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" -o /dev/null "$(obj)" 2>/dev/null || rc=$?
  [ "$rc" = 60 ] || { echo "curl exited $rc, want 60 (peer certificate cannot be authenticated)"; return 1; }
}
upload_tls() { # boto3 over HTTPS, checking the server against S3_CA_FILE
  "$venv/bin/python" "$HACK/s3/s3put.py" "$data/silero_vad_half.onnx" smoke tls >/dev/null &&
    status 200 "$S3_ENDPOINT/smoke/tls/silero_vad_half.onnx" && cmp "$work/body" "$data/silero_vad_half.onnx"
}
stopped() { "$srv" stop "$dir" && ! pgrep -f -- "-dir=$dir/data " >/dev/null; }

tap "start: a signed ListBuckets answers" start_srv
cp "$work/env.0" "$work/env.0.first"
tap "boto3 uploads the silero6 files with SHA-256 checksums" upload_all
tap "GET returns every file's bytes" all_same
tap "ranged GET (bytes 100-199) returns those bytes" range_same
tap "a wrong secret is refused (403 SignatureDoesNotMatch)" wrong_secret
tap "HEAD: the ETag of a single PUT is the MD5" head_etag
tap "HEAD with x-amz-checksum-mode: ENABLED returns x-amz-checksum-sha256" head_checksum
tap "multipart upload: ETag is MD5 of part MD5s, -1" multipart_etag
tap "ListObjectsV2 with a prefix lists 3 keys" list_prefix
tap "GET If-Match with a wrong ETag: 412" if_match_wrong
tap "ranged GET past the end: 416" range_past_end
tap "stop" "$srv" stop "$dir"
tap "start again on the same directory" start_srv
tap "same endpoint and keys after the restart" same_env
tap "the objects are still there" all_same
tap "kill -9 (unclean stop)" kill_9
tap "start after an unclean stop" start_srv
tap "the objects are still there" all_same
tap "stop" "$srv" stop "$dir"
tap "start --tls on the same directory" start_srv --tls
tap "HTTPS GET with the throwaway CA returns the bytes" get_same
tap "HTTPS ranged GET returns those bytes" range_same
tap "HTTPS: a wrong secret is refused (403)" wrong_secret
tap "HTTPS without the CA: curl refuses the server" untrusted_refused
tap "boto3 uploads over HTTPS (S3_CA_FILE)" upload_tls
tap "stop" "$srv" stop "$dir"
tap "start --tls again: same CA, the objects are still there" start_srv --tls
tap "HTTPS GET after the restart returns the bytes" get_same
tap "stop leaves no weed process" stopped

{
  echo "ListObjectsV2 prefix=silero6/silero_vad_16k:"; cat "$work/list.xml" 2>/dev/null; echo
  echo "HEAD (single PUT, checksum mode):"; cat "$work/head.cs" 2>/dev/null
  echo "HEAD (multipart, checksum mode):"; cat "$work/head.mp" 2>/dev/null
} | note
echo "$((n - failed)) passed, $failed failed"
[ "$failed" = 0 ]
