package govulndb

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// DBModule is the Go vulnerability database's module, and DBVersion the
// version the importer reads unless told otherwise: pinned, so that an
// import gives the same tasks tomorrow.
const (
	DBModule  = "golang.org/x/vulndb"
	DBVersion = "0.0.0-20261105234957-e22db6528018"
)

// Options are what Import reads and where it writes.
type Options struct {
	// IDs are the reports to import (GO-YYYY-NNNN); empty with All: every one.
	IDs []string
	All bool
	// Into is the dataset folder the task folders go to.
	Into string
	// DBVersion is the database's version (default DBVersion).
	DBVersion string
	// Fetch gets module zips (default GoFetcher{}).
	Fetch Fetcher
	// Log gets one line per report (may be nil).
	Log io.Writer
}

// Row is one report's line of the import table.
type Row struct {
	ID, Module, VulnerableAt, Fixed string
	// Status is "imported", "skipped" or, after verify, "verified" or
	// "dropped".
	Status, Reason string
}

// TableFile is the import table in the dataset folder.
const TableFile = "import.tsv"

var reportName = regexp.MustCompile(`^data/reports/(GO-[0-9]{4}-[0-9]{4,6})\.yaml$`)

// Import makes a task folder for each report that can make a sound one,
// and returns the table: what was imported, what was skipped and why.
// It writes the table to Into/import.tsv, merged with the rows of
// earlier imports.
func Import(ctx context.Context, o Options) ([]Row, error) {
	if o.Fetch == nil {
		o.Fetch = GoFetcher{}
	}
	if o.DBVersion == "" {
		o.DBVersion = DBVersion
	}
	if len(o.IDs) == 0 && !o.All {
		return nil, errors.New("name the reports to import (GO-YYYY-NNNN ...) or pass --all")
	}
	want := map[string]bool{}
	for _, id := range o.IDs {
		id = strings.ToUpper(id)
		if !idPattern.MatchString(id) {
			return nil, fmt.Errorf("%q is not a vulndb id: use GO-YYYY-NNNN", clip(id))
		}
		want[id] = true
	}
	dbZip, _, err := o.Fetch.Fetch(ctx, DBModule, o.DBVersion)
	if err != nil {
		return nil, fmt.Errorf("fetching the vulnerability database: %w", err)
	}
	db, err := zip.OpenReader(dbZip)
	if err != nil {
		return nil, fmt.Errorf("reading the vulnerability database: %w", err)
	}
	defer db.Close()
	prefix := DBModule + "@v" + o.DBVersion + "/"
	reports := map[string]*zip.File{}
	for _, f := range db.File {
		m := reportName.FindStringSubmatch(strings.TrimPrefix(f.Name, prefix))
		if m != nil && (o.All || want[m[1]]) {
			reports[m[1]] = f
		}
	}
	for id := range want {
		if reports[id] == nil {
			return nil, fmt.Errorf("%s is not in the vulnerability database at v%s: check the id", id, o.DBVersion)
		}
	}
	ids := make([]string, 0, len(reports))
	for id := range reports {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if err := os.MkdirAll(o.Into, 0o755); err != nil {
		return nil, err
	}
	if err := ensureDatasetYAML(o.Into); err != nil {
		return nil, err
	}
	var rows []Row
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		row := importOne(ctx, o, id, reports[id])
		if o.Log != nil {
			fmt.Fprintf(o.Log, "%s\t%s\t%s\n", row.ID, row.Status, row.Reason)
		}
		rows = append(rows, row)
	}
	if err := MergeTable(o.Into, rows); err != nil {
		return rows, err
	}
	return rows, nil
}

// importOne imports one report; whatever goes wrong is the row's reason.
func importOne(ctx context.Context, o Options, id string, f *zip.File) Row {
	row := Row{ID: id, Status: "skipped"}
	data, err := readZipFile(f, maxReportBytes)
	if err != nil {
		row.Reason = oneLine(err.Error())
		return row
	}
	r, err := ParseReport(id+".yaml", data)
	if err != nil {
		row.Reason = oneLine(err.Error())
		return row
	}
	if r.ID != id {
		row.Reason = fmt.Sprintf("the report in %s.yaml says it is %s", id, clip(r.ID))
		return row
	}
	m, fixed, err := r.Target()
	if err != nil {
		row.Reason = strings.TrimPrefix(err.Error(), errSkip.Error()+": ")
		return row
	}
	row.Module, row.VulnerableAt, row.Fixed = m.Module, m.VulnerableAt, fixed
	notes, err := writeTask(ctx, o, r, m, fixed)
	if err != nil {
		row.Reason = reason(err)
		return row
	}
	row.Status, row.Reason = "imported", strings.Join(notes, "; ")
	return row
}

// writeTask writes the task folder of report r and returns what the import
// table says of it (nothing, or why it lacks a part).
func writeTask(ctx context.Context, o Options, r *Report, m Module, fixed string) ([]string, error) {
	vzip, vtime, err := o.Fetch.Fetch(ctx, m.Module, m.VulnerableAt)
	if err != nil {
		return nil, err
	}
	fzip, _, err := o.Fetch.Fetch(ctx, m.Module, fixed)
	if err != nil {
		return nil, err
	}
	vz, err := zip.OpenReader(vzip)
	if err != nil {
		return nil, fmt.Errorf("reading %s@v%s: %w", m.Module, m.VulnerableAt, err)
	}
	defer vz.Close()
	fz, err := zip.OpenReader(fzip)
	if err != nil {
		return nil, fmt.Errorf("reading %s@v%s: %w", m.Module, fixed, err)
	}
	defer fz.Close()
	p, err := makePlan(r, m, fixed, &vz.Reader, &fz.Reader)
	if err != nil {
		return nil, err
	}
	if err := p.checkDeps(ctx, o.Fetch); err != nil {
		return nil, err
	}
	if err := p.alternatives(); err != nil {
		return nil, err
	}
	p.time = "2000-01-01T00:00:00Z"
	if !vtime.IsZero() {
		p.time = vtime.Format("2006-01-02T15:04:05Z")
	}
	dir := filepath.Join(o.Into, TaskID(r.ID))
	// Tests that verify listed (dataset verify --write-tests) are kept.
	if old, err := os.ReadFile(filepath.Join(dir, "sse/config.yaml")); err == nil {
		if c, _ := task.ParseConfig("config.yaml", old); c != nil && c.Tests != nil {
			p.tests = *c.Tests
			p.tests.Format = "go-test-json"
		}
	}
	files, err := p.files()
	if err != nil {
		return nil, err
	}
	return p.notes, replaceDir(dir, files)
}

var urlPattern = regexp.MustCompile(`https?://[^\s]+`)

// reason is the table's words for err: one line, without the URLs the go
// command names (the proxy's address is the user's setting, not the
// dataset's).
func reason(err error) string {
	s := strings.TrimPrefix(oneLine(err.Error()), errSkip.Error()+": ")
	if strings.Contains(s, "This module version is not available") || strings.Contains(s, "404 Not Found") {
		return "the module proxy or the checksum database does not serve a version it names: " + strings.SplitN(s, ":", 2)[0]
	}
	return urlPattern.ReplaceAllString(s, "<url>")
}

// replaceDir writes the folder afresh: a file an earlier import left and
// this one does not write must not stay.
func replaceDir(dir string, files map[string][]byte) error {
	tmp := dir + ".importing"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	for name, data := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") && path.Base(name) != "env.sh" {
			mode = 0o755
		}
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return err
		}
		// The umask must not decide the mode: the files digest reads it.
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

func readZipFile(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("%s is %d bytes, more than %d: refusing it", path.Base(f.Name), f.UncompressedSize64, limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit+1))
}

// ensureDatasetYAML writes a dataset.yaml when the folder has none.
func ensureDatasetYAML(dir string) error {
	p := filepath.Join(dir, "dataset.yaml")
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	name := filepath.Base(filepath.Clean(dir))
	return os.WriteFile(p, []byte("version: "+name+"-v1\n"), 0o644)
}

// ReadTable reads Into/import.tsv (no file: no rows).
func ReadTable(dir string) ([]Row, error) {
	data, err := safefile.Read(dir, TableFile, 16<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rows []Row
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 6 || f[0] == "id" {
			continue
		}
		rows = append(rows, Row{f[0], f[1], f[2], f[3], f[4], f[5]})
	}
	return rows, sc.Err()
}

// MergeTable writes the table with rows replacing those of the same ids,
// sorted by id.
func MergeTable(dir string, rows []Row) error {
	old, err := ReadTable(dir)
	if err != nil {
		return err
	}
	byID := map[string]Row{}
	for _, r := range old {
		byID[r.ID] = r
	}
	for _, r := range rows {
		byID[r.ID] = r
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	b.WriteString("id\tmodule\tvulnerable_at\tfixed\tstatus\treason\n")
	for _, id := range ids {
		r := byID[id]
		clean := func(s string) string { return strings.NewReplacer("\t", " ", "\n", " ").Replace(s) }
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\n", clean(r.ID), clean(r.Module), clean(r.VulnerableAt), clean(r.Fixed), clean(r.Status), clean(r.Reason))
	}
	return os.WriteFile(filepath.Join(dir, TableFile), []byte(b.String()), 0o644)
}

// Keep keeps the imported tasks that verified and drops the others: their
// folders are removed and their rows say why (reasons by task id, from
// the verification's table; a generic reason without one). Rows of
// skipped reports stay as they are. It returns how many were kept and
// dropped.
func Keep(dir string, verified func(taskID string) bool, reasons map[string]string) (kept, dropped int, err error) {
	rows, err := ReadTable(dir)
	if err != nil {
		return 0, 0, err
	}
	for i, r := range rows {
		if r.Status != "imported" && r.Status != "verified" {
			continue
		}
		id := TaskID(r.ID)
		unlisted := noFailToPass(filepath.Join(dir, id))
		failed := reasons[id]
		if unlisted && failed == "" {
			// Verified by the scripts' exit status alone, which the
			// grade then judges too: a forged report could pass it.
			failed = "no fail_to_pass test is listed, so the grade would judge by exit status alone (run verify --write-tests to see why)"
		}
		if verified(id) && !unlisted {
			// What the import said (a test it dropped) stays.
			why := r.Reason
			if p := noPassToPass(filepath.Join(dir, id)); p != "" && !strings.Contains(why, p) {
				why = strings.TrimPrefix(why+"; "+p, "; ")
			}
			rows[i].Status, rows[i].Reason = "verified", why
			kept++
			continue
		}
		if r.Status == "verified" && failed == "" {
			// Verified by an earlier keep, perhaps on another machine
			// whose store holds the record: without a failed run to
			// show, it stays.
			kept++
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
			return kept, dropped, err
		}
		why := failed
		if why == "" {
			why = "not verified (import it again and run `ssebench dataset verify DIR --tasks " + id + "` to see why)"
		}
		rows[i].Status, rows[i].Reason = "dropped", "verify: "+why
		dropped++
	}
	return kept, dropped, MergeTable(dir, rows)
}

// noFailToPass says whether the task folder's config lists no
// fail_to_pass test.
func noFailToPass(folder string) bool {
	data, err := os.ReadFile(filepath.Join(folder, "sse/config.yaml"))
	if err != nil {
		return false // no folder: nothing to judge here
	}
	c, _ := task.ParseConfig("config.yaml", data)
	return c == nil || c.Tests == nil || len(c.Tests.FailToPass) == 0
}

// noPassToPass is the table's reason for a verified task without
// pass_to_pass tests, which then grade no regression: "" when it has some.
func noPassToPass(folder string) string {
	data, err := os.ReadFile(filepath.Join(folder, "sse/config.yaml"))
	if err != nil {
		return ""
	}
	c, _ := task.ParseConfig("config.yaml", data)
	if c == nil || c.Tests == nil || len(c.Tests.PassToPass) > 0 {
		return ""
	}
	return "no pass_to_pass test: no other test of the affected packages passes on both the vulnerable and the fixed tree"
}

// ReadVerifyReasons reads the tables `ssebench dataset verify` printed
// (TASK AGENT CHECK RESULT WHY) and returns, per task, its failed checks.
func ReadVerifyReasons(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "FAILED" {
			continue
		}
		why := strings.Join(f[4:], " ")
		if len(why) > 300 {
			why = why[:300] + "…"
		}
		line := f[1] + " " + f[2] + ": " + why
		if prev := out[f[0]]; prev != "" {
			if strings.Contains(prev, line) {
				continue
			}
			line = prev + "; " + line
		}
		out[f[0]] = line
	}
	return out, sc.Err()
}
