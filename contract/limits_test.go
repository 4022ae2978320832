package contract

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "4Gi": 4 << 30, "512M": 512 << 20, "2Ki": 2048, " 1Ti ": 1 << 40} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "4GB", "1.5Gi", "99999999999Ti"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = nil error", bad)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := DefaultLimits.Validate(); err != nil {
		t.Errorf("DefaultLimits.Validate() = %v", err)
	}
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("no limits: %v", err)
	}
	for _, bad := range []Limits{{MemoryBytes: 1 << 20}, {Pids: 5}, {CPUs: 0.01}, {MemoryBytes: -1}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil", bad)
		}
	}
}
