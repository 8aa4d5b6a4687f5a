// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// createCase is one object a user might write. want lists substrings the
// apiserver's error must contain (the field and the how-to-fix message); an
// empty want means the object must be accepted.
type createCase struct {
	kind string
	spec string
	want []string
}

const (
	blob = "PfsBlob"
	xfer = "PfsTransfer"
	pcj  = "PcoreJob"
)

func TestCreateValidation(t *testing.T) {
	cases := map[string]createCase{
		// PfsBlob: size bounds and whole bytes, enums, the fill union.
		"blob size 0": {blob, `size: 0`,
			[]string{"spec.size", "size must be at least 1Mi"}},
		"blob size below 1Mi": {blob, `size: 1023Ki`,
			[]string{"spec.size", "size must be at least 1Mi"}},
		"blob size above 64Ti": {blob, `size: 65Ti`,
			[]string{"spec.size", "size must be at most 64Ti"}},
		"blob size fractional bytes": {blob, `size: "2097152.5"`,
			[]string{"spec.size", "size must be a whole number of bytes"}},
		"blob size not a quantity": {blob, `size: lots`,
			[]string{"spec.size", "should match"}},
		"blob size missing": {blob, `pageSize: 2Mi`,
			[]string{"size is required unless spec.source is set"}},
		"blob unknown pageSize": {blob, "size: 1Gi\npageSize: 3Mi",
			[]string{"spec.pageSize", `Unsupported value: "3Mi"`, `"2Mi", "1Gi", "THP", "4Ki"`}},
		"blob unknown fill type": {blob, "size: 1Gi\nfill: {type: Random}",
			[]string{"spec.fill.type", `Unsupported value: "Random"`}},
		"blob seed with zero fill": {blob, "size: 1Gi\nfill: {type: Zero, seed: 7}",
			[]string{"spec.fill", "fill.seed is only used when fill.type is Seed"}},
		"blob negative seed": {blob, "size: 1Gi\nfill: {seed: -1}",
			[]string{"spec.fill.seed", "greater than or equal to 0"}},
		"blob unknown pageFallback": {blob, "size: 1Gi\npageFallback: Sometimes",
			[]string{"spec.pageFallback", `Unsupported value: "Sometimes"`}},
		"blob without spec": {blob, ``, []string{"spec is required: set spec.size (e.g. 1Gi) or spec.source"}},
		// PfsBlob with a source.
		"blob source with both pvc and hostPath": {blob, "source: {persistentVolumeClaim: {claimName: data}, hostPath: {path: /srv/x}}",
			[]string{"spec.source", "source needs exactly one of persistentVolumeClaim, hostPath, s3, http and oci"}},
		"blob source with neither": {blob, "source: {}",
			[]string{"spec.source", "source needs exactly one of persistentVolumeClaim, hostPath, s3, http and oci"}},
		"blob source with s3 and http": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, key: a}, http: {url: 'https://h.example/a'}}",
			[]string{"spec.source", "source needs exactly one of persistentVolumeClaim, hostPath, s3, http and oci"}},
		// PfsBlob from a store.
		"blob s3 with key and prefix": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, key: a, prefix: b/}}",
			[]string{"spec.source.s3", "needs exactly one of key (one object, a file) and prefix"}},
		"blob s3 with neither key nor prefix": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models}}",
			[]string{"spec.source.s3", "needs exactly one of key (one object, a file) and prefix"}},
		"blob s3 key ending in /": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, key: llama/}}",
			[]string{"spec.source.s3.key", "set source.s3.prefix instead"}},
		"blob s3 endpoint with a path": {blob, "source: {s3: {endpoint: 'https://s3.example/models', bucket: models, key: a}}",
			[]string{"spec.source.s3.endpoint", "without a path, query or credentials"}},
		"blob s3 endpoint with credentials": {blob, "source: {s3: {endpoint: 'https://AKID:secret@s3.example', bucket: models, key: a}}",
			[]string{"spec.source.s3.endpoint", "without a path, query or credentials"}},
		"blob s3 bucket not a bucket name": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: Models_1, key: a}}",
			[]string{"spec.source.s3.bucket", "should match"}},
		"blob s3 prefix absolute": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, prefix: /llama/}}",
			[]string{"spec.source.s3.prefix", "without a leading '/'"}},
		"blob s3 secret not a name": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, key: a, credentialsSecretRef: {name: My_Secret}}}",
			[]string{"spec.source.s3.credentialsSecretRef.name", "should match"}},
		"blob http url with credentials": {blob, "source: {http: {url: 'https://user:tok@hub.example/m.safetensors'}}",
			[]string{"spec.source.http.url", "without credentials (put a token in headersSecretRef)"}},
		"blob http url not http": {blob, "source: {http: {url: 'ftp://hub.example/m.safetensors'}}",
			[]string{"spec.source.http.url", "is an http:// or https:// URL"}},
		"blob http files with ..": {blob, "source: {http: {url: 'https://hub.example/llama', files: [config.json, ../etc/passwd]}}",
			[]string{"spec.source.http.files", "no empty, '.' or '..' part"}},
		"blob http files empty": {blob, "source: {http: {url: 'https://hub.example/llama', files: []}}",
			[]string{"spec.source.http", "list at least one, or remove files"}},
		"blob s3 reads concurrency over 16": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, key: a, reads: {concurrency: 17}}}",
			[]string{"spec.source.s3.reads.concurrency", "less than or equal to 16"}},
		"blob s3 reads range not a multiple of 4Ki": {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, key: a, reads: {rangeSize: 100000}}}",
			[]string{"spec.source.s3.reads.rangeSize", "a multiple of 4Ki from 64Ki to 256Mi"}},
		"blob http reads range over 256Mi": {blob, "source: {http: {url: 'https://hub.example/m.onnx', reads: {rangeSize: 512Mi}}}",
			[]string{"spec.source.http.reads.rangeSize", "a multiple of 4Ki from 64Ki to 256Mi"}},
		"blob http reads range under 64Ki": {blob, "source: {http: {url: 'https://hub.example/m.onnx', reads: {rangeSize: 32Ki}}}",
			[]string{"spec.source.http.reads.rangeSize", "a multiple of 4Ki from 64Ki to 256Mi"}},
		"blob oci without a registry": {blob, "source: {oci: {reference: 'models/llama:v1'}}",
			[]string{"spec.source.oci.reference", "must start with the registry"}},
		"blob oci without a tag or digest": {blob, "source: {oci: {reference: 'registry.example/models/llama'}}",
			[]string{"spec.source.oci.reference", "REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST"}},
		"blob oci uppercase repository": {blob, "source: {oci: {reference: 'registry.example/Models/llama:v1'}}",
			[]string{"spec.source.oci.reference", "a lowercase repository"}},
		"blob oci short digest": {blob, "source: {oci: {reference: 'registry.example/models/llama@sha256:abc'}}",
			[]string{"spec.source.oci.reference", "REGISTRY/REPOSITORY@sha256:DIGEST"}},
		"blob oci path with ..": {blob, "source: {oci: {reference: 'registry.example/m:v1', path: /models/../etc}}",
			[]string{"spec.source.oci.path", "no '.' or '..' part"}},
		"blob oci protocol": {blob, "source: {oci: {reference: 'registry.example/m:v1', protocol: FTP}}",
			[]string{"spec.source.oci.protocol", "supported values"}},
		"blob oci and s3": {blob, "source: {oci: {reference: 'registry.example/m:v1'}, s3: {endpoint: 'https://s3.example', bucket: models, key: a}}",
			[]string{"spec.source", "source needs exactly one of persistentVolumeClaim, hostPath, s3, http and oci"}},
		"blob http files with a comma": {blob, "source: {http: {url: 'https://hub.example/llama', files: ['a,b']}}",
			[]string{"spec.source.http.files", "no ','"}},
		"blob pvc path absolute": {blob, "source: {persistentVolumeClaim: {claimName: data, path: /models/x}}",
			[]string{"spec.source.persistentVolumeClaim.path", "remove the leading '/'"}},
		"blob pvc path with ..": {blob, "source: {persistentVolumeClaim: {claimName: data, path: models/../../etc}}",
			[]string{"spec.source.persistentVolumeClaim.path", "must not contain a '..' part"}},
		"blob pvc claimName not a name": {blob, "source: {persistentVolumeClaim: {claimName: Data_1}}",
			[]string{"spec.source.persistentVolumeClaim.claimName", "should match"}},
		"blob hostPath relative": {blob, "source: {hostPath: {path: srv/x}}",
			[]string{"spec.source.hostPath.path", "must be absolute"}},
		"blob hostPath with ..": {blob, "source: {hostPath: {path: /srv/../etc/shadow}}",
			[]string{"spec.source.hostPath.path", "must not contain a '..' part"}},
		"blob fill and source": {blob, "fill: {type: Zero}\nsource: {persistentVolumeClaim: {claimName: data}}",
			[]string{"set either spec.fill or spec.source, not both"}},
		// Per-object scheduling: what the API server would refuse on the pod
		// is refused on the object, with the fix.
		"blob scheduling accepted": {blob, "size: 1Gi\nscheduling: {priorityClassName: models-critical, tolerations: " +
			"[{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}, {key: team, value: vision}, {operator: Exists}, " +
			"{key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 300}]}", nil},
		"transfer scheduling accepted": {xfer, "blobRef: {name: b}\nmode: Offset\nscheduling: {tolerations: [{key: team, operator: Equal, value: vision}]}", nil},
		"job scheduling accepted":      {pcj, "blobRef: {name: b}\nop: fnv\nscheduling: {priorityClassName: batch-low}", nil},
		"scheduling toleration with an unknown operator": {blob, "size: 1Gi\nscheduling: {tolerations: [{key: a, operator: In}]}",
			[]string{"spec.scheduling.tolerations", "operator must be Equal or Exists"}},
		"scheduling Exists with a value": {xfer, "blobRef: {name: b}\nmode: Offset\nscheduling: {tolerations: [{key: a, operator: Exists, value: b}]}",
			[]string{"spec.scheduling.tolerations", "operator Exists takes no value"}},
		"scheduling empty key without Exists": {pcj, "blobRef: {name: b}\nop: fnv\nscheduling: {tolerations: [{value: b}]}",
			[]string{"spec.scheduling.tolerations", "an empty key tolerates every taint only with operator Exists"}},
		"scheduling unknown effect": {blob, "size: 1Gi\nscheduling: {tolerations: [{key: a, operator: Exists, effect: Evict}]}",
			[]string{"spec.scheduling.tolerations", "effect must be NoSchedule, PreferNoSchedule or NoExecute"}},
		"scheduling tolerationSeconds without NoExecute": {blob, "size: 1Gi\nscheduling: {tolerations: [{key: a, operator: Exists, effect: NoSchedule, tolerationSeconds: 5}]}",
			[]string{"spec.scheduling.tolerations", "tolerationSeconds needs effect NoExecute"}},
		"scheduling priorityClassName not a name": {blob, "size: 1Gi\nscheduling: {priorityClassName: Models_Critical}",
			[]string{"spec.scheduling.priorityClassName", "should match"}},
		"blob UDP replication accepted": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {transport: UDP}", nil},
		"blob s3 prefix accepted": {blob, "source: {s3: {endpoint: 'https://s3.example:9000', bucket: models, prefix: llama/, region: eu-west-3, " +
			"credentialsSecretRef: {name: s3-creds}, caBundle: {configMapName: store-ca}}}", nil},
		"blob s3 key accepted": {blob, "source: {s3: {endpoint: 'http://seaweedfs.storage:8333', bucket: models, key: llama/model.safetensors}}", nil},
		"blob http files accepted": {blob, "source: {http: {url: 'https://hub.example/llama/resolve/main', files: [config.json, tokenizer.json, model.safetensors], " +
			"headersSecretRef: {name: hub-token}}}", nil},
		"blob s3 reads accepted":   {blob, "source: {s3: {endpoint: 'https://s3.example', bucket: models, prefix: llama/, reads: {concurrency: 16, rangeSize: 256Mi}}}", nil},
		"blob http reads accepted": {blob, "source: {http: {url: 'https://hub.example/m.onnx', reads: {concurrency: 1, rangeSize: 64Ki}}}", nil},
		"blob oci tag accepted": {blob, "source: {oci: {reference: 'registry.example:5000/models/llama-3.1_8b:v1.0', pullSecretRef: {name: pull}, path: /models, " +
			"caBundle: {configMapName: reg-ca}, reads: {concurrency: 8}}}", nil},
		"blob oci digest over HTTP accepted": {blob, "source: {oci: {reference: '10.89.0.1:5000/minilm@sha256:" +
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', protocol: HTTP}}", nil},
		"blob http one URL with a query accepted":            {blob, "source: {http: {url: 'https://cdn.example/m.onnx?X-Amz-Signature=abc'}}", nil},
		"blob AFXDP replication on the pod network accepted": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {transport: AFXDP}", nil},
		"blob AFXDP replication on a network accepted": {blob,
			"source: {hostPath: {path: /srv/x}}\nreplication: {transport: AFXDP, topology: Tree, network: nets/fabric, resourceName: intel.com/sriov_netdevice}", nil},
		"blob UDP replication without source": {blob, "size: 1Gi\nreplication: {transport: UDP}",
			[]string{"replication is only used with spec.source"}},
		"blob AFXDP replication without source": {blob, "size: 1Gi\nreplication: {transport: AFXDP, network: fabric}",
			[]string{"replication is only used with spec.source"}},
		"blob unknown replication transport": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {transport: QUIC}",
			[]string{"spec.replication.transport", `Unsupported value: "QUIC"`, `"TCP", "UDP", "AFXDP"`}},
		"blob replication without source": {blob, "size: 1Gi\nreplication: {topology: Tree}",
			[]string{"replication is only used with spec.source"}},
		"blob unknown topology": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {topology: Mesh}",
			[]string{"spec.replication.topology", `Unsupported value: "Mesh"`}},
		"blob bandwidthLimit too small": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {bandwidthLimit: 1Ki}",
			[]string{"spec.replication.bandwidthLimit", "at least 1Mi"}},
		"blob replication network not a name": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {network: Bad_Net}",
			[]string{"spec.replication.network", "should match"}},
		"blob replication network with two slashes": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {network: a/b/c}",
			[]string{"spec.replication.network", "should match"}},
		"blob replication network without source": {blob, "size: 1Gi\nreplication: {network: fabric}",
			[]string{"replication is only used with spec.source"}},
		"blob replication resourceName without network": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {resourceName: intel.com/sriov}",
			[]string{"spec.replication", "replication.resourceName is only used with replication.network"}},
		"blob replication resourceName without vendor": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {network: fabric, resourceName: pool}",
			[]string{"spec.replication.resourceName", "should match"}},
		"blob replication network accepted":            {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {network: fabric}", nil},
		"blob replication namespaced network accepted": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {network: net-ns/fabric.v2, resourceName: intel.com/sriov_netdevice}", nil},
		"blob pvc source without size accepted":        {blob, "source: {persistentVolumeClaim: {claimName: data, path: models/x.safetensors}}", nil},
		"blob pvc whole volume accepted":               {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {topology: Tree, bandwidthLimit: 100Mi}", nil},
		"blob hostPath with size accepted":             {blob, "size: 2Gi\nsource: {hostPath: {path: /srv/models/x}}\npageFallback: Never", nil},
		"blob pvc path with dots in names accepted":    {blob, "source: {persistentVolumeClaim: {claimName: data, path: a..b/.hidden/x.bin}}", nil},

		// PfsBlob with a base: a new version fanned out as delta grams.
		"blob base accepted": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nbase: {name: model-v1, zstdLevel: 9}", nil},
		"blob base over TCP accepted": {blob,
			"source: {persistentVolumeClaim: {claimName: data}}\nreplication: {transport: TCP, topology: Tree}\nbase: {name: model-v1}", nil},
		"blob base without source": {blob, "size: 1Gi\nbase: {name: model-v1}",
			[]string{"base is only used with spec.source", "set spec.source or remove spec.base"}},
		"blob base over UDP": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nreplication: {transport: UDP}\nbase: {name: model-v1}",
			[]string{"base needs replication.transport TCP", "set replication.transport to TCP"}},
		"blob base zstdLevel 20": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nbase: {name: model-v1, zstdLevel: 20}",
			[]string{"spec.base.zstdLevel", "less than or equal to 19"}},
		"blob base name not a name": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nbase: {name: Model_1}",
			[]string{"spec.base.name", "should match"}},
		"blob base without name": {blob, "source: {persistentVolumeClaim: {claimName: data}}\nbase: {zstdLevel: 3}",
			[]string{"spec.base.name: Required value"}},

		// PfsBlob access: which other namespaces' pods may mount it.
		"blob access to namespaces accepted":      {blob, "size: 1Gi\naccess: {namespaces: [serving, team-a1]}", nil},
		"blob access to every namespace accepted": {blob, "size: 1Gi\naccess: {namespaces: ['*']}", nil},
		"blob access empty accepted":              {blob, "size: 1Gi\naccess: {}", nil},
		"blob access namespace not a name": {blob, "size: 1Gi\naccess: {namespaces: [Serving_1]}",
			[]string{"spec.access.namespaces[0]", "access.namespaces holds namespace names", "fix the entry"}},
		"blob access namespace with a dot": {blob, "size: 1Gi\naccess: {namespaces: [ok, a.b]}",
			[]string{"spec.access.namespaces[1]", "access.namespaces holds namespace names"}},
		"blob access namespace empty": {blob, "size: 1Gi\naccess: {namespaces: ['']}",
			[]string{"spec.access.namespaces[0]", "at least 1 chars long"}},
		"blob access namespace too long": {blob, "size: 1Gi\naccess: {namespaces: [" + strings.Repeat("n", 64) + "]}",
			[]string{"spec.access.namespaces[0]", "may not be more than 63 bytes"}},
		"blob access star with names": {blob, "size: 1Gi\naccess: {namespaces: [serving, '*']}",
			[]string{"spec.access.namespaces", `"*" already grants every namespace`, "remove the other names"}},
		"blob access duplicate": {blob, "size: 1Gi\naccess: {namespaces: [serving, other, serving]}",
			[]string{"spec.access.namespaces", "lists a namespace twice: remove the duplicate"}},
		"blob access too many": {blob, "size: 1Gi\naccess: {namespaces: [" + manyNamespaces(129) + "]}",
			[]string{"spec.access.namespaces", "must have at most 128 items"}},
		"blob access 128 namespaces accepted": {blob, "size: 1Gi\naccess: {namespaces: [" + manyNamespaces(128) + "]}", nil},

		"blob size 1Mi accepted":        {blob, `size: 1Mi`, nil},
		"blob size 64Gi accepted":       {blob, "size: 64Gi\npageSize: 1Gi", nil},
		"blob size 1Ti accepted":        {blob, "size: 1Ti\npageSize: 1Gi", nil},
		"blob size 64Ti accepted":       {blob, "size: 64Ti\npageSize: 1Gi", nil},
		"blob size as integer accepted": {blob, `size: 1048576`, nil},

		// PfsTransfer: cross-field rules.
		"transfer Offset without blobRef": {xfer, "mode: Offset\nrange: {length: 1Gi}",
			[]string{"blobRef is required when mode is Offset or Arithmetic", "set spec.blobRef.name"}},
		"transfer Arithmetic without blobRef": {xfer, "mode: Arithmetic\nrange: {length: 1Gi}",
			[]string{"blobRef is required when mode is Offset or Arithmetic"}},
		"transfer Payload without blobRef or range": {xfer, `mode: Payload`,
			[]string{"range is required without blobRef"}},
		"transfer offset into a scratch buffer": {xfer, "mode: Payload\nrange: {offset: 1Mi, length: 64Mi}",
			[]string{"range.offset must be 0 without blobRef"}},
		"transfer passes and totalBytes": {xfer, "blobRef: {name: b}\nmode: Offset\npasses: 2\ntotalBytes: 10Gi",
			[]string{"set either passes or totalBytes, not both"}},
		"transfer AFXDP without network": {xfer, "blobRef: {name: b}\nmode: Offset\ntransport: AFXDP\nsender: {network: xdp}",
			[]string{"transport AFXDP needs a secondary interface", "spec.receiver.network"}},
		"transfer maxDescriptorLength above slab": {xfer, "blobRef: {name: b}\nmode: Payload\ngram: {slabBytes: 64Ki, maxDescriptorLength: 128Ki}",
			[]string{"in Payload mode gram.maxDescriptorLength must not exceed gram.slabBytes", "raise spec.gram.slabBytes"}},
		"transfer Offset descriptors longer than the slab accepted": {xfer, "blobRef: {name: b}\nmode: Offset\ngram: {slabBytes: 64Ki, maxDescriptorLength: 16Mi}", nil},
		// PfsTransfer: enums and bounds.
		"transfer mode missing": {xfer, `blobRef: {name: b}`,
			[]string{"spec.mode: Required value"}},
		"transfer unknown mode": {xfer, "blobRef: {name: b}\nmode: Teleport",
			[]string{"spec.mode", `Unsupported value: "Teleport"`, `"Payload", "Offset", "Arithmetic", "Delta"`}},
		"transfer unknown transport": {xfer, "blobRef: {name: b}\nmode: Offset\ntransport: QUIC",
			[]string{"spec.transport", `Unsupported value: "QUIC"`}},
		"transfer FNV over UDP": {xfer, "blobRef: {name: b}\nmode: Offset\ntransport: UDP\nintegrity: FNV1a64",
			[]string{"integrity FNV1a64 and None are available over TCP only", "set it to CRC32C"}},
		"transfer unknown integrity": {xfer, "blobRef: {name: b}\nmode: Offset\nintegrity: MD5",
			[]string{"spec.integrity", `Unsupported value: "MD5"`}},
		"transfer unknown numa policy": {xfer, "blobRef: {name: b}\nmode: Offset\nnuma: Sometimes",
			[]string{"spec.numa", `Unsupported value: "Sometimes"`}},
		"transfer range length 0": {xfer, "blobRef: {name: b}\nmode: Offset\nrange: {length: 0}",
			[]string{"spec.range.length", "range.length must be a whole number of bytes, at least 1"}},
		"transfer negative range offset": {xfer, "blobRef: {name: b}\nmode: Offset\nrange: {offset: -4Ki, length: 1Mi}",
			[]string{"spec.range.offset", "range.offset must be a whole number of bytes, 0 or more"}},
		"transfer range past 64Ti": {xfer, "blobRef: {name: b}\nmode: Offset\nrange: {offset: 63Ti, length: 2Ti}",
			[]string{"spec.range", "range ends past 64Ti"}},
		"transfer passes 0": {xfer, "blobRef: {name: b}\nmode: Offset\npasses: 0",
			[]string{"spec.passes", "greater than or equal to 1"}},
		"transfer totalBytes too small": {xfer, "blobRef: {name: b}\nmode: Offset\ntotalBytes: 4Ki",
			[]string{"spec.totalBytes", "totalBytes must be a whole number of bytes from 1Mi to 1Pi"}},
		"transfer descriptorsPerGram 0": {xfer, "blobRef: {name: b}\nmode: Offset\ngram: {descriptorsPerGram: 0}",
			[]string{"spec.gram.descriptorsPerGram", "greater than or equal to 1"}},
		"transfer descriptorsPerGram above 65536": {xfer, "blobRef: {name: b}\nmode: Offset\ngram: {descriptorsPerGram: 65537}",
			[]string{"spec.gram.descriptorsPerGram", "less than or equal to 65536"}},
		"transfer align not a power of two": {xfer, "blobRef: {name: b}\nmode: Offset\ngram: {align: 48}",
			[]string{"spec.gram.align", "Unsupported value: 48"}},
		"transfer slabBytes too small": {xfer, "blobRef: {name: b}\nmode: Offset\ngram: {slabBytes: 1Ki, maxDescriptorLength: 64}",
			[]string{"spec.gram.slabBytes", "gram.slabBytes must be a whole number of bytes from 4Ki to 64Mi"}},
		"transfer queues 0": {xfer, "blobRef: {name: b}\nmode: Offset\nsender: {queues: 0}",
			[]string{"spec.sender.queues", "greater than or equal to 1"}},
		"transfer resourceName without vendor": {xfer, "blobRef: {name: b}\nmode: Offset\nsender: {resourceName: pool}",
			[]string{"spec.sender.resourceName", "should match"}},
		"transfer network not a name": {xfer, "blobRef: {name: b}\nmode: Offset\nreceiver: {network: Bad_Net}",
			[]string{"spec.receiver.network", "should match"}},
		"transfer nodeName not a node name": {xfer, "blobRef: {name: b}\nmode: Offset\nsender: {nodeName: Node_1}",
			[]string{"spec.sender.nodeName", "should match"}},
		"transfer backoffLimit above 10": {xfer, "blobRef: {name: b}\nmode: Offset\nbackoffLimit: 11",
			[]string{"spec.backoffLimit", "less than or equal to 10"}},
		"transfer blobRef not a name": {xfer, "blobRef: {name: Big Blob}\nmode: Offset",
			[]string{"spec.blobRef.name", "should match"}},
		"transfer Payload without blob accepted":         {xfer, "mode: Payload\nrange: {length: 64Mi}", nil},
		"transfer range ending at 64Gi accepted":         {xfer, "blobRef: {name: b}\nmode: Offset\nrange: {offset: 63Gi, length: 1Gi}", nil},
		"transfer range past 4Gi in a 1Ti blob accepted": {xfer, "blobRef: {name: b}\nmode: Offset\nrange: {offset: 700Gi, length: 5Gi}", nil},
		"transfer range ending at 64Ti accepted":         {xfer, "blobRef: {name: b}\nmode: Offset\nrange: {offset: 63Ti, length: 1Ti}", nil},
		"transfer AFXDP with networks accepted":          {xfer, "blobRef: {name: b}\nmode: Arithmetic\ntransport: AFXDP\nsender: {network: ns1/xdp, resourceName: afxdp/pool}\nreceiver: {network: xdp, resourceName: intel.com/sriov_netdevice}", nil},

		// PfsTransfer endpoints with addresses for one shared NAD (static IPAM with the ips capability).
		"transfer endpoint ips accepted": {xfer,
			"blobRef: {name: b}\nmode: Offset\nsender: {network: datanet, ips: [192.168.79.1/24]}\nreceiver: {network: pfs-system/datanet, ips: [192.168.79.2/24, 'fd00::2/64']}", nil},
		"transfer ips without network": {xfer, "blobRef: {name: b}\nmode: Offset\nsender: {ips: [192.168.79.1/24]}",
			[]string{"spec.sender", "ips are the addresses of the endpoint's interface on network", "set network"}},
		"transfer ips without a prefix length": {xfer, "blobRef: {name: b}\nmode: Offset\nreceiver: {network: datanet, ips: [192.168.79.2]}",
			[]string{"spec.receiver.ips", "ips must be addresses with a prefix length, e.g. 192.168.77.1/24"}},
		"transfer ips not an address": {xfer, "blobRef: {name: b}\nmode: Offset\nreceiver: {network: datanet, ips: [node-a/24]}",
			[]string{"spec.receiver.ips", "ips must be addresses with a prefix length"}},
		"transfer five ips": {xfer, "blobRef: {name: b}\nmode: Offset\nreceiver: {network: datanet, ips: [10.0.0.1/8, 10.0.0.2/8, 10.0.0.3/8, 10.0.0.4/8, 10.0.0.5/8]}",
			[]string{"spec.receiver.ips", "must have at most 4 items"}},

		// PfsTransfer in mode Delta: the base is blobRef, the new version delta.sourceRef.
		"transfer Delta accepted": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}, zstdLevel: 19}", nil},
		"transfer Delta with the defaults spelled out accepted": {xfer,
			"blobRef: {name: old}\nmode: Delta\ntransport: TCP\nintegrity: CRC32C\ndelta: {sourceRef: {name: new}}\n" +
				"gram: {descriptorsPerGram: 1024, slabBytes: 1048576, maxDescriptorLength: 256Ki, align: 64}\nsender: {queues: 4}", nil},
		"transfer Delta without blobRef": {xfer, "mode: Delta\ndelta: {sourceRef: {name: new}}",
			[]string{"mode Delta needs blobRef, the base", "set spec.blobRef.name"}},
		"transfer Delta without delta": {xfer, "blobRef: {name: old}\nmode: Delta",
			[]string{"mode Delta needs delta.sourceRef", "set spec.delta.sourceRef.name"}},
		"transfer delta without mode Delta": {xfer, "blobRef: {name: old}\nmode: Offset\ndelta: {sourceRef: {name: new}}",
			[]string{"delta is only used with mode Delta: remove spec.delta"}},
		"transfer Delta against itself": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: old}}",
			[]string{"delta.sourceRef must name another PfsBlob than blobRef"}},
		"transfer Delta over UDP": {xfer, "blobRef: {name: old}\nmode: Delta\ntransport: UDP\ndelta: {sourceRef: {name: new}}",
			[]string{"mode Delta runs over TCP only for now", "set it to TCP"}},
		"transfer Delta with a range": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}\nrange: {length: 1Mi}",
			[]string{"range, passes and totalBytes do not apply in mode Delta", "remove spec.range"}},
		"transfer Delta with passes": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}\npasses: 2",
			[]string{"range, passes and totalBytes do not apply in mode Delta"}},
		"transfer Delta with totalBytes": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}\ntotalBytes: 1Gi",
			[]string{"range, passes and totalBytes do not apply in mode Delta"}},
		"transfer Delta with a gram": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}\ngram: {descriptorsPerGram: 64}",
			[]string{"gram does not apply in mode Delta", "remove spec.gram"}},
		"transfer Delta with a gram slab": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}\ngram: {slabBytes: 2Mi}",
			[]string{"gram does not apply in mode Delta"}},
		"transfer Delta with FNV": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}}\nintegrity: FNV1a64",
			[]string{"integrity does not apply in mode Delta", "sha256"}},
		"transfer Delta zstdLevel 0": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}, zstdLevel: 0}",
			[]string{"spec.delta.zstdLevel", "greater than or equal to 1"}},
		"transfer Delta zstdLevel 20": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: new}, zstdLevel: 20}",
			[]string{"spec.delta.zstdLevel", "less than or equal to 19"}},
		"transfer Delta sourceRef not a name": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {sourceRef: {name: New_1}}",
			[]string{"spec.delta.sourceRef.name", "should match"}},
		"transfer Delta sourceRef missing": {xfer, "blobRef: {name: old}\nmode: Delta\ndelta: {zstdLevel: 3}",
			[]string{"spec.delta.sourceRef: Required value"}},

		// PcoreJob.
		"job pcores 0": {pcj, "blobRef: {name: b}\nop: crc32c\npcores: 0",
			[]string{"spec.pcores", "greater than or equal to 1"}},
		"job pcores above 256": {pcj, "blobRef: {name: b}\nop: crc32c\npcores: 257",
			[]string{"spec.pcores", "less than or equal to 256"}},
		"job unknown op": {pcj, "blobRef: {name: b}\nop: popcount",
			[]string{"spec.op", `Unsupported value: "popcount"`, `"xor", "add", "counteq", "fnv", "crc32c"`}},
		"job op missing": {pcj, `blobRef: {name: b}`,
			[]string{"spec.op: Required value"}},
		"job blobRef missing": {pcj, `op: fnv`,
			[]string{"spec.blobRef: Required value"}},
		"job xor without imm": {pcj, "blobRef: {name: b}\nop: xor",
			[]string{"imm is required for op xor, add and counteq", "set spec.imm"}},
		"job crc32c with imm": {pcj, "blobRef: {name: b}\nop: crc32c\nimm: 1",
			[]string{"imm is not used by op fnv or crc32c: remove spec.imm"}},
		"job imm above 255": {pcj, "blobRef: {name: b}\nop: add\nimm: 256",
			[]string{"spec.imm", "less than or equal to 255"}},
		"job duration and passes": {pcj, "blobRef: {name: b}\nop: fnv\nduration: 10s\npasses: 3",
			[]string{"set either duration or passes, not both"}},
		"job duration below 1s": {pcj, "blobRef: {name: b}\nop: fnv\nduration: 500ms",
			[]string{"spec.duration", "duration must be from 1s to 1h"}},
		"job duration above 1h": {pcj, "blobRef: {name: b}\nop: fnv\nduration: 2h",
			[]string{"spec.duration", "duration must be from 1s to 1h"}},
		"job duration not a duration": {pcj, "blobRef: {name: b}\nop: fnv\nduration: ten seconds",
			[]string{"spec.duration", "should match"}},
		"job ringSlots not a power of two": {pcj, "blobRef: {name: b}\nop: fnv\nringSlots: 1000",
			[]string{"spec.ringSlots", "ringSlots must be a power of two from 64 to 1048576"}},
		"job descriptorsPerFrame 0": {pcj, "blobRef: {name: b}\nop: fnv\ndescriptorsPerFrame: 0",
			[]string{"spec.descriptorsPerFrame", "greater than or equal to 1"}},
		"job unknown baseline": {pcj, "blobRef: {name: b}\nop: fnv\nbaseline: Maybe",
			[]string{"spec.baseline", `Unsupported value: "Maybe"`}},
		"job range length 0": {pcj, "blobRef: {name: b}\nop: fnv\nrange: {length: 0}",
			[]string{"spec.range.length", "at least 1"}},
		"job counteq imm 0 accepted":    {pcj, "blobRef: {name: b}\nop: counteq\nimm: 0", nil},
		"job bounds accepted":           {pcj, "blobRef: {name: b}\nop: add\nimm: 255\npcores: 256\nringSlots: 1048576\nduration: 1h\ndescriptorsPerFrame: 4096", nil},
		"job fractional duration ok":    {pcj, "blobRef: {name: b}\nop: fnv\nduration: 1.5s", nil},
		"job compound duration ok":      {pcj, "blobRef: {name: b}\nop: fnv\nduration: 59m59s", nil},
		"job crc32c without imm ok":     {pcj, "blobRef: {name: b}\nop: crc32c\nrange: {offset: 1Mi, length: 1Mi}", nil},
		"job on whole blob accepted":    {pcj, "blobRef: {name: b}\nop: xor\nimm: 1", nil},
		"job duration exactly 1s is ok": {pcj, "blobRef: {name: b}\nop: fnv\nduration: 1s", nil},
	}

	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	rejected := 0
	for name, tc := range cases {
		if len(tc.want) > 0 {
			rejected++
		}
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.kind, ns, "", tc.spec)
			obj.SetGenerateName("v-")
			err := env.Client.Create(ctx, obj)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid %s rejected: %v", tc.kind, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("invalid %s accepted; want an error containing %q", tc.kind, tc.want)
			}
			t.Logf("rejected as expected: %v", err)
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
	if rejected < 15 {
		t.Errorf("only %d invalid objects in the table; the API contract asks for at least 15", rejected)
	}
}

// TestNameLength checks that names fit in a label value (63 characters).
func TestNameLength(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	specs := map[string]string{blob: "size: 1Gi", xfer: "blobRef: {name: b}\nmode: Offset", pcj: "blobRef: {name: b}\nop: fnv"}
	for kind, spec := range specs {
		t.Run(kind, func(t *testing.T) {
			long := strings.Repeat("n", 64)
			err := env.Client.Create(ctx, object(t, kind, ns, long, spec))
			if err == nil || !strings.Contains(err.Error(), "metadata.name must be at most 63 characters") {
				t.Errorf("a 64-character name: got %v, want the name length error", err)
			}
			if err := env.Client.Create(ctx, object(t, kind, ns, long[:63], spec)); err != nil {
				t.Errorf("a 63-character name was rejected: %v", err)
			}
		})
	}
}

// A blob cannot be its own base: the rule reads metadata.name.
func TestBlobBaseNotItself(t *testing.T) {
	ctx := testContext(t)
	ns := newNamespace(t, ctx)
	obj := object(t, blob, ns, "model-v2", "source: {persistentVolumeClaim: {claimName: data}}\nbase: {name: model-v2}")
	err := env.Client.Create(ctx, obj)
	if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.base names this blob itself") {
		t.Fatalf("want Invalid naming the self-reference, got %v", err)
	}
	ok := object(t, blob, ns, "model-v3", "source: {persistentVolumeClaim: {claimName: data}}\nbase: {name: model-v2}")
	if err := env.Client.Create(ctx, ok); err != nil {
		t.Fatalf("a blob with another base rejected: %v", err)
	}
}

// manyNamespaces is n distinct namespace names, comma separated, for a YAML
// flow list.
func manyNamespaces(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("ns-%d", i)
	}
	return strings.Join(names, ", ")
}
