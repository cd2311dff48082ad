package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

// TestLeanIDsMatchesEncodingJSON: whatever line leanIDs reads, it reads
// as encoding/json does, and it reads no line encoding/json refuses; on
// seeded lines made of the pieces recordings are made of and of the
// spellings encoding/json forgives.
func TestLeanIDsMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	members := []string{
		`"model":"m"`, `"model":"gpt-4o\u002dmini"`, `"model":"é"`, `"model":null`, `"model":1`,
		`"key":"abc"`, `"key":""`, `"key":"a\"b"`,
		`"task_id":"t1"`, `"task_id":"t\n2"`, `"task_id":"x\ud83d\ude00"`,
		`"seed":7`, `"seed":-3`, `"seed":1.5`, `"seed":1e3`, `"seed":99999999999999999999`, `"seed":null`,
		`"attempt":2`, `"attempt":"2"`,
		`"Model":"M"`, `"TASK_ID":"T"`, `"Seed":4`, `"modeL":"x"`,
		`"content":"{\"answer\":\"C\"}"`, `"usage":{"a":[1,2,{"b":null}]}`, `"correct":true`, `"cost":0.25`,
		`"bad":tru`, `"bad":01`, `"x":"` + "\x01" + `"`,
	}
	g := splitmix.New(35)
	read := 0
	for range 20000 {
		line := seededLine(g, members, 6)
		var want ids
		jerr := json.Unmarshal(line, &want)
		got, ok := leanIDs(line)
		switch {
		case ok && jerr != nil:
			t.Fatalf("leanIDs(%s) read %+v; encoding/json refuses it: %v", line, got, jerr)
		case ok && got != want:
			t.Fatalf("leanIDs(%s) = %+v; encoding/json reads %+v", line, got, want)
		case ok:
			read++
		}
	}
	if read < 2000 {
		t.Errorf("leanIDs read %d of 20000 lines; want it to read the plain ones", read)
	}
}

// seededLine is a JSON object of 1 to most members drawn from members,
// now and then followed by trailing text or white space.
func seededLine(g *splitmix.Rand, members []string, most int) []byte {
	var b strings.Builder
	b.WriteString("{")
	for i := range 1 + g.Mod(most) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(members[g.Mod(len(members))])
	}
	b.WriteString("}")
	switch g.Mod(20) {
	case 0:
		b.WriteString(" x")
	case 1:
		b.WriteString(" \n")
	}
	return []byte(b.String())
}
