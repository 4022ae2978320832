package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"kvconf-12-afb9ee1", "libqs-3-b2a739e", "dummy"}
	for in, want := range map[string]string{
		"kvconf-12-afb9ee": "kvconf-12-afb9ee1",
		"LIBQS-3-B2A739E":  "libqs-3-b2a739e",
		"dumy":             "dummy",
	} {
		if got := Closest(in, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Closest("x", nil); got != "" {
		t.Errorf("Closest of nothing = %q, want \"\"", got)
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", d)
	}
}
