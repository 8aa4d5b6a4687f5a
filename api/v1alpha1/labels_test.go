// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "testing"

func TestTransferLabel(t *testing.T) {
	cases := map[string]struct {
		mode      TransferMode
		transport Transport
		want      string
	}{
		"payload tcp":       {ModePayload, TransportTCP, "PFS-With-Payload-TCP"},
		"payload udp":       {ModePayload, TransportUDP, "PFS-With-Payload-UDP"},
		"offset tcp":        {ModeOffset, TransportTCP, "Native PFS Offset-only Mode - TCP"},
		"offset udp":        {ModeOffset, TransportUDP, "Native PFS Offset-only Mode - UDP"},
		"arithmetic tcp":    {ModeArithmetic, TransportTCP, "Native PFS Arithmetic Mode - TCP"},
		"arithmetic afxdp":  {ModeArithmetic, TransportAFXDP, "Native PFS Arithmetic Mode - AF_XDP"},
		"offset afxdp":      {ModeOffset, TransportAFXDP, "Native PFS Offset-only Mode - AF_XDP"},
		"delta tcp":         {ModeDelta, TransportTCP, "PFS-Delta-TCP"},
		"unknown mode":      {TransferMode("Teleport"), TransportTCP, ""},
		"unknown transport": {ModeOffset, Transport("QUIC"), ""},
		"empty":             {"", "", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := TransferLabel(tc.mode, tc.transport); got != tc.want {
				t.Errorf("TransferLabel(%q, %q) = %q, want %q", tc.mode, tc.transport, got, tc.want)
			}
		})
	}
}

func TestPhaseIsTerminal(t *testing.T) {
	for p, want := range map[Phase]bool{
		PhasePending: false, PhasePlacing: false, PhaseRunning: false,
		PhaseSucceeded: true, PhaseFailed: true, "": false,
	} {
		if got := p.IsTerminal(); got != want {
			t.Errorf("Phase(%q).IsTerminal() = %v, want %v", p, got, want)
		}
	}
}

func TestPcoreOpUsesImm(t *testing.T) {
	for op, want := range map[PcoreOp]bool{
		OpXor: true, OpAdd: true, OpCountEq: true, OpFNV: false, OpCRC32C: false,
	} {
		if got := op.UsesImm(); got != want {
			t.Errorf("PcoreOp(%q).UsesImm() = %v, want %v", op, got, want)
		}
	}
}
