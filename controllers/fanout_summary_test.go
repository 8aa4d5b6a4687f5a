// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"

	pfsv1alpha1 "packetfs.io/operator/api/v1alpha1"
)

func TestPageAsAsked(t *testing.T) {
	const (
		p2M, p1G, thp, p4K = pfsv1alpha1.PageSize2Mi, pfsv1alpha1.PageSize1Gi, pfsv1alpha1.PageSizeTHP, pfsv1alpha1.PageSize4Ki
	)
	tests := map[string]struct {
		asked, got pfsv1alpha1.PageSize
		files      bool
		want       bool
	}{
		"flat, as asked":                    {p2M, p2M, false, true},
		"flat, 2Mi fell back to 4Ki":        {p2M, p4K, false, false},
		"flat, THP for 2Mi is a fallback":   {p2M, thp, false, false},
		"files, THP is what 2Mi asks for":   {p2M, thp, true, true},
		"files, THP is what 1Gi asks for":   {p1G, thp, true, true},
		"files, THP as asked":               {thp, thp, true, true},
		"files, 4Ki as asked":               {p4K, p4K, true, true},
		"files, no huge page is a fallback": {p2M, p4K, true, false},
		"files, THP when 4Ki asked is not":  {p4K, thp, true, false},
		"files, 1Gi asked, 4Ki is fallback": {p1G, p4K, true, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := pageAsAsked(tc.asked, tc.got, tc.files); got != tc.want {
				t.Errorf("pageAsAsked(%s, %s, files=%v) = %v, want %v", tc.asked, tc.got, tc.files, got, tc.want)
			}
		})
	}
}
