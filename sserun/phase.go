package sserun

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ToolCall is one line of tool_calls.jsonl: a tool call the agent made on
// the agent socket, refused ones included.
type ToolCall struct {
	// Time is when the call came, in UTC.
	Time time.Time `json:"time"`
	// Tool is the tool's name (ToolOf the op).
	Tool string `json:"tool"`
	// Client is what the caller said it is (mcp, mcp-stdio, cli).
	Client     string `json:"client,omitempty"`
	OK         bool   `json:"ok"`
	Exit       int    `json:"exit"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// ToolCallsFile is the tool log's name in the results directory.
const ToolCallsFile = "tool_calls.jsonl"

// record counts a tool call and writes its line to the tool log.
func (d *Daemon) record(req Request, tool string, resp Response, start time.Time) {
	line, err := json.Marshal(ToolCall{
		Time: start.UTC(), Tool: tool, Client: req.Client,
		OK: resp.OK, Exit: resp.Exit, DurationMS: time.Since(start).Milliseconds(), Error: resp.Error,
	})
	if err != nil {
		return
	}
	d.statMu.Lock()
	defer d.statMu.Unlock()
	d.calls[tool]++
	d.ncalls++
	// One Write per line, under the lock: lines never interleave.
	if _, err := d.o.toolLog.Write(append(line, '\n')); err != nil {
		fmt.Fprintf(d.o.log, "writing the tool log: %v\n", err)
	}
}

// agentStart starts the agent phase's clock.
func (d *Daemon) agentStart(timeoutMS int64) Response {
	if timeoutMS < 0 {
		return fail("timeout %d ms is negative", timeoutMS)
	}
	d.statMu.Lock()
	defer d.statMu.Unlock()
	d.started = time.Now()
	d.deadline = time.Time{}
	if timeoutMS > 0 {
		d.deadline = d.started.Add(time.Duration(timeoutMS) * time.Millisecond)
	}
	return Response{Result: Result{OK: true}}
}

// endPhase refuses every later agent request and cancels the one running.
func (d *Daemon) endPhase() {
	d.agentDone()
	d.statMu.Lock()
	d.ended = true
	d.statMu.Unlock()
}

// agentEnd ends the agent phase (see OpAgentEnd). The agent's processes
// are killed before and after the request in progress has stopped, so
// that none of them can start another.
func (d *Daemon) agentEnd() Response {
	start := time.Now()
	d.endPhase()
	killed := 0
	var errs []string
	kill := func() {
		if d.o.agentUser == nil {
			return
		}
		n, err := KillAll(d.o.agentUser.UID)
		killed += n
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	kill()
	// Wait for the agent's request in progress, cancelled above.
	d.mu.Lock()
	kill()
	d.mu.Unlock()
	st := d.status()
	st.Killed = killed
	resp := Response{Result: Result{OK: len(errs) == 0, DurationMS: time.Since(start).Milliseconds()}, Status: st}
	who := "the agent's user"
	if d.o.agentUser != nil {
		who = d.o.agentUser.Name
	}
	resp.Output = fmt.Sprintf("agent phase over after %d tool calls; %d processes of %s killed\n", st.Calls, killed, who)
	if len(errs) > 0 {
		resp.Exit = -1
		resp.Error = strings.Join(errs, "; ")
	}
	fmt.Fprintf(d.o.log, "%s %s (admin=true): %s", time.Now().UTC().Format(time.RFC3339), OpAgentEnd, resp.Output)
	return resp
}

// status reports the agent phase.
func (d *Daemon) status() *Status {
	d.statMu.Lock()
	defer d.statMu.Unlock()
	st := &Status{
		Phase:           "setup",
		Difficulty:      d.o.difficulty,
		Calls:           d.ncalls,
		ScriptTimeoutMS: d.o.scriptTimeout.Milliseconds(),
	}
	if len(d.calls) > 0 {
		st.CallsByTool = make(map[string]int, len(d.calls))
		for k, v := range d.calls {
			st.CallsByTool[k] = v
		}
	}
	now := time.Now()
	if !d.started.IsZero() {
		st.Phase = "agent"
		st.ElapsedMS = now.Sub(d.started).Milliseconds()
		if !d.deadline.IsZero() {
			left := max(d.deadline.Sub(now).Milliseconds(), 0)
			st.TimeLeftMS = &left
		}
	}
	if d.ended {
		st.Phase = "over"
	}
	return st
}

// text renders a status for a reader.
func (st *Status) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase: %s, difficulty %d\n", st.Phase, st.Difficulty)
	if st.Phase != "setup" {
		fmt.Fprintf(&b, "elapsed: %s\n", (time.Duration(st.ElapsedMS) * time.Millisecond).Round(time.Second))
	}
	if st.TimeLeftMS != nil {
		fmt.Fprintf(&b, "time left: %s\n", (time.Duration(*st.TimeLeftMS) * time.Millisecond).Round(time.Second))
	} else {
		b.WriteString("time left: no limit\n")
	}
	fmt.Fprintf(&b, "tool calls so far: %d", st.Calls)
	if len(st.CallsByTool) > 0 {
		var parts []string
		for _, t := range []string{ToolTaskInfo, ToolBuild, ToolTest, ToolRunPoCs, ToolStatus} {
			if n := st.CallsByTool[t]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", t, n))
			}
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "\neach build, test or proof-of-concept run is stopped after %s\n", time.Duration(st.ScriptTimeoutMS)*time.Millisecond)
	return b.String()
}
