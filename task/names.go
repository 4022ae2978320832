package task

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// CheckID returns an error when id is not a valid task id (SPEC.md section
// 3: letters and digits separated by '.', '_', '__' or dashes, at most
// MaxIDLength characters). what names the value for the message
// ("--task"). An id becomes a path component of image names and folders,
// so "..", "/" and the empty id are refused with everything else.
func CheckID(what, id string) error {
	if ValidID(id) {
		return nil
	}
	return fmt.Errorf("%s %q is not a valid id: letters and digits separated by '.', '_', '__' or dashes, at most %d characters (no '/' or '..')", what, shortID(id), MaxIDLength)
}

func shortID(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

var (
	// refComponent is a repository path component of the distribution
	// spec: lowercase letters and digits separated by '.', '_', '__' or
	// dashes; so never "", "." or "..".
	refComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	refHost      = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?$`)
	refTag       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	refDigest    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// maxRefLength bounds a whole reference (the distribution spec's limit on
// repository names is 255; a host and a tag come on top).
const maxRefLength = 512

// CheckImageName returns an error when ref is not a plain image reference
// ("host[:port]/path/name[:tag][@sha256:…]" or "path/name[:tag]"): every
// path component must follow the distribution grammar, so no "..", no
// empty component, no upper case, no control characters. It is for names
// that come from files (the ref names inside a `load` archive, catalogs),
// before they are used as tags or paths.
func CheckImageName(ref string) error {
	bad := func(why string) error {
		return fmt.Errorf("image name %q is not a valid reference: %s", shortID(ref), why)
	}
	if ref == "" {
		return bad("it is empty")
	}
	if len(ref) > maxRefLength {
		return bad(fmt.Sprintf("it is %d characters long, more than %d", len(ref), maxRefLength))
	}
	for _, r := range ref {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return bad("it holds a space, a control or a non-ASCII character")
		}
	}
	rest := ref
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		if !refDigest.MatchString(rest[i+1:]) {
			return bad("the digest is not sha256:<64 hex digits>")
		}
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		if !refTag.MatchString(rest[i+1:]) {
			return bad(fmt.Sprintf("the tag %q is not valid", rest[i+1:]))
		}
		rest = rest[:i]
	}
	parts := strings.Split(rest, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		if !refHost.MatchString(parts[0]) {
			return bad(fmt.Sprintf("the host %q is not valid", parts[0]))
		}
		parts = parts[1:]
	}
	for _, p := range parts {
		if !refComponent.MatchString(p) {
			return bad(fmt.Sprintf("the path component %q is not lowercase letters and digits separated by '.', '_', '__' or dashes", p))
		}
	}
	return nil
}

// reservedSources are paths the tool layer or the runtime owns: SOURCE_DIR,
// which is re-owned to model, must be neither one of them nor inside one.
var reservedSources = []string{
	contract.TaskRoot, contract.RepoDir, contract.StateDir, contract.Entrypoint,
	contract.ModelHome, contract.Archive, "/proc", "/sys", "/dev", "/run", "/etc", "/boot",
}

// protectedTrees must not be inside SOURCE_DIR either: re-owning SOURCE_DIR
// would give model the reserved paths or the system's programs.
var protectedTrees = append([]string{"/bin", "/sbin", "/lib", "/lib64", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/local/bin"}, reservedSources...)

// ReservedSource says why the clean absolute path source cannot be a
// task's SOURCE_DIR ("is under /ssebench", "holds /usr/bin"), or "".
func ReservedSource(source string) string {
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	if source == "/" {
		return "is the root"
	}
	for _, r := range reservedSources {
		if under(source, r) {
			if source == r {
				return "is a path the tool image reserves"
			}
			return "is under " + r + ", which the tool image reserves"
		}
	}
	for _, p := range protectedTrees {
		if under(p, source) {
			return "holds " + p
		}
	}
	return ""
}
