// SPDX-License-Identifier: Apache-2.0

package podspec

import (
	"strconv"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
	"packetfs.io/operator/internal/placement"
)

// The pods of a Delta transfer (`pfs send/recv --mode delta`, TCP only).
// The sender maps the base (spec.blobRef) and the source
// (spec.delta.sourceRef) from their holders on its node and encodes the
// source against the base; the receiver maps the base from its node's
// holder, or runs with --no-base when the base is not Ready there (the
// sender then encodes against an empty base: a compressed full copy), and
// rebuilds the source in its own memory.

// deltaEncoderMemory is the Delta sender's working memory besides a copy
// of the source's size (the encoder's index and buffers).
const deltaEncoderMemory = 64 << 20

// deltaApplierMemory is the receiver's working memory per applier thread
// besides the target: two grams in flight (4 MiB of blob each, at most
// that compressed) and zstd's decompression context.
const deltaApplierMemory = 16 << 20

// endpointThreads is an endpoint's queues as a thread count, at least 1.
func endpointThreads(e pfsv1alpha1.Endpoint) int32 {
	if e.Queues < 1 {
		return 1
	}
	return e.Queues
}

// deltaReceiver is the receiving side of a Delta transfer: it rebuilds the
// source in memory (its size is requested, and --max-size refuses a larger
// one), from the base on its node or from nothing, on receiver.queues
// applier threads.
func deltaReceiver(x *pfsv1alpha1.PfsTransfer, in TransferInputs) transferSide {
	args := recvArgs(x)
	side := transferSide{component: ComponentReceiver, ep: x.Spec.Receiver}
	if in.Delta.ReceiverHasBase() && in.Blob != nil {
		args = append(args, blobConsumerArgs(x.Namespace, in.Blob.Name)...)
		side.blob, side.nodes = in.Blob, in.Delta.ReceiverNodes
	} else {
		args = append(args, "--no-base")
	}
	if n := sourceBytes(in); n > 0 {
		args = append(args, "--max-size", strconv.FormatInt(n, 10))
		side.memory = n
	}
	// Appliers on the receiver's queues (its whole CPUs), as the sender's
	// encoders on its own.
	threads := endpointThreads(x.Spec.Receiver)
	args = append(args, "--delta-threads", strconv.Itoa(int(threads)))
	side.memory += int64(threads) * deltaApplierMemory
	side.args = append(args, "--result-file", TerminationLog)
	return side
}

// deltaSender is the sending side of a Delta transfer: it reads the base
// and the source from their holders and encodes on sender.queues threads,
// in working memory of the source's size plus deltaEncoderMemory.
func deltaSender(x *pfsv1alpha1.PfsTransfer, in TransferInputs, addr placement.Address) transferSide {
	args := []string{"send",
		"--connect", addr.HostPort(ReceiverPort),
		"--mode", cliMode(x.Spec.Mode),
		"--transport", cliTransport(x.Spec.Transport),
	}
	side := transferSide{component: ComponentSender, ep: x.Spec.Sender, nodes: in.Delta.SenderNodes}
	if in.Blob != nil {
		args = append(args, blobConsumerArgs(x.Namespace, in.Blob.Name)...)
		side.blob = in.Blob
	}
	if in.Source != nil {
		args = append(args, "--src-blob-socket", SocketPath(x.Namespace, in.Source.Name), "--src-blob-token-file", SourceTokenFile)
		side.source = in.Source
	}
	if d := x.Spec.Delta; d != nil && d.ZstdLevel > 0 {
		args = append(args, "--zstd-level", strconv.Itoa(int(d.ZstdLevel)))
	}
	args = append(args, "--delta-threads", strconv.Itoa(int(endpointThreads(x.Spec.Sender))))
	side.memory = sourceBytes(in) + deltaEncoderMemory
	side.args = append(args, "--result-file", TerminationLog)
	return side
}

// blobAlign is the unit every blob's size is rounded up to by pfs, whatever
// its pages (PFS_BLOB_ALIGN in the data plane's pfs/blob.h).
const blobAlign = 2 << 20

// sourceBytes is the size of a Delta transfer's source blob as its holder
// maps it: what the data plane sends, whole (a blob loaded from files is its
// files, its manifest and zeros up to the next 2 MiB; status.size counts only
// the files and the manifest); 0 when unknown.
func sourceBytes(in TransferInputs) int64 {
	if in.Source == nil {
		return 0
	}
	return roundUp(in.Source.EffectiveSize(), blobAlign)
}
