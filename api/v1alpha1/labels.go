// SPDX-License-Identifier: Apache-2.0

package v1alpha1

// Benchmark labels come from the PacketFS taxonomy so that a run in a cluster
// reads the same as a run in the original write-ups.

// PcoreJobLabel is the label of every PcoreJob run: pcores execute offset
// descriptor schedules over the blob.
const PcoreJobLabel = "pCPU Offset-mode"

// TransferLabel returns the benchmark label of a transfer with the given mode
// and transport, e.g. "PFS-With-Payload-TCP", "Native PFS Offset-only Mode - UDP",
// "Native PFS Arithmetic Mode - AF_XDP" or "PFS-Delta-TCP". It returns "" for a mode or
// transport it does not know, so that a caller never prints a wrong label.
func TransferLabel(mode TransferMode, transport Transport) string {
	var wire string
	switch transport {
	case TransportTCP, TransportUDP:
		wire = string(transport)
	case TransportAFXDP:
		wire = "AF_XDP"
	default:
		return ""
	}
	switch mode {
	case ModePayload:
		return "PFS-With-Payload-" + wire
	case ModeOffset:
		return "Native PFS Offset-only Mode - " + wire
	case ModeArithmetic:
		return "Native PFS Arithmetic Mode - " + wire
	case ModeDelta:
		return "PFS-Delta-" + wire
	default:
		return ""
	}
}
