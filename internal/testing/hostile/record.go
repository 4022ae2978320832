package hostile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// SummaryEnv names the directory the outcomes go to.
const SummaryEnv = "SSEBENCH_HOSTILE_SUMMARY"

var mu sync.Mutex

// Case records t, a test of one hostile input, under class ("traversal",
// "gzip bomb", ...). Call it first in the case's subtest.
func Case(t testing.TB, class string) {
	t.Helper()
	dir := os.Getenv(SummaryEnv)
	if dir == "" {
		return
	}
	t.Cleanup(func() {
		res := outcome(t)
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%d.tsv", os.Getpid())), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("recording the hostile case: %v", err)
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s\t%s\t%s\n", clean(class), clean(t.Name()), res)
	})
}

// outcome is how t ended: pass, fail or skip.
func outcome(t testing.TB) string {
	switch {
	case t.Failed():
		return "fail"
	case t.Skipped():
		return "skip"
	}
	return "pass"
}

func clean(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }

// Row is one class of the summary.
type Row struct {
	Class                 string
	Cases, Passed, Failed int
}

// Summarize reads the outcomes in dir, by class in name order.
func Summarize(dir string) ([]Row, error) {
	rows := map[string]*Row{}
	err := eachLine(dir, "*.tsv", func(parts []string) {
		if len(parts) != 3 {
			return
		}
		r := rows[parts[0]]
		if r == nil {
			r = &Row{Class: parts[0]}
			rows[parts[0]] = r
		}
		r.Cases++
		switch parts[2] {
		case "pass":
			r.Passed++
		case "fail":
			r.Failed++
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out, nil
}

// eachLine calls fn with the tab-separated fields of every line of the
// files of dir that match pattern.
func eachLine(dir, pattern string, fn func([]string)) error {
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return err
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fn(strings.Split(sc.Text(), "\t"))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Print writes rows as a table with a total line.
func Print(w io.Writer, rows []Row) {
	width := len("class")
	for _, r := range rows {
		width = max(width, len(r.Class))
	}
	fmt.Fprintf(w, "%-*s  %5s  %6s  %6s\n", width, "class", "cases", "passed", "failed")
	var tc, tp, tf int
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s  %5d  %6d  %6d\n", width, r.Class, r.Cases, r.Passed, r.Failed)
		tc, tp, tf = tc+r.Cases, tp+r.Passed, tf+r.Failed
	}
	fmt.Fprintf(w, "%-*s  %5d  %6d  %6d\n", width, "total", tc, tp, tf)
}
