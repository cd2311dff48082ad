package eval

import (
	"encoding/json"
	"strings"
	"testing"
)

// answerCases are answers with whether the scanner must read them itself.
var answerCases = []struct {
	name    string
	content string
	lean    bool
}{
	{"answer", `{"category":"billing","reason":"r \"q\" \u00e9","evidence":["a","b"],"risk_flags":[],"suggested_action":"s","needs_human_review":false,"background":null}`, true},
	{"review true", `{"needs_human_review":true,"category":"account"}`, true},
	{"review null", `{"category":"x","needs_human_review":null}`, true},
	{"category null", `{"category":null}`, true},
	{"empty object", ` { } `, true},
	{"nested values", `{"a":{"b":[1,-2.5e3,true,false,null,{"c":"\ud800"}]},"category":"grüße"}`, true},
	{"numbers", `{"n":[0,-0,1.5,1E+2,2e-3],"category":"c"}`, true},
	{"invalid utf8 elsewhere", "{\"reason\":\"\xff\",\"category\":\"c\"}", true},
	{"escaped category", `{"category":"bill\u0069ng"}`, false},
	{"invalid utf8 category", "{\"category\":\"\xff\"}", false},
	{"key in other case", `{"Category":"billing"}`, false},
	{"both cases", `{"category":"a","CATEGORY":"b"}`, false},
	{"repeated category", `{"category":"a","category":"b"}`, false},
	{"repeated review", `{"needs_human_review":true,"needs_human_review":null}`, false},
	{"escaped key", `{"c\u0061tegory":"billing"}`, false},
	{"category number", `{"category":5}`, false},
	{"review string", `{"needs_human_review":"yes"}`, false},
	{"array", `["billing"]`, false},
	{"null", `null`, false},
	{"string", `"billing"`, false},
	{"empty", ``, false},
	{"truncated", `{"category":"billing"`, false},
	{"trailing data", `{"category":"billing"} x`, false},
	{"trailing comma", `{"category":"billing",}`, false},
	{"bad number", `{"n":01,"category":"c"}`, false},
	{"bad escape elsewhere", `{"r":"\x","category":"c"}`, false},
	{"control char elsewhere", "{\"r\":\"a\x01\",\"category\":\"c\"}", false},
	{"too deep", `{"a":` + strings.Repeat("[", maxAnswerDepth+1) + strings.Repeat("]", maxAnswerDepth+1) + `}`, false},
}

// TestAnswerFieldsMatchesUnmarshal: answerFields means what json.Unmarshal
// into the judge's struct means, and reads plain answers itself.
func TestAnswerFieldsMatchesUnmarshal(t *testing.T) {
	t.Parallel()
	for _, tc := range answerCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, _, handled := scanAnswer(tc.content); handled != tc.lean {
				t.Errorf("scanAnswer handled = %v; want %v", handled, tc.lean)
			}
			checkAnswerFields(t, tc.content)
		})
	}
}

func checkAnswerFields(t *testing.T, content string) {
	t.Helper()
	var a struct {
		Category         string `json:"category"`
		NeedsHumanReview *bool  `json:"needs_human_review"`
	}
	werr := json.Unmarshal([]byte(content), &a)
	cat, review, ok := answerFields(content)
	if ok != (werr == nil) {
		t.Fatalf("answerFields(%q): ok = %v; json.Unmarshal error %v", content, ok, werr)
	}
	if !ok {
		return
	}
	if cat != a.Category || (review == nil) != (a.NeedsHumanReview == nil) || (review != nil && *review != *a.NeedsHumanReview) {
		t.Fatalf("answerFields(%q): got %q, %v; want %q, %v", content, cat, review, a.Category, a.NeedsHumanReview)
	}
}

// FuzzAnswerFields: whatever the answer, answerFields agrees with
// json.Unmarshal.
func FuzzAnswerFields(f *testing.F) {
	for _, tc := range answerCases {
		f.Add(tc.content)
	}
	f.Fuzz(func(t *testing.T, content string) {
		checkAnswerFields(t, content)
	})
}

// BenchmarkAnswerFields measures the judge's reading of an answer: the
// scanner and json.Unmarshal.
func BenchmarkAnswerFields(b *testing.B) {
	content := `{"category":"billing","reason":"The customer questions a charge or an invoice: the ticket describes an amount, payment or invoice detail that they believe is wrong.","evidence":["My invoice is wrong, charged twice"],"risk_flags":[],"suggested_action":"Draft for agent confirmation: review the disputed charge and issue a corrected invoice.","needs_human_review":false}`
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c, _, ok := answerFields(content); !ok || c != "billing" {
				b.Fatal(c, ok)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a struct {
				Category         string `json:"category"`
				NeedsHumanReview *bool  `json:"needs_human_review"`
			}
			if err := json.Unmarshal([]byte(content), &a); err != nil || a.Category != "billing" {
				b.Fatal(err)
			}
		}
	})
}
