package sserun

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// hiddenPoC is a proof of concept with long lines, short ones, and bytes
// that are not UTF-8.
const hiddenPoC = "first line of the proof\n}\n\tpayload: AAAA\xff\xfe\x00 BBBB\nshort\n"

func TestPoCHider(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want string
		n    int
	}{
		{"the whole file", "=== p: exit 1\n" + hiddenPoC + "CRASH\n", "=== p: exit 1\n" + pocHiddenWhole + "\nCRASH\n", 1},
		{"its lines, in any order", "payload: AAAA\xff\xfe\x00 BBBB\nfirst line of the proof\n", pocHiddenLine + "\n" + pocHiddenLine + "\n", 2},
		{"a line inside another", "error near 'payload: AAAA\xff\xfe\x00 BBBB' at 3\n", "error near '" + pocHiddenLine + "' at 3\n", 1},
		{"a line indented otherwise", "    first line of the proof  \n", "    " + pocHiddenLine + "  \n", 1},
		{"short lines are left", "}\nshort\n", "}\nshort\n", 0},
		{"the end of a line cut at the front",
			"[ssebench: the first 10 bytes of output were cut]\nf the proof\nok\n",
			"[ssebench: the first 10 bytes of output were cut]\n" + pocHiddenLine + "\nok\n", 1},
		{"after a cut, a line of its own is left",
			"[ssebench: the first 10 bytes of output were cut]\nthe program's own words\n",
			"[ssebench: the first 10 bytes of output were cut]\nthe program's own words\n", 0},
		{"nothing of it", "all good\n", "all good\n", 0},
		{"nearly a line", "first line of the pro0f\n", "first line of the pro0f\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, exhausted := newPoCHider([][]byte{[]byte("unrelated second file\n"), []byte(hiddenPoC)}, len(tt.out)).hide([]byte(tt.out))
			if string(got) != tt.want || n != tt.n || exhausted {
				t.Errorf("hide(%q) = %q, %d, %t; want %q, %d, false", tt.out, got, n, exhausted, tt.want, tt.n)
			}
		})
	}
}

// TestPoCHiderBudget checks that an output too costly to check is
// withheld from there on, not shown unchecked.
func TestPoCHiderBudget(t *testing.T) {
	out := []byte("before\n" + strings.Repeat("first line of the proof\n", 10))
	h := newPoCHider([][]byte{[]byte(hiddenPoC)}, len(out))
	h.budget = 3 * len("first line of the proof")
	got, n, exhausted := h.hide(out)
	if !exhausted || bytes.Count(got, []byte("first line")) > 0 || !bytes.Contains(got, []byte("output is withheld")) || !bytes.HasPrefix(got, []byte("before\n")) {
		t.Errorf("hide() over budget = %q, %d, %t; want the rest withheld", got, n, exhausted)
	}
}

// TestPoCHiderLarge checks that a large proof of concept printed whole,
// then line by line, is hidden within the budget: 1 MiB of output, 40,000
// lines, many of which share their first 8 bytes.
func TestPoCHiderLarge(t *testing.T) {
	var poc, reversed bytes.Buffer
	for i := range 40000 {
		fmt.Fprintf(&poc, "AAAAAAAA%0*d\n", 1+i%7, i)
	}
	for i := 40000 - 1; i >= 0; i-- {
		fmt.Fprintf(&reversed, "AAAAAAAA%0*d\n", 1+i%7, i)
	}
	out := append(append([]byte(nil), poc.Bytes()...), reversed.Bytes()...)
	start := time.Now()
	got, n, exhausted := newPoCHider([][]byte{poc.Bytes()}, len(out)).hide(out)
	t.Logf("hid %d copies in %d bytes in %v", n, len(out), time.Since(start))
	if exhausted || bytes.Contains(got, []byte("AAAAAAAA")) || n != 1+40000 {
		t.Errorf("hide() = %d replaced, exhausted %t, PoC left: %t; want 40001 replaced and none left", n, exhausted, bytes.Contains(got, []byte("AAAAAAAA")))
	}
}

func BenchmarkPoCHiderWorstRun(b *testing.B) {
	// A fuzzer's proof of concept: long runs of one byte, as lines of
	// every length, up to what is read of it; the output a run of that
	// byte that matches none. It ends when the budget does.
	var poc bytes.Buffer
	for i := 0; poc.Len() < pocReadLimit; i++ {
		poc.WriteString(strings.Repeat("A", 8+i*23))
		poc.WriteString("B\n")
	}
	out := bytes.Repeat([]byte("A"), DefaultOutputLimit)
	for b.Loop() {
		newPoCHider([][]byte{poc.Bytes()}, len(out)).hide(out)
	}
}

// hidingTask is a fake task whose run script prints its proof of concept,
// as the agent's code in the run can, and sleeps, so that its duration
// is not 0.
func hidingTask(t *testing.T) *fakeTask {
	ft := newFakeTask(t, "good bug\n")
	write(t, filepath.Join(ft.root, "pocs", "crash.txt"), hiddenPoC+"crash\n", 0o644)
	write(t, filepath.Join(ft.root, "scripts", "run.sh"), `cat "$1"; echo "parse error near: $(sed -n 1p "$1")"; sleep 0.05; exit 3`, 0o755)
	return ft
}

// TestDaemonHidesPoCs runs run_pocs at each level with a run script that
// prints the proof of concept: the agent sees it at level 0 only, and at
// level 3 sees pass or fail and nothing it could time.
func TestDaemonHidesPoCs(t *testing.T) {
	hostile.Attack(t, "PoC leaked through run_pocs", "the PoC's content and lines replaced in run_pocs answers at levels 1 and 2, pass or fail alone at level 3")
	ft := hidingTask(t)
	lines := []string{"first line of the proof", "payload: AAAA\xff\xfe\x00 BBBB"}
	const note = "[ssebench: proof-of-concept content was replaced in this output, 2 times (difficulty "
	for level := range MaxDifficulty {
		t.Run(fmt.Sprint("level ", level), func(t *testing.T) {
			r := ft.daemon(t, WithDifficulty(level)).Handle(context.Background(), Request{Op: OpPoC}, false)
			if r.OK || r.Error != "" {
				t.Fatalf("run_pocs = %+v, want a failed run", r)
			}
			switch level {
			case 0:
				for _, l := range lines {
					if !strings.Contains(r.Output, l) {
						t.Errorf("level 0 output %q does not show the PoC's line %q", r.Output, l)
					}
				}
				if strings.Contains(r.Output, "[ssebench: ") {
					t.Errorf("level 0 output %q says something was replaced", r.Output)
				}
			case 1, 2:
				for _, l := range lines {
					if strings.Contains(r.Output, l) {
						t.Errorf("level %d output %q shows the PoC's line %q", level, r.Output, l)
					}
				}
				for _, want := range []string{"=== pocs/crash.txt: exit 3\n", "parse error near: " + pocHiddenLine + "\n", note + fmt.Sprint(level) + " "} {
					if !strings.Contains(r.Output, want) {
						t.Errorf("level %d output %q does not say %q", level, r.Output, want)
					}
				}
			case 3:
				if r.DurationMS != 0 || r.TimedOut || len(r.PoCs) != 1 || r.PoCs[0].Exit != nil || r.Output != "PoC 1: fail\n" {
					t.Errorf("level 3 answer = %+v, want pass/fail only, with no duration", r)
				}
			}
		})
	}
	// The grade's output, which only the host reads, is left whole.
	g := ft.daemon(t, WithDifficulty(2)).Handle(context.Background(), Request{Op: OpPoC}, true)
	if !strings.Contains(g.Output, lines[1]) || g.DurationMS == 0 {
		t.Errorf("admin run_pocs at level 2 = %+v, want the PoC's lines and the duration", g)
	}
}
