package remote

// ListAll: every image under a registry prefix, from the registry's
// catalog (/v2/_catalog) and each repository's tags (tags/list), both
// paginated with Link headers, for `mirror --all` (as skopeo sync). What a
// registry answers here is input from outside: names are checked against
// the distribution grammar, pages and lists are bounded, and a next page
// must be on the same registry.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Bounds on what a registry's listing may be; beyond them it is refused.
var (
	// maxListPage is the bytes of one page of the catalog or a tag list.
	maxListPage int64 = 4 << 20
	// maxListEntries is the names of one page, and maxListPages the pages
	// of one listing.
	maxListEntries = 10000
	maxListPages   = 1000
	// maxImages is the images one ListAll may return, and the
	// repositories it may list.
	maxImages = 100000
	// maxListBytes bounds the bytes of all the pages of one ListAll
	// together: 100,000 names of 255 bytes are 26 MB.
	maxListBytes int64 = 64 << 20
	// maxNameLen is the longest repository name with its registry host
	// (distribution's NameTotalLengthMax).
	maxNameLen = 255
)

// listBudget is what is left of the bounds of one ListAll, shared by the
// catalog and every tag list: a registry cannot make a listing that never
// ends (10,000 repositories of 1,000 tag pages each) or that holds
// hundreds of MB before a name is refused.
type listBudget struct {
	names int   // repositories and images left
	bytes int64 // page bytes left
}

// pageSize is the n= a listing asks for.
const pageSize = 1000

var (
	// pathComponent is one component of a repository name (the
	// distribution spec's grammar): no "", ".", ".." or leading separator.
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	// tagName is a tag (the distribution spec's grammar).
	tagName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
)

// ListAll returns every image (REGISTRY/REPOSITORY:TAG) of the
// repositories under prefix (a registry host, or a host and a path: only
// repositories at or below that path), sorted. The catalog must be
// readable: registries that hide it (many hosted ones do) answer 401 or
// 404, and the error says so.
func ListAll(ctx context.Context, prefix string, opts ...Option) ([]string, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	prefix = strings.TrimRight(prefix, "/")
	if err := CheckPrefix(prefix); err != nil {
		return nil, err
	}
	host, path, _ := strings.Cut(prefix, "/")
	repo, err := o.parseRepository(host + "/probe")
	if err != nil {
		return nil, fmt.Errorf("prefix %q does not start with a registry host: %w", prefix, err)
	}
	reg := repo.Registry
	budget := &listBudget{names: maxImages, bytes: maxListBytes}
	repos, err := o.list(ctx, reg, "registry:catalog:*", "/v2/_catalog", "repositories", func(s string) error {
		// Checked as it arrives, so that a catalog of names no
		// registry can hold is refused at its first.
		if len(reg.RegistryStr())+1+len(s) > maxNameLen {
			return fmt.Errorf("repository name %.40q… is %d bytes long, more than a name may be (%d with the registry host)", s, len(s), maxNameLen)
		}
		for _, c := range strings.Split(s, "/") {
			if !pathComponent.MatchString(c) {
				return fmt.Errorf("repository name %q is not valid", s)
			}
		}
		return nil
	}, "", budget)
	if errors.Is(err, errListTooLarge) {
		return nil, fmt.Errorf("%s lists more than %d repositories, or more than %s of them: name a narrower prefix", reg.RegistryStr(), maxImages, units.Bytes(maxListBytes))
	}
	if err != nil {
		return nil, fmt.Errorf("listing the repositories of %s: %w", reg.RegistryStr(), err)
	}
	var out []string
	images := &listBudget{names: maxImages, bytes: budget.bytes}
	for _, r := range repos {
		if path != "" && r != path && !strings.HasPrefix(r, path+"/") {
			continue
		}
		rr, err := o.parseRepository(reg.RegistryStr() + "/" + r)
		if err != nil {
			return nil, fmt.Errorf("the catalog of %s names %q: %w", reg.RegistryStr(), r, err)
		}
		tags, err := o.list(ctx, reg, rr.Scope(transport.PullScope), "/v2/"+r+"/tags/list", "tags", func(s string) error {
			if !tagName.MatchString(s) {
				return fmt.Errorf("tag %q is not valid", s)
			}
			return nil
		}, r, images)
		if errors.Is(err, errListTooLarge) {
			return nil, fmt.Errorf("%s holds more than %d images under %s, or lists them in more than %s: name a narrower prefix", reg.RegistryStr(), maxImages, prefix, units.Bytes(maxListBytes))
		}
		if err != nil {
			return nil, fmt.Errorf("listing the tags of %s: %w", rr.Name(), err)
		}
		for _, t := range tags {
			out = append(out, rr.Name()+":"+t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CheckPrefix refuses a registry prefix (a host, or a host and a
// repository path) whose path breaks the distribution grammar, before any
// request is made for it.
func CheckPrefix(prefix string) error {
	host, path, _ := strings.Cut(strings.TrimRight(prefix, "/"), "/")
	if _, err := name.NewRegistry(host); err != nil || host == "" || strings.ContainsAny(host, " @") {
		return fmt.Errorf("prefix %q does not start with a registry host (as in localhost:5000/team)", prefix)
	}
	if path == "" {
		return nil
	}
	for _, c := range strings.Split(path, "/") {
		if !pathComponent.MatchString(c) {
			return fmt.Errorf("prefix %q is not a registry host and repository path: %q is not a valid path component (lower-case letters and digits, joined by '.', '_', '__' or '-')", prefix, c)
		}
	}
	return nil
}

// errListTooLarge is the error of a listing past its budget.
var errListTooLarge = errors.New("the listing is larger than its bounds")

// list reads a paginated listing at path of reg: the strings under key of
// each page, each checked with valid, without duplicates. A tag list must
// name repo as its "name". Each name and page byte is taken from budget;
// a page after the first must bring a name not seen, so that the pages of
// a listing are no more than its names.
func (o *options) list(ctx context.Context, reg name.Registry, scope, path, key string, valid func(string) error, repo string, budget *listBudget) ([]string, error) {
	auth, err := authn.Resolve(ctx, o.keychain, reg)
	if err != nil {
		return nil, fmt.Errorf("finding credentials for %s: %w", reg.RegistryStr(), err)
	}
	var rt http.RoundTripper
	err = retry(ctx, o.move.attempts, o.move.backoff, func() error {
		var err error
		rt, err = transport.NewWithContext(ctx, reg, auth, transport.NewUserAgent(plainLoopback{logRequests(o.guardedTransport())}, o.userAgent), []string{scope})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", reg.RegistryStr(), err)
	}
	c := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := &url.URL{Scheme: reg.Scheme(), Host: reg.RegistryStr(), Path: path}
	next := base.String() + fmt.Sprintf("?n=%d", pageSize)
	seenPage := map[string]bool{}
	seen := map[string]bool{}
	var out []string
	for pages := 0; next != ""; pages++ {
		if pages >= maxListPages {
			return nil, fmt.Errorf("the listing has more than %d pages; refused", maxListPages)
		}
		if seenPage[next] {
			return nil, fmt.Errorf("the listing's next page %s was already read (a loop); refused", redactURL(next))
		}
		seenPage[next] = true
		var page map[string]json.RawMessage
		var link string
		err := retry(ctx, o.move.attempts, o.move.backoff, func() error {
			resp, err := do(ctx, c, http.MethodGet, next, nil, 0, nil, http.StatusOK)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, min(maxListPage, budget.bytes)+1))
			if err != nil {
				return err
			}
			if int64(len(b)) > budget.bytes {
				return permanent(errListTooLarge)
			}
			if int64(len(b)) > maxListPage {
				return permanent(fmt.Errorf("a page is larger than %d bytes; refused", maxListPage))
			}
			budget.bytes -= int64(len(b))
			page = nil
			if err := json.Unmarshal(b, &page); err != nil {
				return permanent(fmt.Errorf("a page is not a JSON object: %w", err))
			}
			link = resp.Header.Get("Link")
			return nil
		})
		if err != nil {
			return nil, err
		}
		if repo != "" {
			var n string
			if err := json.Unmarshal(page["name"], &n); err != nil || n != repo {
				return nil, fmt.Errorf("the tag list names repository %q, not %q; refused", n, repo)
			}
		}
		var names []string
		if raw, ok := page[key]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &names); err != nil {
				return nil, fmt.Errorf("%q of a page is not a list of names: %w", key, err)
			}
		}
		if len(names) > maxListEntries {
			return nil, fmt.Errorf("a page lists %d names, more than %d; refused", len(names), maxListEntries)
		}
		fresh := 0
		for _, s := range names {
			if err := valid(s); err != nil {
				return nil, fmt.Errorf("%w; refused", err)
			}
			if !seen[s] {
				if budget.names--; budget.names < 0 {
					return nil, errListTooLarge
				}
				seen[s] = true
				out = append(out, s)
				fresh++
			}
		}
		if next, err = nextPage(base, link); err != nil {
			return nil, err
		}
		if next != "" && fresh == 0 && pages > 0 {
			return nil, fmt.Errorf("a page of the listing names nothing new, and another follows: refused")
		}
	}
	return out, nil
}

// nextPage reads the next page's URL from a Link header: it must stay on
// base's scheme, host and path (a registry cannot send us elsewhere).
func nextPage(base *url.URL, link string) (string, error) {
	if link == "" {
		return "", nil
	}
	var target string
	for _, part := range strings.Split(link, ",") {
		part = strings.TrimSpace(part)
		if !strings.Contains(part, `rel="next"`) && !strings.Contains(part, "rel=next") {
			continue
		}
		i, j := strings.IndexByte(part, '<'), strings.IndexByte(part, '>')
		if i < 0 || j < i {
			return "", fmt.Errorf("the Link header %q is malformed; refused", link)
		}
		target = part[i+1 : j]
	}
	if target == "" {
		return "", nil
	}
	u, err := base.Parse(target)
	if err != nil {
		return "", fmt.Errorf("the next page %q is not a URL; refused", target)
	}
	if u.Scheme != base.Scheme || u.Host != base.Host || u.Path != base.Path {
		return "", fmt.Errorf("the next page %s is not %s; refused", redactURL(u.String()), base.String())
	}
	return u.String(), nil
}
