package main

import "testing"

func TestNearestRank(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		p    float64
		want float64
	}{{0, 1}, {10, 1}, {11, 2}, {50, 5}, {90, 9}, {99, 10}, {100, 10}} {
		if got := nearestRank(xs, c.p); got != c.want {
			t.Errorf("nearestRank(1..10, %v): got %v; want %v", c.p, got, c.want)
		}
	}
}

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
