// SPDX-License-Identifier: Apache-2.0

package result

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The members of a relay that stepped aside and of the downstream that
// skipped it, as dataplane/tests/test_repl_slow.c's relays wrote them
// (a veth shaped to 8 Mbit/s); TestGolden's relays never step aside.
func TestParseStep(t *testing.T) {
	repl := `,"repl":{"listen":"10.44.142.2:7481","clients":1,"bytes_served":5242880,"refused":0,"retransmitted":0,"steps":1,` +
		`"stepped_aside":STEP}`
	step := `{"mark":51449856,"lag":46206976,"lag_start":6361088,"seconds":4.457,"downstream":"10.44.142.1:54188"}`
	tests := map[string]struct {
		fetch, repl string
		skipped     []string
		movedTo     string
		step        *StepAside
		wantErr     string
	}{
		"the relay that stepped aside": {
			fetch: `,"transport":"tcp","skipped":"","skipped_at":[],"moved_to":"10.44.142.1:7482","moved_at":52498432`,
			repl:  strings.Replace(repl, "STEP", step, 1), movedTo: "10.44.142.1:7482",
			step: &StepAside{Mark: 51449856, Lag: 46206976, LagStart: 6361088, Elapsed: 4457 * time.Millisecond, Downstream: "10.44.142.1:54188"}},
		"the downstream that skipped it": {
			fetch:   `,"transport":"tcp","skipped":"10.44.142.2:7481","skipped_at":[5242880],"moved_to":"","moved_at":0`,
			skipped: []string{"10.44.142.2:7481"}},
		"two skipped":                {fetch: `,"skipped":"a:1,b:2","skipped_at":[1,2]`, skipped: []string{"a:1", "b:2"}},
		"a pfs from before the rule": {fetch: ``},
		"a lag below its start": {fetch: ``, repl: strings.Replace(repl, "STEP", `{"mark":10,"lag":1,"lag_start":2,"seconds":1,"downstream":"x"}`, 1),
			wantErr: `"repl.stepped_aside.lag": 1 is below lag_start 2`},
		"no mark": {fetch: ``, repl: strings.Replace(repl, "STEP", `{"lag":1}`, 1), wantErr: "repl.stepped_aside.mark"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			msg := relayWith(tc.fetch)
			if tc.repl != "" {
				msg = strings.Replace(msg, `,"manifest"`, tc.repl+`,"manifest"`, 1)
			}
			got, err := ParseBlobCreate(msg)
			checkErr(t, err, tc.wantErr)
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.skipped, got.Fetch.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			if got.Fetch.MovedTo != tc.movedTo {
				t.Errorf("moved_to %q, want %q", got.Fetch.MovedTo, tc.movedTo)
			}
			var st *StepAside
			if got.Repl != nil {
				st = got.Repl.SteppedAside
			}
			if diff := cmp.Diff(tc.step, st); diff != "" {
				t.Errorf("stepped_aside (-want +got):\n%s", diff)
			}
		})
	}
}
