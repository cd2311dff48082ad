package jsonw

import (
	"strings"
	"testing"
)

// benchAnswer is a typical contract answer, as the lean decoders see it.
const benchAnswer = `{"category":"billing","reason":"The customer questions a charge or an invoice: the ticket describes an amount, payment or invoice detail that they believe is wrong.","evidence":["My invoice is wrong, charged twice"],"risk_flags":[],"suggested_action":"Draft for agent confirmation: review the disputed charge and issue a corrected invoice.","needs_human_review":false}`

func BenchmarkString(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"plain", `"` + strings.Repeat("plain text ", 30) + `"`},
		{"utf8", `"` + strings.Repeat("grüße 日本 ", 30) + `"`},
		{"escaped", `"` + strings.Repeat(`line \"q\"\n`, 30) + `"`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for b.Loop() {
				l := New(bc.in, 0)
				if _, ok := l.String(); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}

func BenchmarkSkip(b *testing.B) {
	b.SetBytes(int64(len(benchAnswer)))
	b.ReportAllocs()
	for b.Loop() {
		l := New(benchAnswer, 0)
		if !l.Skip(512) || !l.End() {
			b.Fatal("refused")
		}
	}
}

func BenchmarkObject(b *testing.B) {
	b.SetBytes(int64(len(benchAnswer)))
	b.ReportAllocs()
	for b.Loop() {
		l := New(benchAnswer, PlainKeys)
		n := 0
		if !l.Object(func(string) bool { n++; return l.Skip(512) }) || n != 6 {
			b.Fatal("refused")
		}
	}
}

func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat("ticket <b>&</b> naïve \"q\"\n", 16)
	for _, bc := range []struct {
		name string
		html bool
	}{{"html", true}, {"no-html", false}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, 2*len(s))
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendString(buf[:0], s, bc.html)
			}
		})
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendFloat(buf[:0], 0.002049, 64)
		buf = AppendFloat(buf, 1e-7, 64)
		buf = AppendFloat(buf, float64(float32(0.7)), 32)
	}
}
