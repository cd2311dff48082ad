package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// TestRecordsRotate: records.jsonl is rotated at max_file_bytes and only
// max_files rotated files are kept, so the disk used stays bounded; every
// file kept reads back as records; answer text is written only with
// answers: true; a records.jsonl left by an earlier run is moved aside,
// not appended to.
func TestRecordsRotate(t *testing.T) {
	t.Parallel()
	for _, answers := range []bool{false, true} {
		t.Run(fmt.Sprint("answers=", answers), func(t *testing.T) {
			t.Parallel()
			_, url := newFakeUpstream(t, nil)
			cfg := fmt.Sprintf("records: {dir: recs, max_file_bytes: 4000, max_files: 2, answers: %v}\n", answers)
			s, ps, _ := proxyOver(t, url, cfg)
			dir := s.recs.dir
			os.WriteFile(filepath.Join(dir, "records.jsonl"), []byte("{}\n"), 0o644) // as if left by a crash: rotated aside at the next start
			for i := range 60 {
				if r := post(t, ps.URL, "sk-acme", chatBody("large", fmt.Sprint(ticket, i), false, ""), nil); r.status != 200 {
					t.Fatalf("request %d: %d %s", i, r.status, r.body)
				}
			}
			s.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "records*.jsonl"))
			if len(files) != 3 {
				t.Fatalf("files %v; want records.jsonl and 2 rotated ones", files)
			}
			total := 0
			for _, f := range files {
				st, _ := os.Stat(f)
				if st.Size() > 4000+1000 {
					t.Errorf("%s holds %d bytes; want about max_file_bytes (4000) at most", f, st.Size())
				}
				set, err := records.ReadSet([]string{f}, nil)
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				total += set.Len()
				raw, _ := os.ReadFile(f)
				if got := strings.Contains(string(raw), `"output"`); got != answers {
					t.Errorf("%s: answer text written %v; want %v", f, got, answers)
				}
			}
			if total == 0 || total >= 60 {
				t.Errorf("%d records kept of 60; want the newest ones only (older files deleted)", total)
			}
		})
	}
}
