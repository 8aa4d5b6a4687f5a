// SPDX-License-Identifier: Apache-2.0

package result

import (
	"fmt"
	"strings"
	"time"
)

// A relay too slow to relay steps aside (docs/design/fanout.md "A slow
// relay"): it sends its downstreams STEP, they go on from their next
// upstream, and it finishes from the chain's tail. Its result says why
// (repl.stepped_aside) and where it went (fetch.moved_to); a downstream's
// says whom it skipped (fetch.skipped).

// StepAside is why a relay stepped aside: its first STEP's numbers.
type StepAside struct {
	// Mark is the relay's own fill watermark then; Lag how far behind it
	// the downstream's stream was, LagStart how far when that stream began.
	Mark, Lag, LagStart int64
	// Elapsed is how long that stream had run.
	Elapsed time.Duration
	// Downstream is the downstream's address.
	Downstream string
}

// parseFetchStep fills f's Skipped and MovedTo from j.
func parseFetchStep(j *fetchJSON, f *Fetch) {
	if j.Skipped != nil && *j.Skipped != "" {
		f.Skipped = strings.Split(*j.Skipped, ",")
	}
	if j.MovedTo != nil {
		f.MovedTo = *j.MovedTo
	}
}

func parseReplStep(j *replStepJSON) (*StepAside, error) {
	var m missing
	m.need(j.Mark != nil, "repl.stepped_aside.mark")
	m.need(j.Lag != nil, "repl.stepped_aside.lag")
	if err := m.err("blob create"); err != nil {
		return nil, err
	}
	s := &StepAside{}
	var err error
	for _, f := range []struct {
		name string
		in   *int64
		out  *int64
	}{{"repl.stepped_aside.mark", j.Mark, &s.Mark}, {"repl.stepped_aside.lag", j.Lag, &s.Lag},
		{"repl.stepped_aside.lag_start", j.LagStart, &s.LagStart}} {
		if *f.out, err = count(f.name, f.in); err != nil {
			return nil, err
		}
	}
	if s.Elapsed, err = duration("repl.stepped_aside.seconds", j.Seconds); err != nil {
		return nil, err
	}
	if j.Downstream != nil {
		s.Downstream = *j.Downstream
	}
	if s.Lag < s.LagStart {
		return nil, fmt.Errorf("field \"repl.stepped_aside.lag\": %d is below lag_start %d", s.Lag, s.LagStart)
	}
	return s, nil
}
