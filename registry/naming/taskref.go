package naming

import (
	"path"
	"strings"
)

// TaskOfRef is the task an image names: the last path component of its
// repository, as case/<dataset>/<task> and tool/<task> end (lowercased,
// as those names are). The tag or digest is left out.
func TaskOfRef(ref string) string {
	repo := ref
	if i := strings.IndexAny(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return path.Base(repo)
}
