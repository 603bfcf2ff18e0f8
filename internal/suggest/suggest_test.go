package suggest

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"qed", "logp", "osimertinib_mpo", "perindopril_mpo", "zaleplon_mpo", "budget", "rules"}
	for _, c := range []struct{ in, want string }{
		{"qde", "qed"},
		{"QED", "qed"},
		{"osimertinib", "osimertinib_mpo"},
		{"perindopril_mop", "perindopril_mpo"},
		{"budgte", "budget"},
		{"rule", "rules"},
		{"xyzzy", ""},
		{"", ""},
	} {
		if got := Closest(c.in, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Closest("qed", nil); got != "" {
		t.Errorf("no names: %q", got)
	}
}
