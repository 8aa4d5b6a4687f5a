# SPDX-License-Identifier: Apache-2.0
"""Upload a file or a directory tree into an S3 bucket with boto3, a real
client, so the test server (hack/s3-server.sh) holds objects the way users'
tools write them: single PUTs up to the part size, multipart uploads above
it, and, when asked, an x-amz-checksum-sha256 the store keeps beside the
ETag. Creates the bucket when it is missing.

The server comes from the environment, as `hack/s3-server.sh start` prints
it: S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION and, for HTTPS with
the throwaway CA, S3_CA_FILE.

Prints JSON on stdout: {"bucket": ..., "objects": [{"key", "size", "etag",
"checksum_sha256"}]}, the ETag and checksum as a HEAD of each object reports
them after the upload (checksum_sha256 is null when the store has none).

Usage (with the venv of hack/s3/requirements.txt, hack/python-venv.sh):
  "$venv/bin/python" hack/s3/s3put.py [--checksum-sha256] [--part-size MIB] SRC BUCKET [PREFIX]
A file SRC becomes PREFIX/NAME, a directory's files PREFIX/RELATIVE/PATH.
"""

import argparse
import json
import os
import sys

import boto3
import botocore.config
import botocore.exceptions
from boto3.s3.transfer import TransferConfig

MIB = 1024 * 1024


def client():
    missing = [v for v in ("S3_ENDPOINT", "S3_ACCESS_KEY", "S3_SECRET_KEY") if not os.environ.get(v)]
    if missing:
        sys.exit(f"s3put: {', '.join(missing)} not set (eval the line hack/s3-server.sh start prints)")
    return boto3.client(
        "s3",
        endpoint_url=os.environ["S3_ENDPOINT"],
        aws_access_key_id=os.environ["S3_ACCESS_KEY"],
        aws_secret_access_key=os.environ["S3_SECRET_KEY"],
        region_name=os.environ.get("S3_REGION", "us-east-1"),
        verify=os.environ.get("S3_CA_FILE") or True,
        # Path style: the endpoint is an address, no bucket DNS names. Only
        # the checksums asked for: boto3 otherwise adds a CRC32 to every
        # upload, and the objects should carry what the test chose.
        config=botocore.config.Config(
            s3={"addressing_style": "path"},
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        ),
    )


def ensure_bucket(s3, bucket):
    try:
        s3.head_bucket(Bucket=bucket)
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] not in ("404", "NoSuchBucket"):
            raise
        s3.create_bucket(Bucket=bucket)


def key(prefix, name):
    return f"{prefix.strip('/')}/{name}" if prefix.strip("/") else name


def sources(src, prefix):
    """(path, key) pairs in key order."""
    if not os.path.isdir(src):
        return [(src, key(prefix, os.path.basename(src)))]
    pairs = []
    for root, _, files in os.walk(src):
        for name in files:
            path = os.path.join(root, name)
            pairs.append((path, key(prefix, os.path.relpath(path, src).replace(os.sep, "/"))))
    return sorted(pairs, key=lambda pair: pair[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checksum-sha256", action="store_true", help="have the store keep each object's SHA-256")
    ap.add_argument("--part-size", type=int, default=8, metavar="MIB",
                    help="files up to this size go in one PUT, larger ones in parts of it (default 8, boto3's;"
                         " s3transfer raises parts to S3's minimum of 5)")
    ap.add_argument("src")
    ap.add_argument("bucket")
    ap.add_argument("prefix", nargs="?", default="")
    args = ap.parse_args()
    if not os.path.exists(args.src):
        sys.exit(f"s3put: no such file or directory: {args.src}")

    s3 = client()
    ensure_bucket(s3, args.bucket)
    transfer = TransferConfig(multipart_threshold=args.part_size * MIB + 1,
                              multipart_chunksize=args.part_size * MIB)
    extra = {"ChecksumAlgorithm": "SHA256"} if args.checksum_sha256 else {}
    objects = []
    for path, name in sources(args.src, args.prefix):
        s3.upload_file(path, args.bucket, name, ExtraArgs=extra, Config=transfer)
        head = s3.head_object(Bucket=args.bucket, Key=name, ChecksumMode="ENABLED")
        objects.append({"key": name, "size": head["ContentLength"], "etag": head["ETag"],
                        "checksum_sha256": head.get("ChecksumSHA256")})
    json.dump({"bucket": args.bucket, "objects": objects}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
