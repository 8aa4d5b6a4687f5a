// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// relayFetch is a relay's result whose "fetch" member ends in FETCH, where
// each case puts its transport members: written by hand, because afxdp
// needs privileges and loss (NAKs, drops) a lossy link; TestGolden has
// the current pfs's tcp and udp relays.
const relayFetch = `{"ok":true,"cmd":"blob-create","blob":{"size":314572800,"page":"2M","fingerprint":"0x0123456789abcdef"},` +
	`"fetch":{"from":"10.0.0.1:7470","bytes":314572800,"seconds":0.9,"attempts":1,"verified":trueFETCH},` +
	`"manifest":{"kind":"file","files":1,"bytes":314000000,"sha256":"SHA","offset":314000000,"length":200}}`

func relayWith(fetch string) string {
	return withSHA(strings.Replace(relayFetch, "FETCH", fetch, 1))
}

func TestParseFetchTransport(t *testing.T) {
	type want struct {
		transport, path string
		dgrams          *Datagrams
	}
	tests := map[string]struct {
		fetch   string
		want    want
		wantErr string
	}{
		"udp": {fetch: `,"transport":"udp","path":"udp 1472B datagrams, GRO","dgrams":{"received":213847,"naks":17,"dropped":4}`,
			want: want{FetchUDP, "udp 1472B datagrams, GRO", &Datagrams{Received: 213847, NAKs: 17, Dropped: 4}}},
		"afxdp in copy mode": {fetch: `,"transport":"afxdp","path":"afxdp eth0 q0 generic XDP, copy mode","dgrams":{"received":213535,"naks":0,"dropped":0}`,
			want: want{FetchAFXDP, "afxdp eth0 q0 generic XDP, copy mode", &Datagrams{Received: 213535}}},
		"tcp says so":                      {fetch: `,"transport":"tcp","path":"tcp stream"`, want: want{FetchTCP, "tcp stream", nil}},
		"tcp from a TCP-only pfs":          {fetch: ``, want: want{transport: FetchTCP}},
		"counters a newer pfs adds":        {fetch: `,"transport":"udp","dgrams":{"received":5,"reordered":2}`, want: want{FetchUDP, "", &Datagrams{Received: 5}}},
		"an unknown transport":             {fetch: `,"transport":"quic"`, wantErr: `"fetch.transport": "quic" is not tcp, udp or afxdp`},
		"an upper-case transport":          {fetch: `,"transport":"UDP"`, wantErr: "is not tcp, udp or afxdp"},
		"a negative counter":               {fetch: `,"transport":"udp","dgrams":{"received":10,"naks":-1}`, wantErr: `"fetch.dgrams.naks": -1 is negative`},
		"a counter that is not a number":   {fetch: `,"transport":"udp","dgrams":{"naks":"many"}`, wantErr: "has the wrong type"},
		"a transport that is not a string": {fetch: `,"transport":2`, wantErr: "has the wrong type"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseBlobCreate(relayWith(tc.fetch))
			checkErr(t, err, tc.wantErr)
			if err != nil {
				return
			}
			f := got.Fetch
			if diff := cmp.Diff(tc.want, want{f.Transport, f.Path, f.Dgrams}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("fetch transport (-want +got):\n%s", diff)
			}
		})
	}
}
