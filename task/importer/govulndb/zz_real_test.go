package govulndb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readDir(t *testing.T, dir string, test bool) map[string][]byte {
	m := map[string][]byte{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") != test {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, n))
		m[n] = b
	}
	return m
}

func TestZZReal(t *testing.T) {
	for _, c := range strings.Split(os.Getenv("REAL"), ";") {
		f := strings.Split(c, ",") // path,buggydir,fixeddir,sub
		sub := "."
		if len(f) > 3 {
			sub = f[3]
		}
		pf := pkgFiles{Path: f[0], Dir: sub, Buggy: readDir(t, filepath.Join(f[1], sub), false), Fixed: readDir(t, filepath.Join(f[2], sub), false), Tests: readDir(t, filepath.Join(f[2], sub), true)}
		got, err := analyzeFix([]pkgFiles{pf})
		fmt.Println("=====", f[0], err)
		if err != nil {
			continue
		}
		fmt.Printf("Needed: %+v\nUnstubbable: %+v\nMessages: %q\nPrivate: %+v\n", got.Needed, got.Unstubbable, got.Messages, got.Private)
		for _, s := range got.Stubs {
			fmt.Printf("--- stub %s/%s\n%s", s.Dir, s.Name, s.Src)
		}
		fmt.Println("--- issue\n" + got.IssueText())
		var priv []string
		for _, p := range got.Private {
			priv = append(priv, p.Key)
		}
		if len(priv) > 0 {
			v, err := renameVariant(pf.Fixed, priv, "")
			fmt.Println("--- variant", priv, err)
			if os.Getenv("OUT") != "" && err == nil {
				out := filepath.Join(os.Getenv("OUT"), filepath.Base(f[0]))
				os.MkdirAll(out, 0o755)
				for n, b := range v {
					os.WriteFile(filepath.Join(out, n), b, 0o644)
				}
			}
		}
	}
}
