package pipeline

import (
	"path/filepath"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// collectResults finishes the run's folder once its containers are gone:
// the gateway's totals added to result.json, what the host knows of the
// run added to it too (annotateResult), and summary.json written. It
// returns the summary, complete even when a step failed, and the first
// error.
func (e *Env) collectResults(r *runState, res *runner.Result, gw *runGateway) (*results.Summary, error) {
	var err error
	s := r.summary(res)
	if s.ModelUsage = gw.finish(); s.ModelUsage != nil {
		err = mergeModelUsage(r.dir, s.ModelUsage)
	}
	// result.json is the container's; the host adds what only it knows.
	if werr := annotateResult(r.dir, r.req, r.runID, r.ri, res.Killed); werr != nil && err == nil {
		err = werr
	}
	r.timings["total"] = time.Since(r.started).Seconds()
	if werr := writeJSON(filepath.Join(r.dir, "summary.json"), s); werr != nil && err == nil {
		err = werr
	}
	return s, err
}

// summary is summary.json of the run whose container (the task
// container's, in sidecar mode) ended with res; the model usage and the
// total time are the caller's to add.
func (r *runState) summary(res *runner.Result) *results.Summary {
	req := &r.req
	s := &results.Summary{
		RunID: r.runID, Task: req.Task, Agent: req.agentName(), Platform: r.platform, Images: r.images,
		Timings: r.timings, ExitCode: res.ExitCode, Results: r.dir, Started: r.started.UTC(), Finished: time.Now().UTC(),
	}
	s.LayersUnpacked = r.layersUnpacked
	s.Config.ToolLayer = req.ToolLayer
	s.Config.Mode = ModeSandbox
	if r.sidecar {
		s.Config.Mode = ModeSidecar
	}
	if req.Cluster != nil {
		s.Config.Backend = BackendKubernetes
	}
	s.Config.Prebuilt = req.Prebuilt
	s.Config.Network = string(firstNonEmpty(string(req.Network), string(runner.NetworkRestricted)))
	s.Config.Timeout = req.timeout()
	s.Config.Limits = req.resources()
	s.Config.Difficulty = req.Difficulty
	s.Config.Model = modelName(req.Model)
	s.Config.Plugins = req.Plugins
	s.Attempt = req.Attempt
	if r.ri != nil {
		s.OpenCode = r.ri.OpenCode
	}
	s.Status = runStatus(res)
	return s
}

// runStatus is summary.json's status of a run whose container ended with
// res: stopped (the run was cancelled), ok, timeout (the entrypoint's
// contract.TimeoutStatus) or failed.
func runStatus(res *runner.Result) string {
	switch {
	case res.Stopped:
		return "stopped"
	case res.ExitCode == 0:
		return "ok"
	case res.ExitCode == contract.TimeoutStatus:
		return "timeout"
	default:
		return "failed"
	}
}

// recordStartup records the start-up of the run's containers (nil ones
// left out): its total and split in the timings, and the layers unpacked.
func (r *runState) recordStartup(rs ...*runner.Result) {
	var total time.Duration
	var st runner.Startup
	for _, res := range rs {
		if res == nil {
			continue
		}
		total += res.StartupTime
		st.Import += res.Startup.Import
		st.Unpack += res.Startup.Unpack
		st.Create += res.Startup.Create
		st.Start += res.Startup.Start
		if res.Image != nil {
			r.layersUnpacked += res.Image.Stats.LayersUnpacked
		}
	}
	r.timings[results.TimingStartup] = total.Seconds()
	r.timings[results.TimingImport] = st.Import.Seconds()
	r.timings[results.TimingUnpack] = st.Unpack.Seconds()
	r.timings[results.TimingCreate] = st.Create.Seconds()
	r.timings[results.TimingStart] = st.Start.Seconds()
}
