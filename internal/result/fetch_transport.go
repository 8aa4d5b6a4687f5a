// SPDX-License-Identifier: Apache-2.0

package result

import "fmt"

// A relay says in its "fetch" member how the bytes came (pfs
// --fetch-transport): "transport", a "path" describing the datapath and,
// over UDP and AF_XDP, the "dgrams" counters of its loss repair. A relay's
// result without "transport" is from a data plane that fetched over TCP only.

// Fetch transports as the CLI names them.
const (
	FetchTCP   = "tcp"
	FetchUDP   = "udp"
	FetchAFXDP = "afxdp"
)

// Datagrams counts a UDP or AF_XDP fetch's datagrams and their repair.
type Datagrams struct {
	// Received is how many data datagrams arrived.
	Received int64
	// NAKs is how many loss reports the relay sent upstream.
	NAKs int64
	// Dropped is how many arrived datagrams the relay discarded.
	Dropped int64
}

// parseFetchTransport fills f's Transport, Path and Dgrams from j.
func parseFetchTransport(j *fetchJSON, f *Fetch) error {
	f.Transport = FetchTCP
	if j.Transport != nil {
		switch *j.Transport {
		case FetchTCP, FetchUDP, FetchAFXDP:
			f.Transport = *j.Transport
		default:
			return fmt.Errorf("field \"fetch.transport\": %q is not tcp, udp or afxdp", *j.Transport)
		}
	}
	if j.Path != nil {
		f.Path = *j.Path
	}
	if j.Dgrams == nil {
		return nil
	}
	d := &Datagrams{}
	for _, c := range []struct {
		name string
		in   *int64
		out  *int64
	}{{"fetch.dgrams.received", j.Dgrams.Received, &d.Received},
		{"fetch.dgrams.naks", j.Dgrams.NAKs, &d.NAKs}, {"fetch.dgrams.dropped", j.Dgrams.Dropped, &d.Dropped}} {
		var err error
		if *c.out, err = count(c.name, c.in); err != nil {
			return err
		}
	}
	f.Dgrams = d
	return nil
}
