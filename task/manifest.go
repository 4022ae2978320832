package task

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// Manifest is a dataset's manifest.json (SPEC.md section 11): the
// machine-readable list of its tasks, which a catalog serves.
//
// Field order and JSON names follow the original implementation's file, so
// that a manifest it wrote reads back and re-renders byte for byte.
type Manifest struct {
	Dataset string `json:"dataset"`
	Version string `json:"version"`
	// GeneratedFrom is the commit of the repository the manifest was
	// generated from, when recorded (the original writes it on request).
	GeneratedFrom string         `json:"generated_from,omitempty"`
	Tasks         []ManifestTask `json:"tasks"`
}

// ManifestTask is one task of a manifest.
type ManifestTask struct {
	ID         string `json:"id"`
	Language   string `json:"language"`
	Project    string `json:"project"`
	Repository string `json:"repository"`
	// Base is the Dockerfile's last FROM without the registry prefix.
	Base string `json:"base"`
	// Image is the case image relative to the registry; see CaseImage.
	Image string `json:"image"`
	// Arch lists the architectures the task runs on (amd64, arm64), in
	// order of preference.
	Arch []string `json:"arch"`
	// Checks are the grader's checks for the task; see Config.Checks.
	Checks []string `json:"checks"`
	// Files maps every file of the task folder to its SHA-256; see Files.
	Files map[string]string `json:"files"`
	// Metadata is the task's config, with every key present.
	Metadata Config `json:"metadata"`
}

// DefaultManifestArch is the arch a new task gets in a generated manifest.
// The folder does not say which architectures a task works on, and case
// images are built and verified for amd64 first (many C tasks build with
// AddressSanitizer for x86-64), as the original generator assumes; a
// maintainer who verifies arm64 adds it to the manifest, and regeneration
// keeps what the manifest on disk says.
var DefaultManifestArch = []string{ArchAMD64}

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Manifest generates the dataset's manifest: one entry per task, sorted by
// id, with the SHA-256 of every file of each task folder. A task's arch is
// taken from the manifest.json that was on disk when the dataset was
// loaded, else it is DefaultManifestArch. GeneratedFrom is left empty.
func (d *Dataset) Manifest() (*Manifest, error) {
	m := &Manifest{Dataset: d.Name, Version: d.Version, Tasks: []ManifestTask{}}
	for _, t := range d.Tasks {
		files, err := t.Files()
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		if err := checkFileNames(files); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.ID, err)
		}
		m.Tasks = append(m.Tasks, d.manifestTask(t, files))
	}
	slices.SortFunc(m.Tasks, func(a, b ManifestTask) int { return strings.Compare(a.ID, b.ID) })
	return m, nil
}

// manifestTask is the manifest entry of t, with files.
func (d *Dataset) manifestTask(t *Task, files map[string]string) ManifestTask {
	arch := slices.Clone(DefaultManifestArch)
	if e := d.recorded.Task(t.ID); e != nil {
		arch = slices.Clone(e.Arch)
	}
	return ManifestTask{
		ID:         t.ID,
		Language:   t.Config.Language,
		Project:    t.Config.Project,
		Repository: t.Config.Repository,
		Base:       t.Base,
		Image:      t.Image(d.Name),
		Arch:       arch,
		Checks:     t.Checks(),
		Files:      files,
		Metadata:   *t.Config,
	}
}

// checkFileNames refuses a task file whose name is not UTF-8: a JSON key
// can hold only UTF-8, so encoding/json would write every such name as the
// same "\ufffd" key (two files, one entry, and a manifest that never reads
// back as generated).
func checkFileNames(files map[string]string) error {
	var bad []string
	for p := range files {
		if !utf8.ValidString(p) {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	more := ""
	if len(bad) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(bad)-1)
	}
	return fmt.Errorf("task file %q%s: its name is not UTF-8, which manifest.json cannot hold: rename it", bad[0], more)
}

// Task returns the entry with the given id, or nil. A nil manifest has no
// entries.
func (m *Manifest) Task(id string) *ManifestTask {
	if m == nil {
		return nil
	}
	for i := range m.Tasks {
		if m.Tasks[i].ID == id {
			return &m.Tasks[i]
		}
	}
	return nil
}

// Marshal renders the manifest as JSON with a 2-space indent and a final
// newline. The same manifest always renders to the same bytes (map keys
// sorted, HTML characters not escaped, as Python's json.dumps(indent=2,
// ensure_ascii=False) writes it; only U+2028 and U+2029, which Go escapes,
// could differ).
func (m *Manifest) Marshal() ([]byte, error) { return marshalIndent(m) }

func marshalIndent(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil // Encode ends with a newline
}

// WriteManifest writes m to dir/manifest.json, replacing it atomically.
func WriteManifest(dir string, m *Manifest) error {
	data, err := m.Marshal()
	if err != nil {
		return fmt.Errorf("rendering manifest: %w", err)
	}
	return safefile.WriteBytes(filepath.Join(dir, ManifestFile), data, 0o644)
}

// ReadManifest reads and checks a manifest file. A missing file gives an
// error that matches fs.ErrNotExist. Unknown fields are errors, as are
// entries that are not sorted by id, an arch that is empty or names an
// architecture other than amd64 and arm64, and files whose SHA-256 is not
// 64 lowercase hex digits. Errors start with path.
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManifest(path, data)
}

// ParseManifest parses and checks a manifest's bytes, as ReadManifest
// does; errors start with name (where the bytes came from).
func ParseManifest(path string, data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a valid manifest: %w", path, err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

func (m *Manifest) check() error {
	var errs []error
	if m.Dataset == "" {
		errs = append(errs, errors.New("dataset: is required"))
	} else if err := CheckID("dataset:", m.Dataset); err != nil {
		// The dataset becomes a path component of image names.
		errs = append(errs, err)
	}
	if !ValidVersion(m.Version) {
		errs = append(errs, fmt.Errorf("version: %q is not a valid dataset version", m.Version))
	}
	lower := map[string]string{} // lowercased id → the id
	for i, t := range m.Tasks {
		// An id from a catalog is a task folder's name to the rest of
		// ssebench (an image name's component, a results folder, a line
		// on a terminal): the same grammar, or the catalog is refused
		// before any of its other messages prints the id.
		if err := CheckID(fmt.Sprintf("tasks[%d].id:", i), t.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		// The image is the one the id and dataset name, nothing else: a
		// catalog cannot send a pull to another repository.
		if want := CaseImage(m.Dataset, t.ID); t.Image != want {
			errs = append(errs, fmt.Errorf("tasks[%s].image: %q is not the task's case image %s", t.ID, t.Image, want))
		}
		if i > 0 && m.Tasks[i-1].ID >= t.ID {
			errs = append(errs, fmt.Errorf("tasks: not sorted by id, or %s appears twice", t.ID))
		} else if other, ok := lower[strings.ToLower(t.ID)]; ok {
			// Image names are lower case: both would be one case and
			// one tool image, as a dataset folder refuses too.
			errs = append(errs, fmt.Errorf("tasks: %s and %s differ only in case: they would share the case image %s", other, t.ID, CaseImage(m.Dataset, t.ID)))
		}
		lower[strings.ToLower(t.ID)] = t.ID
		if err := CheckArches(t.Arch); err != nil {
			errs = append(errs, fmt.Errorf("tasks[%s].arch: %w", t.ID, err))
		}
		for _, p := range sortedKeys(t.Files) {
			if !hexSHA256.MatchString(t.Files[p]) {
				errs = append(errs, fmt.Errorf("tasks[%s].files[%q]: %q is not a SHA-256", t.ID, p, t.Files[p]))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// CheckManifest compares dir/manifest.json with the manifest generated from
// the dataset folder and returns one problem per difference: a missing
// file, each task added or removed, and each field, file hash and metadata
// key that differs, by its path in the JSON (such as
// tasks[gjson-196-bf4efcb].files["sse/config.yaml"]). When the content is
// the same but the bytes differ, it reports that the formatting differs.
// No problems means the file is up to date. The error is for a dataset that
// cannot be loaded (a [Problems] from [LoadDataset]) or read.
//
// The recorded generated_from, which no folder holds, is not compared.
func CheckManifest(dir string) (Problems, error) {
	d, err := LoadDataset(dir)
	if err != nil {
		return nil, err
	}
	name := filepath.Join(dir, ManifestFile)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Problems{{File: name, Msg: "missing: generate it"}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	defer f.Close()
	from := ""
	if d.recorded != nil {
		from = d.recorded.GeneratedFrom
	}
	// The manifest is generated into a comparison with the file, a hash
	// at a time, and stops at the first byte that differs: nothing of
	// either is held.
	same := &sameBytes{r: bufio.NewReaderSize(f, 256<<10)}
	err = d.writeManifest(same, from)
	if err == nil && same.atEnd() {
		return nil, nil
	}
	if err != nil && !errors.Is(err, errDiffer) {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > maxDetailedDiff {
		// Saying which fields differ takes both documents in memory.
		return Problems{{File: name, Msg: fmt.Sprintf("differs from what the dataset gives from line %d on: regenerate it", same.line)}}, nil
	}
	want, err := d.Manifest()
	if err != nil {
		return nil, err
	}
	want.GeneratedFrom = from
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	wantData, err := want.Marshal()
	if err != nil {
		return nil, fmt.Errorf("rendering manifest: %w", err)
	}
	if bytes.Equal(data, wantData) {
		return nil, nil
	}

	var ps Problems
	add := func(at, msg string) { ps = append(ps, Problem{File: name, Msg: at + ": " + msg}) }
	got, err := decodeGeneric(data)
	if err != nil {
		return Problems{{File: name, Msg: fmt.Sprintf("not valid JSON: %v", err)}}, nil
	}
	wantAny, err := decodeGeneric(wantData)
	if err != nil {
		return nil, err
	}
	diffJSON("", wantAny, got, add)
	if len(ps) == 0 {
		ps = append(ps, Problem{File: name, Msg: "same content, but not formatted as generated: regenerate it"})
	}
	return ps, nil
}

func decodeGeneric(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// maxDetailedDiff is the largest manifest file CheckManifest says field by
// field how it differs; beyond, it says where.
const maxDetailedDiff = 16 << 20

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func joinJSONPath(at, key string) string {
	if identifier.MatchString(key) {
		if at == "" {
			return key
		}
		return at + "." + key
	}
	return fmt.Sprintf("%s[%q]", at, key)
}

// diffJSON reports how got (the file) differs from want (generated), by
// JSON path. The tasks list is matched by id, so that one task more or
// less does not make every later task differ.
func diffJSON(at string, want, got any, add func(at, msg string)) {
	label := at
	if label == "" {
		label = "the manifest"
	}
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := sortedKeys(wm)
		for _, k := range sortedKeys(gm) {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := joinJSONPath(at, k)
			wv, win := wm[k]
			gv, gin := gm[k]
			switch {
			case !gin:
				add(p, fmt.Sprintf("missing from the file (generated: %s)", short(wv)))
			case !win:
				add(p, fmt.Sprintf("in the file (%s) but not generated from the dataset", short(gv)))
			case at == "" && k == "tasks":
				diffTasks(wv, gv, add)
			default:
				diffJSON(p, wv, gv, add)
			}
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		add(label, fmt.Sprintf("the file has %s, the dataset gives %s", short(got), short(want)))
	}
}

func diffTasks(want, got any, add func(at, msg string)) {
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if !wok || !gok {
		diffJSON("tasks", want, got, add)
		return
	}
	index := func(l []any) ([]string, map[string]any) {
		var ids []string
		byID := map[string]any{}
		for _, t := range l {
			id, _ := t.(map[string]any)["id"].(string)
			ids = append(ids, id)
			byID[id] = t
		}
		return ids, byID
	}
	wids, wby := index(wl)
	gids, gby := index(gl)
	if !slices.IsSorted(gids) {
		add("tasks", "not sorted by id")
	}
	for _, id := range gids {
		if _, ok := wby[id]; !ok {
			add(fmt.Sprintf("tasks[%s]", id), "in the file but not a task folder of the dataset")
		}
	}
	for _, id := range wids {
		g, ok := gby[id]
		if !ok {
			add(fmt.Sprintf("tasks[%s]", id), "missing from the file")
			continue
		}
		diffJSON(fmt.Sprintf("tasks[%s]", id), wby[id], g, add)
	}
}

// short renders a JSON value compactly for a message, cut to a readable
// length.
func short(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	const max = 80
	if len(s) > max {
		// Cut on a rune boundary.
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}
