// SPDX-License-Identifier: Apache-2.0
/* Writes a seed corpus for fuzz_json into a directory: the shapes a
 * registry and a pull secret send (an OCI manifest with titled layers as
 * oras pushes them, an index with platforms, a Docker manifest list, token
 * answers, docker configs in both credential forms), a WWW-Authenticate
 * challenge, a reference, and strings with escapes and surrogate pairs.
 * The digests are sha256 of the empty string and of "{}". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define E3 "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define EM "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

static const char *const seeds[] = {
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	"\"artifactType\":\"application/vnd.unknown.artifact.v1\",\"config\":{\"mediaType\":"
	"\"application/vnd.oci.empty.v1+json\",\"digest\":\"" EM "\",\"size\":2,\"data\":\"e30=\"},"
	"\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"" E3
	"\",\"size\":0,\"annotations\":{\"org.opencontainers.image.title\":\"1_Pooling/config.json\"}},"
	"{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" E3
	"\",\"size\":0,\"annotations\":{\"org.opencontainers.image.title\":\"dir\","
	"\"io.deis.oras.content.unpack\":\"true\"}}],\"annotations\":{\"org.opencontainers.image."
	"created\":\"2026-12-04T12:00:00Z\"}}",
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
	"\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
	"\"" E3 "\",\"size\":7,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\","
	"\"variant\":\"v8\"}},{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
	"\"digest\":\"" EM "\",\"size\":2,\"platform\":{\"os\":\"linux\",\"architecture\":"
	"\"amd64\"}}]}",
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.list.v2"
	"+json\",\"manifests\":[{\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+"
	"json\",\"digest\":\"" E3 "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":"
	"\"s390x\"}}]}",
	"{\"token\":\"eyJhbGciOiJSUzI1NiJ9.e30.c2ln\",\"access_token\":\"x\",\"expires_in\":300,"
	"\"issued_at\":\"2026-12-04T12:00:00Z\"}",
	"{\"access_token\":\"abc\"}",
	"{\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"cGZzOnNlY3JldA==\"},\"https://index.docker.io/"
	"v1/\":{\"username\":\"u\",\"password\":\"p\"}}}",
	"{\"auths\":{\"http://127.0.0.1:5000/v2/\":{\"username\":\"\\u00e9\",\"password\":"
	"\"\\ud83d\\ude00\\n\"}}}",
	"Bearer realm=\"https://auth.example/token\",service=\"registry.example\",scope="
	"\"repository:models/m:pull\"",
	"Basic realm=\"pfs\", charset=UTF-8",
	"127.0.0.1:5000/models/minilm@" E3,
	"[1, -0.5e+10, 1E3, true, false, null, \"\\\"\\\\\\/\\b\\f\\n\\r\\t\", [], {}, [[{}]]]",
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char path[512];
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed-%03zu", argv[1], i);
		f = fopen(path, "wb");
		if (!f || fwrite(seeds[i], 1, strlen(seeds[i]), f) != strlen(seeds[i])) {
			perror(path);
			return 1;
		}
		fclose(f);
	}
	return 0;
}
