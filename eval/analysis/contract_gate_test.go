package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// contractRecs builds a baseline and a candidate that pass the same four
// tasks, each record naming the given contract hashes ("" for none).
func contractRecs(baseContract, candContract string) []Record {
	var recs []Record
	for i := range 4 {
		r := mkRec("baseline", fmt.Sprint("t", i+1), 100, OutcomeOK, true, 10)
		r.Contract = baseContract
		recs = append(recs, r)
	}
	for i := range 4 {
		r := mkRec("cand", fmt.Sprint("t", i+1), 50, OutcomeOK, true, 5)
		r.Contract = candContract
		recs = append(recs, r)
	}
	return recs
}

func TestContractChangeGate(t *testing.T) {
	t.Parallel()
	const a, b = "aaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbb"
	tests := []struct {
		name        string
		recs        []Record
		allow       bool
		wantVerdict string
		wantReason  string // substring of some reason; "" for none about the contract
		wantWarning string // substring of some warning; "" for none about the contract
		wantChange  string // substring of WhatWouldChange
	}{
		{name: "same contract", recs: contractRecs(a, a), wantVerdict: VerdictAccept},
		{name: "no contract on either side", recs: contractRecs("", ""), wantVerdict: VerdictAccept},
		{name: "different contract", recs: contractRecs(a, b), wantVerdict: VerdictReject,
			wantReason:  "ran different work: validated against contract bbbbbbbbbbbb vs aaaaaaaaaaaa for baseline",
			wantWarning: "cand: validated against contract bbbbbbbbbbbb vs aaaaaaaaaaaa for baseline: the comparison is of different work",
			wantChange:  "the baseline's contract"},
		{name: "different contract allowed", recs: contractRecs(a, b), allow: true, wantVerdict: VerdictAccept,
			wantWarning: "compared anyway because the contract change was allowed"},
		{name: "candidate names none", recs: contractRecs(a, ""), wantVerdict: VerdictAccept,
			wantWarning: "cand's records name no contract, baseline's name aaaaaaaaaaaa: cannot tell"},
		{name: "mixed contracts in the candidate", recs: func() []Record {
			r := contractRecs(a, a)
			r[7].Contract = b
			return r
		}(), wantVerdict: VerdictReject, wantReason: "contract aaaaaaaaaaaa+bbbbbbbbbbbb vs aaaaaaaaaaaa", wantWarning: "the comparison is of different work"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := summarizeRecs(tt.recs, Options{Gate: netGate(), AllowContractChange: tt.allow})
			if err != nil {
				t.Fatal(err)
			}
			cand := s.Arms[1]
			if cand.Verdict != tt.wantVerdict {
				t.Errorf("verdict %s; want %s (reasons %q)", cand.Verdict, tt.wantVerdict, cand.Reasons)
			}
			hasContract := func(list []string, want string) bool {
				if want == "" {
					return !slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, "contract") })
				}
				return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, want) })
			}
			if !hasContract(cand.Reasons, tt.wantReason) {
				t.Errorf("reasons %q; want one containing %q", cand.Reasons, tt.wantReason)
			}
			if !hasContract(s.Decision.Warnings, tt.wantWarning) {
				t.Errorf("warnings %q; want one containing %q", s.Decision.Warnings, tt.wantWarning)
			}
			if tt.wantChange != "" && !strings.Contains(s.Decision.WhatWouldChange["cand"], tt.wantChange) {
				t.Errorf("what would change %q; want it to contain %q", s.Decision.WhatWouldChange["cand"], tt.wantChange)
			}
		})
	}
}

func TestArmContracts(t *testing.T) {
	t.Parallel()
	recs := contractRecs("h2", "h1")
	recs[1].Contract = "h1"
	recs[2].Contract = ""
	s, err := summarizeRecs(recs, Options{AllowContractChange: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Arms[0].Contracts, []string{"h1", "h2"}; !slices.Equal(got, want) {
		t.Errorf("baseline contracts %q; want %q (distinct, sorted, empty left out)", got, want)
	}
	if got, want := s.Arms[1].Contracts, []string{"h1"}; !slices.Equal(got, want) {
		t.Errorf("candidate contracts %q; want %q", got, want)
	}
}
