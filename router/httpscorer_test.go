package router_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/router"
)

// The HTTP scorer posts the request and reads its score; every kind of
// failure scores the fallback and is counted.
func TestHTTPScorer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Text  string      `json:"text"`
			Scope model.Scope `json:"scope"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		switch in.Text {
		case "ok":
			w.Write([]byte(`{"score": 0.25}`))
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
		case "out of range":
			w.Write([]byte(`{"score": 7}`))
		case "slow":
			<-r.Context().Done() // never answers: the scorer's timeout ends the call
			return
		default:
			w.Write([]byte(`not json`))
		}
	}))
	defer srv.Close()
	fb := 0.9
	// A generous timeout for the answers, so a loaded machine cannot turn
	// the good one into a timeout; a short one for the scorer that hangs.
	s, err := router.NewHTTPScorer(router.HTTPScorerConfig{URL: srv.URL, Timeout: 10 * time.Second, Fallback: &fb})
	if err != nil {
		t.Fatal(err)
	}
	short, err := router.NewHTTPScorer(router.HTTPScorerConfig{URL: srv.URL, Timeout: 50 * time.Millisecond, Fallback: &fb})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    *router.HTTPScorer
		text string
		want float64
	}{{s, "ok", 0.25}, {s, "500", 0.9}, {s, "out of range", 0.9}, {s, "garbage", 0.9}, {short, "slow", 0.9}} {
		if got := tc.s.Score(&model.Request{Text: tc.text, Scope: model.Scope{Lang: "fr"}}).Value; got != tc.want {
			t.Errorf("%s: score %v; want %v", tc.text, got, tc.want)
		}
	}
	if st := s.Stats(); st.Calls != 4 || st.Fallbacks != 3 {
		t.Errorf("stats %+v; want 4 calls, 3 fallbacks", st)
	}
	if st := short.Stats(); st.Calls != 1 || st.Fallbacks != 1 {
		t.Errorf("timed-out scorer's stats %+v; want 1 call, 1 fallback", st)
	}
	if _, err := router.NewHTTPScorer(router.HTTPScorerConfig{URL: "ftp://x"}); err == nil {
		t.Error("an ftp URL was accepted")
	}
	if sc, err := router.OpenScorer(srv.URL); err != nil {
		t.Errorf("OpenScorer(URL): %v", err)
	} else if _, ok := sc.(*router.HTTPScorer); !ok {
		t.Errorf("OpenScorer(URL) = %T; want *HTTPScorer", sc)
	}
}

func FuzzParseScorerFile(f *testing.F) {
	f.Add([]byte(`{"format":"crab.scorer/v1","kind":"logistic","buckets":4,"dense_mean":[0,0,0,0,0,0,0,0],"dense_scale":[1,1,1,1,1,1,1,1],"dense":[0,0,0,0,0,0,0,0],"hashed":{"1":0.5}}`))
	f.Add([]byte(`{"format": 3}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := router.ParseScorerFile("f.json", raw)
		if err != nil {
			return
		}
		if v := s.Score(&model.Request{Text: "a b c"}).Value; !(v >= 0 && v <= 1) {
			t.Fatalf("score %v outside [0,1]", v)
		}
	})
}
