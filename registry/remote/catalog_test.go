package remote

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// fakeCatalog serves a catalog in pages and the tags of each repository;
// pages maps "/v2/_catalog" (and "/v2/<repo>/tags/list") to successive
// pages: a body and a Link header.
type fakePage struct{ body, link string }

func fakeRegistry(t *testing.T, pages map[string][]fakePage) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		ps := pages[r.URL.Path]
		i := 0
		fmt.Sscan(r.URL.Query().Get("page"), &i)
		if i >= len(ps) {
			http.NotFound(w, r)
			return
		}
		if ps[i].link != "" {
			w.Header().Set("Link", ps[i].link)
		}
		w.Write([]byte(ps[i].body))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func tags(repo string, ts ...string) []fakePage {
	return []fakePage{{body: fmt.Sprintf(`{"name":%q,"tags":["%s"]}`, repo, strings.Join(ts, `","`))}}
}

// TestListAll reads a paginated catalog, keeps only the repositories
// under the prefix and lists their tags.
func TestListAll(t *testing.T) {
	host := fakeRegistry(t, map[string][]fakePage{
		"/v2/_catalog": {
			{body: `{"repositories":["other/x","team/a","team/a/b"]}`, link: `</v2/_catalog?page=1&n=1000>; rel="next"`},
			{body: `{"repositories":["team/c","teamx/d"]}`},
		},
		"/v2/team/a/tags/list":   tags("team/a", "v1", "v2"),
		"/v2/team/a/b/tags/list": tags("team/a/b", "latest"),
		"/v2/team/c/tags/list":   {{body: `{"name":"team/c","tags":null}`}},
	})
	got, err := ListAll(context.Background(), host+"/team", withRetries(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{host + "/team/a/b:latest", host + "/team/a:v1", host + "/team/a:v2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListAll = %v, want %v", got, want)
	}
}

// TestListAllHostile: a catalog or tag list that names what cannot be a
// repository or tag, sends the next page elsewhere, loops or is too large
// is refused with one line.
func TestListAllHostile(t *testing.T) {
	huge := `{"repositories":["team/a"],"pad":"` + strings.Repeat("x", int(maxListPage)) + `"}`
	many := make([]string, maxListEntries+1)
	for i := range many {
		many[i] = fmt.Sprintf(`"team/r%d"`, i)
	}
	tests := []struct {
		name  string
		pages map[string][]fakePage
		want  string
	}{
		{"dot-dot repository", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":["team/../etc"]}`}}}, "not valid"},
		{"dot-dot outside the prefix", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":["../team/a"]}`}}}, "not valid"},
		{"empty segment", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":["team//a"]}`}}}, "not valid"},
		{"upper case and spaces", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":["team/A b"]}`}}}, "not valid"},
		{"control character", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":["team/a\n"]}`}}}, "not valid"},
		{"huge page", map[string][]fakePage{"/v2/_catalog": {{body: huge}}}, "larger than"},
		{"too many names", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":[` + strings.Join(many, ",") + `]}`}}}, "more than"},
		{"next page on another host", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":[]}`, link: `<http://evil.example/v2/_catalog?page=1>; rel="next"`}}}, "is not http"},
		{"next page on another path", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":[]}`, link: `</v2/team/a/manifests/x?page=1>; rel="next"`}}}, "is not http"},
		{"next page loops", map[string][]fakePage{"/v2/_catalog": {{body: `{"repositories":[]}`, link: `</v2/_catalog?n=1000>; rel="next"`}}}, "loop"},
		{"not JSON", map[string][]fakePage{"/v2/_catalog": {{body: `<html>`}}}, "not a JSON object"},
		{"tag list of another repository", map[string][]fakePage{
			"/v2/_catalog":         {{body: `{"repositories":["team/a"]}`}},
			"/v2/team/a/tags/list": tags("team/b", "v1"),
		}, "not \"team/a\""},
		{"tag with a slash", map[string][]fakePage{
			"/v2/_catalog":         {{body: `{"repositories":["team/a"]}`}},
			"/v2/team/a/tags/list": tags("team/a", "../../b"),
		}, "not valid"},
		{"tag too long", map[string][]fakePage{
			"/v2/_catalog":         {{body: `{"repositories":["team/a"]}`}},
			"/v2/team/a/tags/list": tags("team/a", strings.Repeat("t", 129)),
		}, "not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hostile.Case(t, "registry: catalog of mirror --all")
			host := fakeRegistry(t, tt.pages)
			got, err := ListAll(context.Background(), host+"/team", withRetries(1, 0))
			if err == nil {
				t.Fatalf("ListAll = %v, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error = %q, want one line with %q", err, tt.want)
			}
		})
	}
}
