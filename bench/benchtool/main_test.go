package main

import "testing"

func TestLoadTasksDistinctIDs(t *testing.T) {
	all, err := loadTasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 400 {
		t.Fatalf("got %d embedded tasks; want at least 400", len(all))
	}
	seen := map[string]bool{}
	for _, tk := range all {
		id := tk.str("id")
		if id == "" || seen[id] {
			t.Fatalf("task id %q empty or repeated", id)
		}
		seen[id] = true
	}
}
