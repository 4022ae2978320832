package task

// Warnings are what weakens the dataset's grades without making it
// invalid (see Config.Warnings), one line each, each led by its task's
// id.
func (d *Dataset) Warnings() []string {
	var out []string
	for _, t := range d.Tasks {
		if t.Config == nil {
			continue
		}
		for _, w := range t.Config.Warnings() {
			out = append(out, t.ID+": "+w)
		}
	}
	return out
}
