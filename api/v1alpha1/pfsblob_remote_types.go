// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// S3BlobSource is one object, or every object beneath a prefix, in an
// S3-compatible store, read with ranged GETs pinned to each object's ETag
// (docs/design/remote-sources.md).
// +kubebuilder:validation:XValidation:rule="has(self.key) != has(self.prefix)",message="source.s3 needs exactly one of key (one object, a file) and prefix (every object beneath it, a directory)"
type S3BlobSource struct {
	// endpoint is the store's URL, https://host[:port]; requests are
	// path-style (ENDPOINT/BUCKET/KEY), which S3-compatible stores and AWS
	// take. http:// sends the signed requests and the bytes in the clear:
	// only for a store on a network you trust.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@ ]+/?$')",message="source.s3.endpoint is https://host[:port] (or http://), without a path, query or credentials"
	Endpoint string `json:"endpoint"`

	// bucket is the bucket's name.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`

	// key names one object, loaded as a file named after the key's last
	// part (e.g. models/llama/model.safetensors).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.endsWith('/')",message="source.s3.key names one object: a key ending in '/' is a prefix; set source.s3.prefix instead"
	Key string `json:"key,omitempty"`

	// prefix loads every object whose key starts with it, as a directory:
	// each object named by the rest of its key (e.g. prefix models/llama/
	// gives config.json, model-00001-of-00002.safetensors, ...). A '/' is
	// added when it does not end in one.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="source.s3.prefix is a key prefix without a leading '/' (e.g. models/llama/)"
	Prefix string `json:"prefix,omitempty"`

	// region is the SigV4 region; absent means us-east-1.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Region string `json:"region,omitempty"`

	// credentialsSecretRef names a Secret in the blob's namespace with the
	// keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and optionally
	// AWS_SESSION_TOKEN), mounted read-only into the containers that read
	// the store and no other. Absent means anonymous requests (a public
	// bucket).
	// +optional
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef,omitempty"`

	// caBundle is the CA bundle to trust for an https endpoint whose
	// certificate a public CA did not sign.
	// +optional
	CABundle *CABundleReference `json:"caBundle,omitempty"`

	// reads tunes the origin's ranged GETs; absent means 4 at once of 8Mi.
	// +optional
	Reads *RangedReads `json:"reads,omitempty"`
}

// HTTPBlobSource is one file, or files under a base URL, on a web server.
// +kubebuilder:validation:XValidation:rule="!has(self.files) || size(self.files) > 0",message="source.http.files lists names under source.http.url: list at least one, or remove files to load the URL itself"
type HTTPBlobSource struct {
	// url is the file (named after its last path segment), or with files
	// the base URL they are under. Redirects are followed (at most five),
	// and the headers of headersSecretRef are sent to this URL's server
	// only, never to where a redirect leads.
	// +required
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#@ ]+(/[^ ]*)?$')",message="source.http.url is an http:// or https:// URL without credentials (put a token in headersSecretRef) and without spaces"
	URL string `json:"url"`

	// files are names relative to url, loaded as a directory (e.g.
	// config.json, tokenizer.json, model.safetensors).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	Files []SourceFileName `json:"files,omitempty"`

	// headersSecretRef names a Secret in the blob's namespace whose key
	// "headers" holds "Name: value" lines sent with every request to url's
	// server (e.g. "Authorization: Bearer ..."), mounted read-only into the
	// containers that read it and no other.
	// +optional
	HeadersSecretRef *SecretReference `json:"headersSecretRef,omitempty"`

	// caBundle is the CA bundle to trust for https.
	// +optional
	CABundle *CABundleReference `json:"caBundle,omitempty"`

	// reads tunes the origin's ranged GETs (when the server takes ranges;
	// otherwise each file is one GET); absent means 4 at once of 8Mi.
	// +optional
	Reads *RangedReads `json:"reads,omitempty"`
}

// RangedReads is how the origin reads a source in a store: concurrency
// ranged GETs in flight, each on its own kept-alive connection and each
// of rangeSize bytes, written straight into the blob. More in flight hides
// a store's per-request latency; larger ranges cost fewer requests but
// more to fetch again when one fails for good.
type RangedReads struct {
	// concurrency is how many ranged GETs are in flight at once, 1 to 16;
	// absent means 4.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Concurrency *int32 `json:"concurrency,omitempty"`

	// rangeSize is the bytes each GET asks for, a multiple of 4Ki from 64Ki
	// to 256Mi; absent means 8Mi.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isInteger() && quantity(string(self)).compareTo(quantity('64Ki')) >= 0 && quantity(string(self)).compareTo(quantity('256Mi')) <= 0 && quantity(string(self)).asInteger() % 4096 == 0)",message="reads.rangeSize must be a multiple of 4Ki from 64Ki to 256Mi (e.g. 16Mi)"
	RangeSize *resource.Quantity `json:"rangeSize,omitempty"`
}

// OCIBlobSource is an artifact or an image in an OCI registry (the
// distribution API v2), pulled by the origin's init container alone.
type OCIBlobSource struct {
	// reference is REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST,
	// with the registry spelled out (e.g. registry.example:5000/models/llama:v1).
	// A digest pins the content; a tag is resolved once, by the scan, and
	// the origin pulls the manifest the scan saw.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9.-]+(:[0-9]+)?/[a-z0-9]+([._/-][a-z0-9]+)*(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}|@sha256:[a-f0-9]{64})$')",message="source.oci.reference is REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST (e.g. registry.example:5000/models/llama:v1); a lowercase repository"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([^/]*[.:][^/]*|localhost)/')",message="source.oci.reference must start with the registry (a host with a '.' or a port, or localhost), e.g. registry.example/models/llama:v1: there is no default registry"
	Reference string `json:"reference"` //nolint:kubeapilinter // noreferences: named as Kubernetes' own image volume (ImageVolumeSource.reference), which users know

	// pullSecretRef names a Secret of type kubernetes.io/dockerconfigjson
	// in the blob's namespace (the key .dockerconfigjson, as an image pull
	// secret), mounted read-only into the containers that read the
	// registry and no other. Absent means anonymous pulls (with a token
	// when the registry asks for one).
	// +optional
	PullSecretRef *SecretReference `json:"pullSecretRef,omitempty"`

	// path keeps, of an image's tar layers, only the files beneath this
	// directory of the image, named relative to it (e.g. /models for a
	// KServe ModelCar image: /models/config.json becomes config.json).
	// Absent means every file of the image. Layers that are files (titled
	// layers) are not affected.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//') && !self.contains(',')",message="source.oci.path is a directory of the image (e.g. /models): no '.' or '..' part, no empty part, no ','"
	Path string `json:"path,omitempty"`

	// protocol is HTTPS (the default) or HTTP, for a registry on a network
	// you trust that serves no TLS.
	// +optional
	// +kubebuilder:default=HTTPS
	Protocol RegistryProtocol `json:"protocol,omitempty"`

	// caBundle is the CA bundle to trust for the registry (and the storage
	// it redirects blob reads to).
	// +optional
	CABundle *CABundleReference `json:"caBundle,omitempty"`

	// reads tunes the origin's ranged GETs of the layers; absent means 4 at
	// once of 8Mi.
	// +optional
	Reads *RangedReads `json:"reads,omitempty"`
}

// RegistryProtocol is how a registry is spoken to.
// +kubebuilder:validation:Enum=HTTPS;HTTP
type RegistryProtocol string

const (
	// RegistryHTTPS speaks TLS, verified against the CA bundle.
	RegistryHTTPS RegistryProtocol = "HTTPS"
	// RegistryHTTP speaks plain HTTP.
	RegistryHTTP RegistryProtocol = "HTTP"
)

// SourceFileName is a file's name relative to a base URL, and its name in
// the blob's manifest (e.g. tokenizer.json, 1_Pooling/config.json).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/') && !self.contains(',') && !self.contains('//') && !self.matches('(^|/)[.][.]?(/|$)')",message="source.http.files are relative names (e.g. a/b.json): no leading or trailing '/', no empty, '.' or '..' part, no ','"
type SourceFileName string

// SecretReference names a Secret in the referring object's namespace.
type SecretReference struct {
	// name is the Secret's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// CABundleReference is a PEM bundle in a ConfigMap of the referring
// object's namespace.
type CABundleReference struct {
	// configMapName is the ConfigMap's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ConfigMapName string `json:"configMapName"`

	// key is the ConfigMap's key holding the bundle; absent means ca.crt.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}
