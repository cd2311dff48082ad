package contract

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/model"
)

const validAnswer = `{"category":"billing","reason":"%s","evidence":["a"],"risk_flags":[],"suggested_action":"s","needs_human_review":false,"background":null}`

// TestValidateMemo: answers remembered as valid change no result —
// under any finish reason, for valid and invalid texts alike, from many
// goroutines at once — against the schema run on every call.
func TestValidateMemo(t *testing.T) {
	t.Parallel()
	c := loadTriage(t)
	var texts []string
	for i := range 200 {
		switch i % 4 {
		case 0:
			texts = append(texts, fmt.Sprintf(validAnswer, fmt.Sprint(i)))
		case 1:
			texts = append(texts, fmt.Sprintf(validAnswer, "same"))
		case 2:
			texts = append(texts, fmt.Sprintf(`{"category":"nope %d"}`, i))
		default:
			texts = append(texts, "not json")
		}
	}
	finishes := []string{"", model.FinishStop, model.FinishLength, model.FinishRefusal}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				text, finish := texts[(i*7+g)%len(texts)], finishes[(i+g)%len(finishes)]
				if got, want := c.Validate(text, finish), c.validate(text, finish); !reflect.DeepEqual(got, want) {
					t.Errorf("Validate(%q, %q) = %v; the schema says %v", text, finish, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	same := fmt.Sprintf(validAnswer, "same")
	if c.Validate(same, "") != nil || !c.valid.has(same, "") {
		t.Error("a valid answer just validated is not remembered")
	}
}
